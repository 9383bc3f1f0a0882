"""A small synthetic chapter for the grader's tests: its checks (written into a module passed as ``--checks``, as a
course's own private exercises would be: the grader and the checker import it, the kernel and the sandbox never
see it), its untouched student notebook (every answer a stub) and its honest solution."""

from __future__ import annotations

import textwrap
from pathlib import Path

import nbformat

from attnconv.course.student import answer_cell

CHAPTER = "99_toy"
TOY_CHECKS = """
import sympy as sp

from attnconv.course.exercises import CheckResult, register


@register("ex-toy-answer", "99_toy", "code", 1, ("answer",))
def answer_is_42(answer):
    ok = answer == 42
    return CheckResult(ok, "right" if ok else f"received {answer!r}, expected the answer to everything")


def _context(seed):
    import random

    return {"xs": [random.Random(seed).randint(-10**6, 10**6) for _ in range(5)]}


@register("ex-toy-square", "99_toy", "code", 1, ("squares",), given=("xs",), context=_context,
          probe=lambda ns: {"squares": [ns["square"](x) for x in ns["xs"]]}, needs=("square",),
          parts=(("squares", 2),))
def square_works(squares, xs):
    ok = list(squares) == [x * x for x in xs]
    return CheckResult(ok, "square works" if ok else f"received {squares} for hidden inputs, expected their squares",
                       "squares")


@register("ex-toy-sym", "99_toy", "proof", 1, ("expr",))
def expands(expr):
    if not isinstance(expr, sp.Basic):
        return CheckResult(False, "expected a SymPy expression")
    x = sp.Symbol("x")
    ok = sp.expand(expr - (x + 1) ** 2) == 0
    return CheckResult(ok, "right" if ok else "expected (x + 1)**2 expanded")


register("ex-toy-essay", "99_toy", "conceptual", 5, written=3)(None)
"""
LABELS = ("ex-toy-answer", "ex-toy-square", "ex-toy-sym", "ex-toy-essay")
MAX = 4

SETUP = ("import sympy as sp\nfrom attnconv.course import verify\nxs = [7]\n"
         "try:\n    import toy_checks  # the course's checks, where a student has them; never in the grader's kernel\n"
         "except ImportError:\n    pass")
STUB = "# YOUR CODE HERE\nraise NotImplementedError()"
ANSWER = 'answer = 6 * 7\nverify("ex-toy-answer", answer=answer)'
SQUARE = 'def square(x):\n    return x * x\nverify("ex-toy-square", square=square, xs=xs)'
SYM = 'expr = sp.expand((sp.Symbol("x") + 1) ** 2)\nverify("ex-toy-sym", expr=expr)'


def _graded(source: str, label: str) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell(source)
    cell.metadata["nbgrader"] = {"grade": False, "grade_id": label, "locked": False, "schema_version": 3,
                                 "solution": True, "task": False}
    return cell


def stub_cells() -> list:
    """The untouched student notebook: every answer raises NotImplementedError."""
    essay = answer_cell("ex-toy-essay", 3)
    return [nbformat.v4.new_code_cell(SETUP),
            _graded(STUB + '\nverify("ex-toy-answer", answer=answer)', "ex-toy-answer"),
            _graded('def square(x):\n    ' + STUB.replace("\n", "\n    ") + '\nverify("ex-toy-square", square=square, '
                    'xs=xs)', "ex-toy-square"),
            _graded(STUB + '\nverify("ex-toy-sym", expr=expr)', "ex-toy-sym"), essay]


def honest_cells(essay: str = "Because the heads are a basis.") -> list:
    cell = answer_cell("ex-toy-essay", 3)
    cell.source = cell.source.replace("YOUR ANSWER HERE", essay)
    return [nbformat.v4.new_code_cell(SETUP), _graded(ANSWER, "ex-toy-answer"), _graded(SQUARE, "ex-toy-square"),
            _graded(SYM, "ex-toy-sym"), cell]


def write(path: Path, *cells) -> Path:
    """A notebook of ``cells`` (notebook cells, or code as text) at ``path``."""
    nb = nbformat.v4.new_notebook(cells=[c if isinstance(c, nbformat.NotebookNode)
                                         else nbformat.v4.new_code_cell(textwrap.dedent(c)) for c in cells])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)
    return path
