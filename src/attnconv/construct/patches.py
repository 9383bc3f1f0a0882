"""Li, Chen, He & Hsieh 2021 as functions: a convolution on pixels is a convolution on patch tokens, hence attention.

Cut the image into P x P patches and flatten each into one token of P²C values (channel-major: index
c P² + s P + t for channel c at row s, column t of the patch). A K x K convolution with stride 1 and "same" zero
padding reaches r = (K - 1) / 2 pixels, so the output patch at (I, J) reads only the patches within
R = ceil(r / P) patches of it. On the patch grid it is therefore a (2R + 1) x (2R + 1) convolution whose taps are
(P² C_in) -> (P² C_out) matrices (:func:`conv_to_patch_conv`), and chapter 03's construction
(:func:`~attnconv.construct.image.conv_to_mhsa`) turns that into attention with (2R + 1)² heads, nine when
K ≤ 2P + 1 (:func:`conv_to_patch_mhsa`).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from .._checks import finite_parameters, int_at_least
from .image import ConvAsAttention, conv_to_mhsa

__all__ = ["PatchConvAsAttention", "conv_to_patch_conv", "conv_to_patch_mhsa", "patch_heads", "patchify",
           "unpatchify"]


def patchify(x: Tensor, patch_size: int) -> Tensor:
    """``(B, C, H, W)`` -> ``(B, C P², H/P, W/P)``: each P x P patch as one token, channel-major.

    Raises:
        ValueError: ``x`` is not 4-D, or H or W is not a multiple of ``patch_size``.
    """
    p = int_at_least("patch_size", patch_size, 1)
    if not isinstance(x, Tensor) or x.dim() != 4:
        raise ValueError(f"x must be (B, C, H, W), got {tuple(x.shape) if isinstance(x, Tensor) else type(x).__name__}")
    b, c, h, w = x.shape
    if h % p or w % p:
        raise ValueError(f"the image's size {h} x {w} must be a multiple of patch_size={p}")
    tiles = x.reshape(b, c, h // p, p, w // p, p)  # (B, C, H/P, s, W/P, t)
    return tiles.permute(0, 1, 3, 5, 2, 4).reshape(b, c * p * p, h // p, w // p)


def unpatchify(tokens: Tensor, patch_size: int) -> Tensor:
    """The inverse of :func:`patchify`: ``(B, C P², H/P, W/P)`` -> ``(B, C, H, W)``.

    Raises:
        ValueError: ``tokens`` is not 4-D, or its channels are not a multiple of P².
    """
    p = int_at_least("patch_size", patch_size, 1)
    if not isinstance(tokens, Tensor) or tokens.dim() != 4 or tokens.shape[1] % (p * p):
        raise ValueError(f"tokens must be (B, C P², H/P, W/P) with P={p}, got "
                         f"{tuple(tokens.shape) if isinstance(tokens, Tensor) else type(tokens).__name__}")
    b, cpp, hp, wp = tokens.shape
    c = cpp // (p * p)
    return tokens.reshape(b, c, p, p, hp, wp).permute(0, 1, 4, 2, 5, 3).reshape(b, c, hp * p, wp * p)


def patch_heads(kernel_size: int, patch_size: int) -> int:
    """(2R + 1)² with R = ceil(((K - 1) / 2) / P): the heads of the patch construction (9 for K ≤ 2P + 1)."""
    k = int_at_least("kernel_size", kernel_size, 1)
    p = int_at_least("patch_size", patch_size, 1)
    return (2 * math.ceil((k - 1) // 2 / p) + 1) ** 2


def _check_same_conv(conv: object) -> tuple[int, int]:
    if not isinstance(conv, nn.Conv2d):
        raise ValueError(f"conv must be a torch.nn.Conv2d, got {type(conv).__name__}")
    k1, k2 = conv.kernel_size
    if k1 != k2 or k1 % 2 == 0:
        raise ValueError(f"kernel_size must be square and odd, got {conv.kernel_size}")
    r = (k1 - 1) // 2
    if tuple(conv.stride) != (1, 1) or tuple(conv.dilation) != (1, 1) or conv.groups != 1:
        raise ValueError("conv must have stride 1, dilation 1 and groups 1 for the patch construction, got "
                         f"stride={conv.stride}, dilation={conv.dilation}, groups={conv.groups}")
    if conv.padding_mode != "zeros" or conv.padding not in ((r, r), "same"):
        raise ValueError(f"conv must zero-pad by (K-1)/2 = {r} ('same'), got padding={conv.padding!r}, "
                         f"padding_mode={conv.padding_mode!r}")
    finite_parameters("conv", conv)
    return k1, r


def conv_to_patch_conv(conv: nn.Conv2d, patch_size: int) -> nn.Conv2d:
    """The same map on patch tokens: an ``nn.Conv2d`` from C_in P² to C_out P² channels with a (2R+1)² kernel.

    Its tap at patch offset (dI, dJ) sends input pixel (s, t) of channel c to output pixel (u, v) of channel o
    with the weight W[o, c, r + dI P + s - u, r + dJ P + t - v], 0 where that pixel offset is beyond r.

    Raises:
        ValueError: ``conv`` is not a square, odd, stride-1, undilated, ungrouped ``nn.Conv2d`` with "same" zero
            padding, or holds NaN or inf; ``patch_size`` < 1.
    """
    k, r = _check_same_conv(conv)
    p = int_at_least("patch_size", patch_size, 1)
    reach = math.ceil(r / p)
    d_out, d_in = conv.out_channels, conv.in_channels
    weight = conv.weight.detach()
    big = torch.zeros(d_out, p, p, d_in, p, p, 2 * reach + 1, 2 * reach + 1, dtype=weight.dtype,
                      device=weight.device)  # (o, u, v, c, s, t, dI, dJ)
    for di in range(-reach, reach + 1):
        for dj in range(-reach, reach + 1):
            for u in range(p):
                for s in range(p):
                    row = di * p + s - u  # the pixel offset, vertical
                    if abs(row) > r:
                        continue
                    for v in range(p):
                        for t in range(p):
                            col = dj * p + t - v
                            if abs(col) <= r:
                                big[:, u, v, :, s, t, di + reach, dj + reach] = weight[:, :, r + row, r + col]
    patch = nn.Conv2d(d_in * p * p, d_out * p * p, 2 * reach + 1, padding=reach, bias=conv.bias is not None)
    patch = patch.to(device=weight.device, dtype=weight.dtype)
    with torch.no_grad():
        patch.weight.copy_(big.reshape(d_out * p * p, d_in * p * p, 2 * reach + 1, 2 * reach + 1))
        if conv.bias is not None:
            patch.bias.copy_(conv.bias.detach().repeat_interleave(p * p))
    return patch


class PatchConvAsAttention(nn.Module):
    """A convolution computed by multi-head self-attention over patch tokens; built by :func:`conv_to_patch_mhsa`.

    ``forward`` takes and returns what the convolution does, ``(B, C_in, H, W)`` -> ``(B, C_out, H, W)``, with H
    and W multiples of the patch size.

    Attributes:
        attention: chapter 03's :class:`~attnconv.construct.image.ConvAsAttention` on the patch grid.
        patch_size: P.
    """

    def __init__(self, attention: ConvAsAttention, patch_size: int) -> None:
        super().__init__()
        self.attention, self.patch_size = attention, patch_size

    @property
    def num_heads(self) -> int:
        return self.attention.attention.num_heads

    def forward(self, x: Tensor) -> Tensor:
        return unpatchify(self.attention(patchify(x, self.patch_size)), self.patch_size)

    def extra_repr(self) -> str:
        return f"patch_size={self.patch_size}, num_heads={self.num_heads}"


def conv_to_patch_mhsa(conv: nn.Conv2d, patch_size: int) -> PatchConvAsAttention:
    """A K x K "same" convolution as attention over P x P patch tokens, with :func:`patch_heads` heads.

    Raises:
        ValueError: as :func:`conv_to_patch_conv`.
    """
    return PatchConvAsAttention(conv_to_mhsa(conv_to_patch_conv(conv, patch_size)), patch_size)
