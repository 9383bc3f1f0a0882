"""Deprecated path, kept for one release: the exercises moved to :mod:`attnconv.course.exercises`."""

from ..course.exercises import (
    EXERCISES,
    CheckResult,
    Exercise,
    exercise_table,
    exercises_for,
    grade_namespace,
    register,
    verify,
)

__all__ = [
    "EXERCISES", "CheckResult", "Exercise", "exercise_table", "exercises_for", "grade_namespace", "register", "verify",
]
