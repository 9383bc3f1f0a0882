"""The map of the BERT variants (chapter 07): where in one attention layer each variant puts a convolution.

A layer is drawn top to bottom, from the tokens to the output projection. Beside each step stand the variants
of :data:`attnconv.models.bert.VARIANTS` that change it, read from their flags (``absolute``, ``fixed``,
``query_dynamic``, ``conv_projections``, ``conv_activation``, ``mixed_projections``, ``value_conv``), so a new
variant appears on the map by itself. Variants with committed pretraining runs are drawn in bold with a filled
square; the others are built and tested but not pretrained here.
"""

from __future__ import annotations

from typing import Collection, Mapping

import matplotlib.pyplot as plt
from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

__all__ = ["variant_places", "plot_variant_map"]

FONT = 10.5  # points: legible at 400 px for a figure 5 inches wide

STEPS = (
    ("tokens\n+ absolute positions?", "input"),
    ("projections\n$W_{qry}$, $W_{key}$, $W_{val}$", "projection"),
    ("logits $e_{ij}$ = content\n+ $b_\\delta$ + $(X_i W_{qry})\\, a_\\delta^\\top$", "logits"),
    ("softmax, then\nweighted sum of values", "mix"),
    ("$W_{out}$", "output"),
)


def variant_places(variants: Mapping[str, object]) -> dict[str, list[str]]:
    """For each step of a layer (``input``, ``projection``, ``logits``, ``mix``), the variants that change it.

    ``input`` lists the variants *without* absolute positions; ``absolute`` itself changes nothing and is listed
    under ``input`` as the baseline. A variant may change several steps (``composite-noabs``: input and logits).
    """
    places: dict[str, list[str]] = {"input": [], "projection": [], "logits": [], "mix": []}
    for name, v in variants.items():
        if not v.absolute or name == "absolute":
            places["input"].append(name)
        if v.conv_projections:
            places["projection"].append(name)
        if v.fixed or v.query_dynamic:
            places["logits"].append(name)
        if v.value_conv:
            places["mix"].append(name)
    return places


def plot_variant_map(variants: Mapping[str, object], pretrained: Collection[str] = ()) -> Figure:
    """One attention layer top to bottom (left) and the variants that change each step (right).

    Args:
        variants: name -> :class:`attnconv.models.bert.AttentionVariant`, as in ``VARIANTS``.
        pretrained: names of the variants with a committed pretraining run (drawn bold, with a filled square).
    """
    places = variant_places(variants)
    missing = set(variants) - {n for names in places.values() for n in names}
    if missing:
        raise ValueError(f"variants {sorted(missing)} change no step of the map")
    # Layout in row units (one row of names each), drawn top to bottom: a box holds its names two to a row.
    rows = {key: max(1.6, 0.6 + (len(places.get(key, [])) + 1) // 2) for _, key in STEPS}
    gap, head = 0.7, 1.3
    total = head + sum(rows.values()) + gap * (len(STEPS) - 1)
    fig = plt.figure(figsize=(5.0, 0.3 * total))
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, 1)
    ax.set_ylim(total, 0)
    ax.axis("off")
    shown = len(set(pretrained) & set(variants))
    ax.text(0.02, 0.5, f"{len(variants)} variants; ■ bold: pretrained here ({shown})", fontsize=FONT, va="center")
    top, previous = head, None
    for label, key in STEPS:
        h = rows[key]
        ax.add_patch(FancyBboxPatch((0.02, top), 0.4, h, boxstyle="round,pad=0.005,rounding_size=0.015",
                                    fc="#cfe3f5" if places.get(key) and key != "input" else "#eeeeee", ec="0.3",
                                    lw=0.8))
        ax.text(0.22, top + h / 2, label, ha="center", va="center", fontsize=FONT)
        if previous is not None:
            ax.add_patch(FancyArrowPatch((0.22, previous), (0.22, top), arrowstyle="-|>", mutation_scale=9,
                                         color="0.3"))
        for i, name in enumerate(places.get(key, [])):
            on = name in pretrained
            ax.text(0.45 + 0.3 * (i % 2), top + 0.8 + i // 2, ("■ " if on else "□ ") + name, fontsize=FONT - 0.3,
                    va="center", weight="bold" if on else "normal", color="black" if on else "0.35")
        previous = top + h
        top = previous + gap
    return fig
