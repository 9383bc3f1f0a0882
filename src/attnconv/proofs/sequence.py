"""SymPy proofs of the sequence claims of Chang et al. 2021: relative positions are convolutions.

The core proofs are symbolic in the sequence length N, the clipping distance k, the query position i, the channel
count C and the head dimension D_h: rows of attention are ``Sum`` objects over symbolic key ranges, projections are
sums over symbolic channels or matrix expressions with symbolic shapes, and the kernel β is normalised over its own
taps, so the attention's normaliser has to cancel against it. Each function has an argument that turns the claim
into a false one (a flipped offset, a zero-padded boundary, a missing scale, the wrong token predicting a kernel),
and the tests check that the false version is reported as not verified. ALiBi and T5 buckets live in
``attnconv.proofs.kernels`` and are re-exported here.

Conventions: δ = j - i (key minus query), k = ``max_distance``, clip(δ) = max(-k, min(k, δ)), as the functions of
``attnconv.proofs.conventions``, which a test and a ledger entry hold to the library's band. One channel of
tokens suffices for the claims about the softmax, since a lightweight convolution applies the same kernel to
every channel of a head.
"""

from __future__ import annotations

import sympy as sp

from ._symbolic import minors_above_rank, reindex, sum_simplify
from .conventions import attention_row, causal_keys, clip_offset, kernel_token, relative_offset, window_keys
from .kernels import alibi_kernel_decay, bucketed_kernel_is_piecewise_constant
from .result import ProofResult, combine, verify_equal

__all__ = [
    "fixed_bias_is_lightweight_conv",
    "boundary_renormalisation",
    "clipped_bias_tails",
    "query_dependent_is_dynamic_conv",
    "dynamic_kernel_rank",
    "key_dependent_is_dynamic_conv",
    "composite_is_sum_of_kernels",
    "alibi_kernel_decay",
    "bucketed_kernel_is_piecewise_constant",
]


_clip_symbolic = clip_offset  # the name the proofs below use; defined (and tested) in .conventions


def _matrix(rows: int, cols: int, name: str) -> sp.Matrix:
    return sp.Matrix(rows, cols, lambda r, c: sp.Symbol(f"{name}_{r}{c}", real=True))


def _symbols():
    """Symbolic sizes and indices shared by the general proofs."""
    n, k, c, d = sp.symbols("N k C D_h", integer=True, positive=True)
    i, j, delta, e, ch, dd = sp.symbols("i j delta epsilon c d", integer=True)
    return n, k, c, d, i, j, delta, e, ch, dd


_attention_row = attention_row


