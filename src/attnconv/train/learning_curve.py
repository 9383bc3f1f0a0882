"""Fine-tuned accuracy against pretraining budget, and where a log-linear trend of it would cross a baseline.

A point of the curve is one pretraining run and one task: its budget in tokens (:func:`pretraining_tokens`) and
the mean ± standard deviation of the fine-tuned test accuracy over the fine-tuning seeds. Points are comparable
only for the same model sizes and the same fine-tuning recipe, which :func:`learning_curve` checks.

:func:`loglinear_fit` fits accuracy = a + b log10(tokens) by least squares over the points of one variant and
task; :func:`extrapolation_statement` says in words what that fit implies for a baseline's accuracy. The fit
is an assumption about the trend, stated as such: with two budgets it is the line through them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from ..models.bert import BertConfig
from .results import BertRun
from .seeds import pretraining_seed as seed_of

__all__ = ["CurvePoint", "LogLinearFit", "extrapolation_statement", "learning_curve", "loglinear_fit",
           "pretraining_tokens"]


def pretraining_tokens(config: Mapping[str, Any], steps: int) -> int:
    """The token positions a pretraining run fed its model: ``steps`` x ``batch_size`` x ``max_length`` of its
    config (an upper bound on real tokens: a batch is padded to its longest example)."""
    return int(steps) * int(config["batch_size"]) * int(config["max_length"])


@dataclass(frozen=True)
class CurvePoint:
    """One pretraining run fine-tuned on one task."""

    variant: str
    task: str
    tokens: int
    steps: int
    acc_mean: float
    acc_std: float
    seeds: int
    pretraining: str  # the pretraining run's folder name
    config: str  # its named config


_MODEL_DEFAULTS = {f.name: f.default for f in fields(BertConfig)}


def _model_key(run: BertRun) -> tuple:
    """Model sizes of a pretraining run, without the attention variant: points must share them. A field the
    record lacks (it predates the option) takes :class:`BertConfig`'s default, which the run then had."""
    m = {**_MODEL_DEFAULTS, **run.provenance["config"]["model"]}
    m.pop("variant", None)
    return tuple(sorted((k, str(v)) for k, v in m.items()))


def learning_curve(runs: Sequence[BertRun], reference: str = "cpu-quick",
                   pretraining_seed: int | None = 0) -> list[CurvePoint]:
    """Every (pretraining run, task) pair among ``runs`` whose model sizes and fine-tuning recipe equal those of
    the pretraining config named ``reference``, sorted by variant, task and tokens.

    ``pretraining_seed`` keeps the pretraining runs made with that seed (0, the default, is the seed of every
    budget; ``None`` keeps every seed, so that one budget may hold several points of a variant).

    Raises:
        ValueError: no pretraining run of config ``reference`` is among ``runs``.
    """
    pre = {r.name: r for r in runs if r.is_pretraining}
    ref = [r for r in pre.values() if r.final["config"] == reference]
    if not ref:
        raise ValueError(f"no pretraining run of config {reference!r} among {sorted(pre)}")
    sizes = _model_key(ref[0])
    ref_names = {r.name for r in ref}
    ft_recipes = {r.final["config"] for r in runs if not r.is_pretraining and Path(r.final["pretrained"]).name in ref_names}
    points = []
    for run in runs:
        if run.is_pretraining:
            continue
        source = pre.get(Path(run.final["pretrained"]).name)
        if source is None or _model_key(source) != sizes or run.final["config"] not in ft_recipes:
            continue
        if pretraining_seed is not None and seed_of(source) != pretraining_seed:
            continue
        f = run.final
        points.append(CurvePoint(f["variant"], f["task"], pretraining_tokens(source.provenance["config"],
                                                                             source.final["steps"]),
                                 source.final["steps"], f["test_acc_mean"], f["test_acc_std"], len(f["test_acc"]),
                                 source.name, source.final["config"]))
    return sorted(points, key=lambda p: (p.variant, p.task, p.tokens))


