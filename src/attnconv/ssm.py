"""A scalar-decay state-space model and its two other faces (Dao & Gu 2024, state-space duality).

The recurrence h_t = a h_{t-1} + b x_t, y_t = c h_t (h_{-1} = 0) unrolls to y_t = Σ_{s ≤ t} c a^{t-s} b x_s:

- a causal convolution with kernel K_k = c a^k b (:func:`ssm_kernel`, :func:`causal_conv`);
- masked linear attention y = (L ∘ (c b)) x, with the 1-semiseparable mask L_{ts} = a^{t-s} for t ≥ s and 0
  above the diagonal (:func:`semiseparable_mask`).

:func:`scalar_ssm` runs the recurrence itself; the three agree to rounding (tests/test_ssm.py), and the SymPy
proof is :func:`attnconv.proofs.after.ssm_is_conv_and_masked_attention`.
"""

from __future__ import annotations

import torch
from torch import Tensor

from ._checks import int_at_least, real_number

__all__ = ["causal_conv", "scalar_ssm", "semiseparable_mask", "ssm_kernel"]


def _coefficients(a: object, b: object, c: object) -> tuple[float, float, float]:
    return real_number("a", a), real_number("b", b), real_number("c", c)


def _sequence(x: object) -> Tensor:
    if not isinstance(x, Tensor) or x.dim() != 1 or not x.is_floating_point():
        raise ValueError(f"x must be a 1-D floating-point tensor (T,), got "
                         f"{tuple(x.shape) if isinstance(x, Tensor) else type(x).__name__}")
    if x.numel() == 0:
        raise ValueError("x must hold at least one step, got an empty tensor")
    return x


def ssm_kernel(a: float, b: float, c: float, length: int, dtype: torch.dtype = torch.float64) -> Tensor:
    """The convolution kernel of the scalar SSM: ``(length,)`` with K_k = c a^k b for k = 0 .. length-1.

    Raises:
        ValueError: ``a``, ``b`` or ``c`` is not a finite real number (a TypeError if it is not a number), or
            ``length`` < 1.
    """
    a, b, c = _coefficients(a, b, c)
    length = int_at_least("length", length, 1)
    return c * b * torch.tensor(a, dtype=dtype) ** torch.arange(length, dtype=dtype)


def semiseparable_mask(a: float, length: int, dtype: torch.dtype = torch.float64) -> Tensor:
    """The 1-semiseparable mask ``(length, length)``: L_{ts} = a^{t-s} for t ≥ s, 0 for t < s.

    Raises:
        ValueError: ``a`` is not a finite real number (a TypeError if it is not a number), or ``length`` < 1.
    """
    a = real_number("a", a)
    length = int_at_least("length", length, 1)
    t = torch.arange(length)
    offset = (t[:, None] - t[None, :]).to(dtype)  # (T, T): t - s
    return torch.where(offset >= 0, torch.tensor(a, dtype=dtype) ** offset.clamp_min(0), torch.zeros((), dtype=dtype))


def causal_conv(x: Tensor, kernel: Tensor) -> Tensor:
    """y_t = Σ_{k=0}^{t} K_k x_{t-k}: a causal convolution of ``x`` ``(T,)`` with ``kernel`` ``(T,)`` or longer.

    Raises:
        ValueError: ``x`` is not a non-empty 1-D float tensor, or ``kernel`` is shorter than ``x``.
    """
    x = _sequence(x)
    if not isinstance(kernel, Tensor) or kernel.dim() != 1 or kernel.numel() < x.numel():
        raise ValueError(f"kernel must be a 1-D tensor with at least T={x.numel()} taps, got "
                         f"{tuple(kernel.shape) if isinstance(kernel, Tensor) else type(kernel).__name__}")
    n = x.numel()
    padded = torch.cat([x.new_zeros(n - 1), x])  # (2T-1,): zeros before the first step
    return torch.nn.functional.conv1d(padded[None, None], kernel[:n].flip(0).to(x.dtype)[None, None])[0, 0]


def scalar_ssm(x: Tensor, a: float, b: float, c: float) -> Tensor:
    """Run h_t = a h_{t-1} + b x_t, y_t = c h_t from h_{-1} = 0 over ``x`` ``(T,)``; returns y ``(T,)``.

    Raises:
        ValueError: ``x`` is not a non-empty 1-D float tensor, or a coefficient is not a finite real number (a
            TypeError if it is not a number).
    """
    x = _sequence(x)
    a, b, c = _coefficients(a, b, c)
    h, out = x.new_zeros(()), []
    for x_t in x:
        h = a * h + b * x_t
        out.append(c * h)
    return torch.stack(out)
