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
from .legibility import enlarge_small_text

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
    fig, axes = plt.subplots(1, copies + 1, figsize=(1.4 * (copies + 1), 1.7))
    for i, (ax, pixels) in enumerate(zip(axes, shown)):
        ax.imshow(pixels.numpy(), interpolation="nearest")
        ax.set_title("original" if i == 0 else f"copy {i}", fontsize=7)
        ax.set_xticks([])
        ax.set_yticks([])
    enlarge_small_text(fig)  # legible where the book's column shows it scaled down
    fig.tight_layout()
    return fig


def plot_accuracy(histories: dict[str, list[dict[str, Any]]], metric: str = "test_acc") -> Figure:
    """Test accuracy against epochs (left) and against wall-clock time (right), one line per model."""
    fig, (by_epoch, by_time) = plt.subplots(1, 2, figsize=(10, 3.6), sharey=True)
    for label, history in histories.items():
        epochs = [0] + [r["epoch"] for r in history]
        minutes = [0] + [r["wall_time_s"] / 60 for r in history]
        values = [math.nan] + [100 * r[metric] for r in history]
        by_epoch.plot(epochs[1:], values[1:], "o-", ms=4, label=label)
        by_time.plot(minutes[1:], values[1:], "o-", ms=4, label=label)
    by_epoch.set_xlabel("epoch")
    by_time.set_xlabel("wall-clock time (minutes)")
    by_epoch.set_ylabel("test accuracy (%)")
    for ax in (by_epoch, by_time):
        ax.grid(True, alpha=0.3)
    by_epoch.legend(fontsize=8)
    enlarge_small_text(fig)  # legible where the book's column shows it scaled down
    fig.tight_layout()
    return fig


def _centre_axes(ax, extent: float) -> None:
    ax.plot(0, 0, "s", mfc="none", mec="black", ms=8)
    ax.set_xlim(-extent, extent)
    ax.set_ylim(extent, -extent)  # rows grow downwards
    ax.set_aspect("equal")
    ax.set_xticks(range(-int(extent), int(extent) + 1, max(1, int(extent) // 2)))
    ax.set_yticks(range(-int(extent), int(extent) + 1, max(1, int(extent) // 2)))
    ax.tick_params(labelsize=7)
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
    fig, axes = plt.subplots(1, layers, figsize=(2.6 * layers, 2.9), squeeze=False)
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
    axes[0, 0].set_ylabel("row offset Δ₁", fontsize=10)
    fig.suptitle(title or f"attention centres after epoch {snapshot['epoch']:g} (solid 50%, dotted 90% of the mass)",
                 fontsize=9)
    fig.tight_layout()
    return fig


def plot_center_trajectories(snapshots: list[dict[str, Any]], layer: int, extent: float = 6.0) -> Figure:
    """Fig. 3: the centres of one layer's heads over training, from the start (light) to the end (dark), with
    the final 50% contours."""
    centers = np.asarray([s["centers"][layer] for s in snapshots], dtype=float)  # (T, N_h, 2)
    final_precision = np.asarray(snapshots[-1]["precision"][layer], dtype=float)
    epochs = [s["epoch"] for s in snapshots]
    heads = centers.shape[1]
    colors = plt.get_cmap("tab10")(np.arange(heads) % 10)
    fig, ax = plt.subplots(figsize=(4.6, 4.2))
    _centre_axes(ax, extent)
    shade = np.linspace(0.15, 1.0, len(snapshots))
    for h in range(heads):
        ax.plot(centers[:, h, 1], centers[:, h, 0], "-", color=colors[h], lw=0.8, alpha=0.6)
        ax.scatter(centers[:, h, 1], centers[:, h, 0], s=12, color=colors[h], alpha=shade, linewidths=0)
        ellipse = gaussian_contour(centers[-1, h], final_precision[h], MASS_LEVELS[0])
        ellipse.set(edgecolor=colors[h], linewidth=1.0)
        ax.add_patch(ellipse)
    ax.set_title(f"layer {layer + 1}: centres from epoch {epochs[0]:g} to {epochs[-1]:g}", fontsize=9)
    fig.tight_layout()
    return fig


def plot_attention_maps(query_maps: np.ndarray, query: Sequence[int], title: str = "") -> Figure:
    """Figs. 5-6: the attention of one query pixel (red square), per layer (rows) and head (columns).

    Args:
        query_maps: ``(L, N_h, H, W)`` attention probabilities of the query over the token grid.
        query: the query's ``(row, col)``.
    """
    maps = np.asarray(query_maps, dtype=float)
    layers, heads = maps.shape[:2]
    # One scale for every map, so that heads can be compared; square-root, so that diffuse heads stay visible.
    norm = PowerNorm(0.5, vmin=0, vmax=float(maps.max()) or 1.0)
    fig, axes = plt.subplots(layers, heads, figsize=(1.35 * heads + 1.0, 1.4 * layers + 0.6), squeeze=False,
                             layout="constrained")
    for layer in range(layers):
        for h in range(heads):
            ax = axes[layer, h]
            im = ax.imshow(maps[layer, h], cmap="viridis", norm=norm, interpolation="nearest")
            ax.plot(query[1], query[0], "s", mfc="none", mec="red", ms=4, mew=0.8)
            ax.set_xticks([])
            ax.set_yticks([])
            if layer == 0:
                ax.set_title(f"head {h + 1}", fontsize=14)
            if h == 0:
                ax.set_ylabel(f"layer {layer + 1}\nkey row", fontsize=14)
            if layer == layers - 1:
                ax.set_xlabel("key column", fontsize=13)
    # Text sized for nine heads a row shown in a ~780 px book column (about 0.6 of the figure's own width).
    bar = fig.colorbar(im, ax=axes.ravel().tolist(), shrink=0.8)
    bar.set_label("attention weight (square-root scale)", fontsize=14)
    bar.ax.tick_params(labelsize=13)
    if title:
        fig.suptitle(title, fontsize=16)
    return fig


def plot_head_shifts(heads: list[list[dict[str, Any]]], title: str = "") -> Figure:
    """How convolutional each trained head is: the attention mass on its best shift Δ (colour, 1 = one
    convolution tap), with Δ written in each cell."""
    mass = np.array([[h["mass"] for h in layer] for layer in heads])
    fig, ax = plt.subplots(figsize=(0.75 * mass.shape[1] + 1.6, 0.55 * mass.shape[0] + 1.0))
    im = ax.imshow(mass, cmap="Blues", vmin=0, vmax=1)
    for layer, row in enumerate(heads):
        for h, head in enumerate(row):
            ax.text(h, layer, "({},{})".format(*head["shift"]), ha="center", va="center", fontsize=8,
                    color="white" if head["mass"] > 0.6 else "black")
    ax.set_xticks(range(mass.shape[1]), [str(h + 1) for h in range(mass.shape[1])], fontsize=10)
    ax.set_yticks(range(mass.shape[0]), [str(layer + 1) for layer in range(mass.shape[0])], fontsize=10)
    ax.set_xlabel("head")
    ax.set_ylabel("layer")
    fig.colorbar(im, ax=ax, shrink=0.8, label="mass on the best shift")
    if title:
        ax.set_title(title, fontsize=9)
    fig.tight_layout()
    return fig
