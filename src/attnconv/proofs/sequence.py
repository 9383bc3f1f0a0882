"""SymPy proofs of the sequence claims of Chang et al. 2021: relative positions are convolutions.

Each function builds both sides of one claim from symbols (tokens x_i, biases b_δ, projection matrices, relative
embeddings) on a short sequence and returns a :class:`~attnconv.proofs.result.ProofResult` with the simplified
residual. Each has an argument that turns the claim into a false one (a zero-padded boundary, a missing scale, the
wrong token predicting a kernel), and the tests check that the false version is reported as not verified.

Conventions: δ = j - i (key minus query), k = ``max_distance``, clip(δ) = max(-k, min(k, δ)). One channel of
tokens suffices for the claims about the softmax, since a lightweight convolution applies the same kernel to
every channel of a head.
"""

from __future__ import annotations

import itertools

import sympy as sp
import torch

from ..positional.sequence import relative_position_bucket
from .result import ProofResult, verify_equal

__all__ = [
    "fixed_bias_is_lightweight_conv",
    "clipped_bias_tails",
    "query_dependent_is_dynamic_conv",
    "dynamic_kernel_rank",
    "key_dependent_is_dynamic_conv",
    "composite_is_sum_of_kernels",
    "alibi_kernel_decay",
    "bucketed_kernel_is_piecewise_constant",
]


def _clip(delta: int, k: int) -> int:
    return max(-k, min(k, delta))


def _bias_symbols(k: int) -> dict[int, sp.Symbol]:
    return {d: sp.Symbol(f"b_{{{d}}}", real=True) for d in range(-k, k + 1)}


def _tokens(n: int) -> list[sp.Symbol]:
    return list(sp.symbols(f"x0:{n}", real=True))


def _weighted_mean(logits: dict[int, sp.Expr], x: list[sp.Symbol]) -> sp.Expr:
    """Σ_j e^{l_j} x_j / Σ_j e^{l_j} over the keys j in ``logits``: one row of softmax attention."""
    total = sum(sp.exp(v) for v in logits.values())
    return sum(sp.exp(v) * x[j] for j, v in logits.items()) / total


def _rational(expr: sp.Expr) -> sp.Expr:
    return sp.cancel(sp.together(sp.expand(expr)))


def _matrix(rows: int, cols: int, name: str) -> sp.Matrix:
    return sp.Matrix(rows, cols, lambda r, c: sp.Symbol(f"{name}_{r}{c}", real=True))


def fixed_bias_is_lightweight_conv(length: int = 6, max_distance: int = 2, positions: str = "interior",
                                   boundary: str = "zeros") -> ProofResult:
    """Equivalence 1: attention with logits b_{j-i} on abs(j - i) ≤ k (no content term) is the lightweight
    convolution with kernel β = softmax(b).

    ``positions="interior"`` checks k ≤ i < N - k, where every tap exists; ``positions="all"`` checks every i.
    ``boundary="zeros"`` compares with the zero-padded convolution Σ_δ β_δ x_{i+δ} (missing taps read 0);
    ``boundary="renormalize"`` with the convolution renormalised over the taps that exist. The pair
    ``positions="all", boundary="zeros"`` is false: at the edges attention renormalises and zero padding does not.
    """
    if positions not in ("interior", "all") or boundary not in ("zeros", "renormalize"):
        raise ValueError("positions must be 'interior' or 'all', boundary 'zeros' or 'renormalize'")
    if length < 2 * max_distance + 1:
        raise ValueError(f"length must be at least 2 max_distance + 1 = {2 * max_distance + 1}, got {length}")
    n, k = length, max_distance
    x, b = _tokens(n), _bias_symbols(k)
    z = sum(sp.exp(v) for v in b.values())
    rows = range(k, n - k) if positions == "interior" else range(n)
    lhs, rhs = [], []
    for i in rows:
        taps = [d for d in range(-k, k + 1) if 0 <= i + d < n]
        lhs.append(_weighted_mean({i + d: b[d] for d in taps}, x))  # attention: softmax over existing keys
        if boundary == "zeros":
            rhs.append(sum(sp.exp(b[d]) / z * x[i + d] for d in taps))
        else:
            rhs.append(sum(sp.exp(b[d]) * x[i + d] for d in taps) / sum(sp.exp(b[d]) for d in taps))
    where = "interior positions k ≤ i < N-k" if positions == "interior" else "every position"
    conv = "zero-padded" if boundary == "zeros" else "boundary-renormalised"
    return verify_equal(
        f"fixed bias = lightweight conv ({conv}, {where}; N={n}, k={k})",
        f"softmax_j(b_(j-i)) over |j-i| ≤ k, applied to x, equals the {conv} convolution with β = softmax(b) at {where}",
        sp.Matrix(lhs), sp.Matrix(rhs), simplify=_rational,
    )


