"""Figures of the CIFAR-10 chapter: learning curves, Gaussian attention centres (Cordonnier et al. Figs. 3-4),
attention maps of trained heads (Figs. 5-6), and how convolutional each trained head is.

Every function takes plain records (as :func:`attnconv.train.results.load_run` reads them) and returns a
``matplotlib.figure.Figure``.

Offsets are δ = key − query with δ = (δ_1, δ_2) = (row, column); a head's centre Δ^(h) is drawn at column Δ_2,
row Δ_1 around the query pixel, rows growing downwards as in an image.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import matplotlib.pyplot as plt
from matplotlib.colors import PowerNorm
import numpy as np
import torch
from matplotlib.figure import Figure
from matplotlib.patches import Ellipse

from ..data.augment import CropFlip
from .legibility import PHONE_COLUMN_PX, enlarge_small_text

__all__ = ["MASS_LEVELS", "gaussian_contour", "plot_accuracy", "plot_augmentations", "plot_attention_maps", "plot_centers",
           "plot_center_trajectories", "plot_head_shifts"]

MASS_LEVELS = (0.5, 0.9)


def gaussian_contour(center: Sequence[float], precision: np.ndarray, mass: float) -> Ellipse:
    """The ellipse holding ``mass`` of a head's attention, in the continuous approximation.

    The logits -(δ - Δ)ᵀ P (δ - Δ) make the attention a Gaussian with covariance (2P)⁻¹. The region
    (δ - Δ)ᵀ P (δ - Δ) ≤ -ln(1 - mass) holds ``mass`` of it (for the isotropic case P = α I, a disc of radius
    sqrt(-ln(1 - mass) / α)). Returned in (column, row) plot coordinates.
    """
    if not 0 < mass < 1:
        raise ValueError(f"mass must be in (0, 1), got {mass!r}")
    precision = np.asarray(precision, dtype=float)
    evals, evecs = np.linalg.eigh(precision)
    if np.any(evals <= 0):
        raise ValueError(f"precision must be positive-definite, got eigenvalues {evals}")
    level = -math.log(1 - mass)
    radii = np.sqrt(level / evals)  # semi-axes along the eigenvectors, in (row, col) coordinates
    # Eigenvector (v_row, v_col) is drawn as (x, y) = (v_col, v_row).
    angle = math.degrees(math.atan2(evecs[0, 0], evecs[1, 0]))
    return Ellipse((center[1], center[0]), 2 * radii[0], 2 * radii[1], angle=angle, fill=False)


def plot_augmentations(image: torch.Tensor, augment: CropFlip, copies: int = 7, seed: int = 0) -> Figure:
    """One uint8 image ``(H, W, C)`` and ``copies`` random crops and flips of it (normalisation undone for display)."""
    batch = image[None].expand(copies, *image.shape)
    out = augment(batch, torch.Generator().manual_seed(seed))  # (copies, H, W, C), normalised
    mean, std = torch.tensor(augment.mean), torch.tensor(augment.std)
    shown = [image.float() / 255] + list((out * std + mean).clamp(0, 1))
    cols = min(3, copies + 1)
    rows = -(-(copies + 1) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(1.5 * cols, 1.7 * rows), squeeze=False)
    for ax in axes.flat[copies + 1:]:
        ax.remove()
    for i, (ax, pixels) in enumerate(zip(axes.flat, shown)):
        ax.imshow(pixels.numpy(), interpolation="nearest")
        ax.set_title("original" if i == 0 else f"copy {i}", fontsize=9)
        ax.set_xticks([])
        ax.set_yticks([])
    enlarge_small_text(fig, column_px=PHONE_COLUMN_PX)  # legible on a phone, where it is shown whole
    fig.tight_layout()
    return fig


def plot_accuracy(histories: dict[str, list[dict[str, Any]]], metric: str = "test_acc") -> Figure:
    """Test accuracy against epochs (top) and against wall-clock time (bottom), one line per model."""
    fig, (by_epoch, by_time) = plt.subplots(2, 1, figsize=(4.8, 5.6))
    for label, history in histories.items():
        epochs = [0] + [r["epoch"] for r in history]
        minutes = [0] + [r["wall_time_s"] / 60 for r in history]
        values = [math.nan] + [100 * r[metric] for r in history]
        by_epoch.plot(epochs[1:], values[1:], "o-", ms=4, label=label)
        by_time.plot(minutes[1:], values[1:], "o-", ms=4, label=label)
    by_epoch.set_xlabel("epoch")
    by_time.set_xlabel("wall-clock time (minutes)")
    for ax in (by_epoch, by_time):
        ax.set_ylabel("test accuracy (%)")
        ax.grid(True, alpha=0.3)
    by_epoch.legend(fontsize=9)
    enlarge_small_text(fig, column_px=PHONE_COLUMN_PX)  # legible on a phone, where it is shown whole
    fig.tight_layout()
    return fig


def _centre_axes(ax, extent: float) -> None:
    ax.plot(0, 0, "s", mfc="none", mec="black", ms=8)
    ax.set_xlim(-extent, extent)
    ax.set_ylim(extent, -extent)  # rows grow downwards
    ax.set_aspect("equal")
    ax.set_xticks(range(-int(extent), int(extent) + 1, max(1, int(extent) // 2)))
    ax.set_yticks(range(-int(extent), int(extent) + 1, max(1, int(extent) // 2)))
    ax.tick_params(labelsize=10)
    ax.grid(True, alpha=0.25)


def plot_centers(snapshot: dict[str, Any], extent: float = 6.0, title: str = "") -> Figure:
    """Fig. 4: every head's centre Δ^(h) around the query pixel (black square), one panel per layer, with the
    contours holding 50% and 90% of each head's attention.

    Args:
        snapshot: ``{"centers": (L, N_h, 2), "precision": (L, N_h, 2, 2), ...}``, one line of ``centers.jsonl``.
        extent: half-width of each panel, in grid cells.
    """
    centers = np.asarray(snapshot["centers"], dtype=float)
    precision = np.asarray(snapshot["precision"], dtype=float)
    layers, heads = centers.shape[:2]
    colors = plt.get_cmap("tab10")(np.arange(heads) % 10)
    fig, axes = plt.subplots(1, layers, figsize=(2.2 * layers, 2.8), squeeze=False)
    for layer, ax in enumerate(axes[0]):
        _centre_axes(ax, extent)
        for h in range(heads):
            c = centers[layer, h]
            for mass, style in zip(MASS_LEVELS, ("-", ":")):
                ellipse = gaussian_contour(c, precision[layer, h], mass)
                ellipse.set(edgecolor=colors[h], linestyle=style, linewidth=1.0)
                ax.add_patch(ellipse)
            ax.plot(c[1], c[0], "o", color=colors[h], ms=3)
        ax.set_title(f"layer {layer + 1}", fontsize=11)
        ax.set_xlabel("column offset Δ₂", fontsize=10)
    axes[0, 0].set_ylabel("row offset Δ₁ (cells)", fontsize=10)
    fig.suptitle(title or f"centres after epoch {snapshot['epoch']:g} (solid 50%, dotted 90% of the mass)",
                 fontsize=10)
    enlarge_small_text(fig, column_px=PHONE_COLUMN_PX)  # legible on a phone, where it is shown whole
    fig.tight_layout()
    return fig


def plot_center_trajectories(snapshots: list[dict[str, Any]], layer: int, extent: float = 6.0,
                             magnify: float = 1.0) -> Figure:
    """Fig. 3: the centres of one layer's heads over training. Each head's path starts at its first centre (open
    circle) and is drawn ``magnify`` times longer than it is, ending in an arrow; the final 50% contour is drawn
    at the head's true final centre. ``magnify`` makes motion of a fraction of a cell visible."""
    if magnify <= 0:
        raise ValueError(f"magnify must be positive, got {magnify!r}")
    centers = np.asarray([s["centers"][layer] for s in snapshots], dtype=float)  # (T, N_h, 2)
    final_precision = np.asarray(snapshots[-1]["precision"][layer], dtype=float)
    epochs = [s["epoch"] for s in snapshots]
    heads = centers.shape[1]
    colors = plt.get_cmap("tab10")(np.arange(heads) % 10)
    drawn = centers[:1] + magnify * (centers - centers[:1])  # (T, N_h, 2): paths stretched about their start
    fig, ax = plt.subplots(figsize=(4.6, 4.6))
    _centre_axes(ax, extent)
    for h in range(heads):
        ax.plot(drawn[:, h, 1], drawn[:, h, 0], "-", color=colors[h], lw=1.0, alpha=0.7)
        ax.plot(drawn[0, h, 1], drawn[0, h, 0], "o", mfc="none", mec=colors[h], ms=5)
        ax.annotate("", xy=(drawn[-1, h, 1], drawn[-1, h, 0]), xytext=(drawn[-2, h, 1], drawn[-2, h, 0]),
                    arrowprops=dict(arrowstyle="-|>", color=colors[h], lw=1.2, shrinkA=0, shrinkB=0))
        ellipse = gaussian_contour(centers[-1, h], final_precision[h], MASS_LEVELS[0])
        ellipse.set(edgecolor=colors[h], linewidth=0.8, alpha=0.5)
        ax.add_patch(ellipse)
    ax.set_xlabel("column offset Δ₂ (cells)", fontsize=10)
    ax.set_ylabel("row offset Δ₁ (cells)", fontsize=10)
    shown = f", motion ×{magnify:g}" if magnify != 1 else ""
    ax.set_title(f"layer {layer + 1}: epoch {epochs[0]:g} to {epochs[-1]:g}{shown}", fontsize=10)
    enlarge_small_text(fig, column_px=PHONE_COLUMN_PX)  # legible on a phone, where it is shown whole
    fig.tight_layout()
    return fig


