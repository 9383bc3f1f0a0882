"""What a run leaves besides its metrics: Gaussian centres over training, and the trained heads' attention."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from ..analysis import attention_distance, layer_shifts
from ..models.vision import SelfAttentionNet, gaussian_parameters, gpsa_gates

__all__ = ["QUERY_PIXELS", "attention_summary", "center_snapshot"]

# Query pixels whose attention maps are kept, as fractions of the token grid: the centre, then a corner region.
QUERY_PIXELS = ((0.5, 0.5), (0.25, 0.25))


def center_snapshot(model: nn.Module, epoch: float, step: int) -> dict[str, Any] | None:
    """The centres Δ^(h) and precisions of every Gaussian layer, as JSON-able lists (``None`` for other models);
    for GPSA models also ``gates``, each head's σ(λ_h) ``(L, N_h)`` (:func:`~attnconv.models.vision.gpsa_gates`)."""
    layers = gaussian_parameters(model)
    if not layers:
        return None
    snapshot = {"epoch": epoch, "step": step,
                "centers": [layer["centers"].tolist() for layer in layers],  # (L, N_h, 2)
                "precision": [layer["precision"].tolist() for layer in layers]}  # (L, N_h, 2, 2)
    gates = gpsa_gates(model)
    if gates:
        snapshot["gates"] = [g.tolist() for g in gates]  # (L, N_h)
    return snapshot


@torch.no_grad()
def attention_summary(model: SelfAttentionNet, images: Tensor, batch_size: int = 25) -> dict[str, Any]:
    """The trained heads' attention, averaged over ``images``.

    Args:
        model: a trained :class:`~attnconv.models.vision.SelfAttentionNet` (run in eval mode here).
        images: normalised ``(B, H, W, C)`` test images, on the model's device.

    Returns:
        ``query_maps``: ``(L, N_h, Q, H', W')`` attention of the query pixels ``QUERY_PIXELS`` over the
        token grid; ``queries``: ``(Q, 2)`` their grid coordinates; ``heads``: per layer and head, the shift
        that collects the most attention and its mass (:func:`attnconv.analysis.layer_shifts`), and the mean
        attention distance in tokens (:func:`attnconv.analysis.attention_distance`).
    """
    was_training = model.training
    model.eval()
    grid = model.config.grid
    total: list[Tensor] | None = None
    for start in range(0, len(images), batch_size):
        probs = model.attention_probs(images[start:start + batch_size])  # L x (b, N_h, N, N)
        sums = [p.float().sum(0) for p in probs]
        total = sums if total is None else [t + s for t, s in zip(total, sums)]
    model.train(was_training)
    mean = [t.cpu() / len(images) for t in total]  # L x (N_h, N, N)
    queries = [(int(fr * grid[0]), int(fc * grid[1])) for fr, fc in QUERY_PIXELS]
    rows = [r * grid[1] + c for r, c in queries]
    maps = torch.stack([m[:, rows].reshape(m.shape[0], len(rows), *grid) for m in mean])  # (L, N_h, Q, H', W')
    heads = [[{"shift": list(s.shift), "mass": s.mass, "distance": float(d)}
              for s, d in zip(layer_shifts(m, grid), attention_distance(m, grid))] for m in mean]
    return {"query_maps": maps.numpy().astype(np.float32), "queries": np.array(queries), "heads": heads,
            "n_images": len(images)}