def fixed_bias_is_lightweight_conv(offset: str = "key-query", extra_key: bool = False, table: str = "offset",
                                   kernel_index: str = "offset") -> ProofResult:
    """Equivalence 1: attention with logits b_{j-i} on the keys abs(j - i) ≤ k that exist (no content term) is, at
    every query i whose 2k + 1 keys all exist (k ≤ i ≤ N - 1 - k), the lightweight convolution
    Σ_δ β_δ x_{i+δ} with β = softmax(b).

    Symbolic in N, k, i and the bias b: the row's keys are max(0, i-k) .. min(N-1, i+k), with i = k + e and
    N = i + k + 1 + r (e, r ≥ 0 any), so that the sequence's ends are decided, not assumed; the kernel β is
    normalised over its own 2k + 1 taps, so the attention's normaliser must cancel against it.
    ``offset="query-key"`` indexes the bias by i - j (a flipped kernel: false); ``extra_key=True`` lets the
    head see the keys up to i + k + 1, one more than the kernel, wherever that key exists (false).
    Boundary queries are :func:`boundary_renormalisation`.

    Written forms that keep it true (each sum is compared in one written form, by ``sum_simplify`` of
    ``attnconv.proofs._symbolic``): ``table="column"`` stores the bias by its band column t = δ + k, as the library does (logit
    c_{j-i+k}, kernel Σ_{t=0}^{2k} β_t x_{i+t-k}); ``kernel_index="reflected"`` writes the kernel over ε = -δ
    (Σ_ε β_{-ε} x_{i-ε}).
    """
    if offset not in ("key-query", "query-key"):
        raise ValueError(f"offset must be 'key-query' or 'query-key', got {offset!r}")
    if table not in ("offset", "column"):
        raise ValueError(f"table must be 'offset' or 'column', got {table!r}")
    if kernel_index not in ("offset", "reflected"):
        raise ValueError(f"kernel_index must be 'offset' or 'reflected', got {kernel_index!r}")
    _, k, _, _, _, j, delta, e, _, _ = _symbols()
    before, after = sp.symbols("e r", integer=True, nonnegative=True)
    i = k + before  # a query with k keys before it
    n = i + k + 1 + after  # and k keys after it: N - 1 - i ≥ k
    b, x = sp.IndexedBase("b", real=True), sp.IndexedBase("x", real=True)
    shift = k if table == "column" else 0  # the table's index of the offset δ: δ, or the band column δ + k

    def logit(key):
        return b[(relative_offset(i, key) if offset == "key-query" else relative_offset(key, i)) + shift]

    first, last = window_keys(i, k, n)
    if extra_key:
        last = window_keys(i, k + 1, n)[1]
    attention = _attention_row(logit, x, j, first, last)
    lo, hi = -k + shift, k + shift  # the taps, as the table indexes them
    if kernel_index == "reflected":  # Σ_ε β_{-ε} x_{i-ε}, with ε = -δ
        beta = sp.exp(b[-delta + shift]) / sp.Sum(sp.exp(b[-e + shift]), (e, -k, k))
        conv = sp.Sum(beta * x[i - delta], (delta, -k, k))
    else:
        beta = sp.exp(b[delta]) / sp.Sum(sp.exp(b[e]), (e, lo, hi))
        conv = sp.Sum(beta * x[i + delta - shift], (delta, lo, hi))
    return verify_equal(
        "fixed bias = lightweight conv",
        "softmax_j(b_(j-i)) over the keys |j-i| ≤ k of a sequence of N applied to x = Σ_δ β_δ x_(i+δ), "
        "β = softmax(b), for k ≤ i ≤ N-1-k",
        reindex(attention, j, i, delta), conv, simplify=sum_simplify,
        scope="general", variables=("N", "k", "i", "b"),
    )


def boundary_renormalisation(renormalize: bool = True, range_form: str = "keys") -> ProofResult:
    """At any query i of a sequence of N, attention over the keys that exist, j = max(0, i-k) .. min(N-1, i+k),
    is the *renormalised* lightweight convolution Σ_{δ∈T_i} β_δ x_{i+δ} / Σ_{δ∈T_i} β_δ over the offsets
    T_i = max(0, i-k) - i .. min(N-1, i+k) - i (that is, max(-k, -i) .. min(k, N-1-i)), β = softmax(b) over all
    2k + 1 taps. Symbolic in N, k, i (0 ≤ i ≤ N - 1: N = i + 1 + r) and b.

    ``renormalize=False`` compares with the zero-padded convolution Σ_{δ∈T_i} β_δ x_{i+δ} (false at the edges).
    ``range_form="offsets"`` writes T_i as max(-k, -i) .. min(k, N-1-i) instead of max(0, i-k) - i ..
    min(N-1, i+k) - i: the same range (true), compared after ``attnconv.proofs._symbolic.minmax_normal``.
    """
    if range_form not in ("keys", "offsets"):
        raise ValueError(f"range_form must be 'keys' or 'offsets', got {range_form!r}")
    _, k, _, _, _, j, delta, e, _, _ = _symbols()
    i, after = sp.symbols("i r", integer=True, nonnegative=True)
    n = i + 1 + after
    lo, hi = window_keys(i, k, n)  # the keys of the window that exist
    b, x = sp.IndexedBase("b", real=True), sp.IndexedBase("x", real=True)
    attention = _attention_row(lambda key: b[relative_offset(i, key)], x, j, lo, hi)
    beta = sp.exp(b[delta]) / sp.Sum(sp.exp(b[e]), (e, -k, k))
    taps = (lo - i, hi - i) if range_form == "keys" else (sp.Max(-k, -i), sp.Min(k, n - 1 - i))
    conv = sp.Sum(beta * x[i + delta], (delta, *taps))
    if renormalize:
        conv = conv / sp.Sum(beta, (delta, *taps))
    return verify_equal(
        "boundary renormalisation",
        "at every query, attention over existing keys = Σ_{δ∈T_i} β_δ x_(i+δ) / Σ_{δ∈T_i} β_δ (renormalised conv)",
        reindex(attention, j, i, delta), conv, simplify=sum_simplify,
        scope="general", variables=("N", "k", "i", "b"),
    )


