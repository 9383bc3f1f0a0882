"""Explanatory diagrams of Part I and II (ch. 01-03), drawn from the library's own numbers.

Each diagram is narrow (at most 5 inches wide), so that a phone shows it whole at a legible size:

- :func:`plot_conv_as_shift_sum`: a 1-D convolution as the sum of its shifted, weighted copies (ch. 01);
- :func:`plot_attention_weighted_sum`: one query's attention as a weighted sum of the values of every key (ch. 02);
- :func:`plot_heads_to_kernel`: K² heads, each on one shift Δ^(h), carrying the kernel's taps (ch. 03);
- :func:`plot_quadratic_bump`: the quadratic logit as a bump at Δ that sharpens as α grows (ch. 03).
"""

from __future__ import annotations

from typing import Sequence

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.figure import Figure
from torch import Tensor

from ..conv import conv1d_as_shifts, kernel_shifts, shift
from ..positional.quadratic import QuadraticEncoding

__all__ = ["plot_conv_as_shift_sum", "plot_attention_weighted_sum", "plot_heads_to_kernel", "plot_quadratic_bump"]

_FONT = 11  # points; every diagram is at most 5 in (500 px) wide, so this stays >= 9 px in a 352 px column


def _cells(ax, row: float, values: Sequence[float], colors: Sequence[str], fmt: str = "{:g}",
           edge: str = "black") -> None:
    for col, (value, color) in enumerate(zip(values, colors)):
        ax.add_patch(plt.Rectangle((col, row), 1, 1, fc=color, ec=edge, lw=1))
        ax.text(col + 0.5, row + 0.5, fmt.format(value), ha="center", va="center", fontsize=_FONT)


def plot_conv_as_shift_sum(x: Sequence[float], kernel: Sequence[float], query: int) -> Figure:
    """A 1-D 'same' convolution (odd K, padding (K-1)/2) drawn as Σ_Δ w_Δ shift_Δ(x).

    The top row is x; below it one row per tap Δ holds ``shift(x, Δ)`` (zeros shaded where the shift brings in
    padding) and is labelled with its weight w_Δ; the bottom row is their weighted sum, which is the convolution
    (:func:`attnconv.conv1d_as_shifts`). The column of ``query`` is outlined: there, the copy Δ holds x[q + Δ].

    Args:
        x: the signal, ``L`` numbers (shown to 3 significant digits).
        kernel: the K weights w_0 .. w_{K-1}, K odd; tap a reads the shift Δ = a - (K-1)/2.
        query: the position q outlined.
    """
    signal = torch.as_tensor(x, dtype=torch.float64)[None, :, None]  # (B, L, C) = (1, L, 1)
    w = torch.as_tensor(kernel, dtype=torch.float64)
    k, length = w.numel(), signal.shape[1]
    pad = (k - 1) // 2
    taps = [int(delta[0]) for _, delta in kernel_shifts((k,), (1,), (pad,))]
    out = conv1d_as_shifts(signal, w.view(1, 1, k), padding=pad)[0, :, 0]
    rows = len(taps) + 2
    fig, ax = plt.subplots(figsize=(0.4 * length + 1.6, 0.5 * rows + 0.9))
    ax.set_xlim(-2.4, length + 0.1)
    ax.set_ylim(rows + 0.15, -0.9)
    ax.axis("off")
    inside = np.arange(length)
    _cells(ax, 0, signal[0, :, 0].tolist(), ["#dbe9f6"] * length)
    ax.text(-0.2, 0.5, "x", ha="right", va="center", fontsize=_FONT + 1, style="italic")
    for r, (a, delta) in enumerate(zip(range(k), taps), start=1):
        copy = shift(signal, delta)[0, :, 0]
        padded = (inside + delta < 0) | (inside + delta >= length)
        _cells(ax, r, copy.tolist(), ["#d9d9d9" if p else "white" for p in padded])
        ax.text(-0.2, r + 0.5, f"{float(w[a]):g} · shift$_{{{delta:+d}}}$", ha="right", va="center",
                fontsize=_FONT)
    _cells(ax, rows - 1, out.tolist(), ["#fde2c4"] * length)
    ax.text(-0.2, rows - 0.5, r"$\sum_\Delta$ = conv", ha="right", va="center", fontsize=_FONT)
    ax.add_patch(plt.Rectangle((query, 1), 1, len(taps), fill=False, ec="tab:red", lw=2.5))
    for delta in taps:  # the copy Δ holds x[q + Δ] at q
        ax.annotate("", xy=(query + 0.5, taps.index(delta) + 1.15), xytext=(query + delta + 0.5, 0.95),
                    arrowprops=dict(arrowstyle="->", color="tab:red", lw=1.2))
    ax.set_title(f"row Δ: x moved by Δ; at q = {query} (red)\nit holds x[q + Δ]", fontsize=_FONT)
    fig.tight_layout()
    return fig


