"""SymPy proofs of the claims behind Theorem 1 of Cordonnier et al. 2020 (multi-head attention ⊇ convolution).

What SymPy derives here, and what it does not:

- Each head's attention is derived from the encoding's own logit v·r_δ (:mod:`attnconv.proofs.limit`): the logit
  has an interior maximum at the centre, the nearest key wins by a gap α·g, and the squeeze gives the α → ∞
  limit. It is never typed in as a shift matrix, so the opposite sign fails (no interior maximum) and a
  half-integer centre fails (a named tie), while an off-grid centre with a unique nearest key still verifies.
- Theorem 1, the 1-D case and dilation/stride sum over the keys of the zero-padded canvas with the image size,
  K, the padding, stride, dilation, the channels and the output pixel symbolic: whether a head's target lies on
  the canvas is decided symbolically (:func:`~attnconv.proofs.limit.decide_conditions`).
- Lemma 1 carries which head meets which block of W_out; the concatenation identity is by induction over N_h.
- The finite-α bound keeps α symbolic, derives the tail-mass bound from the logit and the triangle inequality
  from the Lagrange identity. Taking the limit with M keys and the gap symbolic is SymPy's ``limit``.
- Not derived: that a product of per-axis limits is the 2-D limit beyond the factorisation of the softmax
  (:func:`softmax_factorization`), and the induction over keys that extends the triangle inequality from two
  vectors to a weighted sum; both are stated in the docstrings.

Every function has arguments that make its claim false (a sign, a centre, a block order) and, where natural, ones
that keep it true (an off-grid centre); ``attnconv.claims`` lists them and the tests run them.

Conventions: a query at q attends to the key at k = q + δ; head h has centre Δ^(h); the input X̃ is X padded with
zeros; the convolution is the cross-correlation y_q = Σ_a X̃_{s q + d a - p} W_a (PyTorch's).
"""

from __future__ import annotations

from typing import Callable

import sympy as sp

from ._symbolic import alpha, hard_limits, pull_sums, sum_simplify
from .limit import axis_limit, decide_conditions, encoding_logit, gap_lemma, nonnegative
from .rank import rank_bound, rank_condition, rank_counterexample  # noqa: F401  (Theorem 1's step; kept here for callers)
from .result import ProofResult, combine, verify_equal

__all__ = [
    "conv_is_sum_of_shifts",
    "quadratic_identity",
    "shift_invariance",
    "hard_attention_limit",
    "lemma1_block_identity",
    "theorem1",
    "one_dimensional_case",
    "dilation_and_stride",
    "unpadded_boundary_refutation",
    "finite_alpha_bound",
    "softmax_factorization",
]

_int = dict(integer=True)
_pos_int = dict(integer=True, positive=True)


def _matrix_zero(expr):
    return expr.doit()


def _collapse(expr):
    """Multiply out block matrices (the derivation step of a block identity), then evaluate."""
    return sp.block_collapse(expr).doit()


def conv_is_sum_of_shifts(flipped: bool = False, stride_ignored: bool = False) -> ProofResult:
    """Lemma (chapter 01): a 2-D convolution (PyTorch's cross-correlation) with padding p, dilation d and stride s is
    Σ_a shift_{Δ_a}(X) W_{Δ_a} + b with Δ_a = a ⊙ d - p, read at the outputs s ⊙ q.

    By definition Conv(X)_{q,o} = b_o + Σ_{a, i} X̃_{s⊙q + a⊙d - p, i} w_{o,i,a} with X̃ the zero-padded input, and
    shift_Δ(X)_q = X̃_{q+Δ}. Symbolic in the kernel size, channels, p, d, s and q. ``flipped=True`` uses
    Δ_a = p - a ⊙ d, the textbook convolution that flips the kernel (false for PyTorch's layer).
    """
    a = sp.symbols("a1:3", **_int)
    q = sp.symbols("q1:3", **_int)
    pad, dil, stride = sp.symbols("p1:3", **_int), sp.symbols("d1:3", **_pos_int), sp.symbols("s1:3", **_pos_int)
    i, o = sp.symbols("i o", **_int)
    d_in = sp.Symbol("D_in", **_pos_int)
    k1, k2 = sp.symbols("K1 K2", **_pos_int)
    x, w, b = sp.IndexedBase("X"), sp.IndexedBase("w"), sp.IndexedBase("b")
    sign = -1 if flipped else 1
    shift = [sign * (a[m] * dil[m] - pad[m]) for m in range(2)]  # Δ_a
    read = [stride[m] * q[m] + a[m] * dil[m] - pad[m] for m in range(2)]  # the input pixel PyTorch's layer reads
    conv_summand = x[read[0], read[1], i] * w[o, i, a[0], a[1]]
    at = q if stride_ignored else [stride[m] * q[m] for m in range(2)]
    shift_summand = x[at[0] + shift[0], at[1] + shift[1], i] * w[o, i, a[0], a[1]]
    difference = sp.expand(conv_summand - shift_summand)
    limits = [(i, 0, d_in - 1), (a[0], 0, k1 - 1), (a[1], 0, k2 - 1)]
    residual = difference if difference == 0 else sp.Sum(difference, *limits)
    return ProofResult(
        "convolution = sum of shifted, projected inputs",
        "Conv(X)_q = Σ_a shift_{a⊙d-p}(X)_{s⊙q} W_{a⊙d-p} + b, W_Δ = w_{:,:,a}^T",
        residual, scope="definition", variables=("K1", "K2", "D_in", "D_out", "p", "d", "s", "q"),
    )


