"""How far a layer looks: the reach of Gaussian attention heads, and the receptive field of a CNN.

The paper's Fig. 3 reads a trained quadratic model layer by layer: where each head's centre Δ^(h) sits and how
sharp its attention is (α^(h)). This module turns those parameters into numbers that compare across layers,
runs and architectures:

- :func:`gaussian_probs`: the attention of every head over a token grid, from its centre and precision. A head
  with centre Δ and precision P (α I for the quadratic encoding) gives query q the distribution
  p(j | q) ∝ exp(-(j - q - Δ)ᵀ P (j - q - Δ)) over the keys j of the grid, exactly as the model does.
- :func:`mean_distance`: the mean attention distance, Σ_j p(j | q) ‖j - q‖ averaged over every query q, in
  pixels (a token is ``block`` pixels wide). A head far from its query, or a wide one, reads far away.
- :func:`layer_reach`: per layer, the heads' centres, α, mean distances and the share of heads with α > 1, for
  one ``centers.jsonl`` snapshot; :func:`run_reach` for the first and last snapshot of a run.
- :func:`query_map_distance`: the same distance from stored attention maps (``attention.npz``), for models
  whose attention is not a Gaussian (the learned encoding); it averages over the stored query pixels only.
- :func:`folder_reach`: whichever of these fits a vision run folder (finished or not).
- :func:`receptive_fields`: the theoretical receptive field of each stage of a
  :class:`~attnconv.models.resnet.ResNet`, in pixels (the side of the square of input pixels that can reach one
  output), from its own convolutions.

The two measures differ in kind: a receptive field is the most a unit *can* see, a mean distance is where a head
*does* look on average. A convolution's mean distance is small even when its receptive field is large.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import torch
from torch import Tensor, nn

from .positional.base import relative_offsets

__all__ = ["folder_reach", "gaussian_probs", "layer_reach", "mean_distance", "query_map_distance", "receptive_fields",
           "run_reach"]


def gaussian_probs(centers: Tensor, precision: Tensor, grid: Sequence[int]) -> Tensor:
    """Attention probabilities of Gaussian heads over a token grid.

    Args:
        centers: Δ^(h), ``(N_h, 2)`` in token cells.
        precision: P^(h), ``(N_h, 2, 2)`` (α^(h) I for the quadratic encoding).
        grid: ``(H, W)`` of the token grid.

    Returns:
        ``(N_h, N, N)`` float64, row q the distribution over keys k of query q (``N = H W``).
    """
    centers, precision = torch.as_tensor(centers, dtype=torch.float64), torch.as_tensor(precision, dtype=torch.float64)
    if centers.dim() != 2 or centers.shape[1] != 2 or precision.shape != (centers.shape[0], 2, 2):
        raise ValueError(f"centers must be (N_h, 2) and precision (N_h, 2, 2), got {tuple(centers.shape)} and "
                         f"{tuple(precision.shape)}")
    delta = relative_offsets(tuple(grid)).to(torch.float64)  # (N, N, 2): j - q
    diff = delta[None] - centers[:, None, None, :]  # (N_h, N, N, 2)
    logits = -torch.einsum("hqki,hij,hqkj->hqk", diff, precision, diff)
    return torch.softmax(logits, dim=-1)


def mean_distance(probs: Tensor, grid: Sequence[int], block: int = 1) -> Tensor:
    """Mean attention distance of each head, ``(N_h,)``: Σ_j p(j | q) ‖j - q‖, averaged over all queries q, times
    ``block`` (pixels per token side). ``probs`` is ``(N_h, N, N)`` (or ``(B, N_h, N, N)``, averaged over B)."""
    probs = torch.as_tensor(probs, dtype=torch.float64)
    if probs.dim() == 4:
        probs = probs.mean(0)
    n = math.prod(grid)
    if probs.dim() != 3 or probs.shape[-2:] != (n, n):
        raise ValueError(f"probs must be (N_h, N, N) with N = {n} for grid {tuple(grid)}, got {tuple(probs.shape)}")
    dist = relative_offsets(tuple(grid)).to(torch.float64).norm(dim=-1)  # (N, N)
    return block * (probs * dist).sum(-1).mean(-1)


def layer_reach(snapshot: Mapping[str, Any], grid: Sequence[int], block: int) -> list[dict[str, Any]]:
    """Per layer of one ``centers.jsonl`` snapshot: ``centers`` (N_h, 2) in cells, ``alpha`` (N_h,) (the mean
    eigenvalue of the precision: α for the quadratic encoding), ``distance`` (N_h,) in pixels, their means, and
    ``share_alpha_above_1``."""
    out = []
    for centers, precision in zip(snapshot["centers"], snapshot["precision"]):
        c, p = np.asarray(centers, dtype=float), np.asarray(precision, dtype=float)
        alpha = np.trace(p, axis1=1, axis2=2) / 2
        dist = mean_distance(gaussian_probs(torch.from_numpy(c), torch.from_numpy(p), grid), grid, block).numpy()
        out.append({"centers": c, "alpha": alpha, "distance": dist, "mean_distance": float(dist.mean()),
                    "share_alpha_above_1": float((alpha > 1).mean())})
    return out


def run_reach(snapshots: Sequence[Mapping[str, Any]], grid: Sequence[int], block: int) -> dict[str, Any]:
    """:func:`layer_reach` of a run's first snapshot (``"init"``) and last one (``"trained"``), with their epochs
    and steps. ``snapshots`` is a run's ``centers.jsonl`` (a finished or a partial run)."""
    if not snapshots:
        raise ValueError("snapshots is empty: the run recorded no Gaussian centres (not a Gaussian model?)")
    first, last = snapshots[0], snapshots[-1]
    return {"init": layer_reach(first, grid, block), "trained": layer_reach(last, grid, block),
            "epoch": last["epoch"], "step": last["step"], "init_step": first["step"]}


