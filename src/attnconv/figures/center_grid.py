"""The paper's Fig. 4 at two moments of training: per layer, the cells around the query token and where each
Gaussian head looks, at the first and the last snapshot of ``centers.jsonl``.

A head h of a quadratic (or Gaussian) layer puts its attention around its centre Δ^(h), with logits
-(δ - Δ^(h))ᵀ P^(h) (δ - Δ^(h)) over the offsets δ = key − query (P^(h) = α^(h) I for the quadratic encoding).
Each panel draws the grid of cells around the query (black square), every head's centre as a dot in the head's
colour, and the circle (ellipse) holding half of its attention, of radius sqrt(ln 2 / α^(h)): a sharp head is a
small circle, a wide one a large circle. In a later snapshot a thin line joins the head's first centre (open
circle) to where it is now. Offsets are drawn as in :mod:`attnconv.figures.vision_runs`: column Δ₂ across,
row Δ₁ down.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from .legibility import PHONE_COLUMN_PX, enlarge_small_text
from .vision_runs import MASS_LEVELS, gaussian_contour

__all__ = ["grid_half_width", "plot_center_grid"]


def grid_half_width(snapshots: Sequence[dict[str, Any]], min_cells: int = 9) -> int:
    """The half-width m, in cells, of the smallest (2m + 1) x (2m + 1) window around the query that is at least
    ``min_cells`` wide and holds every centre of every snapshot (each ``centers`` of shape ``(L, N_h, 2)``)."""
    reach = max(float(np.abs(np.asarray(s["centers"], dtype=float)).max()) for s in snapshots)
    return max(min_cells // 2, math.ceil(reach - 0.5))


def _check(snapshots: Sequence[dict[str, Any]]) -> tuple[np.ndarray, np.ndarray]:
    if not snapshots:
        raise ValueError("snapshots must hold at least one record of centers.jsonl")
    try:
        centers = np.array([s["centers"] for s in snapshots], dtype=float)  # (T, L, N_h, 2)
        precision = np.array([s["precision"] for s in snapshots], dtype=float)  # (T, L, N_h, 2, 2)
    except (KeyError, TypeError, ValueError) as err:
        raise ValueError("snapshots must be records of centers.jsonl, each with 'centers' (L, N_h, 2) and "
                         f"'precision' (L, N_h, 2, 2) of the same shapes ({err})") from None
    if centers.ndim != 4 or centers.shape[-1] != 2 or precision.shape != centers.shape + (2,):
        raise ValueError(f"snapshots must hold 'centers' (L, N_h, 2) and 'precision' (L, N_h, 2, 2), got "
                         f"{centers.shape[1:]} and {precision.shape[1:]}")
    return centers, precision


def plot_center_grid(snapshots: Sequence[dict[str, Any]], layout: str = "row", min_cells: int = 9,
                     labels: Sequence[str] | None = None) -> Figure:
    """Every layer's heads on the grid of cells around the query, at each snapshot.

    Args:
        snapshots: ``T`` records of ``centers.jsonl`` (e.g. its first and last), each ``{"epoch": e, "centers":
            (L, N_h, 2), "precision": (L, N_h, 2, 2)}``.
        layout: ``"row"``: one row per snapshot, the layers side by side (a desktop); ``"column"``: one row per
            layer, the snapshots side by side (a phone).
        min_cells: the window is at least this many cells wide (9: the paper's 9 x 9), and wider if a centre lies
            outside it (:func:`grid_half_width`).
        labels: a title per snapshot (default ``"epoch e"``).

    The centre dot of head h of layer l in snapshot t carries the ``gid`` ``"centre t l h"`` and its circle
    ``"circle t l h"``, so that a check can read the drawn positions and radii back.

    Raises:
        ValueError: malformed snapshots, an unknown ``layout``, or ``labels`` of the wrong length.
    """
    centers, precision = _check(snapshots)
    if layout not in ("row", "column"):
        raise ValueError(f"layout must be 'row' or 'column', got {layout!r}")
    times, layers, heads = centers.shape[:3]
    labels = [f"epoch {s['epoch']:g}" for s in snapshots] if labels is None else list(labels)
    if len(labels) != times:
        raise ValueError(f"labels must give one title per snapshot ({times}), got {len(labels)}")
    half = grid_half_width(snapshots, min_cells)
    edge = half + 0.5
    rows, cols = (times, layers) if layout == "row" else (layers, times)
    size = 2.7 if layout == "row" else 2.6
    fig, axes = plt.subplots(rows, cols, figsize=(size * cols, size * rows + 0.5), squeeze=False)
    colors = plt.get_cmap("tab10")(np.arange(heads) % 10)
    for t in range(times):
        for layer in range(layers):
            ax = axes[t, layer] if layout == "row" else axes[layer, t]
            for v in np.arange(-edge, edge + 1e-9):  # the cell boundaries
                ax.axhline(v, color="0.85", lw=0.5, zorder=0)
                ax.axvline(v, color="0.85", lw=0.5, zorder=0)
            ax.add_patch(Rectangle((-0.5, -0.5), 1, 1, color="black", zorder=1))  # the query's own cell
            for h in range(heads):
                c = centers[t, layer, h]
                circle = gaussian_contour(c, precision[t, layer, h], MASS_LEVELS[0])
                circle.set(edgecolor=colors[h], linewidth=1.1, gid=f"circle {t} {layer} {h}", clip_on=True)
                ax.add_patch(circle)
                if t > 0:
                    start = centers[0, layer, h]
                    ax.plot([start[1], c[1]], [start[0], c[0]], "-", color=colors[h], lw=0.8, alpha=0.6)
                    ax.plot(start[1], start[0], "o", mfc="none", mec=colors[h], ms=4, mew=0.7, alpha=0.7)
                ax.plot(c[1], c[0], "o", color=colors[h], ms=5, mec="black", mew=0.4, gid=f"centre {t} {layer} {h}",
                        zorder=3)
            ax.set_xlim(-edge, edge)
            ax.set_ylim(edge, -edge)  # rows grow downwards, as in an image
            ax.set_aspect("equal")
            step = max(2, half // 2)
            ticks = range(-step * (half // step), half + 1, step)
            ax.set_xticks(list(ticks))
            ax.set_yticks(list(ticks))
            ax.tick_params(length=2)
            ax.set_title(f"layer {layer + 1}, {labels[t]}", fontsize=10)
    for ax in axes[-1]:
        ax.set_xlabel("column offset Δ₂")
    for ax in axes[:, 0]:
        ax.set_ylabel("row offset Δ₁")
    gap = "; " if layout == "row" else "\n"
    fig.suptitle(f"{heads} heads a layer on the {2 * half + 1}×{2 * half + 1} cells around the query{gap}"
                 "circles hold 50% of each head's attention", fontsize=10)
    enlarge_small_text(fig, column_px=PHONE_COLUMN_PX if layout == "column" else 768)
    fig.tight_layout()
    return fig