def clipped_bias_tails(length: int = 5, max_distance: int = 1, tails: str = "edge") -> ProofResult:
    """The clipping caveat: attention with the clipped bias b_{clip(j-i)} over all keys is the renormalised
    convolution whose kernel has 2N - 1 taps with w_δ = b_{clip(δ)}: constant tails equal to the edge weight.

    ``tails="zero"`` claims instead the finite 2k+1-tap kernel (zero weight beyond ±k): false when N > k + 1.
    """
    if tails not in ("edge", "zero"):
        raise ValueError(f"tails must be 'edge' or 'zero', got {tails!r}")
    n, k = length, max_distance
    x, b = _tokens(n), _bias_symbols(k)
    lhs, rhs = [], []
    for i in range(n):
        lhs.append(_weighted_mean({j: b[_clip(j - i, k)] for j in range(n)}, x))
        reach = n - 1 if tails == "edge" else k
        taps = [d for d in range(-reach, reach + 1) if 0 <= i + d < n]
        weights = {d: sp.exp(b[_clip(d, k)]) for d in taps}
        rhs.append(sum(weights[d] * x[i + d] for d in taps) / sum(weights.values()))
    kernel = "2N-1 taps, w_δ = b_clip(δ)" if tails == "edge" else "2k+1 taps, zero beyond ±k"
    return verify_equal(
        f"clipped bias has constant tails (N={n}, k={k}, claim: {kernel})",
        f"softmax_j(b_clip(j-i)) over all keys = renormalised convolution with {kernel}",
        sp.Matrix(lhs), sp.Matrix(rhs), simplify=_rational,
    )


def query_dependent_is_dynamic_conv(length: int = 4, embed_dim: int = 2, head_dim: int = 2, max_distance: int = 1,
                                    scaled: bool = True) -> ProofResult:
    """Equivalence 2: Shaw et al.'s term (x_i W^Q + b^Q)·a_{clip(j-i)} / sqrt(D_h) is the dynamic kernel
    x_i W^D + b^D read at tap clip(j-i) + k, with W^D = W^Q [a_{-k} ... a_k] / sqrt(D_h) and
    b^D = b^Q [a_{-k} ... a_k] / sqrt(D_h): a kernel predicted from the query token alone.

    Equal logits give equal softmax rows, so the attention is the dynamic lightweight convolution
    softmax(x_i W^D + b^D). ``scaled=False`` drops the 1/sqrt(D_h) from W^D and b^D (a false statement).
    """
    n, c, d, k = length, embed_dim, head_dim, max_distance
    x = _matrix(n, c, "x")
    w_q, b_q = _matrix(c, d, "W^Q"), _matrix(1, d, "b^Q")
    a = _matrix(2 * k + 1, d, "a")  # row t: a_{t-k}
    root = sp.sqrt(d)
    w_d = w_q * a.T / (root if scaled else 1)  # (C, 2k+1)
    b_d = b_q * a.T / (root if scaled else 1)  # (1, 2k+1)
    q = x * w_q + sp.ones(n, 1) * b_q  # (N, D_h)
    kernels = x * w_d + sp.ones(n, 1) * b_d  # (N, 2k+1): row i is token i's kernel logits
    lhs = sp.Matrix(n, n, lambda i, j: q.row(i).dot(a.row(_clip(j - i, k) + k)) / root)
    rhs = sp.Matrix(n, n, lambda i, j: kernels[i, _clip(j - i, k) + k])
    return verify_equal(
        f"query-dependent term = dynamic conv (N={n}, C={c}, D_h={d}, k={k})",
        "(x_i W^Q + b^Q)·a_clip(j-i)/√D_h = (x_i W^D + b^D)_clip(j-i), W^D = W^Q A^T/√D_h, b^D = b^Q A^T/√D_h",
        lhs, rhs, simplify=sp.expand,
    )