def clipped_bias_tails(tails: str = "edge") -> ProofResult:
    """The clipping caveat: attention with the clipped bias b_{clip(j-i)} over all N keys is the renormalised
    convolution with the 2N - 1-tap kernel w_δ = b_{clip(δ)} (constant tails equal to the edge weight), whose
    normalised kernel β = softmax(w) cancels. Symbolic in N, k and i.

    ``tails="zero"`` claims instead the 2k + 1-tap kernel (zero weight beyond ±k): false when N > k + 1.
    """
    if tails not in ("edge", "zero"):
        raise ValueError(f"tails must be 'edge' or 'zero', got {tails!r}")
    n, k, _, _, i, j, delta, e, _, _ = _symbols()
    b, x = sp.IndexedBase("b", real=True), sp.IndexedBase("x", real=True)
    attention = _attention_row(lambda key: b[_clip_symbolic(relative_offset(i, key), k)], x, j, 0, n - 1)
    reach = n - 1 if tails == "edge" else k
    beta = sp.exp(b[_clip_symbolic(delta, k)]) / sp.Sum(sp.exp(b[_clip_symbolic(e, k)]), (e, -reach, reach))
    lo, hi = (-i, n - 1 - i) if tails == "edge" else (sp.Max(-k, -i), sp.Min(k, n - 1 - i))
    conv = sp.Sum(beta * x[i + delta], (delta, lo, hi)) / sp.Sum(beta, (delta, lo, hi))
    kernel = "2N-1 taps, w_δ = b_clip(δ)" if tails == "edge" else "2k+1 taps, zero beyond ±k"
    return verify_equal(
        f"clipped bias has constant tails (claim: {kernel})",
        f"softmax_j(b_clip(j-i)) over all keys = renormalised convolution with {kernel}",
        reindex(attention, j, i, delta), conv, simplify=sum_simplify,
        scope="general", variables=("N", "k", "i", "b"),
    )


def _query_logit_identity(scaled: bool = True) -> ProofResult:
    """(x_i W_qry + b_qry)·a_t / sqrt(D_h) = (x_i W^D + b^D)_t for every tap t, W^D = W_qry (R^a)^T / sqrt(D_h),
    b^D = b_qry (R^a)^T / sqrt(D_h): matrix expressions with symbolic N, C, D_h and k."""
    n, k, c, d = sp.symbols("N k C D_h", integer=True, positive=True)
    x, w_q = sp.MatrixSymbol("X", n, c), sp.MatrixSymbol("W_{qry}", c, d)
    b_q, a = sp.MatrixSymbol("b_{qry}", 1, d), sp.MatrixSymbol("R^a", 2 * k + 1, d)
    ones = sp.OneMatrix(n, 1)
    scale = 1 / sp.sqrt(d) if scaled else 1
    w_d, b_d = w_q * a.T * scale, b_q * a.T * scale  # (C, 2k+1), (1, 2k+1)
    lhs = (x * w_q + ones * b_q) * a.T / sp.sqrt(d)  # (N, 2k+1): row i holds query i's logit at every tap
    rhs = x * w_d + ones * b_d
    return verify_equal(
        "Shaw logits = dynamic kernel logits",
        "(x_i W_qry + b_qry)·a_t/√D_h = (x_i W^D + b^D)_t, W^D = W_qry (R^a)^T/√D_h, b^D = b_qry (R^a)^T/√D_h",
        lhs, rhs, simplify=lambda e: sp.expand(e).doit(), scope="general", variables=("N", "C", "D_h", "k"))


