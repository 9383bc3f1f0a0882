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

import itertools
from dataclasses import dataclass
from typing import Sequence

import sympy as sp

from ._symbolic import alpha, exact, hard_limits
from .result import ProofResult, combine, verify_equal

__all__ = ["AxisLimit", "axis_limit", "encoding_logit", "gap_lemma", "nonnegative", "positive", "decide_conditions",
           "split_centre"]


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


_SYMPY_ERRORS = (sp.PolynomialError, sp.polys.polyerrors.GeneratorsNeeded, sp.polys.polyerrors.CoercionFailed,
                 sp.SympifyError, TypeError, ValueError, ZeroDivisionError, RecursionError, NotImplementedError,
                 AttributeError)


def _opaque_parts(expr: sp.Expr) -> list[sp.Expr]:
    """The outermost subexpressions of ``expr`` that are not built from symbols and numbers by +, · and integer
    powers (Max, Min, Abs, exp, sqrt, ...): what keeps ``expr`` from being a rational function of its symbols."""
    found: list[sp.Expr] = []

    def walk(e: sp.Expr) -> None:
        if e.is_Symbol or e.is_Number or not e.free_symbols:
            return
        if isinstance(e, (sp.Add, sp.Mul)):
            for arg in e.args:
                walk(arg)
        elif isinstance(e, sp.Pow) and e.exp.is_Integer:
            walk(e.base)
        elif e not in found:
            found.append(e)

    walk(expr)
    return found


def _replacements(part: sp.Expr) -> list[sp.Expr]:
    """What is known of one opaque part, each an expression that equals it at some value of new symbols ≥ 0
    (a lower bound a + s or an upper bound b - s):

    - Max(a, b, ...) = a + s (or b + s, ...), Min(a, b, ...) = a - s;
    - sin x and cos x lie in [-1, 1]; floor(x) in (x - 1, x], ceiling(x) in [x, x + 1); Mod(a, q) in [0, q) for a
      positive number q (in [0, q - 1] for integers); e^x ≤ 1 where x ≤ 0 is proved;
    - a part SymPy knows to be nonnegative (e^x, abs(x), sqrt(x)) is a new symbol t ≥ 0."""
    def s():
        return sp.Dummy("s", nonnegative=True)

    options: list[sp.Expr] = []
    if isinstance(part, sp.Max):
        options += [arg + s() for arg in part.args]
    elif isinstance(part, sp.Min):
        options += [arg - s() for arg in part.args]
    elif isinstance(part, (sp.sin, sp.cos)) and part.args[0].is_real:
        options += [-1 + s(), 1 - s()]
    elif isinstance(part, sp.floor) and part.args[0].is_real:
        options += [part.args[0] - 1 + s(), part.args[0] - s()]
    elif isinstance(part, sp.ceiling) and part.args[0].is_real:
        options += [part.args[0] + s(), part.args[0] + 1 - s()]
    elif isinstance(part, sp.Mod) and part.args[1].is_number and part.args[1].is_positive and part.args[0].is_real:
        top = part.args[1] - 1 if part.args[0].is_integer and part.args[1].is_integer else part.args[1]
        options += [s(), top - s()]
    elif isinstance(part, sp.exp) and part.args[0].is_real and _decide_sign(-part.args[0], strict=False):
        options.append(1 - s())
    if part.is_nonnegative is True:
        options.append(sp.Dummy("t", nonnegative=True))
    return options


