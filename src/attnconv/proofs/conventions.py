"""The index conventions every sequence proof uses, as functions, so that a test can hold them to the library.

δ = j - i is the key minus the query (:func:`relative_offset`), and a clipped term reads the tap
clip(δ) = max(-k, min(k, δ)) (:func:`clip_offset`). The library's band reads column clip(j - i) + k
(``attnconv.positional.band.relative_index``); ``tests/test_proofs_sequence.py`` evaluates these functions on
concrete indices and compares them with it, so a flipped offset or clip in the proofs fails a test.
"""

from __future__ import annotations

import sympy as sp

__all__ = ["attention_row", "clip_offset", "relative_offset"]


def relative_offset(query: sp.Expr, key: sp.Expr) -> sp.Expr:
    """δ = key - query: the offset at which the query i reads the key j (b_{j-i}, a_{clip(j-i)})."""
    return key - query


def clip_offset(delta: sp.Expr, k: sp.Expr) -> sp.Expr:
    """clip(δ) = max(-k, min(k, δ)): the tap a clipped relative term reads at the offset δ."""
    return sp.Max(-k, sp.Min(k, delta))


def attention_row(logit, x: sp.IndexedBase, j: sp.Symbol, lo: sp.Expr, hi: sp.Expr) -> sp.Expr:
    """Σ_j e^{l_j} x_j / Σ_j e^{l_j} for the keys j = lo..hi: one row of softmax attention."""
    return sp.Sum(sp.exp(logit(j)) * x[j], (j, lo, hi)) / sp.Sum(sp.exp(logit(j)), (j, lo, hi))
