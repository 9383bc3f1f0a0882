"""SymPy proofs about relative terms with a fixed kernel shape (Chang et al. 2021, chapter 05): ALiBi's geometric
kernel, derived from its logits with the causal mask and the normaliser, and T5's bucketed kernel. Re-exported by
:mod:`attnconv.proofs.sequence`.
"""

from __future__ import annotations

import itertools

import sympy as sp
import torch

from ..positional.sequence import relative_position_bucket
from .conventions import relative_offset
from .limit import decide_conditions, nonnegative
from .result import ProofResult, combine, verify_equal

__all__ = ["alibi_kernel_decay", "alibi_weights", "bucketed_kernel_is_piecewise_constant", "t5_bucket"]


def _geometric(expr: sp.Expr) -> sp.Expr:
    """Evaluate geometric sums, dropping their ratio-equals-one branch when the ratio is provably not 1."""
    def rule(eq: sp.Eq) -> sp.Basic:
        return sp.false if (eq.lhs - eq.rhs).is_zero is False or (sp.log(eq.lhs) - sp.log(eq.rhs)).is_zero is False \
            else eq
    return sp.piecewise_fold(expr.doit()).replace(lambda e: isinstance(e, sp.Eq), rule)


def alibi_weights(causal: bool):
    """The softmax weights of one ALiBi row, derived from the logits -m abs(j - i) and the causal mask.

    The query i has i keys before it and r after it (N = i + 1 + r). The keys are written j = i - t (t = 0..i,
    the query and the past) and j = i + 1 + s (s = 0..r-1, the future); the mask keeps j ≤ i when ``causal``.
    Returns (past weight A_{i,i-t}, future weight A_{i,i+1+s}, normaliser Z, symbols (m, i, r, t, s)).
    """
    m = sp.Symbol("m", positive=True)
    i, r, t, s = sp.symbols("i r t s", integer=True, nonnegative=True)

    def mask(key):  # 1 on the keys the head may read, 0 on the masked (future) ones
        return sp.Piecewise((1, key <= i), (0, True)) if causal else sp.Integer(1)

    def unnormalised(key):
        return mask(key) * sp.exp(-m * sp.Abs(relative_offset(i, key)))

    z = _geometric(sp.Sum(unnormalised(i - t), (t, 0, i)) + sp.Sum(unnormalised(i + 1 + s), (s, 0, r - 1)))
    return unnormalised(i - t) / z, unnormalised(i + 1 + s) / z, z, (m, i, r, t, s)


def alibi_kernel_decay(causal: bool = False, rate: int = 1, future_weight: bool = False,
                       causal_normaliser: bool = True) -> ProofResult:
    """ALiBi is a lightweight convolution with a geometric kernel, derived from its logits -m abs(j - i), its
    causal mask and its normaliser. With ρ = e^{-m}, a query i with i keys before it and r after it (N = i + 1 + r):

    - causal: A_{i,i-t} = ρ^t / Z with Z = (e^m - e^{-m i}) / (e^m - 1) = (1 - ρ^{i+1}) / (1 - ρ) for t = 0..i,
      and A_{i,i+1+s} = 0 (the mask);
    - bidirectional: A_{i,i-t} = ρ^t / Z and A_{i,i+1+s} = ρ^{1+s} / Z with
      Z = (e^m - e^{-m i} + 1 - e^{-m r}) / (e^m - 1) = (1 - ρ^{i+1}) / (1 - ρ) + ρ (1 - ρ^r) / (1 - ρ);

    so each step away from the query multiplies the weight by ρ. Symbolic in N (through r), i, t, s and m.

    False variants: ``rate=2`` claims a decay of ρ² per step (and the kernel that goes with it);
    ``future_weight=True`` claims that the causal head still gives the future keys ρ^{1+s}/Z (the mask ignored);
    ``causal_normaliser=False`` claims the causal weights with the bidirectional normaliser (the mask ignored in Z).
    """
    past, future, z, (m, i, r, t, s) = alibi_weights(causal)
    rho = sp.exp(-rate * m)
    # the closed forms, written over e^{rate m} - 1: (1 - ρ^{i+1})/(1 - ρ) and ρ(1 - ρ^r)/(1 - ρ)
    geometric_past = (sp.exp(rate * m) - sp.exp(-rate * m * i)) / (sp.exp(rate * m) - 1)
    z_bidirectional = geometric_past + (1 - sp.exp(-rate * m * r)) / (sp.exp(rate * m) - 1)
    z_claim = geometric_past if causal and causal_normaliser else z_bidirectional
    claimed_future = 0 if causal and not future_weight else rho ** (1 + s) / z_claim
    kind = "causal" if causal else "bidirectional"
    normaliser = verify_equal(f"the normaliser ({kind}), a geometric sum over the keys the mask keeps",
                              "Z = Σ_t ρ^t" + ("" if causal else " + Σ_s ρ^{1+s}"), z,
                              geometric_past if causal else z_bidirectional, simplify=sp.simplify,
                              scope="general", variables=("N", "i", "m"))
    weights = verify_equal(f"the weights of the row ({kind})",
                           f"A_(i,i-t) = ρ^t/Z, A_(i,i+1+s) = {'0 (masked)' if causal else 'ρ^(1+s)/Z'}",
                           sp.Matrix([past, future]), sp.Matrix([rho**t / z_claim, claimed_future]),
                           simplify=sp.simplify, scope="general", variables=("N", "i", "t", "s", "m"))
    ratios = [past.subs(t, t + 1) / past] + ([] if causal else [future.subs(s, s + 1) / future])
    decay = verify_equal(f"each step away from the query multiplies the weight by e^(-{rate}m)",
                         "A_(i,i-t-1)/A_(i,i-t) = ρ" + ("" if causal else ", A_(i,i+2+s)/A_(i,i+1+s) = ρ"),
                         sp.Matrix(ratios), sp.Matrix([rho] * len(ratios)), simplify=sp.simplify,
                         scope="general", variables=("N", "i", "t", "s", "m"))
    return combine(f"ALiBi kernel decays by e^(-{rate}m) per step ({kind})",
                   f"softmax_j(-m|j-i|{', j ≤ i' if causal else ''}) is the renormalised convolution with the "
                   f"kernel ρ^|δ|, ρ = e^(-{rate}m)" + ("; the future keys weigh 0" if causal else ""),
                   [normaliser, weights, decay], scope="general", variables=("N", "i", "t", "s", "m"))


