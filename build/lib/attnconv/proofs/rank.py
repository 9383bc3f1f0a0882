"""SymPy proofs about how much of a convolution tap one attention head can carry: the rank condition of the
one-head-per-tap construction (Cordonnier et al. 2020, Theorem 1), and why it is sufficient but not necessary.

Re-exported by :mod:`attnconv.proofs.image`, where Theorem 1 uses the rank condition as one of its steps.
"""

from __future__ import annotations

import sympy as sp

from ._symbolic import alpha, minors_above_rank
from .limit import encoding_logit, nonnegative
from .result import ProofResult, verify_equal

__all__ = ["rank_condition", "rank_counterexample", "rank_bound", "mixed_head_limit"]

_pos_int = dict(integer=True, positive=True)


def _collapse(expr):
    """Multiply out the block matrices (the derivation step), then evaluate."""
    return sp.block_collapse(expr).doit()


def rank_condition(short_by: int = 0) -> ProofResult:
    """Sufficient condition for one head per tap: if rank W_Δ = r ≤ D_h, then W_Δ = W_val W_out with
    W_val (D_in x D_h) and W_out (D_h x D_out).

    Proof: a rank factorisation W_Δ = U V (U: D_in x r, V: r x D_out) padded with D_h - r zero columns and rows.
    Symbolic in D_in, D_out, r and D_h - r. ``short_by=1`` drops the last column of U and row of V (heads one
    dimension too small): the product misses a rank-one term, so the false variant fails.
    """
    d_in, d_out, r, pad = sp.symbols("D_in D_out r p", **_pos_int)
    u, v = sp.MatrixSymbol("U", d_in, r), sp.MatrixSymbol("V", r, d_out)
    u_last, v_last = sp.MatrixSymbol("u_r", d_in, 1), sp.MatrixSymbol("v_r", 1, d_out)
    w = u * v + u_last * v_last  # a rank-(r+1) factorisation written as U' V' with U' = [U u_r]
    if short_by:
        w_val = sp.BlockMatrix([[u, sp.ZeroMatrix(d_in, pad)]])
        w_out = sp.BlockMatrix([[v], [sp.ZeroMatrix(pad, d_out)]])
    else:
        w_val = sp.BlockMatrix([[u, u_last, sp.ZeroMatrix(d_in, pad)]])
        w_out = sp.BlockMatrix([[v], [v_last], [sp.ZeroMatrix(pad, d_out)]])
    return verify_equal(
        "rank condition (sufficient for one head per tap)",
        "rank W_Δ ≤ D_h ⇒ W_Δ = W_val W_out with W_val: D_in×D_h, W_out: D_h×D_out",
        w_val * w_out, w, simplify=_collapse,
        scope="general", variables=("D_in", "D_out", "r = rank W_Δ", "D_h ≥ r"),
    )


def mixed_head_limit(bias: sp.Expr) -> tuple[ProofResult, tuple[sp.Expr, sp.Expr]]:
    """What realises a head that mixes two shifts: the logits -α(δ - 1/2)² + b_δ (a quadratic head centred between
    the keys δ = 0 and δ = 1, plus a fixed relative bias with b_0 = 0, b_1 = ``bias``, and bounded b elsewhere).

    From the logit, the keys 0 and 1 tie and every other key is at least 2α below them; so as α → ∞ the weights
    tend to softmax(b_0, b_1) on the two keys (M other keys with biases ≤ B, both symbolic). Returns the
    derivation and the two limit weights: (1/2, 1/2) for b_1 = 0, (1/3, 2/3) for b_1 = log 2.
    """
    key = sp.Symbol("k", integer=True)
    m = sp.Symbol("m", integer=True, nonnegative=True)
    logit = encoding_logit([key], [sp.Rational(1, 2)])
    margins = [sp.expand((logit.subs(key, 0) - logit.subs(key, other)) / alpha) - 2 for other in (2 + m, -1 - m)]
    tie = sp.expand(logit.subs(key, 0) - logit.subs(key, 1))
    keys, top = sp.Symbol("M", positive=True), sp.Symbol("B", real=True)
    denominator = 1 + sp.exp(bias) + keys * sp.exp(top - 2 * alpha)  # the others, each ≤ e^{B - 2α} (relative)
    weights = (sp.limit(1 / denominator, alpha, sp.oo), sp.limit(sp.exp(bias) / denominator, alpha, sp.oo))
    residual = sp.Matrix([tie, *(0 if nonnegative(mg) else mg for mg in margins)])
    return ProofResult("two tied keys, the rest 2α below",
                       "-α(δ - 1/2)²: keys 0 and 1 tie, every other key is ≥ 2α lower; the limit is softmax(b_0, b_1)",
                       residual, scope="general", variables=("α", "M", "B")), weights