def quadratic_identity(center_coefficient: int = -2) -> ProofResult:
    """Lemma 2, in any dimension d: v · r_δ = -α(‖δ - Δ‖² - ‖Δ‖²) for r_δ = (‖δ‖², δ) and v = -α(1, c Δ), c = -2.

    The dot products are sums over the d axes with d a symbol. ``center_coefficient=2`` is the false variant.
    """
    d = sp.Symbol("d", **_pos_int)
    a = sp.Symbol("a", **_int)
    delta, center = sp.IndexedBase("delta", real=True), sp.IndexedBase("Delta", real=True)
    # v·r - (-α(‖δ-Δ‖² - ‖Δ‖²)) = -α Σ_a [δ_a² + c Δ_a δ_a - (δ_a - Δ_a)² + Δ_a²]: one sum over the d axes
    summand = sp.expand(delta[a] ** 2 + center_coefficient * center[a] * delta[a]
                        - (delta[a] - center[a]) ** 2 + center[a] ** 2)
    residual = (-alpha * sp.Sum(summand, (a, 1, d))).doit()
    return ProofResult(
        "quadratic identity (Lemma 2 of the paper)",
        f"v·r_δ = -α(‖δ-Δ‖² - ‖Δ‖²) with r_δ = (‖δ‖², δ), v = -α(1, {center_coefficient}Δ), in d dimensions",
        residual,
        scope="general", variables=("d", "α", "δ", "Δ"),
    )


def shift_invariance(per_entry: bool = False, scaled: bool = False) -> ProofResult:
    """softmax(x + c 1) = softmax(x) for a vector of any length N: adding one value to every logit of a row.

    ``per_entry=True`` adds a different value c_k to each entry instead; ``scaled=True`` multiplies every logit by
    c instead (both false statements).
    """
    n = sp.Symbol("N", **_pos_int)
    j, k = sp.symbols("j k", **_int)
    x = sp.IndexedBase("x", real=True)
    c = sp.IndexedBase("c", real=True)
    shift = (lambda m: c[m]) if per_entry else (lambda m: sp.Symbol("c", real=True))
    def change(m):
        return sp.Symbol("c", real=True) * x[m] if scaled else x[m] + shift(m)

    lhs = sp.exp(change(j)) / sp.Sum(sp.exp(change(k)), (k, 1, n))
    rhs = sp.exp(x[j]) / sp.Sum(sp.exp(x[k]), (k, 1, n))
    return verify_equal("shift invariance of softmax", "softmax(x + c·1)_j = softmax(x)_j for every length N",
                        lhs, rhs, simplify=sum_simplify, scope="general", variables=("N", "x", "c"))


def _squeeze_steps(sign: int) -> tuple[ProofResult, ProofResult]:
    """The two facts behind the squeeze bounds of ``hard_limits``, for M keys with logits sign · α u_k.

    1. Dividing by the nearest key's term: e^{s α u_min} / (m e^{s α u_min} + Σ_k e^{s α u_k})
       = 1 / (m + Σ_k e^{s α (u_k - u_min)}), over the other keys k = 1..M (M symbolic).
    2. A key farther by t ≥ 0 weighs less: d/dt e^{s α t} < 0, so every e^{s α (u_k - u_min)} ≤ e^{s α g}.
       False for s = +1.
    """
    keys, ties = sp.symbols("M m", integer=True, positive=True)
    k = sp.Symbol("k", integer=True)
    u, u_min = sp.IndexedBase("u", real=True), sp.Symbol("u_min", real=True)
    t = sp.Symbol("t", nonnegative=True)

    def weight(v):
        return sp.exp(sign * alpha * v)

    divided = verify_equal(
        "divide by the nearest key's weight",
        "e^{sαu_min}/(m e^{sαu_min} + Σ_k e^{sαu_k}) = 1/(m + Σ_k e^{sα(u_k-u_min)})",
        weight(u_min) / (ties * weight(u_min) + sp.Sum(weight(u[k]), (k, 1, keys))),
        1 / (ties + sp.Sum(weight(u[k] - u_min), (k, 1, keys))),
        simplify=sum_simplify, scope="general", variables=("M", "m", "u", "α"))
    slope = sp.diff(sp.exp(sign * alpha * t), t)
    decreasing = ProofResult("farther keys weigh less", "d/dt e^{sαt} < 0 for t ≥ 0",
                             sp.Integer(0 if slope.is_negative else 1), scope="general", variables=("α > 0", "t ≥ 0"))
    return divided, decreasing