@dataclass(frozen=True)
class LogLinearFit:
    """accuracy ≈ ``intercept`` + ``per_decade`` · log10(tokens), fitted on ``budgets`` distinct budgets."""

    intercept: float
    per_decade: float
    budgets: int

    def predict(self, tokens: float) -> float:
        return self.intercept + self.per_decade * math.log10(tokens)

    def tokens_for(self, accuracy: float) -> float | None:
        """The budget at which the fit reaches ``accuracy`` (``None`` if it never rises)."""
        if self.per_decade <= 0:
            return None
        return 10 ** ((accuracy - self.intercept) / self.per_decade)


def loglinear_fit(points: Sequence[CurvePoint]) -> LogLinearFit:
    """Least-squares fit of mean accuracy on log10(tokens). Needs at least two distinct budgets."""
    tokens = np.array([p.tokens for p in points], dtype=float)
    if len(set(tokens.tolist())) < 2:
        raise ValueError(f"a trend needs at least two distinct pretraining budgets, got {sorted(set(tokens.tolist()))}")
    slope, intercept = np.polyfit(np.log10(tokens), [p.acc_mean for p in points], 1)
    return LogLinearFit(float(intercept), float(slope), len(set(tokens.tolist())))


def _tokens(n: float) -> str:
    """3.07M, 81.3M, 28.5B, 1.89T: three significant figures with the largest unit that fits."""
    for unit, size in (("T", 1e12), ("B", 1e9), ("M", 1e6)):
        if n >= size:
            return f"{n / size:.3g}{unit}"
    return f"{n:,.0f}"


def _times(x: float) -> str:
    """9.93, 231,000: three significant figures, without exponents."""
    return f"{x:.3g}" if x < 1000 else f"{float(f'{x:.3g}'):,.0f}"


def _signed(x: float) -> str:
    """+2.7, -0.4, and 0.0 for what rounds to zero (not -0.0)."""
    return "0.0" if round(x, 1) == 0 else f"{x:+.1f}"


def extrapolation_statement(points: Sequence[CurvePoint], baseline: float, baseline_name: str = "the baseline") -> str:
    """Where the points of one variant and task head, in one or two sentences.

    With one budget: the gap to ``baseline`` and that no trend can be read. With two or more: the fitted gain per
    tenfold budget and, if it rises, the budget at which the log-linear trend would reach ``baseline``.
    """
    if not points:
        raise ValueError("points is empty")
    if len({(p.variant, p.task) for p in points}) != 1:
        raise ValueError("points must all be of one variant and one task")
    v, t = points[0].variant, points[0].task.upper()
    last = max(points, key=lambda p: p.tokens)
    gap = 100 * (baseline - last.acc_mean)
    side = ("level with" if abs(gap) < 0.05 else  # equal at the one decimal printed
            f"{abs(gap):.1f} points {'below' if gap > 0 else 'above'}")
    where = (f"{v} on {t}: {100 * last.acc_mean:.1f}% after {_tokens(last.tokens)} pretraining tokens, "
             f"{side} {baseline_name} ({100 * baseline:.1f}%)")
    if len({p.tokens for p in points}) < 2:
        return where + "; one budget, so no trend yet."
    fit = loglinear_fit(points)
    first = min(points, key=lambda p: p.tokens)
    trend = (f"{where}, from {100 * first.acc_mean:.1f}% at {_tokens(first.tokens)}: a log-linear fit over "
             f"{fit.budgets} budgets gains {_signed(100 * fit.per_decade)} points per tenfold more tokens")
    if gap <= 0:
        return trend + "."
    cross = fit.tokens_for(baseline)
    if cross is None:
        return trend + f"; the trend does not rise, so it does not head towards {baseline_name}."
    return (trend + f". If that trend held, it would reach {baseline_name} at about {_tokens(cross)} tokens, "
            f"{_times(cross / last.tokens)} times the largest budget run here.")