def dynamic_kernel_rank(embed_dim: int = 3, head_dim: int = 1, max_distance: int = 1,
                        claimed_rank: int | None = None) -> ProofResult:
    """W^D = W^Q [a_{-k} ... a_k] / sqrt(D_h) has rank ≤ D_h: every (D_h + 1)-minor vanishes identically.

    A query-dependent relative term is therefore a *low-rank* dynamic convolution when D_h < min(C, 2k+1).
    ``claimed_rank`` below D_h gives a false statement.
    """
    c, d, k = embed_dim, head_dim, max_distance
    r = d if claimed_rank is None else claimed_rank
    w_d = _matrix(c, d, "W^Q") * _matrix(2 * k + 1, d, "a").T / sp.sqrt(d)
    minors = [w_d.extract(list(rows), list(cols)).det()
              for rows in itertools.combinations(range(c), r + 1)
              for cols in itertools.combinations(range(2 * k + 1), r + 1)]
    residual = sp.Matrix(minors) if minors else sp.zeros(1, 1)
    return verify_equal(
        f"rank W^D ≤ {r} (C={c}, D_h={d}, k={k})",
        f"all ({r + 1})-minors of W^D = W^Q A^T/√D_h vanish, so rank W^D ≤ {r}",
        residual, sp.zeros(*residual.shape), simplify=sp.expand,
    )


def key_dependent_is_dynamic_conv(length: int = 4, embed_dim: int = 2, head_dim: int = 1, max_distance: int = 1,
                                  predictor: str = "key") -> ProofResult:
    """Equivalence 3: the key-dependent term (x_j W^K)·c_{clip(j-i)} / sqrt(D_h) is a dynamic convolution whose
    weight at offset δ is predicted from the token it reads: κ_i[δ] = γ_{i+δ}[clip(δ)] with
    γ_j = x_j W^K [c_{-k} ... c_k] / sqrt(D_h).

    ``predictor="query"`` claims κ_i[δ] = γ_i[clip(δ)], a kernel predicted from the query (false).
    """
    if predictor not in ("key", "query"):
        raise ValueError(f"predictor must be 'key' or 'query', got {predictor!r}")
    n, c, d, k = length, embed_dim, head_dim, max_distance
    x = _matrix(n, c, "x")
    w_k, cemb = _matrix(c, d, "W^K"), _matrix(2 * k + 1, d, "c")
    keys = x * w_k
    gamma = keys * cemb.T / sp.sqrt(d)  # (N, 2k+1): row j is predicted from token j alone
    lhs = sp.Matrix(n, n, lambda i, j: keys.row(j).dot(cemb.row(_clip(j - i, k) + k)) / sp.sqrt(d))
    source = (lambda i, j: j) if predictor == "key" else (lambda i, j: i)
    rhs = sp.Matrix(n, n, lambda i, j: gamma[source(i, j), _clip(j - i, k) + k])
    return verify_equal(
        f"key-dependent term = dynamic conv predicted from the {predictor} (N={n}, D_h={d}, k={k})",
        f"(x_j W^K)·c_clip(j-i)/√D_h = γ_{'i+δ' if predictor == 'key' else 'i'}[clip(δ)], γ_j = x_j W^K C^T/√D_h",
        lhs, rhs, simplify=sp.expand,
    )


