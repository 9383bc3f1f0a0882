"""The finite-α error bound of a 2-D quadratic head (chapter 03), derived with α, the grid and the channels symbolic.
Re-exported by :mod:`attnconv.proofs.image`.

The claim: with θ(κα) = Σ_{n∈Z} e^{-κα n²} and S = θ² - 1, a head's off-target mass is ε ≤ c·S/(1+S), and
‖MHSA(X)_q - Conv(X)_q‖ ≤ Σ_h 2ε max_k ‖X_k W^(h)‖. The paper's bound is c = κ = 1. Everything is proved as an
inequality, so a looser bound (c > 1, or θ at κα with κ < 1) verifies, while a tighter one fails at the step
that compares it with what the head's weights give. The grid weights are never typed in: they are e^{ℓ(Δ+n) - ℓ(Δ)}
with ℓ the encoding's own logit (:func:`~attnconv.proofs.limit.encoding_logit`).

Every inequality is decided by :func:`~attnconv.proofs.limit.nonnegative` after the facts already proved are named
by symbols (a slack s ≥ 0 for each proved a ≤ b). A symbol is nonnegative only when the steps that derive its sign
verified (``_premise``); otherwise it is a plain real symbol and the step that needs its sign is *not decided*, so
no sign comes from the name of a symbol alone. Nonnegative by definition: norms, the largest norm M and its gaps
M - ‖a‖. Argued, not derived: the degenerate case x = y = 0 of the square-root step, and that a·b ≤ 0 makes
a·b ≤ ‖a‖‖b‖ trivial.
"""

from __future__ import annotations

import functools

import sympy as sp

from ._symbolic import alpha, exact, pull_sums, sum_simplify
from .limit import encoding_logit, nonnegative
from .result import ProofResult, combine, verify_equal

__all__ = ["finite_alpha_bound", "weighted_triangle_inequality"]

_int = dict(integer=True)
_pos_int = dict(integer=True, positive=True)


def _premise(names: str, *proofs: ProofResult) -> tuple[sp.Symbol, ...]:
    """Symbols for quantities that ``proofs`` show to be ≥ 0: nonnegative only when every one of those proofs
    verified, else plain real symbols (then a step that needs their sign is not decided). A sign is derived, never
    read from a name."""
    known = all(proof.verified for proof in proofs)
    made = sp.symbols(names, **(dict(nonnegative=True) if known else dict(real=True)))
    return made if isinstance(made, tuple) else (made,)


def _decided(claim: str, statement: str, expr: sp.Expr, variables: tuple[str, ...],
             premises: tuple[ProofResult, ...] = ()) -> ProofResult:
    """``expr ≥ 0`` decided by :func:`nonnegative`; the residual is ``expr`` itself when it is not decided.

    ``premises``: the steps that derive the signs of the symbols in ``expr``. When one of them did not verify, the
    step is *not decided* (its premise is missing), never refuted."""
    missing = [premise.claim for premise in premises if not premise.verified]
    if missing:
        return ProofResult(claim, f"{statement}; not decided: it rests on {', '.join(missing)}, not derived", expr,
                           scope="general", variables=variables, undecided=True)
    return ProofResult(claim, statement, sp.Integer(0) if nonnegative(expr) else expr, scope="general",
                       variables=variables)


def _termwise(log_term: sp.Expr, log_weight: sp.Expr, n: sp.Symbol) -> ProofResult:
    """Every key's weight e^{log_weight(n)} is at most the bound's term e^{log_term(n)}, for every integer n."""
    j = sp.Symbol("j", integer=True, nonnegative=True)  # by definition: n = ±j, j ≥ 0, covers every integer n
    gaps = [sp.expand((log_term - log_weight).subs(n, side * j)) for side in (1, -1)]
    undecided = [g for g in gaps if not nonnegative(g)]
    return ProofResult("each key weighs at most the bound's term",
                       f"e^{{{log_weight}}} ≤ e^{{{log_term}}} for every integer n (n = ±j, j ≥ 0)",
                       sp.Matrix(undecided) if undecided else sp.Integer(0), scope="general",
                       variables=("α", "n", "Δ"))


