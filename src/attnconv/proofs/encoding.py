"""SymPy proofs about one quadratic head (Cordonnier et al. 2020, Lemma 2): the quadratic identity, the shift
invariance of the softmax, the α → ∞ limit derived from the encoding's logit, and the factorisation of a 2-D
softmax over the two axes. Re-exported by :mod:`attnconv.proofs.image`.
"""

from __future__ import annotations

import math
import numbers

import sympy as sp

from ._symbolic import alpha, sum_simplify
from .limit import axis_limit, gap_lemma
from .result import ProofResult, combine, verify_equal

__all__ = ["quadratic_identity", "shift_invariance", "gaussian_kernel_regression", "hard_attention_limit",
           "softmax_factorization", "centre_offset"]

_int = dict(integer=True)
_pos_int = dict(integer=True, positive=True)


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


def gaussian_kernel_regression(cross_coefficient: int = 2, bandwidth_factor: int = 2) -> ProofResult:
    """A quadratic head is Nadaraya-Watson kernel regression over positions, with a Gaussian kernel centred at Δ.

    Two steps, general in the dimension d, the number N of keys, α, every δ and Δ:

    1. Expand the square: -α‖δ - Δ‖² = -α‖δ‖² + 2αΔ·δ - α‖Δ‖², a sum over d axes with d a symbol.
    2. The head's weights, the softmax over N keys of the logit the encoding computes, -α‖δ_k‖² + 2αΔ·δ_k, equal
       the Nadaraya-Watson weights K(δ_j - Δ) / Σ_k K(δ_k - Δ) of the Gaussian kernel
       K(u) = exp(-‖u‖² / (2σ²)) with bandwidth σ = 1/√(2α): the term -α‖Δ‖² is the same for every key and
       cancels. ‖δ_k‖² and Δ·δ_k are symbols per key, so N stays symbolic.

    Args:
        cross_coefficient: the coefficient c of αΔ·δ in the expansion and in the logit; 2 is right, -2 (a sign
            error: a kernel centred at -Δ) and 1 are false variants.
        bandwidth_factor: f in σ = 1/√(fα); 2 is right, 1 (the missing factor 2) is a false variant.
    """
    c = cross_coefficient
    d = sp.Symbol("d", **_pos_int)
    a = sp.Symbol("a", **_int)
    delta, center = sp.IndexedBase("delta", real=True), sp.IndexedBase("Delta", real=True)
    expansion = verify_equal(
        "expand the square",
        f"-α‖δ-Δ‖² = -α‖δ‖² + {c}αΔ·δ - α‖Δ‖², in d dimensions",
        -alpha * sp.Sum((delta[a] - center[a]) ** 2, (a, 1, d)),
        -alpha * sp.Sum(delta[a] ** 2, (a, 1, d)) + c * alpha * sp.Sum(center[a] * delta[a], (a, 1, d))
        - alpha * sp.Sum(center[a] ** 2, (a, 1, d)),
        simplify=lambda e: sp.simplify(sp.expand(e.doit())), scope="general", variables=("d", "α", "δ", "Δ"))

    n = sp.Symbol("N", **_pos_int)
    j, k = sp.symbols("j k", **_int)
    square, dot = sp.IndexedBase("s", real=True), sp.IndexedBase("p", real=True)  # ‖δ_k‖², Δ·δ_k
    norm_center = sp.Symbol("D", nonnegative=True)  # ‖Δ‖²
    sigma = 1 / sp.sqrt(bandwidth_factor * alpha)

    def logit(m):  # v·r_δ of key m, as the encoding computes it: no ‖Δ‖² term
        return -alpha * square[m] + c * alpha * dot[m]

    def kernel(m):  # exp(-‖δ_m - Δ‖² / (2σ²)), the square expanded as in step 1
        return sp.exp(-(square[m] - 2 * dot[m] + norm_center) / (2 * sigma ** 2))

    weights = verify_equal(
        "softmax of the logit = Nadaraya-Watson weights",
        f"softmax_j(-α‖δ_j‖² + {c}αΔ·δ_j) = K(δ_j-Δ)/Σ_k K(δ_k-Δ), K(u) = exp(-‖u‖²/(2σ²)), "
        f"σ = 1/√({bandwidth_factor}α), for any number N of keys",
        sp.exp(logit(j)) / sp.Sum(sp.exp(logit(k)), (k, 1, n)),
        kernel(j) / sp.Sum(kernel(k), (k, 1, n)),
        simplify=sum_simplify, scope="general", variables=("N", "α", "‖δ_k‖²", "Δ·δ_k", "‖Δ‖²"))
    return combine(
        "a quadratic head is Gaussian kernel regression over positions",
        f"A_{{q,j}} = K(δ_j-Δ)/Σ_k K(δ_k-Δ) with K(u) = exp(-‖u‖²/(2σ²)), σ = 1/√({bandwidth_factor}α), "
        f"cross term {c}αΔ·δ",
        (expansion, weights), scope="general", variables=("d", "N", "α", "δ", "Δ"))


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


