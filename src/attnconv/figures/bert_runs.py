"""Figures of the BERT chapter (07): the relative terms of a trained BERT read as convolution kernels, and the
pre-training curves. The kernels themselves come from :mod:`attnconv.analysis`
(:func:`~attnconv.analysis.fixed_kernels`, :func:`~attnconv.analysis.dynamic_kernels`, or the ``kernels.json`` a
run saves).
"""

from __future__ import annotations

from typing import Any, Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

__all__ = ["plot_fixed_kernels", "plot_pretraining_curves", "plot_sentence_kernels"]


def plot_fixed_kernels(kernels: np.ndarray, offsets: Sequence[int], title: str = "") -> Figure:
    """One panel per layer: each head's softmax-normalised relative bias as a kernel over offsets (heads as rows).

    Args:
        kernels: ``(L, N_h, 2k+1)``.
    """
    kernels = np.asarray(kernels)
    layers = kernels.shape[0]
    fig, axes = plt.subplots(1, layers, figsize=(3.2 * layers, 2.2), squeeze=False, sharey=True)
    for layer, ax in enumerate(axes[0]):
        im = ax.imshow(kernels[layer], aspect="auto", cmap="viridis", vmin=0,
                       extent=(offsets[0] - 0.5, offsets[-1] + 0.5, kernels.shape[1] - 0.5, -0.5))
        ax.set_title(f"layer {layer + 1}", fontsize=12)
        ax.set_xlabel("offset δ = key − query", fontsize=11)
        ax.set_yticks(range(kernels.shape[1]), [str(h + 1) for h in range(kernels.shape[1])])
        ax.tick_params(labelsize=10)
    axes[0, 0].set_ylabel("head", fontsize=11)
    fig.colorbar(im, ax=axes[0].tolist(), fraction=0.02, label="kernel weight")
    if title:
        fig.suptitle(title, fontsize=12, y=1.06)
    return fig


def plot_sentence_kernels(kernels: np.ndarray, tokens: Sequence[str], offsets: Sequence[int], layer: int,
                         head: int, title: str = "") -> Figure:
    """The kernel each token applies in one layer and head: tokens as rows, offsets as columns.

    Args:
        kernels: ``(L, N_h, N, 2k+1)`` from :func:`~attnconv.analysis.dynamic_kernels`.
    """
    kernels = np.asarray(kernels)
    rows = kernels[layer, head]
    fig, ax = plt.subplots(figsize=(7, 0.26 * len(tokens) + 1.2), layout="constrained")
    im = ax.imshow(rows, aspect="auto", cmap="viridis", vmin=0,
                   extent=(offsets[0] - 0.5, offsets[-1] + 0.5, len(tokens) - 0.5, -0.5))
    ax.set_yticks(range(len(tokens)))
    ax.set_yticklabels(tokens, fontsize=9)
    ax.set_xlabel("offset δ = key − query", fontsize=10)
    ax.set_ylabel("query token", fontsize=10)
    fig.colorbar(im, ax=ax, shrink=0.8, label="kernel weight")
    ax.set_title(title or f"query-dependent kernels, layer {layer + 1}, head {head + 1}", fontsize=11)
    return fig


def plot_pretraining_curves(histories: dict[str, list[dict[str, Any]]], metric: str = "val_loss") -> Figure:
    """``metric`` against step, one line per run (``histories``: label -> ``metrics.jsonl`` records)."""
    fig, ax = plt.subplots(figsize=(5.5, 3.2))
    for label, records in histories.items():
        ax.plot([r["step"] for r in records], [r[metric] for r in records], marker="o", ms=3, label=label)
    ax.set_xlabel("step")
    ax.set_ylabel(metric.replace("_", " "))
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    return fig
