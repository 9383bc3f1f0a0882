"""Lemma 1 of Cordonnier et al. 2020: heads that each attend to one shift, concatenated and projected by W_out,
sum to Σ_h shift_Δh(X) W_Δh. Re-exported by :mod:`attnconv.proofs.image`.

The comparison is up to a relabelling of the heads: which head carries which tap does not matter, so a true
permutation of the heads (centre, value and output block moved together) verifies, while output blocks swapped
without moving the heads do not.
"""

from __future__ import annotations

from typing import Callable, Sequence

import sympy as sp

from .limit import axis_limit
from .result import ProofResult, combine, verify_equal

__all__ = ["lemma1_block_identity"]

_int = dict(integer=True)
_pos_int = dict(integer=True, positive=True)


def _collapse(expr):
    """Multiply out block matrices (the derivation step of a block identity), then evaluate."""
    return sp.block_collapse(expr).doit()


def _head_reads_shift(h: sp.Expr, attention: Callable | None, sign: int) -> tuple[sp.Expr, ProofResult | None]:
    """Σ_k A^(h)_qk X_ki over a zero-extended input, A^(h) the derived limit of the head centred on Δ_h."""
    q, k, i = sp.symbols("q k i", **_int)
    center = sp.IndexedBase("Delta", integer=True)[h]
    x = sp.IndexedBase("X")
    if attention is not None:
        return sp.Sum(attention(q, k, center) * x[k, i], (k, -sp.oo, sp.oo)).doit(), None
    limit = axis_limit(center, sign)
    return sp.Sum(limit.weight(k, q) * x[k, i], (k, -sp.oo, sp.oo)).doit(), limit.proof


