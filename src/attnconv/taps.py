"""Kernels as bands of taps: the primitives behind every 1-D convolution and relative term of the library.

A *band* ``(..., N_h, N, K)`` holds the kernel that token i applies: tap t reads offset δ = t - ``padding_l``
(key minus query; ``padding_l = k`` for a centred kernel of K = 2k+1 taps, K - 1 for a causal one).

- :func:`odd_kernel_size`: K = 2k+1 -> k.
- :func:`tap_mask`: which taps read nothing (outside the sequence, or a padded key).
- :func:`masked_softmax`: a softmax over the taps that exist, zero (not NaN) where none does.
- :func:`apply_band`: the depthwise convolution a band describes, as a sum of K shifted copies.
- :func:`check_tokens`, :func:`check_padding_mask`: the argument checks of the 1-D modules.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from ._checks import available_device, floating_input, positive_int, values_readable

__all__ = ["apply_band", "check_padding_mask", "check_tokens", "masked_softmax", "odd_kernel_size", "padding_left",
           "softmax_fp32", "tap_mask"]


HALF = (torch.float16, torch.bfloat16)


def odd_kernel_size(kernel_size: int, name: str = "kernel_size") -> int:
    """Check that ``kernel_size`` (the argument ``name``) is an odd positive int 2k+1 and return k
    (``max_distance``)."""
    positive_int(name, kernel_size)
    if kernel_size % 2 == 0:
        raise ValueError(f"{name} must be odd (2k+1 taps centred on the token), got {kernel_size}")
    return kernel_size // 2


def check_tokens(x: Tensor, embed_dim: int, name: str = "x", dtype: torch.dtype | None = None) -> None:
    """Raise unless ``x`` is a ``(B, N, C)`` tensor with ``C = embed_dim`` (and of ``dtype``, if given)."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if x.dim() != 3 or x.shape[-1] != embed_dim:
        raise ValueError(f"{name} must be (B, N, C) with C=embed_dim={embed_dim}, got shape {tuple(x.shape)}")
    if dtype is not None:
        floating_input(name, x, dtype)


def check_padding_mask(key_padding_mask: Tensor | None, x: Tensor) -> None:
    """Raise unless ``key_padding_mask`` is ``None`` or a bool ``(B, N)`` matching the tokens ``x``."""
    if key_padding_mask is None:
        return
    if not isinstance(key_padding_mask, Tensor):
        raise TypeError(f"key_padding_mask must be a bool torch.Tensor (True = padding) or None, got "
                        f"{type(key_padding_mask).__name__}: use torch.as_tensor(mask, dtype=torch.bool)")
    if key_padding_mask.dtype != torch.bool:
        raise ValueError(f"key_padding_mask must be a bool tensor (True = padding), got {key_padding_mask.dtype}")
    if tuple(key_padding_mask.shape) != tuple(x.shape[:2]):
        raise ValueError(f"key_padding_mask must have shape {tuple(x.shape[:2])} (B, N), "
                         f"got {tuple(key_padding_mask.shape)}")


def padding_left(kernel_size: int, causal: bool = False, padding_l: int | None = None) -> int:
    """How many of a kernel's K taps read the past: tap t reads offset δ = t - ``padding_l``.

    Returns ``padding_l`` when given (any int in 0..K-1, fairseq's argument), else K - 1 for a causal kernel (any
    K ≥ 1), else k for a centred odd kernel K = 2k+1.

    Raises:
        ValueError: ``padding_l`` is outside 0..K-1, or ``causal`` with a ``padding_l`` other than K - 1, or an
            even K that is neither causal nor given a ``padding_l``.
    """
    if padding_l is not None:
        k = positive_int("kernel_size", kernel_size)
        if isinstance(padding_l, bool) or not isinstance(padding_l, int) or not 0 <= padding_l < k:
            raise ValueError(f"padding_l must be an int in [0, kernel_size={k}), got {padding_l!r}")
        if causal and padding_l != k - 1:
            raise ValueError(f"causal=True is padding_l = kernel_size - 1 = {k - 1}, got padding_l={padding_l}")
        return padding_l
    if causal:
        return positive_int("kernel_size", kernel_size) - 1
    return odd_kernel_size(kernel_size)


def tap_mask(n: int, kernel_size: int, key_padding_mask: Tensor | None = None,
             device: torch.device | None = None, padding_l: int | None = None) -> Tensor:
    """Which taps of each token's kernel read nothing: a position outside the sequence, or a padded key.

    Args:
        n: N, the sequence length.
        kernel_size: K (2k+1 when ``padding_l`` is not given).
        key_padding_mask: optional bool ``(B, N)``, ``True`` on padding.
        padding_l: taps that read the past (tap t reads offset t - ``padding_l``); default k, a centred kernel.
            K - 1 is a causal kernel.

    Returns:
        bool ``(B, 1, N, K)`` (``B = 1`` without a mask): ``True`` where tap t of token i reads
        i + t - ``padding_l`` and that position is outside ``[0, N)`` or padded. It broadcasts over the heads of
        a band.
    """
    n = positive_int("n", n)
    if padding_l is None:
        padding_l = odd_kernel_size(kernel_size)
    else:
        positive_int("kernel_size", kernel_size)
        if isinstance(padding_l, bool) or not isinstance(padding_l, int) or not 0 <= padding_l < kernel_size:
            raise ValueError(f"padding_l must be an int in [0, kernel_size={kernel_size}), got {padding_l!r}")
    device = available_device("device", device)
    if key_padding_mask is not None:
        if not isinstance(key_padding_mask, Tensor) or key_padding_mask.dtype != torch.bool \
                or key_padding_mask.dim() != 2 or key_padding_mask.shape[1] != n:
            raise ValueError(f"key_padding_mask must be a bool (B, N={n}) tensor, got "
                             f"{getattr(key_padding_mask, 'dtype', type(key_padding_mask).__name__)} "
                             f"{tuple(getattr(key_padding_mask, 'shape', ()))}")
        device = key_padding_mask.device
    taps = torch.arange(kernel_size, device=device) - padding_l
    read = torch.arange(n, device=device)[:, None] + taps  # (N, K): i + t - padding_l
    if key_padding_mask is None:
        return ((read < 0) | (read >= n))[None, None]
    right = kernel_size - 1 - padding_l
    padded = F.pad(key_padding_mask, (padding_l, right), value=True)  # out of range counts as padding
    return padded[:, read + padding_l][:, None]  # (B, 1, N, K)


