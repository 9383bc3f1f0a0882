"""SymPy proofs about sinusoidal (Vaswani et al. 2017) and rotary (Su et al. 2021) positions, chapter 05.

The rotation of a pair of channels by α is R(α) = [[cos α, -sin α], [sin α, cos α]]; a frequency's angle at
position t is t θ. A head of dimension D_h = 2M rotates M pairs, each with its own frequency θ_m, so its rotation
R_t is block-diagonal and every bilinear form is a sum over the blocks. Each proof first checks one 2 × 2 block,
symbolic in the positions, the frequency and every entry of the vectors and matrices, then the sum over
M blocks with M symbolic (the block identity applied term by term).

- :func:`rotary_logit_is_relative`: (R_i q)·(R_j k) = q^T R_{j-i} k.
- :func:`sinusoidal_bilinear_is_relative`: p_i^T W p_j is a function of j - i alone if and only if every block
  of W on one frequency is a scaled rotation [[a, b], [-b, a]].
- :func:`rotary_constant_content_kernel`: with the same q and k at every position the logit is
  Σ_m r_m cos((j - i) θ_m + φ_m), every such kernel is reached, and softmax over it is a lightweight convolution.
- :func:`rotary_content_kernel`: with constant keys the rotary logit is Shaw et al.'s query-dependent term with
  a_δ = R_δ k; with constant queries, the key-dependent term with c_δ = R_{-δ} q.

Conventions: δ = j - i (key minus query), as in :mod:`attnconv.proofs.sequence`. Each function has arguments
that make its statement false (R_{i+j}, the symmetric W, a flipped kernel, ...), and the tests check that those
are reported as not verified.
"""

from __future__ import annotations

from typing import Callable

import sympy as sp

from ._symbolic import reindex, sum_simplify
from .conventions import attention_row, relative_offset
from .result import ProofResult, combine, verify_equal

__all__ = [
    "rotation",
    "rotary_logit_is_relative",
    "sinusoidal_bilinear_is_relative",
    "rotary_constant_content_kernel",
    "rotary_content_kernel",
]


def rotation(angle: sp.Expr) -> sp.Matrix:
    """R(α) = [[cos α, -sin α], [sin α, cos α]]: the rotation of one pair of channels by α (counter-clockwise)."""
    return sp.Matrix([[sp.cos(angle), -sp.sin(angle)], [sp.sin(angle), sp.cos(angle)]])


def _trig(expr: sp.Expr) -> sp.Expr:
    """Expand products, then the sines and cosines of sums of angles, then products again: a polynomial in the
    sines and cosines of the single angles i θ, j θ, ..., which is zero exactly when the identity holds."""
    return sp.expand(sp.expand_trig(sp.expand(expr)))


def _positions():
    i, j = sp.symbols("i j", integer=True)
    theta = sp.Symbol("theta", positive=True)
    return i, j, theta


def _vector(name: str) -> sp.Matrix:
    return sp.Matrix(sp.symbols(f"{name}_1 {name}_2", real=True))


def _dot(u: sp.Matrix, v: sp.Matrix) -> sp.Expr:
    return (u.T * v)[0]


def _termwise(simplify: Callable[[sp.Expr], sp.Expr]) -> Callable[[sp.Expr], sp.Expr]:
    """A simplifier for Σ_m f_m - Σ_m g_m over the same blocks: one sum of the simplified f_m - g_m (zero when the
    block identity holds for every m), plus whatever is not such a sum."""

    def run(expr: sp.Expr) -> sp.Expr:
        sums: dict[tuple, sp.Expr] = {}
        rest = sp.Integer(0)
        for term in sp.Add.make_args(sp.expand(expr, deep=False)):
            coeff, body = term.as_coeff_Mul()
            if isinstance(body, sp.Sum) and len(body.limits) == 1:
                sums[body.limits[0]] = sums.get(body.limits[0], sp.Integer(0)) + coeff * body.function
            else:
                rest += term
        total = rest
        for limits, summand in sums.items():
            summand = simplify(summand)
            total += 0 if summand == 0 else sp.Sum(summand, limits)
        return total

    return run


def _blocks():
    """The M blocks of a head: the index m = 0 .. M - 1 and per-block symbols q[m, c], k[m, c], θ[m]."""
    m = sp.Symbol("m", integer=True, nonnegative=True)
    blocks = sp.Symbol("M", integer=True, positive=True)
    return m, (m, 0, blocks - 1)


