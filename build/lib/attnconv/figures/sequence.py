"""Figures of the sequence chapter (05): kernels beside the attention they induce, dynamic kernels, the boundary,
the logit terms of composite attention, and the benchmark. Every function returns a ``matplotlib`` Figure.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.figure import Figure
from torch import Tensor

from ..taps import tap_mask
from ..positional.sequence import RelativePositionBias
from .legibility import BOOK_COLUMN_PX, PHONE_COLUMN_PX, enlarge_small_text

__all__ = ["plot_kernel_and_attention", "plot_bias_widget_frame", "plot_dynamic_kernels", "plot_boundary_effect",
           "plot_kernel_terms", "plot_relative_attention_benchmark"]


def _np(t: Tensor) -> np.ndarray:
    return t.detach().to(torch.float64).cpu().numpy()


def _label_tokens(ax, words: Sequence[str] | None, n: int, axes: str = "xy") -> None:
    if words is None:
        return
    labels = list(words)[:n]
    if "x" in axes:
        ax.set_xticks(range(n), labels, rotation=90, fontsize=7)
    if "y" in axes:
        ax.set_yticks(range(n), labels, fontsize=7)


def plot_kernel_and_attention(kernel: Tensor, probs: Tensor, words: Sequence[str] | None = None,
                              title: str = "", ncols: int = 2) -> Figure:
    """A lightweight-convolution kernel beside the attention matrix it induces (a Toeplitz band).

    Args:
        kernel: ``(2k+1,)`` weights β_δ, δ = -k..k.
        probs: ``(N, N)`` attention probabilities (rows: queries, columns: keys).
        words: optional tokens, used as tick labels.
        ncols: 2, side by side; 1, the kernel above the matrix (for a phone).
    """
    if ncols not in (1, 2):
        raise ValueError(f"ncols must be 1 or 2, got {ncols!r}")
    beta, attn = _np(kernel), _np(probs)
    k = beta.shape[0] // 2
    if ncols == 2:
        fig, (left, right) = plt.subplots(1, 2, figsize=(10, 5.2), gridspec_kw={"width_ratios": [1, 1.3]},
                                          layout="constrained")
    else:
        fig, (left, right) = plt.subplots(2, 1, figsize=(5.2, 9.5), gridspec_kw={"height_ratios": [1, 2]},
                                          layout="constrained")
    left.bar(np.arange(-k, k + 1), beta, color="tab:blue")
    left.set_xlabel(r"offset $\delta = j - i$ (key − query)")
    left.set_ylabel(r"$\beta_\delta$")
    left.set_title(r"kernel $\beta = \mathrm{softmax}(b)$", fontsize=11)
    im = right.imshow(attn, cmap="viridis", vmin=0, interpolation="nearest")
    right.set_xlabel("key $j$")
    right.set_ylabel("query $i$")
    right.set_title(r"attention $A_{ij} = \mathrm{softmax}_j(b_{j-i})$", fontsize=11)
    _label_tokens(right, words, attn.shape[0])
    fig.colorbar(im, ax=right, shrink=0.8)
    if title:
        fig.suptitle(title, fontsize=11)
    enlarge_small_text(fig)  # legible where the book's column shows it scaled down; the layout makes room for it
    return fig


def plot_bias_widget_frame(bias: Sequence[float], length: int = 12) -> Figure:
    """One frame of the chapter's widget: the bias values b_{-k..k} of one head, the kernel softmax(b) and the
    windowed attention matrix they give on a sequence of ``length`` tokens."""
    values = torch.as_tensor(list(bias), dtype=torch.float64)
    module = RelativePositionBias(1, values.numel() // 2, window=True).double()
    with torch.no_grad():
        module.weight.copy_(values[None])
    probs = torch.softmax(module((length,), None, None), dim=-1)[0]
    return plot_kernel_and_attention(torch.softmax(values, 0), probs, title="edit b: the band follows")


def plot_dynamic_kernels(band: Tensor, words: Sequence[str] | None = None, title: str = "") -> Figure:
    """Per-token kernels β_i of a dynamic convolution, one row per token.

    Args:
        band: ``(N, 2k+1)`` kernels (query frame), -inf or NaN where a tap has no token.
    """
    beta = _np(torch.nan_to_num(band, nan=0.0, neginf=0.0))
    n, width = beta.shape
    k = width // 2
    fig, ax = plt.subplots(figsize=(0.45 * width + 2.5, 0.28 * n + 1.5))
    im = ax.imshow(beta, cmap="magma", vmin=0, aspect="auto", interpolation="nearest")
    ax.set_xticks(range(width), [str(d) for d in range(-k, k + 1)], fontsize=7)
    ax.set_xlabel("offset δ")
    ax.set_ylabel("token i")
    _label_tokens(ax, words, n, axes="y")
    ax.set_title(title or r"kernel $\beta_i$, predicted from each token", fontsize=10)
    fig.colorbar(im, ax=ax, shrink=0.8)
    enlarge_small_text(fig, column_px=PHONE_COLUMN_PX)  # one panel, small enough to be read whole on a phone
    fig.tight_layout()
    return fig


def plot_boundary_effect(kernel: Tensor, length: int = 16, width: float = 7.5) -> Figure:
    """Why the equivalence holds only in the interior: on a constant sequence x_i = 1, attention (which
    renormalises) returns 1 everywhere, while the zero-padded convolution returns the kernel mass that stays
    inside the sequence, Σ_{δ: 0 ≤ i+δ < N} β_δ < 1 near the edges.

    Args:
        kernel: ``(2k+1,)`` weights β_δ summing to 1.
        length: N.
        width: the figure's width in inches (about 4.5 for a phone).
    """
    beta = kernel.detach().to(torch.float64).cpu()
    dead = tap_mask(length, beta.numel())[0, 0]  # (N, 2k+1)
    kept = beta.masked_fill(dead, 0.0).sum(-1)
    k = beta.numel() // 2
    fig, ax = plt.subplots(figsize=(width, 3.2 if width >= 6 else 3.8))
    positions = np.arange(length)
    ax.axvspan(-0.5, k - 0.5, color="0.9")
    ax.axvspan(length - k - 0.5, length - 0.5, color="0.9", label="boundary (within k of an edge)")
    ax.plot(positions, np.ones(length), "o-", label="attention (renormalised)")
    ax.plot(positions, kept.numpy(), "s--", label="zero-padded lightweight conv")
    ax.set_xlabel("position i")
    ax.set_ylabel("output on x ≡ 1")
    ax.set_ylim(0, 1.1)
    ax.legend(fontsize=8, loc="lower center")
    ax.set_title("The two agree in the interior and differ within k of each edge" if width >= 6 else
                 "Equal inside, different within k of an edge", fontsize=10)
    enlarge_small_text(fig, column_px=BOOK_COLUMN_PX if width >= 6 else PHONE_COLUMN_PX)
    fig.tight_layout()
    return fig


# Panel titles in the papers' notation for the logit terms of composite attention, by term (class) name.
TERM_TITLES = {
    "content": r"content $q_i \cdot X_j W_{key} / \sqrt{D_h}$",
    "RelativePositionBias": r"fixed $b_\delta$",
    "QueryRelativeLogits": r"query-dependent $q_i \cdot a_\delta / \sqrt{D_h}$",
    "KeyRelativeLogits": r"key-dependent $X_j W_{key} \cdot c_\delta / \sqrt{D_h}$",
}


def plot_kernel_terms(kernels: Mapping[str, Tensor], probs: Tensor, query: int, radius: int,
                      ncols: int = 3) -> Figure:
    """Composite attention for one query: the kernel of each logit term over offsets, and the softmax of their sum.

    Args:
        kernels: term name -> ``(2r+1,)`` logits of that term for this query (NaN where no key exists). Class
            names of the terms are titled with their formula (``TERM_TITLES``).
        probs: ``(2r+1,)`` the attention of the query over the same offsets.
        query: i, for the title.
        radius: r.
        ncols: panels a row: three, so that a book column shows the figure near its own size; two on a phone.
    """
    offsets = np.arange(-radius, radius + 1)
    names = list(kernels)
    cols = min(ncols, len(names) + 1)
    rows = -(-(len(names) + 1) // cols)
    fig, grid = plt.subplots(rows, cols, figsize=(2.9 * cols, 3.2 * rows), squeeze=False)
    axes = list(grid.ravel())
    for ax in axes[len(names) + 1:]:
        ax.set_visible(False)
    axes = axes[:len(names) + 1]
    for ax, name in zip(axes, names):
        ax.bar(offsets, _np(kernels[name]), color="tab:gray")
        ax.set_title(TERM_TITLES.get(name, name), fontsize=12)
        ax.set_xlabel("offset δ = j − i", fontsize=11)
        ax.tick_params(labelsize=10)
    axes[0].set_ylabel("logit", fontsize=11)
    axes[-1].bar(offsets, _np(probs), color="tab:blue")
    axes[-1].set_title(r"attention: softmax of the sum", fontsize=12)
    axes[-1].set_xlabel("offset δ = j − i", fontsize=11)
    axes[-1].set_ylabel("probability", fontsize=11)
    axes[-1].tick_params(labelsize=10)
    fig.suptitle(f"query token i = {query}: every logit term is a kernel over offsets δ" if cols > 2 else
                 f"query i = {query}: each term is a kernel over δ", fontsize=13)
    fig.tight_layout()
    return fig


def plot_relative_attention_benchmark(rows: Sequence[Mapping[str, float]], ncols: int = 2) -> Figure:
    """Forward + backward time and peak memory of the naive (repeated index) and band implementations against N.

    Args:
        rows: the ``rows`` of ``results/benchmarks/relative_attention.json``.
    """
    n = [r["N"] for r in rows]
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.2)) if ncols >= 2 else plt.subplots(2, 1, figsize=(4.6, 6.4))
    for ax, key, label in ((axes[0], "ms", "time per step (ms)"), (axes[1], "peak_mib", "peak memory (MiB)")):
        ax.plot(n, [r[f"naive_{key}"] for r in rows], "o--", label=r"repeated $(B, N_h, N, N)$ index")
        ax.plot(n, [r[f"attnconv_{key}"] for r in rows], "s-", label="band + shared index (attnconv)")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("sequence length $N$")
        ax.set_ylabel(label)
    axes[0].legend(fontsize=8)
    fig.suptitle("Composite relative attention, forward + backward", fontsize=10)
    if ncols < 2:
        enlarge_small_text(fig, column_px=PHONE_COLUMN_PX)
    fig.tight_layout()
    return fig
