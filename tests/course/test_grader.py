"""The grader on a small synthetic chapter: data answers, a function exercise on hidden inputs, cells that fail,
a folder of submissions into a gradebook, written answers into sheets. Its checks live in a module that the
grader, the sandbox and the notebook's kernel all import, as a course's own exercises would."""

from __future__ import annotations

import csv
import os
import sys
import textwrap
from pathlib import Path

import nbformat
import pytest

from attnconv.course.exercises import EXERCISES
from attnconv.course.grade import grade_folder, grade_notebook, read_sheet, write_gradebook, write_sheet
from attnconv.course.student import answer_cell

TOY_CHECKS = """
from attnconv.course.exercises import CheckResult, register


@register("ex-toy-answer", "99_toy", "code", 1, ("answer",))
def answer_is_42(answer):
    ok = answer == 42
    return CheckResult(ok, "right" if ok else f"received {answer!r}, expected the answer to everything")


def _context(seed):
    import random

    return {"xs": [random.Random(seed).randint(-10**6, 10**6) for _ in range(5)]}


@register("ex-toy-square", "99_toy", "code", 1, ("squares",), given=("xs",), context=_context,
          probe=lambda ns: {"squares": [ns["square"](x) for x in ns["xs"]]}, needs=("square",),
          parts=(("squares", 2),))
def square_works(squares, xs):
    ok = list(squares) == [x * x for x in xs]
    return CheckResult(ok, "square works" if ok else f"received {squares} for hidden inputs, expected their squares",
                       "squares")


register("ex-toy-essay", "99_toy", "conceptual", 5, written=3)(None)
"""

SETUP = "import toy_checks\nfrom attnconv.course import verify\nxs = [7]"
ANSWER = 'answer = 6 * 7\nverify("ex-toy-answer", answer=answer)'
SQUARE = 'def square(x):\n    return x * x\nverify("ex-toy-square", square=square, xs=xs)'


@pytest.fixture
def toy(tmp_path, monkeypatch):
    (tmp_path / "toy_checks.py").write_text(TOY_CHECKS)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]))  # kernels
    import toy_checks  # noqa: F401  (registers the toy exercises in this process)

    yield tmp_path
    sys.modules.pop("toy_checks", None)
    for label in ("ex-toy-answer", "ex-toy-square", "ex-toy-essay"):
        EXERCISES.pop(label, None)


def _write(path: Path, *cells) -> Path:
    nb = nbformat.v4.new_notebook(cells=[c if isinstance(c, nbformat.NotebookNode)
                                         else nbformat.v4.new_code_cell(textwrap.dedent(c)) for c in cells])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)
    return path


def _grade(path, **kw):
    return grade_notebook(path, chapter="99_toy", checks=("toy_checks",), **kw)


def _by_label(report):
    return {e.label: e for e in report.exercises}


def test_full_marks_on_hidden_inputs_and_written_answer_collected(toy):
    essay = answer_cell("ex-toy-essay", 3)
    essay.source = essay.source.replace("YOUR ANSWER HERE", "Because the heads are a basis.")
    report = _grade(_write(toy / "99_toy.ipynb", SETUP, ANSWER, SQUARE, essay))
    assert (report.score, report.max_score) == (3, 3) and not report.cell_errors, report.table()
    assert report.written == {"ex-toy-essay": "Because the heads are a basis."}


def test_a_function_that_only_knows_the_visible_input_fails_the_hidden_check(toy):
    typed = 'def square(x):\n    return 49\nverify("ex-toy-square", square=square, xs=xs)'
    grades = _by_label(_grade(_write(toy / "a.ipynb", SETUP, ANSWER, typed)))
    assert grades["ex-toy-answer"].points == 1
    assert grades["ex-toy-square"].points == 0 and "hidden inputs" in grades["ex-toy-square"].message


def test_a_later_cell_cannot_fail_an_exercise_that_passed(toy):
    grades = _by_label(_grade(_write(toy / "a.ipynb", SETUP, ANSWER, "answer = 0\ndel answer", SQUARE,
                                     "def square(x):\n    return 0")))
    assert grades["ex-toy-answer"].passed and grades["ex-toy-square"].passed


def test_a_cell_that_raises_or_loops_is_the_reason_given(toy):
    boom = 'answer = 42\nraise ValueError("boom")\nverify("ex-toy-answer", answer=answer)'
    loop = 'def square(x):\n    return x * x\nwhile True:\n    pass\nverify("ex-toy-square", square=square, xs=xs)'
    report = _grade(_write(toy / "a.ipynb", SETUP, boom, loop), cell_timeout=20)
    grades = _by_label(report)
    assert report.score == 0
    assert grades["ex-toy-answer"].message == "your cell raised ValueError: boom"
    assert "ran past the 20 s time limit" in grades["ex-toy-square"].message
    assert [e["cell"] for e in report.cell_errors] == [1, 2]


def test_a_deleted_cell_and_a_wrong_answer_have_messages(toy):
    report = _grade(_write(toy / "a.ipynb", SETUP, 'answer = 41\nverify("ex-toy-answer", answer=answer)'))
    grades = _by_label(report)
    assert "received 41" in grades["ex-toy-answer"].message and "42" not in grades["ex-toy-answer"].message
    assert "deleted" in grades["ex-toy-square"].message and report.score == 0


def test_unknown_chapter_is_refused(tmp_path):
    with pytest.raises(ValueError, match="no graded exercises"):
        grade_notebook(_write(tmp_path / "00_nothing.ipynb", "x = 1"))


def test_a_folder_grades_into_a_gradebook_and_written_points_are_read_back(toy):
    folder = toy / "submissions"
    folder.mkdir()
    essay = answer_cell("ex-toy-essay", 3)
    _write(folder / "alice.ipynb", SETUP, ANSWER, SQUARE, essay)
    _write(folder / "bob.ipynb", SETUP, 'answer = 41\nverify("ex-toy-answer", answer=answer)', SQUARE)
    _write(folder / "carol.ipynb", SETUP, 'raise NotImplementedError()\nverify("ex-toy-answer", answer=answer)')
    reports = grade_folder(folder, "99_toy", jobs=2, checks=("toy_checks",))
    assert [r.student for r in reports] == ["alice", "bob", "carol"]
    sheets = toy / "written"
    for report in reports:
        write_sheet(report, sheets)
    sheet = (sheets / "alice.md").read_text()
    assert "## ex-toy-essay" in sheet and "points: ___ / 3" in sheet
    assert read_sheet(sheets / "alice.md", "99_toy") == {"ex-toy-essay": None}
    (sheets / "alice.md").write_text(sheet.replace("points: ___ / 3", "points: 2.5 / 3"))
    (sheets / "bob.md").write_text((sheets / "bob.md").read_text().replace("points: ___ / 3", "points: 9 / 3"))
    write_sheet(reports[0], sheets)  # the sheet is written again, and the instructor's mark is kept
    rows = list(csv.DictReader(write_gradebook(reports, toy / "grades.csv", sheets).open()))
    assert [r["student"] for r in rows] == ["alice", "bob", "carol"]
    assert [(r["ex-toy-answer"], r["ex-toy-square"], r["auto_score"]) for r in rows] == \
        [("1", "2", "3"), ("0", "2", "2"), ("0", "0", "0")]
    assert [(r["ex-toy-essay-written"], r["total"], r["max"]) for r in rows] == \
        [("2.5", "5.5", "6"), ("3", "5", "6"), ("", "0", "6")]  # bob's 9 is capped at the registry's 3
