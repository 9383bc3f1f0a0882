"""Graded exercises: the registry, the result of a check, and how answers are read.

Every graded exercise has a check here in the library, never in the notebook, so the student edition of a
chapter shows no answer. A check receives the student's answers as *data* (numbers, arrays, tensors, SymPy
expressions, as :mod:`attnconv.course.wire` rebuilds them) and returns one :class:`CheckResult` per part; its
messages say what was received and what was expected, without giving the solution away.

There are two kinds of graded exercise:

- **answer exercises** (``names``): the answers are read from the notebook right after the exercise's cell ran.
- **function exercises** (``context`` and ``probe``): the answer is code (a layer, an expression of the given
  inputs). The grader runs the exercise's cell again in a separate sandbox process, on hidden inputs that
  ``context(seed)`` builds from a seed the notebook never sees; ``probe`` turns the student's objects into data
  there, and only that data comes back.

:func:`verify` runs a check inside a chapter, on the chapter's own (visible) values, after the same round trip
through data that the grader uses; it raises ``AssertionError`` when the check fails, so the worked edition
proves its own solutions under nbval. The grader (:mod:`attnconv.course.grade`) runs the checks in its own
process, which never runs student code, and takes the points from this registry.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import numpy as np

from .. import wire

__all__ = [
    "CheckResult", "Exercise", "EXERCISES", "PARTS", "Registry", "as_array", "as_whole_number", "close", "describe",
    "exercise_table",
    "exercises_for", "load_state", "register", "run_check", "score_results", "state_of", "verify",
]


@dataclass(frozen=True)
class CheckResult:
    """The outcome of one check (or of one ``part`` of it): ``passed`` and a message for the student."""

    passed: bool
    message: str
    part: str = ""


@dataclass(frozen=True)
class Exercise:
    """One exercise of a chapter.

    Attributes:
        label: the label of its ``{exercise}`` block, e.g. ``"ex-01-dilated-shifts"``.
        chapter: the chapter's file stem, e.g. ``"01_convolution_as_shifts"``.
        kind: ``"code"``, ``"proof"`` (a proof by computation) or ``"conceptual"``.
        minutes: the estimated time for a student.
        names: the answers the check reads (for a function exercise: the names ``probe`` returns).
        check: the check, called with the answers (and the ``given`` inputs) as keyword arguments.
        parts: ``(part, points)`` pairs; a check returns one result per part (partial credit).
        given: inputs the chapter gives and the check also reads; the grader builds them with ``context``.
        context: ``context(seed) -> dict`` of hidden inputs (function exercises only).
        probe: ``probe(namespace) -> dict`` of answers as data, computed where the student's code ran.
        needs: the names :func:`verify` must receive in a chapter for a function exercise.
        written: points of the written part, marked by hand (0 when there is none).
    """

    label: str
    chapter: str
    kind: str
    minutes: int
    names: tuple[str, ...] = ()
    check: Callable[..., CheckResult | list[CheckResult]] | None = field(default=None, repr=False)
    parts: tuple[tuple[str, int], ...] = (("", 1),)
    given: tuple[str, ...] = ()
    context: Callable[[int], dict] | None = field(default=None, repr=False)
    probe: Callable[[Mapping[str, Any]], dict] | None = field(default=None, repr=False)
    needs: tuple[str, ...] = ()
    written: int = 0

    @property
    def graded(self) -> bool:
        return self.check is not None

    @property
    def sandboxed(self) -> bool:
        """Whether the grader re-runs the cell on hidden inputs (a function exercise)."""
        return self.context is not None

    @property
    def points(self) -> int:
        """Points of the automatically graded parts."""
        return sum(p for _, p in self.parts) if self.graded else 0


# The module that registers each chapter's exercises (its label "ex-NN-..." and its chapter "NN_name" start with the
# same NN). A module is imported the first time one of its exercises is asked for, so that a process that grades
# one chapter (or the grader's own start-up check) imports only that chapter's checks and what they need: the
# chapters' checks need PyTorch and SymPy, a course's own chapter may need neither.
PARTS = {"01": "part1", "02": "part1", "03": "part2", "04": "part2", "05": "part3", "06": "part4", "07": "part5",
         "08": "part6"}


class Registry(dict):
    """Label → :class:`Exercise`, which imports the book's exercise modules (``PARTS``) as they are needed.

    Asking for one label (``[]``, ``in``, ``get``) imports the module of that label's chapter; going over the whole
    registry (``values()``, ``items()``, iteration, ``len``) imports them all first. The book's exercises then come
    in the chapters' order, whichever module was imported first, and a course's own exercises after them."""

    def __init__(self) -> None:
        super().__init__()
        self._loaded: dict[str, list[str]] = {}  # module → the labels it registered, in order

    def _load(self, module: str) -> None:
        if module in self._loaded:
            return
        import importlib

        self._loaded[module] = []  # before the import: its register() calls land here, not in a second load
        before = set(dict.keys(self))
        importlib.import_module(f"{__package__}.{module}")
        self._loaded[module] = [k for k in dict.keys(self) if k not in before]

    def load_chapter(self, key: str) -> None:
        """Import the module that registers the exercises of a chapter ``NN_name`` or a label ``ex-NN-...``."""
        number = key[3:5] if key.startswith("ex-") else key[:2]
        if number in PARTS:
            self._load(PARTS[number])

    def load_all(self) -> None:
        if all(m in self._loaded for m in PARTS.values()):
            return
        for module in dict.fromkeys(PARTS.values()):
            self._load(module)
        book = [k for m in dict.fromkeys(PARTS.values()) for k in self._loaded[m]]
        entries = dict(dict.items(self))
        dict.clear(self)  # the chapters' order first, then the rest in the order they came
        dict.update(self, {k: entries[k] for k in book if k in entries})
        dict.update(self, {k: v for k, v in entries.items() if k not in self})

    def __missing__(self, label: str) -> Exercise:
        if not dict.__contains__(self, label):
            self.load_chapter(label)
        if dict.__contains__(self, label):
            return dict.__getitem__(self, label)
        raise KeyError(label)

    def __contains__(self, label: object) -> bool:
        if not dict.__contains__(self, label) and isinstance(label, str):
            self.load_chapter(label)
        return dict.__contains__(self, label)

    def get(self, label, default=None):
        return self[label] if label in self else default

    def __iter__(self):
        self.load_all()
        return dict.__iter__(self)

    def __len__(self) -> int:
        self.load_all()
        return dict.__len__(self)

    def keys(self):
        """The labels of every chapter's exercises, each exercise module imported first."""
        self.load_all()
        return dict.keys(self)

    def values(self):
        """Every chapter's exercises, each exercise module imported first."""
        self.load_all()
        return dict.values(self)

    def items(self):
        """(label, exercise) pairs of every chapter's exercises, each exercise module imported first."""
        self.load_all()
        return dict.items(self)


