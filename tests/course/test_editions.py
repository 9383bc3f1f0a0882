"""Both editions of every chapter, executed in a fresh kernel and graded (slow: each chapter runs twice)."""

from __future__ import annotations

from pathlib import Path

import pytest

from attnconv.course.grade import grade_notebook

ROOT = Path(__file__).resolve().parents[2]
CHAPTERS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


@pytest.mark.parametrize("notebook", CHAPTERS, ids=lambda p: p.stem)
def test_worked_edition_gets_full_marks(notebook):
    report = grade_notebook(notebook, cell_timeout=300)
    assert report.score == report.max_score > 0, report.table()
    assert not report.cell_errors, report.cell_errors


@pytest.mark.parametrize("notebook", CHAPTERS, ids=lambda p: p.stem)
def test_untouched_student_edition_gets_zero_and_only_not_implemented_errors(notebook):
    report = grade_notebook(ROOT / "student" / notebook.name, chapter=notebook.stem, cell_timeout=300)
    assert report.score == 0, report.table()
    assert report.cell_errors, "the stubs must raise"
    assert {e["ename"] for e in report.cell_errors} == {"NotImplementedError"}, report.cell_errors