def t5_bucket(delta: sp.Expr, num_buckets: int, max_distance: int) -> sp.Expr:
    """T5's bucket of the offset δ = key - query, as a SymPy expression in δ (an integer or an integer symbol).

    With half = num_buckets // 2, exact = num_buckets // 4 and d = abs(δ): d itself when d < exact, else
    min(half - 1, exact + floor(log(max(d, 1)/exact) / log(k/exact) · (half - exact))); plus half when δ > 0.
    This is the formula ``attnconv.positional.band.relative_position_bucket`` computes in float64; here it is exact,
    and :func:`bucketed_kernel_is_piecewise_constant` holds the library to it.
    """
    half, exact = num_buckets // 2, num_buckets // 4
    distance = sp.Abs(delta)
    ratio = sp.log(sp.Max(distance, 1) / sp.Integer(exact)) / sp.log(sp.Rational(max_distance, exact))
    far = sp.Min(exact + sp.floor(ratio * (half - exact)), half - 1)
    return sp.Piecewise((distance, distance < exact), (far, True)) + sp.Piecewise((half, delta > 0), (0, True))


def _nondecreasing(expr: sp.Expr, m: sp.Symbol) -> bool:
    """``expr`` is provably nondecreasing in the integer m ≥ 0: a sum of such terms, a nonnegative constant times
    one, floor, ceiling, Min or Max of such, or a derivative SymPy shows ≥ 0. Sound, incomplete."""
    if m not in expr.free_symbols:
        return True
    if isinstance(expr, sp.Add):
        return all(_nondecreasing(arg, m) for arg in expr.args)
    if isinstance(expr, sp.Mul):
        constant, rest = expr.as_independent(m, as_Add=False)
        if constant != 1 and constant.is_nonnegative is True:
            return _nondecreasing(rest, m)
    if isinstance(expr, (sp.floor, sp.ceiling)):
        return _nondecreasing(expr.args[0], m)
    if isinstance(expr, (sp.Min, sp.Max)):
        return all(_nondecreasing(arg, m) for arg in expr.args)
    if expr.has(sp.Piecewise, sp.Mod, sp.floor, sp.ceiling, sp.Min, sp.Max, sp.Abs):
        return False
    try:
        slope = sp.diff(expr, m)
    except (TypeError, ValueError, NotImplementedError):
        return False
    return slope.is_nonnegative is True or nonnegative(slope)


