"""The reader's own run drawn beside the committed ones (chapters 06 and 07's "train it yourself" sections).

Each function reads run folders only, so it draws a run the reader trained a minute ago, one kept on a Drive
folder from an earlier session, or one trained on a GPU, with the same code as the committed records.
"""

from __future__ import annotations

import os
from pathlib import Path

from matplotlib.figure import Figure

from .bert_runs import plot_pretraining_curves
from .reach import plot_reach
from .vision_runs import plot_accuracy, plot_centers

__all__ = ["COMMITTED_BERT", "COMMITTED_VISION", "plot_my_pretraining", "plot_my_vision_run"]

#: The committed vision runs drawn beside the reader's: label -> folder under ``results/``.
COMMITTED_VISION = {"committed cpu-quick sa-quadratic": "cpu-quick-sa-quadratic",
                    "committed cpu-long sa-quadratic": "cpu-long-sa-quadratic"}
#: The committed pretraining runs drawn beside the reader's.
COMMITTED_BERT = {"committed cpu-quick absolute": "bert-cpu-quick-absolute",
                  "committed cpu-quick composite": "bert-cpu-quick-composite"}


def _label(folder: Path) -> str:
    return f"your run ({folder.name})"


def _check_run(folder: str | os.PathLike, what: str) -> Path:
    path = Path(folder)
    if not (path / "metrics.jsonl").is_file():
        raise FileNotFoundError(f"{what} must be a run folder holding metrics.jsonl, got {str(path)!r}")
    return path


def plot_my_vision_run(mine: str | os.PathLike, results: str | os.PathLike) -> dict[str, Figure]:
    """The chapter 06 figures with the reader's run ``mine`` beside the committed runs under ``results``.

    Returns ``{"accuracy": ..., "centers": ..., "reach": ...}``: test accuracy by epoch and by wall time; the
    reader's heads' centres at the end of training; and the mean attention distance per layer, start and end, of
    the reader's run beside ``cpu-long``. The last two only for a Gaussian attention model (``centers.jsonl``).

    Raises:
        FileNotFoundError: ``mine`` or a committed folder is not a run folder.
    """
    from ..reach import folder_reach
    from ..train.runs import read_jsonl

    mine, results = _check_run(mine, "mine"), Path(results)
    committed = {label: _check_run(results / name, "a committed run") for label, name in COMMITTED_VISION.items()}
    histories = {label: read_jsonl(folder / "metrics.jsonl") for label, folder in committed.items()}
    histories[_label(mine)] = read_jsonl(mine / "metrics.jsonl")
    figures = {"accuracy": plot_accuracy(histories)}
    if (mine / "centers.jsonl").is_file():
        figures["centers"] = plot_centers(read_jsonl(mine / "centers.jsonl")[-1], title=_label(mine))
        reach = {"committed cpu-long": folder_reach(committed["committed cpu-long sa-quadratic"]),
                 _label(mine): folder_reach(mine)}
        figures["reach"] = plot_reach(reach)
    return figures


def plot_my_pretraining(mine: str | os.PathLike, results: str | os.PathLike) -> Figure:
    """Chapter 07's pretraining learning curve (validation masked-LM loss by step) of the reader's run ``mine``
    beside the committed cpu-quick runs.

    Raises:
        FileNotFoundError: ``mine`` or a committed folder is not a run folder.
    """
    from ..train.runs import read_jsonl

    mine, results = _check_run(mine, "mine"), Path(results)
    histories = {label: read_jsonl(_check_run(results / name, "a committed run") / "metrics.jsonl")
                 for label, name in COMMITTED_BERT.items()}
    histories[_label(mine)] = [r for r in read_jsonl(mine / "metrics.jsonl") if "val_loss" in r]
    return plot_pretraining_curves(histories)