def plot_attention_weighted_sum(scores: Tensor, values: Tensor, labels: Sequence[str], query: int) -> Figure:
    """One query's attention: logits -> softmax weights a_j -> output Σ_j a_j v_j.

    One row per key j: its logit, its weight ``a_j = softmax(scores)_j`` as a bar, and its value ``v_j`` as a strip
    of colours; the last row is the output of the query, the weighted sum of the value strips.

    Args:
        scores: ``(N,)`` the query's logits over the N keys.
        values: ``(N, D_h)`` the keys' values (a small D_h, such as 3, keeps the strips readable).
        labels: N names for the tokens.
        query: the index of the query token (its row is marked).
    """
    s = torch.as_tensor(scores, dtype=torch.float64).detach()
    v = torch.as_tensor(values, dtype=torch.float64).detach()
    a = torch.softmax(s, dim=0)
    out = a @ v  # (D_h,)
    n, d = v.shape
    vmax = float(v.abs().max())
    fig, ax = plt.subplots(figsize=(4.6, 0.42 * (n + 2) + 0.8))
    ax.set_xlim(-0.3, 6.2 + d)
    ax.set_ylim(n + 1.6, -1.0)
    ax.axis("off")
    cmap = plt.get_cmap("RdBu_r")
    for col, head in ((0.6, "key j"), (1.9, "logit"), (3.7, "weight $a_j$"), (5.4 + d / 2, "value $v_j$")):
        ax.text(col, -0.45, head, ha="center", va="center", fontsize=_FONT, weight="bold")
    for j in range(n):
        y = j + 0.5
        ax.text(0.6, y, labels[j] + (" = q" if j == query else ""), ha="center", va="center",
                fontsize=_FONT, color="tab:red" if j == query else "black")
        ax.text(1.9, y, f"{float(s[j]):.1f}", ha="center", va="center", fontsize=_FONT)
        ax.add_patch(plt.Rectangle((2.7, j + 0.15), 2.0 * float(a[j]), 0.7, fc="tab:purple"))
        ax.text(2.75 + 2.0 * float(a[j]), y, f"{float(a[j]):.2f}", ha="left", va="center", fontsize=_FONT - 1)
        for c in range(d):
            ax.add_patch(plt.Rectangle((5.4 + c, j + 0.1), 1, 0.8, ec="white",
                                       fc=cmap(0.5 + 0.5 * float(v[j, c]) / vmax)))
    ax.plot([0, 5.4 + d], [n + 0.2, n + 0.2], color="black", lw=1)
    ax.text(3.6, n + 0.85, r"output $\sum_j a_j v_j$", ha="center", va="center", fontsize=_FONT)
    for c in range(d):
        ax.add_patch(plt.Rectangle((5.4 + c, n + 0.45), 1, 0.8, ec="black", fc=cmap(0.5 + 0.5 * float(out[c]) / vmax)))
    ax.set_title("softmax turns logits into weights that sum to 1", fontsize=_FONT)
    fig.tight_layout()
    return fig


