"""Reading the ``results/<run>/`` folders that :func:`~attnconv.train.vision.train_vision` writes."""

from __future__ import annotations

import html
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["RunResult", "html_table", "load_run", "results_table"]


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


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.is_file() else []


def load_run(folder: str | os.PathLike) -> RunResult:
    """Read a run folder. ``metrics.jsonl``, ``final.json`` and ``provenance.json`` must exist."""
    folder = Path(folder)
    missing = [n for n in ("metrics.jsonl", "final.json", "provenance.json") if not (folder / n).is_file()]
    if missing:
        raise FileNotFoundError(f"{folder} is not a finished run: it lacks {missing}")
    attention = None
    if (folder / "attention.npz").is_file():
        with np.load(folder / "attention.npz") as npz:
            attention = {k: npz[k] for k in npz.files}
    heads = json.loads((folder / "heads.json").read_text()) if (folder / "heads.json").is_file() else None
    return RunResult(folder.name, _jsonl(folder / "metrics.jsonl"), json.loads((folder / "final.json").read_text()),
                     json.loads((folder / "provenance.json").read_text()), _jsonl(folder / "centers.jsonl"),
                     attention, heads)


def html_table(headers: list[str], rows: list[list[Any]]) -> str:
    """A plain HTML table (notebook outputs render HTML everywhere; markdown tables need an extension)."""
    head = "".join(f"<th>{html.escape(str(h))}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


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
