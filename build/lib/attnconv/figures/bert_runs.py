"""Figures of the BERT chapter (07): the relative terms of a trained BERT read as convolution kernels, and the
pre-training curves, and fine-tuned accuracy against the pretraining budget. The kernels themselves come from :mod:`attnconv.analysis`
(:func:`~attnconv.analysis.fixed_kernels`, :func:`~attnconv.analysis.dynamic_kernels`, or the ``kernels.json`` a
run saves).
"""

from __future__ import annotations

from typing import Any, Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from .legibility import PHONE_COLUMN_PX, enlarge_small_text

__all__ = ["plot_fixed_kernels", "plot_learning_curve", "plot_pretraining_curves", "plot_sentence_kernels"]


def plot_fixed_kernels(kernels: np.ndarray, offsets: Sequence[int], title: str = "") -> Figure:
    """One panel per layer, two a row: each head's softmax-normalised relative bias as a kernel over offsets
    (heads as rows).

    Args:
        kernels: ``(L, N_h, 2k+1)``.
    """
    kernels = np.asarray(kernels)
    layers = kernels.shape[0]
    cols = min(2, layers)
    rows = -(-layers // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(2.6 * cols + 0.9, 1.9 * rows + 0.6), squeeze=False, sharey=True,
                             layout="constrained")
    for ax in axes.flat[layers:]:
        ax.remove()
    for layer, ax in enumerate(axes.flat[:layers]):
        im = ax.imshow(kernels[layer], aspect="auto", cmap="viridis", vmin=0,
                       extent=(offsets[0] - 0.5, offsets[-1] + 0.5, kernels.shape[1] - 0.5, -0.5))
        ax.set_title(f"layer {layer + 1}", fontsize=10)
        if layer >= layers - cols:
            ax.set_xlabel("offset δ = key − query", fontsize=10)
        ax.set_yticks(range(kernels.shape[1]), [str(h + 1) for h in range(kernels.shape[1])])
        ax.tick_params(labelsize=10)
    for ax in axes[:, 0]:
        ax.set_ylabel("head", fontsize=10)
    fig.colorbar(im, ax=axes.ravel().tolist(), fraction=0.04, label="kernel weight")
    if title:
        fig.suptitle(title, fontsize=10)
    enlarge_small_text(fig, column_px=PHONE_COLUMN_PX)  # legible on a phone, where it is shown whole
    return fig


def plot_sentence_kernels(kernels: np.ndarray, tokens: Sequence[str], offsets: Sequence[int], layer: int,
                         head: int, title: str = "") -> Figure:
    """The kernel each token applies in one layer and head: tokens as rows, offsets as columns.

    Args:
        kernels: ``(L, N_h, N, 2k+1)`` from :func:`~attnconv.analysis.dynamic_kernels`.
    """
    kernels = np.asarray(kernels)
    rows = kernels[layer, head]
    fig, ax = plt.subplots(figsize=(4.8, 0.3 * len(tokens) + 1.2), layout="constrained")
    im = ax.imshow(rows, aspect="auto", cmap="viridis", vmin=0,
                   extent=(offsets[0] - 0.5, offsets[-1] + 0.5, len(tokens) - 0.5, -0.5))
    ax.set_yticks(range(len(tokens)))
    ax.set_yticklabels(tokens, fontsize=9)
    ax.set_xlabel("offset δ = key − query", fontsize=10)
    ax.set_ylabel("query token", fontsize=10)
    fig.colorbar(im, ax=ax, shrink=0.8, label="kernel weight")
    ax.set_title(title or f"query-dependent kernels, layer {layer + 1}, head {head + 1}", fontsize=10)
    enlarge_small_text(fig, column_px=PHONE_COLUMN_PX)  # legible on a phone, where it is shown whole
    return fig


def plot_pretraining_curves(histories: dict[str, list[dict[str, Any]]], metric: str = "val_loss") -> Figure:
    """``metric`` against step, one line per run (``histories``: label -> ``metrics.jsonl`` records)."""
    fig, ax = plt.subplots(figsize=(4.8, 3.4))
    for label, records in histories.items():
        ax.plot([r["step"] for r in records], [r[metric] for r in records], marker="o", ms=3, label=label)
    ax.set_xlabel("step")
    ax.set_ylabel({"val_loss": "masked-LM loss (nats)"}.get(metric, metric.replace("_", " ")))
    ax.legend(fontsize=9)
    ax.grid(alpha=0.3)
    enlarge_small_text(fig, column_px=PHONE_COLUMN_PX)  # legible on a phone, where it is shown whole
    fig.tight_layout()
    return fig


def plot_learning_curve(points: Sequence[Any], baselines: dict[str, float], tasks: Sequence[str],
                        baseline_name: str = "bag of words") -> Figure:
    """Fine-tuned test accuracy against pretraining tokens (log scale), one panel per task: a line per variant
    with ± 1 standard deviation over the fine-tuning seeds, and each task's baseline as a dashed line.

    Args:
        points: :class:`attnconv.train.learning_curve.CurvePoint` records.
        baselines: task -> the baseline's test accuracy.
    """
    variants = sorted({p.variant for p in points})
    colors = dict(zip(variants, plt.get_cmap("tab10")(np.arange(len(variants)) % 10)))
    fig, axes = plt.subplots(len(tasks), 1, figsize=(4.8, 2.7 * len(tasks) + 0.8), squeeze=False, sharex=True)
    for ax, task in zip(axes[:, 0], tasks):
        for v in variants:
            pts = sorted((p for p in points if p.variant == v and p.task == task), key=lambda p: p.tokens)
            if pts:
                ax.errorbar([p.tokens for p in pts], [100 * p.acc_mean for p in pts],
                            yerr=[100 * p.acc_std for p in pts], marker="o", ms=4, capsize=3, color=colors[v], label=v)
        if task in baselines:
            ax.axhline(100 * baselines[task], color="0.3", ls="--", lw=1, label=baseline_name)
        ax.set_xscale("log")
        ax.set_title(task.upper(), fontsize=10)
        ax.set_ylabel("test accuracy (%)")
        ax.grid(alpha=0.3, which="both")
    axes[-1, 0].set_xlabel("pretraining tokens")
    # One legend under the panels, so that it covers no point.
    handles, labels = axes[0, 0].get_legend_handles_labels()
    legend = fig.legend(handles, labels, loc="lower center", ncol=min(len(labels), 2), fontsize=9, frameon=False)
    enlarge_small_text(fig, column_px=PHONE_COLUMN_PX)  # legible on a phone, where it is shown whole
    fig.tight_layout()
    legend_rows = (len(labels) + 1) // 2
    fig.subplots_adjust(bottom=(0.35 + 0.25 * legend_rows) / fig.get_size_inches()[1])  # room for the legend's rows
    legend.set_bbox_to_anchor((0.5, 0.0))
    return fig
