"""The grader: ``python -m attnconv.course.grade SUBMISSION.ipynb`` or ``... SUBMISSIONS_DIR --chapter NN
--gradebook grades.csv``.

Nothing the student's kernel says is trusted:

1. The submission runs top to bottom in a fresh kernel, with a time limit per cell and for the whole notebook,
   carrying on past cells that fail.
2. Right after an exercise's cell runs, a short cell hands that exercise's answers back as data
   (:mod:`attnconv.course.wire`): numbers, arrays, tensors, SymPy expressions. Each exercise is graded on the
   state its own cell left, so a later cell cannot undo it, and a cell that raised or ran out of time is
   reported with its own error.
3. For a function exercise the student's cell runs again in a sandbox process, on hidden inputs built from a
   seed the notebook never sees (:mod:`attnconv.course.sandbox`); only data comes back.
4. The checks, the registry and the points run here, in the grader's process, which never runs student code.
   The points come from the registry and are capped there.

A folder of submissions is graded in parallel (``--jobs``) into one CSV gradebook, with a row per student and a
column per exercise. Written answers are collected into a Markdown sheet per student, with a ``points:`` line
that an instructor fills in and the gradebook reads back.
"""

from __future__ import annotations

import argparse
import csv
import importlib
import json
import logging
import os
import re
import secrets
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

import nbformat

from . import wire
from .exercises import EXERCISES, exercises_for, run_check, score_results
from .exercises.core import CheckResult, Exercise

__all__ = ["ExerciseGrade", "GradeReport", "grade_folder", "grade_notebook", "main", "read_sheet",
           "resolve_chapter", "write_gradebook", "write_sheet"]

MARKER = "@@ATTNCONV-ANSWERS@@"
CAPTURE_TIMEOUT = 120  # seconds to hand one exercise's answers back (a large tensor on a busy machine)
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
    """What the grader found: one entry per graded exercise, the cells that raised, and the written answers."""

    notebook: str
    chapter: str
    exercises: list[ExerciseGrade] = field(default_factory=list)
    cell_errors: list[dict] = field(default_factory=list)
    written: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0

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
        lines.append(f"score: {self.score}/{self.max_score}  ({self.chapter}, {self.seconds:.0f} s)")
        return "\n".join(lines)

    def to_json(self) -> str:
        data = asdict(self) | {"score": self.score, "max_score": self.max_score}
        return json.dumps(data, indent=2)


def resolve_chapter(chapter: str) -> str:
    """``"01"`` or ``"01_convolution_as_shifts"`` → the chapter's full name; ValueError when no chapter matches."""
    chapters = sorted({e.chapter for e in EXERCISES.values()})
    if chapter in chapters:
        return chapter
    matches = [c for c in chapters if c.split("_")[0] == chapter or c.startswith(chapter + "_")]
    if len(matches) != 1:
        raise ValueError(f"chapter {chapter!r} has no graded exercises; expected one of {', '.join(chapters)}")
    return matches[0]


def _read(path: Path) -> nbformat.NotebookNode:
    if path.suffix == ".md":
        import jupytext

        return jupytext.read(path)
    try:
        return nbformat.read(path, as_version=4)
    except Exception as err:  # a corrupt file must give one clear error
        raise ValueError(f"{path} is not a readable notebook: {err}") from err


def _grade_id(cell) -> str | None:
    meta = cell.get("metadata", {}).get("nbgrader", {})
    return meta.get("grade_id") if isinstance(meta, dict) else None


def answer_cells(nb: nbformat.NotebookNode, exercises: list[Exercise]) -> dict[str, int]:
    """The index of each exercise's answer cell: nbgrader's ``grade_id``, else the cell that calls ``verify``."""
    found: dict[str, int] = {}
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        for e in exercises:
            if e.label in found:
                continue
            if _grade_id(cell) == e.label or re.search(rf"verify\(\s*[\"']{re.escape(e.label)}[\"']", cell.source):
                found[e.label] = index
    return found


def written_answers(nb: nbformat.NotebookNode, chapter: str) -> dict[str, str]:
    """The student's written answers, by exercise label (nbgrader ``grade_id`` ``<label>-written``)."""
    labels = {e.label for e in exercises_for(chapter) if e.written}
    out: dict[str, str] = {}
    for cell in nb.cells:
        if cell.cell_type != "markdown":
            continue
        grade_id = _grade_id(cell) or ""
        match = re.match(r"\*\*Your answer to `([\w-]+)`", cell.source)
        label = grade_id.removesuffix(WRITTEN_SUFFIX) if grade_id.endswith(WRITTEN_SUFFIX) else \
            (match.group(1) if match else None)
        if label in labels and label not in out:
            out[label] = re.sub(r"^\*\*Your answer to `[\w-]+`\*\*[^\n]*\n*", "", cell.source).strip()
    return out


