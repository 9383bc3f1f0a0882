"""Diagrams of the sequence chapter (05): a relative bias becomes a banded attention matrix and a lightweight
convolution, and composite attention is a sum of logit terms. Each function takes the number of panels a row
(``ncols``), so that :func:`attnconv.figures.phone.phone_figure` can stack them on a phone.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.figure import Figure
from matplotlib.patches import FancyBboxPatch
from torch import Tensor

from .legibility import enlarge_small_text
from .sequence import TERM_TITLES

__all__ = ["plot_bias_to_convolution", "plot_composite_terms"]



def _grid(panels: int, ncols: int, width: float, height: float, heights: Sequence[float] | None = None):
    """``panels`` axes, ``ncols`` a row; ``heights``: relative panel heights when they are stacked one a row."""
    if not isinstance(ncols, int) or ncols < 1:
        raise ValueError(f"ncols must be a positive int, got {ncols!r}")
    cols = min(panels, ncols)
    rows = -(-panels // cols)
    ratios = list(heights) if heights is not None and cols == 1 else [1.0] * rows
    fig, axes = plt.subplots(rows, cols, figsize=(width * cols, height * sum(ratios)), squeeze=False,
                             layout="constrained", gridspec_kw={"height_ratios": ratios})
    axes = list(axes.ravel())
    for ax in axes[panels:]:
        ax.set_visible(False)
    return fig, axes[:panels]


def plot_bias_to_convolution(bias: Tensor | Sequence[float], length: int = 9, ncols: int = 3) -> Figure:
    """One head's relative bias b_δ, the banded (Toeplitz) attention matrix it gives, and the lightweight
    convolution that matrix is: output token i as a weighted sum of its neighbours, weights β = softmax(b).

    Args:
        bias: ``(2k+1,)`` the bias b_δ for δ = -k..k (-inf beyond k: a window).
        length: N, the tokens drawn.
        ncols: panels a row (3: side by side; 1: stacked, for a phone).
    """
    b = torch.as_tensor(bias, dtype=torch.float64).flatten()
    if b.numel() % 2 != 1:
        raise ValueError(f"bias must have an odd number 2k+1 of entries, got {b.numel()}")
    k = b.numel() // 2
    if not isinstance(length, int) or length < 2 * k + 2:
        raise ValueError(f"length must be an int of at least 2k+2 = {2 * k + 2}, got {length!r}")
    offsets = np.arange(-k, k + 1)
    i, j = np.meshgrid(np.arange(length), np.arange(length), indexing="ij")
    delta = j - i
    logits = np.where(np.abs(delta) <= k, b.numpy()[np.clip(delta + k, 0, 2 * k)], -np.inf)
    attn = np.exp(logits - logits.max(1, keepdims=True))
    attn /= attn.sum(1, keepdims=True)
    beta = torch.softmax(b, 0).numpy()

    fig, (left, middle, right) = _grid(3, ncols, 3.6, 3.4, heights=(0.8, 1.0, 0.55))
    left.bar(offsets, b.numpy(), color="tab:orange")
    left.axhline(0, color="0.3", lw=0.8)
    left.set_xticks(offsets)
    left.set_xlabel(r"offset $\delta = j - i$")
    left.set_ylabel(r"bias $b_\delta$")
    left.set_title("1. a bias per offset", fontsize=12)

    middle.imshow(attn, cmap="viridis", vmin=0, interpolation="nearest")
    middle.set_xlabel("key $j$")
    middle.set_ylabel("query $i$")
    middle.set_xticks(range(0, length, 2))
    middle.set_yticks(range(0, length, 2))
    middle.set_title(r"2. attention $A_{ij}$: a band", fontsize=12)
    row = length // 2
    middle.add_patch(FancyBboxPatch((row - k - 0.5, row - 0.5), 2 * k + 1, 1, boxstyle="square,pad=0",
                                    fill=False, ec="tab:red", lw=1.5))

    right.set_xlim(-0.8, length - 0.2)
    right.set_ylim(-1.0, 2.0)
    if ncols >= 3:
        right.set_aspect("equal")  # side by side: square token boxes; stacked, the panel is short and wide
    right.axis("off")
    for t in range(length):
        right.add_patch(FancyBboxPatch((t - 0.3, -0.3), 0.6, 0.6, boxstyle="round,pad=0.02", fc="0.92", ec="0.4"))
        right.text(t, 0, f"$x_{{{t}}}$", ha="center", va="center", fontsize=10)
    right.add_patch(FancyBboxPatch((row - 0.3, 1.2), 0.6, 0.6, boxstyle="round,pad=0.02", fc="tab:blue",
                                   ec="tab:blue", alpha=0.25))
    right.text(row, 1.5, f"$y_{{{row}}}$", ha="center", va="center", fontsize=10)
    for d, weight in zip(offsets, beta):
        right.plot([row + d, row], [0.32, 1.18], color="tab:red", lw=0.5 + 6 * weight, alpha=0.8,
                   solid_capstyle="round")
    right.set_title(r"3. convolution: $y_i = \sum_\delta \beta_\delta\, x_{i+\delta}$", fontsize=12)
    right.text(row, -0.5, r"line width: $\beta_\delta$, row $i$ of the band", ha="center", va="top", fontsize=10)
    enlarge_small_text(fig)
    return fig


def plot_composite_terms(terms: Mapping[str, Tensor], probs: Tensor, ncols: int = 5) -> Figure:
    """Composite attention as a sum of logit terms: each term's ``(N, N)`` logits of one head, and the attention
    softmax of their sum.

    Args:
        terms: term name (``"content"`` or a term's class name) -> ``(N, N)`` logits (rows: queries, columns: keys).
        probs: ``(N, N)`` the head's attention probabilities.
        ncols: panels a row.
    """
    names = list(terms)
    if not names:
        raise ValueError("terms must hold at least one logit term")
    fig, axes = _grid(len(names) + 1, ncols, 2.9, 3.2)
    n = probs.shape[-1]
    for ax, name in zip(axes, names):
        values = terms[name].detach().to(torch.float64).cpu().numpy()
        finite = values[np.isfinite(values)]
        scale = float(np.abs(finite).max()) if finite.size else 1.0
        ax.imshow(np.where(np.isfinite(values), values, np.nan), cmap="RdBu_r", vmin=-scale, vmax=scale,
                  interpolation="nearest")
        ax.set_title(TERM_TITLES.get(name, name), fontsize=10)
    axes[-1].imshow(probs.detach().to(torch.float64).cpu().numpy(), cmap="viridis", vmin=0,
                    interpolation="nearest")
    axes[-1].set_title(r"$A = \mathrm{softmax}_j$(sum)", fontsize=10)
    for ax in axes:
        ax.set_xticks([0, n - 1])
        ax.set_yticks([0, n - 1])
        ax.set_xlabel("key $j$", fontsize=10)
        ax.set_ylabel("query $i$", fontsize=10)
    enlarge_small_text(fig)
    return fig
