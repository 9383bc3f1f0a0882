"""The course edition: exercises with checks, the student notebooks, and the autograder.

- :mod:`attnconv.course.exercises`: the registry of exercises and the check behind each
  (:func:`~attnconv.course.exercises.core.verify` in a chapter, the autograder's verdict).
- :mod:`attnconv.course.student`: the student edition of every chapter (solutions stripped), ``make student``.
- :mod:`attnconv.course.grade`: ``python -m attnconv.course.grade SUBMISSION.ipynb`` (or a folder, into a CSV
  gradebook, ``attnconv.course.gradebook``), which runs a submission in a fresh, isolated kernel
  (``attnconv.course.execute``, ``attnconv.course.isolation``), reads each exercise's answers back as data
  (:mod:`attnconv.course.wire`, SymPy through ``attnconv.course.symrepr``), reruns function exercises on
  hidden inputs (:mod:`attnconv.course.sandbox`), checks them in an isolated checker process
  (``attnconv.course.checker``) and scores them with its own registry; reports in
  ``attnconv.course.report``, written answers in ``attnconv.course.sheets``.
- :mod:`attnconv.course.gradescope`: a Gradescope autograder zip for one chapter.

Only the exercises are imported here (``from attnconv.course import verify``), so that
``python -m attnconv.course.grade`` and ``python -m attnconv.course.student`` run their modules cleanly.
"""

from .exercises import EXERCISES, CheckResult, Exercise, exercise_table, exercises_for, register, verify

__all__ = ["EXERCISES", "CheckResult", "Exercise", "exercise_table", "exercises_for", "register", "verify"]
