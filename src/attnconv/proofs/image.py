"""SymPy proofs of the claims behind Theorem 1 of Cordonnier et al. 2020 (multi-head attention ⊇ convolution).

Each function builds both sides of one claim from symbols and returns a
:class:`~attnconv.proofs.result.ProofResult` with the simplified residual. The arguments are the
construction's ingredients, defaulting to the paper's; changing one (a sign, a block order) must make the claim
fail, which is how the tests check that nothing here is a foregone ``True``.
"""

from __future__ import annotations

import itertools

import sympy as sp

from .result import ProofResult, verify_equal

__all__ = [
    "quadratic_identity",
    "shift_invariance",
    "hard_attention_limit",
    "lemma1_block_identity",
    "rank_bound",
    "one_dimensional_case",
    "softmax_factorization",
]

alpha = sp.Symbol("alpha", positive=True)
_t = sp.Symbol("t", positive=True)  # t = e^{-α}


def quadratic_identity(dims: int = 2, center_coefficient: int = -2) -> ProofResult:
    """Lemma 2: v · r_δ = -α(‖δ - Δ‖² - ‖Δ‖²) for r_δ = (‖δ‖², δ) and v = -α(1, c Δ) with c = -2."""
    delta = sp.Matrix(sp.symbols(f"delta1:{dims + 1}", real=True))
    center = sp.Matrix(sp.symbols(f"Delta1:{dims + 1}", real=True))
    r = sp.Matrix([delta.dot(delta), *delta])
    v = -alpha * sp.Matrix([1, *(center_coefficient * center)])
    lhs = v.dot(r)
    rhs = -alpha * ((delta - center).dot(delta - center) - center.dot(center))
    return verify_equal(
        f"quadratic identity ({dims}-D)",
        "v·r_δ = -α(‖δ-Δ‖² - ‖Δ‖²) with r_δ = (‖δ‖², δ), v = -α(1, -2Δ)",
        sp.expand(lhs), sp.expand(rhs), simplify=sp.expand,
    )


def shift_invariance(n: int = 4, per_entry: bool = False) -> ProofResult:
    """softmax(x + c 1) = softmax(x): adding one value to a whole row of logits changes nothing.

    ``per_entry=True`` adds a different value to each entry instead (a false statement).
    """
    x = sp.symbols(f"x1:{n + 1}", real=True)
    c = sp.symbols(f"c1:{n + 1}", real=True) if per_entry else (sp.Symbol("c", real=True),) * n

    def softmax(z):
        total = sum(sp.exp(zi) for zi in z)
        return sp.Matrix([sp.exp(zi) / total for zi in z])

    lhs = softmax([xi + ci for xi, ci in zip(x, c)])
    return verify_equal("shift invariance of softmax", "softmax(x + c·1) = softmax(x)", lhs, softmax(x),
                        simplify=lambda e: sp.simplify(sp.powsimp(sp.expand(e))))


def hard_attention_limit(kernel_size: int = 3, sign: int = -1) -> ProofResult:
    """On a K x K grid of offsets, lim_{α→∞} softmax_δ(-α‖δ - Δ‖²) is the indicator of δ = Δ, for every Δ.

    ``sign=+1`` uses +α‖δ - Δ‖² instead (a false statement: it picks the farthest offsets).
    """
    r = kernel_size // 2
    grid = [(a, b) for a in range(-r, kernel_size - r) for b in range(-r, kernel_size - r)]
    cache: dict[tuple[int, ...], sp.Expr] = {}
    residual = sp.zeros(len(grid), len(grid))
    for i, center in enumerate(grid):
        dist = [(d[0] - center[0]) ** 2 + (d[1] - center[1]) ** 2 for d in grid]
        for j, own in enumerate(dist):
            # softmax_j = 1 / Σ_δ' e^{sign α (d' - d_j)}: the limit depends only on the exponents.
            # With t = e^{-α} (t -> 0+ as α -> ∞) it is the rational function 1 / Σ t^{-exponent}.
            key = tuple(sorted(sign * (d - own) for d in dist))
            if key not in cache:
                cache[key] = sp.limit(1 / sum(_t ** (-e) for e in key), _t, 0, "+")
            residual[i, j] = cache[key] - (1 if grid[j] == center else 0)
    return verify_equal(
        f"hard-attention limit on a {kernel_size}x{kernel_size} grid",
        "lim_{α→∞} softmax_δ(-α‖δ-Δ‖²) = 1[δ = Δ] for every centre Δ of the grid",
        residual, sp.zeros(len(grid), len(grid)),
    )


def _shift_matrix(grid: tuple[int, ...], delta: tuple[int, ...]) -> sp.Matrix:
    """S_Δ with (S_Δ X)_q = X_{q+Δ} (0 off the grid): the attention matrix of a hard head on a padded grid."""
    cells = list(itertools.product(*(range(n) for n in grid)))
    index = {cell: i for i, cell in enumerate(cells)}
    s = sp.zeros(len(cells), len(cells))
    for cell, i in index.items():
        target = tuple(c + d for c, d in zip(cell, delta))
        if target in index:
            s[i, index[target]] = 1
    return s