def hard_attention_limit(sign: int = -1, offset: sp.Expr = 0) -> ProofResult:
    """Hard mode is the α → ∞ limit of the quadratic encoding, derived from the encoding's logit.

    The logit of a head centred on Δ + ``offset`` (Δ an integer symbol) is v·r_δ = -α(δ² - 2(Δ + f)δ), the
    library's ``positional_query`` dotted with ``quadratic_features``. :func:`~attnconv.proofs.limit.axis_limit`
    derives that it has an interior maximum, that the nearest key wins by a gap α·g (g = 1 - 2 abs(f), for every
    abs(f) < 1/2 by :func:`~attnconv.proofs.limit.gap_lemma`), and the squeeze: weight → 1 on the nearest key,
    → 0 elsewhere, for any number M of keys. A 2-D head is the product of two such axes
    (:func:`softmax_factorization`).

    True variants: an off-grid centre with a unique nearest key (``offset=1/3``). False variants: ``sign=+1``
    (the encoding with the opposite sign has no interior maximum) and ``offset=1/2`` (a tie between two keys).
    """
    center = sp.Symbol("Delta", integer=True)
    limit = axis_limit(center + _rational(offset), sign)
    return ProofResult(
        "hard attention is the α→∞ limit of the quadratic encoding",
        f"lim_{{α→∞}} softmax_δ(v·r_δ) = 1[δ = {limit.nearest}] for the centre {center + _rational(offset)}, "
        "derived from the logit",
        sp.Integer(0), scope="general", variables=("Δ", "α", "M (number of keys)"),
        steps=(quadratic_identity(), shift_invariance(), *_squeeze_steps(-1), gap_lemma(), limit.proof),
    )


def _rational(offset: sp.Expr) -> sp.Expr:
    value = sp.nsimplify(offset)
    if not value.is_Rational:
        raise ValueError(f"offset must be a rational number, got {offset!r}")
    return value


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
                          swap_blocks: bool = False, sign: int = -1) -> ProofResult:
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
        swap_blocks: V_1 goes into block 2 and V_2 into block 1 (a false variant).
        sign: -1 for the paper's encoding; +1 (the opposite sign) is a false variant.
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
    # Index level: head h's slot of the concatenation meets block h of W_out, which holds V_{assign(h)}.
    h, i, c, o = sp.symbols("h i c o", **_int)
    d_in = sp.Symbol("D_in", **_pos_int)
    u, v = sp.IndexedBase("U"), sp.IndexedBase("V")
    assign = sp.Piecewise((2, sp.Eq(h, 1)), (1, sp.Eq(h, 2)), (h, True)) if swap_blocks else h
    head, limit = _head_reads_shift(h, attention, sign)  # (A^(h) X)_{q,i}
    q = sp.Symbol("q", **_int)
    x, centers = sp.IndexedBase("X"), sp.IndexedBase("Delta", integer=True)
    layer = head * u[h, i, c] * v[assign, c, o]  # (A^(h) X W_val^(h))_{q,c} (W_out block h)_{c,o}
    conv = x[q + centers[h], i] * u[h, i, c] * v[h, c, o]  # X_{q+Δ_h} W_Δh, W_Δh = U_h V_h
    summand = sp.expand(layer - conv)
    limits = [(c, 1, d_h), (i, 1, d_in), (h, 1, heads)]
    assignment = ProofResult(
        "heads meet their own blocks" if not swap_blocks else "heads meet swapped blocks",
        "Σ_h Σ_{i,c} (A^(h)X)_{q,i} U_{h,i,c} (W_out block h)_{c,o} = Σ_h (X_{q+Δ_h} U_h V_h)_o",
        summand if summand == 0 else sp.Sum(summand, *limits), scope="general",
        variables=("N_h", "D_in", "D_h", "D_out", "q", "Δ_h"))
    steps = [assignment, single, base, step] + ([limit] if limit is not None else [])
    return combine(
        "heads concatenated = sum of shifted products (the paper's Lemma 1)",
        "concat_h[A^(h) X W_val^(h)] W_out = Σ_h shift_Δh(X) W_val^(h) W_out^(h) for every N_h, N, D_in, D_h, D_out",
        steps, scope="induction", variables=("N_h", "N", "D_in", "D_h", "D_out"),
        latex=r"\begin{aligned} &\operatorname{concat}_h\big[A^{(h)} X W^{(h)}_{val}\big] W_{out} \\"
              r" &= \textstyle\sum_h \operatorname{shift}_{\Delta^{(h)}}(X)\, W^{(h)}_{val} W^{(h)}_{out}"
              r" \end{aligned}",
    )


