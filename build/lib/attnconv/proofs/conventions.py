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


def conventions_match_library(clip=clip_offset, offset=relative_offset, max_length: int = 6,
                              max_distance: int = 3):
    """The proofs' conventions against the library's band, on every (query, key) pair of every N ≤ ``max_length``
    and k ≤ ``max_distance``: the tap the proofs read, clip(offset(i, j), k) + k, must be the column
    ``relative_index(N, k)[i, j]`` that the library reads, and ``band_to_logits`` must put that column at (i, j).

    ``clip`` and ``offset`` replace the proofs' functions (a flipped clip or offset is a false variant). The
    residual counts the mismatches; scope ``instance``: the sizes checked.
    """
    import torch

    from ..positional.band import band_to_logits, relative_index
    from .result import ProofResult

    mismatches = 0
    for n in range(1, max_length + 1):
        for k in range(0, max_distance + 1):
            index = relative_index(n, k)
            band = torch.arange(n * (2 * k + 1), dtype=torch.float64).reshape(n, 2 * k + 1)
            logits = band_to_logits(band, n)
            for i in range(n):
                for j in range(n):
                    tap = int(clip(offset(sp.Integer(i), sp.Integer(j)), sp.Integer(k))) + k
                    mismatches += int(index[i, j]) != tap or float(logits[i, j]) != float(band[i, tap])
    return ProofResult("the proofs' offset and clip are the library's", "clip(j - i, k) + k = relative_index(N, k)"
                       "[i, j], and band_to_logits reads that column, for every pair", sp.Integer(mismatches),
                       scope="instance", instance=f"N ≤ {max_length}, k ≤ {max_distance}, every (i, j)")


__all__ += ["conventions_match_library"]
