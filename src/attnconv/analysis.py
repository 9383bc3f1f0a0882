"""The converse of Theorem 1: how convolutional is an attention head?

A head behaves like one tap of a convolution when, for every query q, its attention sits on the key
q + Δ for one fixed shift Δ. For a head's attention matrix on an image grid, :func:`head_shift` finds the
shift that collects the most attention on average, and how much it collects (1.0 for a perfect
convolution tap). :func:`layer_shifts` does this for every head of a layer.

The same question for a trained BERT's relative terms (Chang et al. 2021), read as lightweight convolution kernels:

- :func:`fixed_kernels`: each head's relative bias b^(h)_δ, softmax-normalised over offsets δ = -k..k: the
  kernel β^(h) = softmax(b^(h)) the head applies when content is ignored.
- :func:`dynamic_kernels`: the query-dependent kernels of a real sentence, softmax over the offsets of
  (X_i W_qry)·a_δ / sqrt(D_h) (+ b_δ), taps outside the sentence excluded.
- :func:`kernel_record`: both, as JSON-able data that a training run saves in ``kernels.json``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import torch
from torch import Tensor, nn

from ._checks import positive_int
from .taps import masked_softmax, tap_mask
from .models.bert import composite_layers
from .positional.base import relative_offsets

__all__ = ["HeadShift", "attention_distance", "dynamic_kernels", "fixed_kernels", "head_shift", "kernel_coverage", "kernel_record",
           "layer_shifts"]


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


def _check_probs(probs: object) -> None:
    if not isinstance(probs, Tensor) or not probs.is_floating_point():
        raise TypeError(f"probs must be a floating-point torch.Tensor of attention probabilities, got "
                        f"{getattr(probs, 'dtype', type(probs).__name__)}")


def _head_matrices(probs: object, grid: Sequence[int]) -> Tensor:
    """``probs`` checked as ``(N_h, N, N)`` or ``(B, N_h, N, N)`` attention on ``grid``, averaged over the batch."""
    _check_probs(probs)
    if probs.dim() == 4:
        probs = probs.mean(0)
    n = 1
    for side in grid:
        n *= side
    if probs.dim() != 3 or probs.shape[-2:] != (n, n):
        raise ValueError(f"probs must be (N_h, N, N) or (B, N_h, N, N) with N = {n} for grid {tuple(grid)}, "
                         f"got shape {tuple(probs.shape)}")
    return probs


def layer_shifts(probs: Tensor, grid: Sequence[int]) -> list[HeadShift]:
    """The best-matching shift and its mass for every head.

    Args:
        probs: attention probabilities ``(N_h, N, N)``, or ``(B, N_h, N, N)`` (averaged over the batch).
        grid: the spatial shape, ``(N,)`` or ``(H, W)``.
    """
    probs = _head_matrices(probs, grid)
    mass, shifts = _mass_per_shift(probs.detach().to(torch.float64), grid)
    best = mass.argmax(dim=-1)
    return [HeadShift(tuple(int(v) for v in shifts[b]), float(mass[h, b])) for h, b in enumerate(best)]


def attention_distance(probs: Tensor, grid: Sequence[int]) -> Tensor:
    """Each head's mean attention distance, in tokens: Σ_k A_qk ‖k - q‖ averaged over the queries q.

    A head fixed on one shift Δ has distance ‖Δ‖ (where q + Δ exists); a head spread evenly over the whole grid
    has the mean distance between two of its tokens (4.14 on 8 x 8, 8.33 on 16 x 16). This is the
    "attention distance" of Dosovitskiy et al. (2021), in tokens.

    Args:
        probs: attention probabilities ``(N_h, N, N)``, or ``(B, N_h, N, N)`` (averaged over the batch).
        grid: the spatial shape, ``(N,)`` or ``(H, W)``.

    Returns:
        ``(N_h,)`` float64 distances.
    """
    probs = _head_matrices(probs, grid)
    rel = relative_offsets(grid, probs.device).to(torch.float64)  # (N, N, d): key minus query
    dist = rel.square().sum(-1).sqrt()  # (N, N)
    return (probs.detach().to(torch.float64) * dist).sum(-1).mean(-1).cpu()


def head_shift(probs: Tensor, grid: Sequence[int]) -> HeadShift:
    """The best-matching shift of one head's attention matrix ``(N, N)``."""
    _check_probs(probs)
    if probs.dim() != 2:
        raise ValueError(f"probs must be one head's (N, N) matrix, got shape {tuple(probs.shape)}")
    return layer_shifts(probs[None], grid)[0]


