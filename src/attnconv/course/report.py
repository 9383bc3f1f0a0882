"""What the grader reports, and where in a notebook it finds each exercise.

:class:`GradeReport` is one submission's result: a line per graded exercise, the cells that raised, the written
answers, and the problems found on the way (a duplicated or renamed exercise cell, a notebook that could not be
read, the protections that were missing). :func:`answer_cells` finds each exercise's answer cell and reports
cells that are duplicated or carry another exercise's ``grade_id``.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path

import nbformat

from .exercises import EXERCISES, exercises_for
from .exercises.core import Exercise

__all__ = ["ExerciseGrade", "GradeReport", "WRITTEN_SUFFIX", "answer_cells", "read_notebook", "resolve_chapter",
           "written_answers"]

WRITTEN_SUFFIX = "-written"


@dataclass
class ExerciseGrade:
    label: str
    kind: str
    passed: bool
    points: int
    max_points: int
    message: str
    parts: list[dict] = field(default_factory=list)


@dataclass
class GradeReport:
    """What the grader found: one entry per graded exercise, the cells that raised, the written answers, and
    ``problems`` (sentences about the notebook or the grading that the instructor should read)."""

    notebook: str
    chapter: str
    exercises: list[ExerciseGrade] = field(default_factory=list)
    cell_errors: list[dict] = field(default_factory=list)
    written: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0
    problems: list[str] = field(default_factory=list)
    isolation: str = ""

    @property
    def student(self) -> str:
        return Path(self.notebook).stem

    @property
    def score(self) -> int:
        return sum(e.points for e in self.exercises)

    @property
    def max_score(self) -> int:
        return sum(e.max_points for e in self.exercises)

    def table(self) -> str:
        width = max([len(e.label) for e in self.exercises] + [8])
        lines = [f"{'exercise':{width}s}  kind        points  message", "-" * (width + 60)]
        for e in self.exercises:
            lines.append(f"{e.label:{width}s}  {e.kind:10s}  {e.points:>2d}/{e.max_points:<2d}   {e.message}")
        lines += [f"problem: {p}" for p in self.problems]
        lines.append(f"score: {self.score}/{self.max_score}  ({self.chapter}, {self.seconds:.0f} s)")
        return "\n".join(lines)

    def to_json(self) -> str:
        data = asdict(self) | {"score": self.score, "max_score": self.max_score}
        return json.dumps(data, indent=2)

    @classmethod
    def from_json(cls, text: str) -> GradeReport:
        """A report written by ``to_json`` (the grader's own worker wrote it; every field is typed here)."""
        data = json.loads(text)
        exercises = [ExerciseGrade(str(e["label"]), str(e["kind"]), bool(e["passed"]), int(e["points"]),
                                   int(e["max_points"]), str(e["message"]), list(e.get("parts", [])))
                     for e in data["exercises"]]
        return cls(str(data["notebook"]), str(data["chapter"]), exercises, list(data["cell_errors"]),
                   {str(k): str(v) for k, v in data["written"].items()}, float(data["seconds"]),
                   [str(p) for p in data.get("problems", [])], str(data.get("isolation", "")))


def resolve_chapter(chapter: str) -> str:
    """``"01"`` or ``"01_convolution_as_shifts"`` → the chapter's full name; ValueError when no chapter matches."""
    chapters = sorted({e.chapter for e in EXERCISES.values()})
    if chapter in chapters:
        return chapter
    matches = [c for c in chapters if c.split("_")[0] == chapter or c.startswith(chapter + "_")]
    if len(matches) != 1:
        raise ValueError(f"chapter {chapter!r} has no graded exercises; expected one of {', '.join(chapters)}")
    return matches[0]


def read_notebook(path: Path) -> nbformat.NotebookNode:
    """The notebook at ``path`` (``.ipynb``, or a jupytext ``.md``); ValueError naming the file when unreadable."""
    try:
        if path.suffix == ".md":
            import jupytext

            return jupytext.read(path)
        nb = nbformat.read(path, as_version=4)
        if not isinstance(nb.get("cells"), list):
            raise ValueError("it has no list of cells")
        for cell in nb.cells:
            if cell.get("cell_type") not in ("code", "markdown", "raw") or not isinstance(cell.get("source"), str):
                raise ValueError("a cell has no type or no source")
        return nb
    except Exception as err:  # a corrupt file must give one clear error
        raise ValueError(f"{path.name} is not a readable notebook: {str(err)[:200]}") from None


def _grade_id(cell) -> str | None:
    meta = cell.get("metadata", {}).get("nbgrader", {})
    value = meta.get("grade_id") if isinstance(meta, dict) else None
    return value if isinstance(value, str) else None


def _calls(source: str) -> set[str]:
    return set(re.findall(r"verify\(\s*[\"']([\w-]+)[\"']", source))


def answer_cells(nb: nbformat.NotebookNode, exercises: list[Exercise]) -> tuple[dict[str, int], list[str]]:
    """The index of each exercise's answer cell, and the problems found.

    The answer cell is the code cell whose nbgrader ``grade_id`` is the label, else the cell that calls
    ``verify`` with it. A label found in several cells is graded from the first cell with its ``grade_id`` (or
    the first that calls ``verify``) and reported; so is a cell whose ``grade_id`` names no exercise of the
    chapter, or another exercise than the one it verifies (a renamed cell)."""
    labels = {e.label for e in exercises}
    known = {e.label for e in EXERCISES.values()}
    by_id: dict[str, list[int]] = {}
    by_call: dict[str, list[int]] = {}
    problems = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        grade_id = _grade_id(cell)
        calls = _calls(cell.source) & labels
        if grade_id in labels:
            by_id.setdefault(grade_id, []).append(index)
        elif grade_id is not None and grade_id.removesuffix(WRITTEN_SUFFIX) not in known:
            problems.append(f"cell {index} has the grade_id {grade_id[:60]!r}, which names no exercise (renamed?)")
        for label in calls:
            by_call.setdefault(label, []).append(index)
            if grade_id in labels and grade_id != label:
                problems.append(f"cell {index} has the grade_id {grade_id!r} but verifies {label!r} (renamed?)")
    found = {}
    for e in exercises:
        ids, calls = by_id.get(e.label, []), by_call.get(e.label, [])
        cells = ids or calls
        if not cells:
            continue
        found[e.label] = cells[0]
        copies = sorted(set(ids) | set(calls))
        if len(copies) > 1:
            problems.append(f"{e.label}: {len(copies)} cells hold this exercise (cells {', '.join(map(str, copies))}); "
                            f"graded from cell {cells[0]} only")
        elif ids and calls and calls[0] < ids[0]:
            problems.append(f"{e.label}: cell {calls[0]} verifies this exercise before its answer cell {ids[0]}; "
                            f"graded from cell {ids[0]}")
    return found, problems


def written_answers(nb: nbformat.NotebookNode, chapter: str) -> tuple[dict[str, str], list[str]]:
    """The student's written answers, by exercise label (nbgrader ``grade_id`` ``<label>-written``), and the
    problems found (an answer given in several cells: the first one is kept)."""
    labels = {e.label for e in exercises_for(chapter) if e.written}
    out: dict[str, str] = {}
    problems = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "markdown":
            continue
        grade_id = _grade_id(cell) or ""
        match = re.match(r"\*\*Your answer to `([\w-]+)`", cell.source)
        label = grade_id.removesuffix(WRITTEN_SUFFIX) if grade_id.endswith(WRITTEN_SUFFIX) else \
            (match.group(1) if match else None)
        if label not in labels:
            continue
        if label in out:
            problems.append(f"{label}: a second written answer in cell {index} was not collected")
            continue
        out[label] = re.sub(r"^\*\*Your answer to `[\w-]+`\*\*[^\n]*\n*", "", cell.source).strip()[:20_000]
    return out, problems
