"""SymPy proofs of the claims behind Theorem 1 of Cordonnier et al. 2020 (multi-head attention ⊇ convolution).

Every proof here is symbolic in the sizes its statement quantifies over: grid sizes, kernel size, number of heads,
channel counts, dilation, stride and α are symbols, and sums over them are SymPy ``Sum`` objects. Attention
matrices are never written down as shift matrices: they are the α → ∞ limits of the quadratic encoding's softmax
(``attnconv.proofs._symbolic.hard_limits``), so a wrong encoding makes the conclusion fail. Each function has
an argument that makes its claim false (a sign, a centre, a block order), and the tests check that this false
version is reported as not verified.

Conventions: a query at q attends to the key at k = q + δ; head h has centre Δ^(h); the input X is zero-padded, so
sums over keys run over all of Z and the padded keys read zero; the convolution is the cross-correlation
y_q = Σ_Δ X_{q+Δ} W_Δ (PyTorch's).
"""

from __future__ import annotations

from typing import Callable

import sympy as sp

from ._symbolic import alpha, axis_hard_attention, hard_limits, pull_sums, sum_simplify
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
    "finite_alpha_bound",
    "softmax_factorization",
]

_int = dict(integer=True)
_pos_int = dict(integer=True, positive=True)


def _matrix_zero(expr):
    return expr.doit()


