"""Figures of the imitation experiment and of the grid-against-random initialisation (chapter 06).

Every function takes plain records (the lines of ``results/imitation/records.jsonl`` as
:func:`attnconv.train.imitation.imitate` returns them, or the per-epoch metrics of vision runs) and returns a
``matplotlib.figure.Figure``. Centres are drawn at (column Δ_2, row Δ_1), rows growing downwards as in an image.
"""

from __future__ import annotations

from typing import Any, Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import LogLocator, NullFormatter, PercentFormatter

from ..train.imitation import tap_shifts
from .legibility import PHONE_COLUMN_PX, enlarge_small_text

__all__ = ["setting_label", "plot_imitation_paths", "plot_imitation_curves", "plot_imitation_summary", "plot_init_comparison",
           "plot_kernel_imitation"]


def setting_label(setting: str) -> str:
    """A sweep setting's name as a figure shows it: ``"rank1 D_h=C 16 heads"`` -> ``"rank-1, $D_h = C$, 16 heads"``."""
    words = {"rank1": "rank-1", "D_h=1": "$D_h = 1$", "D_h=C": "$D_h = C$", "alpha=2": "$\\alpha = 2$",
             "lr=1e-3": "lr $10^{-3}$", "5x5": "5×5", "cnn": "CNN layer", "lightconv": "lightweight conv"}
    parts, out = setting.split(), []
    for i, part in enumerate(parts):
        if part == "heads" and out:
            out[-1] += " heads"
        else:
            out.append(words.get(part, part))
    return ", ".join(out)


def plot_imitation_paths(records: Sequence[dict[str, Any]], titles: Sequence[str], reach: float | None = None) -> Figure:
    """One panel per run: every head's centre from its random start (open circle) to its last record (dot),
    over the K x K taps (crosses). A head that ends on a tap has found its part of Theorem 1's construction.
    ``reach``: half-width of the window drawn (default: every centre, at most 6 cells)."""
    if len(records) != len(titles) or not records:
        raise ValueError(f"need one title per record and at least one record, got {len(records)} and {len(titles)}")
    if reach is None:
        reach = min(6.0, max(np.abs(np.array(r["centers"])).max() for r in records) + 0.5)
    fig, axes = plt.subplots(len(records), 1, figsize=(4.2, 4.0 * len(records)), squeeze=False)
    for ax, rec, title in zip(axes[:, 0], records, titles):
        taps = tap_shifts(rec["kernel_size"]).numpy()
        ax.scatter(taps[:, 1], taps[:, 0], marker="+", s=120, color="black", zorder=3, label="kernel taps")
        path = np.array(rec["centers"])  # (records, N_h, 2)
        colours = plt.cm.tab20(np.linspace(0, 1, path.shape[1], endpoint=False))
        for h in range(path.shape[1]):
            ax.plot(path[:, h, 1], path[:, h, 0], color=colours[h], lw=1, alpha=0.8)
            ax.scatter(path[0, h, 1], path[0, h, 0], s=18, facecolors="none", edgecolors=colours[h])
            ax.scatter(path[-1, h, 1], path[-1, h, 0], s=22, color=colours[h], zorder=4)
        ax.set_xlim(-reach, reach)
        ax.set_ylim(reach, -reach)
        ax.set_aspect("equal")
        ax.grid(alpha=0.3)
        ax.set_xlabel(r"column shift $\Delta_2$")
        ax.set_ylabel(r"row shift $\Delta_1$")
        ax.set_title(f"{setting_label(title)}\nerror {rec['rel_error'][-1]:.1%}, matched distance {rec['matched'][-1]:.2f}",
                     fontsize=10)
    axes[0, 0].legend(loc="lower left", fontsize=9)
    enlarge_small_text(fig, column_px=PHONE_COLUMN_PX)  # legible on a phone, where it is shown whole
    fig.tight_layout()
    return fig


def _by_setting(records: Sequence[dict[str, Any]], key: str, setting: str) -> tuple[np.ndarray, np.ndarray]:
    runs = [r for r in records if r["setting"] == setting]
    if not runs:
        raise ValueError(f"no records for setting {setting!r}")
    return np.array(runs[0]["steps"]), np.array([r[key] for r in runs])  # (records,), (seeds, records)


def plot_imitation_curves(records: Sequence[dict[str, Any]], settings: Sequence[str]) -> Figure:
    """Relative error (log scale) and matched-tap distance over the steps: the mean over seeds, with each seed faint."""
    fig, (err_ax, dist_ax) = plt.subplots(2, 1, figsize=(4.8, 6.4))
    for i, setting in enumerate(settings):
        colour = plt.cm.tab10(i % 10)
        for ax, key in ((err_ax, "rel_error"), (dist_ax, "matched")):
            steps, values = _by_setting(records, key, setting)
            for run in values:
                ax.plot(steps, run, color=colour, lw=0.6, alpha=0.35)
            ax.plot(steps, values.mean(0), color=colour, lw=1.8, label=setting_label(setting))
    err_ax.set_yscale("log")
    err_ax.set_ylabel(r"relative error $\|y - \hat y\| / \|y\|$")
    dist_ax.set_ylabel("matched-tap distance (cells)")
    for ax in (err_ax, dist_ax):
        ax.set_xlabel("Adam step")
        ax.grid(alpha=0.3)
    dist_ax.legend(fontsize=9)
    enlarge_small_text(fig, column_px=PHONE_COLUMN_PX)  # legible on a phone, where it is shown whole
    fig.tight_layout()
    return fig


