"""The result object every SymPy proof returns, and the helpers that decide whether a residual is zero."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import html

import sympy as sp

__all__ = ["ProofResult", "SCOPES", "combine", "verify_equal"]

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
        """Verified, or refuted: false when the failure rests only on undecided residuals (its own or its
        failing steps'), which says "not decided", not "false"."""
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


def verify_equal(claim: str, statement: str, lhs: Any, rhs: Any, simplify: Callable[[Any], Any] = sp.simplify,
                 *, scope: str = "instance", variables: Sequence[str] = (), instance: str = "",
                 steps: Sequence[ProofResult] = (), latex: str = "") -> ProofResult:
    """Check ``lhs == rhs`` symbolically: simplify ``lhs - rhs`` and record whether it is exactly zero.

    Works for scalar expressions, explicit matrices (entry by entry) and matrix expressions. Records in
    ``immediate`` whether the two sides were already the same expression before simplification.
    """
    difference = lhs - rhs
    immediate = _is_zero(difference)
    if isinstance(difference, sp.MatrixBase):
        residual = difference.applyfunc(lambda e: _simplify_safely(e, simplify))
    else:
        residual = _simplify_safely(difference, simplify)
    return ProofResult(claim, statement, residual, scope, tuple(variables), instance, tuple(steps), latex,
                       immediate)


def combine(claim: str, statement: str, steps: Sequence[ProofResult], *, scope: str,
            variables: Sequence[str] = (), instance: str = "", latex: str = "") -> ProofResult:
    """A proof made of steps (lemmas, base case and inductive step): verified when every step is."""
    if not steps:
        raise ValueError("combine needs at least one step")
    return ProofResult(claim, statement, sp.Integer(0), scope, tuple(variables), instance, tuple(steps), latex)