def _block_and_sum(claim: str, statement: str, lhs: Callable, rhs: Callable, names: tuple[str, ...],
                   variables: tuple[str, ...], latex: str = "") -> ProofResult:
    """The identity lhs(θ, vectors) = rhs(θ, vectors) on one 2 × 2 block, then Σ_m lhs_m = Σ_m rhs_m over M blocks
    with per-block frequencies θ_m and vectors; ``names`` are the vectors' names (each a 2-vector per block)."""
    _, _, theta = _positions()
    block = verify_equal(f"{claim}: one 2 × 2 block", statement, lhs(theta, *map(_vector, names)),
                         rhs(theta, *map(_vector, names)), simplify=_trig, scope="general",
                         variables=variables + ("θ",) + names)
    m, limits = _blocks()
    theta_m = sp.IndexedBase("theta", positive=True)[m]
    per_block = [sp.Matrix([sp.IndexedBase(name, real=True)[m, c] for c in (0, 1)]) for name in names]
    summed = verify_equal(f"{claim}: the sum over M blocks", f"Σ_m of the block identity, m = 0 .. M-1",
                          sp.Sum(lhs(theta_m, *per_block), limits), sp.Sum(rhs(theta_m, *per_block), limits),
                          simplify=_termwise(_trig), scope="general", variables=variables + ("M", "θ_m") + names)
    return combine(claim, statement, [block, summed], scope="general", variables=variables + ("M", "θ_m") + names,
                   latex=latex)


def rotary_logit_is_relative(offset: str = "j-i") -> ProofResult:
    """RoPE: (R_i q)·(R_j k) = q^T R_{j-i} k for all positions i, j, every frequency θ and all q, k.

    R_t rotates pair m by t θ_m, so R_i^T R_j = R_{j-i} on every block: the rotated logit sees the positions only
    through the offset δ = j - i. Symbolic in i, j, θ and the entries of q and k on one 2 × 2 block; then the sum over
    M blocks with per-block frequencies θ_m (M symbolic).

    ``offset="i+j"`` claims q^T R_{i+j} k and ``offset="i-j"`` claims q^T R_{i-j} k (both false).
    """
    i, j, _ = _positions()
    angles = {"j-i": j - i, "i+j": i + j, "i-j": i - j}
    if offset not in angles:
        raise ValueError(f"offset must be one of {sorted(angles)}, got {offset!r}")
    return _block_and_sum(
        f"rotary logit = q^T R_({offset}) k",
        f"(R_i q)·(R_j k) = q^T R_({offset}) k, R_t = diag(R(t θ_m))",
        lambda th, q, k: _dot(rotation(i * th) * q, rotation(j * th) * k),
        lambda th, q, k: _dot(q, rotation(angles[offset] * th) * k),
        ("q", "k"), ("i", "j"),
        latex=r"(R_i q)^\top (R_j k) = q^\top R_{" + offset + r"}\, k")


def _sinusoid(position: sp.Expr, omega: sp.Expr) -> sp.Matrix:
    """One frequency's pair of the sinusoidal encoding: (sin t ω, cos t ω)."""
    return sp.Matrix([sp.sin(position * omega), sp.cos(position * omega)])