def rank_counterexample(mix: tuple[sp.Expr, sp.Expr] = (sp.Rational(1, 3), sp.Rational(2, 3))) -> ProofResult:
    """The rank condition is not necessary for MHSA in general: a 1-D conv with K = 2, W_0 = I and W_1 = diag(1, 2)
    (both rank 2) is reproduced exactly by two heads with D_h = 1 and mixed attention A_1 = (S_0 + S_1)/2,
    A_2 = S_0/3 + 2 S_1/3, with W_val^(1) W_out^(1) = diag(2, 0) and W_val^(2) W_out^(2) = diag(0, 3).

    What realises the mixed heads: on the sequence padded with one zero token at the end (then cropped), the
    α → ∞ limit of the logits -α(δ - 1/2)² + b_δ with b_1 - b_0 = 0 (head 1) and log 2 (head 2)
    (:func:`mixed_head_limit`); at finite α, a mask that keeps only the keys q and q + 1 does the same exactly.

    Checked for any sequence length: MHSA - conv is linear in S_0 X and S_1 X, with coefficient matrices that must
    vanish. ``mix`` is head 2's attention weights on (S_0, S_1); ``mix=(1/2, 1/2)`` is a false variant.
    """
    m1 = sp.Matrix([[1], [0]]) * sp.Matrix([[2, 0]])  # W_val^(1) W_out^(1) = diag(2, 0), D_h = 1
    m2 = sp.Matrix([[0], [1]]) * sp.Matrix([[0, 3]])  # W_val^(2) W_out^(2) = diag(0, 3), D_h = 1
    w0, w1 = sp.eye(2), sp.diag(1, 2)
    first, mix1 = mixed_head_limit(sp.Integer(0))
    second, mix2 = mixed_head_limit(sp.log(2))
    # MHSA - conv = S_0 X (a_0 M1 + c_0 M2 - W_0) + S_1 X (a_1 M1 + c_1 M2 - W_1) for every X and shift matrices S_0,
    # S_1 of any size: it vanishes when both coefficient matrices do. Head 1's weights are derived.
    coefficient_s0 = mix1[0] * m1 + mix[0] * m2 - w0
    coefficient_s1 = mix1[1] * m1 + mix[1] * m2 - w1
    realised = verify_equal("head 2's weights are the derived limit", "softmax(0, log 2) = (1/3, 2/3)",
                            sp.Matrix(mix2), sp.Matrix(mix), scope="instance", instance="b_1 = log 2")
    ranks = sp.Matrix([[m1.rank() - 1, m2.rank() - 1], [w0.rank() - 2, w1.rank() - 2]])  # 1, 1 | 2, 2
    return ProofResult("rank condition is not necessary (counterexample)",
                       "two D_h = 1 heads with mixed attention reproduce a K = 2 conv whose taps have rank 2",
                       sp.Matrix.vstack(coefficient_s0, coefficient_s1, ranks),
                       scope="instance", instance="K = 2, D_in = D_out = 2, W_0 = I, W_1 = diag(1, 2), any N",
                       steps=(first, second, realised))


def rank_bound(d_in: int = 3, d_h: int = 1, d_out: int = 3, claimed_rank: int | None = None) -> ProofResult:
    """One head per tap needs rank W_Δ ≤ D_h: every (D_h + 1)-minor of W_val W_out vanishes (one instance)."""
    k = d_h if claimed_rank is None else claimed_rank
    w_val = sp.Matrix(d_in, d_h, lambda i, j: sp.Symbol(f"v_{i}{j}"))
    w_out = sp.Matrix(d_h, d_out, lambda i, j: sp.Symbol(f"o_{i}{j}"))
    residual = minors_above_rank(w_val * w_out, k)
    return verify_equal(
        f"rank bound (D_in={d_in}, D_h={d_h}, D_out={d_out}, rank ≤ {k})",
        f"all ({k + 1})-minors of W_val W_out vanish, so rank W_Δ ≤ {k}",
        residual, sp.zeros(*residual.shape), simplify=sp.expand,
        scope="instance", instance=f"D_in={d_in}, D_h={d_h}, D_out={d_out}",
    )