EXERCISES: Registry = Registry()


def register(label: str, chapter: str, kind: str, minutes: int, names: tuple[str, ...] = (), *,
             parts: tuple[tuple[str, int], ...] | None = None, given: tuple[str, ...] = (),
             context: Callable[[int], dict] | None = None, probe: Callable[[Mapping[str, Any]], dict] | None = None,
             needs: tuple[str, ...] = (), written: int = 0):
    """Decorator that registers a check (or, used on ``None``, an ungraded exercise)."""
    if kind not in ("code", "proof", "conceptual"):
        raise ValueError(f"kind must be 'code', 'proof' or 'conceptual', got {kind!r}")
    if (context is None) != (probe is None):
        raise ValueError(f"{label}: a function exercise needs both context and probe")
    if kind == "conceptual" and not written:
        written = 2

    def wrap(check):
        if dict.__contains__(EXERCISES, label):
            raise ValueError(f"exercise {label!r} is registered twice")
        EXERCISES[label] = Exercise(label, chapter, kind, minutes, tuple(names), check, tuple(parts or (("", 1),)),
                                    tuple(given), context, probe, tuple(needs), written)
        return check

    return wrap


def exercises_for(chapter: str) -> list[Exercise]:
    """The exercises of one chapter, in registration order (the chapter's order)."""
    EXERCISES.load_chapter(chapter)
    return [e for e in dict.values(EXERCISES) if e.chapter == chapter]


def exercise_table(chapters: list[str] | None = None):
    """A table of the exercises (an HTML table in notebooks and the book), optionally of some chapters only."""
    from ...display import Table

    rows = []
    for e in EXERCISES.values():
        if chapters is None or e.chapter in chapters:
            graded = "hidden inputs" if e.sandboxed else ("yes" if e.graded else "by hand")
            rows.append([e.chapter.split("_")[0], f"`{e.label}`", e.kind, e.minutes, graded, e.points,
                         e.written or ""])
    return Table(["chapter", "exercise", "kind", "minutes", "graded", "points", "written"], rows,
                 align=["left", "left", "left", "right", "left", "right", "right"])


