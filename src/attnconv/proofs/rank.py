"""SymPy proofs about how much of a convolution tap one attention head can carry: the rank condition of the
one-head-per-tap construction (Cordonnier et al. 2020, Theorem 1), and why it is sufficient but not necessary.

Re-exported by :mod:`attnconv.proofs.image`, where Theorem 1 uses the rank condition as one of its steps.
"""

from __future__ import annotations

import sympy as sp

from ._symbolic import minors_above_rank
from .result import ProofResult, verify_equal

__all__ = ["rank_condition", "rank_counterexample", "rank_bound"]

_pos_int = dict(integer=True, positive=True)


def _matrix_zero(expr):
    return expr.doit()


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
        sp.block_collapse(w_val * w_out), w, simplify=_matrix_zero,
        scope="general", variables=("D_in", "D_out", "r = rank W_Δ", "D_h ≥ r"),
    )


def rank_counterexample(mix: tuple[sp.Expr, sp.Expr] = (sp.Rational(1, 3), sp.Rational(2, 3))) -> ProofResult:
    """The rank condition is not necessary for MHSA in general: a 1-D conv with K = 2, W_0 = I and W_1 = diag(1, 2)
    (both rank 2) is reproduced exactly by two heads with D_h = 1 and mixed attention A_1 = (S_0 + S_1)/2,
    A_2 = S_0/3 + 2 S_1/3, with W_val^(1) W_out^(1) = diag(2, 0) and W_val^(2) W_out^(2) = diag(0, 3).

    Checked for any sequence length: MHSA - conv is linear in S_0 X and S_1 X, with coefficient matrices that must
    vanish. ``mix`` is head 2's attention weights on (S_0, S_1); ``mix=(1/2, 1/2)`` is a false variant.
    """
    half = sp.Rational(1, 2)
    m1 = sp.Matrix([[1], [0]]) * sp.Matrix([[2, 0]])  # W_val^(1) W_out^(1) = diag(2, 0), D_h = 1
    m2 = sp.Matrix([[0], [1]]) * sp.Matrix([[0, 3]])  # W_val^(2) W_out^(2) = diag(0, 3), D_h = 1
    w0, w1 = sp.eye(2), sp.diag(1, 2)
    # MHSA - conv = S_0 X (M1/2 + M2/3 - W_0) + S_1 X (M1/2 + 2 M2/3 - W_1) for every X and shift matrices S_0,
    # S_1 of any size: it vanishes when both coefficient matrices do.
    coefficient_s0 = half * m1 + mix[0] * m2 - w0
    coefficient_s1 = half * m1 + mix[1] * m2 - w1
    ranks = sp.Matrix([[m1.rank() - 1, m2.rank() - 1], [w0.rank() - 2, w1.rank() - 2]])  # 1, 1 | 2, 2
    return ProofResult("rank condition is not necessary (counterexample)",
                       "two D_h = 1 heads with mixed attention reproduce a K = 2 conv whose taps have rank 2",
                       sp.Matrix.vstack(coefficient_s0, coefficient_s1, ranks),
                       scope="instance", instance="K = 2, D_in = D_out = 2, W_0 = I, W_1 = diag(1, 2), any N")


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