def _capture_cell(names: tuple[str, ...], nonce: str) -> nbformat.NotebookNode:
    # Runs in the student's kernel: it only reads values and prints them as data; nothing it prints is a grade.
    code = ("(lambda g: print({marker!r} + __import__('attnconv.course.wire', fromlist=['dumps']).dumps("
            "{{n: g[n] for n in {names!r} if n in g}})))(globals())").format(marker=MARKER + nonce, names=names)
    return nbformat.v4.new_code_cell(code)


def _ipc_config(folder: str):
    from traitlets.config import Config

    # IPC transport: the kernel's sockets are files in a private folder, so nothing listens on TCP (and the
    # kernel prints no "running over TCP without encryption" warning).
    config = Config()
    config.KernelManager.transport = "ipc"
    config.KernelManager.ip = os.path.join(folder, "kernel")
    return config


_QUIET = logging.getLogger("attnconv.course.grade.kernel")  # nbclient's own timeout messages: the report says it
_QUIET.setLevel(logging.CRITICAL)


def _cell_error(cell) -> dict | None:
    for out in cell.get("outputs", []):
        if out.get("output_type") == "error":
            return {"ename": out.get("ename", ""), "evalue": str(out.get("evalue", ""))[:300]}
    return None


def _own_error(label: str, error: dict | None, cell_timeout: int) -> str | None:
    """The reason an exercise fails because its own cell did, or None (no error, or only verify's verdict)."""
    if error is None:
        return None
    if error["ename"] == "AssertionError" and error["evalue"].startswith(f"{label}:"):
        return None  # the chapter's own verify said no: the answers are still there to be graded
    if error["ename"] == "CellTimeout":
        return f"your cell ran past the {cell_timeout} s time limit"
    if error["ename"] == "TimeLimit":
        return "the notebook's time limit was reached before your cell ran"
    return f"your cell raised {error['ename']}: {error['evalue']}"


def grade_notebook(path: str | Path, chapter: str | None = None, cell_timeout: int = 120,
                   total_timeout: int = 1800, checks: tuple[str, ...] = (), seed: int | None = None) -> GradeReport:
    """Execute ``path`` and grade the exercises of ``chapter`` (default: the file's stem, ``NN_name``).

    ``checks`` names extra modules that register exercises of their own (a course's additions); the grader
    imports them, and so does the sandbox. ``seed`` fixes the hidden inputs (default: a fresh random seed).

    Raises:
        ValueError: the file is not a notebook, or the chapter has no graded exercises.
    """
    path = Path(path)
    for module in checks:
        importlib.import_module(module)
    chapter = resolve_chapter(chapter or path.stem)
    graded = [e for e in exercises_for(chapter) if e.graded]
    nb = _read(path)
    report = GradeReport(str(path), chapter)
    cells = answer_cells(nb, graded)
    capture_after = {}
    for e in graded:
        if e.label in cells and not e.sandboxed:
            capture_after.setdefault(cells[e.label], []).append(e)
    nonce = secrets.token_hex(8)
    captured: dict[str, str] = {}
    errors: dict[int, dict] = {}
    timeout_error = {"ename": "CellTimeout", "evalue": f"the cell ran past the {cell_timeout} s time limit"}

    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError, DeadKernelError

    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="attnconv-grade-") as folder:
        client = NotebookClient(nb, config=_ipc_config(folder), timeout=cell_timeout, allow_errors=True,
                                interrupt_on_timeout=True, error_on_timeout=timeout_error, kernel_name="python3",
                                log=_QUIET,
                                resources={"metadata": {"path": str(path.parent.resolve())}})
        with client.setup_kernel():
            for index, cell in enumerate(nb.cells):
                if cell.cell_type != "code":
                    continue
                if time.monotonic() - start > total_timeout:
                    errors[index] = {"ename": "TimeLimit", "evalue": "notebook time limit reached"}
                    continue
                began = time.monotonic()
                try:
                    client.execute_cell(cell, index)
                except DeadKernelError:
                    errors[index] = {"ename": "DeadKernelError", "evalue": "the kernel died"}
                    break
                except CellExecutionError as err:
                    errors[index] = {"ename": type(err).__name__, "evalue": str(err)[:300]}
                if (error := _cell_error(cell)) is not None:
                    timed_out = error["ename"] in ("KeyboardInterrupt", "CellTimeout") and \
                        time.monotonic() - began >= cell_timeout
                    errors[index] = timeout_error if timed_out else error
                for exercise in capture_after.get(index, []):
                    capture = _capture_cell(exercise.names, nonce)
                    client.timeout = CAPTURE_TIMEOUT
                    try:
                        client.execute_cell(capture, index)
                    except (CellExecutionError, DeadKernelError):
                        pass
                    finally:
                        client.timeout = cell_timeout
                        nb.cells[index] = cell  # nbclient stores the executed cell at the index it is given
                    for out in capture.get("outputs", []):
                        for line in (out.get("text", "") if out.get("output_type") == "stream" else "").splitlines():
                            if line.startswith(MARKER + nonce):
                                captured[exercise.label] = line[len(MARKER + nonce):]
    report.cell_errors = [{"cell": i, **e} for i, e in sorted(errors.items())]
    report.written = written_answers(nb, chapter)

    seed = secrets.randbits(48) if seed is None else seed
    sandboxed = [e for e in graded if e.sandboxed and e.label in cells and _own_error(
        e.label, errors.get(cells[e.label]), cell_timeout) is None]
    from .sandbox import run_function_exercise

    with ThreadPoolExecutor(max_workers=2) as pool:
        runs = {e.label: pool.submit(run_function_exercise, e.label, nb.cells[cells[e.label]].source,
                                     seed + i, cell_timeout + 60, tuple(checks)) for i, e in enumerate(sandboxed)}
        hidden = {label: future.result() for label, future in runs.items()}

    for i, exercise in enumerate(graded):
        report.exercises.append(_grade_one(exercise, cells.get(exercise.label), errors, captured, hidden,
                                           seed + sandboxed.index(exercise) if exercise in sandboxed else seed,
                                           cell_timeout))
    report.seconds = time.monotonic() - start
    return report


