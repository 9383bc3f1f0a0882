"""The figure of rotary positions in chapter 05: the kernel over offsets of a rotary head whose query and key are the
same at every position (computed by :meth:`attnconv.positional.RotaryEmbedding.kernel_logits`), near the query and
far from it.
"""

from __future__ import annotations

from typing import Mapping

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.figure import Figure
from torch import Tensor

from .legibility import enlarge_small_text

__all__ = ["plot_rotary_kernels"]


def _np(t: Tensor) -> np.ndarray:
    return t.detach().to(torch.float64).cpu().numpy()


def plot_rotary_kernels(near: Mapping[str, Tensor], far: Tensor, far_label: str = "", returns: int | None = None,
                        ncols: int = 2) -> Figure:
    """Kernel logits e(δ) of rotary heads with constant content: several heads near the query, one far from it.

    Args:
        near: label → ``(2r+1,)`` kernel logits for δ = -r .. r, one curve each (left, or top, panel).
        far: ``(L+1,)`` kernel logits of one head for δ = 0 .. L (right, or bottom, panel).
        far_label: what ``far`` is, shown in its panel's title.
        returns: an offset δ > 0 to mark on ``far``, where the kernel comes back close to its value at δ = 0.
        ncols: 2, the panels side by side; 1, stacked (for a phone).

    Raises:
        ValueError: ``ncols`` is not 1 or 2, ``near`` is empty or holds a kernel of even length, or ``returns`` lies
            outside ``far``.
    """
    if ncols not in (1, 2):
        raise ValueError(f"ncols must be 1 or 2, got {ncols!r}")
    if not near or any(v.dim() != 1 or v.numel() % 2 == 0 for v in near.values()):
        raise ValueError("near must map labels to (2r+1,) kernels, at least one")
    if returns is not None and not 0 < returns < far.numel():
        raise ValueError(f"returns must be an offset in 1 .. {far.numel() - 1}, got {returns!r}")
    if ncols == 2:
        fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.6), layout="constrained")
    else:
        fig, (left, right) = plt.subplots(2, 1, figsize=(5.2, 6.8), layout="constrained")
    for label, logits in near.items():
        values = _np(logits)
        r = values.shape[0] // 2
        left.plot(np.arange(-r, r + 1), values, marker=".", markersize=3, linewidth=1, label=label)
    left.axvline(0, color="grey", linewidth=0.6)
    left.set_xlabel(r"offset $\delta = j - i$")
    left.set_ylabel(r"kernel logit $e(\delta)$")
    left.set_title("near the query", fontsize=11)
    left.legend(fontsize=8, loc="best")
    values = _np(far)
    right.plot(np.arange(values.shape[0]), values, linewidth=0.8, color="tab:purple")
    right.axhline(values[0], color="grey", linewidth=0.6, linestyle="--")
    if returns is not None:
        right.plot([returns], [values[returns]], marker="o", color="black")
        right.annotate(rf"$\delta = {returns}$", (returns, values[returns]), textcoords="offset points",
                       xytext=(-8, -14), ha="right", fontsize=9)
    right.set_xlabel(r"offset $\delta$")
    right.set_ylabel(r"kernel logit $e(\delta)$")
    right.set_title("far from the query" + (f": {far_label}" if far_label else ""), fontsize=11)
    enlarge_small_text(fig)
    return fig