# ----- reading answers generously ---------------------------------------------------------------------------------

def describe(value: Any) -> str:
    """A short description of a received value for a message: its type, and its shape or its value."""
    if isinstance(value, wire.Opaque):
        return f"a {value.type} object"
    if isinstance(value, wire.RaisedError):
        return f"{value.type}({value.message[:80]!r})"
    shape = getattr(value, "shape", None)
    if shape is not None and len(tuple(shape)) > 0:
        return f"{type(value).__module__.split('.')[0]} {getattr(value, 'dtype', '')} array of shape {tuple(shape)}"
    text = repr(value)
    return f"{text[:60]}{'...' if len(text) > 60 else ''} ({type(value).__name__})"


def as_array(value: Any) -> np.ndarray | None:
    """Any numeric container (list, tuple, NumPy array, tensor, number) as a NumPy array; ``None`` otherwise."""
    if hasattr(value, "detach"):
        value = value.detach().cpu().numpy()
    try:
        array = np.asarray(value)
    except (TypeError, ValueError):
        return None
    if array.dtype.kind == "O":
        try:
            array = array.astype(np.float64)
        except (TypeError, ValueError):
            return None
    return array if array.dtype.kind in "biuf" else None


def as_whole_number(value: Any) -> int | None:
    """An integer count given as an int, a 0-d tensor or array, a NumPy integer or an integral float; else ``None``."""
    if isinstance(value, bool):
        return None
    array = as_array(value)
    if array is None or array.size != 1 or array.ndim > 1:
        return None
    number = array.reshape(()).item()
    if isinstance(number, numbers.Integral):
        return int(number)
    if isinstance(number, float) and math.isfinite(number) and number == round(number):
        return int(round(number))
    return None


def _eps(dtype: Any) -> float:
    name = str(dtype).removeprefix("torch.")
    if name == "bfloat16":
        return 2.0 ** -8
    kind = np.dtype(name).kind
    return float(np.finfo(np.dtype(name)).eps) if kind == "f" else 0.0


def tolerance(*dtypes: Any) -> float:
    """Absolute tolerance per unit of scale for the coarsest of ``dtypes``: 1e-9 for float64, about 1e-5 for
    float32, so that a float32 answer to a float64 question passes when it is right to float32 precision."""
    return max(1e-9, 100 * max(_eps(d) for d in dtypes))


def close(received: Any, expected: Any) -> tuple[bool, float, float]:
    """Whether two numeric containers agree within the tolerance of the coarser dtype: ``(ok, error, tol)``."""
    a, b = as_array(received), as_array(expected)
    if a is None or b is None or a.shape != b.shape:
        return False, math.inf, 0.0
    scale = max(1.0, float(np.abs(b).max(initial=0.0)))
    tol = tolerance(a.dtype if a.dtype.kind == "f" else np.float64, b.dtype if b.dtype.kind == "f" else np.float64)
    err = float(np.abs(a.astype(np.float64) - b.astype(np.float64)).max(initial=0.0))
    return err <= tol * scale, err, tol * scale


# ----- running a check --------------------------------------------------------------------------------------------

def run_check(exercise: Exercise, answers: Mapping[str, Any], given: Mapping[str, Any] | None = None
              ) -> list[CheckResult]:
    """Run ``exercise``'s check on decoded answers; never raises (a broken answer is a failed check)."""
    missing = [n for n in exercise.names if n not in answers]
    if missing:
        return [CheckResult(False, f"`{'`, `'.join(missing)}` not defined: expected the exercise's cell to "
                                   "define it")]
    given = given or {}
    try:
        with no_grad():
            out = exercise.check(**{n: answers[n] for n in exercise.names}, **{g: given[g] for g in exercise.given})
    except Exception as err:  # noqa: BLE001  (a student's value may break the check in any way)
        return [CheckResult(False, f"your answer could not be checked ({type(err).__name__}: {err}); "
                                   f"received {', '.join(f'{n} = {describe(answers[n])}' for n in exercise.names)}")]
    return [out] if isinstance(out, CheckResult) else list(out)


