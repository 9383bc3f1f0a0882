"""Chapter 08's experiments drawn: GPSA gates over training, and accuracy against locality over seeds. The numbers
come from :mod:`attnconv.train.seed_groups`."""

from __future__ import annotations

from typing import Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from ..train.results import RunResult
from ..train.seed_groups import layer_locality

__all__ = ["plot_gate_curves", "plot_accuracy_and_locality"]

_MARKERS = ("o", "s", "^", "D", "v", "P")


def plot_gate_curves(epochs: np.ndarray, gates: np.ndarray, ncols: int = 3, start: float | None = None,
                     ylim: tuple[float, float] | None = None) -> Figure:
    """One panel per layer: each seed's gate σ(λ_h) averaged over the heads (a line), with the range over the
    heads shaded, against the epoch. The panels share their y axis.

    Args:
        epochs: ``(T,)`` snapshot epochs.
        gates: ``(S, T, L, N_h)``, as :func:`attnconv.train.seed_groups.gate_curves` returns.
        ncols: panels a row.
        start: a gate value drawn as a dashed line (ConViT's start, σ(1) ≈ 0.73), or ``None``.
        ylim: the y range (default: fitted to the gates, so that small moves show).
    """
    epochs, gates = np.asarray(epochs, dtype=float), np.asarray(gates, dtype=float)
    if gates.ndim != 4 or epochs.shape != gates.shape[1:2]:
        raise ValueError(f"gates must be (S, T, L, N_h) with T = len(epochs) = {len(epochs)}, got shape "
                         f"{gates.shape}")
    if not isinstance(ncols, int) or isinstance(ncols, bool) or ncols < 1:
        raise ValueError(f"ncols must be a positive int, got {ncols!r}")
    seeds, _, layers, _ = gates.shape
    ncols = min(ncols, layers)
    nrows = -(-layers // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(3.2 * ncols, 2.6 * nrows + 0.5), squeeze=False, sharey=True)
    for layer, ax in enumerate(axes.flat):
        if layer >= layers:
            ax.set_visible(False)
            continue
        for s in range(seeds):
            g = gates[s, :, layer]  # (T, N_h)
            ax.fill_between(epochs, g.min(-1), g.max(-1), color=f"C{s}", alpha=0.15, lw=0)
            ax.plot(epochs, g.mean(-1), color=f"C{s}", lw=1.8, label=f"seed {s}")
        if start is not None:
            ax.axhline(start, color="0.4", ls="--", lw=1, label="start")
        if ylim is not None:
            ax.set_ylim(*ylim)
        ax.set_title(f"layer {layer + 1}")
        ax.set_xlabel("epoch")
        if layer % ncols == 0:
            ax.set_ylabel("gate σ(λ): weight on position")
        ax.grid(alpha=0.3)
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=min(4, len(labels)), frameon=False)
    fig.tight_layout(rect=(0, 0.1 if nrows == 1 else 0.06, 1, 1))
    return fig


def plot_accuracy_and_locality(groups: dict[str, list[RunResult]], ncols: int = 2,
                               labels: dict[str, str] | None = None, uniform: float | None = None,
                               start: dict[str, Sequence[float]] | None = None) -> Figure:
    """Two panels: the final test accuracy of every run (a marker per seed, a bar at the mean), and each layer's
    mean attention distance (the mean over its heads; a marker per seed, a line through the means).

    Args:
        groups: model -> its runs, as :func:`attnconv.train.seed_groups.seed_groups` returns.
        ncols: 2 (side by side) or 1 (stacked).
        labels: a display name per model (default: the model's name).
        uniform: the distance of uniform attention, drawn as a dashed grey line, or ``None``.
        start: per model, each layer's distance at initialisation, drawn dotted in the model's colour.
    """
    if not groups or any(not runs for runs in groups.values()):
        raise ValueError("groups: need at least one model, each with at least one run")
    if ncols not in (1, 2):
        raise ValueError(f"ncols must be 1 or 2, got {ncols!r}")
    labels = labels or {}
    models = list(groups)
    fig, axes = plt.subplots(2 // ncols, ncols, figsize=(4.6 * ncols, 3.4 * (2 // ncols) + 0.6), squeeze=False)
    acc_ax, dist_ax = axes.flat
    for k, model in enumerate(models):
        runs = groups[model]
        acc = np.array([100 * r.final["full_test_acc"] for r in runs])
        acc_ax.barh(k, acc.mean(), color=f"C{k}", alpha=0.35)
        for s, a in enumerate(acc):
            acc_ax.plot(a, k, _MARKERS[s % len(_MARKERS)], color=f"C{k}", mfc="none" if s else f"C{k}", ms=7)
        dist = np.array([layer_locality(r)["distance"].mean(-1) for r in runs])  # (S, L)
        layer = np.arange(1, dist.shape[1] + 1)
        dist_ax.plot(layer, dist.mean(0), color=f"C{k}", lw=1.8, label=labels.get(model, model))
        for s, d in enumerate(dist):
            dist_ax.plot(layer, d, _MARKERS[s % len(_MARKERS)], color=f"C{k}", mfc="none" if s else f"C{k}", ms=6)
        if start and model in start:
            dist_ax.plot(layer, start[model], ":", color=f"C{k}", lw=1.5, label=f"{labels.get(model, model)}, at the start")
    if uniform is not None:
        dist_ax.axhline(uniform, color="0.4", ls="--", lw=1, label="uniform attention")
    acc_ax.set_yticks(range(len(models)), [labels.get(m, m) for m in models])
    acc_ax.invert_yaxis()
    acc_ax.set_xlabel("test accuracy (%)")
    acc_ax.set_title("accuracy, a marker per seed")
    acc_ax.grid(axis="x", alpha=0.3)
    lo = min(100 * min(r.final["full_test_acc"] for r in runs) for runs in groups.values())
    acc_ax.set_xlim(max(0, 5 * np.floor(lo / 5) - 5), None)
    dist_ax.set_xlabel("layer")
    dist_ax.set_ylabel("mean attention distance (tokens)")
    dist_ax.set_title("how far the heads look")
    dist_ax.set_xticks(layer)
    dist_ax.set_ylim(0, None)
    dist_ax.grid(alpha=0.3)
    dist_ax.legend(frameon=False, fontsize="small")
    fig.tight_layout()
    return fig