def _cases(part: sp.Expr) -> list[sp.Expr] | None:
    """Finitely many expressions of which one opaque part is always one (a case split), or None.

    Max and Min are one of their arguments, abs(x) is x or -x, a Piecewise that always has a value is one of its
    pieces, sign(x) is -1, 0 or 1, Heaviside(x) is 0, its value at 0 or 1, a Kronecker delta 0 or 1, and Mod(a, q)
    of an integer a and a positive integer q ≤ 12 is one of 0 .. q - 1."""
    if isinstance(part, (sp.Max, sp.Min)):
        return list(part.args)
    if isinstance(part, sp.Abs) and part.args[0].is_real:
        return [part.args[0], -part.args[0]]
    if isinstance(part, sp.Piecewise) and part.args[-1].cond == sp.true:
        return [piece.expr for piece in part.args]
    if isinstance(part, sp.sign) and part.args[0].is_real:
        return [sp.Integer(-1), sp.Integer(0), sp.Integer(1)]
    if isinstance(part, sp.Heaviside) and part.args[0].is_real:
        return [sp.Integer(0), sp.Integer(1)] + ([part.args[1]] if len(part.args) > 1 else [sp.Rational(1, 2)])
    if isinstance(part, sp.KroneckerDelta):
        return [sp.Integer(0), sp.Integer(1)]
    if isinstance(part, sp.Mod) and part.args[0].is_integer and part.args[1].is_Integer and 0 < part.args[1] <= 12:
        return [sp.Integer(r) for r in range(int(part.args[1]))]
    return None


def _decide_forms(expr: sp.Expr, strict: bool, budget: list[int]) -> bool:
    """``expr`` ≥ 0 (> 0 when ``strict``) by the polynomial test, after replacing its opaque parts one at a time.

    For the first opaque part p, either one replacement of :func:`_replacements` proves it (each is p itself at
    some value of its new symbol), or every case of :func:`_cases` does (p = Max(a, b, ...) is a or b, a Piecewise
    one of its pieces, ...). Both are sound; ``budget`` bounds the search."""
    if budget[0] <= 0:
        return False
    budget[0] -= 1
    parts = _opaque_parts(expr)
    if not parts:
        try:
            return _polynomial_sign(expr, strict)
        except _SYMPY_ERRORS:
            return False
    part = parts[0]
    for option in _replacements(part):
        if _decide_forms(expr.xreplace({part: option}), strict, budget):
            return True
    cases = _cases(part)
    if cases is not None:
        return all(_decide_forms(expr.xreplace({part: case}), strict, budget) for case in cases)
    return False


def _polynomial_sign(form: sp.Expr, strict: bool) -> bool:
    """``form`` = P/Q with P, Q polynomials in nonnegative symbols with nonnegative coefficients (and, when
    ``strict``, positive constant terms), Q not zero."""
    numerator, denominator = sp.fraction(sp.together(sp.expand(form)))
    for part in (sp.expand(numerator), sp.expand(denominator)):
        if any(s.is_nonnegative is not True for s in part.free_symbols):
            return False
        symbols = sorted(part.free_symbols, key=str)
        poly = sp.Poly(part, *symbols) if symbols else None
        coefficients = poly.coeffs() if poly is not None else [part]
        if any(not (c.is_number and c.is_extended_real and bool(c >= 0)) for c in coefficients):
            return False
        if strict:
            constant = poly.coeff_monomial(1) if poly is not None else part
            if not (constant.is_number and bool(constant > 0)):
                return False
    return sp.expand(denominator) != 0


def _decide_sign(expr: sp.Expr, strict: bool) -> bool:
    try:
        expr = sp.sympify(expr)
        bare = expr.xreplace({s: sp.Integer(0) for s in expr.atoms(sp.Sum)}) if isinstance(expr, sp.Expr) else expr
        if not isinstance(expr, sp.Expr) or bare.has(sp.nan, sp.zoo, sp.oo, -sp.oo, sp.I):
            return False  # not a finite real expression (a sum's infinite limit aside): nothing to prove
        return _decide_forms(sp.expand(expr), strict, [256])
    except _SYMPY_ERRORS:
        return False