def _sum_nonnegative(claim: str, total: sp.Sum, summand_proof: ProofResult | None = None) -> ProofResult:
    """Σ_{n=a}^{b} f(n) ≥ 0, derived from its summand and its range, never from the name of a symbol.

    Two facts, each decided: (1) f(n) ≥ 0 for every integer n (SymPy's sign of f, or ``summand_proof``, a step
    that proves it), and (2) the range is proper, b - a + 1 ≥ 0 (possibly empty), or infinite at one or both ends
    as written. (2) matters: SymPy reads a sum over a reversed range as minus a sum (Σ_{n=0}^{-L-1} g = -Σ_{n=-L}^{-1}
    g, Karr's convention), which makes identities such as θ - P = tails + gaps hold for a one-sided or truncated θ
    too, while such a "tail" of positive terms is negative.
    """
    (n, lower, upper), = total.limits
    summand = total.function
    if summand_proof is not None:
        summand_ok = summand_proof.verified
    else:
        summand_ok = summand.is_nonnegative is True or nonnegative(summand)
    if lower is sp.S.NegativeInfinity or upper is sp.S.Infinity:
        length = sp.oo if lower is not sp.S.Infinity and upper is not sp.S.NegativeInfinity else -sp.oo
        proper = length == sp.oo
    else:
        length = sp.expand(upper - lower + 1)
        proper = nonnegative(length)
    residual = sp.Matrix([0 if summand_ok else summand, 0 if proper else length])
    where = "infinite" if length == sp.oo else f"{length} ≥ 0 terms"
    text = (f"Σ_{{{n}={lower}}}^{{{upper}}} {summand} ≥ 0: every term ≥ 0"
            + (f" ({summand_proof.claim})" if summand_proof is not None else "")
            + (f", over a proper range ({where})" if proper else
               f"; but the range {lower}..{upper} is not shown to be proper ({length} ≥ 0 does not follow), and over "
               "a reversed range SymPy's sum is minus a sum of these terms"))
    return ProofResult(claim, text, residual, scope="general", variables=("α", "L", "U"),
                       steps=(summand_proof,) if summand_proof is not None else ())


