"""Symbolic (SymPy) proofs of the book's claims. Each function returns a :class:`ProofResult`."""

from .result import ProofResult, verify_equal

__all__ = ["ProofResult", "verify_equal"]