def query_dependent_is_dynamic_conv(scaled: bool = True, tails: str = "edge") -> ProofResult:
    """Equivalence 2: a head whose only logits are Shaw et al.'s term (x_i W_qry + b_qry)·a_{clip(j-i)} / sqrt(D_h),
    over all N keys, is the renormalised dynamic lightweight convolution with kernel logits κ_i = x_i W^D + b^D
    read at clip(δ): attention_i = Σ_δ β_i[δ] x_{i+δ} / Σ_δ β_i[δ] over the offsets δ = -i .. N-1-i that exist,
    with β_i = softmax over the 2N - 1 taps of κ_i[clip(δ)]. A kernel predicted from the query token alone.

    Two steps: (1) the logits, as matrix expressions with symbolic N, C, D_h, k (associativity); (2) the softmax
    with clipping, symbolic in N, k, i and the kernel κ (any function of the query and the clipped tap): the
    attention's normaliser cancels against the kernel's, after re-indexing the keys j = i + δ.

    False variants: ``scaled=False`` drops the 1/sqrt(D_h) from W^D and b^D; ``tails="zero"`` claims the 2k + 1-tap
    kernel with zero weight beyond ±k (clipping ignored).
    """
    if tails not in ("edge", "zero"):
        raise ValueError(f"tails must be 'edge' or 'zero', got {tails!r}")
    n, k, _, _, i, j, delta, e, _, _ = _symbols()
    kappa = sp.Function("kappa")  # κ_i[t]: any kernel logit predicted from query i at tap t
    x = sp.IndexedBase("x", real=True)
    attention = _attention_row(lambda key: kappa(i, _clip_symbolic(relative_offset(i, key), k)), x, j, 0, n - 1)
    reach = n - 1 if tails == "edge" else k
    beta = sp.exp(kappa(i, _clip_symbolic(delta, k))) / sp.Sum(sp.exp(kappa(i, _clip_symbolic(e, k))),
                                                               (e, -reach, reach))
    lo, hi = (-i, n - 1 - i) if tails == "edge" else (sp.Max(-k, -i), sp.Min(k, n - 1 - i))
    conv = sp.Sum(beta * x[i + delta], (delta, lo, hi)) / sp.Sum(beta, (delta, lo, hi))
    row = verify_equal(
        "softmax over clipped query kernels = renormalised dynamic conv",
        "softmax_j(κ_i[clip(j-i)]) · x = Σ_δ β_i[δ] x_(i+δ) / Σ_δ β_i[δ], β_i = softmax(κ_i[clip(δ)])",
        reindex(attention, j, i, delta), conv, simplify=sum_simplify,
        scope="general", variables=("N", "k", "i", "κ"))
    return combine(
        "query-dependent term = dynamic conv",
        "softmax_j((x_i W_qry + b_qry)·a_clip(j-i)/√D_h) = renormalised dynamic conv with kernel logits x_i W^D + b^D",
        [_query_logit_identity(scaled), row], scope="general", variables=("N", "C", "D_h", "k", "i"),
        latex=r"\begin{aligned} &\operatorname{softmax}_j\Big(\frac{q_i \cdot a_{\operatorname{clip}(j-i)}}"
              r"{\sqrt{D_h}}\Big) \\ &= \operatorname{softmax}_j\big((X_i W^D + b^D)_{\operatorname{clip}(j-i)}"
              r"\big), \\ &W^D = \frac{W_{qry} (R^a)^\top}{\sqrt{D_h}} \end{aligned}",
    )


def dynamic_kernel_rank(embed_dim: int = 3, head_dim: int = 1, max_distance: int = 1,
                        claimed_rank: int | None = None) -> ProofResult:
    """W^D = W_qry [a_{-k} ... a_k]^T / sqrt(D_h) has rank ≤ D_h: every (D_h + 1)-minor vanishes identically.

    A query-dependent relative term is therefore a *low-rank* dynamic convolution when D_h < min(C, 2k+1).
    ``claimed_rank`` below D_h gives a false statement.
    """
    c, d, k = embed_dim, head_dim, max_distance
    r = d if claimed_rank is None else claimed_rank
    w_d = _matrix(c, d, "W_qry") * _matrix(2 * k + 1, d, "a").T / sp.sqrt(d)
    residual = minors_above_rank(w_d, r)
    return verify_equal(
        f"rank W^D ≤ {r} (C={c}, D_h={d}, k={k})",
        f"all ({r + 1})-minors of W^D = W_qry (R^a)^T/√D_h vanish, so rank W^D ≤ {r}",
        residual, sp.zeros(*residual.shape), simplify=sp.expand,
        scope="instance", instance=f"C={c}, D_h={d}, k={k}",
    )


