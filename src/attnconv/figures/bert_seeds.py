"""Chapter 07's comparison across pretraining seeds: every variant's masked-LM loss and fine-tuned accuracy, one
marker per pretraining seed, with the fine-tuning runs behind them (:mod:`attnconv.train.seeds`)."""

from __future__ import annotations

from typing import Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from .legibility import PHONE_COLUMN_PX, enlarge_small_text

__all__ = ["plot_seed_comparison"]

_MARKERS = ("o", "s", "^", "D", "v", "P")


def plot_seed_comparison(groups: dict, tasks: Sequence[str] = ("subj", "mr")) -> Figure:
    """One panel for the masked-LM loss and one per task, stacked; a row per variant. Each pretraining seed is a
    marker of its own shape (on a task: the mean over its fine-tuning seeds, which are the small grey dots).

    Args:
        groups: variant -> :class:`attnconv.train.seeds.SeedRuns`, as :func:`attnconv.train.seeds.seed_runs`
            returns.
        tasks: the tasks to draw, each a panel.

    Raises:
        ValueError: ``groups`` is empty, or a variant has more pretraining seeds than there are marker shapes.
    """
    if not groups:
        raise ValueError("groups: no variant to draw")
    most = max(len(g.seeds) for g in groups.values())
    if most > len(_MARKERS):
        raise ValueError(f"groups: at most {len(_MARKERS)} pretraining seeds per variant, got {most}")
    variants = list(groups)
    panels = ["loss", *tasks]
    fig, axes = plt.subplots(len(panels), 1, figsize=(4.8, len(panels) * (0.3 * len(variants) + 0.9) + 0.9),
                             squeeze=False)
    rows = np.arange(len(variants))[::-1]  # the first variant at the top
    seen = set()
    for ax, panel in zip(axes[:, 0], panels):
        for y, v in zip(rows, variants):
            g = groups[v]
            if panel == "loss":
                values = {s: x for s, x in zip(g.seeds, g.val_loss)}
            else:
                runs = g.accuracy.get(panel, {})
                values = {s: 100 * np.mean(acc) for s, acc in runs.items()}
                fine = [100 * a for acc in runs.values() for a in acc]
                ax.plot(fine, [y] * len(fine), "o", ms=3, color="0.6", zorder=1,
                        label=None if "fine" in seen else "one fine-tuning run")
                seen.add("fine")
            for k, (s, x) in enumerate(sorted(values.items())):
                label = f"pretraining seed {s}"
                ax.plot([x], [y], _MARKERS[k], ms=7, mfc="none" if k else f"C{k}", color=f"C{k}", mew=1.5, zorder=2,
                        label=None if label in seen else label)
                seen.add(label)
        ax.set_yticks(rows, variants)
        ax.set_ylim(-0.6, len(variants) - 0.4)
        ax.set_xlabel("masked-LM loss (nats)" if panel == "loss" else f"{panel.upper()} test accuracy (%)")
        ax.grid(alpha=0.3, axis="x")
    handles, labels = [], []
    for ax in axes[:, 0]:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            if lab not in labels:
                handles.append(h)
                labels.append(lab)
    order = sorted(range(len(labels)), key=lambda i: (labels[i].startswith("one"), labels[i]))
    legend = fig.legend([handles[i] for i in order], [labels[i] for i in order], loc="lower center", ncol=2,
                        fontsize=9, frameon=False)
    enlarge_small_text(fig, column_px=PHONE_COLUMN_PX)  # legible on a phone, where it is shown whole
    fig.tight_layout()
    legend_rows = (len(labels) + 1) // 2
    fig.subplots_adjust(bottom=(0.65 + 0.25 * legend_rows) / fig.get_size_inches()[1], hspace=0.5)
    legend.set_bbox_to_anchor((0.5, 0.0))
    return fig