def _difference_bound(claimed: sp.Expr) -> ProofResult:
    """‖Y_k - Y_t‖ ≤ c·max_j ‖Y_j‖ with c = ``claimed``, derived for vectors in D dimensions (D symbolic):

    ‖a - b‖² = ‖a‖² - 2a·b + ‖b‖² (expanded), -a·b ≤ ‖a‖‖b‖ (Cauchy-Schwarz, from the Lagrange identity), so
    (‖a‖ + ‖b‖)² - ‖a - b‖² = 2(‖a‖‖b‖ + a·b) ≥ 0 and, by the square-root step, ‖a - b‖ ≤ ‖a‖ + ‖b‖; with
    ‖a‖, ‖b‖ ≤ M: c M - ‖a - b‖ = (c - 2) M + (slacks) ≥ 0, which needs c ≥ 2. For c < 2 the step fails, with the
    witness a = +1, b = -1 in one dimension (the query token -1 among tokens +1): ‖a - b‖ = 2 > c = c·max.
    """
    dim = sp.Symbol("D", **_pos_int)
    i = sp.Symbol("i", **_int)
    a, b = sp.IndexedBase("a", real=True), sp.IndexedBase("b", real=True)
    square = verify_equal("‖a - b‖² expands", "Σ_i (a_i - b_i)² = ‖a‖² - 2 a·b + ‖b‖²",
                          sp.Sum(sp.expand((a[i] - b[i]) ** 2), (i, 1, dim)),
                          sp.Sum(a[i] ** 2, (i, 1, dim)) - 2 * sp.Sum(a[i] * b[i], (i, 1, dim))
                          + sp.Sum(b[i] ** 2, (i, 1, dim)), simplify=sum_simplify, scope="general",
                          variables=("D", "a", "b"))
    norm_a, norm_b = sp.symbols("A_n B_n", nonnegative=True)  # norms: ≥ 0 by definition
    cauchy_schwarz = (_lagrange(), *_square_root_step())
    slack, = _premise("c", *cauchy_schwarz)  # -a·b = ‖a‖‖b‖ - c, c ≥ 0 (Cauchy-Schwarz, derived)
    triangle = _decided("‖a - b‖ ≤ ‖a‖ + ‖b‖, squared", "(‖a‖+‖b‖)² - ‖a-b‖² = 2(‖a‖‖b‖ + a·b) ≥ 0",
                        sp.expand((norm_a + norm_b) ** 2 - (norm_a**2 + 2 * (norm_a * norm_b - slack) + norm_b**2)),
                        ("a", "b"), premises=cauchy_schwarz)
    top, s1, s2 = sp.symbols("M s_1 s_2", nonnegative=True)  # M the largest norm: M - ‖a‖, M - ‖b‖ ≥ 0 by definition
    s0, = _premise("s_0", triangle)
    # ‖a - b‖ = ‖a‖ + ‖b‖ - s_0 (triangle), ‖a‖ = M - s_1, ‖b‖ = M - s_2 (M the largest norm)
    margin = sp.expand(claimed * top - ((top - s1) + (top - s2) - s0))
    if not triangle.verified:
        bound = _decided(f"‖Y_k - Y_t‖ ≤ {claimed}·max_j ‖Y_j‖", f"{claimed}·M - ‖a - b‖ = {margin} ≥ 0", margin,
                         ("D", "a", "b", "M"), premises=(triangle,))
    elif nonnegative(margin):
        bound = ProofResult(f"‖Y_k - Y_t‖ ≤ {claimed}·max_j ‖Y_j‖",
                            f"{claimed}·M - ‖a - b‖ = {margin} ≥ 0 with ‖a‖, ‖b‖ ≤ M (the triangle inequality)",
                            sp.Integer(0), scope="general", variables=("D", "a", "b", "M"))
    else:
        witness = abs(sp.Integer(1) - sp.Integer(-1)) - claimed * 1  # a = +1, b = -1, M = 1, D = 1
        bound = ProofResult(f"‖Y_k - Y_t‖ ≤ {claimed}·max_j ‖Y_j‖ fails",
                            f"{claimed}·M - ‖a - b‖ = {margin} is not ≥ 0: the triangle inequality gives the factor 2; "
                            f"a = +1, b = -1 (D = 1, M = 1) have ‖a - b‖ = 2 > {claimed}",
                            witness if witness.is_positive is True else margin, scope="general", variables=("D", "a", "b", "M"))
    return combine(f"‖Y_k - Y_t‖ ≤ {claimed} max_j ‖Y_j‖",
                   "the difference of two vectors is at most the sum of their norms, at most twice the largest",
                   [square, *cauchy_schwarz, triangle, bound], scope="general",
                   variables=("D", "a", "b"))


@functools.lru_cache(maxsize=1)
def _lagrange() -> ProofResult:
    """The Lagrange identity ‖a‖²‖b‖² - (a·b)² = ½ Σ_{i,j} (a_i b_j - a_j b_i)² in D dimensions: (a·b)² ≤ ‖a‖²‖b‖²,
    so ±a·b ≤ ‖a‖‖b‖ (Cauchy-Schwarz, with the square-root step)."""
    dim = sp.Symbol("D", **_pos_int)
    i, j = sp.symbols("i j", **_int)
    a, b = sp.IndexedBase("a", real=True), sp.IndexedBase("b", real=True)
    return verify_equal(
        "Lagrange identity (Cauchy-Schwarz)", "‖a‖²‖b‖² - (a·b)² = ½ Σ_{i,j} (a_i b_j - a_j b_i)² ≥ 0, in D dimensions",
        sp.Sum(a[i] ** 2, (i, 1, dim)) * sp.Sum(b[j] ** 2, (j, 1, dim))
        - sp.Sum(a[i] * b[i], (i, 1, dim)) * sp.Sum(a[j] * b[j], (j, 1, dim)),
        sp.Sum(sp.expand((a[i] * b[j] - a[j] * b[i]) ** 2) / 2, (i, 1, dim), (j, 1, dim)),
        simplify=sum_simplify, scope="general", variables=("D", "a", "b"))


