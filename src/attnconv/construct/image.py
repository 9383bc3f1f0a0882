"""Theorem 1 of Cordonnier et al. 2020 as a function: any convolution, rewritten as multi-head self-attention.

For a convolution with kernel taps a and weights W_Δa (Lemma 1 of the book's chapter 01), the attention layer
gets one head per tap. Head h is a quadratic-encoding head centred on the shift Δ^(h) = Δ_a (Lemma 2), so it
attends to the key at q + Δ_a. Its value and output blocks factor the tap's matrix:
W_Δa = W_val^(h) W_out^(h), which needs rank W_Δa ≤ min(D_h, D_out). The conv's bias becomes b_out.

Zero padding, stride and dilation follow from three steps: pad the input with zeros, attend, then crop and
subsample the output grid.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .._checks import finite_parameters
from ..attention import MultiHeadSelfAttention
from ..conv import kernel_shifts
from ..positional.quadratic import QuadraticEncoding

__all__ = ["ConvAsAttention", "conv_to_mhsa", "factorize_tap"]


def factorize_tap(w: Tensor, head_dim: int, tap: tuple[int, ...], rtol: float = 1e-10) -> tuple[Tensor, Tensor]:
    """Split a tap's ``(D_in, D_out)`` matrix W_Δ into W_val ``(D_in, D_h)`` times W_out ``(D_h, D_out)``.

    Exact when ``D_h >= min(D_in, D_out)`` (identity factors); otherwise through the SVD, which is exact only
    when rank W_Δ ≤ D_h.

    Raises:
        ValueError: rank W_Δ > ``head_dim`` (the layer cannot express this convolution).
    """
    d_in, d_out = w.shape
    eye = torch.eye(head_dim, dtype=w.dtype, device=w.device)
    if head_dim >= d_out:  # W_val = [W_Δ 0], W_out = [I; 0]
        return F.pad(w, (0, head_dim - d_out)), eye[:, :d_out]
    if head_dim >= d_in:  # W_val = [I 0], W_out = [W_Δ; 0]
        return eye[:d_in, :], F.pad(w, (0, 0, 0, head_dim - d_in))
    u, s, vh = torch.linalg.svd(w, full_matrices=False)
    rank = int((s > rtol * s.max().clamp_min(torch.finfo(w.dtype).tiny)).sum()) if s.numel() else 0
    if rank > head_dim:
        raise ValueError(
            f"kernel tap {tap}: W_Δ has rank {rank} > head_dim={head_dim}; attention heads of dimension D_h "
            f"express only rank ≤ min(D_h, D_out) = {min(head_dim, d_out)} per shift (use head_dim >= {rank})"
        )
    root = s[:head_dim].sqrt()
    return u[:, :head_dim] * root, root[:, None] * vh[:head_dim]


class ConvAsAttention(nn.Module):
    """A multi-head self-attention layer that computes a given convolution; built by :func:`conv_to_mhsa`.

    Its ``forward`` takes and returns what the convolution does: ``(B, C_in, H, W)`` -> ``(B, C_out, H', W')``
    for 2-D, ``(B, C_in, L)`` -> ``(B, C_out, L')`` for 1-D.

    Attributes:
        attention: the :class:`~attnconv.attention.MultiHeadSelfAttention` (channels-last, one head per tap).
        centers: ``(N_h, d)`` shifts Δ^(h) on the padded grid; head h computes tap ``taps[h]``.
    """

    def __init__(self, attention: MultiHeadSelfAttention, in_channels: int, kernel_size: tuple[int, ...],
                 stride: tuple[int, ...], padding: tuple[int, ...], dilation: tuple[int, ...],
                 offset: tuple[int, ...], taps: list[tuple[int, ...]]) -> None:
        super().__init__()
        self.attention = attention
        self.in_channels = in_channels
        self.kernel_size, self.stride, self.padding, self.dilation = kernel_size, stride, padding, dilation
        self.offset = offset  # c: canvas position of output pixel 0
        self.taps = taps

    @property
    def centers(self) -> Tensor:
        return self.attention.positional.centers

    def output_size(self, size: tuple[int, ...]) -> tuple[int, ...]:
        return tuple(
            (n + 2 * p - d * (k - 1) - 1) // s + 1
            for n, p, d, k, s in zip(size, self.padding, self.dilation, self.kernel_size, self.stride)
        )

    def forward(self, x: Tensor, need_weights: bool = False):
        """``x``: ``(B, C_in, *spatial)``. Returns the conv's output, and the attention probabilities over the
        padded grid ``(B, N_h, N_pad, N_pad)`` when ``need_weights``."""
        dims = len(self.kernel_size)
        if x.dim() != dims + 2 or x.shape[1] != self.in_channels:
            raise ValueError(
                f"x must be (B, C_in={self.in_channels}, {dims} spatial dims) like the convolution's input, "
                f"got shape {tuple(x.shape)}"
            )
        spatial = tuple(x.shape[2:])
        out_size = self.output_size(spatial)
        if any(n <= 0 for n in out_size):
            raise ValueError(f"input of spatial size {spatial} is smaller than the kernel's reach")
        pad = []
        for p in reversed(self.padding):
            pad += [p, p]
        canvas = F.pad(x, pad).movedim(1, -1)  # (B, *padded, C_in): zero padding becomes zero-valued keys
        out, probs = self.attention(canvas, need_weights=need_weights)  # (B, *padded, C_out)
        window = tuple(slice(c, c + (n - 1) * s + 1, s) for c, n, s in zip(self.offset, out_size, self.stride))
        out = out[(slice(None),) + window].movedim(-1, 1)
        return (out, probs) if need_weights else out

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}")


def conv_to_mhsa(conv: nn.Conv1d | nn.Conv2d, alpha: float | None = None, head_dim: int | None = None) -> ConvAsAttention:
    """Rewrite a convolution as multi-head self-attention with a quadratic positional encoding (Theorem 1).

    Preconditions (checked): ``conv`` is an ``nn.Conv1d`` or ``nn.Conv2d`` with ``groups=1``,
    ``padding_mode='zeros'`` and integer (or ``'valid'``) padding. Any kernel size (odd, even, non-square),
    channels, stride and dilation.

    Args:
        conv: the convolution. Its weights are copied; later changes to ``conv`` are not seen.
        alpha: ``None`` for exact hard attention (the α -> ∞ limit, no overflow); a float α > 0 for the finite
            softmax of Lemma 2, whose error is bounded by :func:`attnconv.bounds.conv_error_bound`.
        head_dim: D_h. Default ``out_channels``, which expresses every convolution. A smaller value factorises
            each W_Δ and raises ``ValueError`` if some W_Δ has rank > D_h.

    Returns:
        A :class:`ConvAsAttention` with N_h = K_1 K_2 heads whose ``forward`` matches ``conv.forward``.

    Raises:
        ValueError: a precondition fails, or ``conv.weight`` or ``conv.bias`` holds NaN or inf (the message names it).
    """
    if not isinstance(conv, (nn.Conv1d, nn.Conv2d)):
        raise ValueError(f"conv must be a torch.nn.Conv1d or torch.nn.Conv2d, got {type(conv).__name__}")
    if conv.groups != 1:
        raise ValueError(f"groups={conv.groups} is not supported: grouped convolutions need groups=1")
    if conv.padding_mode != "zeros":
        raise ValueError(f"padding_mode={conv.padding_mode!r} is not supported: only 'zeros'")
    if isinstance(conv.padding, str):
        if conv.padding != "valid":
            raise ValueError(f"padding={conv.padding!r} is not supported: use integer padding or 'valid'")
        padding = (0,) * len(conv.kernel_size)
    else:
        padding = tuple(conv.padding)
    kernel_size, dilation, stride = tuple(conv.kernel_size), tuple(conv.dilation), tuple(conv.stride)
    d_out, d_in = conv.out_channels, conv.in_channels
    head_dim = d_out if head_dim is None else head_dim
    finite_parameters("conv", conv)  # a NaN or inf weight would become NaN attention outputs, far from its cause
    weight = conv.weight.detach()

    # Output pixel 0 sits at canvas position c = min(p, d(K - 1)); then every key it needs is on the canvas.
    offset = tuple(min(p, d * (k - 1)) for p, d, k in zip(padding, dilation, kernel_size))
    taps = kernel_shifts(kernel_size, dilation, offset)  # Δ = a ⊙ d - c
    centers = torch.tensor([delta for _, delta in taps], dtype=weight.dtype)
    encoding = QuadraticEncoding(len(taps), centers=centers, alpha=alpha, learnable=False).to(weight.device)
    attention = MultiHeadSelfAttention(d_in, len(taps), head_dim=head_dim, out_dim=d_out, bias=True,
                                       positional=encoding, content=False)
    attention = attention.to(device=weight.device, dtype=weight.dtype)
    attention.v_proj.bias = None  # padded pixels are zero vectors and must stay zero values

    with torch.no_grad():
        for h, (tap, _) in enumerate(taps):
            w_val, w_out = factorize_tap(weight[(slice(None), slice(None)) + tap].T, head_dim, tap)
            attention.v_proj.weight[h * head_dim:(h + 1) * head_dim] = w_val.T
            attention.out_proj.weight[:, h * head_dim:(h + 1) * head_dim] = w_out.T
        if conv.bias is None:
            attention.out_proj.bias.zero_()
        else:
            attention.out_proj.bias.copy_(conv.bias.detach())  # b_out = b
    return ConvAsAttention(attention, d_in, kernel_size, stride, padding, dilation, offset, [t for t, _ in taps])