def _padded_conv(dims: int, *, offset: sp.Expr = 0, sign: int = -1, strided: bool = False,
                 dilated_centers: bool = True, padded: bool = True, coefficient: int = -2) -> tuple[sp.Expr, list[ProofResult]]:
    """MHSA with one derived-limit head per tap on the zero-padded canvas, cropped, minus the convolution.

    Per axis: kernel size K = a + b + 1 (tap a, b ≥ 0 taps after it), padding p ≥ 0, stride s, dilation d, output
    index q ≥ 0 with r ≥ 0 outputs after it, so the input has H = s q + d (K - 1) + 1 - 2p + r pixels. The head
    for tap a is centred on d a - p (+ ``offset``), attends from the canvas position s q over the keys -p .. H-1+p
    of the padded input X̃ (zero outside 0..H-1), and the convolution reads X̃_{s q + d a - p} (PyTorch).
    Every condition that decides whether the head's target lies on the canvas is decided symbolically.
    Returns the residual Σ_{i, taps} (head - conv) W and the per-axis limit derivations.
    """
    tap = sp.symbols(f"a1:{dims + 1}", integer=True, nonnegative=True)
    after = sp.symbols(f"b1:{dims + 1}", integer=True, nonnegative=True)
    q = sp.symbols(f"q1:{dims + 1}", integer=True, nonnegative=True)
    rest = sp.symbols(f"r1:{dims + 1}", integer=True, nonnegative=True)
    pad = sp.symbols(f"p1:{dims + 1}", integer=True, nonnegative=True)
    stride = sp.symbols(f"s1:{dims + 1}", **_pos_int) if strided else (1,) * dims
    dil = sp.symbols(f"d1:{dims + 1}", **_pos_int) if strided else (1,) * dims
    k = sp.symbols(f"k1:{dims + 1}", **_int)
    i, o = sp.symbols("i o", **_int)
    d_in = sp.Symbol("D_in", **_pos_int)
    xt, x, w = sp.IndexedBase("X̃"), sp.IndexedBase("X"), sp.IndexedBase("W")
    size = [stride[a] * q[a] + dil[a] * (tap[a] + after[a]) + 1 - 2 * pad[a] + rest[a] for a in range(dims)]
    limits, weight = [], sp.Integer(1)
    for a in range(dims):
        scale = dil[a] if dilated_centers else 1
        limit = axis_limit(scale * tap[a] - pad[a] + _rational(offset), sign, coefficient)
        limits.append(limit)
        weight = weight * limit.weight(k[a], stride[a] * q[a])
    if padded:
        ranges = [(k[a], -pad[a], size[a] - 1 + pad[a]) for a in range(dims)]
        head = sp.Sum(weight * xt[(*k, i)], *ranges[::-1]).doit()
    else:  # attention over the image itself: no zero keys around it
        ranges = [(k[a], 0, size[a] - 1) for a in range(dims)]
        head = sp.Sum(weight * x[(*k, i)], *ranges[::-1]).doit()
    head = sp.piecewise_fold(decide_conditions(head))
    conv = xt[(*(stride[a] * q[a] + dil[a] * tap[a] - pad[a] for a in range(dims)), i)]
    summand = sp.expand((head - conv) * w[(*tap, i, o)])
    kernel = sp.symbols(f"K1:{dims + 1}", **_pos_int)  # each tap's residual vanishes for every a ≤ K - 1
    taps = [(tap[a], 0, kernel[a] - 1) for a in range(dims)]
    residual = summand if summand == 0 else sp.Sum(summand, (i, 0, d_in - 1), *taps)
    return residual, [limit.proof for limit in limits]