def _square_root_step() -> tuple[ProofResult, ProofResult]:
    """x, y ≥ 0 and x² ≤ y² give x ≤ y: y - x = (y² - x²)/(y + x) (for x + y > 0), a slack over a positive sum."""
    x, y, slack = sp.symbols("x y z", nonnegative=True)  # the hypotheses: x, y ≥ 0, y² - x² = z ≥ 0
    identity = verify_equal("y - x = (y² - x²)/(y + x)", "for x + y > 0", y - x, (y**2 - x**2) / (y + x),
                            simplify=sp.cancel, scope="general", variables=("x ≥ 0", "y ≥ 0"))
    sign = _decided("square roots keep the order", "x² ≤ y² (y² - x² = z ≥ 0) ⇒ y - x = z/(x + y) ≥ 0",
                    slack / (x + y), ("x ≥ 0", "y ≥ 0", "z ≥ 0"))
    return identity, sign


def weighted_triangle_inequality() -> ProofResult:
    """‖Σ_{k=1}^{N} A_k v_k‖ ≤ Σ_k A_k ‖v_k‖ for A_k ≥ 0, vectors in D dimensions, by induction over N.

    Steps, each derived: the Lagrange identity ‖a‖²‖b‖² - (a·b)² = ½ Σ_{i,j} (a_i b_j - a_j b_i)² (D symbolic), so
    (a·b)² ≤ ‖a‖²‖b‖² and, by the square-root step, a·b ≤ ‖a‖‖b‖; ‖a + b‖² = ‖a‖² + 2a·b + ‖b‖²; so
    (‖a‖ + ‖b‖)² - ‖a + b‖² = 2(‖a‖‖b‖ - a·b) ≥ 0 and ‖a + b‖ ≤ ‖a‖ + ‖b‖. Base case ‖A v‖ = A ‖v‖; inductive
    step: the triangle inequality, then the hypothesis.
    """
    dim = sp.Symbol("D", **_pos_int)
    i = sp.Symbol("i", **_int)
    a, b = sp.IndexedBase("a", real=True), sp.IndexedBase("b", real=True)
    lagrange = _lagrange()
    square = verify_equal("‖a + b‖² expands", "Σ_i (a_i + b_i)² = ‖a‖² + 2 a·b + ‖b‖²",
                          sp.Sum(sp.expand((a[i] + b[i]) ** 2), (i, 1, dim)),
                          sp.Sum(a[i] ** 2, (i, 1, dim)) + 2 * sp.Sum(a[i] * b[i], (i, 1, dim))
                          + sp.Sum(b[i] ** 2, (i, 1, dim)), simplify=sum_simplify, scope="general",
                          variables=("D", "a", "b"))
    norm_a, norm_b = sp.symbols("A_n B_n", nonnegative=True)  # norms: ≥ 0 by definition
    cauchy_schwarz = (lagrange, *_square_root_step())
    slack, = _premise("c", *cauchy_schwarz)  # a·b = ‖a‖‖b‖ - c, c ≥ 0 (Cauchy-Schwarz, derived)
    triangle = _decided("triangle inequality, squared", "(‖a‖+‖b‖)² - ‖a+b‖² = 2(‖a‖‖b‖ - a·b) ≥ 0",
                        sp.expand((norm_a + norm_b) ** 2 - (norm_a**2 + 2 * (norm_a * norm_b - slack) + norm_b**2)),
                        ("a", "b"), premises=cauchy_schwarz)
    weight = sp.Symbol("A", nonnegative=True)  # the hypothesis A ≥ 0
    v = sp.IndexedBase("v", real=True)
    base = verify_equal("base case N = 1: ‖A v‖ = A ‖v‖", "sqrt(Σ_i (A v_i)²) = A sqrt(Σ_i v_i²), A ≥ 0",
                        sp.sqrt(sp.Sum((weight * v[i]) ** 2, (i, 1, dim))), weight * sp.sqrt(sp.Sum(v[i] ** 2, (i, 1, dim))),
                        simplify=lambda e: sp.simplify(pull_sums(e)), scope="general", variables=("D", "A ≥ 0", "v"))
    count, k = sp.Symbol("N", **_pos_int), sp.Symbol("k", **_int)
    terms = sp.IndexedBase("t")  # t_k = A_k ‖v_k‖
    split = verify_equal("Σ_{k ≤ N+1} = Σ_{k ≤ N} + the new term", "Σ_{k=1}^{N+1} t_k = Σ_{k=1}^{N} t_k + t_{N+1}",
                         sp.Sum(terms[k], (k, 1, count + 1)),
                         sp.Sum(terms[k], (k, 1, count)) + sp.Sum(terms[k], (k, count + 1, count + 1)),
                         simplify=sp.simplify, scope="general", variables=("N", "t"))
    bound, new, t2 = sp.symbols("H w s_2", nonnegative=True)  # by definition H, w = A‖v‖ ≥ 0; the hypothesis s_2
    t1, = _premise("s_1", triangle)
    # triangle: ‖Σ_{≤N+1}‖ = ‖Σ_{≤N}‖ + w - s_1; hypothesis: ‖Σ_{≤N}‖ = H - s_2 (H = Σ_{k≤N} t_k)
    step = _decided("inductive step N → N + 1", "H + w - ‖Σ_{k≤N+1} A_k v_k‖ = s_1 + s_2 ≥ 0 (triangle, hypothesis)",
                    sp.expand(bound + new - ((bound - t2) + new - t1)), ("N", "A ≥ 0", "v"), premises=(triangle,))
    return combine("weighted triangle inequality", "‖Σ_k A_k v_k‖ ≤ Σ_k A_k ‖v_k‖ for A_k ≥ 0, any N keys, D dims",
                   [*cauchy_schwarz, square, triangle, base, split, step], scope="induction",
                   variables=("N", "D", "A ≥ 0", "v"))


