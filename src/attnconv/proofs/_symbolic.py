"""Small SymPy helpers shared by the proofs: sums over symbolic ranges and hard-attention limits."""

from __future__ import annotations

import itertools

import sympy as sp

__all__ = ["alpha", "exact", "minmax_normal", "pull_sums", "reindex", "sum_simplify", "hard_limits", "minors_above_rank"]

alpha = sp.Symbol("alpha", positive=True)


def exact(value: object) -> sp.Expr:
    """``value`` as a SymPy expression with every float read as exactly its binary value (``sympy.Rational``):
    0.49999999999999994 stays just below 1/2, 0.9999999999999999 just below 1. Infinities stay infinite."""
    if isinstance(value, float):
        return sp.Rational(value) if value == value and abs(value) != float("inf") else sp.sympify(value)
    expr = sp.sympify(value)
    if isinstance(expr, sp.Basic) and expr.has(sp.Float):
        expr = expr.xreplace({f: sp.Rational(f) for f in expr.atoms(sp.Float) if f.is_finite})
    return expr


def pull_sums(expr: sp.Expr) -> sp.Expr:
    """Rewrite every ``Sum`` so that factors free of its summation variables stand outside it.

    Exponentials of sums are split first (e^{x_k + c} = e^{x_k} e^c). A multiple sum whose summand is a product
    of factors that each depend on one summation variable, over limits free of the other variables, becomes the
    product of single sums (Fubini for finite sums): Σ_i Σ_j f(i) g(j) = (Σ_i f(i)) (Σ_j g(j)).
    """

    def rule(s: sp.Sum) -> sp.Expr:
        body = sp.expand(s.function, power_exp=True, mul=True, multinomial=False, basic=False)
        if isinstance(body, sp.Add):  # Σ (a + b) = Σ a + Σ b
            return sp.Add(*(rule(sp.Sum(term, *s.limits)) for term in body.args))
        variables = {lim[0] for lim in s.limits}
        inside = [f for f in sp.Mul.make_args(body) if f.free_symbols & variables]
        outside = [f for f in sp.Mul.make_args(body) if not f.free_symbols & variables]
        independent_limits = all(not (set().union(*(sp.sympify(b).free_symbols for b in lim[1:])) & variables)
                                 for lim in s.limits)
        if len(s.limits) > 1 and independent_limits:
            groups = [[f for f in inside if lim[0] in f.free_symbols] for lim in s.limits]
            if all(sum(f in g for g in groups) == 1 for f in inside):
                return sp.Mul(*outside) * sp.Mul(*(sp.Sum(sp.Mul(*g), lim) for g, lim in zip(groups, s.limits)))
        return sp.Mul(*outside) * sp.Sum(sp.Mul(*inside), *s.limits)

    return expr.replace(lambda e: isinstance(e, sp.Sum), rule)


def _canonical_dummies(expr: sp.Expr) -> sp.Expr:
    """Rename the variable of every innermost single sum to one name, so Σ_δ f(δ) and Σ_ε f(ε) compare equal."""
    dummy = sp.Symbol("n_", integer=True)

    def rule(s: sp.Sum) -> sp.Expr:
        if len(s.limits) != 1 or s.function.has(sp.Sum):
            return s
        (v, lo, hi), = s.limits
        return sp.Sum(s.function.subs(v, dummy), (dummy, lo, hi))

    return expr.replace(lambda e: isinstance(e, sp.Sum), rule)


def minmax_normal(expr: sp.Expr) -> sp.Expr:
    """Push sums and constant factors into Max and Min: Max(a, b) + c = Max(a + c, b + c), -Max(a, b) = Min(-a, -b),
    2 Max(a, b) = Max(2a, 2b). Equivalent written forms of a range bound then read the same: max(0, i - k) - i and
    max(-k, -i) are both Max(-i, -k)."""

    def push(e: sp.Expr) -> sp.Expr:
        if isinstance(e, sp.Add):
            inner = next((a for a in e.args if isinstance(a, (sp.Max, sp.Min))), None)
            if inner is not None:
                rest = e - inner
                return type(inner)(*(sp.expand(a + rest) for a in inner.args))
        if isinstance(e, sp.Mul):
            inner = next((a for a in e.args if isinstance(a, (sp.Max, sp.Min))), None)
            factor = e / inner if inner is not None else None
            if inner is not None and factor.is_number and factor.is_extended_real and factor != 0:
                kind = type(inner) if factor > 0 else (sp.Min if isinstance(inner, sp.Max) else sp.Max)
                return kind(*(sp.expand(factor * a) for a in inner.args))
        return e

    expr = sp.sympify(expr)
    for _ in range(8):
        pushed = expr.replace(lambda e: isinstance(e, (sp.Add, sp.Mul)) and e.has(sp.Max, sp.Min), push)
        if pushed == expr:
            break
        expr = pushed
    return expr


