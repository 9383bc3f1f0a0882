"""Reading run folders back: vision runs (:func:`load_run`, :func:`results_table`) and BERT runs
(:func:`load_bert_runs`, :func:`bert_results_table`). The file names are those of :mod:`attnconv.train.runs`."""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .runs import (ATTENTION_FILE, CENTERS_FILE, FINAL_FILE, HEADS_FILE, KERNELS_FILE, METRICS_FILE, PROVENANCE_FILE,
                   read_jsonl)

__all__ = ["BertRun", "RunResult", "bert_results_table", "budget_rows", "html_table", "load_bert_runs", "load_run",
           "results_table"]


@dataclass
class RunResult:
    """One run's records.

    Attributes:
        name: the folder's name.
        history: one dict per epoch (``metrics.jsonl``).
        final: ``final.json``.
        provenance: ``provenance.json``.
        centers: Gaussian centre snapshots (``centers.jsonl``), empty for other models.
        attention: ``attention.npz`` as a dict (``query_maps`` ``(L, N_h, Q, H, W)``, ``queries`` ``(Q, 2)``),
            or ``None`` for models without attention.
        heads: per layer and head, the best shift and its attention mass (``heads.json``), or ``None``.
    """

    name: str
    history: list[dict[str, Any]]
    final: dict[str, Any]
    provenance: dict[str, Any]
    centers: list[dict[str, Any]] = field(default_factory=list)
    attention: dict[str, np.ndarray] | None = None
    heads: list[list[dict[str, Any]]] | None = None

    @property
    def label(self) -> str:
        """The model's name, e.g. ``"sa-quadratic"``."""
        return self.final["model"]


def _json(path: Path) -> Any:
    """The JSON in ``path``, or ``None`` when there is no such file."""
    return json.loads(path.read_text()) if path.is_file() else None


def budget_rows(results: str | os.PathLike, folders: list[str]) -> list[dict[str, Any]]:
    """What each finished vision run of ``results`` reached, and in how long: one dict per folder that holds a
    ``final.json`` (the others are left out), with ``folder``, ``config``, ``model``, ``epochs``, ``processes``,
    ``threads`` (per process), ``wall_min``, ``cpu_min`` (every process's CPU minutes, ``None`` for records made
    before they were kept; below processes x threads x wall_min, the machine was shared), ``full_test_acc`` and
    ``first_epoch_at_80`` (the first epoch whose accuracy on its test subset reached 80%, else ``None``) and
    ``minutes_to_80``: the wall minutes to the first evaluation at 80% or more, that epoch's on its test subset or,
    where no epoch got there, the final one on all 10,000 images at the end of the run (``None`` when neither did)."""
    rows = []
    for name in folders:
        folder = Path(results) / name
        if not (folder / FINAL_FILE).is_file():
            continue
        run = load_run(folder)
        threads = run.provenance.get("threads")
        if threads is None:  # records made before the thread count had a field of its own: "2 cores, 1 threads"
            found = re.search(r"(\d+) threads?\b", str(run.provenance.get("device", "")))
            threads = int(found.group(1)) if found else None
        cpu = [r.get("cpu_time_s") for r in run.history]
        first = next((r["epoch"] for r in run.history if r["test_acc"] >= 0.8), None)
        rows.append({"folder": name, "config": run.final["config"], "model": run.final["model"],
                     "epochs": run.final["epochs"], "processes": run.provenance.get("processes", 1),
                     "threads": threads.get("used") if isinstance(threads, dict) else threads,
                     "wall_min": run.final["wall_time_s"] / 60,
                     "cpu_min": sum(cpu) / 60 if cpu and None not in cpu else None,
                     "full_test_acc": run.final.get("full_test_acc"),
                     "first_epoch_at_80": first,
                     "minutes_to_80": (next(r["wall_time_s"] for r in run.history if r["epoch"] == first) / 60
                                       if first is not None else
                                       run.final["wall_time_s"] / 60 if (run.final.get("full_test_acc") or 0) >= 0.8
                                       else None)})
    return rows


def load_run(folder: str | os.PathLike) -> RunResult:
    """Read a run folder. ``metrics.jsonl``, ``final.json`` and ``provenance.json`` must exist."""
    folder = Path(folder)
    missing = [n for n in (METRICS_FILE, FINAL_FILE, PROVENANCE_FILE) if not (folder / n).is_file()]
    if missing:
        raise FileNotFoundError(f"{folder} is not a finished run: it lacks {missing}")
    attention = None
    if (folder / ATTENTION_FILE).is_file():
        with np.load(folder / ATTENTION_FILE) as npz:
            attention = {k: npz[k] for k in npz.files}
    return RunResult(folder.name, read_jsonl(folder / METRICS_FILE), _json(folder / FINAL_FILE),
                     _json(folder / PROVENANCE_FILE), read_jsonl(folder / CENTERS_FILE), attention,
                     _json(folder / HEADS_FILE))


