"""The course edition: exercises with checks, the student notebooks, and the autograder.

- :mod:`attnconv.exercises`: the registry of exercises and the check behind each (:func:`~attnconv.exercises.core.verify`
  in a chapter, the autograder's verdict).
- :mod:`attnconv.course.student`: the student edition of every chapter (solutions stripped), ``make student``.
- :mod:`attnconv.course.grade`: ``python -m attnconv.course.grade SUBMISSION.ipynb``, which runs a submission
  in a fresh kernel and scores its exercises.

Nothing is imported here, so that ``python -m attnconv.course.grade`` and ``python -m attnconv.course.student`` run
their modules cleanly.
"""

__all__ = ["grade", "student"]