def unpadded_boundary_refutation() -> ProofResult:
    """Without padding, the construction fails at the border, derived from the logit: at the query q = 0 the head
    for the tap Δ = -1 - n (n ≥ 0) sees only the keys 0..H-1 (H symbolic). Over those keys the logit is largest at
    key 0 and every key 1 + m (m ≥ 0) is at least 3α below it, so the limit is one-hot on key 0 and the head reads
    X_0; the zero-padded convolution reads X̃_{-1-n}, which is 0 because -1-n lies outside 0..H-1. The residual
    X_0 is not zero: the refutation holds for every H and every such tap."""
    n, m = sp.symbols("n m", integer=True, nonnegative=True)
    key, i = sp.symbols("k i", **_int)
    height = sp.Symbol("H", **_pos_int)
    target = -1 - n
    logit = encoding_logit([key], [target])
    margin = sp.expand((logit.subs(key, 0) - logit.subs(key, 1 + m)) / alpha) - 3
    gap = ProofResult("key 0 is the nearest existing key, by a gap 3α",
                      "ℓ(0) - ℓ(1 + m) ≥ 3α for every m ≥ 0 when the target is -1 - n",
                      sp.Integer(0) if nonnegative(margin) else margin, scope="general", variables=("n", "m", "α"))
    x = sp.IndexedBase("X")
    weight = hard_limits(-1, 1)[0] * sp.KroneckerDelta(key, 0)  # the squeeze with the gap above: 1 on key 0
    head = decide_conditions(sp.Sum(weight * x[key, i], (key, 0, height - 1)).doit())
    padded = sp.Piecewise((x[target, i], (target >= 0) & (target <= height - 1)), (0, True))  # X̃_{-1-n}
    return ProofResult("without padding, a border head reads the nearest pixel (refutation)",
                       "at q = 0, tap Δ = -1 - n: MHSA reads X_0, the zero-padded convolution reads 0",
                       sp.piecewise_fold(head - decide_conditions(padded)), scope="general",
                       variables=("H", "n", "α"), steps=(gap,))


def theorem1(offset: sp.Expr = 0, sign: int = -1, padded: bool = True) -> ProofResult:
    """Theorem 1 (2-D): a multi-head self-attention layer with N_h = K² heads, D_h ≥ rank W_Δ, the quadratic
    encoding with centres on the taps Δ = a - p, α → ∞, on the zero-padded input with the output cropped to the
    convolution's output grid, computes the K x K convolution y_q = Σ_a X̃_{q+a-p} W_a.

    Symbolic in the image size H x W, the kernel size K, the padding p, D_in, D_out and the output pixel q
    (``_padded_conv``): the pad-attend-crop step is derived for every size, and each head's attention is the
    derived limit of its logit. True variant: ``offset=1/3`` (off-grid centres, each with a unique nearest key).
    False variants: ``offset=1/2`` (ties), ``sign=+1`` (no interior maximum), ``padded=False`` (attention over the
    unpadded image; refuted by :func:`unpadded_boundary_refutation`).
    """
    residual, limits = _padded_conv(2, offset=offset, sign=sign, padded=padded)
    steps = [hard_attention_limit(), softmax_factorization(), lemma1_block_identity(), rank_condition(), *limits]
    if not padded:
        steps.append(unpadded_boundary_refutation())
        residual = residual + steps[-1].residual
    return ProofResult(
        "MHSA with K² quadratic heads = K×K convolution (the paper's Theorem 1, 2-D)",
        "α→∞, centres on the taps, zero padding then crop, D_h ≥ rank W_Δ: MHSA(X)_q = Σ_Δ X̃_{q+Δ} W_Δ",
        residual, scope="general", variables=("H", "W", "K", "p", "D_in", "D_out", "q"), steps=tuple(steps),
    )


