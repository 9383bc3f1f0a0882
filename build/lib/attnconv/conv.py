"""Convolution as a sum of shifted linear maps (Cordonnier et al. 2020, Lemma 1 setting).

A K x K convolution applied at query pixel q reads the K^2 pixels q + Δ, one for every shift Δ on the
kernel grid, and multiplies each by its own D_in x D_out matrix W_Δ:

    Conv(X)_q = Σ_Δ X_{q+Δ} W_Δ + b.

Tensors here are channels-last, as in the paper: a sequence is ``(B, L, C)`` and an image is
``(B, H, W, C)``. Weights keep PyTorch's layout ``(C_out, C_in, *kernel_size)`` so that they can be copied
from ``nn.Conv1d`` / ``nn.Conv2d`` unchanged. Sign convention used throughout the book: a shift Δ is
*key minus query*, δ = j - q.
"""

from __future__ import annotations

import itertools
from typing import Sequence

import torch
from torch import Tensor

from ._checks import int_tuple

__all__ = ["shift", "kernel_shifts", "conv_as_shifts", "conv1d_as_shifts", "conv2d_as_shifts"]


def shift(x: Tensor, delta: int | Sequence[int]) -> Tensor:
    """Zero-filled shift: ``out[..., q, :] = x[..., q + delta, :]``, and 0 where ``q + delta`` is outside.

    Args:
        x: ``(..., *spatial, C)`` with one spatial axis per entry of ``delta`` (the channel axis is last).
        delta: the shift Δ (key minus query), an int for 1-D or a tuple ``(Δ1, Δ2)`` for 2-D.

    Returns:
        A tensor of the same shape, dtype and device as ``x``.
    """
    if not isinstance(x, Tensor):
        raise TypeError(f"x must be a torch.Tensor, got {type(x).__name__}")
    given = delta
    delta = (delta,) if isinstance(delta, int) else tuple(delta) if isinstance(delta, Sequence) else (None,)
    if not delta or any(isinstance(d, bool) or not isinstance(d, int) for d in delta):
        raise ValueError(f"delta must be an int or a non-empty tuple of ints, got {given!r}")
    if x.dim() < len(delta) + 1:
        raise ValueError(
            f"x must have at least {len(delta) + 1} dims (spatial dims for delta={delta} plus channels), "
            f"got shape {tuple(x.shape)}"
        )
    out = torch.zeros_like(x)
    src: list[slice] = []
    dst: list[slice] = []
    spatial = x.shape[x.dim() - 1 - len(delta) : -1]
    for size, d in zip(spatial, delta):
        if abs(d) >= size:
            return out
        src.append(slice(max(d, 0), size + min(d, 0)))
        dst.append(slice(max(-d, 0), size + min(-d, 0)))
    lead = (Ellipsis,)
    out[lead + tuple(dst) + (slice(None),)] = x[lead + tuple(src) + (slice(None),)]
    return out


def kernel_shifts(
    kernel_size: Sequence[int], dilation: Sequence[int], padding: Sequence[int]
) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    """The kernel grid as shifts: one ``(tap, Δ)`` pair per kernel tap, ``Δ = tap * dilation - padding``.

    ``tap`` indexes the weight (``weight[:, :, *tap]``) and Δ is the shift that tap reads, so that a
    stride-1 convolution is ``Σ_tap shift(x, Δ) @ weight[:, :, *tap].T`` on an output grid whose origin
    sits at input position 0. Taps come in row-major order.
    """
    if isinstance(kernel_size, str) or not isinstance(kernel_size, Sequence):
        raise ValueError(f"kernel_size must be a sequence of ints (one per dimension), got {kernel_size!r}")
    kernel_size = int_tuple("kernel_size", kernel_size, len(kernel_size), 1)
    dilation = int_tuple("dilation", dilation, len(kernel_size), 1)  # one per dimension: nothing is truncated
    if isinstance(padding, int) and not isinstance(padding, bool):
        padding = (padding,) * len(kernel_size)
    if not isinstance(padding, Sequence) or len(padding) != len(kernel_size) or any(
            isinstance(p, bool) or not isinstance(p, (int, float)) for p in padding):
        raise ValueError(f"padding must be a number or one number per dimension ({len(kernel_size)}), "
                         f"got {padding!r}")
    taps = itertools.product(*(range(k) for k in kernel_size))
    return [(tap, tuple(t * d - p for t, d, p in zip(tap, dilation, padding))) for tap in taps]