def nonnegative(expr: sp.Expr) -> bool:
    """True when ``expr`` is provably ≥ 0: as a fraction P/Q of polynomials in its symbols (all declared
    nonnegative), P and Q expand to nonnegative coefficients and Q is not zero. A sound, incomplete test.

    A Max, Min or other non-polynomial part is first replaced by what is known of it (``_decide_forms``:
    Max(a, b) = a + s with s ≥ 0, or each of its cases a and b; sin x ≤ 1; each piece of a Piecewise; a
    nonnegative e^x by a symbol t ≥ 0); an expression SymPy cannot handle, or one that is not a finite real
    expression (NaN, an infinity), is "not proved" (False), never an error."""
    return _decide_sign(expr, strict=False)


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
        if not (isinstance(small, sp.Expr) and isinstance(large, sp.Expr)):
            return rel
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
        ties: how many keys share the largest logit (2 for a half-integer centre; 0 when no single nearest key
            is established for every value of the symbols: not decided, or a tie at some value).
        sign: the encoding's sign (-1: the paper's).
    """

    proof: ProofResult
    nearest: sp.Expr
    ties: int
    sign: int

    def weight(self, key: sp.Expr, query: sp.Expr) -> sp.Expr:
        """The limit weight of ``key`` for the query at ``query``: a Kronecker delta on the nearest key when the
        derivation holds; the split weight of a tie; and for the opposite sign, the limits of bounds that no
        longer hold (0 and ∞), so that nothing built on it can verify. When the unique nearest key is not decided,
        the Kronecker delta on the candidate key: it holds under the condition the undecided step names, and a
        proof that uses it carries that step, so it is "not decided", never verified. When a tie is shown at
        some value, an unknown weight, so that nothing built on it verifies."""
        if self.ties == 0 and self.proof.decided:  # refuted (a tie at some value): nothing built on it verifies
            return sp.Function("A_undecided")(key - query)
        if self.ties == 0:  # not decided: the one-hot weight the limit has if the named condition holds, so that a
            # proof built on it is verified only up to this undecided step, and says "not decided", not "false"
            nearest, _ = hard_limits(self.sign, 1)
            return nearest * sp.KroneckerDelta(key, query + self.nearest)
        nearest, other = hard_limits(self.sign, self.ties)
        hits = sum(sp.KroneckerDelta(key, query + self.nearest + t) for t in range(self.ties))
        return nearest * hits + other * (1 - hits)


def positive(expr: sp.Expr) -> bool:
    """True when ``expr`` is provably > 0: as a fraction P/Q of polynomials in nonnegative symbols, P and Q have
    nonnegative coefficients and positive constant terms. A sound, incomplete test (like :func:`nonnegative`, with
    the same treatment of Max, Min and other non-polynomial parts)."""
    return _decide_sign(expr, strict=True)


def _ask_integer(expr: sp.Expr) -> bool:
    """SymPy's ``ask(Q.integer(expr))`` under the assumptions of its symbols (integer, real), factored first."""
    facts = [sp.Q.integer(x) for x in expr.free_symbols if x.is_integer] + \
            [sp.Q.real(x) for x in expr.free_symbols if x.is_real and not x.is_integer]
    try:
        return any(sp.ask(sp.Q.integer(form), sp.And(*facts)) is True for form in (expr, sp.factor(expr)))
    except _SYMPY_ERRORS:
        return False


def split_centre(critical: sp.Expr) -> tuple[sp.Expr, sp.Expr]:
    """Split a centre into an integer part and the rest: k + f with every term of k provably an integer.

    A rational constant is rounded into k, so that a rational f lies in [-1/2, 1/2). Terms whose integrality
    SymPy cannot decide (Δ/2 for an integer Δ, a real symbol f) stay in f, where the uniqueness test sees them.
    """
    terms = sp.Add.make_args(sp.expand(critical))
    base = sum((t for t in terms if t.is_integer is True), sp.Integer(0))
    frac = sp.expand(critical - base)
    constant = sum((t for t in sp.Add.make_args(frac) if t.is_Rational), sp.Integer(0))
    rounded = sp.floor(constant + sp.Rational(1, 2))
    return base + rounded, frac - rounded


