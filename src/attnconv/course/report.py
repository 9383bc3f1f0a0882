"""What the grader reports, and where in a notebook it finds each exercise.

:class:`GradeReport` is one submission's result: a line per graded exercise, the cells that raised, the written
answers, and the problems found on the way (a duplicated or renamed exercise cell, a notebook that could not be
read, the protections that were missing). :func:`answer_cells` finds each exercise's answer cell and reports
cells that are duplicated or carry another exercise's ``grade_id``.
"""

from __future__ import annotations

import json
import os
import re
import stat
from dataclasses import InitVar, asdict, dataclass, field
from pathlib import Path

import nbformat

from . import escape
from .exercises import EXERCISES, exercises_for
from .exercises.core import Exercise

__all__ = ["ExerciseGrade", "GradeReport", "MAX_SUBMISSION_MB", "WRITTEN_SUFFIX", "answer_cells", "check_submission",
           "read_notebook", "read_submission", "resolve_chapter", "submission_limit", "written_answers"]

WRITTEN_SUFFIX = "-written"
MAX_SUBMISSION_MB = 50  # the default; ATTNCONV_MAX_SUBMISSION_MB sets another


@dataclass
class ExerciseGrade:
    label: str
    kind: str
    passed: bool
    points: int
    max_points: int
    message: str
    parts: list[dict] = field(default_factory=list)
    escaped: InitVar[bool] = False

    def __post_init__(self, escaped: bool) -> None:
        """Finalize the messages (:func:`escape.check_message`): the student's text they repeat is quoted and
        capped, every character is visible. ``escaped``: read back from a report whose messages already were."""
        finish = escape.settled if escaped else escape.check_message

        def joined(parts: list[dict]) -> str:  # as exercises.core.score_results joins the parts' messages
            return "; ".join((f"{p['part']}: " if p["part"] else "") + p["message"] for p in parts)

        raw = [{**p, "part": str(p.get("part", "")), "message": str(p.get("message", ""))} for p in self.parts]
        self.parts = [{**p, "part": escape.cap(escape.visible(p["part"]), 100), "message": finish(p["message"])}
                      for p in raw]
        self.message = joined(self.parts) if raw and str(self.message) == joined(raw) else finish(self.message)


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
        """The report for a terminal: one line per exercise, one per problem. Nothing in it can move the cursor,
        clear a line or start one: every control character is shown as an escape (``attnconv.course.escape.visible``)."""
        labels = [escape.visible(e.label) for e in self.exercises]
        width = max([len(label) for label in labels] + [8])
        lines = [f"{'exercise':{width}s}  kind        points  message", "-" * (width + 60)]
        for label, e in zip(labels, self.exercises):
            lines.append(f"{label:{width}s}  {escape.visible(e.kind):10s}  {e.points:>2d}/{e.max_points:<2d}   "
                         f"{escape.settled(e.message)}")
        lines += [f"problem: {escape.cap(escape.plain(p), escape.TEXT_LIMIT)}" for p in self.problems]
        lines.append(f"score: {self.score}/{self.max_score}  ({escape.visible(self.chapter)}, {self.seconds:.0f} s)")
        return "\n".join(lines)

    def to_json(self) -> str:
        data = asdict(self) | {"score": self.score, "max_score": self.max_score}
        return json.dumps(data, indent=2)

    @classmethod
    def from_json(cls, text: str) -> GradeReport:
        """A report written by ``to_json`` (the grader's own worker wrote it; every field is typed here)."""
        data = json.loads(text)
        exercises = [ExerciseGrade(str(e["label"]), str(e["kind"]), bool(e["passed"]), int(e["points"]),
                                   int(e["max_points"]), str(e["message"]), list(e.get("parts", [])), escaped=True)
                     for e in data["exercises"]]
        return cls(str(data["notebook"]), str(data["chapter"]), exercises, list(data["cell_errors"]),
                   {str(k): str(v) for k, v in data["written"].items()}, float(data["seconds"]),
                   [str(p) for p in data.get("problems", [])], str(data.get("isolation", "")))


def resolve_chapter(chapter: str) -> str:
    """``"01"`` or ``"01_convolution_as_shifts"`` → the chapter's full name; ValueError when no chapter matches."""
    EXERCISES.load_chapter(chapter)  # the book's chapter of that number, if it is one (its checks only)
    for everything in (False, True):  # what is registered (no other import), then every chapter
        chapters = sorted({e.chapter for e in (EXERCISES.values() if everything else dict.values(EXERCISES))})
        if chapter in chapters:
            return chapter
        matches = [c for c in chapters if c.split("_")[0] == chapter or c.startswith(chapter + "_")]
        if len(matches) == 1:
            return matches[0]
    raise ValueError(f"chapter {chapter!r} has no graded exercises; expected one of {', '.join(chapters)}")