def softmax_fp32(logits: Tensor, dim: int = -1) -> Tensor:
    """``softmax(logits, dim)`` normalised in at least float32: bfloat16 or float16 logits (under autocast) give
    float32 probabilities, float32 and float64 logits keep their dtype. The normaliser Σ exp is a sum over every
    key, and bfloat16's 8-bit mantissa would round it and every small probability."""
    return torch.softmax(logits, dim, dtype=torch.promote_types(logits.dtype, torch.float32))


def masked_softmax(logits: Tensor, dim: int = -1) -> Tensor:
    """``softmax(logits, dim)`` that returns zeros, not NaN, on a slice whose logits are all -inf.

    Such a slice is a token with nothing to read (for example a padded token whose whole window is padding).
    Its weights are zero and its gradient is zero, so nothing downstream turns into NaN.
    """
    if not isinstance(logits, Tensor) or not logits.is_floating_point():
        raise TypeError(f"logits must be a floating-point torch.Tensor, got "
                        f"{getattr(logits, 'dtype', type(logits).__name__)}")
    dead = torch.isneginf(logits).all(dim, keepdim=True)  # a NaN logit is not -inf: its row stays NaN
    if values_readable(dead) and not bool(dead.any()):  # else (meta, vmap, jit.trace, compile) the masked path
        return softmax_fp32(logits, dim)
    return softmax_fp32(logits.masked_fill(dead, 0.0), dim).masked_fill(dead, 0.0)


def apply_band(x: Tensor, band: Tensor, padding_l: int | None = None) -> Tensor:
    """Depthwise convolution with a per-token kernel: ``out_i = Σ_t band_{i,t} ⊙ X_{i+t-p}``, zeros outside.

    Computed as a sum of K shifted copies of ``x`` (chapter 01's convolution as shifts); no ``(N, K, C)``
    unfolding is materialised.

    Args:
        x: ``(B, N, C)``, with C divisible by N_h.
        band: ``(B or 1, N_h, N or 1, K)``: head h's kernel at token i (a middle size of 1 is one kernel for
            every token).
        padding_l: p, the taps that read the past; default k for an odd K = 2k+1 (a centred kernel); K - 1 is
            a causal kernel.

    Returns:
        ``(B, N, C)``: head h's channels of token i mixed by ``band[:, h, i]``.
    """
    for name, t in (("x", x), ("band", band)):
        if not isinstance(t, Tensor) or not t.is_floating_point():
            raise TypeError(f"{name} must be a floating-point torch.Tensor, got "
                            f"{getattr(t, 'dtype', type(t).__name__)}")
    if band.dtype != x.dtype and not (x.dtype in HALF and band.dtype == torch.float32):
        raise TypeError(f"band has dtype {band.dtype} but x is {x.dtype}: the result would silently be "
                        f"{torch.promote_types(x.dtype, band.dtype)}; convert one of them (a float32 band is "
                        "accepted on float16/bfloat16 x, whose kernels are normalised in float32)")
    if x.dim() != 3 or band.dim() != 4:
        raise ValueError(f"x must be (B, N, C) and band (B, N_h, N, K), got {tuple(x.shape)} and "
                         f"{tuple(band.shape)}")
    b, n, c = x.shape
    heads, kernel_size = band.shape[1], band.shape[-1]
    if padding_l is None:
        padding_l = odd_kernel_size(kernel_size, "band's last dim K (without padding_l)")
    elif isinstance(padding_l, bool) or not isinstance(padding_l, int) or not 0 <= padding_l < kernel_size:
        raise ValueError(f"padding_l must be an int in [0, K={kernel_size}), got {padding_l!r}")
    if c % heads:
        raise ValueError(f"x has {c} channels, not divisible by the band's {heads} heads")
    if band.shape[0] not in (1, b) or band.shape[2] not in (1, n):
        raise ValueError(f"band must be (1 or B={b}, N_h, 1 or N={n}, K), got {tuple(band.shape)}")
    right = kernel_size - 1 - padding_l
    xs = F.pad(x.reshape(b, n, heads, c // heads), (0, 0, 0, 0, padding_l, right))  # (B, N + K - 1, N_h, D_h)
    weights = band.permute(0, 2, 1, 3)  # (B, N, N_h, K)
    out = x.new_zeros(b, n, heads, c // heads)
    for t in range(kernel_size):
        out = out + weights[..., t, None] * xs[:, t : t + n]  # tap t reads offset δ = t - padding_l
    return out.reshape(b, n, c)
