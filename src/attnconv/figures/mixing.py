"""Chapter 08's figures on token mixing: the mixing matrices of window attention, a depth-wise convolution and a
dynamic depth-wise convolution (Han et al. 2022), and one head's attention before and after mimetic initialisation
(Trockman & Kolter 2023). Each takes the numbers it draws; none computes them."""

from __future__ import annotations

from typing import Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

__all__ = ["plot_mimetic_attention", "plot_mixing_matrices"]

FONT = 11


def plot_mixing_matrices(matrices: Sequence[Sequence[np.ndarray]], row_titles: Sequence[str],
                         col_titles: Sequence[str], compact: bool = False) -> Figure:
    """A grid of token-mixing matrices (rows are outputs i, columns inputs j): one row of panels per layer
    (``row_titles``), one column per case (``col_titles``), one colour scale and colour bar per row, white at 0.
    ``compact`` lays the same grid out for a phone: narrower, with the titles shortened by the caller."""
    rows, cols = len(matrices), len(col_titles)
    if rows != len(row_titles) or any(len(r) != cols for r in matrices):
        raise ValueError(f"matrices must be {len(row_titles)} rows of {cols} matrices (row_titles x col_titles)")
    width = 4.4 if compact else 7.6
    fig, axes = plt.subplots(rows, cols, figsize=(width, width / cols * rows * 0.9), dpi=100, squeeze=False,
                             layout="constrained")
    for r, (row, name) in enumerate(zip(matrices, row_titles)):
        top = max(float(np.abs(m).max()) for m in row)
        for c, m in enumerate(row):
            ax = axes[r, c]
            image = ax.imshow(m, cmap="RdBu_r", vmin=-top, vmax=top)
            ax.set_xticks([])
            ax.set_yticks([])
            if r == 0:
                ax.set_title(col_titles[c], fontsize=FONT)
            if c == 0:
                ax.set_ylabel(name, fontsize=FONT)
        bar = fig.colorbar(image, ax=list(axes[r]), fraction=0.04, pad=0.02)
        tick = float(f"{top:.1g}") if float(f"{top:.1g}") <= top else float(f"{top:.2g}")
        bar.set_ticks([-tick, 0.0, tick])
        bar.ax.tick_params(labelsize=FONT - 1)
    return fig


def plot_mimetic_attention(image: np.ndarray, grid: tuple[int, int], query: tuple[int, int],
                           before: np.ndarray, after: np.ndarray, product: np.ndarray, ncols: int = 2) -> Figure:
    """Four panels: the ``image`` with the ``query`` token of the token ``grid`` outlined; one head's attention of
    that query over the grid with the default initialisation (``before``) and after mimetic initialisation
    (``after``), on one colour scale; and that head's W_q W_k^T after it (``product``, C x C)."""
    if ncols not in (1, 2, 4):
        raise ValueError(f"ncols must be 1, 2 or 4 panels a row, got {ncols}")
    rows = 4 // ncols
    fig, axes = plt.subplots(rows, ncols, figsize=(3.3 * ncols, 3.1 * rows), dpi=100, squeeze=False)
    flat = list(axes.flat)
    h, w = image.shape[:2]
    block = h // grid[0]
    ax = flat[0]
    ax.imshow(image)
    ax.add_patch(Rectangle((query[1] * block - 0.5, query[0] * block - 0.5), block, block, fill=False, ec="#d95f02",
                           lw=2.5))
    ax.set_title("the query token", fontsize=FONT)
    top = max(float(before.max()), float(after.max()))
    for ax, m, title in ((flat[1], before, "default initialisation"), (flat[2], after, "mimetic initialisation")):
        shown = ax.imshow(m.reshape(grid), cmap="viridis", vmin=0, vmax=top)
        ax.add_patch(Rectangle((query[1] - 0.5, query[0] - 0.5), 1, 1, fill=False, ec="#d95f02", lw=2))
        ax.set_title(title, fontsize=FONT)
        fig.colorbar(shown, ax=ax, fraction=0.046, pad=0.04).ax.tick_params(labelsize=FONT - 1)
    ax = flat[3]
    limit = float(np.abs(product).max())
    shown = ax.imshow(product, cmap="RdBu_r", vmin=-limit, vmax=limit)
    ax.set_title(r"$W_q W_k^\top$ (mimetic)", fontsize=FONT)
    ax.set_xlabel("channel", fontsize=FONT)
    ax.set_ylabel("channel", fontsize=FONT)
    fig.colorbar(shown, ax=ax, fraction=0.046, pad=0.04).ax.tick_params(labelsize=FONT - 1)
    for ax in flat:
        ax.set_xticks([])
        ax.set_yticks([])
    fig.tight_layout()
    return fig