def plot_imitation_summary(summary: dict[str, dict[str, Any]], settings: Sequence[str]) -> Figure:
    """Final matched-tap distance and relative error per setting: mean ± standard deviation over seeds, each seed a dot."""
    fig, (dist_ax, err_ax) = plt.subplots(2, 1, figsize=(5.0, 2 * (0.3 * len(settings) + 1.0)))
    rows = np.arange(len(settings))[::-1]
    for y, setting in zip(rows, settings):
        stats = summary[setting]
        for ax, key in ((dist_ax, "matched"), (err_ax, "rel_error")):
            if key not in stats:
                continue
            s = stats[key]
            ax.errorbar(s["mean"], y, xerr=s["std"], fmt="o", color="tab:blue", capsize=3)
            ax.scatter(s["runs"], [y] * len(s["runs"]), s=10, color="tab:orange", zorder=3)
    for ax in (dist_ax, err_ax):
        ax.set_yticks(rows, [setting_label(s) for s in settings], fontsize=9)
    dist_ax.set_xlabel("matched-tap distance at the end (cells)")
    err_ax.set_xlabel("relative error at the end")
    err_ax.set_xscale("log")
    err_ax.xaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
    err_ax.xaxis.set_major_formatter(PercentFormatter(1.0))
    err_ax.xaxis.set_minor_formatter(NullFormatter())
    for ax in (dist_ax, err_ax):
        ax.grid(alpha=0.3)
    enlarge_small_text(fig, column_px=PHONE_COLUMN_PX)  # legible on a phone, where it is shown whole
    fig.tight_layout()
    return fig


def plot_init_comparison(arms: dict[str, Sequence[Sequence[dict[str, Any]]]]) -> Figure:
    """Test accuracy per epoch for each initialisation: every seed faint, the mean with a ± 1 std band.

    Args:
        arms: name -> one list of per-epoch metric dicts (with ``"epoch"`` and ``"test_acc"``) per seed.
    """
    fig, ax = plt.subplots(figsize=(5.5, 3.4))
    for i, (name, runs) in enumerate(arms.items()):
        colour = plt.cm.tab10(i)
        epochs = np.array([m["epoch"] for m in runs[0]])
        acc = np.array([[m["test_acc"] for m in run] for run in runs])  # (seeds, epochs)
        for run in acc:
            ax.plot(epochs, run, color=colour, lw=0.7, alpha=0.4)
        ax.plot(epochs, acc.mean(0), color=colour, lw=2, label=f"{name} ({len(runs)} seeds)")
        ax.fill_between(epochs, acc.mean(0) - acc.std(0), acc.mean(0) + acc.std(0), color=colour, alpha=0.15)
    ax.set_xlabel("epoch")
    ax.set_ylabel("test accuracy (2,000 images)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=9)
    enlarge_small_text(fig, column_px=PHONE_COLUMN_PX)  # legible on a phone, where it is shown whole
    fig.tight_layout()
    return fig


def plot_kernel_imitation(record: dict[str, Any]) -> Figure:
    """The language analogue: each target lightweight-convolution kernel (bars) and the attention of the head matched
    to it, at its first record (dotted) and its last (line), over the offsets δ = -k'..k'."""
    target = np.array(record["target"])  # (N_h, 2k'+1)
    first, last = np.array(record["kernels"][0]), np.array(record["kernels"][-1])
    radius = (target.shape[1] - 1) // 2
    offsets = np.arange(-radius, radius + 1)
    cols = min(2, len(target))
    rows = -(-len(target) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(2.5 * cols, 2.3 * rows), sharey=True, squeeze=False)
    for ax in axes.flat[len(target):]:
        ax.remove()
    for h, ax in enumerate(axes.flat[:len(target)]):
        ax.bar(offsets, target[h], color="lightgray", label="target kernel")
        ax.plot(offsets, first[h], ":", color="tab:blue", label="attention at step 0")
        ax.plot(offsets, last[h], "o-", color="tab:blue", ms=3, label=f"attention at step {record['steps'][-1]}")
        ax.set_xlabel(r"offset $\delta$")
        ax.set_title(f"head {h + 1}", fontsize=9)
    for ax in axes[:, 0]:
        ax.set_ylabel("weight")
    fig.legend(*axes[0, 0].get_legend_handles_labels(), loc="lower center", ncol=2, fontsize=8, frameon=False)
    enlarge_small_text(fig, column_px=PHONE_COLUMN_PX)  # legible on a phone, where it is shown whole
    fig.tight_layout(rect=(0, 0.2 / rows, 1, 1))
    return fig