@dataclass(frozen=True)
class Residues:
    """The values mod 1 of a polynomial p with rational coefficients in integer symbols, for every value of them.

    Attributes:
        values: each value of p mod 1 in [0, 1), with a point (symbol → integer) where p takes it.
        period: q, the common denominator of p's coefficients: p(x + q e_i) - p(x) has integer coefficients, so
            p mod 1 repeats with period q in each symbol, and the values on {0..q-1}^m are all of them. For a linear
            p with a larger box, the number of values, 1/g (see ``integer_residues``).
        proof: the period, checked: the coefficients of every p(x + q e_i) - p(x) are integers (or, for a linear
            p, the Bézout identity that gives its values).
    """

    values: dict
    period: int
    proof: ProofResult

    def listing(self) -> str:
        """The values in words: all of them, or the first few and how many there are."""
        shown = [str(v) for v in self.values]
        return f"[{', '.join(shown)}]" if len(shown) <= 8 else f"[{', '.join(shown[:4])}, ...] ({len(shown)} values)"


def _parity_form(expr: sp.Expr) -> tuple[sp.Expr, dict]:
    """``expr`` with each even symbol written 2e and each odd one 2o + 1 (e, o new integer symbols), so that its
    values are taken over the integers its symbols may be, and the map from the new symbols back to the old."""
    back: dict = {}
    for x in sorted(expr.free_symbols, key=str):
        if x.is_integer and (x.is_even or x.is_odd):
            sign = ({"positive": True} if x.is_even and x.is_positive else
                    {"nonnegative": True} if x.is_nonnegative else {"negative": True} if x.is_negative else
                    {"nonpositive": True} if x.is_nonpositive else {})  # what 2y or 2y + 1 allows of y
            y = sp.Symbol(f"{x.name}_{'e' if x.is_even else 'o'}", integer=True, **sign)
            form = 2 * y if x.is_even else 2 * y + 1
            expr = expr.xreplace({x: form})
            back[y] = (x, form)
    return sp.expand(expr), back


def _admissible(symbol: sp.Symbol, value: int, period: int) -> int:
    """``value`` moved by a multiple of ``period`` to one the integer ``symbol`` may take (≥ 1 when it is positive,
    ≥ 0 when nonnegative, ≤ -1 when negative, ≤ 0 when nonpositive): the same value of p mod 1."""
    value = int(value) % period
    if symbol.is_positive and value == 0:
        return period
    if symbol.is_negative:
        return value - period
    if symbol.is_nonpositive and value > 0:
        return value - period
    return value


def _linear_residues(poly: sp.Poly, symbols: list, count_limit: int) -> tuple[dict, int, ProofResult] | None:
    """The values mod 1 of a linear p = c + Σ a_i x_i over integer x: exactly c + r·g mod 1, r = 0 .. 1/g - 1, with
    g = G/L, L the common denominator of the a_i and G = gcd(L a_1, ..., L a_m, L). Every L a_i and L is a
    multiple of G (so every value is c + a multiple of g), and Bézout's Σ u_i (L a_i) + u L = G gives the point
    x = r·u where p is c + r·g (so every such value is taken)."""
    slopes = [poly.coeff_monomial(x) for x in symbols]
    constant = poly.coeff_monomial(1)
    common = int(sp.ilcm(*(sp.Rational(a).q for a in slopes), 1))
    numbers = [int(a * common) for a in slopes] + [common]
    gcd, coefficients = numbers[0], [1]
    for number in numbers[1:]:
        u, v, g = sp.gcdex(gcd, number)
        gcd, coefficients = int(g), [int(u) * c for c in coefficients] + [int(v)]
    if gcd < 0:
        gcd, coefficients = -gcd, [-c for c in coefficients]
    count = common // gcd
    if count > count_limit:
        return None
    bezout = sum(c * n for c, n in zip(coefficients, numbers)) - gcd
    proof = ProofResult(f"{poly.as_expr()} mod 1 takes the values {constant} + r/{count}",
                        f"every one of {numbers} is a multiple of {gcd}, and Bézout's {coefficients}·{numbers} = {gcd}: "
                        f"Σ a_i x_i mod 1 is exactly the multiples of {gcd}/{common} = 1/{count}",
                        sp.Matrix([bezout] + [n % gcd for n in numbers]), scope="general",
                        variables=tuple(str(x) for x in symbols))
    values: dict = {}
    for r in range(count):
        at = {x: _admissible(x, r * c, common) for x, c in zip(symbols, coefficients)}  # + L x_i: same value
        value = poly.eval(tuple(at[x] for x in symbols)) if len(symbols) > 1 else poly.eval(at[symbols[0]])
        values.setdefault(value - sp.floor(value), at)
    return values, count, proof