def _keys_and_kernels():
    """Index-level symbols: token x_{m,c}, projections, relative embeddings and the clipped tap of j - i."""
    n, k, c, d, i, j, delta, e, ch, dd = _symbols()
    x = sp.IndexedBase("x", real=True)
    w_q, w_k = sp.IndexedBase("W_{qry}", real=True), sp.IndexedBase("W_{key}", real=True)

    def project(w, m, col):  # (x_m W)_col = Σ_c x_{m,c} W_{c,col}
        return sp.Sum(x[m, ch] * w[ch, col], (ch, 1, c))

    return n, k, c, d, i, j, delta, dd, project, w_q, w_k


def key_dependent_is_dynamic_conv(predictor: str = "key", clipped: bool = True) -> ProofResult:
    """Equivalence 3: the key-dependent term (x_j W_key)·c_{clip(j-i)} / sqrt(D_h) is a dynamic convolution whose
    weight at offset δ is predicted from the token it reads: κ_i[δ] = γ_{i+δ}[clip(δ)] with
    γ_m[t] = (x_m W_key)·c_t / sqrt(D_h). Symbolic in i, j, C, D_h and k.

    ``predictor="query"`` claims κ_i[δ] = γ_i[clip(δ)], a kernel predicted from the query (false);
    ``clipped=False`` claims κ_i[δ] = γ_{i+δ}[δ], the embedding read without clipping (false).

    Scope ``definition``: κ is defined so that the two sides are the same expression once j = i + δ is
    substituted; SymPy checks the substitution and which token predicts the kernel.
    """
    if predictor not in ("key", "query"):
        raise ValueError(f"predictor must be 'key' or 'query', got {predictor!r}")
    n, k, c, d, i, j, delta, dd, project, _, w_k = _keys_and_kernels()
    emb = sp.IndexedBase("c", real=True)

    def gamma(m, t):
        return sp.Sum(project(w_k, m, dd) * emb[t, dd], (dd, 1, d)) / sp.sqrt(d)

    lhs = sp.Sum(project(w_k, j, dd) * emb[_clip_symbolic(relative_offset(i, j), k), dd], (dd, 1, d)) / sp.sqrt(d)
    reader = kernel_token(i, delta) if predictor == "key" else i
    kernel = gamma(reader, _clip_symbolic(delta, k) if clipped else delta)  # κ_i[δ]
    return verify_equal(
        f"key-dependent term = dynamic conv predicted from the {predictor}",
        f"(x_j W_key)·c_clip(j-i)/√D_h = κ_i[j-i], κ_i[δ] = γ_{'i+δ' if predictor == 'key' else 'i'}[clip(δ)]",
        lhs, kernel.subs(delta, j - i), simplify=sum_simplify,
        scope="definition", variables=("i", "j", "C", "D_h", "k"),
    )


