"""Figures of the image chapters (01-04): shifted copies, per-tap weights, attention maps, the α sweep, padding.

Every function returns a ``matplotlib.figure.Figure`` and draws nothing random.
"""

from __future__ import annotations

from typing import Sequence

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.figure import Figure
from torch import Tensor

from ..conv import kernel_shifts, shift

__all__ = [
    "plot_shifted_copies", "plot_weight_matrices", "plot_attention", "plot_error_vs_alpha", "plot_gaussian_head",
    "plot_padding",
]


def _as_image(x: Tensor) -> np.ndarray:
    """``(H, W, C)`` -> an array ``imshow`` draws: RGB scaled to [0, 1], or one channel."""
    x = x.detach().to(torch.float64).cpu()
    lo, hi = x.min(), x.max()
    x = (x - lo) / (hi - lo) if hi > lo else torch.zeros_like(x)
    return (x if x.shape[-1] == 3 else x[..., 0]).numpy()


def plot_shifted_copies(image: Tensor, kernel_size: int, dilation: int = 1, query: Sequence[int] | None = None,
                        radius: int = 4, layout: str = "row") -> Figure:
    """The K² zero-filled shifted copies ``shift(image, Δ)`` that a 'same' K x K convolution reads, zoomed in.

    A one-pixel shift is invisible on a whole thumbnail, so every panel shows the same ``(2 radius + 1)²`` window
    around the query pixel q (red square). Left, the input X with the K x K neighbourhood q + Δ outlined. On the
    grid, the copy for Δ: the pixel inside the red square is X[q + Δ], the neighbour that tap Δ reads.

    Args:
        image: ``(H, W, C)``.
        kernel_size: K, odd, so that the grid is centred on Δ = (0, 0).
        dilation: spacing of the taps.
        query: q, default the centre of the image.
        radius: half-size of the window drawn.
        layout: ``"row"``, X beside the grid of copies (a desktop), or ``"column"``, X above it (a phone).
    """
    if layout not in ("row", "column"):
        raise ValueError(f"layout must be 'row' or 'column', got {layout!r}")
    if kernel_size % 2 == 0:
        raise ValueError(f"kernel_size must be odd so that the grid is centred on Δ = (0, 0), got {kernel_size}")
    h, w = image.shape[:2]
    qy, qx = (h // 2, w // 2) if query is None else (int(query[0]), int(query[1]))
    pad = dilation * (kernel_size - 1) // 2
    window = (slice(max(qy - radius, 0), qy + radius + 1), slice(max(qx - radius, 0), qx + radius + 1))
    oy, ox = qy - window[0].start, qx - window[1].start
    lo, hi = float(image.min()), float(image.max())

    def crop(x: Tensor) -> np.ndarray:
        x = x.detach().to(torch.float64).cpu()
        x = (x - lo) / (hi - lo) if hi > lo else torch.zeros_like(x)
        return (x if x.shape[-1] == 3 else x[..., 0]).numpy()[window]

    if layout == "row":
        fig = plt.figure(figsize=(3.2 + 1.9 * kernel_size, 1.9 * kernel_size), layout="constrained")
        grid = fig.add_gridspec(kernel_size, kernel_size + 1, width_ratios=[kernel_size * 0.9] + [1] * kernel_size)
        ax, cell = fig.add_subplot(grid[:, 0]), lambda r, c: grid[r, c + 1]
    else:  # the input on top, the copies below it: narrow enough for a phone's column
        fig = plt.figure(figsize=(1.5 * kernel_size, 1.5 * kernel_size + 3.4), layout="constrained")
        grid = fig.add_gridspec(kernel_size + 1, kernel_size, height_ratios=[kernel_size * 0.75] + [1] * kernel_size)
        ax, cell = fig.add_subplot(grid[0, :]), lambda r, c: grid[r + 1, c]
    ax.imshow(crop(image), cmap="gray", interpolation="nearest")
    ax.add_patch(plt.Rectangle((ox - pad - 0.5, oy - pad - 0.5), 2 * pad + 1, 2 * pad + 1, fill=False,
                               ec="cyan", lw=2))
    ax.add_patch(plt.Rectangle((ox - 0.5, oy - 0.5), 1, 1, fill=False, ec="red", lw=2))
    ax.set_title("X near q: the taps q + Δ (cyan)", fontsize=11)
    ax.set_xticks([])
    ax.set_yticks([])
    for _, delta in kernel_shifts((kernel_size,) * 2, (dilation,) * 2, (pad,) * 2):
        dy, dx = delta
        ax = fig.add_subplot(cell((dy // dilation) + kernel_size // 2, (dx // dilation) + kernel_size // 2))
        ax.imshow(crop(shift(image, delta)), cmap="gray", interpolation="nearest")
        ax.add_patch(plt.Rectangle((ox - 0.5, oy - 0.5), 1, 1, fill=False, ec="red", lw=1.5))
        ax.set_title(f"Δ = ({dy}, {dx})", fontsize=11)
        ax.set_xticks([])
        ax.set_yticks([])
    fig.suptitle("shift(X, Δ) near the query q (red): the copy Δ holds X[q + Δ] at q" if layout == "row"
                 else "shift(X, Δ) near q (red):\nthe copy Δ holds X[q + Δ] at q", fontsize=12)
    return fig


def plot_weight_matrices(weight: Tensor) -> Figure:
    """The per-shift matrices W_Δ = ``weight[:, :, i, j].T`` (D_in x D_out) of a 2-D kernel, on the kernel grid."""
    w = weight.detach().to(torch.float64).cpu()
    k1, k2 = w.shape[-2:]
    vmax = float(w.abs().max())
    # about 4.6 in wide for a 3 x 3 kernel, with 11 pt text: whole and legible in a phone's 352 px column
    fig, axes = plt.subplots(k1, k2, figsize=(1.25 * k2 + 0.9, 0.95 * k1 + 0.7), squeeze=False)
    for i in range(k1):
        for j in range(k2):
            im = axes[i, j].imshow(w[:, :, i, j].T.numpy(), cmap="RdBu_r", vmin=-vmax, vmax=vmax)
            axes[i, j].set_title(f"tap ({i}, {j})", fontsize=11)
            if i == k1 - 1:
                axes[i, j].set_xlabel("$D_{out}$", fontsize=11)
            if j == 0:
                axes[i, j].set_ylabel("$D_{in}$", fontsize=11)
            axes[i, j].set_xticks([])
            axes[i, j].set_yticks([])
    bar = fig.colorbar(im, ax=axes.ravel().tolist(), shrink=0.8)
    bar.set_label("weight", fontsize=11)
    bar.ax.tick_params(labelsize=11)
    fig.suptitle(r"One $D_{in} \times D_{out}$ matrix $W_\Delta$ per tap", fontsize=12)
    return fig


def plot_attention(probs: Tensor, grid: Sequence[int], query: Sequence[int], image: Tensor | None = None,
                   titles: Sequence[str] | None = None, ncols: int | None = None) -> Figure:
    """Attention of one query pixel over an image grid, one panel per head.

    Args:
        probs: ``(N_h, N, N)`` attention probabilities of one image, ``N = H * W``.
        grid: ``(H, W)``.
        query: the query pixel ``(row, col)``.
        image: optional ``(H', W', C)`` image drawn first, for reference.
        ncols: panels a row (default: all in one row); fewer stack them, for a phone
            (:func:`attnconv.figures.phone.phone_figure`).
    """
    h, w = grid
    q = query[0] * w + query[1]
    maps = probs.detach().to(torch.float64).cpu()[:, q, :].reshape(-1, h, w)
    panels = maps.shape[0] + (image is not None)
    if ncols is not None and (not isinstance(ncols, int) or ncols < 1):
        raise ValueError(f"ncols must be a positive int, got {ncols!r}")
    cols = min(panels, ncols or panels)
    rows = -(-panels // cols)
    fig, grid_axes = plt.subplots(rows, cols, figsize=(2.3 * cols + 0.8, 2.6 * rows), squeeze=False,
                                  layout="constrained")
    axes = list(grid_axes.ravel())
    for ax in axes[panels:]:
        ax.set_visible(False)
    axes = axes[:panels]
    if image is not None:
        ax = axes.pop(0)
        ax.imshow(_as_image(image), interpolation="nearest")
        ax.set_title("input", fontsize=13)
        ax.set_xticks([])
        ax.set_yticks([])
    vmax = float(maps.max()) or 1.0  # one scale for every head, so that their maps can be compared
    for head, ax in enumerate(axes):
        im = ax.imshow(maps[head].numpy(), cmap="viridis", interpolation="nearest", vmin=0, vmax=vmax)
        ax.plot(query[1], query[0], marker="s", mfc="none", mec="red", ms=7)
        ax.set_title(titles[head] if titles else f"head {head}", fontsize=13)
        ax.set_xticks([])
        ax.set_yticks([])
        ax.set_xlabel("key column", fontsize=12)
    offset = int(image is not None)
    for head, ax in enumerate(axes):
        if head == 0 or (head + offset) % cols == 0:  # the first head, and the first panel of every row
            ax.set_ylabel("key row", fontsize=12)
    # labels sized for a 5-panel row shown in a ~780 px column
    bar = fig.colorbar(im, ax=list(grid_axes.ravel()), shrink=0.85 if rows == 1 else 0.6)
    bar.set_label("attention weight", fontsize=12)
    bar.ax.tick_params(labelsize=11)
    return fig


def plot_error_vs_alpha(alphas: Sequence[float], measured: Sequence[float], bound: Sequence[float],
                        floor: float | None = None) -> Figure:
    """Semilog plot of the measured ‖MHSA(X) - Conv(X)‖ against α, with the derived bound drawn over it.

    The legend writes the bound of Proposition 3.1 in its own symbols; the figure is 4.6 in wide, so that a phone
    shows it whole with its text at 9 px or more."""
    fig, ax = plt.subplots(figsize=(4.6, 4.0))
    ax.semilogy(alphas, bound, "--", color="black",
                label=r"bound $2\varepsilon(\alpha)\sum_h \max_j \Vert X_j W_{\Delta^{(h)}}\Vert_2$")
    ax.semilogy(alphas, measured, "o-", color="tab:blue", ms=4,
                label=r"measured $\max_q \Vert \mathrm{MHSA}(X)_q - \mathrm{Conv}(X)_q \Vert_2$")
    if floor is not None:
        ax.axhline(floor, color="tab:red", lw=0.8, label=r"hard attention ($\alpha \to \infty$), same dtype")
    ax.set_xlabel("α (inverse width of every head)", fontsize=11)
    ax.set_ylabel("error", fontsize=11)
    ax.tick_params(labelsize=10)
    ax.legend(fontsize=10, loc="upper center", bbox_to_anchor=(0.5, -0.2), frameon=False)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    return fig


def plot_gaussian_head(probs: Tensor, grid: Sequence[int], query: Sequence[int], center: Sequence[float],
                       title: str = "") -> Figure:
    """One head's attention from one query over a grid, with the query and the head's centre q + Δ marked."""
    h, w = grid
    fig, ax = plt.subplots(figsize=(4.2, 3.4))
    im = ax.imshow(probs.detach().to(torch.float64).cpu().reshape(h, w).numpy(), cmap="magma", vmin=0)
    fig.colorbar(im, ax=ax, shrink=0.85, label="attention weight")
    ax.set_xlabel("key column")
    ax.set_ylabel("key row")
    ax.plot(query[1], query[0], "s", mfc="none", mec="cyan", ms=9, label="query q")
    ax.plot(query[1] + center[1], query[0] + center[0], "+", color="lime", ms=12, mew=2, label="q + Δ")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    return fig


def plot_padding(input_size: Sequence[int], padding: int, kernel_size: int, query: Sequence[int],
                 dilation: int = 1) -> Figure:
    """Pad, attend, crop: the zero-padded canvas, the input on it, and the keys one output pixel's heads read."""
    h, w = input_size
    ph, pw = h + 2 * padding, w + 2 * padding
    canvas = np.zeros((ph, pw))
    canvas[padding:padding + h, padding:padding + w] = 1.0
    fig, ax = plt.subplots(figsize=(4.2, 4.2))
    from matplotlib.colors import ListedColormap

    ax.imshow(canvas, cmap=ListedColormap(["white", "#b4b4b4"]), vmin=0, vmax=1)  # padding white, input grey
    offset = min(padding, dilation * (kernel_size - 1))
    qy, qx = query[0] + offset, query[1] + offset
    for _, (dy, dx) in kernel_shifts((kernel_size,) * 2, (dilation,) * 2, (offset,) * 2):
        y, x = qy + dy, qx + dx
        inside = padding <= y < padding + h and padding <= x < padding + w
        ax.plot(x, y, "o", color="tab:green" if inside else "tab:red", ms=7)
    ax.plot(qx, qy, "s", mfc="none", mec="tab:blue", ms=12, mew=2)
    ax.set_xticks(np.arange(-0.5, pw, 1), minor=True)
    ax.set_yticks(np.arange(-0.5, ph, 1), minor=True)
    ax.grid(which="minor", color="#8c8c8c", lw=0.5)
    ax.tick_params(which="both", length=0, labelbottom=False, labelleft=False)
    ax.set_title("canvas: input (grey), zero padding (white)\n"
                 "keys read: green on the image, red on\nthe padding; blue square: the query", fontsize=11)
    fig.tight_layout()
    return fig