def lemma1_block_identity(attention: Callable[[sp.Expr, sp.Expr, sp.Expr], sp.Expr] | None = None,
                          swap_blocks: bool = False, sign: int = -1, relabel: Sequence[int] = ()) -> ProofResult:
    """Lemma 1, with symbolic N_h, N, D_in, D_h and D_out, and with the assignment of heads to blocks:

        concat_h[A^(h) X W_val^(h)] W_out = Σ_h shift_Δh(X) W_Δh,

    where head h has centre Δ_h, its attention A^(h) is the derived α → ∞ limit of its logit
    (:func:`~attnconv.proofs.limit.axis_limit`), the construction factors the tap W_Δh = U_h V_h, sets
    W_val^(h) = U_h and puts V_h into block h of W_out (rows (h-1)D_h + 1 .. h D_h, the block that multiplies head
    h's slot of the concatenation).

    Steps: the concatenation identity [Y_1 ... Y_N_h][W_1; ...; W_N_h] = Σ_h Y_h W_h by induction over N_h (block
    matrices with symbolic sizes), then the index-level sum over heads, channels and keys.

    Args:
        attention: ``attention(q, k, Δ)`` replaces the derived limit (a false variant when it is not the shift;
            e.g. ``3 δ_{q, k+Δ} + 1``).
        swap_blocks: V_1 goes into block 2 and V_2 into block 1, the heads unmoved (a false variant).
        sign: -1 for the paper's encoding; +1 (the opposite sign) is a false variant.
        relabel: ``(π(1), ..., π(m))``: head h carries tap π(h) (its centre Δ_π(h), W_val = U_π(h) and V_π(h) in
            its block of W_out); heads after m keep their own taps. A permutation such as ``(2, 1)`` or
            ``(2, 3, 1)`` is a true variant; ``(1, 1)`` puts two heads on tap 1 and none on tap 2 (false).

    The index-level step compares the two sums over heads, not head by head: the heads 1..m are written out
    (N_h ≥ m, symbolic) and the heads m + 1..N_h, which π fixes, are compared term by term.
    """
    n, d_h, d_out, heads = sp.symbols("N D_h D_out N_h", **_pos_int)
    y = [sp.MatrixSymbol(f"Y_{h}", n, d_h) for h in (1, 2)]
    w_out = [sp.MatrixSymbol(f"W_out^({h})", d_h, d_out) for h in (1, 2)]
    single = verify_equal("base case N_h = 1", "[Y_1][W_1] = Y_1 W_1",
                          sp.BlockMatrix([[y[0]]]) * sp.BlockMatrix([[w_out[0]]]),
                          y[0] * w_out[0], simplify=_collapse, scope="general", variables=("N", "D_h", "D_out"))
    base = verify_equal("base case N_h = 2", "[Y_1 Y_2][W_1; W_2] = Y_1 W_1 + Y_2 W_2",
                        sp.BlockMatrix([y]) * sp.BlockMatrix([[w_out[0]], [w_out[1]]]),
                        y[0] * w_out[0] + y[1] * w_out[1], simplify=_collapse, scope="general",
                        variables=("N", "D_h", "D_out"))
    concat, stacked = sp.MatrixSymbol("C_{N_h}", n, heads * d_h), sp.MatrixSymbol("P_{N_h}", heads * d_h, d_out)
    partial = sp.MatrixSymbol("Sigma_{N_h}", n, d_out)  # Σ_{h ≤ N_h} Y_h W_h, the induction hypothesis C P = Σ
    new_y, new_w = sp.MatrixSymbol("Y_{N_h+1}", n, d_h), sp.MatrixSymbol("W_out^(N_h+1)", d_h, d_out)
    product = sp.BlockMatrix([[concat, new_y]]) * sp.BlockMatrix([[stacked], [new_w]])
    step = verify_equal("inductive step N_h → N_h + 1", "[C Y][P; W] = C P + Y W = Σ_{h ≤ N_h+1} Y_h W_h",
                        product, partial + new_y * new_w,
                        simplify=lambda e: _collapse(e).subs(concat * stacked, partial).doit(),
                        scope="general", variables=("N", "N_h", "D_h", "D_out"))
    # Index level: head h carries tap π(h); its slot of the concatenation meets block h of W_out, holding V_β(h)
    images = tuple(relabel)
    if not all(isinstance(t, int) and 1 <= t <= len(images) for t in images):
        raise ValueError(f"relabel must list taps 1..{len(images)} for the heads 1..{len(images)}, got {images!r}")
    explicit = max(len(images), 2 if swap_blocks else 0)
    h, i, c, o = sp.symbols("h i c o", **_int)
    d_in = sp.Symbol("D_in", **_pos_int)
    u, v = sp.IndexedBase("U"), sp.IndexedBase("V")
    q = sp.Symbol("q", **_int)
    x, centers = sp.IndexedBase("X"), sp.IndexedBase("Delta", integer=True)

    def tap_of(head_index):
        return images[head_index - 1] if head_index <= len(images) else head_index

    def block_of(head_index):
        swapped = {1: 2, 2: 1}.get(head_index, head_index) if swap_blocks else head_index
        return tap_of(swapped)

    def layer(head_index, tap, block):  # (A^(h) X W_val^(h))_{q,c} (W_out block h)_{c,o}
        return _head_reads_shift(tap, attention, sign)[0] * u[tap, i, c] * v[block, c, o]

    def conv(tap):  # X_{q+Δ_t} W_Δt, W_Δt = U_t V_t
        return x[q + centers[tap], i] * u[tap, i, c] * v[tap, c, o]

    written = sp.expand(sum((layer(n, tap_of(n), block_of(n)) - conv(n) for n in range(1, explicit + 1)),
                            sp.Integer(0)))
    fixed = sp.expand(layer(h, h, h) - conv(h))  # the heads after m carry their own taps
    limit = _head_reads_shift(h, attention, sign)[1]
    channels = [(c, 1, d_h), (i, 1, d_in)]
    residual = ((sp.Sum(written, *channels) if written != 0 else sp.Integer(0))
                + (sp.Sum(fixed, *channels, (h, explicit + 1, heads)) if fixed != 0 else sp.Integer(0)))
    moved = f"heads 1..{explicit} written out" if explicit else "head by head"
    assignment = ProofResult(
        ("heads meet their own blocks" if not swap_blocks else "heads meet swapped blocks")
        + (f" (heads relabelled by {images})" if images else ""),
        f"Σ_h Σ_{{i,c}} (A^(h)X)_{{q,i}} U_{{π(h),i,c}} (W_out block h)_{{c,o}} = Σ_t (X_{{q+Δ_t}} U_t V_t)_o ({moved})",
        residual, scope="general", variables=("N_h" + (f" ≥ {explicit}" if explicit else ""), "D_in", "D_h",
                                              "D_out", "q", "Δ_h"))
    steps = [assignment, single, base, step] + ([limit] if limit is not None else [])
    return combine(
        "heads concatenated = sum of shifted products (the paper's Lemma 1)",
        "concat_h[A^(h) X W_val^(h)] W_out = Σ_h shift_Δh(X) W_val^(h) W_out^(h) for every N_h, N, D_in, D_h, D_out",
        steps, scope="induction", variables=("N_h", "N", "D_in", "D_h", "D_out"),
        latex=r"\begin{aligned} &\operatorname{concat}_h\big[A^{(h)} X W^{(h)}_{val}\big] W_{out} \\"
              r" &= \textstyle\sum_h \operatorname{shift}_{\Delta^{(h)}}(X)\, W^{(h)}_{val} W^{(h)}_{out}"
              r" \end{aligned}",
    )