def sinusoidal_bilinear_is_relative(condition: str = "rotation") -> ProofResult:
    """Sinusoidal encodings: p_i^T W p_j is a function of j - i alone iff W is, on each frequency's 2 × 2 block, a
    scaled rotation [[a, b], [-b, a]] (for a W that is block-diagonal over the frequencies; blocks between two
    different frequencies must vanish too, which is argued, not checked, in the chapter).

    Steps, with p_t = (sin t ω, cos t ω) on one block and W = [[w11, w12], [w21, w22]], all symbolic:

    1. p_t = R(-t ω) (0, 1): the encoding is a fixed vector turned by the position.
    2. p_i^T W p_j = ½[(w11 + w22) cos δω + (w21 - w12) sin δω] + ½[(w22 - w11) cos sω + (w12 + w21) sin sω]
       with δ = j - i and s = i + j: only the second bracket depends on anything but δ.
    3. *if*: with W = [[a, b], [-b, a]], p_i^T W p_j equals its value at (0, j - i) for all i, j, ω; and so does
       the sum over M blocks with per-block a_m, b_m, ω_m.
    4. *only if*: a function of j - i is unchanged by (i, j) → (i + 1, j + 1). That difference, at (0, -1) and at
       (0, 0), is a linear system in w22 and w21 whose only solution is w22 = w11, w21 = -w12 (for sin ω ≠ 0,
       true of every θ_m = base^(-2m/D) ∈ (0, 1]).

    ``condition="symmetric"`` claims the form [[a, b], [b, a]] instead (w21 = +w12): false in steps 3 and 4.
    """
    if condition not in ("rotation", "symmetric"):
        raise ValueError(f"condition must be 'rotation' or 'symmetric', got {condition!r}")
    i, j, _ = _positions()
    omega = sp.Symbol("omega", positive=True)
    delta, s = sp.symbols("delta s", integer=True)
    w11, w12, w21, w22 = sp.symbols("w_11 w_12 w_21 w_22", real=True)
    w = sp.Matrix([[w11, w12], [w21, w22]])
    sign = -1 if condition == "rotation" else 1
    steps = [verify_equal("the encoding is a turned vector", "p_t = R(-t ω) (0, 1)", _sinusoid(i, omega),
                          rotation(-i * omega) * sp.Matrix([0, 1]), simplify=_trig, scope="definition",
                          variables=("t", "ω"))]  # cos and sin of -tω evaluate to the same entries at once

    def form(p, q, matrix):
        return _dot(p, matrix * q)

    split = (sp.Rational(1, 2) * ((w11 + w22) * sp.cos(delta * omega) + (w21 - w12) * sp.sin(delta * omega))
             + sp.Rational(1, 2) * ((w22 - w11) * sp.cos(s * omega) + (w12 + w21) * sp.sin(s * omega)))
    steps.append(verify_equal(
        "the bilinear form splits into a δ part and an i + j part",
        "p_i^T W p_j = ½[(w11+w22) cos δω + (w21-w12) sin δω] + ½[(w22-w11) cos sω + (w12+w21) sin sω]",
        form(_sinusoid(i, omega), _sinusoid(j, omega), w), split.subs({delta: j - i, s: i + j}), simplify=_trig,
        scope="general", variables=("i", "j", "ω", "W")))

    a, b = sp.symbols("a b", real=True)
    claimed = sp.Matrix([[a, b], [sign * b, a]])
    steps.append(verify_equal(
        f"if: W = [[a, b], [{'-' if sign < 0 else ''}b, a]] gives a function of j - i",
        "p_i^T W p_j = p_0^T W p_(j-i) for all i, j",
        form(_sinusoid(i, omega), _sinusoid(j, omega), claimed),
        form(_sinusoid(0, omega), _sinusoid(j - i, omega), claimed), simplify=_trig, scope="general",
        variables=("i", "j", "ω", "a", "b")))
    m, limits = _blocks()
    a_m, b_m = sp.IndexedBase("a", real=True)[m], sp.IndexedBase("b", real=True)[m]
    omega_m = sp.IndexedBase("omega", positive=True)[m]
    block_m = sp.Matrix([[a_m, b_m], [sign * b_m, a_m]])
    steps.append(verify_equal(
        "if: the sum over M frequencies", "Σ_m p_i^(m)T W_m p_j^(m) = Σ_m p_0^(m)T W_m p_(j-i)^(m)",
        sp.Sum(form(_sinusoid(i, omega_m), _sinusoid(j, omega_m), block_m), limits),
        sp.Sum(form(_sinusoid(0, omega_m), _sinusoid(j - i, omega_m), block_m), limits),
        simplify=_termwise(_trig), scope="general", variables=("i", "j", "M", "ω_m", "a_m", "b_m")))

    def shift(x, y):  # E(x + 1, y + 1) - E(x, y): zero for every function of y - x
        return (form(_sinusoid(x + 1, omega), _sinusoid(y + 1, omega), w)
                - form(_sinusoid(x, omega), _sinusoid(y, omega), w))

    equations = [_trig(shift(0, -1)), _trig(shift(0, 0))]
    solutions = sp.solve(equations, [w22, w21], dict=True)
    found = (sp.Matrix([solutions[0][w22], solutions[0][w21]]) if len(solutions) == 1
             else sp.Matrix([sp.Symbol("no_unique_solution"), 0]))
    steps.append(verify_equal(
        "only if: invariance under a common shift forces the form",
        f"E(i+1, j+1) = E(i, j) at (0, -1) and (0, 0) ⇒ w22 = w11, w21 = {'-' if sign < 0 else ''}w12",
        found, sp.Matrix([w11, sign * w12]), simplify=sp.simplify, scope="general", variables=("ω", "W")))
    return combine(
        f"sinusoidal p_i^T W p_j depends on j - i iff each block is [[a, b], [{'-' if sign < 0 else ''}b, a]]",
        "p_i^T W p_j is a function of j - i for all i, j iff W = [[a, b], [-b, a]] on each frequency's block",
        steps, scope="general", variables=("i", "j", "ω", "W", "M"),
        latex=r"p_i^\top W p_j = f(j - i) \iff W_m = \begin{bmatrix} a_m & b_m \\ "
              + ("-" if sign < 0 else "") + r"b_m & a_m \end{bmatrix}")