def _grade_one(exercise: Exercise, index: int | None, errors: dict, captured: dict, hidden: dict, seed: int,
               cell_timeout: int) -> ExerciseGrade:
    def grade(results: list[CheckResult], given=None) -> ExerciseGrade:
        points, passed, message = score_results(exercise, results)
        parts = [{"part": r.part, "passed": r.passed, "message": r.message} for r in results]
        return ExerciseGrade(exercise.label, exercise.kind, passed, points, exercise.points, message, parts)

    if index is None:
        return grade([CheckResult(False, f"no cell calls verify(\"{exercise.label}\", ...): expected the exercise's "
                                         "cell, received none (was it deleted?)")])
    reason = _own_error(exercise.label, errors.get(index), cell_timeout)
    if reason is not None:
        return grade([CheckResult(False, reason)])
    given = None
    try:
        if exercise.sandboxed:
            answers, why = hidden.get(exercise.label, (None, "the hidden check did not run"))
            if answers is None:
                return grade([CheckResult(False, why)])
            data = wire.loads(answers["json"])
            given = exercise.context(seed)
        elif exercise.label in captured:
            data = wire.loads(captured[exercise.label])
        else:
            return grade([CheckResult(False, "your answers could not be read back after the cell ran")])
    except (ValueError, SyntaxError, TypeError, KeyError) as err:
        return grade([CheckResult(False, f"your answers could not be read as data ({err})")])
    return grade(run_check(exercise, data, given))


# ----- written answers ---------------------------------------------------------------------------------------------

def write_sheet(report: GradeReport, folder: Path) -> Path:
    """Write (once) ``folder/<student>.md``, the student's written answers with an empty ``points:`` line each."""
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"{report.student}.md"
    if target.exists():
        return target  # an instructor may already have marked it
    lines = [f"# Written answers: {report.student}", "",
             f"Chapter `{report.chapter}`, from `{Path(report.notebook).name}`. Mark each answer by writing a number "
             "after `points:`; the gradebook reads it back.", ""]
    for exercise in exercises_for(report.chapter):
        if not exercise.written:
            continue
        answer = report.written.get(exercise.label, "").strip()
        if not answer or answer == "YOUR ANSWER HERE":
            answer = "*(no answer)*"
        lines += [f"## {exercise.label}", "", answer, "", f"points: ___ / {exercise.written}", ""]
    tmp = target.with_suffix(".md.tmp")
    tmp.write_text("\n".join(lines))
    tmp.replace(target)
    return target


def read_sheet(path: Path, chapter: str) -> dict[str, float | None]:
    """The points written in a sheet, by label (None where not marked yet), capped at the registry's."""
    limits = {e.label: e.written for e in exercises_for(chapter) if e.written}
    points: dict[str, float | None] = {label: None for label in limits}
    label = None
    for line in path.read_text().splitlines():
        if (m := re.match(r"^## (\S+)\s*$", line)):
            label = m.group(1) if m.group(1) in limits else None
        elif label and (m := re.match(r"^points:\s*([0-9]+(?:\.[0-9]+)?)\s*/", line.strip())):
            points[label] = max(0.0, min(float(m.group(1)), float(limits[label])))
    return points


# ----- a folder of submissions -------------------------------------------------------------------------------------

