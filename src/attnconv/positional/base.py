"""The positional-logit interface: how relative-position terms plug into attention.

Attention logits are a content term plus a position term (the Transformer-XL decomposition used by
Cordonnier et al. 2020, eq. 8, and by Chang et al. 2021):

    A_{q,j} = X_q W_qry W_key^T X_j^T / sqrt(D_h)  +  P^(h)_{q,j},

where P^(h) depends on the relative position δ = j - q (key minus query) and, for some encodings, on
the query or key vectors too. A positional module computes P for every head.
"""

from __future__ import annotations

import math
import numbers
from typing import Sequence

import torch
from torch import Tensor, nn

from .._checks import available_device, positive_int, symbolic_size
from ..taps import softmax_fp32

__all__ = ["PositionalLogits", "grid_positions", "negligible_probability", "relative_offsets", "softmax_flushed"]


def negligible_probability(dtype: torch.dtype) -> float:
    """eps², below which an attention probability cannot change a weighted sum of values at ``dtype``'s precision:
    1.4e-14 in float32, 4.9e-32 in float64."""
    return torch.finfo(dtype).eps ** 2


def softmax_flushed(logits: Tensor, dim: int = -1) -> Tensor:
    """``softmax(logits)`` with probabilities below :func:`negligible_probability` set to exactly zero.

    A sharply peaked softmax (the quadratic encoding at large α) underflows into subnormal floats, which slow CPU
    matmuls five- to tenfold. Each dropped probability is below eps², so a sum over N ≤ 1/eps keys changes by
    less than eps times its largest value: below rounding. Gradients pass through the kept entries unchanged.
    The softmax is normalised in at least float32 (:func:`attnconv.taps.softmax_fp32`), so under bfloat16 autocast
    the threshold is float32's, not bfloat16's 6e-5.
    """
    probs = softmax_fp32(logits, dim=dim)
    return probs.masked_fill(probs < negligible_probability(probs.dtype), 0.0)


def grid_positions(grid: Sequence[int], device: torch.device | None = None) -> Tensor:
    """Integer coordinates of every token of a grid, in row-major order.

    Args:
        grid: the spatial shape, ``(N,)`` for a sequence or ``(H, W)`` for an image.

    Returns:
        ``(N, d)`` long tensor, ``N = prod(grid)``, ``d = len(grid)``.

    Raises:
        ValueError: ``device`` is not on this machine (for example "cuda" without CUDA).
    """
    device = available_device("device", device)
    if isinstance(grid, (str, bytes)) or not isinstance(grid, Sequence) or not grid or any(
            not symbolic_size(n) and (isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 1)
            for n in grid):  # a size jit.trace records is taken unread
        raise ValueError(f"grid must be a non-empty sequence of positive ints (the spatial shape), got {grid!r}")
    axes = [torch.arange(n, device=device) for n in grid]
    return torch.stack(torch.meshgrid(*axes, indexing="ij"), dim=-1).reshape(math.prod(grid), len(grid))


def relative_offsets(grid: Sequence[int], device: torch.device | None = None) -> Tensor:
    """Relative positions δ = j - q for every (query q, key j) pair of a grid.

    Returns:
        ``(N, N, d)`` long tensor with ``out[q, j] = pos[j] - pos[q]``.
    """
    pos = grid_positions(grid, device)
    return pos[None, :, :] - pos[:, None, :]


class PositionalLogits(nn.Module):
    """Base class of modules that add relative-position logits P^(h) to attention.

    Subclasses implement :meth:`forward`. Set ``uses_queries`` / ``uses_keys`` to ``True`` when the
    logits depend on the projected queries / keys; :class:`~attnconv.attention.MultiHeadSelfAttention`
    then computes them even when its content term is switched off.

    Args:
        num_heads: N_h, the number of heads the logits are computed for.
    """

    uses_queries: bool = False
    uses_keys: bool = False

    def __init__(self, num_heads: int) -> None:
        super().__init__()
        self.num_heads = positive_int("num_heads", num_heads)

    def forward(self, grid: tuple[int, ...], queries: Tensor | None, keys: Tensor | None) -> Tensor:
        """Position logits for a grid of ``N = prod(grid)`` tokens.

        Args:
            grid: the spatial shape of the input, ``(N,)`` or ``(H, W)``.
            queries: ``(B, N_h, N, D_h)`` projected queries, or ``None`` when not ``uses_queries``.
            keys: ``(B, N_h, N, D_h)`` projected keys, or ``None`` when not ``uses_keys``.

        Returns:
            ``(N_h, N, N)`` when the logits do not depend on content (computed once per forward pass
            and shared by the batch), else ``(B, N_h, N, N)``.
        """
        raise NotImplementedError

    def factorized_probs(self, grid: tuple[int, ...]) -> list[Tensor] | None:
        """Optional fast path for content-independent encodings whose softmax factorises over the axes.

        Returns one ``(N_h, L_a, L_a)`` probability matrix per axis of the grid, such that the full
        attention matrix is their Kronecker product, or ``None`` (the default) when it does not factorise.
        """
        return None

    def extra_repr(self) -> str:
        return f"num_heads={self.num_heads}"