def plot_attention_maps(query_maps: np.ndarray, query: Sequence[int], title: str = "") -> Figure:
    """Figs. 5-6: the attention of one query pixel (red square) for every head, one block per layer.

    Each layer's heads fill a block of ``ceil(sqrt(N_h))`` columns, read row by row (head 1 top left); the
    blocks stand side by side, and one colour scale (square root) serves every map.

    Args:
        query_maps: ``(L, N_h, H, W)`` attention probabilities of the query over the token grid.
        query: the query's ``(row, col)``.
    """
    maps = np.asarray(query_maps, dtype=float)
    layers, heads = maps.shape[:2]
    cols = math.ceil(math.sqrt(heads))
    rows = math.ceil(heads / cols)
    norm = PowerNorm(0.5, vmin=0, vmax=float(maps.max()) or 1.0)
    fig = plt.figure(figsize=(2.6 * layers + 0.6, 2.6 * rows / cols + 1.5))
    outer = fig.add_gridspec(2, layers, height_ratios=(12, 1), hspace=0.35, wspace=0.12)
    for layer in range(layers):
        inner = outer[0, layer].subgridspec(rows, cols, wspace=0.06, hspace=0.06)
        for h in range(heads):
            ax = fig.add_subplot(inner[h // cols, h % cols])
            im = ax.imshow(maps[layer, h], cmap="viridis", norm=norm, interpolation="nearest")
            ax.plot(query[1], query[0], "s", mfc="none", mec="red", ms=3, mew=0.8)
            ax.set_xticks([])
            ax.set_yticks([])
            if h == cols // 2:
                ax.set_title(f"layer {layer + 1}", fontsize=11)
    bar = fig.colorbar(im, cax=fig.add_subplot(outer[1, :]), orientation="horizontal")
    bar.set_label("attention weight (square-root scale)", fontsize=11)
    bar.ax.tick_params(labelsize=10)
    if title:
        fig.suptitle(title, fontsize=11)
    enlarge_small_text(fig, column_px=PHONE_COLUMN_PX)  # legible on a phone, where it is shown whole
    return fig


def plot_head_shifts(heads: list[list[dict[str, Any]]] | dict[str, list[list[dict[str, Any]]]],
                     title: str = "") -> Figure:
    """How convolutional each trained head is: the attention mass on its best shift Δ (colour, 1 = one
    convolution tap), with Δ written in each cell; heads are rows, layers columns. ``heads`` is one model's
    ``heads`` record, or a mapping label -> record, drawn side by side with one colour scale."""
    models = heads if isinstance(heads, dict) else {title: heads}
    fig, axes = plt.subplots(1, len(models), figsize=(2.9 * len(models) + 1.2, 4.4), squeeze=False)
    for ax, (label, record) in zip(axes[0], models.items()):
        mass = np.array([[h["mass"] for h in layer] for layer in record]).T  # (N_h, L)
        im = ax.imshow(mass, cmap="Blues", vmin=0, vmax=1, aspect="auto")
        for layer, row in enumerate(record):
            for h, head in enumerate(row):
                ax.text(layer, h, "({},{})".format(*head["shift"]), ha="center", va="center", fontsize=9,
                        color="white" if head["mass"] > 0.6 else "black")
        ax.set_xticks(range(mass.shape[1]), [str(layer + 1) for layer in range(mass.shape[1])])
        ax.set_yticks(range(mass.shape[0]), [str(h + 1) for h in range(mass.shape[0])])
        ax.set_xlabel("layer")
        if label:
            ax.set_title(label, fontsize=10)
    axes[0, 0].set_ylabel("head")
    fig.colorbar(im, ax=axes.ravel().tolist(), shrink=0.8, label="mass on the best shift")
    enlarge_small_text(fig, column_px=PHONE_COLUMN_PX)  # legible on a phone, where it is shown whole
    return fig
