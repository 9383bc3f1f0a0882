"""Chapter 08's map: every result of the book placed between convolution, attention and state-space models.

Each result is a point of a triangle whose corners are the three families; its barycentric weights say how much
of each family the result ties together (an equivalence between two families sits on their edge, the state-space
duality in the middle). The numbers are drawn on the triangle and explained in a list beside it (below it on a
phone).
"""

from __future__ import annotations

from dataclasses import dataclass

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

__all__ = ["FAMILY_MAP", "MapEntry", "plot_family_map"]


@dataclass(frozen=True)
class MapEntry:
    """One result on the map: its number, a short line, where the book treats it, and its weights on
    (convolution, attention, state space), which need not sum to one (they are normalised)."""

    number: int
    text: str
    where: str
    weights: tuple[float, float, float]


FAMILY_MAP: tuple[MapEntry, ...] = (
    MapEntry(1, "Cordonnier 2020: K² heads = any K×K conv", "ch. 03", (0.55, 0.45, 0.0)),
    MapEntry(2, "Chang 2021: relative bias = lightweight conv", "ch. 05", (0.72, 0.28, 0.0)),
    MapEntry(3, "Li 2021: patch tokens, (2R+1)² heads", "ch. 08", (0.28, 0.72, 0.0)),
    MapEntry(4, "Dao & Gu 2024: SSM = conv = masked attention", "ch. 08", (1.0, 1.0, 1.0)),
    MapEntry(5, "Luo 2022: softmax rows sum to 1; Toeplitz fix", "ch. 08", (0.12, 0.88, 0.0)),
    MapEntry(6, "Dai 2021 (CoAtNet): pre-softmax kernel", "ch. 08", (0.88, 0.12, 0.0)),
    MapEntry(7, r"SSM kernel $c\,a^k b$: a causal conv", "ch. 08", (1.0, 0.0, 1.0)),
    MapEntry(8, "SSM = linear attention with a decay mask", "ch. 08", (0.0, 1.0, 1.0)),
    MapEntry(9, "d'Ascoli 2021 (ConViT): gated local heads", "experiments", (0.42, 0.58, 0.0)),
)

_CORNERS = ((0.0, 0.0), (1.0, 0.0), (0.5, 0.866))  # convolution, attention, state space
_COLOURS = {"ch. 03": "#4c72b0", "ch. 05": "#4c72b0", "experiments": "#55a868"}


def _point(weights: tuple[float, float, float]) -> tuple[float, float]:
    total = sum(weights)
    return (sum(w * c[0] for w, c in zip(weights, _CORNERS)) / total,
            sum(w * c[1] for w, c in zip(weights, _CORNERS)) / total)


def plot_family_map(entries: tuple[MapEntry, ...] = FAMILY_MAP, ncols: int = 2, fontsize: float = 11) -> Figure:
    """The map: the triangle with a numbered marker per entry, and the list of entries beside it (``ncols=2``)
    or below it (``ncols=1``). Markers of chapter 08's own results are orange, earlier chapters' blue,
    experiments green."""
    if ncols not in (1, 2):
        raise ValueError(f"ncols must be 1 (list below) or 2 (list beside), got {ncols!r}")
    if ncols == 2:
        fig, (tri, listing) = plt.subplots(1, 2, figsize=(10.5, 4.6), dpi=100, gridspec_kw={"width_ratios": [1, 1.15]})
    else:
        fig, (tri, listing) = plt.subplots(2, 1, figsize=(4.4, 7.4), dpi=100, gridspec_kw={"height_ratios": [0.8, 1]})
    xs, ys = zip(*(_CORNERS + (_CORNERS[0],)))
    tri.plot(xs, ys, color="0.55", lw=1.2)
    names = ("convolution", "attention", "state space")
    offsets = ((-0.02, -0.07, "left"), (1.02, -0.07, "right"), (0.5, 0.9, "center"))
    for name, (x, y, ha) in zip(names, offsets):
        tri.text(x, y, name, ha=ha, va="bottom" if name == "state space" else "top", fontsize=fontsize + 1,
                 fontweight="bold")
    for entry in entries:
        x, y = _point(entry.weights)
        colour = _COLOURS.get(entry.where, "#dd8452")
        tri.scatter([x], [y], s=330, color=colour, zorder=3, edgecolor="white", linewidth=1.2)
        tri.text(x, y, str(entry.number), ha="center", va="center", color="white", fontsize=fontsize,
                 fontweight="bold", zorder=4)
    tri.set_xlim(-0.08, 1.08)
    tri.set_ylim(-0.14, 0.98)
    tri.set_aspect("equal")
    tri.axis("off")
    listing.axis("off")
    step = 1.0 / (len(entries) + 1)
    for row, entry in enumerate(entries):
        y = 1.0 - (row + 0.6) * step
        colour = _COLOURS.get(entry.where, "#dd8452")
        listing.text(0.0, y, f"{entry.number}", ha="left", va="center", fontsize=fontsize, fontweight="bold",
                     color=colour)
        listing.text(0.07, y, f"{entry.text} ({entry.where})", ha="left", va="center", fontsize=fontsize)
    listing.set_xlim(0, 1)
    listing.set_ylim(0, 1)
    fig.tight_layout()
    return fig
