"""Written answers: one Markdown sheet per student, that an instructor marks and the gradebook reads back.

A sheet has a section per written part: ``## <label>``, the student's answer **quoted** (every line starts with
``> ``, so no line of an answer can be read as a heading or a mark), and one line ``points: ___ / N`` that the
instructor fills in. Only unquoted ``points:`` lines count, capped at N.

The grader writes every sheet itself, each time it grades. It records a fingerprint of each sheet it wrote (the
sheet with its marks blanked) in ``.sheets.json`` beside them. On the next run, a sheet whose fingerprint still
matches keeps its marks (for every answer that did not change); any other file at that place (one a student's
code left there, or a sheet edited beyond its ``points:`` lines) is moved aside to ``.<student>.md.replaced``
and a fresh sheet is written, and the report says so.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

from .exercises import exercises_for
from .report import GradeReport

__all__ = ["read_sheet", "sheet_conflicts", "write_sheet"]

_MARK = re.compile(r"^points:\s*([0-9]+(?:\.[0-9]+)?)\s*/")
_BLANK = "___"
_LOOKS_LIKE_MARK = re.compile(r"^\s*(points\s*:|#+\s)", re.IGNORECASE)


def _quote(answer: str) -> str:
    return "\n".join("> " + line if line else ">" for line in answer.splitlines())


def _sections(text: str) -> dict[str, dict]:
    """label → {"quote": quoted lines, "mark": the unquoted points line or None}."""
    out: dict[str, dict] = {}
    label = None
    for line in text.splitlines():
        if (m := re.match(r"^## (\S+)\s*$", line)):
            label = m.group(1)
            out.setdefault(label, {"quote": [], "mark": None})
        elif label is not None and line.startswith(">"):
            out[label]["quote"].append(line)
        elif label is not None and line.startswith("points:") and out[label]["mark"] is None:
            out[label]["mark"] = line
    return out


def _fingerprint(text: str) -> str:
    blank = "\n".join(re.sub(r"^points:\s*[^/]*/", f"points: {_BLANK} /", line) for line in text.splitlines())
    return hashlib.sha256(blank.encode()).hexdigest()


def _ledger(folder: Path) -> dict[str, str]:
    try:
        data = json.loads((folder / ".sheets.json").read_text())
        return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    tmp.replace(path)


def write_sheet(report: GradeReport, folder: Path) -> Path:
    """Write ``folder/<student>.md`` from ``report`` (see the module docstring); problems go to ``report``."""
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"{report.student}.md"
    ledger = _ledger(folder)
    previous: dict[str, dict] = {}
    if target.is_symlink() or (target.exists() and not target.is_file()):
        raise ValueError(f"{target} is not a regular file: remove it before grading")
    if target.exists():
        old = target.read_text(errors="replace")
        if ledger.get(report.student) == _fingerprint(old):
            previous = _sections(old)
        else:
            target.replace(folder / f".{report.student}.md.replaced")
            report.problems.append(f"{target.name} was not a sheet this grader wrote (or was edited beyond its "
                                   f"points: lines); it was moved to .{report.student}.md.replaced and written anew")
    lines = [f"# Written answers: {report.student}", "",
             f"Chapter `{report.chapter}`, from `{Path(report.notebook).name}`. Each answer is quoted. Mark it by "
             "writing a number after `points:`; the gradebook reads it back.", ""]
    for exercise in exercises_for(report.chapter):
        if not exercise.written:
            continue
        answer = report.written.get(exercise.label, "").strip()
        if not answer or answer == "YOUR ANSWER HERE":
            answer = "*(no answer)*"
        quoted = _quote(answer)
        mark = f"points: {_BLANK} / {exercise.written}"
        before = previous.get(exercise.label)
        if before and before["mark"] and _MARK.match(before["mark"]):
            if before["quote"] == quoted.splitlines():
                mark = before["mark"]
            else:
                report.problems.append(f"{exercise.label}: the written answer changed since it was marked; "
                                       "mark it again")
        lines += [f"## {exercise.label}", "", quoted, "", mark, ""]
    text = "\n".join(lines)
    _atomic(target, text)
    ledger[report.student] = _fingerprint(text)
    _atomic(folder / ".sheets.json", json.dumps(ledger, indent=1, sort_keys=True) + "\n")
    return target


def read_sheet(path: Path, chapter: str) -> dict[str, float | None]:
    """The points written in a sheet, by label (None where not marked yet), capped at the registry's. Only an
    unquoted ``points:`` line under a section's heading counts, never a line of the answer."""
    limits = {e.label: e.written for e in exercises_for(chapter) if e.written}
    points: dict[str, float | None] = {label: None for label in limits}
    for label, section in _sections(path.read_text(errors="replace")).items():
        if label in limits and section["mark"] and (m := _MARK.match(section["mark"])):
            points[label] = max(0.0, min(float(m.group(1)), float(limits[label])))
    return points


def sheet_conflicts(path: Path, chapter: str) -> list[str]:
    """Sentences for each answer that holds a line looking like a mark or a heading, beside the mark that counts."""
    marks = read_sheet(path, chapter)
    out = []
    for label, section in _sections(path.read_text(errors="replace")).items():
        suspicious = [line.lstrip("> ") for line in section["quote"] if _LOOKS_LIKE_MARK.match(line.lstrip(">"))]
        if label in marks and suspicious:
            counted = "not marked yet" if marks[label] is None else f"the mark that counts is {marks[label]:g}"
            out.append(f"{path.stem} {label}: the answer holds a line that looks like a mark or a heading "
                       f"({suspicious[0][:60]!r}); it is quoted and ignored, {counted}")
    return out
