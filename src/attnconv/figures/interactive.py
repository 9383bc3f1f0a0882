"""The book's kernel-free viewers (:mod:`attnconv.viewer`) and the figures their frames are drawn with.

Each ``*_viewer`` function computes every state of one interactive figure now, so that the static page can show
it with no kernel; the chapters keep a live ``ipywidgets`` version for Jupyter and Colab.
"""

from __future__ import annotations

from typing import Sequence

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.figure import Figure
from torch import Tensor

from ..bounds import off_target_mass_bound
from ..conv import kernel_shifts
from ..positional.quadratic import QuadraticEncoding
from ..positional.sequence import RelativePositionBias
from ..viewer import FrameViewer, HeatmapViewer
from .legibility import PHONE_COLUMN_PX, enlarge_small_text

__all__ = ["theorem1_kernel", "plot_theorem1_heads", "theorem1_viewer", "attention_viewer", "quadratic_query_maps",
           "quadratic_run_viewer", "bias_viewer", "sentence_kernel_viewer"]


def _grid_shifts(kernel_size: int) -> list[tuple[int, int]]:
    pad = (kernel_size - 1) // 2
    return [tuple(int(d) for d in delta) for _, delta in kernel_shifts((kernel_size,) * 2, (1, 1), (pad, pad))]