def lemma1_block_identity(grid: tuple[int, ...] = (2, 3), kernel_size: int = 3, d_in: int = 2, d_h: int = 2,
                          d_out: int = 2, swap_blocks: bool = False) -> ProofResult:
    """Lemma 1: with one-hot heads A^(h) = S_Δh, concat_h[A^(h) X W_val^(h)] W_out = Σ_h S_Δh X W_Δh,
    where W_Δh = W_val^(h) W_out^(h) and W_out stacks the blocks W_out^(h).

    ``swap_blocks=True`` stacks the output blocks in the wrong order (a false statement).
    """
    r = kernel_size // 2
    shifts = list(itertools.product(range(-r, kernel_size - r), repeat=len(grid)))
    n = 1
    for side in grid:
        n *= side
    x = sp.Matrix(n, d_in, lambda i, j: sp.Symbol(f"x_{i}_{j}"))
    w_val = [sp.Matrix(d_in, d_h, lambda i, j, h=h: sp.Symbol(f"v{h}_{i}{j}")) for h in range(len(shifts))]
    w_out = [sp.Matrix(d_h, d_out, lambda i, j, h=h: sp.Symbol(f"o{h}_{i}{j}")) for h in range(len(shifts))]
    blocks = list(reversed(w_out)) if swap_blocks else w_out
    heads = sp.Matrix.hstack(*(_shift_matrix(grid, d) * x * w_val[h] for h, d in enumerate(shifts)))
    lhs = heads * sp.Matrix.vstack(*blocks)
    rhs = sp.zeros(n, d_out)
    for h, d in enumerate(shifts):
        rhs += _shift_matrix(grid, d) * x * (w_val[h] * w_out[h])
    return verify_equal(
        f"Lemma 1 block identity (grid {grid}, K={kernel_size})",
        "concat_h[A^(h) X W_val^(h)] W_out = Σ_Δ shift_Δ(X) W_Δ with W_Δh = W_val^(h) W_out^(h)",
        lhs, rhs, simplify=sp.expand,
    )


def rank_bound(d_in: int = 3, d_h: int = 1, d_out: int = 3, claimed_rank: int | None = None) -> ProofResult:
    """rank(W_val W_out) ≤ D_h: every (D_h + 1)-minor of the product of generic D_in x D_h and D_h x D_out
    matrices vanishes identically. ``claimed_rank`` below D_h gives a false statement."""
    k = d_h if claimed_rank is None else claimed_rank
    w_val = sp.Matrix(d_in, d_h, lambda i, j: sp.Symbol(f"v_{i}{j}"))
    w_out = sp.Matrix(d_h, d_out, lambda i, j: sp.Symbol(f"o_{i}{j}"))
    product = w_val * w_out
    minors = [
        product.extract(list(rows), list(cols)).det()
        for rows in itertools.combinations(range(d_in), k + 1)
        for cols in itertools.combinations(range(d_out), k + 1)
    ]
    residual = sp.Matrix(minors) if minors else sp.zeros(1, 1)
    return verify_equal(
        f"rank bound (D_in={d_in}, D_h={d_h}, D_out={d_out}, rank ≤ {k})",
        f"all ({k + 1})-minors of W_val W_out vanish, so rank W_Δ ≤ {k}",
        residual, sp.zeros(*residual.shape), simplify=sp.expand,
    )


def one_dimensional_case(center_coefficient: int = -2) -> ProofResult:
    """The 1-D case: r_δ = (δ², δ) (D_p = 2) and v = -α(1, -2Δ) give -α((δ - Δ)² - Δ²)."""
    result = quadratic_identity(dims=1, center_coefficient=center_coefficient)
    return ProofResult("1-D quadratic encoding (D_p = 2)", result.statement.replace("‖", "|"), result.residual,
                       result.verified)


def softmax_factorization(rows: int = 2, cols: int = 3, coupled: bool = False) -> ProofResult:
    """softmax over an H x W grid of logits a_i + b_j is softmax(a)_i · softmax(b)_j: P = P_row ⊗ P_col.

    ``coupled=True`` adds a term c·a_i·b_j that couples the axes (a false statement).
    """
    a = sp.symbols(f"a1:{rows + 1}", real=True)
    b = sp.symbols(f"b1:{cols + 1}", real=True)
    c = sp.Symbol("c", real=True)
    logit = [[a[i] + b[j] + (c * a[i] * b[j] if coupled else 0) for j in range(cols)] for i in range(rows)]
    total = sum(sp.exp(logit[i][j]) for i in range(rows) for j in range(cols))
    lhs = sp.Matrix(rows, cols, lambda i, j: sp.exp(logit[i][j]) / total)
    za, zb = sum(sp.exp(ai) for ai in a), sum(sp.exp(bj) for bj in b)
    rhs = sp.Matrix(rows, cols, lambda i, j: (sp.exp(a[i]) / za) * (sp.exp(b[j]) / zb))
    return verify_equal(
        "softmax factorisation over a grid",
        "softmax_{(i,j)}(a_i + b_j) = softmax(a)_i softmax(b)_j, so P = P_row ⊗ P_col",
        lhs, rhs, simplify=lambda e: sp.simplify(sp.expand(sp.powsimp(e))),
    )
