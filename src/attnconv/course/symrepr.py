"""Strict reading of a SymPy answer: an ``srepr`` string rebuilt without ``eval``, against an allow-list.

A student's SymPy expression crosses from their kernel as ``sympy.srepr`` text, such as
``Add(Mul(Symbol('w0'), Symbol('x1')), Integer(3))``. :func:`parse_srepr` reads that text with Python's
``ast`` module and rebuilds the expression node by node:

- a call is allowed only when its callee is a bare name in ``CONSTRUCTORS`` (SymPy's core classes, the
  elementary functions, sums, relations, indexed symbols), never an attribute path (``sympy.core.x``) nor a call
  of a call (``Function('f')(x)``), and only with the keyword arguments that class accepts here (a Symbol's
  assumptions, a Float's precision);
- a string appears only as the name of a ``Symbol``, ``Dummy`` or ``Wild`` (an identifier of at most 64
  characters), or as the digits of a ``Float`` (checked to be a number, and converted to a number before SymPy
  sees it). SymPy never parses a string of the answer, so no ``sympify`` runs and no builtins are reachable;
- numbers have size caps: integers up to 10**15 in absolute value, an integer power's exponent up to 256, a
  Float's digits up to 60 characters, the text up to 100,000 characters, at most 5,000 nodes and 60 levels.

Anything else raises ``ValueError`` naming what was refused. The grader calls this only inside its checker
process (``attnconv.course.checker``), which has its own time and memory limits, so that an allowed but costly
expression (a tower of powers, a sum of 10**15 terms that a check asks to ``doit``) stops that process, not the
grader.
"""

from __future__ import annotations

import ast
import re
from typing import Any

__all__ = ["CONSTRUCTORS", "MAX_DEPTH", "MAX_EXPONENT", "MAX_INT", "MAX_NODES", "MAX_TEXT", "parse_srepr"]

MAX_TEXT = 100_000
MAX_NODES = 5_000
MAX_DEPTH = 60
MAX_INT = 10**15
MAX_EXPONENT = 256
MAX_FLOAT_DIGITS = 60

#: Names an answer may call or mention: SymPy's own classes and functions, looked up in ``sympy`` by name.
CONSTRUCTORS = frozenset("""
    Symbol Dummy Wild Integer Rational Float Add Mul Pow Tuple
    exp log sqrt sin cos tan cot sec csc asin acos atan atan2 acot sinh cosh tanh coth asinh acosh atanh
    Abs sign floor ceiling Min Max factorial binomial gamma re im conjugate
    Sum Product Piecewise ExprCondPair KroneckerDelta Heaviside
    Equality Unequality StrictLessThan LessThan StrictGreaterThan GreaterThan And Or Not
    Indexed IndexedBase Idx ImmutableDenseMatrix MutableDenseMatrix
""".split())
#: Constants that ``srepr`` writes as bare names.
CONSTANTS = frozenset("pi E I oo zoo nan true false EulerGamma GoldenRatio".split())
_ASSUMPTIONS = frozenset("""
    real positive negative nonnegative nonpositive integer rational irrational finite infinite zero nonzero
    complex imaginary extended_real extended_positive extended_negative extended_nonnegative extended_nonpositive
    even odd prime composite commutative hermitian antihermitian algebraic transcendental
""".split())
_KEYWORDS = {"Symbol": _ASSUMPTIONS, "Dummy": _ASSUMPTIONS | {"dummy_index"}, "Wild": _ASSUMPTIONS,
             "Float": frozenset({"precision"})}
_NAMED = frozenset({"Symbol", "Dummy", "Wild"})
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}\Z")
_DIGITS = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d{1,4})?\Z")


def _names() -> dict[str, Any]:
    import sympy as sp

    from sympy.functions.elementary.piecewise import ExprCondPair

    table = {name: getattr(sp, name) for name in CONSTRUCTORS | CONSTANTS if hasattr(sp, name)}
    table.update(true=sp.true, false=sp.false, ExprCondPair=ExprCondPair)
    return table


def _int(value: Any, where: str) -> int:
    if type(value) is not int or abs(value) > MAX_INT:  # bool is refused too
        raise ValueError(f"{where}: only integers up to 10**15 in size may appear, received {str(value)[:40]}")
    return value