def theorem1_kernel(alpha: float, kernel: Tensor, window: int = 7) -> tuple[Tensor, Tensor, Tensor]:
    """The kernel that K² quadratic heads apply around a query, against the convolution kernel they imitate.

    Head h is centred on the h-th shift Δ^(h) of the K x K grid, with inverse width α, and weighted by the
    scalar tap w_Δ(h) (a one-channel convolution, so W_Δ = w_Δ). Around the centre query q of a
    ``window x window`` grid the layer then applies the kernel Σ_h w_Δ(h) A^(h)_{q, q+δ} over offsets δ;
    Theorem 1 says it tends to w as α -> ∞.

    Args:
        alpha: α > 0, the same for every head.
        kernel: ``(K, K)`` weights w_Δ, K odd.
        window: side of the grid of keys (odd, larger than K).

    Returns:
        ``probs`` ``(K², window, window)``: each head's attention from q; ``effective`` ``(window, window)``;
        ``target`` ``(window, window)``: w placed around q, zero elsewhere.
    """
    w = torch.as_tensor(kernel, dtype=torch.float64)
    if w.dim() != 2 or w.shape[0] != w.shape[1] or w.shape[0] % 2 == 0:
        raise ValueError(f"kernel must be a square (K, K) tensor with K odd, got shape {tuple(w.shape)}")
    if not isinstance(window, int) or window % 2 == 0 or window <= w.shape[0]:
        raise ValueError(f"window must be an odd int larger than K = {w.shape[0]}, got {window!r}")
    k = w.shape[0]
    shifts = _grid_shifts(k)
    enc = QuadraticEncoding(len(shifts), centers=[list(map(float, s)) for s in shifts], alpha=float(alpha),
                            learnable=False).double()
    c = window // 2
    with torch.no_grad():
        logits = enc((window, window))  # (N_h, N, N)
    probs = torch.softmax(logits, dim=-1)[:, c * window + c].reshape(len(shifts), window, window)
    taps = torch.stack([w[dy + k // 2, dx + k // 2] for dy, dx in shifts])  # (N_h,) weight of each head's shift
    effective = torch.einsum("h,hij->ij", taps, probs)
    target = torch.zeros(window, window, dtype=torch.float64)
    target[c - k // 2:c + k // 2 + 1, c - k // 2:c + k // 2 + 1] = w
    return probs, effective, target


def plot_theorem1_heads(alpha: float, kernel: Tensor, window: int = 7) -> Figure:
    """Theorem 1 as a picture (numbers from :func:`theorem1_kernel`).

    Left, the attention of the centre query, one panel per head, placed on the grid of its shift Δ^(h). Right,
    the kernel the layer applies beside the convolution kernel w. As α grows every head sharpens onto its own
    neighbour and the two kernels agree.
    """
    probs, effective, target = theorem1_kernel(alpha, kernel, window)
    w = torch.as_tensor(kernel, dtype=torch.float64)
    k, c = w.shape[0], window // 2
    shifts = _grid_shifts(k)
    # Two rows, so that the figure stays legible when a phone shrinks it: the heads above, the kernels below.
    fig = plt.figure(figsize=(6.6, 9.2))
    top, bottom = fig.add_gridspec(2, 1, height_ratios=[1.3, 1], hspace=0.28)
    heads = top.subgridspec(k, k + 2, width_ratios=[1] * k + [0.25, 0.12], wspace=0.15, hspace=0.35)
    for h, (dy, dx) in enumerate(shifts):
        ax = fig.add_subplot(heads[dy + k // 2, dx + k // 2])
        im = ax.imshow(probs[h].numpy(), cmap="viridis", vmin=0, vmax=1, interpolation="nearest")
        ax.plot(c, c, "s", mfc="none", mec="red", ms=6)
        ax.set_title(f"Δ = ({dy}, {dx})", fontsize=13)  # sized for a phone: the frame shows at ~0.7 of its width
        ax.set_xticks([])
        ax.set_yticks([])
    head_bar = fig.colorbar(im, cax=fig.add_subplot(heads[:, k + 1]))
    head_bar.set_label("attention $A^{(h)}_{q,j}$", fontsize=13)
    head_bar.ax.tick_params(labelsize=12)
    kernels = bottom.subgridspec(1, 4, width_ratios=[1, 0.15, 1, 0.06], wspace=0.12)
    vmax = float(w.abs().max())
    for col, (data, name) in zip((0, 2), ((effective, r"layer: $\sum_h w_{\Delta^{(h)}} A^{(h)}_{q,q+\delta}$"),
                                          (target, r"convolution kernel $w_\delta$"))):
        ax = fig.add_subplot(kernels[0, col])
        im = ax.imshow(data.numpy(), cmap="RdBu_r", vmin=-vmax, vmax=vmax, interpolation="nearest")
        ax.set_title(name, fontsize=13)
        ax.set_xticks(range(window), [str(i - c) for i in range(window)], fontsize=12)
        ax.set_yticks(range(window), [str(i - c) for i in range(window)], fontsize=12)
        ax.set_xlabel(r"offset $\delta_2$ (columns)", fontsize=13)
        ax.set_ylabel(r"offset $\delta_1$ (rows)", fontsize=13)
    bar = fig.colorbar(im, cax=fig.add_subplot(kernels[0, 3]))
    bar.set_label("weight", fontsize=13)
    bar.ax.tick_params(labelsize=12)
    err = float((effective - target).abs().max())
    fig.suptitle(f"α = {alpha:.3g}: off-target mass per head ≤ ε(α) = {off_target_mass_bound(alpha):.2g}\n"
                 f"largest difference between the two kernels: {err:.2g}", fontsize=14)
    return fig


def theorem1_viewer(kernel: Tensor, alphas: Sequence[float] | None = None, window: int = 7) -> FrameViewer:
    """A slider over α for :func:`plot_theorem1_heads` (default: 13 values from 0.5 to 46, log-spaced)."""
    alphas = [float(a) for a in (np.geomspace(0.5, 46, 13) if alphas is None else alphas)]
    def frame(α):  # read in place on a phone too, so its text is sized for a phone's column
        return enlarge_small_text(plot_theorem1_heads(α, kernel, window), column_px=PHONE_COLUMN_PX, dpi=80)

    return FrameViewer(frame, {"α": alphas},
                       title="Nine heads, one per neighbour, sum to a 3×3 kernel: move α", dpi=80)


def attention_viewer(probs: Tensor, grid: Sequence[int], panels: Sequence[str] | None = None,
                     title: str = "", stride: int = 1, image: Tensor | None = None) -> HeatmapViewer:
    """Pick a query pixel (sliders, or a click on a map) and see every head's attention over the grid.

    Args:
        probs: ``(N_h, N, N)`` attention probabilities of one image, ``N = H * W``.
        grid: ``(H, W)``.
        panels: optional title of each head's panel.
        stride: offer every ``stride``-th row and column as a query, to keep the page small.
        image: optional ``(H', W', 3)`` input image with values in [0, 1], shown beside the maps.
    """
    h, w = grid
    p = probs.detach().to(torch.float64).cpu()
    if p.dim() != 3 or p.shape[1] != h * w or p.shape[2] != h * w:
        raise ValueError(f"probs must be (N_h, H*W, H*W) = (N_h, {h * w}, {h * w}), got {tuple(p.shape)}")
    rows, cols = list(range(0, h, stride)), list(range(0, w, stride))
    maps = p.reshape(-1, h, w, h, w)[:, rows][:, :, cols]  # (N_h, rows, cols, H, W)
    maps = maps.permute(1, 2, 0, 3, 4).numpy()  # (rows, cols, N_h, H, W)
    return HeatmapViewer(maps, {"query row": rows, "query col": cols},
                         panels or [f"head {i}" for i in range(p.shape[0])], title=title,
                         defaults={"query row": rows[len(rows) // 2], "query col": cols[len(cols) // 2]},
                         mark=("query row", "query col"),
                         image=None if image is None else torch.as_tensor(image).detach().double().cpu().numpy())


def quadratic_query_maps(centers, precision, grid: Sequence[int], queries: Sequence[Sequence[int]]) -> Tensor:
    """The content-free attention of Gaussian heads: softmax over keys j of -(δ - Δ)ᵀ Σ⁻¹ (δ - Δ), δ = j - q.

    Args:
        centers: ``(L, N_h, 2)`` centres Δ^(h) of every layer.
        precision: ``(L, N_h, 2, 2)`` precision matrices Σ⁻¹ (α I for an isotropic head).
        grid: ``(H, W)``.
        queries: Q query pixels ``(row, col)``.

    Returns:
        ``(L, Q, N_h, H, W)`` attention probabilities.
    """
    centers = torch.as_tensor(centers, dtype=torch.float64)
    precision = torch.as_tensor(precision, dtype=torch.float64)
    if centers.dim() != 3 or centers.shape[-1] != 2 or precision.shape != centers.shape + (2,):
        raise ValueError(f"centers must be (L, N_h, 2) and precision (L, N_h, 2, 2), got {tuple(centers.shape)} "
                         f"and {tuple(precision.shape)}")
    h, w = grid
    ys, xs = torch.meshgrid(torch.arange(h, dtype=torch.float64), torch.arange(w, dtype=torch.float64),
                            indexing="ij")
    out = []
    for r, c in queries:
        delta = torch.stack([ys - r, xs - c], -1)  # (H, W, 2): key - query
        diff = delta[None, None] - centers[:, :, None, None]  # (L, N_h, H, W, 2)
        logits = -torch.einsum("lhxyi,lhij,lhxyj->lhxy", diff, precision, diff)
        out.append(torch.softmax(logits.flatten(-2), -1).reshape(logits.shape))
    return torch.stack(out, 1)


def quadratic_run_viewer(snapshots: Sequence[dict], grid: Sequence[int] = (16, 16), stride: int = 1,
                         title: str = "") -> HeatmapViewer:
    """Explore a trained quadratic model: training snapshot x layer x query pixel -> the map of every head.

    Args:
        snapshots: records of ``centers.jsonl`` (``centers`` ``(L, N_h, 2)``, ``precision`` ``(L, N_h, 2, 2)``,
            ``epoch``); the attention is content-free, so it is the same for every image.
        grid: the token grid ``(H, W)``.
        stride: offer every ``stride``-th row and column as a query.
    """
    if not snapshots:
        raise ValueError("snapshots must hold at least one record of centers.jsonl")
    h, w = grid
    rows, cols = list(range(0, h, stride)), list(range(0, w, stride))
    queries = [(r, c) for r in rows for c in cols]
    out = []
    for snap in snapshots:
        maps = quadratic_query_maps(snap["centers"], snap["precision"], grid, queries)  # (L, Q, N_h, H, W)
        out.append(maps.reshape(maps.shape[0], len(rows), len(cols), *maps.shape[2:]))  # (L, R, C, N_h, H, W)
    maps = torch.stack(out).numpy()  # (S, L, R, C, N_h, H, W)
    first = torch.as_tensor(snapshots[0]["centers"], dtype=torch.float64)
    moved = [float((torch.as_tensor(s["centers"], dtype=torch.float64) - first).norm(dim=-1).mean()) for s in snapshots]
    # The label says how far the centres have moved, so that a small change reads as a finding, not a broken control.
    epochs = [f"epoch {s['epoch']:g}" + (f": centres moved {m:.2f} cells" if i else " (start)")
              for i, (s, m) in enumerate(zip(snapshots, moved))]
    return HeatmapViewer(maps, {"snapshot": epochs, "layer": list(range(1, maps.shape[1] + 1)), "query row": rows,
                                "query col": cols}, [f"head {i + 1}" for i in range(maps.shape[4])], title=title,
                         defaults={"snapshot": epochs[-1], "query row": rows[len(rows) // 2],
                                   "query col": cols[len(cols) // 2]}, mark=("query row", "query col"))


def bias_viewer(values: Sequence[float] = (-2.0, -1.0, 0.0, 1.0, 2.0), max_distance: int = 2,
                length: int = 12) -> HeatmapViewer:
    """Five sliders b_{-k}..b_k (k = 2) of one head's fixed bias: the kernel softmax(b) and the windowed
    attention matrix softmax_j(b_{j-i}) it induces on ``length`` tokens, for every combination of ``values``."""
    values = [float(v) for v in values]
    taps = 2 * max_distance + 1
    if len(values) ** taps > 20_000:
        raise ValueError(f"{len(values)} values on {taps} sliders give {len(values) ** taps} settings; "
                         "keep it under 20,000")
    grid = torch.tensor(np.array(np.meshgrid(*[values] * taps, indexing="ij")).reshape(taps, -1).T)  # (S, 2k+1)
    module = RelativePositionBias(grid.shape[0], max_distance, window=True).double()
    with torch.no_grad():
        module.weight.copy_(grid)
    with torch.no_grad():
        probs = torch.softmax(module((length,), None, None), dim=-1)  # (S, N, N): one "head" per setting
    kernel = torch.softmax(grid, dim=-1)[:, None, :]  # (S, 1, 2k+1)
    shape = (len(values),) * taps
    sub = str.maketrans("-0123456789", "₋₀₁₂₃₄₅₆₇₈₉")
    names = [f"b{str(d).translate(sub)}" for d in range(-max_distance, max_distance + 1)]
    return HeatmapViewer([kernel.reshape(*shape, 1, taps).numpy(), probs.reshape(*shape, length, length).numpy()],
                         dict.fromkeys(names, values),
                         [f"kernel softmax(b) over δ = {-max_distance}…{max_distance}",
                          "attention: softmax over keys j of b(j − i); query i (rows), key j (columns)"],
                         title="Set the biases b_δ of one head: the kernel and its band follow",
                         col_labels=[[str(d) for d in range(-max_distance, max_distance + 1)],
                                     [str(j) if j % 2 == 0 else "" for j in range(length)]],
                         show_values=[0], cell=None,
                         defaults=dict(zip(names, (-1.0, 0.0, 1.0, 0.0, -1.0)))
                         if max_distance == 2 and {-1.0, 0.0, 1.0} <= set(values) else None)


def sentence_kernel_viewer(runs: dict) -> HeatmapViewer:
    """Pick a model, a layer and a head: the query-dependent kernel each token of the committed sentence applies.

    Args:
        runs: variant -> the run's ``kernels.json`` record (``dynamic`` ``(L, N_h, N, 2k+1)``, ``tokens``,
            ``offsets``); only runs with a dynamic term, all recorded on the same sentence.

    Rows are the sentence's tokens, columns the offsets δ = key − query; taps outside the sentence are 0.
    """
    runs = {name: k for name, k in runs.items() if k and k.get("dynamic") is not None}
    if not runs:
        raise ValueError("runs must hold at least one kernels.json record with dynamic kernels")
    first = next(iter(runs.values()))
    if any(k["tokens"] != first["tokens"] or k["offsets"] != first["offsets"] for k in runs.values()):
        raise ValueError("runs must have recorded their kernels on the same tokens and offsets")
    maps = np.stack([np.nan_to_num(np.array(k["dynamic"], dtype=np.float64)) for k in runs.values()])  # (M, L, H, N, 2k+1)
    offsets = [int(d) for d in first["offsets"]]
    return HeatmapViewer(maps[:, :, :, None], {"model": list(runs), "layer": list(range(1, maps.shape[1] + 1)),
                                                "head": list(range(1, maps.shape[2] + 1))},
                         ["offset δ = key − query; each row is one token's kernel"],
                         title="Each token's kernel over offsets δ: pick a model, a layer and a head",
                         cell=12, row_labels=first["tokens"],
                         col_labels=[str(d) if d % 4 == 0 else "" for d in offsets])