def finite_alpha_bound(factor: sp.Expr = 1, claimed_alpha: sp.Expr = 1, coefficient: int = -2,
                       sign: int = -1, difference_factor: sp.Expr = 2,
                       theta_range: tuple[sp.Expr, sp.Expr] = (-sp.oo, sp.oo)) -> ProofResult:
    """The finite-α error bound of a 2-D quadratic head, derived with α, the grid and the channels symbolic.

    1. From the logit: the key at δ = Δ + n weighs w(n) = e^{ℓ(Δ+n) - ℓ(Δ)} relative to the target, and this
       splits over the axes: w(n) = w_1(n_1) w_2(n_2), with w(0) = 1.
    2. On a grid with L_a offsets below and U_a above the target on axis a, the off-target weight is
       R = P_1 P_2 - 1 with P_a = Σ_{n=-L_a}^{U_a} w_a(n) (Fubini).
    3. Each w_a(n) ≤ g(n) = e^{-κα n²}, the bound's term, for every integer n. With θ = Σ_{n∈Z} g(n) split into
       the grid's terms and two tails T_a: θ - P_a = T_a + Σ_{n=-L_a}^{U_a} (g(n) - w_a(n)) ≥ 0. Each tail, and the
       sum of the termwise gaps, is shown ≥ 0 from its summand (≥ 0 term by term) and its range (proper or
       infinite, as written): the identity alone holds for any θ, by SymPy's convention for reversed ranges.
    4. S - R = θ² - P_1 P_2 = θ(θ - P_2) + P_2(θ - P_1) ≥ 0.
    5. ε = R/(1 + R), and S/(1+S) - R/(1+R) = (S - R)/((1+R)(1+S)) ≥ 0; S/(1+S) = 1 - θ^{-2}.
    6. The claimed bound c·S/(1+S) ≥ S/(1+S) (c ≥ 1). S/(1+S) is attained on an infinite grid (T_a = 0), so a
       smaller c is false, and it fails here.
    7. Σ_k A_k Y_k - Y_t = Σ_k A_k (Y_k - Y_t) (with Σ_k A_k = 1); the weighted triangle inequality
       (``weighted_triangle_inequality``, by induction over keys) and ‖Y_k - Y_t‖ ≤ ‖Y_k‖ + ‖Y_t‖ ≤ 2 max, the 2
       derived (``_difference_bound``); Σ_{k≠t} A_k m_k ≤ ε m_max, since ε m_max - Σ A_k m_k = Σ A_k (m_max - m_k)
       ≥ 0.

    Args:
        factor: c. 1 is the paper's bound; 2 is a looser, true bound; 1/2 and 9/10 are false.
        claimed_alpha: κ, the bound stated with θ(κα): 1/2 is looser (true), 2 is tighter (false).
        coefficient: the encoding's centre coefficient (-2 in the paper). -1 puts the head's peak at Δ/2, so the
            target does not carry the weight the bound assumes (false: step 3 fails).
        sign: -1 for the paper's encoding; +1 (weights growing away from the target) is false (step 3 fails).
        difference_factor: c' in ‖Y_k - Y_t‖ ≤ c' max ‖Y‖ and in the error bound Σ_h c' ε max_k ‖X_k W^(h)‖: 2 in
            the paper; 1 is false (a query token -1 among tokens +1 meets 2ε exactly), and the derived step fails.
        theta_range: the range (a, b) of the sum θ = Σ_{n=a}^{b} e^{-κα n²} the bound is stated with: all of Z in
            the paper. A one-sided θ, (0, ∞), or a truncated one, (-5, 5), is false (at α = 1 the library's head puts
            0.682 of its mass off the target on a 61×61 grid, the one-sided bound is 0.480): a tail then runs over a
            reversed range, and the step that shows it ≥ 0 fails.
    """
    n1, n2, n = sp.symbols("n1 n2 n", **_int)
    center = sp.symbols("Delta1 Delta2", **_int)
    factor, kappa = exact(factor), exact(claimed_alpha)  # a float: exactly its binary value

    def relative_logit(offsets, centres):  # ℓ(Δ + n) - ℓ(Δ), from the encoding
        return (encoding_logit([c + m for c, m in zip(centres, offsets)], centres, sign, coefficient)
                - encoding_logit(list(centres), centres, sign, coefficient))

    logit = relative_logit([n1, n2], center)
    axis = [sp.expand(relative_logit([n], [center[a]])) for a in range(2)]  # log w_a(n)
    separable = verify_equal("the relative logit splits over the axes", "ℓ(Δ + n) - ℓ(Δ) = ℓ_1(n_1) + ℓ_2(n_2)",
                             logit, axis[0].subs(n, n1) + axis[1].subs(n, n2), simplify=sp.expand,
                             scope="definition", variables=("α", "Δ", "n"))
    target = verify_equal("the target weighs w(0) = 1", "e^{ℓ(Δ) - ℓ(Δ)} at n = 0", sp.exp(logit.subs({n1: 0, n2: 0})),
                          sp.Integer(1), scope="definition", variables=("α", "Δ"))
    # by definition: L_a, U_a ≥ 0 count the offsets below and above the target, which is on the grid
    lo, hi = sp.symbols("L1:3", integer=True, nonnegative=True), sp.symbols("U1:3", integer=True, nonnegative=True)
    grid = sp.Sum(sp.exp(logit), (n1, -lo[0], hi[0]), (n2, -lo[1], hi[1]))
    partial = [sp.Sum(sp.exp(axis[a]), (n, -lo[a], hi[a])) for a in range(2)]
    fubini = verify_equal("the grid sum factorises", "Σ_{n1,n2} w(n) = P_1 P_2", grid, partial[0] * partial[1],
                          simplify=sum_simplify, scope="general", variables=("α", "Δ", "L", "U"))
    log_term = -kappa * alpha * n**2
    term = sp.exp(log_term)  # the bound's term g(n), as the statement defines θ
    termwise = [_termwise(log_term, axis[a], n) for a in range(2)]
    lower, upper = (exact(end) for end in theta_range)
    theta = sp.Sum(term, (n, lower, upper))
    tails = [(sp.Sum(term, (n, lower, -lo[a] - 1)), sp.Sum(term, (n, hi[a] + 1, upper))) for a in range(2)]
    gaps = [sp.Sum(term - sp.exp(axis[a]), (n, -lo[a], hi[a])) for a in range(2)]
    steps = [separable, target, fubini, *termwise]
    gaps_nonnegative, sums_nonnegative, at_least_one = [], [], []  # θ - P_a ≥ 0, P_a ≥ 0, P_a ≥ 1: derived
    for a in range(2):
        split = verify_equal(f"θ - P_{a + 1} = tails + termwise gaps", "θ - P_a = T_a + Σ_{n=-L}^{U} (g(n) - w_a(n))",
                             theta - partial[a], tails[a][0] + tails[a][1] + gaps[a],
                             simplify=lambda e: sp.simplify(pull_sums(e)), scope="general",
                             variables=("α", "L", "U"))
        # θ - P_a ≥ 0, derived: each piece from its summand and its range (never from the name of a symbol)
        pieces = [_sum_nonnegative(f"the left tail of axis {a + 1} is ≥ 0", tails[a][0]),
                  _sum_nonnegative(f"the right tail of axis {a + 1} is ≥ 0", tails[a][1]),
                  _sum_nonnegative(f"the termwise gaps of axis {a + 1} sum to ≥ 0", gaps[a], termwise[a])]
        gaps_nonnegative.append(combine(f"d_{a + 1} = θ - P_{a + 1} ≥ 0", "θ - P_a = T_a + Σ (g - w_a), each piece a "
                                        "sum of terms ≥ 0 over a proper range", [split, *pieces], scope="general",
                                        variables=("α", "L", "U")))
        sums_nonnegative.append(_sum_nonnegative(f"P_{a + 1} ≥ 0", partial[a]))
        steps += [gaps_nonnegative[-1], sums_nonnegative[-1]]
        # P_a ≥ 1: the target's own weight w_a(0) = 1 plus the keys before and after it, each a sum of terms ≥ 0
        before, after = sp.Sum(sp.exp(axis[a]), (n, -lo[a], -1)), sp.Sum(sp.exp(axis[a]), (n, 1, hi[a]))
        target_split = verify_equal(f"P_{a + 1} = w_{a + 1}(0) + the keys before and after the target",
                                    "Σ_{n=-L}^{U} w_a(n) = Σ_{n=-L}^{-1} w_a(n) + w_a(0) + Σ_{n=1}^{U} w_a(n)",
                                    partial[a], before + sp.Sum(sp.exp(axis[a]), (n, 0, 0)) + after,
                                    simplify=lambda e: sp.simplify(pull_sums(e)), scope="general",
                                    variables=("α", "L", "U"))
        weighs_one = verify_equal(f"w_{a + 1}(0) = 1", "e^{ℓ_a(Δ) - ℓ_a(Δ)} = 1", sp.exp(axis[a].subs(n, 0)),
                                  sp.Integer(1), scope="definition", variables=("α", "Δ"))
        at_least_one.append(combine(f"P_{a + 1} ≥ 1", "the target is on the grid (L, U ≥ 0) and weighs 1",
                                    [target_split, weighs_one,
                                     _sum_nonnegative(f"the keys before the target on axis {a + 1}", before),
                                     _sum_nonnegative(f"the keys after the target on axis {a + 1}", after)],
                                    scope="general", variables=("α", "L", "U")))
        steps.append(at_least_one[-1])
    theta_nonnegative = _sum_nonnegative("θ ≥ 0", theta)
    steps.append(theta_nonnegative)
    # the signs below are the steps' just derived: a symbol is nonnegative only when its step verified
    th, = _premise("theta", theta_nonnegative)
    p1, p2 = _premise("P_1 P_2", *sums_nonnegative)
    d1, d2 = _premise("d_1 d_2", *gaps_nonnegative)  # θ - P_a ≥ 0 (step 3)
    steps.append(verify_equal("S - R as products", "θ² - P_1 P_2 = θ(θ - P_2) + P_2(θ - P_1)", th**2 - p1 * p2,
                              th * (th - p2) + p2 * (th - p1), simplify=sp.expand, scope="general",
                              variables=("θ", "P")))
    tail_mass = _decided("tail-mass bound R ≤ S", "θ d_2 + P_2 d_1 ≥ 0 with d_a = θ - P_a ≥ 0", th * d2 + p2 * d1,
                         ("α", "L", "U"), premises=(theta_nonnegative, *sums_nonnegative, *gaps_nonnegative))
    q1, q2 = _premise("p_1 p_2", *at_least_one)  # P_a = 1 + p_a, p_a ≥ 0 (P_a ≥ 1)
    mass_nonnegative = _decided("R = P_1 P_2 - 1 ≥ 0", "(1 + p_1)(1 + p_2) - 1 ≥ 0 with P_a = 1 + p_a, p_a ≥ 0",
                                sp.expand((1 + q1) * (1 + q2) - 1), ("α", "L", "U"), premises=tuple(at_least_one))
    steps += [tail_mass, mass_nonnegative]
    big_r, = _premise("R", mass_nonnegative)
    gap, = _premise("s", tail_mass)  # S - R = s
    big_s, = _premise("S", mass_nonnegative, tail_mass)  # S = R + s
    steps.append(verify_equal("off-target mass", "ε = 1 - 1/(1+R) = R/(1+R)", 1 - 1 / (1 + big_r),
                              big_r / (1 + big_r), scope="general", variables=("R",)))
    steps.append(verify_equal("difference of the masses", "S/(1+S) - R/(1+R) = (S-R)/((1+R)(1+S))",
                              big_s / (1 + big_s) - big_r / (1 + big_r), (big_s - big_r) / ((1 + big_r) * (1 + big_s)),
                              simplify=sp.cancel, scope="general", variables=("R", "S")))
    steps.append(_decided("ε ≤ S/(1+S)", "(S - R)/((1+R)(1+S)) ≥ 0 with S - R = s ≥ 0",
                          gap / ((1 + big_r) * (1 + gap + big_r)), ("R ≥ 0", "S ≥ R"),
                          premises=(mass_nonnegative, tail_mass)))
    steps.append(verify_equal("closed form", "S/(1+S) = 1 - θ^{-2} for S = θ² - 1",
                              (big_s / (1 + big_s)).subs(big_s, th**2 - 1), 1 - th ** (-2), scope="general",
                              variables=("θ",)))
    steps.append(_decided("the claimed bound is at least S/(1+S)",
                          f"{factor}·S/(1+S) - S/(1+S) ≥ 0; S/(1+S) is attained on an infinite grid, so a smaller "
                          "claim is false", sp.expand((factor - 1) * big_s / (1 + big_s)), ("S ≥ 0",),
                          premises=(mass_nonnegative, tail_mass)))
    count = sp.Symbol("N", **_pos_int)
    k, t = sp.symbols("k t", **_int)
    weights, y = sp.IndexedBase("A"), sp.IndexedBase("Y")
    steps.append(verify_equal("error as a weighted sum of differences", "Σ_k A_k Y_k - Y_t = Σ_k A_k (Y_k - Y_t)",
                              sp.Sum(weights[k] * y[k], (k, 1, count)) - y[t] * sp.Sum(weights[k], (k, 1, count)),
                              sp.Sum(weights[k] * (y[k] - y[t]), (k, 1, count)),
                              simplify=lambda e: sp.expand(pull_sums(e)), scope="general",
                              variables=("N", "A", "Y", "t")))
    steps.append(weighted_triangle_inequality())
    steps.append(_difference_bound(exact(difference_factor)))
    # by definition: softmax weights A_k ≥ 0, and m_max - m_k = z ≥ 0 for the largest m
    nonneg_weights, m_k, top = sp.IndexedBase("A", nonnegative=True), sp.IndexedBase("m"), sp.Symbol("m_max")
    excess = sp.Sum(nonneg_weights[k] * (top - m_k[k]), (k, 1, count))  # m_max - m_k ≥ 0 for every k
    below = excess.function.subs(top - m_k[k], sp.Symbol("z", nonnegative=True)).is_nonnegative  # by definition
    steps.append(ProofResult("a weighted sum is at most ε times the largest term",
                             "ε m_max - Σ_{k≠t} A_k m_k = Σ_{k≠t} A_k (m_max - m_k) ≥ 0",
                             sp.Integer(0) if below else excess, scope="general", variables=("N", "A ≥ 0", "m")))
    bound = f"{factor}·S/(1+S)" if factor != 1 else "S/(1+S)"
    theta_text = "θ(α)" if kappa == 1 else f"θ({kappa}α)"
    if (lower, upper) != (-sp.oo, sp.oo):
        theta_text += f" summed over n = {lower}..{upper}"
    return combine(
        "finite-α bound",
        f"off-target mass ≤ {bound}, S = {theta_text}² - 1; ‖MHSA(X)_q - Conv(X)_q‖ ≤ Σ_h {difference_factor}ε "
        "max_k ‖X_k W^(h)‖",
        steps, scope="general", variables=("α", "Δ", "L", "U", "N", "D"),
    )