def conv_is_sum_of_shifts(flipped: bool = False) -> ProofResult:
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
    shift_summand = x[stride[0] * q[0] + shift[0], stride[1] * q[1] + shift[1], i] * w[o, i, a[0], a[1]]
    difference = sp.expand(conv_summand - shift_summand)
    limits = [(i, 0, d_in - 1), (a[0], 0, k1 - 1), (a[1], 0, k2 - 1)]
    residual = difference if difference == 0 else sp.Sum(difference, *limits)
    return ProofResult(
        "convolution = sum of shifted, projected inputs",
        "Conv(X)_q = Σ_a shift_{a⊙d-p}(X)_{s⊙q} W_{a⊙d-p} + b, W_Δ = w_{:,:,a}^T",
        residual, scope="general", variables=("K1", "K2", "D_in", "D_out", "p", "d", "s", "q"),
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


def shift_invariance(per_entry: bool = False) -> ProofResult:
    """softmax(x + c 1) = softmax(x) for a vector of any length N: adding one value to every logit of a row.

    ``per_entry=True`` adds a different value c_k to each entry instead (a false statement).
    """
    n = sp.Symbol("N", **_pos_int)
    j, k = sp.symbols("j k", **_int)
    x = sp.IndexedBase("x", real=True)
    c = sp.IndexedBase("c", real=True)
    shift = (lambda m: c[m]) if per_entry else (lambda m: sp.Symbol("c", real=True))
    lhs = sp.exp(x[j] + shift(j)) / sp.Sum(sp.exp(x[k] + shift(k)), (k, 1, n))
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


def hard_attention_limit(sign: int = -1, integer_centers: bool = True) -> ProofResult:
    """Hard mode is the α → ∞ limit of the quadratic encoding.

    The encoding's logits are -α(‖δ - Δ‖² - ‖Δ‖²) (Lemma 2); by shift invariance the softmax is that of -α u_δ with
    u_δ = ‖δ - Δ‖². On an integer grid with an integer centre Δ, u is an integer, zero only at δ = Δ: one nearest key
    and a gap g ≥ 1 to every other. For any number M of keys and any gap g > 0 the squeeze bounds of
    ``hard_limits`` give weight → 1 on δ = Δ and → 0 elsewhere.

    False variants: ``sign=+1`` (logits +α‖δ-Δ‖²) and ``integer_centers=False`` (a centre with a half-integer
    coordinate has two nearest keys and the limit splits the weight).
    """
    nearest, other = hard_limits(sign, 1 if integer_centers else 2)
    return ProofResult(
        "hard attention is the α→∞ limit of the quadratic encoding",
        "lim_{α→∞} softmax_δ(-α‖δ-Δ‖²) = 1[δ = Δ] on any grid containing the integer centre Δ",
        sp.Matrix([nearest - 1, other]),
        scope="general", variables=("M (number of keys)", "g > 0 (gap)", "α"),
        steps=(quadratic_identity(), shift_invariance(), *_squeeze_steps(sign)),
    )


def _encoding_peak(center: sp.Expr, center_coefficient: int = -2) -> sp.Expr:
    """The offset δ* where the quadratic logit v·r_δ = -α(δ² + c Δ δ) peaks: the head's centre, -c Δ / 2."""
    delta = sp.Symbol("delta", real=True)
    return sp.solve(sp.diff(-alpha * (delta**2 + center_coefficient * center * delta), delta), delta)[0]


def _head_is_shift(attention: Callable[[sp.Expr, sp.Expr, sp.Expr], sp.Expr] | None) -> ProofResult:
    """(A X)_q = X_{q+Δ} for the α → ∞ limit of the quadratic head with v = -α(1, -2Δ), over a zero-padded input
    of any size: the head's centre is derived from v, and its weights are the limits of ``hard_limits``."""
    q, k, center, i = sp.symbols("q k Delta i", **_int)
    x = sp.IndexedBase("X")
    weight = attention(q, k, center) if attention else axis_hard_attention(k, q + _encoding_peak(center))
    head = sp.Sum(weight * x[k, i], (k, -sp.oo, sp.oo)).doit()
    return verify_equal("a hard head reads one shifted token", "Σ_k A_qk X_k = X_{q+Δ} (zero-padded X)",
                        head, x[q + center, i], simplify=sp.expand, scope="general", variables=("q", "Δ", "N"))


def lemma1_block_identity(attention: Callable[[sp.Expr, sp.Expr, sp.Expr], sp.Expr] | None = None,
                          swap_blocks: bool = False) -> ProofResult:
    """Lemma 1, by induction over the number of heads N_h, with symbolic N, D_in, D_h, D_out:

        concat_h[A^(h) X W_val^(h)] W_out = Σ_h shift_Δh(X) W_Δh,   W_Δh = W_val^(h) W_out^(h),

    where A^(h) is the hard limit of a quadratic head centred on Δ_h and W_out stacks the blocks W_out^(h).

    Args:
        attention: ``attention(q, k, Δ)`` replaces the hard limit of the encoding (a false variant when it is not
            the shift; e.g. ``3 δ_{q, k+Δ} + 1``).
        swap_blocks: stack the output blocks in the wrong order (a false variant).
    """
    n, d_h, d_out, heads = sp.symbols("N D_h D_out N_h", **_pos_int)
    y = [sp.MatrixSymbol(f"Y_{h}", n, d_h) for h in (1, 2)]
    w_out = [sp.MatrixSymbol(f"W_out^({h})", d_h, d_out) for h in (1, 2)]
    order = w_out[::-1] if swap_blocks else w_out
    single = verify_equal("base case N_h = 1", "[Y_1][W_1] = Y_1 W_1",
                          sp.block_collapse(sp.BlockMatrix([[y[0]]]) * sp.BlockMatrix([[w_out[0]]])),
                          y[0] * w_out[0], simplify=_matrix_zero, scope="general", variables=("N", "D_h", "D_out"))
    base = verify_equal("base case N_h = 2", "[Y_1 Y_2][W_1; W_2] = Y_1 W_1 + Y_2 W_2",
                        sp.block_collapse(sp.BlockMatrix([y]) * sp.BlockMatrix([[order[0]], [order[1]]])),
                        y[0] * w_out[0] + y[1] * w_out[1], simplify=_matrix_zero, scope="general",
                        variables=("N", "D_h", "D_out"))
    concat, stacked = sp.MatrixSymbol("C_{N_h}", n, heads * d_h), sp.MatrixSymbol("P_{N_h}", heads * d_h, d_out)
    partial = sp.MatrixSymbol("Sigma_{N_h}", n, d_out)  # Σ_{h ≤ N_h} Y_h W_h, the induction hypothesis C P = Σ
    new_y, new_w = sp.MatrixSymbol("Y_{N_h+1}", n, d_h), sp.MatrixSymbol("W_out^(N_h+1)", d_h, d_out)
    product = sp.block_collapse(sp.BlockMatrix([[concat, new_y]]) * sp.BlockMatrix([[stacked], [new_w]]))
    step = verify_equal("inductive step N_h → N_h + 1", "[C Y][P; W] = C P + Y W = Σ_{h ≤ N_h+1} Y_h W_h",
                        product.subs(concat * stacked, partial), partial + new_y * new_w, simplify=_matrix_zero,
                        scope="general", variables=("N", "N_h", "D_h", "D_out"))
    head = _head_is_shift(attention)
    return combine(
        "Lemma 1 of the paper (heads concatenated = sum of shifted products)",
        "concat_h[A^(h) X W_val^(h)] W_out = Σ_h shift_Δh(X) W_val^(h) W_out^(h) for every N_h, N, D_in, D_h, D_out",
        [head, single, base, step], scope="induction", variables=("N_h", "N", "D_in", "D_h", "D_out"),
    )


def _conv_residual(dims: int, centers: Callable, reads: Callable, ties: int, sign: int = -1) -> sp.Expr:
    """Σ_{Δ, i} [(hard head centred on centers(Δ), read at the query) - X_{reads(Δ)}] W_{Δ, i, o} per axis."""
    q = sp.symbols(f"q1:{dims + 1}", **_int)
    k = sp.symbols(f"k1:{dims + 1}", **_int)
    delta = sp.symbols(f"Delta1:{dims + 1}", **_int)
    i, o = sp.symbols("i o", **_int)
    lo, hi = sp.symbols(f"a1:{dims + 1}", **_int), sp.symbols(f"b1:{dims + 1}", **_int)
    d_in = sp.Symbol("D_in", **_pos_int)
    x, w = sp.IndexedBase("X"), sp.IndexedBase("W")
    target = centers(q, delta)
    weight = sp.Mul(*(axis_hard_attention(k[a], target[a], sign, ties) for a in range(dims)))
    head = sp.Sum(weight * x[(*k, i)], *((k[a], -sp.oo, sp.oo) for a in range(dims))).doit()
    summand = sp.expand((head - x[(*reads(q, delta), i)]) * w[(*delta, i, o)])
    limits = [(i, 0, d_in - 1), *((delta[a], lo[a], hi[a]) for a in range(dims))]
    return summand if summand == 0 else sp.Sum(summand, *limits)


def _unpadded_boundary_residual() -> sp.Expr:
    """Without zero padding, at the query q = 0 of an image of height H, the head for the tap Δ = -1 only has the
    keys 0..H-1; its target -1 is missing, the nearest key 0 is unique (gap 3), and the limit reads X_0, where the
    zero-padded convolution reads 0."""
    k, i = sp.symbols("k i", integer=True)
    height = sp.Symbol("H", integer=True, positive=True)
    x = sp.IndexedBase("X")
    head = sp.Sum(axis_hard_attention(k, 0) * x[k, i], (k, 0, height - 1)).doit()
    return sp.simplify(head - 0)


def theorem1(integer_centers: bool = True, sign: int = -1, padded: bool = True) -> ProofResult:
    """Theorem 1 (2-D): a multi-head self-attention layer with N_h = K² heads, D_h ≥ rank W_Δ, the quadratic
    encoding with integer centres Δ^(h) ∈ {-⌊K/2⌋..}², α → ∞, on the zero-padded input with the output cropped to
    the image, computes the K x K convolution y_q = Σ_Δ X_{q+Δ} W_Δ.

    Symbolic in the image size, K (tap ranges a..b per axis), D_in, D_out and the query. The steps are the lemmas
    it rests on. False variants: ``integer_centers=False`` (half-integer centres split the weight between two
    keys), ``sign=+1``, and ``padded=False`` (attention over the unpadded image; refuted at a boundary query,
    where the head reads the nearest existing pixel and the convolution reads a zero).
    """
    residual = _conv_residual(2, lambda q, d: (q[0] + _encoding_peak(d[0]), q[1] + _encoding_peak(d[1])),
                              lambda q, d: (q[0] + d[0], q[1] + d[1]), 1 if integer_centers else 2, sign)
    if not padded:
        residual = residual + _unpadded_boundary_residual()
    return ProofResult(
        "Theorem 1 of the paper (2-D): MHSA with K² quadratic heads = K×K convolution",
        "α→∞, integer centres, zero padding then crop, D_h ≥ rank W_Δ: MHSA(X)_q = Σ_Δ X_{q+Δ} W_Δ",
        residual, scope="general",
        variables=("H", "W", "K", "D_in", "D_out", "q"),
        steps=(hard_attention_limit(), softmax_factorization(), lemma1_block_identity(), rank_condition()),
    )


def one_dimensional_case(center_coefficient: int = -2) -> ProofResult:
    """The 1-D case: the encoding r_δ = (δ², δ) (D_p = 2) with v = -α(1, c Δ), c = -2, centres each head on Δ, and
    K heads compute the 1-D convolution y_q = Σ_Δ X_{q+Δ} W_Δ for any length, K and channels.

    The head's centre is derived, not assumed: completing the square gives logits -α(δ - δ*)² + const with
    δ* = -c Δ / 2. ``center_coefficient=2`` puts the head on -Δ: a flipped kernel (false).
    """
    delta, center = sp.symbols("delta Delta", **_int)
    logit = -alpha * (delta**2 + center_coefficient * center * delta)
    peak = sp.solve(sp.diff(logit, delta), delta)[0]
    square = verify_equal("completing the square", "-α(δ² + cΔδ) = -α(δ - δ*)² + α δ*², δ* = -cΔ/2",
                          logit, -alpha * (delta - peak) ** 2 + alpha * peak**2, simplify=sp.expand,
                          scope="general", variables=("α", "δ", "Δ"))
    residual = _conv_residual(1, lambda q, d: (q[0] + peak.subs(center, d[0]),), lambda q, d: (q[0] + d[0],), 1)
    return ProofResult(
        "1-D case (D_p = 2)",
        f"r_δ = (δ², δ), v = -α(1, {center_coefficient}Δ): K heads at α→∞ give y_q = Σ_Δ X_{{q+Δ}} W_Δ",
        residual, scope="general", variables=("N", "K", "D_in", "D_out", "q"),
        steps=(square, hard_attention_limit()),
    )


def dilation_and_stride(dilated_centers: bool = True) -> ProofResult:
    """Dilation d and stride s: heads centred on d ⊙ Δ, with the output read at the queries s ⊙ p, compute the
    dilated, strided convolution y_p = Σ_Δ X_{s p + d Δ} W_Δ. Symbolic in s, d, K, the image and the channels.

    ``dilated_centers=False`` centres the heads on Δ, as if the dilation were ignored (false).
    """
    s = sp.symbols("s1:3", **_pos_int)
    dil = sp.symbols("d1:3", **_pos_int)
    scale = dil if dilated_centers else (1, 1)

    def centers(p, delta):  # the query s⊙p plus the peak of the encoding with centre scale⊙Δ
        return tuple(s[a] * p[a] + _encoding_peak(scale[a] * delta[a]) for a in range(2))

    def reads(p, delta):
        return tuple(s[a] * p[a] + dil[a] * delta[a] for a in range(2))

    return ProofResult(
        "dilation and stride",
        "heads centred on d⊙Δ, output read at s⊙p: y_p = Σ_Δ X_{s⊙p + d⊙Δ} W_Δ",
        _conv_residual(2, centers, reads, 1), scope="general",
        variables=("s", "d", "H", "W", "K", "D_in", "D_out", "p"),
        steps=(hard_attention_limit(),),
    )


def finite_alpha_bound(factor: sp.Expr = 1) -> ProofResult:
    """The finite-α error bound, derived.

    1. With R = Σ_{δ≠Δ} e^{-α‖δ-Δ‖²} the off-target mass is ε = R / (1 + R) (the target key has weight 1 / (1 + R)).
    2. x ↦ x / (1 + x) increases (derivative 1 / (1 + x)² > 0) and R ≤ S(α) = θ(α)^d - 1, so ε ≤ S / (1 + S),
       with equality in the interior of an infinite grid (R = S); S / (1 + S) = 1 - θ^{-d}.
    3. With Σ_k A_k = 1: Σ_k A_k Y_k - Y_t = Σ_k A_k (Y_k - Y_t) over any N keys, whose k = t term is zero, so by
       the triangle inequality ‖MHSA_q - Conv_q‖ ≤ Σ_h ε max_k ‖Y^(h)_k - Y^(h)_t‖.

    ``factor`` scales the claimed bound (``factor=1/2`` is the false variant; step 2's equality case refutes it).
    """
    r, s, theta = sp.symbols("R S theta", positive=True)
    d = sp.Symbol("d", **_pos_int)
    mass = r / (1 + r)
    target_weight = verify_equal("target weight", "1 - 1/(1+R) = R/(1+R)", 1 - 1 / (1 + r), mass,
                                 scope="general", variables=("R",))
    derivative = sp.simplify(sp.diff(mass, r))
    increasing = ProofResult("x/(1+x) increases", "d/dR [R/(1+R)] = 1/(1+R)² > 0",
                             sp.simplify(derivative - 1 / (1 + r) ** 2) + (0 if derivative.is_positive else 1),
                             scope="general", variables=("R ≥ 0",))
    bound = factor * s / (1 + s)
    tight = verify_equal("the bound is attained in the interior (R = S)", "ε(R = S) = bound(S)",
                         mass.subs(r, s), bound, scope="general", variables=("S",))
    closed = verify_equal("closed form", "S/(1+S) = 1 - θ^{-d} for S = θ^d - 1",
                          (s / (1 + s)).subs(s, theta**d - 1), 1 - theta ** (-d), scope="general",
                          variables=("θ", "d"))
    n = sp.Symbol("N", **_pos_int)
    k, t = sp.symbols("k t", **_int)
    a, y = sp.IndexedBase("A"), sp.IndexedBase("Y")
    # Σ_k A_k Y_k - Y_t with Y_t = Y_t Σ_k A_k (the rows of A sum to one)
    lhs = sp.Sum(a[k] * y[k], (k, 1, n)) - y[t] * sp.Sum(a[k], (k, 1, n))
    rhs = sp.Sum(a[k] * (y[k] - y[t]), (k, 1, n))
    error = verify_equal("error as a weighted sum of differences", "Σ_k A_k Y_k - Y_t = Σ_k A_k (Y_k - Y_t)",
                         lhs, rhs, simplify=lambda e: sp.expand(pull_sums(e)), scope="general",
                         variables=("N", "A", "Y", "t"))
    return combine(
        "finite-α bound",
        f"off-target mass ≤ {factor}·S/(1+S); ‖MHSA(X)_q - Conv(X)_q‖ ≤ Σ_h ε max_k ‖(X_k - X_t) W^(h)‖",
        [target_weight, increasing, tight, closed, error], scope="general",
        variables=("α", "d", "N", "grid"),
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
