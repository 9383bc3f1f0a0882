"""The converse of Theorem 1: how convolutional is an attention head?

A head behaves like one tap of a convolution when, for every query q, its attention sits on the key
q + Δ for one fixed shift Δ. For a head's attention matrix on an image grid, :func:`head_shift` finds the
shift that collects the most attention on average, and how much it collects (1.0 for a perfect
convolution tap). :func:`layer_shifts` does this for every head of a layer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import torch
from torch import Tensor

from .positional.base import relative_offsets

__all__ = ["HeadShift", "head_shift", "layer_shifts", "kernel_coverage"]


@dataclass(frozen=True)
class HeadShift:
    """The shift Δ a head attends to best, and the mean attention mass on it (over queries whose q + Δ exists)."""

    shift: tuple[int, ...]
    mass: float


def _mass_per_shift(probs: Tensor, grid: Sequence[int]) -> tuple[Tensor, Tensor]:
    """Mean attention on q + δ for every δ: ``(N_h, prod(2L - 1))`` and the matching δ ``(prod(2L - 1), d)``."""
    rel = relative_offsets(grid, probs.device)  # (N, N, d)
    spans = [2 * n - 1 for n in grid]
    index = torch.zeros(rel.shape[:2], dtype=torch.long, device=probs.device)
    for axis, n in enumerate(grid):
        index = index * spans[axis] + rel[..., axis] + n - 1
    index = index.reshape(-1)
    bins = int(torch.tensor(spans).prod())
    total = probs.new_zeros(probs.shape[0], bins).index_add_(1, index, probs.reshape(probs.shape[0], -1))
    count = probs.new_zeros(bins).index_add_(0, index, torch.ones_like(index, dtype=probs.dtype))
    axes = [torch.arange(-(n - 1), n, device=probs.device) for n in grid]
    shifts = torch.stack(torch.meshgrid(*axes, indexing="ij"), dim=-1).reshape(bins, len(grid))
    return total / count, shifts


def layer_shifts(probs: Tensor, grid: Sequence[int]) -> list[HeadShift]:
    """The best-matching shift and its mass for every head.

    Args:
        probs: attention probabilities ``(N_h, N, N)``, or ``(B, N_h, N, N)`` (averaged over the batch).
        grid: the spatial shape, ``(N,)`` or ``(H, W)``.
    """
    if probs.dim() == 4:
        probs = probs.mean(0)
    n = 1
    for side in grid:
        n *= side
    if probs.dim() != 3 or probs.shape[-2:] != (n, n):
        raise ValueError(f"probs must be (N_h, N, N) or (B, N_h, N, N) with N = {n} for grid {tuple(grid)}, "
                         f"got shape {tuple(probs.shape)}")
    mass, shifts = _mass_per_shift(probs.detach().to(torch.float64), grid)
    best = mass.argmax(dim=-1)
    return [HeadShift(tuple(int(v) for v in shifts[b]), float(mass[h, b])) for h, b in enumerate(best)]


def head_shift(probs: Tensor, grid: Sequence[int]) -> HeadShift:
    """The best-matching shift of one head's attention matrix ``(N, N)``."""
    if probs.dim() != 2:
        raise ValueError(f"probs must be one head's (N, N) matrix, got shape {tuple(probs.shape)}")
    return layer_shifts(probs[None], grid)[0]


def kernel_coverage(shifts: Sequence[HeadShift], kernel_size: int, min_mass: float = 0.5) -> dict[tuple[int, int], bool]:
    """Which shifts of a centred ``kernel_size`` x ``kernel_size`` grid some head attends to with at least ``min_mass``."""
    r = kernel_size // 2
    found = {s.shift for s in shifts if s.mass >= min_mass}
    return {(a, b): (a, b) in found for a in range(-r, r + 1) for b in range(-r, r + 1)}