def submission_limit() -> int:
    """The largest submission read, in bytes: ``ATTNCONV_MAX_SUBMISSION_MB`` megabytes (default
    :data:`MAX_SUBMISSION_MB`)."""
    try:
        megabytes = float(os.environ.get("ATTNCONV_MAX_SUBMISSION_MB") or MAX_SUBMISSION_MB)
    except ValueError:
        megabytes = MAX_SUBMISSION_MB
    return int(megabytes * 2 ** 20)


_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a named pipe"), (stat.S_ISSOCK, "a socket"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"))


def _refusal(path: Path, status: os.stat_result, limit: int) -> str | None:
    name = escape.visible(path.name)
    if stat.S_ISLNK(status.st_mode):
        return f"{name} is a symbolic link, not a notebook: submit the notebook file itself"
    if not stat.S_ISREG(status.st_mode):
        kind = next((k for test, k in _KINDS if test(status.st_mode)), "not a regular file")
        return f"{name} is {kind}, not a notebook: submit the notebook file itself"
    if status.st_size > limit:
        return (f"{name} is {status.st_size / 2 ** 20:.1f} MB, over the {limit / 2 ** 20:.3g} MB limit on a "
                f"submission (clear the notebook's outputs and submit it again)")
    return None


def check_submission(path: Path, max_bytes: int | None = None) -> None:
    """ValueError when ``path`` is a symbolic link, not a regular file (a folder, a pipe, a device) or larger than
    ``max_bytes`` (default :func:`submission_limit`). The message never shows what the file holds or where a
    link points; nothing is opened."""
    limit = submission_limit() if max_bytes is None else max_bytes
    try:
        status = os.lstat(path)
    except OSError as err:
        raise ValueError(f"{escape.visible(path.name)} cannot be read ({err.strerror})") from None
    reason = _refusal(path, status, limit)
    if reason:
        raise ValueError(reason)


def read_submission(path: Path, max_bytes: int | None = None) -> bytes:
    """The bytes of the submission at ``path``, read only when it is a regular file (not a symbolic link, a pipe,
    a device or a folder) of at most ``max_bytes`` (default :func:`submission_limit`); ValueError otherwise.

    The file is opened without following a link and without blocking, then checked again on the open file, so
    that a link or a pipe put in its place between the check and the read is refused too."""
    limit = submission_limit() if max_bytes is None else max_bytes
    check_submission(path, limit)
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as err:
        raise ValueError(f"{escape.visible(path.name)} cannot be read ({err.strerror})") from None
    try:
        reason = _refusal(path, os.fstat(fd), limit)
        if reason:
            raise ValueError(reason)
        chunks, size = [], 0
        while size <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    finally:
        os.close(fd)
    if size > limit:
        raise ValueError(f"{escape.visible(path.name)} is over the {limit / 2 ** 20:.3g} MB limit on a submission")
    return b"".join(chunks)


def read_notebook(path: Path) -> nbformat.NotebookNode:
    """The notebook at ``path`` (``.ipynb``, or a jupytext ``.md``); ValueError naming the file when unreadable,
    and when it is a symbolic link, not a regular file or too large (:func:`read_submission`)."""
    path = Path(path)
    data = read_submission(path)  # its own ValueError: a refused file is not "unreadable"
    try:
        text = data.decode("utf-8")
        if path.suffix == ".md":
            import jupytext

            return jupytext.reads(text, fmt={"extension": ".md"})
        nb = nbformat.reads(text, as_version=4)
        if not isinstance(nb.get("cells"), list):
            raise ValueError("it has no list of cells")
        for cell in nb.cells:
            if cell.get("cell_type") not in ("code", "markdown", "raw") or not isinstance(cell.get("source"), str):
                raise ValueError("a cell has no type or no source")
        return nb
    except Exception as err:  # a corrupt file must give one clear error
        reason = "it is not UTF-8 text" if isinstance(err, UnicodeDecodeError) else escape.quote(str(err), 200)
        raise ValueError(f"{escape.visible(path.name)} is not a readable notebook: {reason}") from None


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
        elif grade_id is not None and grade_id.removesuffix(WRITTEN_SUFFIX) not in EXERCISES:
            problems.append(f"cell {index} has the grade_id {escape.quote(grade_id, 60)}, which names no exercise "
                            "(renamed?)")
        for label in calls:
            by_call.setdefault(label, []).append(index)
            if grade_id in labels and grade_id != label:
                problems.append(f"cell {index} has the grade_id {escape.quote(grade_id, 60)} but verifies {label!r} "
                            "(renamed?)")
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
