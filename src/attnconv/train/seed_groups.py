"""Vision runs repeated over seeds, read back as groups: chapter 08's experiments.

A group is every finished run folder ``<prefix>-<model>-s<seed>`` of one results folder (for example
``results/ch08-gating-sa-gpsa-s0``, ``-s1``, ``-s2``). :func:`seed_groups` reads them, model by model;
:func:`gate_curves` stacks the GPSA gates σ(λ_h) that each run recorded over training; :func:`spread` and
:func:`group_summary` give a model's final accuracy and how local its heads are, as a mean with its spread over
seeds; :func:`layer_locality` reads how local each layer's heads are from one run's ``heads.json``, and
:func:`initial_distance` how local they were before training.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
import torch

from ..analysis import attention_distance
from ..models import SelfAttentionNet, VisionConfig, build_model
from .results import RunResult, load_run
from .runs import FINAL_FILE, config_from_dict

__all__ = ["Spread", "gate_curves", "group_summary", "initial_distance", "layer_locality", "seed_groups", "spread"]


def seed_groups(results: str | os.PathLike, prefix: str) -> dict[str, list[RunResult]]:
    """The finished runs ``<results>/<prefix>-<model>-s<seed>``, grouped by model (in name order), each group
    sorted by seed. Folders without ``final.json`` (unfinished runs) are left out.

    Raises:
        ValueError: ``prefix`` is empty or contains a path separator.
        FileNotFoundError: ``results`` is not a folder.
    """
    if not isinstance(prefix, str) or not prefix or "/" in prefix or os.sep in prefix:
        raise ValueError(f"prefix must be a folder-name prefix such as 'ch08-gating', got {prefix!r}")
    results = Path(results)
    if not results.is_dir():
        raise FileNotFoundError(f"results must be a folder of run folders, got {results}")
    pattern = re.compile(re.escape(prefix) + r"-(?P<model>.+)-s(?P<seed>\d+)")
    found: dict[str, list[tuple[int, RunResult]]] = {}
    for folder in sorted(results.iterdir()):
        match = pattern.fullmatch(folder.name)
        if match and (folder / FINAL_FILE).is_file():
            found.setdefault(match["model"], []).append((int(match["seed"]), load_run(folder)))
    return {model: [run for _, run in sorted(runs, key=lambda sr: sr[0])] for model, runs in sorted(found.items())}


def gate_curves(runs: Sequence[RunResult]) -> tuple[np.ndarray, np.ndarray]:
    """The GPSA gates σ(λ_h) that each run recorded (``centers.jsonl``'s ``gates``), stacked.

    Returns:
        ``epochs`` ``(T,)``, the (fractional) epochs of the snapshots, and ``gates`` ``(S, T, L, N_h)`` for S runs.

    Raises:
        ValueError: no runs, a run without gates, or runs whose snapshots fall at different epochs or have
            different shapes.
    """
    if not runs:
        raise ValueError("runs: no run to read")
    epochs, gates = None, []
    for run in runs:
        snaps = [s for s in run.centers if "gates" in s]
        if not snaps:
            raise ValueError(f"runs: {run.name} recorded no GPSA gates (is it an sa-gpsa run?)")
        e = np.array([s["epoch"] for s in snaps], dtype=float)
        g = np.array([s["gates"] for s in snaps], dtype=float)  # (T, L, N_h)
        if epochs is not None and (e.shape != epochs.shape or not np.allclose(e, epochs) or g.shape != gates[0].shape):
            raise ValueError(f"runs: {run.name} has snapshots at other epochs or of another shape than "
                             f"{runs[0].name}")
        epochs = e
        gates.append(g)
    return epochs, np.stack(gates)


@dataclass(frozen=True)
class Spread:
    """A quantity over seeds: each seed's value, their mean, sample standard deviation, and range."""

    values: tuple[float, ...]

    @property
    def mean(self) -> float:
        return float(np.mean(self.values))

    @property
    def std(self) -> float:
        """Sample standard deviation (ddof 1); 0 for a single seed."""
        return float(np.std(self.values, ddof=1)) if len(self.values) > 1 else 0.0

    @property
    def low(self) -> float:
        return float(min(self.values))

    @property
    def high(self) -> float:
        return float(max(self.values))

    def text(self, scale: float = 1.0, digits: int = 1) -> str:
        """``"mean ± std (low–high)"`` after multiplying by ``scale`` (100 for a percentage)."""
        return (f"{scale * self.mean:.{digits}f} ± {scale * self.std:.{digits}f} "
                f"({scale * self.low:.{digits}f}–{scale * self.high:.{digits}f})")


def spread(values: Sequence[float]) -> Spread:
    """:class:`Spread` of ``values`` (at least one finite number)."""
    values = tuple(float(v) for v in values)
    if not values or not all(np.isfinite(values)):
        raise ValueError(f"values must be one or more finite numbers, got {values!r}")
    return Spread(values)


def layer_locality(run: RunResult) -> dict[str, np.ndarray]:
    """How local each layer's heads are after training, from ``heads.json``: ``distance`` ``(L, N_h)``, the mean
    attention distance in tokens, and ``mass`` ``(L, N_h)``, the attention mass on the head's best single shift
    (1 for one tap of a convolution).

    Raises:
        ValueError: the run recorded no heads, or no distances (a record made before they were kept).
    """
    if not run.heads:
        raise ValueError(f"run: {run.name} recorded no attention heads")
    if any("distance" not in h for layer in run.heads for h in layer):
        raise ValueError(f"run: {run.name}'s heads.json has no attention distances")
    return {"distance": np.array([[h["distance"] for h in layer] for layer in run.heads], dtype=float),
            "mass": np.array([[h["mass"] for h in layer] for layer in run.heads], dtype=float)}


def group_summary(groups: dict[str, list[RunResult]]) -> dict[str, dict[str, Spread]]:
    """Per model, over its seeds: ``accuracy`` (the final accuracy on the full test set), ``distance`` and ``mass``
    (each run's mean over every layer and head, :func:`layer_locality`), and ``cpu_min`` (CPU minutes a run)."""
    out = {}
    for model, runs in groups.items():
        if not runs:
            raise ValueError(f"groups: {model} has no runs")
        local = [layer_locality(r) for r in runs]
        out[model] = {"accuracy": spread([r.final["full_test_acc"] for r in runs]),
                      "distance": spread([loc["distance"].mean() for loc in local]),
                      "mass": spread([loc["mass"].mean() for loc in local]),
                      "cpu_min": spread([sum(h["cpu_time_s"] for h in r.history) / 60 for r in runs])}
    return out


@torch.no_grad()
def initial_distance(run: RunResult, images: torch.Tensor) -> np.ndarray:
    """Each layer's mean attention distance (the mean over its heads) *before* training, on normalised ``images``
    ``(B, H, W, C)``: the run's model rebuilt from its recorded config and seed, as the trainer builds it
    (``torch.manual_seed(seed)``, then the model). For a content-free model any images give the same answer.

    Returns:
        ``(L,)`` distances in tokens.

    Raises:
        ValueError: the run is not an attention model.
    """
    config = run.provenance["config"]
    if not str(config.get("model", "")).startswith("sa-"):
        raise ValueError(f"run: {run.name} is not an attention model ({config.get('model')!r})")
    sa = config_from_dict(VisionConfig, config["sa"])
    state = torch.random.get_rng_state()
    try:
        torch.manual_seed(config["seed"])
        model = build_model(config["model"], sa)
    finally:
        torch.random.set_rng_state(state)
    assert isinstance(model, SelfAttentionNet)
    probs = model.eval().attention_probs(images)
    return np.array([attention_distance(p, sa.grid).mean().item() for p in probs])