def _grade_path(args: tuple) -> GradeReport:
    return grade_notebook(*args)


def grade_folder(folder: Path, chapter: str, jobs: int | None = None, cell_timeout: int = 120,
                 total_timeout: int = 1800, checks: tuple[str, ...] = ()) -> list[GradeReport]:
    """Grade every ``*.ipynb`` in ``folder``, ``jobs`` at a time (default: half the CPU cores)."""
    paths = sorted(p for p in Path(folder).glob("*.ipynb") if not p.name.startswith("."))
    if not paths:
        raise ValueError(f"no .ipynb submissions in {folder}")
    jobs = jobs or max(1, (os.cpu_count() or 1) // 2)
    tasks = [(p, chapter, cell_timeout, total_timeout, checks) for p in paths]
    if jobs == 1 or len(paths) == 1:
        return [_grade_path(t) for t in tasks]
    with ProcessPoolExecutor(max_workers=min(jobs, len(paths))) as pool:
        return list(pool.map(_grade_path, tasks))


def write_gradebook(reports: list[GradeReport], target: Path, written: Path | None = None) -> Path:
    """One row per student, one column per exercise (and per written part, from the marked sheets)."""
    if not reports:
        raise ValueError("no reports to write")
    chapter = reports[0].chapter
    graded = [e for e in exercises_for(chapter) if e.graded]
    by_hand = [e for e in exercises_for(chapter) if e.written]
    header = ["student", "notebook"] + [e.label for e in graded] + ["auto_score", "auto_max"] + \
        [e.label + WRITTEN_SUFFIX for e in by_hand] + ["written_score", "written_max", "total", "max", "errors"]
    rows = []
    for report in reports:
        points = {e.label: e.points for e in report.exercises}
        marks = read_sheet(written / f"{report.student}.md", chapter) if written and \
            (written / f"{report.student}.md").exists() else {}
        written_score = sum(v for v in marks.values() if v is not None)
        row = [report.student, Path(report.notebook).name] + [points.get(e.label, 0) for e in graded] + \
            [report.score, report.max_score] + \
            ["" if marks.get(e.label) is None else f"{marks[e.label]:g}" for e in by_hand] + \
            [f"{written_score:g}", sum(e.written for e in by_hand), f"{report.score + written_score:g}",
             report.max_score + sum(e.written for e in by_hand), len(report.cell_errors)]
        rows.append(row)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(target.suffix + ".tmp")
    with tmp.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)
    tmp.replace(target)
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("submission", type=Path, help="a notebook (.ipynb), or a folder of them")
    parser.add_argument("--chapter", help="NN or NN_name of the chapter (default: the file name)")
    parser.add_argument("--report", type=Path, help="where to write the JSON report of one notebook "
                                                    "(default: SUBMISSION.grade.json)")
    parser.add_argument("--gradebook", type=Path, help="CSV gradebook to write (one row per notebook)")
    parser.add_argument("--written", type=Path, help="folder of written-answer sheets (default: next to the "
                                                     "gradebook, in written/)")
    parser.add_argument("--jobs", type=int, help="notebooks graded at once (default: half the CPU cores)")
    parser.add_argument("--cell-timeout", type=int, default=120, help="seconds per cell (default 120)")
    parser.add_argument("--total-timeout", type=int, default=1800, help="seconds for the whole notebook")
    parser.add_argument("--checks", action="append", default=[], help="a module registering extra exercises")
    args = parser.parse_args(argv)
    if not args.submission.exists():
        parser.error(f"submission {args.submission} does not exist")
    for module in args.checks:
        importlib.import_module(module)
    if args.submission.is_dir():
        if not args.chapter:
            parser.error("grading a folder needs --chapter")
        reports = grade_folder(args.submission, resolve_chapter(args.chapter), args.jobs, args.cell_timeout,
                               args.total_timeout, tuple(args.checks))
    else:
        reports = [grade_notebook(args.submission, args.chapter, args.cell_timeout, args.total_timeout,
                                  tuple(args.checks))]
        target = args.report or args.submission.with_suffix(".grade.json")
        target.write_text(reports[0].to_json() + "\n")
        print(reports[0].table())
        print(f"report written to {target}")
    if args.gradebook or args.submission.is_dir():
        gradebook = args.gradebook or args.submission / "grades.csv"
        written = args.written or gradebook.parent / "written"
        if any(e.written for e in exercises_for(reports[0].chapter)):
            for report in reports:
                write_sheet(report, written)
            print(f"written answers in {written}/ (fill in each points: line, then run again)")
        write_gradebook(reports, gradebook, written)
        for report in reports:
            print(f"{report.student:24s} {report.score}/{report.max_score}  ({report.seconds:.0f} s)")
        print(f"gradebook written to {gradebook}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
