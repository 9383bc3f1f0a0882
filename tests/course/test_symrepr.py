"""The strict SymPy reader: honest answers rebuild exactly, hostile srepr is refused before SymPy sees it, and
costly expressions stop the checker process within its limits (never the grader)."""

from __future__ import annotations

import json
import time

import pytest
import sympy as sp

from attnconv.course import wire
from attnconv.course.checker import Checker
from attnconv.course.symrepr import parse_srepr

m, dh = sp.Symbol("m"), sp.Symbol("D_h", positive=True)
HONEST = [
    1 / (1 + 2 * sp.exp(-m) / (1 - sp.exp(-m))),
    sp.sqrt(dh),
    sum(sp.Symbol(f"w{a}") * sp.Symbol(f"x{a + 1}") for a in range(3)),
    -4 * sp.Symbol("alpha") * (sp.Symbol("Delta1") * sp.Symbol("delta1") + sp.Symbol("Delta2") * sp.Symbol("delta2")),
    sp.Float("0.125") * m + sp.pi * sp.I - sp.oo + sp.Rational(1, 3),
    sp.Sum(sp.Indexed(sp.IndexedBase("x"), sp.Symbol("a")), (sp.Symbol("a"), 1, sp.Symbol("d"))),
    sp.Piecewise((1, m > 0), (0, True)),
    sp.tanh(m / 2) + sp.Abs(m) + sp.Matrix([[1, 2]]).as_immutable()[0],
]


@pytest.mark.parametrize("expr", HONEST, ids=range(len(HONEST)))
def test_honest_answers_rebuild_exactly(expr):
    assert parse_srepr(sp.srepr(expr)) == expr


HOSTILE = {
    "string-argument": "Add(Symbol('x'), '__import__(\"os\").system(\"touch /tmp/pwned\")')",
    # exp sympifies a string argument without strict=True: this one ran code in the grader before
    "string-to-a-function": "exp(\"Symbol.__new__.__globals__['__builtins__']['exec']('1') or 0\")",
    "string-to-sympify": "Integer('__import__(\"os\").getpid()')",
    "string-in-float": "Float('__import__(\"os\").getpid()')",
    "lambda": "Lambda(Symbol('x'), Symbol('x'))",
    "python-lambda": "(lambda: 1)()",
    "function-name": "Function('f')(Symbol('x'))",
    "undefined-function": "Function('__import__')(Symbol('os'))",
    "attribute-path": "sympy.core.numbers.Integer(1)",
    "dunder-attribute": "Symbol('x').__class__.__base__.__subclasses__()",
    "builtin": "eval('1')",
    "getattr": "getattr(Symbol('x'), 'name')",
    "symbol-name-code": "Symbol('x; import os')",
    "keyword-evaluate": "Pow(Integer(7), Integer(1000000000), evaluate=False)",
    "huge-exponent": "Pow(Integer(7), Integer(1000000000))",
    "huge-integer": "Integer(" + "9" * 400 + ")",
    "huge-rational": "Rational(1, " + "7" * 30 + ")",
    "binop": "Integer(10**9)",
    "deep-nesting": "Add(" * 300 + "Integer(1)" + ")" * 300,
    "wide": "Add(" + ", ".join(["Symbol('x')"] * 6000) + ")",
    "subscript": "Tuple(Integer(1))[0]",
    "starred": "Add(*[Integer(1)])",
    "keyword-splat": "Symbol('x', **{'positive': True})",
    "symbol-kwarg-object": "Symbol('x', positive=Symbol('y'))",
    "unknown-kwarg": "Symbol('x', cls=Integer(1))",
    "long-text": "Symbol('x')" + " " * 200_000,
    "not-a-string": 12,
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_srepr_is_refused(name):
    with pytest.raises(ValueError):
        parse_srepr(HOSTILE[name])


def test_refusal_messages_name_what_was_refused():
    with pytest.raises(ValueError, match="Lambda"):
        parse_srepr(HOSTILE["lambda"])
    with pytest.raises(ValueError, match="only as the name of a Symbol"):
        parse_srepr(HOSTILE["string-argument"])
    with pytest.raises(ValueError, match="exponent"):
        parse_srepr(HOSTILE["huge-exponent"])
    with pytest.raises(ValueError, match="keyword 'evaluate'"):
        parse_srepr(HOSTILE["keyword-evaluate"])


def test_wire_decodes_sympy_only_through_the_strict_reader():
    honest = wire.loads(wire.dumps({"e": HONEST[0]}))["e"]
    assert honest == HONEST[0]
    with pytest.raises(ValueError):
        wire.loads(json.dumps({"e": {"__sympy__": HOSTILE["string-argument"]}}))


def test_a_costly_allowed_expression_stops_the_checker_not_the_grader():
    """A tower of allowed powers is cheap to read and ruinous to simplify: the checker's time limit ends it."""
    tower = "Integer(7)"
    for _ in range(6):
        tower = f"Pow({tower}, Integer(256))"
    answers = json.dumps({"output_2": {"__sympy__": tower}})
    # A short limit: the tower would run forever, and every second of it is a core taken from the other tests.
    with Checker(exercise_timeout=4) as checker:
        began = time.monotonic()
        results = checker.check("ex-01-sympy-lemma", answers, seed=0)
        assert time.monotonic() - began < 60
        assert not any(r.passed for r in results)
        assert "time" in results[0].message or "memory" in results[0].message, results
        checker.timeout = 120  # the honest answer, with a fresh checker's start-up, gets the usual time
        ok = checker.check("ex-01-sympy-lemma", wire.dumps({"output_2": HONEST[2].subs(
            {sp.Symbol("x1"): sp.Symbol("x1")})}), seed=0)  # a fresh checker picks up after the one it killed
        assert [r.passed for r in ok] == [True], ok