class _Builder:
    def __init__(self) -> None:
        self.table = _names()
        self.nodes = 0

    def build(self, node: ast.AST, depth: int) -> Any:
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise ValueError(f"the expression has more than {MAX_NODES} nodes")
        if depth > MAX_DEPTH:
            raise ValueError(f"the expression nests deeper than {MAX_DEPTH} levels")
        if isinstance(node, ast.Constant):
            if isinstance(node.value, str):
                raise ValueError("a string may appear only as the name of a Symbol")
            if isinstance(node.value, float):
                return node.value
            return _int(node.value, "a number")
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            value = self.build(node.operand, depth + 1)
            return -value if isinstance(node.op, ast.USub) else value
        if isinstance(node, ast.Name):
            if node.id in CONSTANTS and node.id in self.table:
                return self.table[node.id]
            raise ValueError(f"unknown name in a SymPy answer: {node.id[:40]}")
        if isinstance(node, (ast.List, ast.Tuple)):
            items = [self.build(item, depth + 1) for item in node.elts]
            return items if isinstance(node, ast.List) else tuple(items)
        if isinstance(node, ast.Call):
            return self.call(node, depth)
        raise ValueError(f"{type(node).__name__} is not allowed in a SymPy answer")

    def call(self, node: ast.Call, depth: int) -> Any:
        if not isinstance(node.func, ast.Name):
            callee = ast.unparse(node.func)[:60]
            raise ValueError(f"only SymPy constructors called by name are allowed, received {callee}")
        name = node.func.id
        if name not in CONSTRUCTORS or name not in self.table:
            raise ValueError(f"not an allowed SymPy constructor: {name[:40]}")
        kwargs = {}
        for keyword in node.keywords:
            if keyword.arg is None or keyword.arg not in _KEYWORDS.get(name, ()):
                raise ValueError(f"{name} does not take the keyword {keyword.arg!r} in an answer")
            value = keyword.value
            if not isinstance(value, ast.Constant) or type(value.value) not in (bool, int):
                raise ValueError(f"{name}'s {keyword.arg} must be a literal True, False or integer")
            kwargs[keyword.arg] = value.value if type(value.value) is bool else _int(value.value, keyword.arg)
        if "precision" in kwargs and not 1 <= kwargs["precision"] <= 1000:
            raise ValueError("a Float's precision must be between 1 and 1000 bits")
        if name in _NAMED:
            return self.named(name, node, kwargs)
        if name == "Float":
            return self.float(node, kwargs)
        args = [self.build(arg, depth + 1) for arg in node.args]
        if name == "Pow" and len(args) == 2:
            self.check_exponent(args[1])
        if name in ("Integer", "Rational"):
            args = [_int(a, name) for a in args]
        return self.table[name](*args, **kwargs)

    def named(self, name: str, node: ast.Call, kwargs: dict) -> Any:
        if len(node.args) != 1 or not isinstance(node.args[0], ast.Constant) or \
                not isinstance(node.args[0].value, str) or not _NAME.match(node.args[0].value):
            raise ValueError(f"a {name} takes one name made of letters, digits and _ (at most 64 characters)")
        self.nodes += 1
        return self.table[name](node.args[0].value, **kwargs)

    def float(self, node: ast.Call, kwargs: dict) -> Any:
        if len(node.args) != 1 or not isinstance(node.args[0], ast.Constant):
            raise ValueError("a Float takes one number")
        value = node.args[0].value
        if isinstance(value, str):
            if len(value) > MAX_FLOAT_DIGITS or not _DIGITS.match(value):
                raise ValueError("a Float's digits must be a plain decimal number of at most 60 characters")
            from mpmath import mpf  # a number, parsed as a number: SymPy never sees the string

            value = mpf(value, prec=kwargs.get("precision", 53))
        elif isinstance(value, int) and not isinstance(value, bool):
            value = _int(value, "Float")
        elif not isinstance(value, float):
            raise ValueError("a Float takes one number")
        return self.table["Float"](value, **kwargs)

    def check_exponent(self, exponent: Any) -> None:
        import sympy as sp

        if isinstance(exponent, sp.Integer) and abs(int(exponent)) > MAX_EXPONENT:
            raise ValueError(f"an integer power's exponent may be at most {MAX_EXPONENT} in size")
        if isinstance(exponent, sp.Rational) and max(abs(exponent.p), abs(exponent.q)) > MAX_EXPONENT:
            raise ValueError(f"a rational power's numerator and denominator may be at most {MAX_EXPONENT}")


def parse_srepr(text: str) -> Any:
    """The SymPy expression that ``text`` (an ``srepr``) describes, built only from allowed constructors.

    Raises:
        ValueError: ``text`` is not a string, is too long, does not parse, or holds anything outside the
            allow-list (see the module docstring); the message names what was refused.
    """
    if not isinstance(text, str):
        raise ValueError(f"a SymPy answer must be srepr text, received {type(text).__name__}")
    if len(text) > MAX_TEXT:
        raise ValueError(f"the SymPy expression is longer than {MAX_TEXT} characters")
    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, MemoryError, RecursionError, ValueError) as err:
        raise ValueError(f"the SymPy expression does not parse ({type(err).__name__})") from None
    try:
        return _Builder().build(tree.body, 0)
    except RecursionError:
        raise ValueError("the SymPy expression nests too deeply") from None
    except (TypeError, AttributeError, ArithmeticError) as err:
        raise ValueError(f"the SymPy expression could not be built ({type(err).__name__}: {str(err)[:120]})") \
            from None
