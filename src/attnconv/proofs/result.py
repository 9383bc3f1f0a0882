"""The result object every SymPy proof returns, and the helpers that decide whether a residual is zero."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import sympy as sp

__all__ = ["ProofResult", "SCOPES", "combine", "verify_equal"]

SCOPES = ("general", "induction", "instance")


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
            (a base case and an inductive step, each checked symbolically) or ``"instance"`` (one worked case,
            named in ``instance``).
        variables: the quantities the proof keeps symbolic, e.g. ``("N", "k", "b_δ")``.
        instance: for ``scope="instance"``, the case that was checked.
        steps: sub-results (base case, inductive step, lemmas used); all must verify.
        verified: computed, never passed: ``residual`` is exactly zero and every step verifies.
    """

    claim: str
    statement: str
    residual: Any
    scope: str = "instance"
    variables: tuple[str, ...] = ()
    instance: str = ""
    steps: tuple["ProofResult", ...] = ()
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
    def status(self) -> str:
        return "verified" if self.verified else "NOT verified"

    def __repr__(self) -> str:
        return f"ProofResult({self.claim!r}: {self.status}, scope={self.scope}, residual={self.residual})"

    def _repr_markdown_(self) -> str:
        mark = "✔ verified" if self.verified else "✘ NOT verified"
        where = f"for all {', '.join(self.variables)}" if self.variables else ""
        scope = f"{self.scope} {where}".strip() if self.scope != "instance" else f"instance: {self.instance}"
        # The residual is a display-math block: its content reaches MathJax verbatim (in the book and in Jupyter),
        # where inline `$...$` in a markdown output loses the `\\` row breaks of a matrix to markdown's escapes.
        lines = [f"**{self.claim}** ({mark}; {scope}): {self.statement}", "", "residual:", "",
                 "$$", sp.latex(self.residual), "$$", ""]
        lines += [f"- {step.claim}: {step.status}" for step in self.steps]
        return "\n".join(lines)

    def _repr_latex_(self) -> str:
        """The residual as display math, for front ends that show LaTeX but not markdown."""
        return f"$$\\text{{{self.claim}: {self.status}; residual }} = {sp.latex(self.residual)}$$"


def _simplify_safely(expr: Any, simplify: Callable[[Any], Any]) -> Any:
    """Apply ``simplify``; if SymPy itself fails, keep the expression unsimplified (so it is not reported zero)."""
    try:
        return simplify(expr)
    except Exception:  # noqa: BLE001 - a simplifier crash must never read as a proof
        return expr


def verify_equal(claim: str, statement: str, lhs: Any, rhs: Any, simplify: Callable[[Any], Any] = sp.simplify,
                 *, scope: str = "instance", variables: Sequence[str] = (), instance: str = "",
                 steps: Sequence[ProofResult] = ()) -> ProofResult:
    """Check ``lhs == rhs`` symbolically: simplify ``lhs - rhs`` and record whether it is exactly zero.

    Works for scalar expressions, explicit matrices (entry by entry) and matrix expressions.
    """
    difference = lhs - rhs
    if isinstance(difference, sp.MatrixBase):
        residual = difference.applyfunc(lambda e: _simplify_safely(e, simplify))
    else:
        residual = _simplify_safely(difference, simplify)
    return ProofResult(claim, statement, residual, scope, tuple(variables), instance, tuple(steps))


def combine(claim: str, statement: str, steps: Sequence[ProofResult], *, scope: str,
            variables: Sequence[str] = (), instance: str = "") -> ProofResult:
    """A proof made of steps (lemmas, base case and inductive step): verified when every step is."""
    return ProofResult(claim, statement, sp.Integer(0), scope, tuple(variables), instance, tuple(steps))
