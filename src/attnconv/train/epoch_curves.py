"""Learning curves by epoch, read back from vision run folders, and where each curve is heading at its last epoch.

A vision run folder (:mod:`attnconv.train.runs`) gains one line of ``metrics.jsonl`` per epoch; ``final.json`` and
``provenance.json`` appear only when the run finishes. :func:`read_curve` reads whatever is there, so a run that
is still training draws as far as it got, and a run trained again into the same folder is drawn anew.
:func:`curve_trend` sums up how a curve ends: its last value, how much it gained over its last epochs, and the
sampling noise of a test accuracy measured on ``n`` images, against which to judge a gain.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .runs import FINAL_FILE, METRICS_FILE, PROVENANCE_FILE, read_jsonl

__all__ = ["CURVE_KEYS", "Curve", "curve_trend", "read_curve", "run_budget"]

#: The fields of a ``metrics.jsonl`` record that a curve needs.
CURVE_KEYS = ("epoch", "lr", "train_loss", "train_acc", "test_acc", "wall_time_s")


@dataclass(frozen=True)
class Curve:
    """One run's learning curve: ``E`` epochs, each array of shape ``(E,)``.

    Attributes:
        name: the run folder's name (``"cpu-long-sa-quadratic"``).
        model: the model's name (``"sa-quadratic"``), or ``None`` for a run without ``final.json`` or
            ``provenance.json`` yet.
        config: the named config it ran (``"cpu-long"``), or ``None`` likewise.
        epoch: the epoch numbers, 1 to ``E``.
        lr: the learning rate at the end of each epoch.
        train_loss: the mean loss over the epoch's (augmented) training batches.
        train_acc: the accuracy over the same batches.
        test_acc: after each epoch, on the run's per-epoch test images (``provenance["test_images"]``).
        minutes: wall-clock time since the run started, at the end of each epoch.
        final: ``final.json`` (``full_test_acc`` on all 10,000 test images), or ``None`` while it trains.
        provenance: ``provenance.json``, or ``None`` while it trains.
    """

    name: str
    model: str | None
    config: str | None
    epoch: np.ndarray
    lr: np.ndarray
    train_loss: np.ndarray
    train_acc: np.ndarray
    test_acc: np.ndarray
    minutes: np.ndarray
    final: dict[str, Any] | None
    provenance: dict[str, Any] | None

    @property
    def finished(self) -> bool:
        return self.final is not None

    @property
    def test_images(self) -> int | None:
        """How many test images each epoch's ``test_acc`` counts (``None`` if not recorded yet)."""
        return None if self.provenance is None else self.provenance.get("test_images")


def _json(path: Path) -> Any:
    return json.loads(path.read_text()) if path.is_file() else None


def read_curve(folder: str | os.PathLike) -> Curve:
    """The learning curve of the run in ``folder``, finished or not.

    Raises:
        FileNotFoundError: ``folder`` holds no ``metrics.jsonl``, or an empty one (no epoch finished yet).
        ValueError: a record lacks one of :data:`CURVE_KEYS`, or the epochs are not 1, 2, 3, ...
    """
    folder = Path(folder)
    records = read_jsonl(folder / METRICS_FILE)
    if not records:
        raise FileNotFoundError(f"folder must be a run folder with at least one epoch in {METRICS_FILE}, "
                                f"got {str(folder)!r}")
    for i, record in enumerate(records):
        missing = [k for k in CURVE_KEYS if k not in record]
        if missing:
            raise ValueError(f"{folder / METRICS_FILE}: record {i} lacks {missing}")
    epochs = [r["epoch"] for r in records]
    if epochs != list(range(1, len(records) + 1)):
        raise ValueError(f"{folder / METRICS_FILE}: epochs must run 1, 2, 3, ..., got {epochs}")
    final, provenance = _json(folder / FINAL_FILE), _json(folder / PROVENANCE_FILE)
    config = (provenance or {}).get("config", {})
    model = (final or {}).get("model") or config.get("model")
    name = (final or {}).get("config") or config.get("name")
    column = {k: np.array([r[k] for r in records], dtype=float) for k in CURVE_KEYS}
    return Curve(folder.name, model, name, column["epoch"].astype(int), column["lr"], column["train_loss"],
                 column["train_acc"], column["test_acc"], column["wall_time_s"] / 60, final, provenance)


def curve_trend(curve: Curve, last: int = 3) -> dict[str, Any]:
    """How ``curve`` ends, over its last ``last`` epochs (fewer when it has fewer).

    Returns a dict of plain numbers (accuracies as fractions, losses in nats):

    - ``epochs``: how many epochs it has; ``window``: the epochs compared (``last``, or fewer);
    - ``test_acc``: the last epoch's test accuracy; ``gain``: its change over the window (from the epoch before the
      window to the last); ``last_gain``: its change in the last epoch alone;
    - ``train_loss``: the last training loss; ``loss_drop``: its fall over the window, as a fraction of its value
      before the window;
    - ``lr_before``: the learning rate at the end of the epoch before the window; ``lr``: at the last epoch;
    - ``train_acc``: the last epoch's training accuracy (augmented images), beside ``test_acc``;
    - ``noise``: one standard error of a test accuracy near ``test_acc`` measured on ``curve.test_images`` images,
      sqrt(p (1 - p) / n) (``nan`` when the count is not recorded).

    Raises:
        ValueError: ``last`` is not a positive int, or the curve has a single epoch (nothing to compare).
    """
    if not isinstance(last, int) or isinstance(last, bool) or last < 1:
        raise ValueError(f"last must be a positive int (epochs), got {last!r}")
    n = len(curve.epoch)
    if n < 2:
        raise ValueError(f"{curve.name}: a trend needs at least two epochs, got {n}")
    window = min(last, n - 1)
    before = n - 1 - window  # index of the epoch before the window
    p, images = float(curve.test_acc[-1]), curve.test_images
    return {"epochs": n, "window": window, "test_acc": p, "gain": p - float(curve.test_acc[before]),
            "last_gain": p - float(curve.test_acc[-2]), "train_loss": float(curve.train_loss[-1]),
            "loss_drop": 1 - float(curve.train_loss[-1] / curve.train_loss[before]),
            "lr_before": float(curve.lr[before]), "lr": float(curve.lr[-1]), "train_acc": float(curve.train_acc[-1]),
            "noise": math.sqrt(p * (1 - p) / images) if images else math.nan}


def run_budget(curve: Curve) -> dict[str, Any]:
    """What a finished run cost and scored, from its records: ``epochs``, ``train_images`` (per epoch),
    ``minutes`` (wall clock, ``provenance["wall_time_s"]``), ``hardware`` (``provenance["device"]``), ``params``,
    ``weight_flops`` (per image) and ``full_test_acc`` with ``full_test_images`` (``final.json``).

    Raises:
        ValueError: the run has not finished (no ``final.json`` or ``provenance.json``).
    """
    if curve.final is None or curve.provenance is None:
        raise ValueError(f"{curve.name}: a budget needs a finished run (final.json and provenance.json)")
    f, p = curve.final, curve.provenance
    return {"epochs": f["epochs"], "train_images": p["train_images"], "minutes": p["wall_time_s"] / 60,
            "hardware": p["device"], "params": f["params"], "weight_flops": f["weight_flops"],
            "full_test_acc": f["full_test_acc"],
            "full_test_images": f["full_test_images"]}
