"""Symbolic (SymPy) proofs of the book's claims. Each function returns a :class:`ProofResult`."""

from . import image, sequence
from .result import ProofResult, verify_equal

__all__ = ["ProofResult", "image", "sequence", "verify_equal"]
