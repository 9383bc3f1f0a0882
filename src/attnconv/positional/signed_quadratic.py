"""The quadratic relative encoding with any sign of α: the positional query itself is the parameter.

:class:`~attnconv.positional.QuadraticEncoding` stores a head as its centre Δ and log α, so α > 0 and the head is a
Gaussian bump. A trained ConViT head (timm's ``pos_proj``) or an isotropic Gaussian head of Cordonnier et al. whose
spread reached 0 need not be one: their positional query v = (v_0, v_1, ..., v_d) over the features
r_δ = (‖δ‖², δ_1, ..., δ_d) can have v_0 = -α ≥ 0. Head h's logit is then, axis by axis,

    v^(h) · r_δ = Σ_a (v_0 δ_a² + v_a δ_a),

which is the Gaussian -α(‖δ - Δ‖² - ‖Δ‖²) with Δ = v_{1:} / (2α) while α > 0, a linear ramp v_{1:} · δ when α = 0
(uniform attention if v = 0), and a bowl that favours the farthest keys when α < 0. This module stores v, so every
such head is expressed exactly; the logit is still a sum of one term per axis, so the softmax factorises as before.
"""

from __future__ import annotations

from typing import Sequence

import torch
from torch import Tensor, nn

from .._checks import (NonFiniteResultError, all_finite, finite_checks_apply, flag, nonfinite_parameter,
                       values_readable)
from .base import PositionalLogits, softmax_flushed

__all__ = ["SignedQuadraticEncoding"]


def checked_query(query: object) -> Tensor:
    """A positional query v as a new floating-point ``(N_h, d + 1)`` tensor, after checking it.

    Raises:
        TypeError: ``query`` is not a real tensor (or nested list of numbers).
        ValueError: ``query`` is not ``(N_h, d + 1)`` with N_h, d ≥ 1, or holds NaN or inf.
    """
    try:
        weight = torch.as_tensor(query).detach()
    except (TypeError, ValueError, RuntimeError) as err:
        raise TypeError(f"query must be a real (N_h, d + 1) tensor, got {type(query).__name__}: {err}") from None
    if weight.dtype == torch.bool or weight.is_complex():
        raise TypeError(f"query must hold real numbers, got {weight.dtype}")
    if weight.dim() != 2 or weight.shape[0] < 1 or weight.shape[1] < 2:
        raise ValueError(f"query must be (N_h, d + 1) with N_h >= 1 and d >= 1, got shape {tuple(weight.shape)}")
    weight = weight.to(weight.dtype if weight.is_floating_point() else torch.get_default_dtype()).clone()
    if values_readable(weight) and not bool(torch.isfinite(weight).all()):
        raise ValueError(f"query must be finite (no NaN or inf), got {weight.tolist()}")
    return weight


def outer_sum(parts: list[Tensor], num_heads: int) -> Tensor:
    """The dense ``(N_h, N, N)`` logits from one ``(N_h, L_a, L_a)`` table per axis (their outer sum)."""
    total = parts[0]
    for part in parts[1:]:  # (N_h, H, H) + (N_h, W, W) -> (N_h, H, W, H, W)
        a, b = total.shape[1], part.shape[1]
        total = total.reshape(num_heads, a, 1, a, 1) + part.reshape(num_heads, 1, b, 1, b)
        total = total.reshape(num_heads, a * b, a * b)
    return total


class SignedQuadraticEncoding(PositionalLogits):
    """Quadratic relative attention parameterised by its positional query v^(h), so α^(h) = -v^(h)_0 has any sign.

    Args:
        query: ``(N_h, d + 1)``, row h = v^(h) over the features (‖δ‖², δ_1, ..., δ_d) (``d = 1`` for sequences,
            ``2`` for images, δ = key minus query, row offset first): the output of
            :meth:`QuadraticEncoding.positional_query <attnconv.positional.QuadraticEncoding.positional_query>`, or
            ConViT's ``pos_proj.weight[:, [2, 1, 0]]``.
        learnable: whether v trains (an ``nn.Parameter``) or is a fixed buffer.

    Attributes:
        weight: v, ``(N_h, d + 1)``.

    Raises:
        TypeError: ``query`` is not a real tensor (or nested list of numbers).
        ValueError: ``query`` is not ``(N_h, d + 1)`` with N_h, d ≥ 1, or holds NaN or inf.
    """

    def __init__(self, query: Tensor | Sequence[Sequence[float]], learnable: bool = True) -> None:
        weight = checked_query(query)
        super().__init__(weight.shape[0])
        if flag("learnable", learnable):
            self.weight = nn.Parameter(weight)
        else:
            self.register_buffer("weight", weight)

    @property
    def dims(self) -> int:
        return self.weight.shape[1] - 1

    @property
    def alpha(self) -> Tensor:
        """α^(h) = -v^(h)_0, ``(N_h,)``, of any sign."""
        return -self.weight[:, 0]

    @property
    def centers(self) -> Tensor:
        """Δ^(h) = (v^(h)_1, ..., v^(h)_d) / (2α^(h)), ``(N_h, d)``, the bump's centre for α > 0 and the bowl's for α < 0
        (``inf`` or ``NaN`` for α = 0, as a linear ramp has no centre)."""
        return self.weight[:, 1:] / (2 * self.alpha[:, None])

    def positional_query(self) -> Tensor:
        """v^(h), ``(N_h, d + 1)``."""
        return self.weight

    def axis_logits(self, grid: Sequence[int]) -> list[Tensor]:
        """One ``(N_h, L, L)`` table per axis, entry ``[h, i, j]`` = v_0 δ² + v_a δ with δ = j - i on axis a.

        Raises:
            ValueError: ``grid`` has not d axes, or (:class:`~attnconv._checks.NonFiniteResultError`) a logit
                overflows the dtype of v.
        """
        if len(grid) != self.dims:
            raise ValueError(f"this encoding has {self.dims}-D offsets but the input grid is {tuple(grid)}")
        out = []
        for axis, length in enumerate(grid):
            pos = torch.arange(length, device=self.weight.device, dtype=self.weight.dtype)
            delta = pos[None, :] - pos[:, None]  # (L, L), key minus query
            out.append(self.weight[:, 0, None, None] * delta**2 + self.weight[:, axis + 1, None, None] * delta)
        if finite_checks_apply(self.weight) and not all(all_finite(part) for part in out):
            bad = nonfinite_parameter(self.named_parameters())
            if bad:
                raise NonFiniteResultError(f"the positional logits are not finite: {bad}. Restore it from a "
                                           "checkpoint, or lower the learning rate that made it")
            raise NonFiniteResultError(f"the logits v_0 δ² + v_a δ overflow {self.weight.dtype} for this grid "
                                       f"{tuple(grid)} (use a wider dtype or a smaller positional query)")
        return out

    def forward(self, grid: tuple[int, ...], queries: Tensor | None = None, keys: Tensor | None = None) -> Tensor:
        """Dense logits v^(h) · r_δ for every (query, key) pair: ``(N_h, N, N)``, shared by the batch."""
        return outer_sum(self.axis_logits(grid), self.num_heads)

    def factorized_probs(self, grid: tuple[int, ...]) -> list[Tensor]:
        """Per-axis attention probabilities ``[(N_h, L_a, L_a)]``; the full P^(h) is their Kronecker product."""
        return [softmax_flushed(part) for part in self.axis_logits(grid)]

    def extra_repr(self) -> str:
        return f"num_heads={self.num_heads}, dims={self.dims}, alpha>0 in {int((self.alpha > 0).sum())} heads"
