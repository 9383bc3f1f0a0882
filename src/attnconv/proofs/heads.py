"""Lemma 1 of Cordonnier et al. 2020: heads that each attend to one shift, concatenated and projected by W_out,
sum to Σ_h shift_Δh(X) W_Δh. Re-exported by :mod:`attnconv.proofs.image`.

The comparison is up to a relabelling of the heads: which head carries which tap does not matter, so a true
permutation of the heads (centre, value and output block moved together) verifies, while output blocks swapped
without moving the heads do not. A permutation of explicitly written heads is compared as a sum; a symbolic
relabelling of all N_h heads (the reflection h → N_h + 1 - h, a cyclic shift, either one after the other) is checked to be a bijection and the
sum re-indexed by it; a relabelling SymPy cannot read is not decided.
"""

from __future__ import annotations

import itertools
from typing import Callable, Sequence

import sympy as sp

from ._symbolic import sum_simplify
from .limit import axis_limit, nonnegative
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


def _relabelling_pieces(image: sp.Expr, h: sp.Symbol, heads: sp.Symbol):
    """A relabelling π of the heads 1..N_h, read as affine pieces: [(first, last, π on the piece)], the steps that
    check each piece's formula, the hypothesis on N_h it needs, or a reason why π is not one SymPy can read.

    Read: an affine map a h + b with a = ±1 (the identity, the reflection N_h + 1 - h, a shift h + b that is not a
    bijection), one piece; and a cyclic shift Mod(±h + c, N_h) + 1 with an integer c (a number, or a symbol
    c ≥ 0; c + t N_h is read as c), for N_h ≥ |c| + 1: two pieces split where A = ±h + c crosses a multiple of
    N_h, e.g. h + c + 1 on 1..N_h-c-1 and h + c + 1 - N_h on N_h-c..N_h for Mod(h + c, N_h) + 1
    (Mod(A, N_h) = A - N_h floor(A/N_h), the floor decided on each piece at its ends, since A is monotone in h).
    A piece that is empty for every N_h is dropped."""
    image = sp.expand(image)
    mods = image.atoms(sp.Mod)
    if not mods:
        try:
            poly = sp.Poly(image, h)
        except sp.PolynomialError:
            return None, [], {}, f"π(h) = {image} is not affine in h"
        slope = poly.coeff_monomial(h) if poly.degree() == 1 else 0
        if poly.degree() != 1 or slope not in (1, -1):
            return None, [], {}, f"π(h) = {image} is not h + b or b - h"
        return [(sp.Integer(1), heads, image)], [], {}, ""
    if len(mods) == 1:
        (mod,) = mods
        argument, modulus = mod.args
        slope = sp.expand(argument).coeff(h)
        shift = sp.expand(argument - slope * h)
        turns = shift.coeff(heads) if shift.is_polynomial(heads) else None
        if turns is not None and turns.is_Integer:  # Mod(A + t N_h, N_h) = Mod(A, N_h)
            shift = sp.expand(shift - turns * heads)
        outer = sp.expand(image - mod)
        readable = (modulus == heads and outer == 1 and slope in (1, -1) and not shift.has(h, heads)
                    and shift.is_integer and (shift.is_nonnegative is True or shift.is_Integer))
        if readable:
            argument = slope * h + shift
            rest = sp.Symbol("r", integer=True, nonnegative=True)
            size = shift if shift.is_nonnegative is True else -shift
            hypothesis = {heads: size + 1 + rest}  # N_h ≥ |c| + 1
            # where A = ±h + c crosses a multiple of N_h, and floor(A / N_h) on each side
            if slope == 1:
                split, floors = ((heads - shift - 1, (0, 1)) if shift.is_nonnegative is True
                                 else (-shift - 1, (-1, 0)))
            else:
                split, floors = ((shift, (0, -1)) if shift.is_nonnegative is True else (heads + shift, (-1, -2)))
            spans = [((sp.Integer(1), split), floors[0]), ((split + 1, heads), floors[1])]
            spans = [(span, floor) for span, floor in spans  # a piece that is empty for every N_h is dropped
                     if sp.expand((span[1] - span[0] + 1).subs(hypothesis)) != 0]
            checks, pieces = [], []
            for (lo, hi), floor in spans:
                value = argument - floor * heads  # Mod(A, N_h) on the piece, if 0 ≤ it ≤ N_h - 1 there
                low, high = (lo, hi) if slope == 1 else (hi, lo)  # A is monotone in h: its ends bound it
                ends = [sp.expand(value.subs(h, low).subs(hypothesis)),
                        sp.expand((heads - 1 - value).subs(h, high).subs(hypothesis))]
                undecided = [e for e in ends if not nonnegative(e)]
                checks.append(ProofResult(f"Mod({argument}, N_h) = {sp.expand(value)} on h = {lo}..{hi}",
                                          f"0 ≤ {sp.expand(value)} ≤ N_h - 1 at both ends (it is monotone in h)",
                                          sp.Matrix(undecided) if undecided else sp.Integer(0), scope="general",
                                          variables=("N_h ≥ |c| + 1", "h")))
                pieces.append((lo, hi, sp.expand(value + 1)))
            return pieces, checks, hypothesis, ""
    return None, [], {}, f"π(h) = {image} is neither h + b, b - h nor a cyclic shift Mod(±h + c, N_h) + 1"