def kernel_coverage(shifts: Sequence[HeadShift], kernel_size: int, min_mass: float = 0.5) -> dict[tuple[int, int], bool]:
    """Which shifts of a centred ``kernel_size`` x ``kernel_size`` grid some head attends to with at least ``min_mass``."""
    positive_int("kernel_size", kernel_size)
    r = kernel_size // 2
    found = {s.shift for s in shifts if s.mass >= min_mass}
    return {(a, b): (a, b) in found for a in range(-r, r + 1) for b in range(-r, r + 1)}


@torch.no_grad()
def fixed_kernels(model: nn.Module) -> np.ndarray | None:
    """``(L, N_h, 2k+1)``: softmax over offsets of every layer's relative bias (``None`` without one)."""
    layers = [layer.fixed_term for layer in composite_layers(model) if layer.fixed_term is not None]
    if not layers:
        return None
    return torch.stack([torch.softmax(t.kernel_logits().float(), -1) for t in layers]).cpu().numpy()


@torch.no_grad()
def dynamic_kernels(model: nn.Module, input_ids: Tensor, token_type_ids: Tensor | None = None) -> np.ndarray | None:
    """``(L, N_h, N, 2k+1)``: the kernel each token of one sentence applies, in every layer with a query term.

    Args:
        model: a BERT (:class:`~attnconv.models.bert.BertForMaskedLM` or a classifier) with ``encoder``.
        input_ids: ``(1, N)`` token ids.

    Row i is softmax_δ[(X_i W_qry)·a_δ / sqrt(D_h) + b_δ] over the offsets δ whose token i + δ exists.
    """
    layers = [layer for layer in composite_layers(model) if layer.query_term is not None]
    if not layers:
        return None
    if input_ids.dim() != 2 or input_ids.shape[0] != 1:
        raise ValueError(f"input_ids must be one sentence (1, N), got shape {tuple(input_ids.shape)}")
    inputs: dict[int, Tensor] = {}
    hooks = [layer.register_forward_pre_hook(lambda m, args, i=i: inputs.__setitem__(i, args[0]))
             for i, layer in enumerate(layers)]
    was_training = model.training
    model.eval()
    try:
        model.encoder(input_ids, token_type_ids)
    finally:
        for h in hooks:
            h.remove()
        model.train(was_training)
    n = input_ids.shape[1]
    out = []
    for i, layer in enumerate(layers):
        q = layer.split_heads(layer.q_proj(inputs[i]))  # (1, N_h, N, D_h)
        band = layer.query_term.band(n, q)  # (1, N_h, N, 2k+1)
        if layer.fixed_term is not None:
            band = band + layer.fixed_term.band(n)
        dead = tap_mask(n, band.shape[-1], device=band.device)  # taps reading outside the sentence
        out.append(masked_softmax(band.masked_fill(dead, float("-inf")))[0])
    return torch.stack(out).float().cpu().numpy()


def kernel_record(model: nn.Module, tokenizer, sentence: str | None = None) -> dict[str, Any]:
    """The learned kernels as JSON-able data: ``offsets``, ``fixed`` ``(L, N_h, 2k+1)`` or ``None``, and for
    ``sentence`` (default: a built-in one) its ``tokens`` and ``dynamic`` ``(L, N_h, N, 2k+1)`` or ``None``."""
    from .data.text import BUILTIN_SENTENCE
    sentence = sentence or BUILTIN_SENTENCE
    enc = tokenizer.encode(sentence)
    device = next(model.parameters()).device
    ids = torch.tensor([enc.ids[:model.config.max_length]], device=device)
    fixed = fixed_kernels(model)
    dynamic = dynamic_kernels(model, ids)
    k = model.config.max_distance
    return {"variant": model.config.variant, "offsets": list(range(-k, k + 1)), "sentence": sentence,
            "tokens": enc.tokens[:ids.shape[1]], "fixed": None if fixed is None else np.round(fixed, 5).tolist(),
            "dynamic": None if dynamic is None else np.round(dynamic, 5).tolist()}
