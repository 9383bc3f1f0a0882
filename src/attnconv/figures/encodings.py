"""The encoding families of chapter 04 side by side: one head of each, the attention of one query pixel, with the
form of its positional logit as the panel's title."""

from __future__ import annotations

from typing import Mapping, Sequence

import matplotlib.pyplot as plt
import torch
from matplotlib.figure import Figure
from torch import Tensor

from .legibility import enlarge_small_text

__all__ = ["plot_encoding_families"]


def plot_encoding_families(probs: Mapping[str, Tensor], grid: Sequence[int], query: Sequence[int],
                           ncols: int = 4) -> Figure:
    """One panel per encoding family: the attention of the query pixel over the grid, each on its own scale.

    Args:
        probs: panel title (the family and its logit, matplotlib maths allowed) -> ``(N, N)`` attention
            probabilities of one head, ``N = H * W``.
        grid: ``(H, W)``.
        query: the query pixel ``(row, col)``, marked in every panel.
        ncols: panels a row (4 side by side; 2 for a phone).
    """
    if not probs:
        raise ValueError("probs must hold at least one family")
    if not isinstance(ncols, int) or ncols < 1:
        raise ValueError(f"ncols must be a positive int, got {ncols!r}")
    h, w = grid
    q = query[0] * w + query[1]
    cols = min(ncols, len(probs))
    rows = -(-len(probs) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(3.0 * cols, 3.2 * rows), squeeze=False, layout="constrained")
    axes = list(axes.ravel())
    for ax in axes[len(probs):]:
        ax.set_visible(False)
    for ax, (title, p) in zip(axes, probs.items()):
        p = p.detach().to(torch.float64).cpu()
        if p.shape != (h * w, h * w):
            raise ValueError(f"probs[{title!r}] must be ({h * w}, {h * w}) for a {h}x{w} grid, got {tuple(p.shape)}")
        ax.imshow(p[q].reshape(h, w).numpy(), cmap="viridis", vmin=0, interpolation="nearest")
        ax.plot(query[1], query[0], marker="s", mfc="none", mec="red", ms=8)
        ax.set_title(title, fontsize=11)
        ax.set_xticks([])
        ax.set_yticks([])
        ax.set_xlabel("key column", fontsize=10)
        ax.set_ylabel("key row", fontsize=10)
    enlarge_small_text(fig)
    return fig
