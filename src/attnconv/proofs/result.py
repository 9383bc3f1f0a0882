"""The result object every SymPy proof returns."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sympy as sp

__all__ = ["ProofResult", "verify_equal"]


@dataclass(frozen=True)
class ProofResult:
    """A claim checked symbolically.

    Attributes:
        claim: a short name, e.g. ``"quadratic identity"``.
        statement: the claim in words and symbols.
        residual: the simplified difference between the two sides (a SymPy expression or matrix). The claim
            holds when it is exactly zero.
        verified: ``True`` exactly when ``residual`` simplifies to zero.
    """

    claim: str
    statement: str
    residual: Any
    verified: bool

    def __repr__(self) -> str:
        mark = "verified" if self.verified else "NOT verified"
        return f"ProofResult({self.claim!r}: {mark}, residual={self.residual})"

    def _repr_markdown_(self) -> str:
        mark = "✔ verified" if self.verified else "✘ not verified"
        return f"**{self.claim}** ({mark}): {self.statement}  \nresidual: ${sp.latex(self.residual)}$"


def _is_zero(residual: Any) -> bool:
    if isinstance(residual, sp.MatrixBase):
        return all(sp.simplify(entry) == 0 for entry in residual)
    return sp.simplify(residual) == 0


def verify_equal(claim: str, statement: str, lhs: Any, rhs: Any, simplify=sp.simplify) -> ProofResult:
    """Check ``lhs == rhs`` symbolically: simplify ``lhs - rhs`` and report whether it is exactly zero.

    Works for scalar expressions and for matrices (entry by entry).
    """
    difference = lhs - rhs
    residual = difference.applyfunc(simplify) if isinstance(difference, sp.MatrixBase) else simplify(difference)
    return ProofResult(claim, statement, residual, _is_zero(residual))
