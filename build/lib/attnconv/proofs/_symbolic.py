"""Small SymPy helpers shared by the proofs: sums over symbolic ranges and hard-attention limits."""

from __future__ import annotations

import itertools

import sympy as sp

__all__ = ["alpha", "pull_sums", "reindex", "sum_simplify", "hard_limits", "minors_above_rank"]

alpha = sp.Symbol("alpha", positive=True)


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


def sum_simplify(expr: sp.Expr) -> sp.Expr:
    """Pull constants out of sums, name bound variables canonically, then cancel the rational function left."""
    return sp.cancel(sp.together(_canonical_dummies(pull_sums(sp.sympify(expr)))))


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
