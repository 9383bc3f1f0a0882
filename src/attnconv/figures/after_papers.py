"""Chapter 08's figures besides the map: which patches a kernel reaches, a Toeplitz multiplier at work, and
CoAtNet's relative attention before and after the softmax. Each takes the numbers it draws; none computes them."""

from __future__ import annotations

from typing import Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

__all__ = ["plot_coatnet_kernels", "plot_patch_reach", "plot_toeplitz_fix"]

FONT = 11


def _ticks_inside(ax) -> None:
    """Keep only the ticks inside the axes' limits (matplotlib also makes labels for ticks just outside them)."""
    for get, put, lim in ((ax.get_xticks, ax.set_xticks, ax.get_xlim()), (ax.get_yticks, ax.set_yticks, ax.get_ylim())):
        lo, hi = min(lim), max(lim)
        put([t for t in get() if lo - 1e-9 <= t <= hi + 1e-9])


def plot_patch_reach(kernel_size: int, patch_size: int, pixel: tuple[int, int], patches: int = 4,
                     width: float = 4.4) -> Figure:
    """A grid of ``patches`` x ``patches`` patches of ``patch_size`` pixels; the kernel's window around ``pixel``
    (orange), the pixel (black), its own patch (thick) and the patches the window touches (shaded)."""
    p, r = patch_size, (kernel_size - 1) // 2
    n = patches * p
    fig, ax = plt.subplots(figsize=(width, width), dpi=100)
    row, col = pixel
    own = (row // p, col // p)
    touched = {((row + dr) // p, (col + dc) // p) for dr in range(-r, r + 1) for dc in range(-r, r + 1)
               if 0 <= row + dr < n and 0 <= col + dc < n}
    for (pr, pc) in touched:
        ax.add_patch(Rectangle((pc * p, pr * p), p, p, color="#c6dbef", zorder=0))
    for k in range(n + 1):
        ax.plot([0, n], [k, k], color="0.85", lw=0.6, zorder=1)
        ax.plot([k, k], [0, n], color="0.85", lw=0.6, zorder=1)
    for k in range(0, n + 1, p):
        ax.plot([0, n], [k, k], color="0.35", lw=1.4, zorder=2)
        ax.plot([k, k], [0, n], color="0.35", lw=1.4, zorder=2)
    ax.add_patch(Rectangle((col - r, row - r), kernel_size, kernel_size, fill=False, ec="#d95f02", lw=2.5, zorder=3))
    ax.add_patch(Rectangle((own[1] * p, own[0] * p), p, p, fill=False, ec="black", lw=3, zorder=3))
    ax.add_patch(Rectangle((col, row), 1, 1, color="black", zorder=4))
    ax.set_xlim(0, n)
    ax.set_ylim(n, 0)
    ax.set_aspect("equal")
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_title(f"{kernel_size}×{kernel_size} kernel, {p}×{p} patches: {len(touched)} patches reached",
                 fontsize=FONT)
    fig.tight_layout()
    return fig


def plot_toeplitz_fix(maps: Sequence[np.ndarray], titles: Sequence[str], outputs: Sequence[np.ndarray],
                      labels: Sequence[str], ncols: int = 4) -> Figure:
    """The attention matrices ``maps`` (rows are queries) side by side, and a last panel with ``outputs`` on a
    constant input, one line per entry of ``labels``. ``ncols`` panels a row."""
    panels = len(maps) + 1
    rows = -(-panels // ncols)
    fig, axes = plt.subplots(rows, ncols, figsize=(2.6 * ncols, 2.9 * rows), dpi=100, squeeze=False)
    for ax, m, title in zip(axes.flat, maps, titles):
        image = ax.imshow(m, cmap="RdBu_r", vmin=-np.abs(m).max(), vmax=np.abs(m).max())
        ax.set_title(title, fontsize=FONT)
        ax.set_xlabel("key", fontsize=FONT)
        ax.set_ylabel("query", fontsize=FONT)
        ax.set_xticks([])
        ax.set_yticks([])
        fig.colorbar(image, ax=ax, fraction=0.046, pad=0.04).ax.tick_params(labelsize=FONT - 1)
    ax = axes.flat[len(maps)]
    for out, label, style in zip(outputs, labels, ("-", "--", ":")):
        ax.plot(np.arange(len(out)), out, style, lw=2.2, label=label)
    ax.set_xlabel("position", fontsize=FONT)
    ax.set_title("output on a constant input", fontsize=FONT)
    ax.tick_params(labelsize=FONT - 1)
    ax.ticklabel_format(axis="y", useOffset=False)  # a flat line near 1 reads as 1, not as an offset
    lo, hi = min(float(np.min(o)) for o in outputs), max(float(np.max(o)) for o in outputs)
    span = max(hi - lo, 0.5 * max(abs(lo), abs(hi), 1e-3))
    ax.set_ylim(lo - 0.25 * span, hi + 0.25 * span)
    ax.locator_params(axis="y", nbins=4)
    ax.legend(fontsize=FONT - 1, frameon=False)
    _ticks_inside(ax)
    for extra in list(axes.flat)[panels:]:
        extra.axis("off")
    fig.tight_layout()
    return fig


def plot_coatnet_kernels(offsets: np.ndarray, pre: np.ndarray, post: np.ndarray, scales: np.ndarray,
                         distances: np.ndarray, ncols: int = 2) -> Figure:
    """Left: the weights one query puts on each offset without content, before the softmax (``pre``, a
    normalised kernel) and after it (``post``, uniform plus w). Right: how far the pre-softmax row moves from that
    kernel (total variation) as the content term is scaled by ``scales``."""
    fig, axes = plt.subplots(-(-2 // ncols), ncols, figsize=(4.6 * ncols, 3.4 * (-(-2 // ncols))), dpi=100,
                             squeeze=False)
    left, right = axes.flat[0], axes.flat[1]
    width = 0.4
    left.bar(offsets - width / 2, pre, width, label="w inside the softmax", color="#1f5fa8")
    left.bar(offsets + width / 2, post, width, label="w after the softmax", color="#d95f02")
    left.axhline(0, color="0.5", lw=0.8)
    left.set_xlabel("offset j − i", fontsize=FONT)
    left.set_ylabel("weight on key j", fontsize=FONT)
    left.set_title("content off: one query's kernel", fontsize=FONT)
    left.set_xticks(offsets[:: max(1, len(offsets) // 6)])
    low, high = min(0.0, float(np.min(post)), float(np.min(pre))), max(float(np.max(post)), float(np.max(pre)))
    left.set_ylim(low - 0.05 * (high - low), high + 0.45 * (high - low))  # room for the legend above the bars
    left.legend(fontsize=FONT - 1, frameon=False, loc="upper left")
    right.plot(scales, distances, "o-", color="#1f5fa8")
    right.set_xlabel("scale of the content term", fontsize=FONT)
    right.set_ylabel("distance from the kernel", fontsize=FONT)
    right.set_title("content on: the two compete", fontsize=FONT)
    for ax in (left, right):
        ax.tick_params(labelsize=FONT - 1)
        _ticks_inside(ax)
    fig.tight_layout()
    return fig