def composite_is_sum_of_kernels(length: int = 4, embed_dim: int = 1, head_dim: int = 1, max_distance: int = 1,
                                key_predictor: str = "key") -> ProofResult:
    """Composite attention is a softmax of a sum of convolution kernels.

    The logits L_ij = q_i·k_j/√D_h + b_clip(δ) + q_i·a_clip(δ)/√D_h + k_j·c_clip(δ)/√D_h (δ = j - i) equal
    Σ_terms κ_i[δ] at δ = j - i, with each kernel built only from what it is claimed to depend on:

    - content κ_i[δ] = (x_i W^Q)(x_{i+δ} W^K)^T / √D_h: both tokens (a full-width dynamic kernel);
    - fixed κ[δ] = b_clip(δ): no token (a lightweight convolution);
    - query κ_i[δ] = (x_i W^D)_clip(δ): the query token (a dynamic convolution);
    - key κ_i[δ] = γ_{i+δ}[clip(δ)]: the key token.

    ``key_predictor="query"`` builds the key kernel from the query token instead (a false statement).
    """
    n, c, d, k = length, embed_dim, head_dim, max_distance
    x = _matrix(n, c, "x")
    w_q, w_k = _matrix(c, d, "W^Q"), _matrix(c, d, "W^K")
    a, cemb, b = _matrix(2 * k + 1, d, "a"), _matrix(2 * k + 1, d, "c"), _bias_symbols(k)
    root = sp.sqrt(d)
    q, keys = x * w_q, x * w_k
    w_d, gamma = w_q * a.T / root, keys * cemb.T / root

    def logit(i: int, j: int) -> sp.Expr:
        t = _clip(j - i, k) + k
        return q.row(i).dot(keys.row(j)) / root + b[t - k] + q.row(i).dot(a.row(t)) / root + keys.row(j).dot(cemb.row(t)) / root

    def kernel_sum(i: int, delta: int) -> sp.Expr:
        t = _clip(delta, k) + k
        reader = i + delta if key_predictor == "key" else i
        content = q.row(i).dot(keys.row(i + delta)) / root
        return content + b[t - k] + (x.row(i) * w_d)[t] + gamma[reader, t]

    lhs = sp.Matrix(n, n, logit)
    rhs = sp.Matrix(n, n, lambda i, j: kernel_sum(i, j - i))
    return verify_equal(
        f"composite logits = sum of four kernels (N={n}, k={k}, key kernel from the {key_predictor})",
        "L_ij = κ^content_i[δ] + κ^fixed[δ] + κ^query_i[δ] + κ^key_i[δ] at δ = j - i",
        lhs, rhs, simplify=sp.expand,
    )


def alibi_kernel_decay(length: int = 5, causal: bool = False, rate: int = 1) -> ProofResult:
    """ALiBi is a lightweight convolution with a geometric kernel: for logits -m abs(j - i) the attention weights
    of any query satisfy A_{i,j±1} / A_{i,j} = e^{-m} moving away from i (and, causally, A_{i,j} = 0 for j > i).

    ``rate=2`` claims the ratio e^{-2m} (false).
    """
    m = sp.Symbol("m", positive=True)
    n = length
    residual = []
    for i in range(n):
        keys = range(i + 1) if causal else range(n)
        total = sum(sp.exp(-m * abs(j - i)) for j in keys)
        weight = {j: sp.exp(-m * abs(j - i)) / total for j in keys}
        for j in keys:
            step = j + 1 if j >= i else j - 1  # the next key away from the query
            if step in weight:
                residual.append(weight[step] / weight[j] - sp.exp(-rate * m))
    kind = "causal" if causal else "bidirectional"
    return verify_equal(
        f"ALiBi kernel decays by e^(-{rate}m) per step ({kind}, N={n})",
        f"softmax_j(-m|j-i|): each step away from the query multiplies the weight by e^(-{rate}m)",
        sp.Matrix(residual), sp.zeros(len(residual), 1), simplify=sp.simplify,
    )


def bucketed_kernel_is_piecewise_constant(num_buckets: int = 8, max_distance: int = 6,
                                          merge_adjacent: bool = False) -> ProofResult:
    """T5's bucketed bias w_bucket(δ) gives a lightweight-convolution kernel β_δ = e^{w_bucket(δ)} / Z that is
    constant on each bucket, for every offset up to and beyond ±k (bucketing includes clipping).

    ``merge_adjacent=True`` also claims equality across neighbouring buckets (false).
    """
    k = max_distance
    offsets = list(range(-k - 2, k + 3))
    buckets = relative_position_bucket(torch.tensor(offsets), num_buckets, k).tolist()
    w = sp.symbols(f"w0:{num_buckets}", real=True)
    z = sum(sp.exp(w[bk]) for bk in buckets)
    beta = {d: sp.exp(w[bk]) / z for d, bk in zip(offsets, buckets)}
    pairs = [(d, e) for d, e in zip(offsets, offsets[1:])
             if buckets[offsets.index(d)] == buckets[offsets.index(e)] or merge_adjacent]
    residual = sp.Matrix([beta[d] - beta[e] for d, e in pairs])
    return verify_equal(
        f"T5-bucketed kernel is piecewise constant ({num_buckets} buckets, k={k})",
        "β_δ = β_δ' whenever bucket(δ) = bucket(δ'): the kernel is constant on each bucket",
        residual, sp.zeros(len(pairs), 1), simplify=sp.simplify,
    )
