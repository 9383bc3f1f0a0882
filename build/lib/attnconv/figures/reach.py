"""How far the layers look (the paper's Fig. 3 read as numbers): mean attention distance and α per layer, at the
start and the end of training, beside a ResNet's receptive field per stage. The numbers come from
:mod:`attnconv.reach`."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from .legibility import PHONE_COLUMN_PX, enlarge_small_text

__all__ = ["plot_reach"]


def plot_reach(reaches: Mapping[str, Mapping[str, Any]], fields: Sequence[Mapping[str, int]] | None = None,
               image_size: int = 32) -> Figure:
    """Three panels: each layer's mean attention distance (pixels), each head's α (log scale, with α = 1
    marked), and the theoretical receptive field of each ResNet stage (pixels).

    Args:
        reaches: label -> :func:`attnconv.reach.run_reach` of a run; every head is a dot, the layer's mean a
            line; the start of training hollow and dashed, the end filled and solid.
        fields: :func:`attnconv.reach.receptive_fields` of the ResNet (the third panel is left out without it).
        image_size: drawn as a line on the receptive-field panel.
    """
    panels = 3 if fields else 2
    fig, axes = plt.subplots(panels, 1, figsize=(4.8, 3.3 * panels), squeeze=False)
    ax_d, ax_a = axes[0, 0], axes[1, 0]
    colors = plt.get_cmap("tab10")(np.arange(len(reaches)) % 10)
    offsets = np.linspace(-0.15, 0.15, max(2 * len(reaches), 2))
    for i, (label, reach) in enumerate(reaches.items()):
        for j, (when, style) in enumerate((("init", "--"), ("trained", "-"))):
            layers = reach[when]
            x = np.arange(1, len(layers) + 1) + offsets[2 * i + j]
            face = "none" if when == "init" else colors[i]
            name = f"{label}, {'start' if when == 'init' else 'step ' + str(reach['step'])}"
            for k, layer in enumerate(layers):
                heads = len(layer["distance"])
                ax_d.scatter(np.full(heads, x[k]), layer["distance"], s=12, facecolors=face, edgecolors=colors[i],
                             linewidths=0.8)
                ax_a.scatter(np.full(heads, x[k]), layer["alpha"], s=12, facecolors=face, edgecolors=colors[i],
                             linewidths=0.8)
            ax_d.plot(x, [layer["mean_distance"] for layer in layers], style, color=colors[i], lw=1.2, label=name)
            ax_a.plot(x, [np.median(layer["alpha"]) for layer in layers], style, color=colors[i], lw=1.2, label=name)
    depth = max(len(r["trained"]) for r in reaches.values())
    for ax in (ax_d, ax_a):
        ax.set_xticks(range(1, depth + 1))
        ax.set_xlabel("layer")
        ax.grid(alpha=0.3)
    ax_d.set_ylabel("mean attention distance (pixels)")
    ax_d.set_title("where the heads look", fontsize=10)
    top = max(max(layer["distance"].max() for layer in r[w]) for r in reaches.values() for w in ("init", "trained"))
    ax_d.set_ylim(0, 1.6 * top)  # headroom for the legend, which then covers no point
    ax_d.legend(fontsize=8, loc="upper left", ncol=2)
    ax_a.set_yscale("log")
    ax_a.axhline(1.0, color="0.4", lw=0.8, ls=":")
    ax_a.set_ylabel("α per head (line: median)")
    ax_a.set_title("how sharp (α > 1 above the dotted line)", fontsize=10)
    if fields:
        ax_r = axes[2, 0]
        stages = [f["stage"] for f in fields]
        ax_r.bar(stages, [f["rf"] for f in fields], color="0.6", width=0.6)
        for f in fields:
            ax_r.text(f["stage"], f["rf"], f"{f['rf']}", ha="center", va="bottom", fontsize=8)
        ax_r.axhline(image_size, color="0.3", lw=0.8, ls="--")
        ax_r.text(stages[0] - 0.3, image_size, f" image ({image_size} px)", va="bottom", fontsize=8)
        ax_r.set_xticks(stages)
        ax_r.set_xlabel("ResNet18 stage")
        ax_r.set_ylabel("receptive field (pixels on a side)")
        ax_r.set_title("what a ResNet can see", fontsize=10)
        ax_r.grid(alpha=0.3, axis="y")
    enlarge_small_text(fig, column_px=PHONE_COLUMN_PX)  # legible on a phone, where it is shown whole
    fig.tight_layout()
    return fig
