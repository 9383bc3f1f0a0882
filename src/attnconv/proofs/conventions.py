"""The index conventions every sequence proof uses, as functions, so that a test can hold them to the library.

δ = j - i is the key minus the query (:func:`relative_offset`), and a clipped term reads the tap
clip(δ) = max(-k, min(k, δ)) (:func:`clip_offset`). A window of k reads the keys max(0, i-k) .. min(N-1, i+k)
(:func:`window_keys`), a causal head the keys i-k .. i (:func:`causal_keys`), and a key-dependent kernel's weight at
δ is predicted from the token it reads, i + δ (:func:`kernel_token`). The library's band reads column
clip(j - i) + k (``attnconv.positional.band.relative_index``); :func:`conventions_match_library` (a ledger entry)
and ``tests/test_proofs_sequence.py`` evaluate these functions on concrete indices and compare them with the library
in the modes the chapters use: the query and the key frame, clipping and the window, chunks of rows, the key frame
re-indexed by query, and the causal mask. A flipped offset, clip, frame or window in the proofs or in the library
fails there.
"""

from __future__ import annotations

import sympy as sp

__all__ = ["attention_row", "causal_keys", "clip_offset", "kernel_token", "relative_offset", "window_keys"]


def relative_offset(query: sp.Expr, key: sp.Expr) -> sp.Expr:
    """δ = key - query: the offset at which the query i reads the key j (b_{j-i}, a_{clip(j-i)})."""
    return key - query


def clip_offset(delta: sp.Expr, k: sp.Expr) -> sp.Expr:
    """clip(δ) = max(-k, min(k, δ)): the tap a clipped relative term reads at the offset δ."""
    return sp.Max(-k, sp.Min(k, delta))


def window_keys(query: sp.Expr, k: sp.Expr, length: sp.Expr) -> tuple[sp.Expr, sp.Expr]:
    """The keys max(0, i - k) .. min(N - 1, i + k) that a head with a window of k reads at the query i."""
    return sp.Max(0, query - k), sp.Min(length - 1, query + k)


def causal_keys(query: sp.Expr, k: sp.Expr) -> tuple[sp.Expr, sp.Expr]:
    """The keys i - k .. i that a causal head with a window of k reads at the query i (none after it)."""
    return query - k, query


def kernel_token(query: sp.Expr, offset: sp.Expr) -> sp.Expr:
    """The token whose projection predicts a key-dependent kernel's weight at the offset δ: the key i + δ it reads
    (the library's key frame: row j of the band belongs to the key j)."""
    return query + offset


def attention_row(logit, x: sp.IndexedBase, j: sp.Symbol, lo: sp.Expr, hi: sp.Expr) -> sp.Expr:
    """Σ_j e^{l_j} x_j / Σ_j e^{l_j} for the keys j = lo..hi: one row of softmax attention."""
    return sp.Sum(sp.exp(logit(j)) * x[j], (j, lo, hi)) / sp.Sum(sp.exp(logit(j)), (j, lo, hi))


_PAIR_CHECKS = 11  # the checks of one (query, key) pair in conventions_match_library