def _settle(expr: sp.Expr, m: sp.Symbol) -> sp.Expr:
    """Decide the Min and Max of ``expr`` (a label at an offset k + m, m ≥ 0) that monotonicity settles: A ≥ B for
    every m ≥ 0 when A - B is nondecreasing in m and ≥ 0 at m = 0; the conditions of its Piecewise by
    :func:`~attnconv.proofs.limit.decide_conditions`."""
    for _ in range(8):
        before = expr
        expr = decide_conditions(expr)

        def rule(e: sp.Expr) -> sp.Expr:
            keep = list(e.args)
            for a, b in itertools.permutations(e.args, 2):
                if a in keep and b in keep:
                    gap = sp.expand(a - b)
                    at_zero = gap.subs(m, 0)
                    if _nondecreasing(gap, m) and (at_zero.is_nonnegative is True or nonnegative(at_zero)):
                        keep.remove(b if isinstance(e, sp.Max) else a)  # a ≥ b everywhere
            return type(e)(*keep) if len(keep) > 1 else keep[0]

        expr = expr.replace(lambda e: isinstance(e, (sp.Min, sp.Max)) and m in e.free_symbols, rule)
        if expr == before:
            break
    return expr


_FAR = 2**20  # the library's buckets are compared with the formula at every offset up to this distance


def _library_buckets(num_buckets: int, max_distance: int) -> ProofResult:
    """The library's ``relative_position_bucket`` and the buckets of ``RelativePositionBias`` are T5's formula
    (``t5_bucket``): at every offset with abs(δ) ≤ 2^20 and at ±2^e for e ≤ 62, mismatches counted. Beyond k the
    formula is bucket(±k) at every offset (the tails, proved in :func:`bucketed_kernel_is_piecewise_constant`), so
    there the library is compared with that one bucket, in one vectorised call."""
    from ..positional.sequence import RelativePositionBias

    k = max_distance
    near = list(range(-k, k + 1))
    library = relative_position_bucket(torch.tensor(near), num_buckets, k).tolist()
    mismatches = [d for d, got in zip(near, library) if got != int(t5_bucket(sp.Integer(d), num_buckets, k))]
    reach = torch.cat([torch.arange(k + 1, _FAR + 1), 2 ** torch.arange(0, 63)])  # every distance, then far ones
    reach = reach[reach > k]
    for side in (1, -1):
        edge = int(t5_bucket(sp.Integer(side * k), num_buckets, k))
        got = relative_position_bucket(side * reach, num_buckets, k)
        mismatches += (side * reach[got != edge]).tolist()
    bias = RelativePositionBias(1, k, num_buckets=num_buckets)
    with torch.no_grad():
        bias.weight.copy_(torch.arange(num_buckets, dtype=bias.weight.dtype)[None])  # logit = bucket id
    radius = 3 * k
    kernel = bias.kernel_logits(radius)[0].tolist()
    mismatches += [d for d, got in zip(range(-radius, radius + 1), kernel)
                   if int(got) != int(t5_bucket(sp.Integer(d), num_buckets, k))]
    return ProofResult("the library's buckets are T5's formula",
                       f"relative_position_bucket(δ, {num_buckets}, {k}) = t5_bucket(δ) for |δ| ≤ 2^20 and |δ| = 2^e, "
                       f"e ≤ 62; RelativePositionBias reads bucket(δ) for |δ| ≤ {radius}"
                       + (f"; they differ at δ = {mismatches[:6]}" if mismatches else ""),
                       sp.Integer(len(mismatches)), scope="instance",
                       instance=f"num_buckets={num_buckets}, max_distance={k}, |δ| ≤ 2^20 and |δ| = 2^e (e ≤ 62)")


def _witnesses(difference: sp.Expr, m: sp.Symbol, k: int) -> list[int]:
    """Values of m ≥ 0 to try for a label that leaves the last bucket at δ = ±(k + m): every m up to 4k + 15, the
    offsets next to each constant the label's formula holds (a threshold such as |δ| ≥ 1000), and the powers of 2
    and 10 up to 2^63 and 10^18."""
    constants = {int(sp.floor(c)) for c in difference.atoms(sp.Number) if c.is_finite}
    around = {c + step for c in constants for step in (-k - 1, -k, -k + 1, -1, 0, 1)}
    far = {2**e for e in range(64)} | {10**e for e in range(19)}
    return sorted(w for w in set(range(4 * k + 16)) | around | far if w >= 0)