def one_dimensional_case(center_coefficient: int = -2, sign: int = -1, offset: sp.Expr = 0) -> ProofResult:
    """The 1-D case: the encoding r_δ = (δ², δ) (D_p = 2) with v = -α(1, c Δ), c = -2, centres each head on Δ, and
    K heads compute the 1-D convolution y_q = Σ_a X̃_{q+a-p} W_a for any length, K, padding and channels.

    The head's centre is derived, not assumed: completing the square gives logits -α(δ - δ*)² + const with
    δ* = -c Δ / 2. ``center_coefficient=2`` puts the head on -Δ: a flipped kernel (false); ``sign=+1`` is the
    encoding with the opposite sign (false); ``offset=1/3`` off-grid centres (true).
    """
    delta, center = sp.symbols("delta Delta", **_int)
    logit = -alpha * (delta**2 + center_coefficient * center * delta)
    peak = sp.solve(sp.diff(logit, delta), delta)[0]
    square = verify_equal("completing the square", "-α(δ² + cΔδ) = -α(δ - δ*)² + α δ*², δ* = -cΔ/2",
                          logit, -alpha * (delta - peak) ** 2 + alpha * peak**2, simplify=sp.expand,
                          scope="general", variables=("α", "δ", "Δ"))
    residual, limits = _padded_conv(1, offset=offset, sign=sign, coefficient=center_coefficient)
    return ProofResult(
        "1-D case (D_p = 2)",
        f"r_δ = (δ², δ), v = -α(1, {center_coefficient}Δ): K heads at α→∞ give y_q = Σ_Δ X̃_{{q+Δ}} W_Δ",
        residual, scope="general", variables=("N", "K", "p", "D_in", "D_out", "q"),
        steps=(square, hard_attention_limit(), *limits),
    )


def dilation_and_stride(dilated_centers: bool = True, sign: int = -1, offset: sp.Expr = 0) -> ProofResult:
    """Dilation d and stride s: heads centred on d a - p, with the output read at the canvas queries s q, compute
    the dilated, strided convolution y_q = Σ_a X̃_{s q + d a - p} W_a (PyTorch's). Symbolic in s, d, K, p, the
    image size, the channels and q, on the zero-padded canvas (``_padded_conv``).

    ``dilated_centers=False`` centres the heads on a - p, as if the dilation were ignored (false); ``sign=+1``
    is the encoding with the opposite sign (false).
    """
    residual, limits = _padded_conv(2, offset=offset, sign=sign, strided=True, dilated_centers=dilated_centers)
    return ProofResult(
        "dilation and stride",
        "heads centred on d⊙a - p, output read at s⊙q: y_q = Σ_a X̃_{s⊙q + d⊙a - p} W_a",
        residual, scope="general", variables=("s", "d", "H", "W", "K", "p", "D_in", "D_out", "q"),
        steps=(hard_attention_limit(), *limits),
    )


def _sum_of_nonnegative_terms(expr: sp.Expr) -> bool:
    """True when ``expr`` expands to a sum of products of nonnegative factors, each factor a nonnegative symbol, a
    nonnegative number, or a ``Sum`` whose summand is nonnegative (a sum of nonnegative terms is nonnegative)."""
    def factor_ok(f: sp.Expr) -> bool:
        if isinstance(f, sp.Sum):
            return f.function.is_nonnegative is True
        if isinstance(f, sp.Pow) and f.exp.is_integer and f.exp.is_positive:
            return factor_ok(f.base) or f.exp.is_even is True
        return f.is_nonnegative is True

    return all(all(factor_ok(f) for f in sp.Mul.make_args(term)) for term in sp.Add.make_args(sp.expand(expr)))


