"""The toy chapter's checks, importable by this process and by every process the grader starts."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from attnconv.course.exercises import EXERCISES
from toy_course import LABELS, TOY_CHECKS

HERE = Path(__file__).resolve().parent


@pytest.fixture
def toy(tmp_path, monkeypatch):
    checks = tmp_path / "checks"
    checks.mkdir()
    (checks / "toy_checks.py").write_text(TOY_CHECKS)
    monkeypatch.syspath_prepend(str(checks))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(checks), os.environ.get("PYTHONPATH", "")]))
    import toy_checks  # noqa: F401  (registers the toy exercises in this process)

    yield tmp_path
    sys.modules.pop("toy_checks", None)
    for label in LABELS:
        EXERCISES.pop(label, None)
    try:
        from attnconv.course.checker import Library
    except ImportError:  # a grader without a pristine library (the attack table's baseline)
        return
    Library._cache.pop(("toy_checks",), None)


# The course's tests are few and long (each grading runs a kernel), so the order they are handed to the workers in
# sets the stage's time: the longest start first (their order in --durations), so that the workers finish together
# instead of one grading chapter 04 alone at the end. Every other test keeps its place after them.
LONGEST_FIRST = (
    "test_worked_edition_gets_full_marks[04_",
    "test_a_folder_with_attackers_grades_everyone_as_if_they_were_not_there",
    "test_worked_edition_gets_full_marks[06_",
    "test_total_time_holds_while_a_cell_ignores_interrupts",
    "test_worked_edition_gets_full_marks[03_",
    "test_worked_edition_gets_full_marks[05_",
    "test_untouched_student_edition_gets_zero",
    "test_worked_edition_gets_full_marks[07_",
    "test_a_folder_grades_into_a_gradebook",
    "test_a_cell_that_raises_or_loops",
    "test_memory_is_limited",
)


def _rank(item) -> int:
    if HERE not in item.path.parents:
        return len(LONGEST_FIRST)
    return next((i for i, name in enumerate(LONGEST_FIRST) if item.name.startswith(name)), len(LONGEST_FIRST))


def pytest_collection_modifyitems(items):
    items.sort(key=_rank)  # a stable sort: the rest stay in file order
