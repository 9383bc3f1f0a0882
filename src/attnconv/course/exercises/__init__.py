"""Exercises of the book: the registry and the checks behind :func:`~attnconv.course.exercises.core.verify` and
the grader. ``part1`` to ``part6`` register the checks of the chapters' exercises when imported."""

from . import part1, part2, part3, part4, part5, part6  # noqa: F401  (registers the checks)
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