def bucketed_kernel_is_piecewise_constant(num_buckets: int = 8, max_distance: int = 6, bucket=None,
                                          formula=None) -> ProofResult:
    """T5's bucketed bias gives a lightweight-convolution kernel β_δ = e^{w_bucket(δ)} / Z that

    - is constant beyond the clipping distance on each side, at *every* offset: β_δ = β_{±k} for abs(δ) ≥ k
      (bucketing clips). Proved for δ = ±(k + m) with m ≥ 0 symbolic, by reasoning on the bucket formula: its
      logarithmic part is nondecreasing in m and already reaches the last bucket at m = 0, so the clamp to the last
      bucket decides it;
    - is free near the query: the offsets with abs(δ) < num_buckets / 4 each have their own bucket, so β_δ ≠ β_δ'
      for distinct such offsets (a finite range: the residual counts offsets that share a bucket).

    The labelling is a formula, ``formula(δ, num_buckets, max_distance)`` returning a SymPy expression, by default
    T5's (``t5_bucket``); the default also holds the library's ``relative_position_bucket`` to it (a step).
    A labelling given only by its values, ``bucket(offsets, num_buckets, max_distance)`` returning a list, is
    checked on the offsets up to abs(δ) = k + 3, where a wrong one fails; beyond them nothing is known of it, so
    a labelling that passes there is *not decided*, never verified. Scope: one instance of num_buckets and k.
    """
    k = max_distance
    if bucket is not None and formula is not None:
        raise ValueError("give the labelling as bucket (its values) or as formula, not both")
    exact = num_buckets // 4
    near = [d for d in range(-exact + 1, exact)]
    steps = []
    if bucket is not None:
        offsets = list(range(-k - 3, k + 4))
        labels = dict(zip(offsets, bucket(offsets, num_buckets, k)))
        tails = sp.Matrix([int(labels[d] != labels[k if d > 0 else -k]) for d in offsets if abs(d) >= k])
        window = ProofResult(f"clipped tails for k ≤ |δ| ≤ k + 3 ({num_buckets} buckets, k={k})",
                             "bucket(δ) = bucket(±k) for every listed offset beyond k", tails, scope="instance",
                             instance=f"|δ| ≤ {k + 3}")
        beyond = ProofResult("not decided beyond |δ| = k + 3",
                             "a labelling given only by its values says nothing of the offsets beyond those it "
                             "was asked for: give it as a formula to prove the tails for every offset",
                             sp.Symbol("unknown_beyond_the_window"), scope="general", variables=("δ",),
                             undecided=True)
        steps += [window, beyond]
        shared = sum(1 for d, e in itertools.combinations(near, 2) if labels[d] == labels[e])
    else:
        label = formula or t5_bucket
        m = sp.Symbol("m", integer=True, nonnegative=True)
        tails = []
        for side in (1, -1):
            difference = sp.simplify(_settle(label(side * (k + m), num_buckets, k), m)
                                     - label(sp.Integer(side * k), num_buckets, k))
            if difference == 0:
                tails.append(ProofResult(f"bucket({'+' if side > 0 else '-'}(k + m)) = bucket({side * k})",
                                         f"for every m ≥ 0 (k = {k}, {num_buckets} buckets)", sp.Integer(0),
                                         scope="general", variables=("m ≥ 0",)))
                continue
            witness = next((w for w in _witnesses(difference, m, k)
                            if (value := difference.subs(m, w)).is_number and value.is_zero is False), None)
            tails.append(ProofResult(
                f"bucket({'+' if side > 0 else '-'}(k + m)) ≠ bucket({side * k})" if witness is not None
                else f"bucket({'+' if side > 0 else '-'}(k + m)) = bucket({side * k}): not decided",
                f"bucket(δ) - bucket({side * k}) = {difference}"
                + (f", {difference.subs(m, witness)} at δ = {side * (k + witness)}" if witness is not None else
                   ": not shown to vanish for every m ≥ 0, and no offset tried refutes it (every one up to 5k + 15, "
                   "those next to the formula's constants, powers of 2 and 10 up to 2^63 and 10^18)"),
                difference, scope="general", variables=("m ≥ 0",), undecided=witness is None))
        steps += tails
        if formula is None:
            steps.append(_library_buckets(num_buckets, k))
        values = {d: label(sp.Integer(d), num_buckets, k) for d in near}
        shared = sum(1 for d, e in itertools.combinations(near, 2) if sp.simplify(values[d] - values[e]) == 0)
    steps.append(ProofResult(f"a bucket of its own for each |δ| < {num_buckets}/4",
                             f"no two of the offsets {near} share a bucket", sp.Integer(shared), scope="instance",
                             instance=f"num_buckets={num_buckets}"))
    return combine(
        f"T5-bucketed kernel: clipped tails, free centre ({num_buckets} buckets, k={k})",
        "β_δ = β_(±k) for every |δ| ≥ k, and distinct weights for |δ| < num_buckets/4",
        steps, scope="instance", instance=f"num_buckets={num_buckets}, max_distance={k}",
    )