def html_table(headers: list[str], rows: list[list[Any]]) -> str:
    """An HTML table (notebook outputs render HTML everywhere; markdown tables need an extension), styled like the
    book's own tables so that cells keep their padding: :class:`attnconv.display.Table`."""
    from ..display import Table

    return Table(headers, rows)._repr_html_()


def results_table(runs: list[RunResult], fmt: str = "markdown") -> str:
    """One row per run: model, parameters, FLOPs, epochs, final test accuracy, wall time, images/s, device, data.

    Args:
        fmt: ``"markdown"`` or ``"html"``.
    """
    if fmt not in ("markdown", "html"):
        raise ValueError(f"fmt must be 'markdown' or 'html', got {fmt!r}")
    headers = ["model", "params", "GFLOPs (all / weights)", "epochs", "test accuracy", "wall time",
               "train images/s", "device", "data"]
    rows = []
    for run in runs:
        f, p = run.final, run.provenance
        acc = f.get("full_test_acc") or f["test_acc"]
        n_test = f.get("full_test_images") or p.get("test_images")
        speed = np.median([r["train_images_per_s"] for r in run.history]) if run.history else float("nan")
        rows.append([run.label, f"{f['params'] / 1e6:.2f}M", f"{f['flops'] / 1e9:.2f} / {f['weight_flops'] / 1e9:.2f}",
                     f["epochs"], f"{100 * acc:.1f}% ({n_test} images)", f"{f['wall_time_s'] / 60:.1f} min",
                     f"{speed:.0f}", p["device"], p["data"]])
    if fmt == "html":
        return html_table(headers, rows)
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    return "\n".join(lines + ["| " + " | ".join(str(c) for c in row) + " |" for row in rows])


@dataclass
class BertRun:
    """One ``results/bert-*`` folder: ``final.json``, ``provenance.json``, ``metrics.jsonl`` and, for a
    pretraining run, ``kernels.json`` (``None`` otherwise)."""

    name: str
    final: dict[str, Any]
    provenance: dict[str, Any]
    history: list[dict[str, Any]]
    kernels: dict[str, Any] | None

    @property
    def is_pretraining(self) -> bool:
        return "task" not in self.final


def load_bert_runs(folder: str | os.PathLike, prefix: str = "bert-") -> list[BertRun]:
    """Every finished run in ``folder`` whose name starts with ``prefix``, sorted by name (unfinished ones,
    without ``final.json``, are skipped)."""
    runs = []
    for run in sorted(Path(folder).glob(f"{prefix}*")):
        if not (run / FINAL_FILE).is_file() or not (run / PROVENANCE_FILE).is_file():
            continue
        runs.append(BertRun(run.name, _json(run / FINAL_FILE), _json(run / PROVENANCE_FILE),
                            read_jsonl(run / METRICS_FILE), _json(run / KERNELS_FILE)))
    return runs


def bert_results_table(runs: list[BertRun], config: str | None = None) -> str:
    """A markdown table, one row per pretrained variant: steps, MLM validation loss and accuracy, training
    tokens/s with the number of threads it ran on, and each task's test accuracy as mean ± std over the
    fine-tuning seeds. (Speeds of runs on a shared machine are not comparable; see the throughput benchmark.)

    ``config`` keeps only the pretraining runs of that named config (and the fine-tuning runs made from them). A
    pretraining seed other than 0 is named after the variant: ``absolute (seed 1)``."""
    pre = [r for r in runs if r.is_pretraining and (config is None or r.final["config"] == config)]
    names = {r.name for r in pre}
    tasks = sorted({r.final["task"] for r in runs if not r.is_pretraining and Path(r.final["pretrained"]).name in names})
    header = ["variant", "config", "steps", "MLM val loss", "MLM val acc", "tokens/s (threads)"]
    lines = ["| " + " | ".join(header + [t.upper() for t in tasks]) + " |", "|" + "---|" * (len(header) + len(tasks))]
    for r in pre:
        f = r.final
        seed = r.provenance.get("config", {}).get("seed", 0)  # a second pretraining seed gets a row of its own
        cells = [f["variant"] + (f" (seed {seed})" if seed else ""), f["config"], str(f["steps"]), f"{f['val_loss']:.3f}",
                 f"{100 * f['val_acc']:.1f}%", f"{f['tokens_per_s']:.0f} ({r.provenance.get('torch_threads', '?')})"]
        for t in tasks:
            ft = [x for x in runs if not x.is_pretraining and x.final["task"] == t and
                  Path(x.final["pretrained"]).name == r.name]
            cells.append(f"{100 * ft[0].final['test_acc_mean']:.1f} ± {100 * ft[0].final['test_acc_std']:.1f}% "
                         f"({len(ft[0].final['seeds'])} seeds)" if ft else "—")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
