"""Learning curves of any set of vision runs: test accuracy and training loss by epoch, and test accuracy by
wall-clock minutes, one line per run folder.

The curves are :class:`attnconv.train.epoch_curves.Curve` records (``read_curve(folder)``), so a run still training
is drawn as far as it got. Colour names the model and line style the config, so that the same model trained on
two budgets reads as one colour. A finished run also gets a star at its last epoch: its accuracy on all 10,000
test images (``final.json``), beside the per-epoch accuracy on the run's smaller test subset.
"""

from __future__ import annotations

from typing import Sequence

import matplotlib.pyplot as plt
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import FuncFormatter, MaxNLocator

from ..train.epoch_curves import Curve
from .legibility import PHONE_COLUMN_PX, enlarge_small_text

__all__ = ["MODEL_COLORS", "PANELS", "plot_learning_curves"]

#: One colour per model, the same in every figure of runs.
MODEL_COLORS = {"resnet18": "tab:gray", "sa-quadratic": "tab:blue", "sa-learned": "tab:orange",
                "sa-anisotropic": "tab:green", "sa-content": "tab:red", "sa-learned-content": "tab:purple"}
_STYLES = ("-", "--", ":", "-.")
#: The three panels in drawing order, each (x field of the curve, y field, x label, y label).
PANELS = (("epoch", "test_acc", "epoch", "test accuracy (%)"),
          ("epoch", "train_loss", "epoch", "training loss"),
          ("minutes", "test_acc", "wall-clock time (minutes, log scale)", "test accuracy (%)"))


def _label(curve: Curve) -> str:
    if curve.model and curve.config:
        return f"{curve.model}, {curve.config}"
    return curve.name


def plot_learning_curves(curves: Sequence[Curve], ncols: int = 3) -> Figure:
    """Three panels (``PANELS``): test accuracy by epoch, training loss by epoch, test accuracy by wall time.

    Args:
        curves: the runs, each a ``Curve`` with ``E`` epochs (arrays of shape ``(E,)``); drawn in this order, and
            the first config met gets the solid line.
        ncols: panels a row: 3 (a desktop) or 1 (a phone: stacked).

    Every line carries its run folder's name as ``gid`` (``"<name>/<y field>"``) and a star for the full test
    accuracy ``"<name>/full_test_acc"``, so that a check can find the drawn data again.

    Raises:
        ValueError: ``curves`` is empty, holds something that is not a ``Curve``, or ``ncols`` is not 1 or 3.
    """
    curves = list(curves)
    if not curves or not all(isinstance(c, Curve) for c in curves):
        raise ValueError("curves must be a non-empty sequence of Curve records "
                         "(attnconv.train.epoch_curves.read_curve)")
    if ncols not in (1, 3):
        raise ValueError(f"ncols must be 3 (panels in a row) or 1 (stacked), got {ncols!r}")
    configs = list(dict.fromkeys(c.config for c in curves))
    cycle = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    fig, axes = plt.subplots(3 // ncols, ncols, figsize=(10.5, 3.6) if ncols == 3 else (5.5, 9.6), squeeze=False)
    axes = axes.ravel()
    for i, curve in enumerate(curves):
        color = MODEL_COLORS.get(curve.model or "", cycle[i % len(cycle)])
        style = _STYLES[configs.index(curve.config) % len(_STYLES)]
        for ax, (x, y, _, _) in zip(axes, PANELS):
            values = getattr(curve, y) * (100 if y == "test_acc" else 1)
            ax.plot(getattr(curve, x), values, style, marker="o", ms=3, lw=1.6, color=color, gid=f"{curve.name}/{y}",
                    label=_label(curve))
            if y == "test_acc" and curve.finished and "full_test_acc" in curve.final:
                ax.plot(getattr(curve, x)[-1], 100 * curve.final["full_test_acc"], "*", ms=11, color=color,
                        mec="black", mew=0.6, gid=f"{curve.name}/full_test_acc", zorder=3)
    for ax, (_, _, xlabel, ylabel) in zip(axes, PANELS):
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.grid(True, alpha=0.3)
        if xlabel == "epoch":
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        else:
            ax.set_xscale("log")
            ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    handles = [line for line in axes[0].lines if not line.get_gid().endswith("full_test_acc")]
    star = Line2D([], [], ls="none", marker="*", ms=11, color="white", mec="black", mew=0.6)
    fig.legend(handles + [star], [h.get_label() for h in handles] + ["all 10,000 test images, at the end"],
               loc="lower center", ncol=3 if ncols == 3 else 2, fontsize=9, frameon=False)
    enlarge_small_text(fig, column_px=PHONE_COLUMN_PX if ncols == 1 else 768)
    rows = (len(handles) + 1 + (2 if ncols == 3 else 1)) // (3 if ncols == 3 else 2)  # legend rows
    fig.tight_layout(rect=(0, 0.062 * rows * (3.6 / fig.get_size_inches()[1]), 1, 1))
    return fig
