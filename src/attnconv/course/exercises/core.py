"""Graded exercises: the registry, the result of a check, and the two ways a check runs.

Every graded exercise has a check function here in the library, never in the notebook, so the student edition
of a chapter shows no answer. A check takes the student's values by name and returns a :class:`CheckResult`
whose message says what was expected and what was received, without giving the solution away.

- :func:`verify` runs a check inside a chapter and raises ``AssertionError`` when it fails, so the worked
  edition proves its own solutions under nbval.
- :func:`grade_namespace` runs a check for the autograder against the namespace of an executed notebook and
  never raises.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

__all__ = [
    "CheckResult", "Exercise", "EXERCISES", "exercise_table", "exercises_for", "grade_namespace", "register", "verify",
]


@dataclass(frozen=True)
class CheckResult:
    """The outcome of one check: ``passed`` and a message for the student."""

    passed: bool
    message: str


@dataclass(frozen=True)
class Exercise:
    """One exercise of a chapter.

    Attributes:
        label: the label of its ``{exercise}`` block, e.g. ``"ex-01-dilated-shifts"``.
        chapter: the chapter's file stem, e.g. ``"01_convolution_as_shifts"``.
        kind: ``"code"``, ``"proof"`` (a proof by computation) or ``"conceptual"``.
        minutes: the estimated time for a student.
        names: the notebook variables the check reads (empty for ungraded exercises).
        check: the check, called with those variables as keyword arguments; ``None`` when ungraded.
        points: the exercise's weight in the score.
    """

    label: str
    chapter: str
    kind: str
    minutes: int
    names: tuple[str, ...] = ()
    check: Callable[..., CheckResult] | None = field(default=None, repr=False)
    points: int = 1

    @property
    def graded(self) -> bool:
        return self.check is not None


EXERCISES: dict[str, Exercise] = {}


def register(label: str, chapter: str, kind: str, minutes: int, names: tuple[str, ...] = ()):
    """Decorator that registers a check (or, used on ``None``-returning stubs, an ungraded exercise)."""
    if kind not in ("code", "proof", "conceptual"):
        raise ValueError(f"kind must be 'code', 'proof' or 'conceptual', got {kind!r}")

    def wrap(check: Callable[..., CheckResult] | None):
        if label in EXERCISES:
            raise ValueError(f"exercise {label!r} is registered twice")
        EXERCISES[label] = Exercise(label, chapter, kind, minutes, names, check)
        return check

    return wrap


def exercises_for(chapter: str) -> list[Exercise]:
    """The exercises of one chapter, in registration order (the chapter's order)."""
    return [e for e in EXERCISES.values() if e.chapter == chapter]


def exercise_table(chapters: list[str] | None = None):
    """A table of the exercises (chapter, label, kind, minutes, graded), for notebooks and the book.

    Returns an :class:`attnconv.display.Table`, which every reader renders as a table (a Markdown pipe table
    stays raw text where no table extension runs, as in the book's outputs)."""
    from ...display import Table

    rows = [[e.chapter, f"`{e.label}`", e.kind, e.minutes, "yes" if e.graded else "no"]
            for e in EXERCISES.values() if chapters is None or e.chapter in chapters]
    return Table(["chapter", "exercise", "kind", "minutes", "graded"], rows)


def _run(label: str, values: Mapping[str, Any]) -> CheckResult:
    exercise = EXERCISES.get(label)
    if exercise is None:
        raise KeyError(f"no exercise is registered as {label!r}")
    if exercise.check is None:
        raise ValueError(f"exercise {label!r} is not graded")
    missing = [n for n in exercise.names if n not in values]
    if missing:
        return CheckResult(False, f"`{'`, `'.join(missing)}` not defined: did the exercise's cell run to the end?")
    import torch

    try:
        with torch.no_grad():  # a check compares values: it needs no graph, and float() of a graph warns
            return exercise.check(**{n: values[n] for n in exercise.names})
    except Exception as err:  # a student's value may break the check in any way: report it, don't crash
        return CheckResult(False, f"checking your answer raised {type(err).__name__}: {err}")


def verify(label: str, **values: Any) -> None:
    """Check an exercise inside a chapter: print a tick, or raise ``AssertionError`` with the check's message."""
    result = _run(label, values)
    if not result.passed:
        raise AssertionError(f"{label}: {result.message}")
    print(f"✔ {label}: {result.message}")


def grade_namespace(label: str, namespace: Mapping[str, Any]) -> dict[str, Any]:
    """Grade one exercise against a notebook's global namespace; never raises."""
    exercise = EXERCISES[label]
    result = _run(label, namespace)
    return {"label": label, "passed": result.passed, "message": result.message,
            "points": exercise.points if result.passed else 0, "max_points": exercise.points}
