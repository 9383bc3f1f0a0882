"""SymPy proofs of chapter 08's claims: what followed Cordonnier et al. 2020 and Chang et al. 2021.

- :func:`ssm_is_conv_and_masked_attention` (Dao & Gu 2024): a scalar-decay SSM is a causal convolution with
  kernel c a^k b and masked linear attention with the 1-semiseparable mask a^{t-s}; by induction over t, symbolic
  in a, b, c, the input, the length T and the step t.
- :func:`relative_softmax_is_stochastic` (Luo et al. 2022): with any logits inside the softmax (content plus
  relative positions), every row of attention sums to one, so a constant input comes out unchanged; symbolic in
  the length N, the query and the logits. A Toeplitz multiplier breaks it.
- :func:`patch_tokens_express_conv` (Li et al. 2021): a K x K convolution on pixels is a (2R+1)-tap convolution
  on P x P patch tokens, R = ceil(r / P); checked with symbolic weights and inputs on named instances of P and r
  (one axis: the 2-D construction is the product of two such axes).

Each takes arguments that turn it into a plausible wrong statement, which it must reject.
"""

from __future__ import annotations

import math

import sympy as sp

from ._symbolic import sum_simplify
from .result import ProofResult, combine, verify_equal

__all__ = ["patch_tokens_express_conv", "relative_softmax_is_stochastic", "ssm_is_conv_and_masked_attention"]


def _mask(a: sp.Expr, t: sp.Expr, s: sp.Expr, power_shift: int, causal: bool) -> sp.Expr:
    """L_{ts} = a^{t-s} for t ≥ s and 0 above the diagonal (``power_shift`` adds to the power; ``causal=False``
    puts a^{s-t} above the diagonal). Decided by the assumptions on t - s, never assumed."""
    return sp.Piecewise((a ** (t - s + power_shift), sp.Ge(t, s)), (a ** (s - t) if not causal else 0, True))


def ssm_is_conv_and_masked_attention(power_shift: int = 0, causal: bool = True) -> ProofResult:
    """h_t = a h_{t-1} + b x_t, y_t = c h_t (h_{-1} = 0) gives, at every step 0 ≤ t ≤ T - 1,

    y_t = Σ_{k=0}^{t} (c a^k b) x_{t-k}   (a causal convolution)
        = Σ_{s=0}^{T-1} L_{ts} (c b) x_s, L_{ts} = a^{t-s} if t ≥ s else 0   (masked linear attention).

    Steps: h_t = Σ_{s=0}^{t} a^{t-s} b x_s by induction over t (base t = 0, step t -> t + 1, each symbolic); then
    the masked sum, split at s = t, equals the convolution, with T = t + 1 + r (r ≥ 0) symbolic and the mask's
    two cases decided from s = t - m and s = t + 1 + m (m ≥ 0). Symbolic in a, b, c, x, t and T.

    Wrong variants: ``power_shift=1`` (a mask a^{t-s+1}), ``causal=False`` (``a^{|t-s|}``: the future leaks in).
    """
    a, b, c = sp.symbols("a b c", real=True)
    t, m, r, k = sp.symbols("t m r k", integer=True, nonnegative=True)
    s = sp.Symbol("s", integer=True)
    x = sp.IndexedBase("x", real=True)

    def state(step):  # the claimed closed form of h_step
        return sp.Sum(a ** (step - s) * b * x[s], (s, 0, step))

    base = verify_equal("base case t = 0", "h_0 = a h_(-1) + b x_0 = b x_0 is the closed form at t = 0",
                        a * 0 + b * x[0], state(0), simplify=lambda e: sp.expand(e.doit()), scope="general",
                        variables=("a", "b", "x"))
    # h_{t+1} = a h_t + b x_{t+1}, with the last term of the closed form split off
    step_lhs = a * state(t) + b * x[t + 1]
    step_rhs = sp.Sum(a ** (t + 1 - s) * b * x[s], (s, 0, t)) + (a ** 0 * b * x[t + 1])
    step = verify_equal("inductive step", "a Σ_(s≤t) a^(t-s) b x_s + b x_(t+1) = Σ_(s≤t+1) a^(t+1-s) b x_s",
                        step_lhs, step_rhs, simplify=lambda e: sp.simplify(sum_simplify(sp.expand(e))),
                        scope="general", variables=("a", "b", "x", "t"))
    conv = sp.Sum(c * a ** k * b * x[t - k], (k, 0, t))
    output = c * state(t)  # y_t = c h_t
    as_conv = verify_equal("the SSM is a causal convolution", "c Σ_(s≤t) a^(t-s) b x_s = Σ_(k=0)^t (c a^k b) x_(t-k)",
                           output, conv,
                           simplify=sum_simplify, scope="general", variables=("a", "b", "c", "x", "t"))
    past = sp.Sum(_mask(a, t, t - m, power_shift, causal) * c * b * x[t - m], (m, 0, t))
    future = sp.Sum(_mask(a, t, t + 1 + m, power_shift, causal) * c * b * x[t + 1 + m], (m, 0, r - 1))
    masked = verify_equal(
        "the SSM is masked linear attention",
        "Σ_(s=0)^(T-1) L_ts (c b) x_s = Σ_(k=0)^t (c a^k b) x_(t-k), L_ts = a^(t-s) for t ≥ s, else 0; T = t+1+r",
        past + future, conv.subs(k, m), simplify=sum_simplify, scope="general",
        variables=("a", "b", "c", "x", "t", "T"))
    return combine("scalar SSM = causal conv = masked attention",
                   "y_t = Σ_k c a^k b x_(t-k) = Σ_s L_ts c b x_s with the 1-semiseparable mask L_ts = a^(t-s) (t ≥ s)",
                   [base, step, as_conv, masked], scope="induction", variables=("a", "b", "c", "x", "t", "T"),
                   latex=r"y_t=\sum_{k=0}^{t} c\,a^{k} b\,x_{t-k}=\sum_{s=0}^{T-1} L_{ts}\,c\,b\,x_s,"
                         r"\quad L_{ts}=a^{t-s}\ (t\ge s),\ 0\ (t<s)")