def rotary_constant_content_kernel(kernel: str = "offset", phases: bool = True,
                                   renormalize: bool = True) -> ProofResult:
    """RoPE with the same query q and key k at every position is a lightweight convolution whose kernel logits are a
    sum of cosines at RoPE's frequencies.

    Steps (one 2 × 2 block, then the sum over M blocks; q, k, θ, i, j symbolic):

    1. (R_i q)·(R_j k) = a cos δθ + b sin δθ with δ = j - i, a = q·k and b = q_2 k_1 - q_1 k_2: a function of δ.
    2. a cos x + b sin x = r cos(x + φ) with r = √(a² + b²) = ‖q‖ ‖k‖ and φ = atan2(-b, a) (for (a, b) ≠ 0).
    3. Every (a, b) is reached: q = (1, 0), k = (a, -b). So the kernel logits reachable by a head are exactly the
       trigonometric polynomials Σ_m a_m cos δθ_m + b_m sin δθ_m, a space of dimension at most D_h.
    4. Softmax over the keys j = 0 .. N-1 of any logit e(j - i) is the renormalised lightweight convolution with
       2N - 1 taps and kernel β = softmax(e) (symbolic in N, i and the function e).

    False variants: ``kernel="flipped"`` reads the kernel at i - j; ``phases=False`` claims Σ_m r_m cos δθ_m (an
    even kernel); ``renormalize=False`` claims the zero-padded convolution at the ends.
    """
    if kernel not in ("offset", "flipped"):
        raise ValueError(f"kernel must be 'offset' or 'flipped', got {kernel!r}")
    i, j, _ = _positions()
    delta = relative_offset(i, j) if kernel == "offset" else i - j

    def cosines(th, q, k):
        a, b = _dot(q, k), q[1] * k[0] - q[0] * k[1]
        return a * sp.cos(delta * th) + b * sp.sin(delta * th)

    steps = [_block_and_sum("constant content: the logit is a kernel over δ = j - i",
                            "(R_i q)·(R_j k) = (q·k) cos δθ + (q_2 k_1 - q_1 k_2) sin δθ, δ = j - i",
                            lambda th, q, k: _dot(rotation(i * th) * q, rotation(j * th) * k), cosines,
                            ("q", "k"), ("i", "j"))]
    q, k = _vector("q"), _vector("k")
    x = sp.Symbol("x", real=True)
    a, b = _dot(q, k), q[1] * k[0] - q[0] * k[1]
    phase = sp.atan2(-b, a) if phases else sp.Integer(0)
    steps.append(verify_equal(
        "amplitude and phase", "a cos x + b sin x = √(a² + b²) cos(x + φ), φ = atan2(-b, a)",
        a * sp.cos(x) + b * sp.sin(x), sp.sqrt(a**2 + b**2) * sp.cos(x + phase),
        simplify=lambda e: sp.simplify(sp.expand_trig(e)), scope="general", variables=("x", "q", "k")))
    steps.append(verify_equal("the amplitude is |q| |k|", "a² + b² = |q|² |k|² (Lagrange's identity)",
                              a**2 + b**2, _dot(q, q) * _dot(k, k), simplify=sp.expand, scope="general",
                              variables=("q", "k")))
    alpha, beta_ = sp.symbols("alpha beta", real=True)
    reach = {q[0]: 1, q[1]: 0, k[0]: alpha, k[1]: -beta_}
    steps.append(verify_equal("every (a, b) is reached", "q = (1, 0), k = (a, -b) give q·k = a, q_2 k_1 - q_1 k_2 = b",
                              sp.Matrix([a, b]).subs(reach), sp.Matrix([alpha, beta_]), simplify=sp.expand,
                              scope="definition", variables=("a", "b")))  # a substitution, checked
    steps.append(_softmax_of_offset_kernel(renormalize))
    return combine(
        "RoPE with constant content = lightweight conv with a kernel of cosines",
        "(R_i q)·(R_j k) = Σ_m r_m cos((j-i)θ_m + φ_m); softmax over it = renormalised lightweight conv",
        steps, scope="general", variables=("N", "i", "j", "M", "θ_m", "q", "k"),
        latex=r"e(\delta) = \sum_m r_m \cos(\delta\theta_m + \varphi_m),\ \delta = j - i")