def integer_residues(expr: sp.Expr, limit: int = 4096) -> Residues | None:
    """Decide the values mod 1 of ``expr`` over every value of its integer symbols, when it is a polynomial in
    them with rational coefficients (Δ(Δ+1)/2: {0}; Δ/2 + 1/4: {1/4, 3/4}; Δ/2: {0, 1/2}). An even symbol E is
    read as 2e and an odd one O as 2o + 1, so O/2 + 1/2 is an integer. A linear form is decided by Bézout whatever
    its number of symbols ((Δ_1 + Δ_2 + Δ_3)/20 + 1/40 takes the values 1/40 + r/20), up to ``limit`` · 16 values.
    None otherwise, or when the period box {0..q-1}^m of a nonlinear one has more than ``limit`` points. Complete
    for such polynomials; each value comes with a point of the original symbols where it is taken."""
    expr, back = _parity_form(sp.expand(expr))
    symbols = sorted(expr.free_symbols, key=str)
    if not symbols or any(s.is_integer is not True for s in symbols):
        return None
    try:
        poly = sp.Poly(expr, *symbols)
    except _SYMPY_ERRORS:
        return None
    if not all(c.is_Rational for c in poly.coeffs()):
        return None

    def original(at: dict) -> dict:  # a point of the new symbols, as values of the symbols of the centre
        return {back[y][0] if y in back else y: (back[y][1].subs(y, v) if y in back else v) for y, v in at.items()}

    period = int(sp.ilcm(*(sp.Rational(c).q for c in poly.coeffs()), 1))
    if period ** len(symbols) > limit:
        linear = _linear_residues(poly, symbols, 16 * limit) if poly.total_degree() <= 1 else None
        if linear is None:
            return None
        values, count, proof = linear
        return Residues({v: original(at) for v, at in sorted(values.items())}, count, proof)
    fractional = 0
    for x in symbols:
        shifted = sp.Poly(sp.expand(expr.subs(x, x + period) - expr), *symbols)
        fractional += sum(1 for c in shifted.coeffs() if not c.is_integer)
    proof = ProofResult(f"{expr} mod 1 repeats with period {period}",
                        f"p(x + {period}) - p(x) has integer coefficients in every symbol of {symbols}, so it is an "
                        "integer, and p mod 1 takes all its values on the box {0.." + f"{period - 1}" + "}"
                        + f"^{len(symbols)}", sp.Integer(fractional), scope="general",
                        variables=tuple(str(x) for x in symbols))
    values: dict = {}
    for point in itertools.product(range(period), repeat=len(symbols)):
        point = tuple(_admissible(x, v, period) for x, v in zip(symbols, point))
        at = dict(zip(symbols, point))
        value = poly.eval(tuple(point)) if len(symbols) > 1 else poly.eval(point[0])
        values.setdefault(value - sp.floor(value), original(at))
    return Residues(dict(sorted(values.items())), period, proof)