def relative_softmax_is_stochastic(multiplier: bool = False, keys: str = "all") -> ProofResult:
    """Attention whose logits e_{ij} (content plus relative positions, any values) sit inside the softmax over
    the keys j = 0 .. N - 1 maps a constant input x_j = v to v at every query i: Σ_j A_ij v = v, since every row
    of A sums to one. Symbolic in N, i, the logits e and v.

    Wrong variants: ``multiplier=True`` multiplies A by a Toeplitz matrix c_{j-i} (Luo et al.'s fix: the claim
    then fails); ``keys="one short"`` normalises over all N keys but sums the output over the first N - 1.
    """
    n = sp.Symbol("N", integer=True, positive=True)
    i, j, l = sp.symbols("i j l", integer=True)
    v = sp.Symbol("v", real=True)
    e, cz = sp.IndexedBase("e", real=True), sp.IndexedBase("c", real=True)
    z = sp.Sum(sp.exp(e[i, l]), (l, 0, n - 1))
    weight = sp.exp(e[i, j]) / z * (cz[j - i] if multiplier else 1)
    last = n - 1 if keys == "all" else n - 2
    out = sp.Sum(weight * v, (j, 0, last))
    return verify_equal("relative positions inside the softmax keep rows stochastic",
                        "Σ_j softmax_j(e_ij) v = v for any logits e_ij = q_i·k_j + w_(j-i) over N keys",
                        out, v, simplify=sum_simplify, scope="general", variables=("N", "i", "e", "v"),
                        latex=r"\sum_{j=0}^{N-1}\frac{e^{e_{ij}}}{\sum_{l}e^{e_{il}}}\,v=v")


_PATCH_INSTANCES = ((1, 1), (2, 1), (2, 2), (2, 3), (3, 1), (3, 4), (4, 2), (4, 5))  # (P, r): inside and beyond 2P+1


def patch_tokens_express_conv(reach: str = "ceil", index: str = "key-query",
                              instances: tuple[tuple[int, int], ...] = _PATCH_INSTANCES) -> ProofResult:
    """On one axis, a "same" zero-padded convolution with taps w_{-r..r} over L = 4P pixels (4 patches) equals the
    patch-token convolution of the construction: output pixel u of patch I reads pixel s of patch I + dI with
    the weight w_{dI P + s - u} (0 beyond r), for ``|dI| ≤ R = ceil(r / P)``, so 2R + 1 patch taps (per axis; heads
    (2R + 1)² in 2-D). Symbolic in the weights w and the pixels x; instances of (P, r) named in the result.

    Wrong variants: ``reach="floor"`` (R = floor(r / P): too few heads), ``index="query-key"`` (the weight
    w_{dI P + u - s}: the in-patch positions swapped).
    """
    w, x = sp.IndexedBase("w", real=True), sp.IndexedBase("x", real=True)
    steps = []
    for p, r in instances:
        big = math.ceil(r / p) if reach == "ceil" else r // p
        length = 4 * p

        def pixel(q):
            return x[q] if 0 <= q < length else 0

        diffs = []
        for out in range(length):
            direct = sum(w[d] * pixel(out + d) for d in range(-r, r + 1))
            patch, u = divmod(out, p)
            via = 0
            for di in range(-big, big + 1):
                for s in range(p):
                    offset = di * p + s - u if index == "key-query" else di * p + u - s
                    if abs(offset) <= r:
                        via += w[offset] * pixel((patch + di) * p + s)
            diffs.append(sp.expand(direct - via))
        steps.append(verify_equal(f"P = {p}, r = {r}", f"pixel conv = patch conv with {2 * big + 1} patch taps",
                                  sp.Matrix(diffs), sp.zeros(length, 1), simplify=sp.expand, scope="instance",
                                  instance=f"P = {p}, r = {r}, 4 patches", numeric=False))
    names = ", ".join(f"(P, r) = ({p}, {r})" for p, r in instances)
    return combine("a convolution on pixels is a convolution on patch tokens",
                   "w * x = the patch convolution with taps w_(dI P + s - u), |dI| ≤ ceil(r/P); (2R+1)² heads in 2-D",
                   steps, scope="instance", instance=f"{names}; symbolic weights and pixels",
                   latex=r"(w*x)_{IP+u}=\sum_{|d_I|\le\lceil r/P\rceil}\sum_{s=0}^{P-1}"
                         r"w_{d_I P+s-u}\,x_{(I+d_I)P+s}")
