"""Comparisons of BERT variants across pretraining seeds.

A variant pretrained once gives one masked-LM loss and, per task, one set of fine-tuning accuracies; the spread of
those accuracies is over fine-tuning seeds only, and says nothing about how much another pretraining run would
differ. :func:`seed_runs` gathers, for one pretraining config, every pretraining seed of each variant with the
fine-tuning runs made from it; :func:`order` says whether the pretraining seeds separate two variants.

The rule of :func:`order`: two variants are ranked only when each has at least ``min_seeds`` pretraining seeds
(3 by default) and every seed of one is above every seed of the other, each seed's accuracy being the mean over
its fine-tuning seeds. With three seeds each, that happens by chance with probability 1/20 in a given direction
when the two variants do not differ (a one-sided Mann-Whitney test at its smallest p-value).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from .results import BertRun

__all__ = ["SeedRuns", "order", "pretraining_seed", "ranking_sentence", "recipe_differences", "seed_runs",
           "seed_table"]


def pretraining_seed(run: BertRun) -> int:
    """The seed a pretraining run was made with (records written before seeds were set say 0, the default)."""
    if not run.is_pretraining:
        raise ValueError(f"run must be a pretraining run, got the fine-tuning run {run.name!r}")
    return int(run.provenance.get("config", {}).get("seed", 0))


@dataclass(frozen=True)
class SeedRuns:
    """One variant at one pretraining config, over its pretraining seeds (ascending)."""

    variant: str
    seeds: tuple[int, ...]
    names: tuple[str, ...]  # the pretraining runs' folders, one per seed
    val_loss: tuple[float, ...]  # masked-LM validation loss, one per seed
    accuracy: dict[str, dict[int, tuple[float, ...]]] = field(default_factory=dict)  # task -> seed -> fine-tunings

    def losses(self) -> np.ndarray:
        """The masked-LM loss of each pretraining seed, ``(seeds,)``."""
        return np.array(self.val_loss)

    def seed_means(self, task: str) -> np.ndarray:
        """One accuracy per pretraining seed fine-tuned on ``task``: the mean over its fine-tuning seeds."""
        return np.array([np.mean(acc) for _, acc in sorted(self.accuracy.get(task, {}).items())])

    def all_runs(self, task: str) -> np.ndarray:
        """Every fine-tuned accuracy on ``task``, over pretraining and fine-tuning seeds together."""
        return np.array([a for _, acc in sorted(self.accuracy.get(task, {}).items()) for a in acc])


def seed_runs(runs: Sequence[BertRun], config: str = "cpu-quick") -> dict[str, SeedRuns]:
    """Every variant pretrained with the named ``config``: its pretraining seeds and, per task, the test accuracies
    of the fine-tuning runs made from each (fine-tuned with the same named config, as the chapter's comparison).

    Raises:
        ValueError: two pretraining runs of one variant share a seed, or no pretraining run has ``config``.
    """
    pre = [r for r in runs if r.is_pretraining and r.final["config"] == config]
    if not pre:
        raise ValueError(f"config: no pretraining run of {config!r} among {len(runs)} runs")
    by_name = {r.name: r for r in pre}
    groups: dict[str, list[BertRun]] = {}
    for r in pre:
        groups.setdefault(r.final["variant"], []).append(r)
    out = {}
    for variant, group in sorted(groups.items()):
        group.sort(key=pretraining_seed)
        seeds = tuple(pretraining_seed(r) for r in group)
        if len(set(seeds)) != len(seeds):
            raise ValueError(f"runs: two {config} pretraining runs of {variant!r} share a seed: {seeds}")
        accuracy: dict[str, dict[int, tuple[float, ...]]] = {}
        for ft in runs:
            source = by_name.get(Path(ft.final.get("pretrained", "")).name) if not ft.is_pretraining else None
            if source is None or source.final["variant"] != variant or ft.final["config"] != config:
                continue
            accuracy.setdefault(ft.final["task"], {})[pretraining_seed(source)] = tuple(ft.final["test_acc"])
        out[variant] = SeedRuns(variant, seeds, tuple(r.name for r in group),
                                tuple(float(r.final["val_loss"]) for r in group), accuracy)
    return out


def order(a: Sequence[float], b: Sequence[float], min_seeds: int = 3) -> int:
    """1 if every value of ``a`` is above every value of ``b``, -1 if every one is below, 0 if they overlap.

    ``a`` and ``b`` hold one value per pretraining seed (a loss, or an accuracy averaged over fine-tuning seeds).

    Raises:
        ValueError: ``a`` or ``b`` has fewer than ``min_seeds`` values: one pretraining run ranks nothing.
    """
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    for name, x in (("a", a), ("b", b)):
        if x.ndim != 1 or len(x) < min_seeds:
            raise ValueError(f"{name}: a ranking needs at least {min_seeds} pretraining seeds, got {x.size}")
    if a.min() > b.max():
        return 1
    if a.max() < b.min():
        return -1
    return 0


def _spread(x: np.ndarray, scale: float, digits: int) -> str:
    if len(x) == 0:
        return "—"
    if len(x) == 1:
        return f"{scale * x[0]:.{digits}f}"
    return f"{scale * x.mean():.{digits}f} ± {scale * x.std(ddof=1):.{digits}f}"


def seed_table(groups: dict[str, SeedRuns], tasks: Sequence[str]) -> tuple[list[str], list[list[str]]]:
    """Headers and rows, one row per variant: its pretraining seeds, the masked-LM loss (mean ± standard deviation
    over pretraining seeds) and, per task, the test accuracy in % (mean ± standard deviation over every pretraining
    and fine-tuning seed, with the number of runs)."""
    headers = ["variant", "pretraining seeds", "masked-LM loss"] + [t.upper() for t in tasks]
    rows = []
    for v, g in groups.items():
        cells = [v, ", ".join(map(str, g.seeds)), _spread(g.losses(), 1, 2)]
        for t in tasks:
            runs = g.all_runs(t)
            cells.append(f"{_spread(runs, 100, 1)} ({len(runs)})" if len(runs) else "—")
        rows.append(cells)
    return headers, rows


def _range(x: np.ndarray, fmt: Callable[[float], str]) -> str:
    return fmt(x[0]) if len(x) == 1 else f"{fmt(x.min())} to {fmt(x.max())}"


def ranking_sentence(what: str, a: tuple[str, Sequence[float]], b: tuple[str, Sequence[float]],
                     fmt: Callable[[float], str] = lambda x: f"{100 * x:.1f}%", min_seeds: int = 3
                     ) -> tuple[int | None, str]:
    """What the pretraining seeds of two variants allow one to say about ``what`` (a loss, an accuracy), as a
    verdict and one Markdown sentence: 1 or -1 when every seed of ``a`` is above or below every seed of ``b``
    (:func:`order`), 0 when they overlap, ``None`` when either has fewer than ``min_seeds`` seeds. Only the first
    two state a ranking; the others say that none is stated, and why.

    Args:
        what: the quantity, as the sentence's opening words (``"On SUBJ"``, ``"In masked-LM loss"``).
        a, b: a variant's name and its values, one per pretraining seed.
        fmt: how a value is written.
    """
    (name_a, x), (name_b, y) = a, b
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if len(x) == 0 or len(y) == 0:
        raise ValueError(f"a, b: each needs at least one value, got {len(x)} and {len(y)}")
    ranges = f"`{name_a}` {_range(x, fmt)}, `{name_b}` {_range(y, fmt)}"
    if min(len(x), len(y)) < min_seeds:
        runs = lambda n: f"{n} pretraining run" + ("s" if n > 1 else "")
        return None, (f"{what}, with {runs(len(x))} of `{name_a}` and {runs(len(y))} of `{name_b}`, no ranking is "
                      f"stated ({ranges}).")
    verdict = order(x, y, min_seeds)
    if verdict == 0:
        return 0, (f"{what}, the {len(x)} and {len(y)} pretraining seeds overlap ({ranges}): they do not separate "
                   f"the two, so no ranking is stated.")
    side = "above" if verdict == 1 else "below"
    return verdict, (f"{what}, every one of the {len(x)} pretraining seeds of `{name_a}` is {side} every one of the "
                     f"{len(y)} of `{name_b}` ({ranges}).")


_RECIPE_DEFAULTS = {"precision": "fp32"}  # options added after the first runs, as those runs had them
_NOT_RECIPE = ("seed", "progress")


def recipe_differences(a: BertRun, b: BertRun) -> list[str]:
    """The config fields on which two pretraining runs differ, but for the seed and the progress bar: an empty
    list when ``b`` is another seed of ``a``'s recipe. A field one record lacks (it predates the option) takes the
    value the older run had; the model is compared as a :class:`attnconv.models.bert.BertConfig`, so that fields
    added to it since, at their defaults, are no difference."""
    from ..models.bert import BertConfig

    ca, cb = a.provenance["config"], b.provenance["config"]
    out = []
    for key in sorted(set(ca) | set(cb)):
        if key in _NOT_RECIPE:
            continue
        va, vb = ca.get(key, _RECIPE_DEFAULTS.get(key)), cb.get(key, _RECIPE_DEFAULTS.get(key))
        if key == "model":
            va, vb = BertConfig(**va), BertConfig(**vb)
        if va != vb:
            out.append(key)
    if BertConfig(**a.provenance["model_config"]) != BertConfig(**b.provenance["model_config"]):
        out.append("model_config")
    return out
