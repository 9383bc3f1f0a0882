"""Lightweight and dynamic convolutions (Wu et al. 2019), the convolutions of Chang et al. 2021.

A *lightweight convolution* is a depthwise 1-D convolution whose kernel has 2k+1 taps, is softmax-normalised
over those taps, and is shared by all channels of a head. For head h and token i,

    LightConv(X)_i = Σ_{δ=-k..k} β^(h)_δ X_{i+δ},      β^(h) = softmax(w^(h)) ∈ R^{2k+1}.

A *dynamic* lightweight convolution predicts the kernel from the current token, β_i = softmax(X_i W^D) with
W^D ∈ R^{C x (N_h (2k+1))}. Both are computed here from a **band**: a tensor ``(..., N_h, N, 2k+1)`` holding
the kernel β_i that token i applies (the same for every i in the lightweight case), so that

    out_i = Σ_t β_{i,t} X_{i+t-k}      (tap t reads offset δ = t - k, key minus query).

**Boundaries.** Near the ends of the sequence some taps read positions that do not exist. A zero-padded
convolution (``boundary="zeros"``, Wu et al.) reads zeros there and so loses that part of the kernel's mass.
A boundary-renormalised convolution (``boundary="renormalize"``) takes the softmax over the taps that exist,
which is exactly what an attention softmax does (chapter 05). Padded keys (``key_padding_mask``) are treated
like positions outside the sequence.

Tensors are channels-last, ``(B, N, C)``; channel c belongs to head ``c // (C / N_h)``, as in
:class:`~attnconv.attention.MultiHeadSelfAttention`.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ._checks import positive_int

__all__ = [
    "BOUNDARIES",
    "odd_kernel_size",
    "tap_mask",
    "masked_softmax",
    "apply_band",
    "LightweightConv1d",
    "DynamicConv1d",
    "DepthwiseSeparableConv1d",
    "ProjectedConv1d",
]

BOUNDARIES = ("zeros", "renormalize")


def odd_kernel_size(kernel_size: int) -> int:
    """Check that ``kernel_size`` is an odd positive int 2k+1 and return k (``max_distance``)."""
    positive_int("kernel_size", kernel_size)
    if kernel_size % 2 == 0:
        raise ValueError(f"kernel_size must be odd (2k+1 taps centred on the token), got {kernel_size}")
    return kernel_size // 2


def _boundary(boundary: str) -> str:
    if boundary not in BOUNDARIES:
        raise ValueError(f"boundary must be one of {BOUNDARIES}, got {boundary!r}")
    return boundary


def _check_tokens(x: Tensor, embed_dim: int, name: str = "x") -> None:
    if x.dim() != 3 or x.shape[-1] != embed_dim:
        raise ValueError(f"{name} must be (B, N, C) with C=embed_dim={embed_dim}, got shape {tuple(x.shape)}")


def _check_mask(key_padding_mask: Tensor | None, x: Tensor) -> None:
    if key_padding_mask is None:
        return
    if key_padding_mask.dtype != torch.bool:
        raise ValueError(f"key_padding_mask must be a bool tensor (True = padding), got {key_padding_mask.dtype}")
    if tuple(key_padding_mask.shape) != tuple(x.shape[:2]):
        raise ValueError(f"key_padding_mask must have shape {tuple(x.shape[:2])} (B, N), "
                         f"got {tuple(key_padding_mask.shape)}")


def tap_mask(n: int, kernel_size: int, key_padding_mask: Tensor | None = None,
             device: torch.device | None = None) -> Tensor:
    """Which taps of each token's kernel read nothing: a position outside the sequence, or a padded key.

    Args:
        n: N, the sequence length.
        kernel_size: 2k+1.
        key_padding_mask: optional bool ``(B, N)``, ``True`` on padding.

    Returns:
        bool ``(B, 1, N, 2k+1)`` (``B = 1`` without a mask): ``True`` where tap t of token i reads i + t - k
        and that position is outside ``[0, N)`` or padded. It broadcasts over the heads of a band.
    """
    k = odd_kernel_size(kernel_size)
    if key_padding_mask is not None:
        device = key_padding_mask.device
    read = torch.arange(n, device=device)[:, None] + torch.arange(-k, k + 1, device=device)  # (N, K): i + t - k
    if key_padding_mask is None:
        return ((read < 0) | (read >= n))[None, None]
    padded = F.pad(key_padding_mask, (k, k), value=True)  # (B, N + 2k): out of range counts as padding
    return padded[:, read + k][:, None]  # (B, 1, N, K)


def masked_softmax(logits: Tensor, dim: int = -1) -> Tensor:
    """``softmax(logits, dim)`` that returns zeros, not NaN, on a slice whose logits are all -inf.

    Such a slice is a token with nothing to read (for example a padded token whose whole window is padding).
    Its weights are zero and its gradient is zero, so nothing downstream turns into NaN.
    """
    dead = torch.isneginf(logits).all(dim, keepdim=True)
    if not bool(dead.any()):
        return torch.softmax(logits, dim)
    return torch.softmax(logits.masked_fill(dead, 0.0), dim).masked_fill(dead, 0.0)


def apply_band(x: Tensor, band: Tensor) -> Tensor:
    """Depthwise convolution with a per-token kernel: ``out_i = Σ_t band_{i,t} ⊙ X_{i+t-k}``, zeros outside.

    Computed as a sum of 2k+1 shifted copies of ``x`` (chapter 01's convolution as shifts); no ``(N, 2k+1, C)``
    unfolding is materialised.

    Args:
        x: ``(B, N, C)``, with C divisible by N_h.
        band: ``(B or 1, N_h, N or 1, 2k+1)``: head h's kernel at token i (a middle size of 1 is one kernel for
            every token).

    Returns:
        ``(B, N, C)``: head h's channels of token i mixed by ``band[:, h, i]``.
    """
    if x.dim() != 3 or band.dim() != 4:
        raise ValueError(f"x must be (B, N, C) and band (B, N_h, N, 2k+1), got {tuple(x.shape)} and "
                         f"{tuple(band.shape)}")
    b, n, c = x.shape
    heads, kernel_size = band.shape[1], band.shape[-1]
    k = odd_kernel_size(kernel_size)
    if c % heads:
        raise ValueError(f"x has {c} channels, not divisible by the band's {heads} heads")
    if band.shape[0] not in (1, b) or band.shape[2] not in (1, n):
        raise ValueError(f"band must be (1 or B={b}, N_h, 1 or N={n}, 2k+1), got {tuple(band.shape)}")
    xs = F.pad(x.view(b, n, heads, c // heads), (0, 0, 0, 0, k, k))  # (B, N + 2k, N_h, D_h)
    weights = band.permute(0, 2, 1, 3)  # (B, N, N_h, K)
    out = x.new_zeros(b, n, heads, c // heads)
    for t in range(kernel_size):
        out = out + weights[..., t, None] * xs[:, t : t + n]  # tap t reads offset δ = t - k
    return out.reshape(b, n, c)


class _HeadKernelConv1d(nn.Module):
    """What lightweight and dynamic convolutions share: heads over channel groups, odd kernels, the boundary rule."""

    def __init__(self, embed_dim: int, num_heads: int, kernel_size: int, boundary: str, weight_dropout: float) -> None:
        super().__init__()
        self.embed_dim = positive_int("embed_dim", embed_dim)
        self.num_heads = positive_int("num_heads", num_heads)
        if embed_dim % num_heads:
            raise ValueError(f"embed_dim ({embed_dim}) must be divisible by num_heads ({num_heads})")
        self.max_distance = odd_kernel_size(kernel_size)
        self.kernel_size = kernel_size
        self.boundary = _boundary(boundary)
        if not 0.0 <= weight_dropout < 1.0:
            raise ValueError(f"weight_dropout must be in [0, 1), got {weight_dropout!r}")
        self.weight_dropout = weight_dropout

    def normalise(self, logits: Tensor, n: int, key_padding_mask: Tensor | None = None) -> Tensor:
        """Kernel logits ``(B or 1, N_h, N or 1, 2k+1)`` -> kernels: a softmax over all taps (``"zeros"``) or over
        the taps that read an existing, unpadded token (``"renormalize"``, then ``(B or 1, N_h, N, 2k+1)``)."""
        if self.boundary == "zeros":
            return torch.softmax(logits, dim=-1)
        dead = tap_mask(n, self.kernel_size, key_padding_mask, logits.device)  # (B or 1, 1, N, 2k+1)
        return masked_softmax(logits.masked_fill(dead, float("-inf")))

    def dropped(self, band: Tensor, b: int, n: int) -> Tensor:
        """DropConnect on the kernels during training: one mask per sequence, head, token and tap."""
        if not (self.training and self.weight_dropout):
            return band
        return F.dropout(band.expand(b, -1, n, -1), self.weight_dropout)

    def extra_repr(self) -> str:
        return (f"embed_dim={self.embed_dim}, num_heads={self.num_heads}, kernel_size={self.kernel_size}, "
                f"boundary={self.boundary!r}, weight_dropout={self.weight_dropout}")


class LightweightConv1d(_HeadKernelConv1d):
    """Lightweight convolution: a softmax-normalised depthwise kernel shared by the channels of each head.

    Args:
        embed_dim: C, channels in and out.
        num_heads: N_h, kernels (channel groups); C must be divisible by N_h.
        kernel_size: 2k+1, odd; k is the ``max_distance`` of the equivalent relative-position bias.
        boundary: ``"zeros"`` (zero padding, Wu et al.) or ``"renormalize"`` (softmax over the taps that exist,
            equal to attention with a relative bias everywhere, not only in the interior).
        bias: add a learned ``(C,)`` bias to the output.
        weight_dropout: DropConnect on the normalised kernel during training, one mask per token and head
            (Wu et al.); the counterpart of attention dropout.

    Attributes:
        weight: ``(N_h, 2k+1)`` kernel logits w; the kernel is β = softmax(w) (:attr:`kernel`).

    Shapes:
        x: ``(B, N, C)``; ``key_padding_mask``: bool ``(B, N)``, ``True`` on padding. Output ``(B, N, C)``.
    """

    def __init__(self, embed_dim: int, num_heads: int, kernel_size: int, boundary: str = "zeros",
                 bias: bool = False, weight_dropout: float = 0.0) -> None:
        super().__init__(embed_dim, num_heads, kernel_size, boundary, weight_dropout)
        self.weight = nn.Parameter(torch.randn(num_heads, kernel_size) * 0.5)
        self.bias = nn.Parameter(torch.zeros(embed_dim)) if bias else None

    @property
    def kernel(self) -> Tensor:
        """β = softmax(w) over the 2k+1 taps, ``(N_h, 2k+1)``; column t is offset δ = t - k."""
        return torch.softmax(self.weight, dim=-1)

    def band(self, n: int, key_padding_mask: Tensor | None = None) -> Tensor:
        """The kernel each token applies: ``(1, N_h, 1, 2k+1)`` for zero padding, else ``(B or 1, N_h, N, 2k+1)``
        renormalised over the taps that read an existing, unpadded token."""
        return self.normalise(self.weight[None, :, None, :], n, key_padding_mask)

    def forward(self, x: Tensor, key_padding_mask: Tensor | None = None) -> Tensor:
        _check_tokens(x, self.embed_dim)
        _check_mask(key_padding_mask, x)
        if key_padding_mask is not None:
            x = x.masked_fill(key_padding_mask[..., None], 0.0)  # a padded token reads as zero padding
        band = self.dropped(self.band(x.shape[1], key_padding_mask), x.shape[0], x.shape[1])
        out = apply_band(x, band)
        return out if self.bias is None else out + self.bias

    def extra_repr(self) -> str:
        return super().extra_repr() + f", bias={self.bias is not None}"


class DynamicConv1d(_HeadKernelConv1d):
    """Dynamic lightweight convolution: token i's kernel is predicted from token i, β_i = softmax(X_i W^D + b^D).

    Args:
        embed_dim: C, channels of the input (and of the values the kernels are applied to).
        num_heads: N_h; C must be divisible by N_h.
        kernel_size: 2k+1, odd.
        boundary: ``"zeros"`` or ``"renormalize"``, as in :class:`LightweightConv1d`.
        bias: give the kernel predictor W^D a bias b^D.
        weight_dropout: DropConnect on the normalised kernels during training.

    Attributes:
        kernel_proj: ``nn.Linear(C, N_h (2k+1))``, the matrix W^D (head-major: head h's taps are columns
            ``h (2k+1) .. h (2k+1) + 2k``).
    """

    def __init__(self, embed_dim: int, num_heads: int, kernel_size: int, boundary: str = "zeros",
                 bias: bool = True, weight_dropout: float = 0.0) -> None:
        super().__init__(embed_dim, num_heads, kernel_size, boundary, weight_dropout)
        self.kernel_proj = nn.Linear(embed_dim, num_heads * kernel_size, bias=bias)

    def kernel_logits(self, x: Tensor) -> Tensor:
        """X W^D + b^D reshaped to ``(B, N_h, N, 2k+1)``."""
        _check_tokens(x, self.embed_dim)
        b, n, _ = x.shape
        return self.kernel_proj(x).view(b, n, self.num_heads, self.kernel_size).transpose(1, 2)

    def band(self, x: Tensor, key_padding_mask: Tensor | None = None) -> Tensor:
        """β_i for every token, ``(B, N_h, N, 2k+1)``; renormalised over existing taps when ``boundary`` says so."""
        return self.normalise(self.kernel_logits(x), x.shape[1], key_padding_mask)

    def forward(self, x: Tensor, key_padding_mask: Tensor | None = None, values: Tensor | None = None) -> Tensor:
        """Convolve ``values`` (default ``x``) with the kernels predicted from ``x``.

        Args:
            x: ``(B, N, C)``, the tokens the kernels are predicted from.
            key_padding_mask: optional bool ``(B, N)``, ``True`` on padding.
            values: optional ``(B, N, C')`` (C' divisible by N_h) the kernels are applied to. Wu et al. apply
                them to ``x`` itself; an attention layer applies them to its values X W_val.

        Returns:
            ``(B, N, C')``.
        """
        _check_tokens(x, self.embed_dim)
        _check_mask(key_padding_mask, x)
        values = x if values is None else values
        if values.dim() != 3 or values.shape[:2] != x.shape[:2]:
            raise ValueError(f"values must be (B, N, C') with (B, N) = {tuple(x.shape[:2])}, "
                             f"got shape {tuple(values.shape)}")
        if key_padding_mask is not None:
            values = values.masked_fill(key_padding_mask[..., None], 0.0)
        return apply_band(values, self.dropped(self.band(x, key_padding_mask), x.shape[0], x.shape[1]))


class DepthwiseSeparableConv1d(nn.Module):
    """A depthwise 1-D convolution ("same" zero padding) followed by a pointwise linear map.

    A drop-in replacement for the ``nn.Linear`` query, key or value projection of an attention layer: the
    convolutional injection points of Chang et al. 2021. Each output token then mixes the 2k+1 tokens around it
    before the pointwise map.

    Args:
        in_channels: C_in.
        out_channels: C_out.
        kernel_size: 2k+1, odd.
        bias: biases on the depthwise and pointwise steps.

    Shapes:
        x: ``(B, N, C_in)`` -> ``(B, N, C_out)``. Pass ``key_padding_mask`` (bool ``(B, N)``) so that padded
        tokens read as zero padding, which makes a padded batch agree with its unpadded sequences.
    """

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, bias: bool = True) -> None:
        super().__init__()
        self.in_channels = positive_int("in_channels", in_channels)
        self.out_channels = positive_int("out_channels", out_channels)
        self.max_distance = odd_kernel_size(kernel_size)
        self.kernel_size = kernel_size
        self.depthwise = nn.Conv1d(in_channels, in_channels, kernel_size, padding=self.max_distance,
                                   groups=in_channels, bias=bias)
        self.pointwise = nn.Linear(in_channels, out_channels, bias=bias)

    def forward(self, x: Tensor, key_padding_mask: Tensor | None = None) -> Tensor:
        _check_tokens(x, self.in_channels)
        _check_mask(key_padding_mask, x)
        if key_padding_mask is not None:
            x = x.masked_fill(key_padding_mask[..., None], 0.0)
        mixed = self.depthwise(x.transpose(1, 2)).transpose(1, 2)  # (B, N, C_in)
        return self.pointwise(mixed)

    def extra_repr(self) -> str:
        return f"in_channels={self.in_channels}, out_channels={self.out_channels}, kernel_size={self.kernel_size}"


class ProjectedConv1d(nn.Module):
    """``W_out( conv( X W_val ) )``: a (dynamic) lightweight convolution between two pointwise maps.

    The form that a multi-head attention layer with position-only logits takes as a convolution: its value
    projection, one kernel per head, its output projection. For a :class:`DynamicConv1d` the kernels are
    predicted from the layer's input X and applied to the values X W_val.

    Args:
        conv: a :class:`LightweightConv1d` or :class:`DynamicConv1d`.
        in_proj: the value projection, or ``None`` for the identity.
        out_proj: the output projection, or ``None`` for the identity.
    """

    def __init__(self, conv: LightweightConv1d | DynamicConv1d, in_proj: torch.nn.Module | None = None,
                 out_proj: torch.nn.Module | None = None) -> None:
        super().__init__()
        if not isinstance(conv, (LightweightConv1d, DynamicConv1d)):
            raise ValueError(f"conv must be a LightweightConv1d or DynamicConv1d, got {type(conv).__name__}")
        self.conv, self.in_proj, self.out_proj = conv, in_proj, out_proj

    def forward(self, x: Tensor, key_padding_mask: Tensor | None = None) -> Tensor:
        values = x if self.in_proj is None else self.in_proj(x)
        if isinstance(self.conv, DynamicConv1d):
            out = self.conv(x, key_padding_mask, values=values)
        else:
            out = self.conv(values, key_padding_mask)
        return out if self.out_proj is None else self.out_proj(out)