def hard_attention_limit(sign: int = -1, offset: sp.Expr = 0, center: sp.Expr | None = None) -> ProofResult:
    """Hard mode is the α → ∞ limit of the quadratic encoding, derived from the encoding's logit.

    The logit of a head centred on Δ + ``offset`` (Δ an integer symbol) is v·r_δ = -α(δ² - 2(Δ + f)δ), the
    library's ``positional_query`` dotted with ``quadratic_features``. :func:`~attnconv.proofs.limit.axis_limit`
    derives that it has an interior maximum, decides symbolically whether the centre leaves a unique nearest key
    (its fractional part f must satisfy abs(f) < 1/2), proves that this key wins by a gap on each side, and takes
    the squeeze: weight → 1 on the nearest key, → 0 elsewhere, for any number M of keys. A 2-D head is the
    product of two such axes (:func:`softmax_factorization`).

    Args:
        sign: -1 for the paper's encoding; +1 (no interior maximum) is a false variant.
        offset: the centre's offset from Δ: 1/3 or 2/3 (true), 1/2 (a tie: false), a real symbol f with no bound
            (not decided, so not verified: the step names abs(f) < 1/2, necessary and sufficient for the key Δ), or
            (u - v)/(2(1 + u + v)) with u, v ≥ 0 (every f in (-1/2, 1/2): true, and general in f). A float is read
            as exactly its binary value (``centre_offset``).
        center: the whole centre instead of Δ + ``offset``, e.g. Δ/2 (a half-integer at Δ = 1: false),
            Δ(Δ+1)/2 (always an integer: true) or Δ/2 + 1/4 (never a half-integer: true).
    """
    delta = sp.Symbol("Delta", integer=True)
    centre = centre_offset(center) if center is not None else delta + centre_offset(offset)
    limit = axis_limit(centre, sign)
    extra = tuple(sorted(str(s) for s in centre.free_symbols - {delta}))
    return ProofResult(
        "hard attention is the α→∞ limit of the quadratic encoding",
        f"lim_{{α→∞}} softmax_δ(v·r_δ) = 1[δ = {limit.nearest}] for the centre {centre}, derived from the logit",
        sp.Integer(0), scope="general", variables=("Δ", *extra, "α", "M (number of keys)"),
        steps=(quadratic_identity(), shift_invariance(), *_squeeze_steps(-1), gap_lemma(), limit.proof),
    )


def centre_offset(offset: object) -> sp.Expr:
    """A head centre's offset from its tap: a real number (1/3) or a real SymPy expression (f, or
    (u - v)/(2(1 + u + v)) with u, v ≥ 0 for every f in (-1/2, 1/2)).

    A Python float is read as exactly its binary value (``sympy.Rational(x)``), the number the library computes
    with: 0.49999999999999994 is 9007199254740991/18014398509481984, just below 1/2, never 1/2 itself. A float that
    is not finite is refused.
    """
    if isinstance(offset, float) or (isinstance(offset, numbers.Real) and not isinstance(offset, (int, sp.Basic))):
        try:
            number = float(offset)
        except (TypeError, ValueError, OverflowError) as error:
            raise TypeError(f"offset must be a real number or a real SymPy expression, got {offset!r}") from error
        if not math.isfinite(number):
            raise TypeError(f"offset must be a finite real number, got {offset!r}")
        return sp.Rational(number)
    try:
        value = sp.Integer(offset) if isinstance(offset, int) else sp.sympify(offset)
    except (sp.SympifyError, TypeError) as error:
        raise TypeError(f"offset must be a real number or a real SymPy expression, got {offset!r}") from error
    if not isinstance(value, sp.Expr) or value.is_real is False or value.has(sp.I):
        raise TypeError(f"offset must be a real number or a real SymPy expression, got {offset!r}")
    if value.has(sp.Float):  # a SymPy Float: its exact binary value, as for a Python float
        value = value.xreplace({f: sp.Rational(f) for f in value.atoms(sp.Float)})
    if value.has(sp.oo, -sp.oo, sp.zoo, sp.nan):
        raise TypeError(f"offset must be a finite real number, got {offset!r}")
    return value


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