def _separation(nearest: sp.Expr, frac: sp.Expr, critical: sp.Expr) -> ProofResult:
    """The nearest key k* wins by a gap on each side, for the fractional part f = ``frac`` of the centre.

    Keys to the right (k* + 1 + n) lose at least α(1 - 2f) and keys to the left (k* - 1 - n) at least α(1 + 2f),
    n ≥ 0. Each gap is positive exactly when f < 1/2 (resp. f > -1/2): this is decided first, symbolically (f may
    be a rational number or an expression in nonnegative symbols). Undecided means no unique nearest key is
    established: the step is *not decided*, and it names the condition abs(f) < 1/2, necessary and sufficient for
    k* to be the unique nearest key.
    """
    right, left = sp.Rational(1, 2) - frac, sp.Rational(1, 2) + frac
    decided = {side: (gap.is_positive is True or positive(gap)) for side, gap in (("right", right), ("left", left))}
    if not all(decided.values()):
        condition = sp.Abs(frac) < sp.Rational(1, 2)
        return ProofResult(
            "undecided: no unique nearest key established",
            f"the centre {critical} = {nearest} + f with f = {frac}: the key at offset {nearest} is the unique "
            f"nearest key exactly when {condition} (necessary and sufficient), and some key is exactly when f is "
            "never in 1/2 + ℤ; neither follows from the assumptions on its symbols: not decided", condition,
            scope="general", variables=("Δ", "f"), undecided=True)
    n = sp.Symbol("n", integer=True, nonnegative=True)
    key, f = sp.Symbol("delta_k", integer=True), sp.Symbol("f", real=True)
    h = sp.Symbol("h", positive=True)  # h = 1/2 - f (right) or 1/2 + f (left), decided > 0 above
    logit = encoding_logit([key], [nearest + f])  # the paper's sign about the peak: the gap is a fact about δ*
    margins = []
    for step, gap in ((1, 1 - 2 * f), (-1, 1 + 2 * f)):
        m = step * (1 + n)
        margin = sp.expand((logit.subs(key, nearest) - logit.subs(key, nearest + m)) / alpha - gap)
        margin = sp.expand(margin.subs(f, step * (sp.Rational(1, 2) - h)))
        margins.append(sp.Integer(0) if nonnegative(margin) else margin)
    return ProofResult("the nearest key wins by a gap",
                       f"every key right of the nearest (offset {nearest}) is ≥ α(1 - 2f) below it, every key left "
                       f"of it ≥ α(1 + 2f), f = {frac}, both gaps > 0", sp.Matrix(margins), scope="general",
                       variables=("Δ", "f", "m ≠ 0", "α"))


def _mixed_separation(frac: sp.Expr, critical: sp.Expr) -> tuple[sp.Expr, ProofResult] | None:
    """A fractional part p + g with p a polynomial in integer symbols and g the rest (Δ/2 + 1/4 + sin(f)/5): for
    each value v of p mod 1 (``integer_residues``), centred to c in [-1/2, 1/2), the key floor(p + 1/2) is the
    unique nearest one exactly when abs(c + g) < 1/2. That holds for every v when it holds at the smallest and the
    largest c (the gaps 1/2 - c - g and 1/2 + c + g are monotone in c). Returns (p, the verified step), or None
    when p has no residues or a gap is not proved."""
    terms = sp.Add.make_args(sp.expand(frac))
    integer_part = sum((t for t in terms if t.free_symbols and all(x.is_integer for x in t.free_symbols)),
                       sp.Integer(0))
    rest = sp.expand(frac - integer_part)
    if integer_part == 0 or not rest.free_symbols:
        return None
    residues = integer_residues(integer_part)
    if residues is None:
        return None
    centred = sorted({v - sp.floor(v + sp.Rational(1, 2)) for v in residues.values})
    parts = [_separation(sp.Symbol("k_star", integer=True), c + rest, critical) for c in dict.fromkeys(
        (centred[0], centred[-1]))]
    if not all(part.verified for part in parts):
        return None
    return integer_part, combine(
        "the nearest key wins by a gap",
        f"{integer_part} mod 1 takes the values {residues.listing()}; with the rest {rest}, every fractional part lies "
        f"in ({centred[0]} + g, {centred[-1]} + g), g = {rest}, inside (-1/2, 1/2): the nearest key "
        f"floor({integer_part} + 1/2) (plus the integer part) is unique and wins by a gap",
        [residues.proof, *parts], scope="general", variables=("Δ", "f", "m ≠ 0", "α"))


