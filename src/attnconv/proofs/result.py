"""The result object every SymPy proof returns, and the helpers that decide whether a residual is zero."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import html
import random

import sympy as sp
from sympy.core.function import AppliedUndef

__all__ = ["ProofResult", "SCOPES", "combine", "numeric_agreement", "verify_equal"]

SCOPES = ("general", "induction", "instance", "definition")


def _is_zero(residual: Any) -> bool:
    """True when ``residual`` is exactly zero: a number, an expression, a matrix or a matrix expression."""
    if isinstance(residual, sp.MatrixBase):
        return all(_is_zero(entry) for entry in residual)
    if isinstance(residual, sp.MatrixExpr):
        return isinstance(residual, sp.ZeroMatrix)
    if isinstance(residual, (list, tuple)):
        return all(_is_zero(entry) for entry in residual)
    value = sp.sympify(residual)
    return value.is_zero is True and value.is_finite is not False


@dataclass(frozen=True)
class ProofResult:
    """A claim checked symbolically.

    Attributes:
        claim: a short name, e.g. ``"quadratic identity"``.
        statement: the claim in words and symbols.
        residual: the simplified difference between the two sides (a SymPy expression, matrix or matrix
            expression). The claim holds when it is exactly zero.
        scope: ``"general"`` (symbolic in every quantity the statement quantifies over), ``"induction"``
            (a base case and an inductive step, each checked symbolically), ``"instance"`` (one worked case,
            named in ``instance``) or ``"definition"`` (the claim holds by expanding definitions: SymPy checks
            that the two sides agree, but derives nothing).
        variables: the quantities the proof keeps symbolic, e.g. ``("N", "k", "b_δ")``.
        instance: for ``scope="instance"``, the case that was checked.
        steps: sub-results (base case, inductive step, lemmas used); all must verify.
        latex: optional LaTeX form of ``statement``, shown as typeset maths.
        immediate: whether the two sides were the same expression before any simplification (set by
            :func:`verify_equal`); a ``general`` proof must not be immediate.
        undecided: the residual is not known to be zero, nor known not to be: the claim is *not decided* (for
            example SymPy did not simplify a difference that vanishes at every random instance tried, or a
            condition could not be decided). Such a result is not verified, and it is not a refutation either.
        verified: computed, never passed: ``residual`` is exactly zero and every step verifies.
    """

    claim: str
    statement: str
    residual: Any
    scope: str = "instance"
    variables: tuple[str, ...] = ()
    instance: str = ""
    steps: tuple["ProofResult", ...] = ()
    latex: str = ""
    immediate: bool = False
    undecided: bool = False
    verified: bool = field(init=False)

    def __post_init__(self) -> None:
        if self.scope not in SCOPES:
            raise ValueError(f"scope must be one of {SCOPES}, got {self.scope!r}")
        if self.scope == "instance" and not self.instance:
            raise ValueError("scope='instance' needs the instance that was checked")
        object.__setattr__(self, "variables", tuple(self.variables))
        object.__setattr__(self, "steps", tuple(self.steps))
        object.__setattr__(self, "verified", _is_zero(self.residual) and all(s.verified for s in self.steps))

    @property
    def decided(self) -> bool:
        """True when the proof is verified or refuted; false when its failure rests only on undecided residuals
        (its own or its failing steps'), which says "not decided", not "false"."""
        if self.verified:
            return True
        if not _is_zero(self.residual) and not self.undecided:
            return True
        return any(step.decided for step in self.steps if not step.verified)

    @property
    def status(self) -> str:
        return "verified" if self.verified else ("NOT verified" if self.decided else "not decided")

    def __repr__(self) -> str:
        return f"ProofResult({self.claim!r}: {self.status}, scope={self.scope}, residual={self.residual})"

    def _mark(self) -> str:
        return {"verified": "✔ verified", "NOT verified": "✘ NOT verified"}.get(self.status, "? not decided")

    def _scope_text(self) -> str:
        where = f"for all {', '.join(self.variables)}" if self.variables else ""
        return f"{self.scope} {where}".strip() if self.scope != "instance" else f"instance: {self.instance}"

    def _repr_markdown_(self) -> str:
        """Plain markdown (no maths): the claim, its status and scope, the statement and the steps."""
        mark = self._mark()
        lines = [f"**{self.claim}** ({mark}; {self._scope_text()}): {self.statement}", ""]
        lines += [f"- {step.claim}: {step.status}" for step in self.steps]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        """The claim and its status as text, the statement and the residual as typeset display maths.

        The maths sits in ``<div class="math">`` blocks with ``\\[ ... \\]`` delimiters, which MathJax typesets in
        the book and in Jupyter; a markdown output would show ``$$`` literally where the reader parses it as
        CommonMark.
        """
        mark = self._mark()
        statement = (f'<div class="math notranslate nohighlight">\\[{html.escape(self.latex)}\\]</div>'
                     if self.latex else f"<p>{html.escape(self.statement)}</p>")
        residual = sp.latex(self.residual)
        steps = "".join(f"<li>{html.escape(step.claim)}: {step.status}</li>" for step in self.steps)
        return (f'<div class="proof-result"><p><strong>{html.escape(self.claim)}</strong> ({mark}; '
                f"{html.escape(self._scope_text())})</p>{statement}"
                f'<div class="math notranslate nohighlight">\\[\\text{{residual}} = {html.escape(residual)}\\]</div>'
                + (f"<ul>{steps}</ul>" if steps else "") + "</div>")

    def _repr_latex_(self) -> str:
        """The residual as display math, for front ends that show LaTeX but not HTML."""
        return f"$$\\text{{{self.claim}: {self.status}; residual }} = {sp.latex(self.residual)}$$"


def _simplify_safely(expr: Any, simplify: Callable[[Any], Any]) -> Any:
    """Apply ``simplify``; if SymPy itself fails, keep the expression unsimplified (so it is not reported zero)."""
    try:
        return simplify(expr)
    except Exception:  # noqa: BLE001 - a simplifier crash must never read as a proof
        return expr


def _random_value(symbol: sp.Symbol, rng: random.Random, span: int) -> sp.Expr:
    """A value that respects the symbol's assumptions: an integer within ``span`` of its least value for an integer
    symbol (≥ 1 when positive, ≥ 0 when nonnegative, ≥ -span otherwise; at most span), a rational number for a
    real one."""
    if symbol.is_integer:
        low = 1 if symbol.is_positive else (0 if symbol.is_nonnegative else -span)
        return sp.Integer(rng.randint(low, span))
    low = sp.Rational(1, 10) if symbol.is_positive else (0 if symbol.is_nonnegative else -2)
    return low + sp.Rational(rng.randint(0, 200), 100)


def numeric_agreement(difference: Any, trials: int = 12, seed: int = 0) -> bool | None:
    """Evaluate ``difference`` at random instances: each symbol a value that respects its assumptions, each
    indexed symbol x[...] and undefined function κ(...) a random number per index, sums over the ranges they then
    have. True when it vanishes (to 1e-9) at every instance, False when it does not at one, None when it cannot be
    evaluated (an infinite sum, a matrix expression, a symbol with no value)."""
    if isinstance(difference, sp.MatrixBase):
        verdicts = [numeric_agreement(entry, trials, seed) for entry in difference]
        return False if False in verdicts else (None if None in verdicts else True)
    if isinstance(difference, (sp.MatrixExpr, list, tuple)) or not isinstance(difference, sp.Basic):
        return None
    rng = random.Random(seed)
    tables: dict = {}

    def table(key):
        return tables.setdefault(key, sp.Rational(rng.randint(-300, 300), 100))

    labels = {base.label for base in difference.atoms(sp.IndexedBase)}
    try:
        for trial in range(trials):
            span = (2, 5, 9)[trial % 3]  # small sizes, and some where an offset passes a clipping distance
            values = {s: _random_value(s, rng, span) for s in difference.free_symbols
                      if isinstance(s, sp.Symbol) and s not in labels}
            expr = difference.xreplace(values).doit()
            expr = expr.replace(lambda e: isinstance(e, sp.Indexed) and all(i.is_Integer for i in e.indices),
                                lambda e: table((str(e.base), e.indices)))
            expr = expr.replace(lambda e: isinstance(e, AppliedUndef) and all(a.is_number for a in e.args),
                                lambda e: table((str(e.func), e.args)))
            value = complex(sp.N(expr, 30))
            if abs(value) > 1e-9:
                return False
        return True
    except Exception:  # noqa: BLE001 - whatever cannot be evaluated is simply not evaluated
        return None


def verify_equal(claim: str, statement: str, lhs: Any, rhs: Any, simplify: Callable[[Any], Any] = sp.simplify,
                 *, scope: str = "instance", variables: Sequence[str] = (), instance: str = "",
                 steps: Sequence[ProofResult] = (), latex: str = "", numeric: bool = True) -> ProofResult:
    """Check ``lhs == rhs`` symbolically: simplify ``lhs - rhs`` and record whether it is exactly zero.

    Works for scalar expressions, explicit matrices (entry by entry) and matrix expressions. Records in
    ``immediate`` whether the two sides were already the same expression before simplification.

    When the simplified difference is not zero, the difference is also evaluated at random instances
    (:func:`numeric_agreement`, unless ``numeric=False``): if it vanishes at every one, SymPy has only failed to
    show an identity that the numbers support, and the result is *not decided* (``undecided``), never a
    refutation. If it does not vanish, or cannot be evaluated, the result is not verified, as before.
    """
    difference = lhs - rhs
    immediate = _is_zero(difference)
    if isinstance(difference, sp.MatrixBase):
        residual = difference.applyfunc(lambda e: _simplify_safely(e, simplify))
    else:
        residual = _simplify_safely(difference, simplify)
    undecided = False
    if numeric and not _is_zero(residual) and numeric_agreement(difference) is True:
        undecided = True
        statement += " (not decided: SymPy leaves a difference that vanishes at every random instance tried)"
    return ProofResult(claim, statement, residual, scope, tuple(variables), instance, tuple(steps), latex,
                       immediate, undecided)


def combine(claim: str, statement: str, steps: Sequence[ProofResult], *, scope: str,
            variables: Sequence[str] = (), instance: str = "", latex: str = "") -> ProofResult:
    """A proof made of steps (lemmas, base case and inductive step): verified when every step is."""
    if not steps:
        raise ValueError("combine needs at least one step")
    return ProofResult(claim, statement, sp.Integer(0), scope, tuple(variables), instance, tuple(steps), latex)