def finite_alpha_bound(factor: sp.Expr = 1) -> ProofResult:
    """The finite-α error bound of a 2-D quadratic head, derived with α, the grid and the channels symbolic.

    1. From the logit: the weight of the key at δ = Δ + n relative to the target is e^{ℓ(Δ+n) - ℓ(Δ)} = e^{-α‖n‖²}.
    2. Tail mass: on a grid that leaves L_a offsets below and U_a above the target on axis a, the off-target
       weight is R = P_1 P_2 - 1 with P_a = Σ_{n=-L_a}^{U_a} e^{-αn²} (Fubini). Splitting θ(α) = Σ_{n∈Z} e^{-αn²}
       into P_a and two tails T_a ≥ 0 gives S - R = P_1 T_2 + T_1 P_2 + T_1 T_2 ≥ 0 with S = θ² - 1.
    3. The off-target mass is ε = R / (1 + R) (the target key has weight 1 / (1 + R)); x ↦ x / (1 + x) increases,
       so ε ≤ S / (1 + S) = 1 - θ^{-2}. Equality when every T_a = 0: on an infinite grid. On a finite grid the bound
       is not attained (chapter 03 measures the ratio).
    4. With Σ_k A_k = 1: Σ_k A_k Y_k - Y_t = Σ_k A_k (Y_k - Y_t) over any N keys.
    5. Triangle inequality, from the Lagrange identity ‖a‖²‖b‖² - (a·b)² = ½ Σ_{i,j} (a_i b_j - a_j b_i)² in D
       dimensions (D symbolic): so a·b ≤ ‖a‖‖b‖ and ‖a + b‖ ≤ ‖a‖ + ‖b‖, hence ‖Y_k - Y_t‖ ≤ 2 max_k ‖Y_k‖.
    6. With A_k ≥ 0 and m_k ≤ m: Σ_{k≠t} A_k m_k ≤ ε m, since ε m - Σ A_k m_k = Σ A_k (m - m_k) ≥ 0.

    Together: ‖MHSA(X)_q - Conv(X)_q‖ ≤ Σ_h ε · 2 max_k ‖X_k W^(h)‖. ``factor`` scales the claimed bound on the
    mass (``factor=1/2`` is a false variant; the equality case of step 3 refutes it).
    """
    n1, n2, n = sp.symbols("n1 n2 n", **_int)
    center = sp.symbols("Delta1 Delta2", **_int)
    logit = encoding_logit([center[0] + n1, center[1] + n2], center) - encoding_logit(center, center)
    relative = verify_equal("relative weight from the logit", "ℓ(Δ + n) - ℓ(Δ) = -α‖n‖²",
                            logit, -alpha * (n1**2 + n2**2), simplify=sp.expand, scope="general",
                            variables=("α", "Δ", "n"))
    lo, hi = sp.symbols("L1:3", integer=True, nonnegative=True), sp.symbols("U1:3", integer=True, nonnegative=True)

    def g(v):
        return sp.exp(-alpha * v**2)

    grid = sp.Sum(sp.exp(-alpha * (n1**2 + n2**2)), (n1, -lo[0], hi[0]), (n2, -lo[1], hi[1]))
    partial = [sp.Sum(g(n), (n, -lo[a], hi[a])) for a in range(2)]
    fubini = verify_equal("the grid sum factorises", "Σ_{n1,n2} e^{-α(n1²+n2²)} = P_1 P_2",
                          grid, partial[0] * partial[1], simplify=sum_simplify, scope="general",
                          variables=("α", "L", "U"))
    tails = [sp.Sum(g(n), (n, -sp.oo, -lo[a] - 1)) + sp.Sum(g(n), (n, hi[a] + 1, sp.oo)) for a in range(2)]
    theta = sp.Sum(g(n), (n, -sp.oo, sp.oo))
    split = [verify_equal(f"θ splits on axis {a + 1}", "θ(α) = P_a + T_a", theta, partial[a] + tails[a],
                          simplify=sp.simplify, scope="general", variables=("α", "L", "U")) for a in range(2)]
    r, s_ = partial[0] * partial[1] - 1, (partial[0] + tails[0]) * (partial[1] + tails[1]) - 1
    gap = sp.expand(s_ - r)
    tail_bound = ProofResult("tail-mass bound R ≤ S(α)", "S - R = P_1 T_2 + T_1 P_2 + T_1 T_2 ≥ 0",
                             sp.Integer(0) if _sum_of_nonnegative_terms(gap) else gap, scope="general",
                             variables=("α", "L", "U"))
    big_r, big_s, theta_s = sp.symbols("R S theta", positive=True)
    mass = big_r / (1 + big_r)
    target_weight = verify_equal("target weight", "1 - 1/(1+R) = R/(1+R)", 1 - 1 / (1 + big_r), mass,
                                 scope="general", variables=("R",))
    derivative = sp.simplify(sp.diff(mass, big_r))
    increasing = ProofResult("x/(1+x) increases", "d/dR [R/(1+R)] = 1/(1+R)² > 0",
                             sp.simplify(derivative - 1 / (1 + big_r) ** 2) + (0 if derivative.is_positive else 1),
                             scope="general", variables=("R ≥ 0",))
    bound = factor * big_s / (1 + big_s)
    tight = verify_equal("equality on an infinite grid (T_a = 0, R = S = θ² - 1)", "ε(R = θ² - 1) = bound",
                         mass.subs(big_r, theta_s**2 - 1), factor * (1 - theta_s ** (-2)), scope="general",
                         variables=("θ",))
    closed = verify_equal("closed form", "S/(1+S) = 1 - θ^{-2} for S = θ² - 1",
                          (big_s / (1 + big_s)).subs(big_s, theta_s**2 - 1), 1 - theta_s ** (-2), scope="general",
                          variables=("θ",))
    count = sp.Symbol("N", **_pos_int)
    k, t = sp.symbols("k t", **_int)
    a, y = sp.IndexedBase("A"), sp.IndexedBase("Y")
    lhs = sp.Sum(a[k] * y[k], (k, 1, count)) - y[t] * sp.Sum(a[k], (k, 1, count))  # Y_t = Y_t Σ_k A_k
    rhs = sp.Sum(a[k] * (y[k] - y[t]), (k, 1, count))
    error = verify_equal("error as a weighted sum of differences", "Σ_k A_k Y_k - Y_t = Σ_k A_k (Y_k - Y_t)",
                         lhs, rhs, simplify=lambda e: sp.expand(pull_sums(e)), scope="general",
                         variables=("N", "A", "Y", "t"))
    dim = sp.Symbol("D", **_pos_int)
    i, j = sp.symbols("i j", **_int)
    u, v = sp.IndexedBase("a", real=True), sp.IndexedBase("b", real=True)
    lagrange = verify_equal(
        "Lagrange identity (Cauchy-Schwarz, hence the triangle inequality)",
        "‖a‖²‖b‖² - (a·b)² = ½ Σ_{i,j} (a_i b_j - a_j b_i)² ≥ 0, in D dimensions",
        sp.Sum(u[i] ** 2, (i, 1, dim)) * sp.Sum(v[j] ** 2, (j, 1, dim))
        - sp.Sum(u[i] * v[i], (i, 1, dim)) * sp.Sum(u[j] * v[j], (j, 1, dim)),
        sp.Sum(sp.expand((u[i] * v[j] - u[j] * v[i]) ** 2) / 2, (i, 1, dim), (j, 1, dim)),
        simplify=sum_simplify, scope="general", variables=("D", "a", "b"))
    norm_a, norm_b, dot = sp.symbols("A_n B_n c", nonnegative=True)
    # (‖a‖ + ‖b‖)² - ‖a + b‖² = 2(‖a‖‖b‖ - a·b), nonnegative by Cauchy-Schwarz (write a·b = ‖a‖‖b‖ - c, c ≥ 0)
    slack = sp.expand((norm_a + norm_b) ** 2 - (norm_a**2 + 2 * (norm_a * norm_b - dot) + norm_b**2))
    triangle = ProofResult("triangle inequality", "(‖a‖+‖b‖)² - ‖a+b‖² = 2(‖a‖‖b‖ - a·b) ≥ 0",
                           sp.Integer(0) if nonnegative(slack) else slack, scope="general", variables=("a", "b"))
    m_k, top = sp.IndexedBase("m"), sp.Symbol("m_max")
    weights = sp.IndexedBase("A", nonnegative=True)
    excess = sp.Sum(weights[k] * (top - m_k[k]), (k, 1, count))  # m_max - m_k ≥ 0 for every k
    weighted = ProofResult("a weighted sum is at most ε times the largest term",
                           "ε m_max - Σ_{k≠t} A_k m_k = Σ_{k≠t} A_k (m_max - m_k) ≥ 0",
                           sp.Integer(0) if excess.function.subs(top - m_k[k], sp.Symbol("z", nonnegative=True))
                           .is_nonnegative else excess, scope="general", variables=("N", "A ≥ 0", "m"))
    return combine(
        "finite-α bound",
        f"off-target mass ≤ {factor}·S/(1+S), S = θ(α)² - 1; ‖MHSA(X)_q - Conv(X)_q‖ ≤ Σ_h 2ε max_k ‖X_k W^(h)‖",
        [relative, fubini, *split, tail_bound, target_weight, increasing, tight, closed, error, lagrange, triangle,
         weighted],
        scope="general", variables=("α", "L", "U", "N", "D"),
    )


