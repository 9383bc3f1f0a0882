"""How far a finite-α quadratic head is from hard attention, and what that costs a convolution.

Head h centred on Δ gives the key at δ = j - q the weight e^{-α‖δ-Δ‖²} / Z. Let
S(α) = Σ_{δ ∈ Z^d, δ ≠ 0} e^{-α‖δ‖²} = θ(α)^d - 1 with θ(α) = Σ_{n ∈ Z} e^{-α n²}. When the target key
exists, the mass the head puts anywhere else is

    ε = Σ_{δ ≠ Δ} e^{-α‖δ-Δ‖²} / (1 + Σ_{δ ≠ Δ} e^{-α‖δ-Δ‖²}) ≤ S(α) / (1 + S(α)) = 1 - θ(α)^{-d},

because x / (1 + x) increases and a finite grid holds a subset of Z^d (equality only on an infinite grid; in the
middle of a 15 x 15 grid the mass is 0.99995 of the bound at α = 0.1, as chapter 03 measures). Truncating the sum
to offsets that fit on the grid gives a slightly tighter bound.
With Σ_k A_qk = 1, the layer's error at query q is Σ_h Σ_{k ≠ q+Δ_h} A^(h)_qk (X_k - X_{q+Δ_h}) W^(h), so

    ‖MHSA(X)_q - Conv(X)_q‖_2 ≤ ε(α) Σ_h max_{k,k'} ‖(X_k - X_k') W^(h)‖_2 ≤ 2 ε(α) Σ_h max_k ‖X_k W^(h)‖_2.

Each step is derived in SymPy, with α symbolic, by :func:`attnconv.proofs.image.finite_alpha_bound`. The error
bound is attained (to within rounding) by one head whose query token is the negative of every other token, which
``tests/test_finite_alpha.py`` builds.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Sequence

import torch
from torch import Tensor, nn

from ._checks import int_at_least

__all__ = [
    "AlphaSweep", "alpha_sweep", "conv_error_bound", "gaussian_tail_sum", "off_target_mass_bound", "theta",
]


DIRECT_TERMS = 100_000  # beyond this many terms, θ is summed in closed form instead of term by term


def _tail(alpha: float, max_offset: int | None) -> float:
    """θ(α) - 1 = 2 Σ_{n ≥ 1} e^{-α n²}, summed directly (no cancellation when it is tiny).

    When more than ``DIRECT_TERMS`` terms count (α below about 1e-7), the full sum comes from Jacobi's identity
    θ(α) = sqrt(π/α) θ(π²/α), whose series converges at once, and a sum cut at ``max_offset`` = M from
    Euler-Maclaurin: Σ_{n=1..M} f(n) = ∫_0^M f + (f(M) - 1)/2 + f'(M)/12 + O(α²) for f(x) = e^{-αx²}.
    Either way the cost is bounded, whatever α > 0.
    """
    if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real):
        raise TypeError(f"alpha must be a real number, got {type(alpha).__name__} {alpha!r}")
    if not alpha > 0:
        raise ValueError(f"alpha must be > 0, got {alpha!r}")
    if max_offset is not None:
        int_at_least("max_offset (or None)", max_offset, 0)
    if math.isinf(alpha):
        return 0.0
    reach = int(math.ceil(math.sqrt(800.0 / alpha))) + 1  # later terms are below e^{-800}: zero in float64
    if max_offset is not None:
        reach = min(reach, max_offset)
    if reach <= DIRECT_TERMS:
        return 2.0 * sum(math.exp(-alpha * n * n) for n in range(reach, 0, -1))
    if reach == max_offset:  # Σ_{n=1..M} f(n) = ∫_0^M f + (f(M) - f(0))/2 + (f'(M) - f'(0))/12, f'(0) = 0
        m = float(reach)
        f_m = math.exp(-alpha * m * m)
        integral = 0.5 * math.sqrt(math.pi / alpha) * math.erf(m * math.sqrt(alpha))
        return 2.0 * (integral + (f_m - 1.0) / 2 - alpha * m * f_m / 6)
    dual = sum(math.exp(-math.pi**2 * k * k / alpha) for k in range(1, 4))  # e^{-π²/α} < e^{-1e7}: zero here
    return math.sqrt(math.pi / alpha) * (1.0 + 2.0 * dual) - 1.0


def theta(alpha: float, max_offset: int | None = None) -> float:
    """θ(α) = Σ_n e^{-α n²} over all integers n (or those up to ``max_offset`` in absolute value)."""
    return 1.0 + _tail(alpha, max_offset)


def gaussian_tail_sum(alpha: float, dims: int = 2, max_offset: int | None = None) -> float:
    """S(α) = θ(α)^d - 1: the unnormalised off-target weight around a head's centre, in d dimensions.

    Computed as Σ_{j=1..d} C(d, j) (θ - 1)^j, which stays accurate when S is far below machine epsilon.
    """
    dims = int_at_least("dims", dims, 1)
    t = _tail(alpha, max_offset)
    return sum(math.comb(dims, j) * t**j for j in range(1, dims + 1))


def off_target_mass_bound(alpha: float, dims: int = 2, max_offset: int | None = None) -> float:
    """ε(α) = S / (1 + S): an upper bound on the attention mass a head puts off its target shift."""
    s = gaussian_tail_sum(alpha, dims, max_offset)
    return s / (1.0 + s)


def conv_error_bound(conv: nn.Conv1d | nn.Conv2d, x: Tensor, alpha: float) -> Tensor:
    """Upper bound on ``max_q ‖MHSA(X)_q - Conv(X)_q‖_2`` for the layer ``conv_to_mhsa(conv, alpha)``.

    Args:
        conv: the convolution.
        x: its input ``(B, C_in, *spatial)``.

    Returns:
        ``(B,)``: 2 ε(α) Σ_h max_k ‖X_k W_Δh‖_2 per input (padded keys are zero and add nothing).
    """
    dims = conv.weight.dim() - 2
    w = conv.weight.detach().to(x.dtype).flatten(2)  # (D_out, D_in, N_h)
    tokens = x.flatten(2)  # (B, D_in, N)
    per_key = torch.einsum("bin,oih->bhno", tokens, w).norm(dim=-1)  # (B, N_h, N): ‖X_k W^(h)‖
    max_offset = max(max(x.shape[2:]) + 2 * max(conv.padding if not isinstance(conv.padding, str) else (0,)), 1)
    eps = off_target_mass_bound(alpha, dims, max_offset)
    return 2.0 * eps * per_key.amax(dim=-1).sum(dim=-1)


@dataclass(frozen=True)
class AlphaSweep:
    """Measured error of ``conv_to_mhsa(conv, alpha)`` against ``conv``, and its bound, for several α.

    Attributes:
        alphas: the α values.
        measured: ``max_q ‖MHSA(X)_q - Conv(X)_q‖_2`` over the batch, per α.
        bound: the largest :func:`conv_error_bound` over the batch, per α.
        hard: the same error for hard attention (α = ∞): the floating-point floor.
    """

    alphas: list[float]
    measured: list[float]
    bound: list[float]
    hard: float


def alpha_sweep(conv: nn.Conv1d | nn.Conv2d, x: Tensor, alphas: Sequence[float]) -> AlphaSweep:
    """Run :func:`~attnconv.construct.image.conv_to_mhsa` at every α and measure the error against ``conv``."""
    from .construct import conv_to_mhsa

    def error(layer: nn.Module) -> float:
        return float((layer(x) - reference).flatten(2).norm(dim=1).amax())

    with torch.no_grad():
        reference = conv(x)
        measured = [error(conv_to_mhsa(conv, alpha=float(a))) for a in alphas]
        bound = [float(conv_error_bound(conv, x, float(a)).max()) for a in alphas]
        hard = error(conv_to_mhsa(conv))
    return AlphaSweep([float(a) for a in alphas], measured, bound, hard)