def _from_lower_bound(expr: sp.Expr, reflect: bool) -> sp.Expr:
    """Write every single sum from 0: Σ_{n=a}^{b} f(n) = Σ_{m=0}^{b-a} f(a + m) (bounds in :func:`minmax_normal`
    form), and Σ_{n=-∞}^{b} f(n) = Σ_{m=0}^{∞} f(b - m). With ``reflect``, a finite Σ_{m=0}^{M} g(m) is also written
    Σ_{m=0}^{M} g(M - m) when that form comes first in SymPy's order: so Σ_δ f(δ) and Σ_δ f(-δ) over a symmetric
    range, or a sum and its re-indexing by t = N + 1 - h, read the same."""
    dummy = sp.Symbol("m_", integer=True)

    def rule(s: sp.Sum) -> sp.Expr:
        if len(s.limits) != 1:
            return s
        (v, lo, hi), = s.limits
        lo, hi = minmax_normal(lo), minmax_normal(hi)
        if lo is sp.S.NegativeInfinity and hi is sp.S.Infinity:
            return s
        if lo is sp.S.NegativeInfinity:
            return sp.Sum(s.function.subs(v, hi - dummy), (dummy, 0, sp.oo))
        body = sp.expand(s.function.subs(v, lo + dummy))
        top = minmax_normal(sp.expand(hi - lo))
        if reflect and top is not sp.S.Infinity:  # m → (hi - lo) - m, before the bounds' Max/Min are merged
            mirrored = minmax_normal(sp.expand(s.function.subs(v, hi - dummy)))
            body = min(minmax_normal(body), mirrored, key=sp.default_sort_key)
        return sp.Sum(minmax_normal(body), (dummy, 0, top))

    return expr.replace(lambda e: isinstance(e, sp.Sum), rule)


def sum_simplify(expr: sp.Expr) -> sp.Expr:
    """Pull constants out of sums, name bound variables canonically, then cancel the rational function left.

    When that leaves a difference, the sums are also brought to one written form (:func:`_from_lower_bound`):
    each indexed from 0 with its range bounds in Max/Min normal form, then also reflected where that reads first.
    Two sums that differ by a shift of the index (a table read at column δ + k instead of δ), a reflection
    (δ → -δ) or an equivalent Max/Min form of a range then compare equal. The first form that is zero is returned,
    else the plain one."""
    expr = sp.sympify(expr)
    plain = sp.cancel(sp.together(_canonical_dummies(pull_sums(expr))))
    if plain == 0:
        return plain
    for reflect in (False, True):
        try:
            written = _from_lower_bound(pull_sums(expr), reflect)
            candidate = sp.cancel(sp.together(_canonical_dummies(pull_sums(written))))
        except (TypeError, ValueError, NotImplementedError, RecursionError, sp.PolynomialError):
            continue
        if candidate == 0:
            return candidate
    return plain


def reindex(expr: sp.Expr, key: sp.Symbol, query: sp.Expr, offset: sp.Symbol) -> sp.Expr:
    """Substitute key = query + offset in every sum over ``key``: Σ_{key=lo}^{hi} f(key) = Σ_{δ=lo-q}^{hi-q} f(q+δ)."""

    def rule(s: sp.Sum) -> sp.Expr:
        if len(s.limits) != 1 or s.limits[0][0] != key:
            return s
        (v, lo, hi), = s.limits
        return sp.Sum(s.function.subs(v, query + offset), (offset, lo - query, hi - query))

    return expr.replace(lambda e: isinstance(e, sp.Sum), rule)


def hard_limits(sign: int = -1, ties: int = 1) -> tuple[sp.Expr, sp.Expr]:
    """The α → ∞ limits that pin down a softmax over ``M`` keys with logits ``sign · α u_k``.

    Let u_min be the smallest u_k, reached by ``ties`` keys, and let every other key have u_k ≥ u_min + g with a
    gap g > 0. Dividing numerator and denominator by e^{-α u_min} gives the squeeze bounds

        1 / (m + (M - m) e^{-α g}) ≤ weight of a nearest key ≤ 1 / m,
        0 ≤ weight of any other key ≤ e^{-α g} / m,

    for sign = -1 (m = ``ties``). Returns the limits (nearest, other) of the outer bounds, computed by SymPy with M
    and g symbolic. For sign = +1 the same expressions are no longer bounds, and their limits say so (0 and ∞).
    """
    keys, gap = sp.symbols("M g", positive=True)
    nearest_lower = 1 / (ties + (keys - ties) * sp.exp(sign * alpha * gap))
    other_upper = sp.exp(sign * alpha * gap) / ties
    return sp.limit(nearest_lower, alpha, sp.oo), sp.limit(other_upper, alpha, sp.oo)


def minors_above_rank(matrix: sp.Matrix, rank: int) -> sp.Matrix:
    """Every (rank + 1) x (rank + 1) minor of ``matrix``, as a column (a single 0 when there is none).

    They all vanish identically exactly when ``matrix`` has rank ≤ ``rank`` for every value of its symbols.
    """
    rows, cols = matrix.shape
    minors = [matrix.extract(list(r), list(c)).det()
              for r in itertools.combinations(range(rows), rank + 1)
              for c in itertools.combinations(range(cols), rank + 1)]
    return sp.Matrix(minors) if minors else sp.zeros(1, 1)