def score_results(exercise: Exercise, results: list[CheckResult]) -> tuple[int, bool, str]:
    """Points (capped at the registry's), whether every part passed, and the combined message."""
    by_part = {r.part: r for r in results}
    points = 0
    for part, value in exercise.parts:
        result = by_part.get(part) or (by_part.get("") if len(by_part) == 1 else None)
        if result is not None and result.passed:
            points += value
    points = max(0, min(points, exercise.points))
    passed = points == exercise.points and all(r.passed for r in results)
    message = "; ".join((f"{r.part}: " if r.part else "") + r.message for r in results)
    return points, passed, message


def no_grad():
    """``torch.no_grad()`` where PyTorch is imported (checks and answers made of tensors have imported it), else a
    context that does nothing: a check of plain numbers or SymPy never imports PyTorch for it."""
    import contextlib
    import sys

    torch = sys.modules.get("torch")
    return torch.no_grad() if torch is not None else contextlib.nullcontext()


def _local(label: str, values: Mapping[str, Any]) -> list[CheckResult]:
    exercise = EXERCISES.get(label)
    if exercise is None:
        raise KeyError(f"no exercise is registered as {label!r}")
    if exercise.check is None:
        raise ValueError(f"exercise {label!r} is not graded")
    needed = exercise.needs + exercise.given if exercise.sandboxed else exercise.names
    missing = [n for n in dict.fromkeys(needed) if n not in values]
    if missing:
        return [CheckResult(False, f"`{'`, `'.join(missing)}` not defined: did the exercise's cell run to the end?")]
    if exercise.sandboxed:
        try:
            with no_grad():
                raw = exercise.probe(values)
        except Exception as err:  # noqa: BLE001
            return [CheckResult(False, f"calling your answer raised {type(err).__name__}: {err}")]
    else:
        raw = {n: values[n] for n in exercise.names}
    answers = wire.loads(wire.dumps(raw))  # exactly the data the grader receives
    return run_check(exercise, answers, values)


def verify(label: str, **values: Any) -> None:
    """Check an exercise inside a chapter: print a tick, or raise ``AssertionError`` with the check's message.

    In the grader's kernel (``$ATTNCONV_GRADING``) an exercise whose checks are private, and so not in the kernel,
    is left to the grader, which reads the answers itself."""
    import os

    if label not in EXERCISES and os.environ.get("ATTNCONV_GRADING") == "1":
        return
    results = _local(label, values)
    points, passed, message = score_results(EXERCISES[label], results)
    if not passed:
        raise AssertionError(f"{label}: {message}")
    print(f"✔ {label}: {message}")


# ----- checking what a layer does, not what it is called ----------------------------------------------------------

def state_of(layer: Any) -> dict | None:
    """A probe's view of a student's layer: its ``state_dict`` (names → tensors), or ``None`` when it is not a
    torch module. The check loads it into a layer it builds itself (:func:`load_state`)."""
    import torch

    if not isinstance(layer, torch.nn.Module):
        return None
    return {str(k): v.detach().clone() for k, v in layer.state_dict().items()}


def load_state(reference: Any, state: Any, what: str) -> tuple[Any | None, str]:
    """``reference`` (a layer the check built from its own inputs) with the student's parameters ``state`` loaded
    strictly, and ``""``; or ``(None, reason)`` when ``state`` does not fit ``what`` (other names or shapes), so a
    look-alike that only calls the right function, or keeps other parameters, fails."""
    import copy

    import torch

    if not isinstance(state, dict) or not state:
        return None, f"expected {what}, received something that is not a torch layer"
    layer = copy.deepcopy(reference)
    own = layer.state_dict()
    if set(state) != set(own):
        extra, missing = sorted(set(state) - set(own)), sorted(set(own) - set(state))
        detail = f"unexpected {extra[0]!r}" if extra else f"missing {missing[0]!r}"
        return None, f"expected {what}; your layer's parameters do not fit one ({detail})"
    tensors = {}
    for name, value in state.items():
        array = as_array(value)
        if array is None or tuple(array.shape) != tuple(own[name].shape):
            return None, (f"expected {what}; your layer's {name!r} has shape "
                          f"{None if array is None else tuple(array.shape)}, not {tuple(own[name].shape)}")
        tensors[name] = torch.as_tensor(array, dtype=own[name].dtype)
    layer.load_state_dict(tensors, strict=True)
    return layer.eval(), ""
