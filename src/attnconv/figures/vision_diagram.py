"""The diagram that opens the CIFAR-10 chapter: the attention-only vision model, and what is measured on it.

Left, the network of Cordonnier et al.'s Section 4 as :class:`attnconv.models.VisionConfig` builds it: 2×2
pixels to a token, a linear lift to D channels, L blocks of N_h quadratic heads, a mean over tokens and a
classifier. Right, one layer's heads around a query pixel q: each head h is a Gaussian bump centred at
q + Δ^(h) whose width shrinks as α^(h) grows, drawn over the K × K taps of the convolution that
Theorem 3.1's construction would place one head on each. The labels name what the chapter measures.

Drawn from a config (sizes) and a few example heads; nothing here is a trained result.
"""

from __future__ import annotations

import math
from typing import Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import Circle, FancyArrowPatch, FancyBboxPatch

__all__ = ["EXAMPLE_HEADS", "plot_vision_model"]

# (Δ_1, Δ_2, α): one head sharp on a tap, one between two taps, one wide and far (as trained heads end up).
EXAMPLE_HEADS = ((-1.0, 1.0, 3.0), (0.5, -1.0, 1.5), (2.2, 2.4, 0.35))
FONT = 10.5  # points: legible at 400 px for a figure 5 inches wide


def _box(ax, y: float, text: str, color: str, height: float = 0.13) -> tuple[float, float]:
    ax.add_patch(FancyBboxPatch((0.04, y - height / 2), 0.92, height, boxstyle="round,pad=0.01,rounding_size=0.02",
                                fc=color, ec="0.3", lw=0.8))
    ax.text(0.5, y, text, ha="center", va="center", fontsize=FONT)
    return y - height / 2, y + height / 2


def plot_vision_model(hidden_dim: Sequence[int] = (400, 64), depth: Sequence[int] = (6, 3), num_heads: int = 9,
                      kernel_size: int = 3, heads: Sequence[tuple[float, float, float]] = EXAMPLE_HEADS) -> Figure:
    """The model (left) and one layer's heads with the quantities the chapter measures (right).

    Args:
        hidden_dim: D of the paper's model and of the runs here, in that order.
        depth: L of the paper's model and of the runs here.
        num_heads: N_h per layer.
        kernel_size: K of the convolution whose taps are drawn (K² = N_h in the construction).
        heads: example heads as (Δ_1, Δ_2, α), offsets in token cells (rows down, columns right).
    """
    fig = plt.figure(figsize=(5.0, 6.4))
    left = fig.add_axes((0.0, 0.0, 0.46, 0.93))  # ends left of the right panel's tick labels
    left.set_xlim(0, 1)
    left.set_ylim(0, 1)
    left.axis("off")
    steps = [
        ("image\n32 × 32 pixels × 3", "#eeeeee"),
        ("2 × 2 pixels → 1 token:\n16 × 16 tokens × 12", "#eeeeee"),
        (f"linear lift to D channels\n(D = {hidden_dim[0]} paper, {hidden_dim[1]} here)", "#eeeeee"),
        (f"L blocks (L = {depth[0]} paper,\n{depth[1]} here): {num_heads} heads\nlook at offsets δ,\n"
         "then a feed-forward", "#cfe3f5"),
        ("mean over tokens\n→ 10 classes", "#eeeeee"),
    ]
    ys, spans = np.linspace(0.9, 0.1, len(steps)), []
    for (text, color), y in zip(steps, ys):
        spans.append(_box(left, y, text, color, height=0.2 if "blocks" in text else 0.12))
    for (low, _), (_, high) in zip(spans, spans[1:]):
        left.add_patch(FancyArrowPatch((0.5, low), (0.5, high), arrowstyle="-|>", mutation_scale=10, color="0.3"))
    left.text(0.5, 0.0, "measured: test accuracy", ha="center", va="bottom", fontsize=FONT, style="italic")
    fig.text(0.23, 0.97, "the model", ha="center", va="center", fontsize=FONT + 1, weight="bold")
    fig.text(0.79, 0.97, "one layer's heads", ha="center", va="center", fontsize=FONT + 1, weight="bold")

    right = fig.add_axes((0.6, 0.38, 0.36, 0.55))
    extent = 3.5
    half = kernel_size // 2
    for r in range(-half, half + 1):
        for c in range(-half, half + 1):
            right.plot(c, r, "+", color="0.25", ms=9, mew=1.4)
    right.plot(0, 0, "s", mfc="none", mec="black", ms=11, mew=1.4)
    right.text(0.25, 0.33, "q", fontsize=FONT, ha="left", va="top")
    colors = ("#d62728", "#2ca02c", "#9467bd")
    for (d1, d2, alpha), color in zip(heads, colors):
        for mass, style in ((0.5, "-"), (0.9, ":")):
            radius = math.sqrt(-math.log(1 - mass) / alpha)
            right.add_patch(Circle((d2, d1), radius, fill=False, ec=color, ls=style, lw=1.3))
        right.plot(d2, d1, "o", color=color, ms=4)
    for patch in right.patches:
        patch.set_clip_on(True)
    d1, d2, _ = heads[0]
    right.add_patch(FancyArrowPatch((0, 0), (d2, d1), arrowstyle="-|>", mutation_scale=10, color=colors[0], lw=1.2,
                                    shrinkA=6, shrinkB=3))
    right.text(d2 - 0.15, d1 - 0.55, "Δ$^{(h)}$", color=colors[0], fontsize=FONT + 1, ha="center", va="bottom")
    right.set_xlim(-extent, extent)
    right.set_ylim(extent, -extent)
    right.set_aspect("equal")
    right.set_xticks(range(-3, 4))
    right.set_yticks(range(-3, 4))
    right.tick_params(labelsize=FONT - 1)
    right.set_xlabel("column offset (cells)", fontsize=FONT)
    right.set_ylabel("row offset (cells)", fontsize=FONT, labelpad=4)
    right.grid(True, alpha=0.2)

    fig.add_artist(FancyArrowPatch((0.45, 0.33), (0.64, 0.42), transform=fig.transFigure, arrowstyle="-|>",
                                   mutation_scale=10, color="#4a7fb5", lw=1.2, ls="--"))
    notes = fig.add_axes((0.55, 0.0, 0.43, 0.29))
    notes.axis("off")
    notes.text(0.0, 1.0, "+ the K × K taps of a conv\n"
                         "○ a head: centre Δ$^{(h)}$; circles\n   hold 50% and 90% of it,\n"
                         "   smaller as α$^{(h)}$ grows\n"
                         "measured: Δ, α per head;\n"
                         "distance from the taps\n   to the nearest heads;\n"
                         "mean attention distance",
               ha="left", va="top", fontsize=FONT - 0.5, linespacing=1.25)
    return fig