def conv_as_shifts(
    x: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: int | Sequence[int] = 1,
    padding: int | Sequence[int] = 0,
    dilation: int | Sequence[int] = 1,
) -> Tensor:
    """An n-D convolution computed as ``Σ_Δ shift(x, Δ) W_Δ + b`` (zero padding, ``groups=1``).

    Equal to ``torch.nn.functional.conv{n}d`` (cross-correlation, as PyTorch defines it) up to float
    rounding, for any channels, odd or even kernels, padding, dilation and stride.

    Args:
        x: ``(B, *spatial, C_in)``, channels last.
        weight: ``(C_out, C_in, *kernel_size)``, PyTorch's layout; ``W_Δ = weight[:, :, *tap].T`` is
            ``(C_in, C_out)``.
        bias: ``(C_out,)`` or ``None``.
        stride, padding, dilation: ints or one int per spatial dim, as in ``nn.Conv{n}d``.

    Returns:
        ``(B, *spatial_out, C_out)`` with ``spatial_out = (L + 2p - d(K - 1) - 1) // s + 1`` per dim.
    """
    for name, t in (("x", x), ("weight", weight), ("bias", bias)):
        if t is not None and not isinstance(t, Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if x.dtype != weight.dtype or (bias is not None and bias.dtype != weight.dtype):
        raise TypeError(f"x, weight and bias must share one dtype, got x {x.dtype}, weight {weight.dtype}"
                        + ("" if bias is None else f", bias {bias.dtype}"))
    dims = weight.dim() - 2
    if dims < 1:
        raise ValueError(f"weight must be (C_out, C_in, *kernel_size), got shape {tuple(weight.shape)}")
    if x.dim() != dims + 2:
        raise ValueError(
            f"x must be (B, *spatial, C_in) with {dims} spatial dims to match weight, got shape {tuple(x.shape)}"
        )
    c_out, c_in, *kernel_size = weight.shape
    if x.shape[-1] != c_in:
        raise ValueError(f"x has {x.shape[-1]} channels in its last dim but weight expects C_in={c_in}")
    if bias is not None and tuple(bias.shape) != (c_out,):
        raise ValueError(f"bias must have shape ({c_out},), got {tuple(bias.shape)}")
    stride_ = int_tuple("stride", stride, dims, minimum=1)
    padding_ = int_tuple("padding", padding, dims, minimum=0)
    dilation_ = int_tuple("dilation", dilation, dims, minimum=1)

    spatial = x.shape[1:-1]
    out_size = [n + 2 * p - d * (k - 1) for n, p, d, k in zip(spatial, padding_, dilation_, kernel_size)]
    if any(n <= 0 for n in out_size):
        raise ValueError(
            f"the kernel (size {tuple(kernel_size)}, dilation {dilation_}) is larger than the padded input "
            f"(spatial {tuple(spatial)}, padding {padding_})"
        )
    # Work on a canvas that holds both the input and the stride-1 output grid: zeros beyond the input
    # change nothing, because a shift already reads zeros outside the input.
    canvas = [max(n, m) for n, m in zip(spatial, out_size)]
    pad = [0, 0]
    for n, c in reversed(list(zip(spatial, canvas))):
        pad += [0, c - n]
    x = torch.nn.functional.pad(x, pad)

    out = x.new_zeros(*x.shape[:-1], c_out)
    for tap, delta in kernel_shifts(kernel_size, dilation_, padding_):
        out = out + shift(x, delta) @ weight[(slice(None), slice(None)) + tap].T  # (B, *canvas, C_out)
    crop = tuple(slice(0, m, s) for m, s in zip(out_size, stride_))
    out = out[(slice(None),) + crop]
    return out if bias is None else out + bias


def conv1d_as_shifts(x: Tensor, weight: Tensor, bias: Tensor | None = None, stride: int = 1,
                     padding: int = 0, dilation: int = 1) -> Tensor:
    """1-D :func:`conv_as_shifts`: ``x`` is ``(B, L, C_in)`` and ``weight`` is ``(C_out, C_in, K)``."""
    if weight.dim() != 3:
        raise ValueError(f"weight must be (C_out, C_in, K) for a 1-D convolution, got shape {tuple(weight.shape)}")
    return conv_as_shifts(x, weight, bias, stride, padding, dilation)


def conv2d_as_shifts(x: Tensor, weight: Tensor, bias: Tensor | None = None,
                     stride: int | Sequence[int] = 1, padding: int | Sequence[int] = 0,
                     dilation: int | Sequence[int] = 1) -> Tensor:
    """2-D :func:`conv_as_shifts`: ``x`` is ``(B, H, W, C_in)`` and ``weight`` is ``(C_out, C_in, K1, K2)``."""
    if weight.dim() != 4:
        raise ValueError(
            f"weight must be (C_out, C_in, K1, K2) for a 2-D convolution, got shape {tuple(weight.shape)}"
        )
    return conv_as_shifts(x, weight, bias, stride, padding, dilation)
