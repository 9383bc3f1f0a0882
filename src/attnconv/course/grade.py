"""Autograder: ``python -m attnconv.course.grade SUBMISSION.ipynb [--report report.json]``.

It executes the submission top to bottom in a fresh kernel, with a time limit per cell and for the whole
notebook, carrying on past cells that fail. It then runs the library's check for every graded exercise of the
chapter inside that kernel, prints a table with a total score, and writes a JSON report.

A crashing cell costs only the exercises whose values it should have produced. An infinite loop is interrupted
at the cell time limit. A deleted cell or a renamed variable shows up as that exercise's failure, with a message.
Works offline and in Colab (no network is touched).
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError, DeadKernelError

from .exercises import exercises_for

__all__ = ["ExerciseGrade", "GradeReport", "grade_notebook", "main"]

MARKER = "@@ATTNCONV-GRADE@@"
GRADING_TIMEOUT = 300  # seconds allowed to each grading cell


@dataclass
class ExerciseGrade:
    label: str
    kind: str
    passed: bool
    points: int
    max_points: int
    message: str


@dataclass
class GradeReport:
    """What the grader found: one entry per graded exercise, and the cells that raised."""

    notebook: str
    chapter: str
    exercises: list[ExerciseGrade] = field(default_factory=list)
    cell_errors: list[dict] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def score(self) -> int:
        return sum(e.points for e in self.exercises)

    @property
    def max_score(self) -> int:
        return sum(e.max_points for e in self.exercises)

    def table(self) -> str:
        width = max([len(e.label) for e in self.exercises] + [8])
        lines = [f"{'exercise':{width}s}  kind        result  message", "-" * (width + 60)]
        for e in self.exercises:
            mark = "pass" if e.passed else "FAIL"
            lines.append(f"{e.label:{width}s}  {e.kind:10s}  {mark:6s}  {e.message}")
        lines.append(f"score: {self.score}/{self.max_score}  ({self.chapter}, {self.seconds:.0f} s)")
        return "\n".join(lines)

    def to_json(self) -> str:
        data = asdict(self) | {"score": self.score, "max_score": self.max_score}
        return json.dumps(data, indent=2)


def _grading_cell(label: str, checks: tuple[str, ...]) -> nbformat.NotebookNode:
    code = (
        "".join(f"import {module}\n" for module in checks)
        + "import json as _grade_json\n"
        "from attnconv.course.exercises import grade_namespace as _grade\n"
        f"print({MARKER!r} + _grade_json.dumps(_grade({label!r}, globals())))"
    )
    cell = nbformat.v4.new_code_cell(code)
    cell.metadata["grader"] = label
    return cell


def _read(path: Path) -> nbformat.NotebookNode:
    if path.suffix == ".md":
        import jupytext

        return jupytext.read(path)
    try:
        return nbformat.read(path, as_version=4)
    except Exception as err:  # a corrupt file must give one clear error
        raise ValueError(f"{path} is not a readable notebook: {err}") from err


def grade_notebook(path: str | Path, chapter: str | None = None, cell_timeout: int = 120,
                   total_timeout: int = 1800, checks: tuple[str, ...] = ()) -> GradeReport:
    """Execute ``path`` and grade the exercises of ``chapter`` (default: the file's stem, ``NN_name``).

    ``checks`` names extra modules that register exercises of their own (a course's additions); they are
    imported here and in the notebook's kernel, whose working folder is the notebook's.

    Raises:
        ValueError: the file is not a notebook, or the chapter has no graded exercises.
    """
    path = Path(path)
    chapter = chapter or path.stem
    for module in checks:
        importlib.import_module(module)
    graded = [e for e in exercises_for(chapter) if e.graded]
    if not graded:
        raise ValueError(f"chapter {chapter!r} has no graded exercises (pass --chapter NN_name)")
    nb = _read(path)
    nb.cells = [c for c in nb.cells if "grader" not in c.get("metadata", {})]  # a submission cannot pre-grade itself
    first_grading = len(nb.cells)
    nb.cells += [_grading_cell(e.label, tuple(checks)) for e in graded]
    report = GradeReport(str(path), chapter)
    def timeout_for(cell: nbformat.NotebookNode) -> int:
        # The checks import the library (torch, SymPy) in the kernel: never cut them short on a busy machine.
        return max(cell_timeout, GRADING_TIMEOUT) if "grader" in cell.get("metadata", {}) else cell_timeout

    client = NotebookClient(nb, timeout_func=timeout_for, allow_errors=True, interrupt_on_timeout=True,
                            kernel_name="python3", resources={"metadata": {"path": str(path.parent.resolve())}})
    start = time.monotonic()
    with client.setup_kernel():
        for index, cell in enumerate(nb.cells):
            if cell.cell_type != "code":
                continue
            if index < first_grading and time.monotonic() - start > total_timeout:
                report.cell_errors.append({"cell": index, "ename": "TimeLimit", "evalue": "notebook time limit reached"})
                continue
            try:
                client.execute_cell(cell, index)
            except DeadKernelError:
                report.cell_errors.append({"cell": index, "ename": "DeadKernelError", "evalue": "the kernel died"})
                break
            except CellExecutionError as err:  # only raised for cells that may not fail; record and go on
                report.cell_errors.append({"cell": index, "ename": type(err).__name__, "evalue": str(err)[:200]})
                continue
            for out in cell.get("outputs", []):
                if out.get("output_type") == "error" and index < first_grading:
                    report.cell_errors.append({"cell": index, "ename": out.get("ename"), "evalue": out.get("evalue", "")[:200]})
    report.seconds = time.monotonic() - start

    found = {}
    for cell in nb.cells[first_grading:]:
        for out in cell.get("outputs", []):
            text = out.get("text", "") if out.get("output_type") == "stream" else ""
            for line in text.splitlines():
                if line.startswith(MARKER):
                    data = json.loads(line[len(MARKER):])
                    found[data["label"]] = data
    for exercise in graded:
        data = found.get(exercise.label, {"passed": False, "points": 0, "message": "the check could not run"})
        report.exercises.append(ExerciseGrade(exercise.label, exercise.kind, data["passed"], data["points"],
                                              exercise.points, data["message"]))
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("submission", type=Path, help="the notebook to grade (.ipynb)")
    parser.add_argument("--chapter", help="NN_name of the chapter (default: the file name)")
    parser.add_argument("--report", type=Path, help="where to write the JSON report (default: SUBMISSION.grade.json)")
    parser.add_argument("--cell-timeout", type=int, default=120, help="seconds per cell (default 120)")
    parser.add_argument("--total-timeout", type=int, default=1800, help="seconds for the whole notebook")
    parser.add_argument("--checks", action="append", default=[], help="a module registering extra exercises")
    args = parser.parse_args(argv)
    if not args.submission.is_file():
        parser.error(f"submission {args.submission} does not exist")
    report = grade_notebook(args.submission, args.chapter, args.cell_timeout, args.total_timeout, tuple(args.checks))
    print(report.table())
    target = args.report or args.submission.with_suffix(".grade.json")
    target.write_text(report.to_json() + "\n")
    print(f"report written to {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