def conventions_match_library(clip=clip_offset, offset=relative_offset, window=window_keys, token=kernel_token,
                              causal=causal_keys, max_length: int = 6, max_distance: int = 3):
    """The proofs' conventions against the library, on every (query, key) pair of every N ≤ ``max_length`` and
    k ≤ ``max_distance``, in each mode the chapters use:

    - the tap: clip(offset(i, j), k) + k is the column ``relative_index(N, k)[i, j]``, and ``band_to_logits`` puts
      that column of row i at (i, j) (query frame), also for one chunk of rows at a time;
    - the window: with ``window=True`` the logit is finite exactly on the keys ``window(i, k, N)``;
    - the key frame: ``band_to_logits(..., frame="key")`` reads row ``token(i, δ)`` (the key), and
      ``key_to_query_frame`` puts that row's tap t at (i, t);
    - the causal mask: ``RelativePositionBias(causal=True, window=True)`` is finite exactly on ``causal(i, k)``, and
      so are the query-dependent term (query frame) and the key-dependent term (key frame) with ``window=True``;
      without the window the key-dependent term is finite exactly on the keys up to the last of ``causal(i, k)``
      (the mask of these two terms is ``mask_future`` alone);
    - reading logits back: ``logits_to_band`` puts the logit of (i, j) at the tap of ``offset(i, j)`` of row i, and
      NaN on the taps whose key is outside the sequence.

    ``clip``, ``offset``, ``window``, ``token`` and ``causal`` replace the proofs' functions (each wrong one is a
    false variant). The residual counts the mismatches; scope ``instance``: the sizes checked.
    """
    import math

    import torch

    from ..positional.band import band_to_logits, key_to_query_frame, logits_to_band, relative_index
    from ..positional.sequence import KeyRelativeLogits, QueryRelativeLogits, RelativePositionBias
    from .result import ProofResult

    def dynamic_terms(n: int, k: int) -> tuple[list, list, list]:
        # q_i = (2i, 2, 0, 0) and a_t = (2k+1, t, 0, 0) give q_i·a_t/√4 = i(2k+1) + t, the table's entry (i, t),
        # exactly in float64; the same vectors as keys give the key frame's band. Causal, windowed or clipped.
        width, rows = 2 * k + 1, torch.arange(n, dtype=torch.float64)
        vectors = torch.stack([2 * rows, torch.full_like(rows, 2.0), 0 * rows, 0 * rows], -1)[None, None]
        embedding = torch.stack([torch.full((width,), float(width), dtype=torch.float64),
                                 torch.arange(width, dtype=torch.float64), torch.zeros(width, dtype=torch.float64),
                                 torch.zeros(width, dtype=torch.float64)], -1)
        out = []
        for term in (QueryRelativeLogits(1, 4, k, window=True, causal=True),
                     KeyRelativeLogits(1, 4, k, window=True, causal=True), KeyRelativeLogits(1, 4, k, causal=True)):
            term = term.double()
            with torch.no_grad():
                term.embedding.copy_(embedding)
                out.append(term((n,), vectors, vectors)[0, 0].tolist())
        return out

    def inside(bounds, j):
        lo, hi = bounds
        return bool(int(lo) <= j <= int(hi))

    mismatches = 0
    for n in range(1, max_length + 1):
        for k in range(0, max_distance + 1):
            index = relative_index(n, k).tolist()
            band = torch.arange(n * (2 * k + 1), dtype=torch.float64).reshape(n, 2 * k + 1)
            table = band.tolist()
            query = band_to_logits(band, n).tolist()
            windowed = band_to_logits(band, n, window=True).tolist()
            keyed = band_to_logits(band, n, frame="key").tolist()
            keyed_window = band_to_logits(band, n, window=True, frame="key").tolist()
            chunks = [band_to_logits(band, n, rows=slice(i, i + 1))[0].tolist() for i in range(n)]
            reindexed = key_to_query_frame(band).tolist()
            bias = RelativePositionBias(1, k, window=True, causal=True).double()
            with torch.no_grad():
                bias.weight.copy_(torch.arange(2 * k + 1, dtype=torch.float64)[None])
            masked = bias((n,), None, None)[0].tolist()
            query_causal, key_causal, key_causal_clipped = dynamic_terms(n, k)
            read_back = logits_to_band(torch.tensor(query)).tolist()  # (N, 2N - 1): row i, tap t ↦ offset t - (N-1)
            size, width = sp.Integer(n), sp.Integer(k)
            for i in range(n):
                for j in range(n):
                    delta = offset(sp.Integer(i), sp.Integer(j))
                    tap = int(clip(delta, width)) + k
                    row = int(token(sp.Integer(i), delta))
                    if not 0 <= tap <= 2 * k:  # a tap the band does not have: every check of the pair fails
                        mismatches += _PAIR_CHECKS
                        continue
                    expected_key = table[row][tap] if 0 <= row < n else None
                    in_window = inside(window(sp.Integer(i), width, size), j)
                    in_causal = inside(causal(sp.Integer(i), width), j)
                    past = j <= int(causal(sp.Integer(i), width)[1])
                    spread = int(delta) + n - 1  # the tap of δ in logits_to_band's (N, 2N - 1) rows
                    checks = [
                        index[i][j] == tap,
                        query[i][j] == table[i][tap],
                        chunks[i][j] == table[i][tap],
                        windowed[i][j] == (table[i][tap] if in_window else float("-inf")),
                        keyed[i][j] == expected_key,
                        keyed_window[i][j] == (expected_key if in_window else float("-inf")),
                        masked[i][j] == (float(tap) if in_causal else float("-inf")),
                        query_causal[i][j] == (table[i][tap] if in_causal else float("-inf")),
                        key_causal[i][j] == (expected_key if in_causal else float("-inf")),
                        key_causal_clipped[i][j] == (expected_key if past else float("-inf")),
                        0 <= spread <= 2 * n - 2 and read_back[i][spread] == query[i][j],
                    ]
                    mismatches += checks.count(False)
                for t in range(2 * k + 1):
                    row = int(token(sp.Integer(i), offset(sp.Integer(i), sp.Integer(i + t - k))))
                    mismatches += reindexed[i][t] != (table[row][t] if 0 <= row < n else float("-inf"))
                # a tap of logits_to_band whose key is outside the sequence is NaN: n taps of 2n - 1 are keys
                keys_read = {int(offset(sp.Integer(i), sp.Integer(j))) + n - 1 for j in range(n)}
                mismatches += sum(1 for t in range(2 * n - 1)
                                  if t not in keys_read and not math.isnan(read_back[i][t]))
    return ProofResult("the proofs' offset, clip, window, frames and causal mask are the library's",
                       "clip(j - i, k) + k = relative_index(N, k)[i, j]; band_to_logits reads that column of row i "
                       "(query frame, also by chunks of rows) or of row j = token(i, j - i) (key frame), -inf "
                       "outside window_keys with window=True; key_to_query_frame reads row token(i, t - k); the "
                       "causal bias, query and key terms are finite on causal_keys only; logits_to_band reads (i, j) "
                       "back at the tap of j - i: for every pair", sp.Integer(mismatches),
                       scope="instance", instance=f"N ≤ {max_length}, k ≤ {max_distance}, every (i, j)")


__all__ += ["conventions_match_library"]