def query_map_distance(query_maps: np.ndarray, queries: np.ndarray, block: int = 1) -> np.ndarray:
    """Mean attention distance per layer and head from stored attention maps, ``(L, N_h)`` in pixels.

    Args:
        query_maps: ``(L, N_h, Q, H, W)``: the attention of Q query pixels over the grid (``attention.npz``).
        queries: ``(Q, 2)`` grid coordinates of those pixels.
        block: pixels per token side.
    """
    maps, queries = np.asarray(query_maps, dtype=float), np.asarray(queries)
    if maps.ndim != 5 or queries.shape != (maps.shape[2], 2):
        raise ValueError(f"query_maps must be (L, N_h, Q, H, W) and queries (Q, 2), got {maps.shape} and "
                         f"{queries.shape}")
    rows, cols = np.indices(maps.shape[-2:])
    dist = np.stack([np.hypot(rows - r, cols - c) for r, c in queries])  # (Q, H, W)
    return block * (maps * dist).sum((-2, -1)).mean(-1)


def receptive_fields(model: nn.Module) -> list[dict[str, int]]:
    """Theoretical receptive field of each stage of a ResNet (:class:`~attnconv.models.resnet.ResNet`).

    Follows the longest path, the main branch of every block: a k x k convolution with stride s after a total
    stride j grows the field by (k - 1) j and multiplies j by s (the 1x1 shortcuts never widen it).

    Returns:
        A list with one dict per stage, holding ``stage`` (1-based), ``rf`` (pixels on a side), ``jump`` (input
        pixels between two neighbouring outputs) and ``blocks``.
    """
    if not (hasattr(model, "stem") and hasattr(model, "stages") and hasattr(model, "config")):
        raise TypeError(f"model must be an attnconv ResNet (stem, stages, config), got {type(model).__name__}")
    rf, jump = 1, 1

    def grow(conv: nn.Conv2d) -> None:
        nonlocal rf, jump
        k, s, d = conv.kernel_size[0], conv.stride[0], conv.dilation[0]
        rf += (k - 1) * d * jump
        jump *= s

    for module in model.stem:
        if isinstance(module, nn.Conv2d):
            grow(module)
    out, blocks = [], iter(model.stages)
    for stage, n in enumerate(model.config.blocks, start=1):
        for _ in range(n):
            block = next(blocks)
            grow(block.conv1)
            grow(block.conv2)
        out.append({"stage": stage, "rf": rf, "jump": jump, "blocks": n})
    return out


def folder_reach(folder: str | os.PathLike, grid: Sequence[int] | None = None, block: int | None = None
                 ) -> dict[str, Any]:
    """How far the model of a vision run folder looks, from whatever the folder holds.

    - a Gaussian model (``centers.jsonl``): ``{"kind": "gaussian", **run_reach(...)}``, start and end;
    - another attention model (``attention.npz`` only): ``{"kind": "maps", "distance": (L, N_h)}`` at the end,
      from the stored query pixels (:func:`query_map_distance`);
    - a ResNet: ``{"kind": "cnn", "fields": receptive_fields(...)}``, built from the recorded config.

    ``grid`` and ``block`` are read from ``provenance.json``; an unfinished run has none, so pass them.

    Raises:
        ValueError: the folder holds none of these, or ``grid``/``block`` are needed and missing.
    """
    from .models import ResNetConfig, build_model
    from .train.runs import ATTENTION_FILE, CENTERS_FILE, PROVENANCE_FILE, read_jsonl

    folder = Path(folder)
    prov = json.loads((folder / PROVENANCE_FILE).read_text()) if (folder / PROVENANCE_FILE).is_file() else None
    if prov is not None and prov["config"]["model"] == "resnet18":
        resnet = ResNetConfig(**prov["config"]["resnet"])
        return {"kind": "cnn", "fields": receptive_fields(build_model("resnet18", resnet))}
    if prov is not None:
        sa = prov["config"]["sa"]
        grid, block = (sa["image_size"] // sa["block"],) * 2, sa["block"]
    centers = read_jsonl(folder / CENTERS_FILE)
    if (centers or (folder / ATTENTION_FILE).is_file()) and (grid is None or block is None):
        raise ValueError(f"{folder} has no provenance.json: pass grid and block (from the run's config)")
    if centers:
        return {"kind": "gaussian", **run_reach(centers, grid, block)}
    if (folder / ATTENTION_FILE).is_file():
        with np.load(folder / ATTENTION_FILE) as npz:
            return {"kind": "maps", "distance": query_map_distance(npz["query_maps"], npz["queries"], block)}
    raise ValueError(f"{folder} holds no centres, attention maps or ResNet config to measure")