def softmax_factorization(coupled: bool = False) -> ProofResult:
    """softmax over an H x W grid of logits a_i + b_j is softmax(a)_i · softmax(b)_j: P = P_row ⊗ P_col, for every
    H and W (symbolic). ``coupled=True`` adds a term c·a_i·b_j that couples the axes (a false statement).
    """
    rows, cols = sp.symbols("H W", **_pos_int)
    i, j, p, q = sp.symbols("i j p q", **_int)
    a, b = sp.IndexedBase("a", real=True), sp.IndexedBase("b", real=True)
    c = sp.Symbol("c", real=True)

    def logit(m, n):
        return a[m] + b[n] + (c * a[m] * b[n] if coupled else 0)

    lhs = sp.exp(logit(p, q)) / sp.Sum(sp.exp(logit(i, j)), (i, 1, rows), (j, 1, cols))
    rhs = sp.exp(a[p]) / sp.Sum(sp.exp(a[i]), (i, 1, rows)) * sp.exp(b[q]) / sp.Sum(sp.exp(b[j]), (j, 1, cols))
    return verify_equal("softmax factorisation over a grid",
                        "softmax_{(i,j)}(a_i + b_j) = softmax(a)_i softmax(b)_j, so P = P_row ⊗ P_col",
                        lhs, rhs, simplify=sum_simplify, scope="general", variables=("H", "W", "a", "b"))
