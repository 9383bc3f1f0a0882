"""Exercises of the book: the registry and the checks behind :func:`~attnconv.course.exercises.core.verify` and
the grader. ``part1`` to ``part6`` register the checks of the chapters' exercises when imported, which the
registry does the first time one of their exercises is asked for (``core.PARTS``)."""

from .core import (
    EXERCISES,
    CheckResult,
    Exercise,
    exercise_table,
    exercises_for,
    register,
    run_check,
    score_results,
    verify,
)

__all__ = [
    "EXERCISES", "CheckResult", "Exercise", "exercise_table", "exercises_for", "register", "run_check",
    "score_results", "verify",
]