def composite_is_sum_of_kernels(key_predictor: str = "key", fixed_clipped: bool = True) -> ProofResult:
    """Composite attention = softmax of content logits plus a sum of three convolution kernels.

    The logits e_ij = q_i·(x_j W_key)/√D_h + b_clip(δ) + q_i·a_clip(δ)/√D_h + (x_j W_key)·c_clip(δ)/√D_h (δ = j - i) equal
    M_ij + κ_i[δ] with the content matrix M_ij = q_i·(x_j W_key)/√D_h and κ the sum of three relative kernels, each
    built only from what it is claimed to depend on:

    - fixed κ[δ] = b_clip(δ): no token (a lightweight convolution);
    - query κ_i[δ] = (x_i W^D)_clip(δ): the query token (a dynamic convolution, Equivalence 2);
    - key κ_i[δ] = γ_{i+δ}[clip(δ)]: the key token (Equivalence 3).

    The content term is *not* a convolution in any useful sense: writing it as κ_i[δ] = M_{i,i+δ} re-indexes an
    arbitrary N x N matrix. Symbolic in i, j, C, D_h and k. ``key_predictor="query"`` builds the key kernel from
    the query token instead; ``fixed_clipped=False`` reads the fixed kernel at δ, not clip(δ) (false statements).

    Scope ``definition``: the difference of the two sides expands to zero without any simplification; SymPy checks
    the bookkeeping of the four terms, it derives nothing.
    """
    if key_predictor not in ("key", "query"):
        raise ValueError(f"key_predictor must be 'key' or 'query', got {key_predictor!r}")
    n, k, c, d, i, j, delta, dd, project, w_q, w_k = _keys_and_kernels()
    a, emb, b = sp.IndexedBase("a", real=True), sp.IndexedBase("c", real=True), sp.IndexedBase("b", real=True)
    root = sp.sqrt(d)

    def dot(u, v):
        return sp.Sum(u * v, (dd, 1, d)) / root

    t = _clip_symbolic(relative_offset(i, j), k)
    content = dot(project(w_q, i, dd), project(w_k, j, dd))
    logit = content + b[t] + dot(project(w_q, i, dd), a[t, dd]) + dot(project(w_k, j, dd), emb[t, dd])
    tap = _clip_symbolic(delta, k)
    fixed = b[tap] if fixed_clipped else b[delta]
    query = sp.Sum(project(w_q, i, dd) * a[tap, dd], (dd, 1, d)) / root  # (x_i W^D)_tap
    reader = kernel_token(i, delta) if key_predictor == "key" else i
    key = sp.Sum(project(w_k, reader, dd) * emb[tap, dd], (dd, 1, d)) / root  # γ_reader[tap]
    return verify_equal(
        f"composite logits = content + three relative kernels (key kernel from the {key_predictor})",
        "e_ij = M_ij + κ^fixed[δ] + κ^query_i[δ] + κ^key_i[δ] at δ = j - i; only the κ's are convolutions",
        logit, content + (fixed + query + key).subs(delta, j - i), simplify=sum_simplify,
        scope="definition", variables=("i", "j", "C", "D_h", "k"),
        latex=r"\begin{aligned} e_{ij} &= \frac{q_i \cdot X_j W_{key}}{\sqrt{D_h}} + \kappa^{f}[\delta]"
              r" + \kappa^{q}_i[\delta] + \kappa^{k}_i[\delta], \\ \delta &= j - i \end{aligned}",
    )


def causal_bias_is_causal_lightconv(mask_future: bool = True) -> ProofResult:
    """Proposition (chapter 05): attention with logits b_{j-i} on the past keys i - (K-1) ≤ j ≤ i and -inf on the
    future (no content term) is, at every query i ≥ K - 1, the causal lightweight convolution
    Σ_{δ=-(K-1)}^{0} β_δ x_{i+δ} with β = softmax(b) over its K taps. Symbolic in K, i and the bias b.

    ``mask_future=False`` leaves the K - 1 future keys open (false: the head then reads ahead).
    """
    _, _, _, _, i, j, delta, e, _, _ = _symbols()
    taps = sp.Symbol("K", integer=True, positive=True)
    b, x = sp.IndexedBase("b", real=True), sp.IndexedBase("x", real=True)
    first, last = causal_keys(i, taps - 1)
    if not mask_future:
        last = i + taps - 1
    attention = _attention_row(lambda key: b[relative_offset(i, key)], x, j, first, last)
    beta = sp.exp(b[delta]) / sp.Sum(sp.exp(b[e]), (e, 1 - taps, 0))
    conv = sp.Sum(beta * x[i + delta], (delta, 1 - taps, 0))
    return verify_equal(
        "causal bias = causal lightweight conv",
        "softmax_j(b_(j-i)) over i-(K-1) ≤ j ≤ i applied to x = Σ_{δ=-(K-1)}^0 β_δ x_(i+δ), β = softmax(b), i ≥ K-1",
        reindex(attention, j, i, delta), conv, simplify=sum_simplify,
        scope="general", variables=("K", "i", "b"),
    )


__all__ += ["causal_bias_is_causal_lightconv"]