def _softmax_of_offset_kernel(renormalize: bool = True) -> ProofResult:
    """Softmax over the N keys of logits e(j - i), any function of the offset, is Σ_δ β_δ x_{i+δ} / Σ_δ β_δ over
    the offsets δ = -i .. N-1-i that exist, β = softmax(e) over the 2N - 1 taps. Symbolic in N, i and e."""
    i, after = sp.symbols("i r", integer=True, nonnegative=True)
    j, delta, eps = sp.symbols("j delta epsilon", integer=True)
    n = i + 1 + after
    logit, x = sp.Function("e"), sp.IndexedBase("x", real=True)
    attention = attention_row(lambda key: logit(relative_offset(i, key)), x, j, 0, n - 1)
    beta = sp.exp(logit(delta)) / sp.Sum(sp.exp(logit(eps)), (eps, 1 - n, n - 1))
    conv = sp.Sum(beta * x[i + delta], (delta, -i, n - 1 - i))
    if renormalize:
        conv = conv / sp.Sum(beta, (delta, -i, n - 1 - i))
    return verify_equal(
        "softmax over a kernel of the offset = renormalised lightweight conv",
        "softmax_j(e(j-i)) · x = Σ_δ β_δ x_(i+δ) / Σ_δ β_δ, β = softmax(e) over 2N - 1 taps",
        reindex(attention, j, i, delta), conv, simplify=sum_simplify, scope="general", variables=("N", "i", "e"))


def rotary_content_kernel(query_sign: int = 1, key_sign: int = -1) -> ProofResult:
    """RoPE with content: the logit (R_i q_i)·(R_j k_j) = q_i^T R_δ k_{i+δ} is a kernel over δ = j - i that depends
    on the query token *and* on the key token it reads.

    1. With the same key k at every position, it is Shaw et al.'s query-dependent term q_i·a_δ with the relative
       embedding a_δ = R_δ k: a dynamic lightweight convolution predicted from the query (unclipped).
    2. With the same query q at every position, it is the key-dependent term c_δ·k_j of DeBERTa with
       c_δ = R_{-δ} q = R_δ^T q: a dynamic convolution predicted from the token read.

    One 2 × 2 block, then the sum over M blocks; symbolic in i, j, θ and the vectors. With both varying, the kernel
    q_i^T R_δ k_{i+δ} depends on two tokens, like the content term, and is not a convolution in general (a
    counterexample is checked numerically). ``query_sign=-1`` claims a_δ = R_{-δ} k and ``key_sign=1`` claims
    c_δ = R_δ q (both false).
    """
    for name, value in (("query_sign", query_sign), ("key_sign", key_sign)):
        if value not in (1, -1):
            raise ValueError(f"{name} must be 1 or -1, got {value!r}")
    i, j, _ = _positions()
    delta = relative_offset(i, j)
    shaw = _block_and_sum(
        "constant keys: Shaw's term with a_δ = R_δ k", "(R_i q_i)·(R_j k) = q_i·a_(j-i), a_δ = R_δ k",
        lambda th, q, k: _dot(rotation(i * th) * q, rotation(j * th) * k),
        lambda th, q, k: _dot(q, rotation(query_sign * delta * th) * k), ("q", "k"), ("i", "j"))
    deberta = _block_and_sum(
        "constant queries: the key-dependent term with c_δ = R_(-δ) q",
        "(R_i q)·(R_j k_j) = c_(j-i)·k_j, c_δ = R_(-δ) q",
        lambda th, q, k: _dot(rotation(i * th) * q, rotation(j * th) * k),
        lambda th, q, k: _dot(rotation(key_sign * delta * th) * q, k), ("q", "k"), ("i", "j"))
    return combine(
        "RoPE with content = query- and key-dependent kernels",
        "constant keys: q_i·(R_δ k) (query-dependent); constant queries: (R_(-δ) q)·k_j (key-dependent)",
        [shaw, deberta], scope="general", variables=("i", "j", "M", "θ_m", "q", "k"),
        latex=r"(R_i q_i)^\top (R_j k_j) = q_i^\top R_\delta\, k_{i+\delta}, \quad \delta = j - i")