def axis_limit(center: sp.Expr, sign: int = -1, coefficient: int = -2) -> AxisLimit:
    """Derive the α → ∞ limit of a head whose positional query is v = sign·α(1, c·``center``), from its logit.

    Args:
        center: the centre Δ in v: any real SymPy expression, e.g. Δ, d·a - p, Δ + 1/3 (off-grid), Δ + 1/2 (a tie),
            Δ + f with f = (u - v)/(2(1 + u + v)) for nonnegative u, v (every f in (-1/2, 1/2)). Whether it has a
            unique nearest key is decided symbolically (:func:`split_centre`); a polynomial in integer symbols is
            decided completely by its values mod 1 (``integer_residues``): Δ(Δ+1)/2 is an integer, Δ/2 + 1/4
            never a half-integer (nearest key floor(Δ/2 + 3/4)), both verified; Δ/2 is a half-integer at Δ = 1,
            refuted. Δ + f with f unconstrained is not decided, and the step names abs(f) < 1/2, necessary and
            sufficient for Δ to be the unique nearest key. A float anywhere in it is read as exactly its binary
            value (``attnconv.proofs._symbolic.exact``): Δ + 0.49999999999999994 has the unique nearest key Δ.
        sign: the encoding's sign, -1 for the paper's (+1 is the false variant with no interior maximum).
        coefficient: c, -2 in the paper.
    """
    try:
        center = exact(center)  # a float is its exact binary value, never rounded to a nearby rational
    except (sp.SympifyError, TypeError) as error:
        raise TypeError(f"center must be a real SymPy expression, got {center!r}") from error
    if not isinstance(center, sp.Expr) or center.is_real is False or center.has(sp.nan, sp.zoo, sp.oo, -sp.oo):
        raise TypeError(f"center must be a real SymPy expression, got {center!r}")
    delta = sp.Symbol("delta", real=True)
    logit = encoding_logit([delta], [center], sign, coefficient)
    curvature = sp.diff(logit, delta, 2)
    concave = ProofResult(
        "the logit has an interior maximum" if curvature.is_negative else "no interior maximum",
        "d²ℓ/dδ² < 0, so ℓ peaks at its critical point" if curvature.is_negative
        else f"d²ℓ/dδ² = {curvature} > 0: the critical point is a minimum, and the weight runs to the grid's ends",
        sp.Integer(0) if curvature.is_negative else curvature, scope="general", variables=("α", "Δ"))
    critical = sp.expand(-coefficient * center / 2)  # the stationary point, checked against SymPy's solve:
    if sp.simplify(sp.solve(sp.diff(logit, delta), delta)[0] - critical) != 0:
        raise AssertionError(f"the stationary point of {logit} is not {critical}")
    # completing the square about the centre: ℓ(δ) = ℓ(Δ) + sign·α(δ - Δ)², so (with step 1) the peak is at Δ
    peak = verify_equal("completing the square about the centre",
                        f"ℓ(δ) = ℓ(Δ) {'-' if sign < 0 else '+'} α(δ - Δ)², Δ = {center}",
                        logit, logit.subs(delta, center) + sign * alpha * (delta - center) ** 2,
                        simplify=sp.expand, scope="general", variables=("α", "Δ", "δ"))
    nearest, frac = split_centre(critical)
    ties = 1
    integrality: list[ProofResult] = []
    residues = integer_residues(frac) if frac.free_symbols else None
    if residues is None and frac.free_symbols and _ask_integer(frac):
        integrality.append(ProofResult(f"{frac} is an integer", "SymPy's ask(Q.integer(...)) with the assumptions "
                                       "of its symbols", sp.Integer(0), scope="general",
                                       variables=tuple(str(x) for x in frac.free_symbols)))
        nearest, frac = nearest + frac, sp.Integer(0)
    elif residues is not None:
        integrality.append(residues.proof)
        if len(residues.values) == 1:  # frac - r is an integer for every value: it joins the nearest key
            (value, _), = residues.values.items()
            rounded = sp.floor(value + sp.Rational(1, 2))
            nearest, frac = sp.expand(nearest + frac - value + rounded), value - rounded
    if residues is not None and len(residues.values) > 1:
        halves = [at for value, at in residues.values.items() if value == sp.Rational(1, 2)]
        if halves:
            ties = 0  # a tie for some values: no single limit for every value of the symbols
            where = ", ".join(f"{x} = {v}" for x, v in halves[0].items())
            separated = ProofResult(
                f"no unique nearest key: the centre is a half-integer at {where}",
                f"{critical} mod 1 takes the values {residues.listing()}; 1/2 among them means two keys tie "
                f"(at {where} the centre is {critical.subs(halves[0])})", sp.Integer(1), scope="general",
                variables=("Δ",), steps=tuple(integrality))
        else:
            nearest = sp.floor(critical + sp.Rational(1, 2))
            centred = sorted({value - sp.floor(value + sp.Rational(1, 2)) for value in residues.values})
            # the gaps 1/2 - f and 1/2 + f are smallest at the largest and the smallest f: those two cover all
            parts = [_separation(sp.Symbol("k_star", integer=True), f, critical)
                     for f in dict.fromkeys((centred[0], centred[-1]))]
            separated = combine("the nearest key wins by a gap",
                                f"{critical} mod 1 takes the values {residues.listing()}, never 1/2: the nearest "
                                f"key floor({critical} + 1/2) is unique, and wins by a gap for each value (the "
                                f"fractional parts lie in [{centred[0]}, {centred[-1]}])",
                                [*integrality, *parts], scope="general", variables=("Δ", "f", "m ≠ 0", "α"))
    elif frac == -sp.Rational(1, 2):
        ties = 2  # the keys at nearest - 1 and nearest are equally near
        nearest = nearest - 1
        key = sp.Symbol("delta_k", integer=True)
        tied = encoding_logit([key], [critical])
        difference = sp.expand(tied.subs(key, nearest) - tied.subs(key, nearest + 1))
        separated = ProofResult(f"tie: the keys at offsets {nearest} and {nearest + 1} have equal logits",
                                f"g = 0: no unique nearest key (logit difference {difference}); the limit "
                                "splits the weight", sp.Integer(1),  # residual 1: the premise g > 0 fails
                                scope="general", variables=("Δ", "α"))
    else:
        separated = _separation(nearest, frac, critical)
        mixed = _mixed_separation(frac, critical) if separated.claim.startswith("undecided") else None
        if mixed is not None:  # decided residue by residue of its integer part
            integer_part, separated = mixed
            nearest = sp.expand(nearest + sp.floor(integer_part + sp.Rational(1, 2)))
        if separated.claim.startswith("undecided"):
            ties = 0
        if integrality:
            separated = combine(separated.claim, separated.statement, [*integrality, separated], scope="general",
                                variables=separated.variables) if separated.verified else \
                ProofResult(separated.claim, separated.statement, separated.residual, scope="general",
                            variables=separated.variables, steps=tuple(integrality), undecided=separated.undecided)
    limit_nearest, limit_other = hard_limits(-1, max(ties, 1))
    squeeze = ProofResult("hard-limit lemma", "a gap g > 0 gives weight → 1 on the nearest key and → 0 elsewhere",
                          sp.Matrix([limit_nearest - 1, limit_other]), scope="general",
                          variables=("M (keys)", "g > 0", "α"))
    proof = combine(f"α → ∞ limit of the head with centre {str(center).replace('Delta', 'Δ')}",
                    "derived from the logit v·r_δ: interior maximum, unique nearest key with a gap, squeeze",
                    [concave, peak, separated, squeeze], scope="general", variables=("Δ", "α", "M"))
    return AxisLimit(proof, nearest, ties, sign)