def plot_heads_to_kernel(kernel: Tensor, window: int = 5, layout: str = "column") -> Figure:
    """Heads -> shifts -> kernel taps, for a K x K one-channel kernel (Theorem 1 at α -> ∞).

    Top: the K² heads on the grid of their shifts; each map is one head's attention from the query q (centre of a
    ``window x window`` patch), all of it on the key q + Δ^(h) (from :class:`QuadraticEncoding` in hard mode).
    Bottom: the kernel w, each tap in the colour of the head that carries it: head h multiplies what it reads by
    W_Δ(h) = w_Δ(h), and the layer sums the heads. ``layout="row"`` puts the kernel beside the heads (a desktop),
    ``"column"`` below them (a phone).
    """
    if layout not in ("row", "column"):
        raise ValueError(f"layout must be 'row' or 'column', got {layout!r}")
    w = torch.as_tensor(kernel, dtype=torch.float64)
    k, c = w.shape[0], window // 2
    shifts = [tuple(int(t) for t in delta) for _, delta in kernel_shifts((k, k), (1, 1), ((k - 1) // 2,) * 2)]
    enc = QuadraticEncoding(len(shifts), centers=[list(map(float, s)) for s in shifts], alpha=None,
                            learnable=False).double()
    with torch.no_grad():
        probs = torch.softmax(enc((window, window)), dim=-1)[:, c * window + c].reshape(-1, window, window)
    colors = [plt.get_cmap("tab10")(i % 10) for i in range(len(shifts))]
    if layout == "column":
        fig = plt.figure(figsize=(4.4, 7.4))
        top, bottom = fig.add_gridspec(2, 1, height_ratios=[1.25, 1], hspace=0.32)
        first = (0.5, 0.955)
    else:
        fig = plt.figure(figsize=(8.4, 3.9))
        top, bottom = fig.add_gridspec(1, 2, width_ratios=[1.15, 1], wspace=0.3, left=0.03, right=0.97,
                                       top=0.8, bottom=0.14)
        first = (0.3, 0.93)
    heads = top.subgridspec(k, k, wspace=0.12, hspace=0.45)
    for h, (dy, dx) in enumerate(shifts):
        ax = fig.add_subplot(heads[dy + k // 2, dx + k // 2])
        rgb = np.ones((window, window, 3))
        rgb[probs[h].numpy() > 0.5] = colors[h][:3]
        ax.imshow(rgb, interpolation="nearest")
        ax.add_patch(plt.Rectangle((c - 0.5, c - 0.5), 1, 1, fill=False, ec="black", lw=1.5, ls="--"))
        ax.set_xticks(np.arange(-0.5, window, 1), minor=True)
        ax.set_yticks(np.arange(-0.5, window, 1), minor=True)
        ax.grid(which="minor", color="#bbbbbb", lw=0.5)
        ax.tick_params(which="both", length=0, labelbottom=False, labelleft=False)
        ax.set_title(f"head {h + 1}: Δ=({dy},{dx})", fontsize=_FONT - 1.5)
    fig.text(*first, "1. each head attends to one shift Δ of q (dashed)", ha="center", fontsize=_FONT)
    ax = fig.add_subplot(bottom)
    ax.set_xlim(-0.5, k - 0.5)
    ax.set_ylim(k - 0.5, -0.5)
    ax.set_aspect("equal")
    for h, (dy, dx) in enumerate(shifts):
        y, x = dy + k // 2, dx + k // 2
        ax.add_patch(plt.Rectangle((x - 0.5, y - 0.5), 1, 1, fc=colors[h], alpha=0.35, ec="black"))
        ax.text(x, y, f"{float(w[y, x]):g}", ha="center", va="center", fontsize=_FONT + 2)
    ax.set_xticks(range(k), [str(i - k // 2) for i in range(k)], fontsize=_FONT)
    ax.set_yticks(range(k), [str(i - k // 2) for i in range(k)], fontsize=_FONT)
    ax.set_xlabel("Δ₂ (columns)", fontsize=_FONT)
    ax.set_ylabel("Δ₁ (rows)", fontsize=_FONT)
    ax.set_title("2. head h carries the tap $w_{\\Delta^{(h)}}$: the kernel", fontsize=_FONT)
    return fig


def plot_quadratic_bump(center: float = 1.0, alphas: Sequence[float] = (0.1, 0.5, 3.0), reach: int = 4) -> Figure:
    """The quadratic logit -α(δ - Δ)² on a line of keys, and the softmax weights it gives, for a few α.

    Top: the logit of :class:`QuadraticEncoding` (its constant α Δ² dropped, as the softmax ignores it), a bump
    whose top is at δ = Δ. Bottom: the attention weights over the offsets δ = -reach..reach from a middle query;
    the larger α, the more of the weight sits on the key at Δ.
    """
    length = 2 * reach + 1
    deltas = np.arange(-reach, reach + 1)
    fine = np.linspace(-reach, reach, 200)
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(4.4, 5.0), sharex=True)
    width = 0.8 / len(alphas)
    for i, alpha in enumerate(alphas):
        enc = QuadraticEncoding(1, centers=[[float(center)]], alpha=float(alpha), learnable=False).double()
        with torch.no_grad():
            probs = torch.softmax(enc((length,)), dim=-1)[0, reach].numpy()  # the middle query's row
        color = plt.get_cmap("viridis")(i / max(len(alphas) - 1, 1) * 0.85)
        top.plot(fine, -alpha * (fine - center) ** 2, color=color, lw=2, label=f"α = {alpha:g}")
        bottom.bar(deltas + (i - (len(alphas) - 1) / 2) * width, probs, width=width, color=color,
                   label=f"α = {alpha:g}")
    top.axvline(center, color="gray", ls="--", lw=1)
    bottom.axvline(center, color="gray", ls="--", lw=1)
    top.set_ylim(-2 * max(alphas), 0.5 * max(alphas) / 3)
    top.set_ylabel(r"logit $-\alpha(\delta-\Delta)^2$", fontsize=_FONT)
    top.set_title(f"a bump centred on Δ = {center:g} (dashed)", fontsize=_FONT)
    top.legend(fontsize=_FONT - 1, loc="lower left")
    bottom.set_ylabel("attention weight", fontsize=_FONT)
    bottom.set_xlabel("key offset δ = j − q", fontsize=_FONT)
    bottom.set_xticks(deltas)
    bottom.set_ylim(0, 1.05)
    for ax in (top, bottom):
        ax.tick_params(labelsize=_FONT - 1)
        ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig
