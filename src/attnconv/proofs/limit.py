"""The α → ∞ limit of a quadratic head, derived from the encoding's own logit (Cordonnier et al. 2020, Lemma 2).

The logit of a head with centre Δ on one axis is v·r_δ with r_δ = (δ², δ) and v = -α(1, -2Δ)
(:func:`encoding_logit`, tied to ``attnconv.positional.quadratic.positional_query`` and
``quadratic_features`` by a test). :func:`axis_limit` derives, in order:

1. the logit has an interior maximum (its second derivative in δ is negative) and it sits at δ* = Δ;
2. the nearest key k* = round(Δ) wins by a gap: every other key's logit is at least α·g below it, with
   g = 1 - 2 abs(Δ - k*) (g = 1 for an integer centre). A half-integer centre has g = 0: two keys tie;
3. the hard-limit lemma: with a gap g > 0, the softmax puts weight → 1 on k* and → 0 elsewhere, for any number M of
   keys (``attnconv.proofs._symbolic.hard_limits``).

With the opposite sign, v = +α(1, -2Δ), step 1 fails: the logit has a minimum where the true one has its maximum,
and the softmax runs to the far ends of the grid. Every inequality is decided by :func:`nonnegative`: after
substituting nonnegative parameters, the numerator and denominator are polynomials with nonnegative coefficients.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import sympy as sp

from ._symbolic import alpha, hard_limits
from .result import ProofResult, combine, verify_equal

__all__ = ["AxisLimit", "axis_limit", "encoding_logit", "gap_lemma", "nonnegative", "decide_conditions"]


def encoding_logit(delta: Sequence[sp.Expr], center: Sequence[sp.Expr], sign: int = -1,
                   coefficient: int = -2) -> sp.Expr:
    """v·r_δ with r_δ = (‖δ‖², δ_1, ..., δ_d) and v = sign·α(1, cΔ_1, ..., cΔ_d); ``sign=-1, c=-2`` is the library's.

    Args:
        delta: the offset δ = j - q (key minus query), one SymPy expression per axis.
        center: the head's centre Δ, one per axis.
        sign: -1 for the encoding of the paper (``positional_query``), +1 for the opposite sign (a false variant).
        coefficient: c, -2 in the paper (+2 puts the peak on -Δ: a false variant).
    """
    if sign not in (-1, 1):
        raise ValueError(f"sign must be -1 or +1, got {sign!r}")
    if len(delta) != len(center):
        raise ValueError(f"delta and center need one entry per axis, got {len(delta)} and {len(center)}")
    features = [sum(d**2 for d in delta), *delta]  # r_δ
    query = [sign * alpha, *(sign * alpha * coefficient * c for c in center)]  # v
    return sp.expand(sum(v * r for v, r in zip(query, features)))


def nonnegative(expr: sp.Expr) -> bool:
    """True when ``expr`` is provably ≥ 0: as a fraction P/Q of polynomials in its symbols (all declared
    nonnegative), P and Q expand to nonnegative coefficients and Q is not zero. A sound, incomplete test."""
    numerator, denominator = sp.fraction(sp.together(sp.expand(expr)))
    for part in (numerator, denominator):
        part = sp.expand(part)
        if any(s.is_nonnegative is not True for s in part.free_symbols):
            return False
        if part.free_symbols:
            coefficients = sp.Poly(part, *sorted(part.free_symbols, key=str)).coeffs()
        else:
            coefficients = [part]
        if any(not (c.is_number and c >= 0) for c in coefficients):
            return False
    return sp.expand(denominator) != 0


def decide_conditions(expr: sp.Expr) -> sp.Expr:
    """Replace each inequality a ≤ b in ``expr`` (e.g. a ``Piecewise`` condition) by True when b - a is provably
    nonnegative (:func:`nonnegative`), and, for integers, by False when a - b - 1 is; so a sum over a symbolic key
    range collapses when its target is in range, and a zero-padded pixel outside the image reads zero."""

    def rule(rel: sp.Rel) -> sp.Basic:
        if isinstance(rel, (sp.LessThan, sp.StrictLessThan)):
            small, large = rel.lhs, rel.rhs
        elif isinstance(rel, (sp.GreaterThan, sp.StrictGreaterThan)):
            small, large = rel.rhs, rel.lhs
        else:
            return rel
        strict = isinstance(rel, (sp.StrictLessThan, sp.StrictGreaterThan))
        if nonnegative(large - small - (1 if strict else 0)):
            return sp.true
        if (large - small).is_integer and nonnegative(small - large - (0 if strict else 1)):
            return sp.false  # integers: small ≥ large + 1 (or ≥ large when strict) refutes it
        return rel

    return expr.replace(lambda e: isinstance(e, sp.Rel), rule)


def gap_lemma() -> ProofResult:
    """For a centre Δ = k* + f with abs(f) < 1/2, every key k* + m (m ≠ 0 an integer) has a logit at least
    α(1 - 2 abs(f)) below the nearest key's, for every such f (general: f = ±u / (2(1 + u)) with u ≥ 0 covers
    -1/2 < f < 1/2).

    From the logit: [ℓ(k*) - ℓ(k* + m)] / α = m² - 2 m f; with m = ±(1 + n), n ≥ 0, minus the gap, is ≥ 0.
    """
    u, n = sp.Symbol("u", nonnegative=True), sp.Symbol("n", integer=True, nonnegative=True)
    delta, base = sp.Symbol("delta", integer=True), sp.Symbol("k_star", integer=True)
    cases = []
    for side in (1, -1):
        f = side * u / (2 * (1 + u))
        logit = encoding_logit([delta], [base + f])
        gap = 1 - 2 * u / (2 * (1 + u))  # 1 - 2|f|
        for step in (1, -1):
            m = step * (1 + n)
            margin = sp.expand((logit.subs(delta, base) - logit.subs(delta, base + m)) / alpha) - gap
            cases.append(sp.Integer(0) if nonnegative(margin) else margin)
    return ProofResult("a unique nearest key wins by a gap",
                       "ℓ(k*) - ℓ(k* + m) ≥ α(1 - 2|f|) for every integer m ≠ 0 and every |f| < 1/2",
                       sp.Matrix(cases), scope="general", variables=("f ∈ (-1/2, 1/2)", "m ≠ 0", "α"))


@dataclass(frozen=True)
class AxisLimit:
    """The α → ∞ limit of one axis of a quadratic head, as derived by :func:`axis_limit`.

    Attributes:
        proof: the derivation (verified only when the limit is one-hot on a unique nearest key).
        nearest: the nearest key's offset from the query (e.g. Δ for the centre Δ + 1/3).
        ties: how many keys share the largest logit (2 for a half-integer centre).
        sign: the encoding's sign (-1: the paper's).
    """

    proof: ProofResult
    nearest: sp.Expr
    ties: int
    sign: int

    def weight(self, key: sp.Expr, query: sp.Expr) -> sp.Expr:
        """The limit weight of ``key`` for the query at ``query``: a Kronecker delta on the nearest key when the
        derivation holds; the split weight of a tie; and for the opposite sign, the limits of bounds that no
        longer hold (0 and ∞), so that nothing built on it can verify."""
        nearest, other = hard_limits(self.sign, self.ties)
        hits = sum(sp.KroneckerDelta(key, query + self.nearest + t) for t in range(self.ties))
        return nearest * hits + other * (1 - hits)


def axis_limit(center: sp.Expr, sign: int = -1, coefficient: int = -2) -> AxisLimit:
    """Derive the α → ∞ limit of a head whose positional query is v = sign·α(1, c·``center``), from its logit.

    Args:
        center: the centre Δ in v: an integer-valued SymPy expression plus a rational constant (e.g. Δ, d·a - p,
            Δ + 1/3 off-grid, Δ + 1/2 for a tie).
        sign: the encoding's sign, -1 for the paper's (+1 is the false variant with no interior maximum).
        coefficient: c, -2 in the paper.
    """
    delta = sp.Symbol("delta", real=True)
    logit = encoding_logit([delta], [center], sign, coefficient)
    curvature = sp.diff(logit, delta, 2)
    concave = ProofResult(
        "the logit has an interior maximum" if curvature.is_negative else "no interior maximum",
        "d²ℓ/dδ² < 0, so ℓ peaks at its critical point" if curvature.is_negative
        else f"d²ℓ/dδ² = {curvature} > 0: the critical point is a minimum, and the weight runs to the grid's ends",
        sp.Integer(0) if curvature.is_negative else curvature, scope="general", variables=("α", "Δ"))
    critical = sp.expand(sp.solve(sp.diff(logit, delta), delta)[0])
    # completing the square about the centre: ℓ(δ) = ℓ(Δ) + sign·α(δ - Δ)², so (with step 1) the peak is at Δ
    peak = verify_equal("completing the square about the centre",
                        f"ℓ(δ) = ℓ(Δ) {'-' if sign < 0 else '+'} α(δ - Δ)², Δ = {center}",
                        logit, logit.subs(delta, center) + sign * alpha * (delta - center) ** 2,
                        simplify=sp.expand, scope="general", variables=("α", "Δ", "δ"))
    offset = sum((t for t in sp.Add.make_args(critical) if t.is_Rational), sp.Integer(0))
    base = critical - offset
    rounded = sp.floor(offset + sp.Rational(1, 2))
    frac = offset - rounded  # in [-1/2, 1/2)
    gap = 1 - 2 * abs(frac)
    nearest = base + rounded
    n = sp.Symbol("n", integer=True, nonnegative=True)
    key = sp.Symbol("delta_k", integer=True)
    integer_logit = encoding_logit([key], [critical])  # the paper's sign about the peak: the gap is a fact about δ*
    margins = []
    for step in (1, -1):
        m = step * (1 + n)
        margin = sp.expand((integer_logit.subs(key, nearest) - integer_logit.subs(key, nearest + m)) / alpha) - gap
        margins.append(sp.Integer(0) if nonnegative(margin) else margin)
    ties = 1
    if gap > 0:
        separated = ProofResult("the nearest key wins by a gap",
                                f"every other key's logit is ≥ α·g below the nearest key's (offset {nearest}), "
                                f"g = {gap}", sp.Matrix(margins), scope="general", variables=("Δ", "m ≠ 0", "α"))
    else:
        ties = 2  # frac = -1/2: the keys at base + rounded - 1 and base + rounded are equally near
        nearest = base + rounded - 1
        difference = sp.expand(integer_logit.subs(key, nearest) - integer_logit.subs(key, nearest + 1))
        separated = ProofResult(f"tie: the keys at offsets {nearest} and {nearest + 1} have equal logits",
                                f"g = {gap}: no unique nearest key (logit difference {difference}); the limit "
                                "splits the weight", sp.Integer(1),  # residual 1: the premise g > 0 fails
                                scope="general", variables=("Δ", "α"))
    limit_nearest, limit_other = hard_limits(-1, ties)
    squeeze = ProofResult("hard-limit lemma", "a gap g > 0 gives weight → 1 on the nearest key and → 0 elsewhere",
                          sp.Matrix([limit_nearest - 1, limit_other]), scope="general",
                          variables=("M (keys)", "g > 0", "α"))
    proof = combine(f"α → ∞ limit of the head with centre {str(center).replace('Delta', 'Δ')}",
                    "derived from the logit v·r_δ: interior maximum, unique nearest key with a gap, squeeze",
                    [concave, peak, separated, squeeze], scope="general", variables=("Δ", "α", "M"))
    return AxisLimit(proof, nearest, ties, sign)
