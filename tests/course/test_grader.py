"""The grader on a small synthetic chapter: data answers, a function exercise on hidden inputs, cells that fail,
a folder of submissions into a gradebook, written answers into sheets. The chapter is ``toy_course``'s: its checks
live in a module that the grader, the sandbox and the notebook's kernel all import, as a course's own exercises
would (the ``toy`` fixture of ``conftest.py``)."""

from __future__ import annotations

import csv

import pytest

from attnconv.course.grade import grade_folder, grade_notebook, read_sheet, write_gradebook, write_sheet
from toy_course import ANSWER, CHAPTER, MAX, SETUP, SQUARE, honest_cells, write


def _grade(path, **kw):
    return grade_notebook(path, chapter=CHAPTER, checks=("toy_checks",), **kw)


def _by_label(report):
    return {e.label: e for e in report.exercises}


def test_full_marks_on_hidden_inputs_and_written_answer_collected(toy):
    report = _grade(write(toy / "99_toy.ipynb", *honest_cells("Because the heads are a basis.")))
    assert (report.score, report.max_score) == (MAX, MAX) and not report.cell_errors, report.table()
    assert report.written == {"ex-toy-essay": "Because the heads are a basis."}


def test_a_function_that_only_knows_the_visible_input_fails_the_hidden_check(toy):
    typed = 'def square(x):\n    return 49\nverify("ex-toy-square", square=square, xs=xs)'
    grades = _by_label(_grade(write(toy / "a.ipynb", SETUP, ANSWER, typed)))
    assert grades["ex-toy-answer"].points == 1
    assert grades["ex-toy-square"].points == 0 and "hidden inputs" in grades["ex-toy-square"].message


def test_a_later_cell_cannot_fail_an_exercise_that_passed(toy):
    grades = _by_label(_grade(write(toy / "a.ipynb", SETUP, ANSWER, "answer = 0\ndel answer", SQUARE,
                                     "def square(x):\n    return 0")))
    assert grades["ex-toy-answer"].passed and grades["ex-toy-square"].passed


def test_a_cell_that_raises_or_loops_is_the_reason_given(toy):
    boom = 'answer = 42\nraise ValueError("boom")\nverify("ex-toy-answer", answer=answer)'
    # the loop sleeps: the interrupt at the limit stops it as it would a spinning one, without spending a core
    loop = ('import time\ndef square(x):\n    return x * x\nwhile True:\n    time.sleep(0.05)\n'
            'verify("ex-toy-square", square=square, xs=xs)')
    report = _grade(write(toy / "a.ipynb", SETUP, boom, loop), cell_timeout=10)
    grades = _by_label(report)
    assert report.score == 0
    assert grades["ex-toy-answer"].message == "your cell raised ValueError: 'boom'"
    assert "ran past the 10 s time limit" in grades["ex-toy-square"].message
    assert [e["cell"] for e in report.cell_errors] == [1, 2]


def test_a_deleted_cell_and_a_wrong_answer_have_messages(toy):
    report = _grade(write(toy / "a.ipynb", SETUP, 'answer = 41\nverify("ex-toy-answer", answer=answer)'))
    grades = _by_label(report)
    assert "received 41" in grades["ex-toy-answer"].message and "42" not in grades["ex-toy-answer"].message
    assert "deleted" in grades["ex-toy-square"].message and report.score == 0


def test_unknown_chapter_is_refused(tmp_path):
    with pytest.raises(ValueError, match="no graded exercises"):
        grade_notebook(write(tmp_path / "00_nothing.ipynb", "x = 1"))


def test_a_folder_grades_into_a_gradebook_and_written_points_are_read_back(toy):
    folder = toy / "submissions"
    folder.mkdir()
    write(folder / "alice.ipynb", *honest_cells())
    write(folder / "bob.ipynb", SETUP, 'answer = 41\nverify("ex-toy-answer", answer=answer)', SQUARE)
    write(folder / "carol.ipynb", SETUP, 'raise NotImplementedError()\nverify("ex-toy-answer", answer=answer)')
    reports = grade_folder(folder, CHAPTER, jobs=2, checks=("toy_checks",))
    assert [r.student for r in reports] == ["alice", "bob", "carol"]
    sheets = toy / "written"
    for report in reports:
        write_sheet(report, sheets)
    sheet = (sheets / "alice.md").read_text()
    assert "## ex-toy-essay" in sheet and "points: ___ / 3" in sheet
    assert read_sheet(sheets / "alice.md", CHAPTER) == {"ex-toy-essay": None}
    (sheets / "alice.md").write_text(sheet.replace("points: ___ / 3", "points: 2.5 / 3"))
    (sheets / "bob.md").write_text((sheets / "bob.md").read_text().replace("points: ___ / 3", "points: 9 / 3"))
    write_sheet(reports[0], sheets)  # the sheet is written again, and the instructor's mark is kept
    rows = list(csv.DictReader(write_gradebook(reports, toy / "grades.csv", sheets).open()))
    assert [r["student"] for r in rows] == ["alice", "bob", "carol"]
    assert [(r["ex-toy-answer"], r["ex-toy-square"], r["ex-toy-sym"], r["auto_score"]) for r in rows] == \
        [("1", "2", "1", "4"), ("0", "2", "0", "2"), ("0", "0", "0", "0")]
    assert [(r["ex-toy-essay-written"], r["total"], r["max"]) for r in rows] == \
        [("2.5", "6.5", "7"), ("3", "5", "7"), ("", "0", "7")]  # bob's 9 is capped at the registry's 3