def _symbolic_relabelling(relabel: Callable, h: sp.Symbol, heads: sp.Symbol, term: Callable[[sp.Expr], sp.Expr],
                          conv: Callable[[sp.Expr], sp.Expr], channels: list) -> ProofResult:
    """Heads relabelled by a symbolic π: head h carries tap π(h) (centre, value and output block together).

    Σ_h F(π(h)) = Σ_t F(t) when π is a bijection of 1..N_h: each affine piece of π is re-indexed by t = π(h)
    (Σ_{h=l}^{u} F(π(h)) = Σ_{t} F(t) over the image, checked by ``sum_simplify``, which compares sums up to a shift
    or a reflection of the index), the images must tile 1..N_h exactly, and then Σ_t F(t) - conv(t) vanishes term by
    term. A π that SymPy cannot read is *not decided*; an affine one whose images do not tile 1..N_h is refuted."""
    t = sp.Symbol("t", integer=True)
    image = sp.sympify(relabel(h, heads))
    pieces, checks, hypothesis, reason = _relabelling_pieces(image, h, heads)
    name = f"heads meet their own blocks (heads relabelled by π(h) = {image})"
    if pieces is None:
        return ProofResult(name + ": not decided", f"{reason}: SymPy cannot check that it is a bijection of "
                           "1..N_h, nor re-index the sum by it", sp.Symbol("undecided_relabelling"),
                           scope="general", variables=("N_h", "h"), undecided=True)
    steps, intervals = list(checks), []
    for lo, hi, formula in pieces:
        increasing = formula.coeff(h) == 1
        ends = (sp.expand(formula.subs(h, lo if increasing else hi)), sp.expand(formula.subs(h, hi if increasing else lo)))
        intervals.append(ends)
        steps.append(verify_equal(f"re-index heads {lo}..{hi} by t = {formula}",
                                  f"Σ_{{h={lo}}}^{{{hi}}} F({formula}) = Σ_{{t={ends[0]}}}^{{{ends[1]}}} F(t)",
                                  sp.Sum(term(formula), (h, lo, hi)), sp.Sum(term(t), (t, *ends)),
                                  simplify=sum_simplify, scope="general", variables=("N_h", "F")))
    tiled = None
    for order in itertools.permutations(intervals):
        gaps = [order[0][0] - 1, order[-1][1] - heads] + [order[n + 1][0] - order[n][1] - 1
                                                            for n in range(len(order) - 1)]
        gaps = [sp.expand(g.subs(hypothesis)) for g in gaps]
        proper = all(nonnegative(sp.expand((b - a + 1).subs(hypothesis))) for a, b in order)
        if all(g == 0 for g in gaps) and proper:
            tiled = order
            break
    if tiled is None:
        return ProofResult(name + ": not a bijection of 1..N_h",
                           f"the heads' taps run over {intervals}, which do not tile 1..N_h: some tap has no head or "
                           "some head no tap", sp.Matrix([sp.expand(a - 1) for a, _ in intervals]
                                                         + [sp.expand(b - heads) for _, b in intervals]),
                           scope="general", variables=("N_h", "h"), steps=tuple(steps))
    summand = sp.expand(term(t) - conv(t))
    residual = sp.Sum(summand, *channels, (t, 1, heads)) if summand != 0 else sp.Integer(0)
    rest = sp.Symbol("r", integer=True, nonnegative=True)
    where = "" if not hypothesis else f", for N_h = {hypothesis[heads]} ≥ {sp.expand(hypothesis[heads] - rest)}"
    return ProofResult(name, f"π is a bijection of 1..N_h: its pieces' taps {tiled} tile 1..N_h{where}; re-indexed, "
                       "Σ_t (F(t) - X_{q+Δ_t} U_t V_t) vanishes term by term", residual, scope="general",
                       variables=("N_h", "D_in", "D_h", "D_out", "q", "Δ_h"), steps=tuple(steps))


def lemma1_block_identity(attention: Callable[[sp.Expr, sp.Expr, sp.Expr], sp.Expr] | None = None,
                          swap_blocks: bool = False, sign: int = -1,
                          relabel: Sequence[int] | Callable[[sp.Expr, sp.Expr], sp.Expr] = ()) -> ProofResult:
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
            Or a symbolic relabelling ``relabel(h, N_h)`` of every head: the reflection ``N_h + 1 - h`` and a cyclic
            shift ``Mod(h + c, N_h) + 1``, forwards, backwards (``Mod(h - 2, N_h) + 1``) or after the reflection
            (``Mod(3 - h, N_h) + 1``), are bijections (true); ``h + 1`` leaves tap 1 without a head (false); a
            π SymPy cannot read is not decided (``_symbolic_relabelling``).

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
    symbolic = callable(relabel)
    if symbolic and swap_blocks:
        raise ValueError("swap_blocks takes explicit heads: give relabel as a tuple, not a function")
    images = () if symbolic else tuple(relabel)
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

    channels = [(c, 1, d_h), (i, 1, d_in)]
    if symbolic:
        assignment = _symbolic_relabelling(relabel, h, heads, lambda t: layer(t, t, t), conv, channels)
        limit = _head_reads_shift(h, attention, sign)[1]
        steps = [assignment, single, base, step] + ([limit] if limit is not None else [])
        return combine("heads concatenated = sum of shifted products (the paper's Lemma 1)",
                       "concat_h[A^(h) X W_val^(h)] W_out = Σ_h shift_Δh(X) W_val^(h) W_out^(h), heads relabelled by "
                       f"π(h) = {sp.sympify(relabel(h, heads))}", steps, scope="induction",
                       variables=("N_h", "N", "D_in", "D_h", "D_out"))
    written = sp.expand(sum((layer(n, tap_of(n), block_of(n)) - conv(n) for n in range(1, explicit + 1)),
                            sp.Integer(0)))
    fixed = sp.expand(layer(h, h, h) - conv(h))  # the heads after m carry their own taps
    limit = _head_reads_shift(h, attention, sign)[1]
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


