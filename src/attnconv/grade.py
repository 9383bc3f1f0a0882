"""Deprecated path, kept for one release: the autograder is :mod:`attnconv.course.grade`
(``python -m attnconv.grade`` still runs it)."""

import sys

from .course.grade import ExerciseGrade, GradeReport, grade_notebook, main

__all__ = ["ExerciseGrade", "GradeReport", "grade_notebook", "main"]

if __name__ == "__main__":
    sys.exit(main())
