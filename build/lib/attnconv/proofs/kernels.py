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
from .result import ProofResult, combine, verify_equal

__all__ = ["alibi_kernel_decay", "alibi_weights", "bucketed_kernel_is_piecewise_constant"]


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


def bucketed_kernel_is_piecewise_constant(num_buckets: int = 8, max_distance: int = 6,
                                          bucket=None) -> ProofResult:
    """T5's bucketed bias gives a lightweight-convolution kernel β_δ = e^{w_bucket(δ)} / Z that

    - is constant beyond the clipping distance on each side: β_δ = β_{±k} for abs(δ) ≥ k (bucketing clips), and
    - is free near the query: the offsets with abs(δ) < num_buckets / 4 each have their own bucket, so β_δ ≠ β_δ'
      for distinct such offsets (the residual counts offsets that share a bucket).

    ``bucket(offsets, num_buckets, max_distance)`` defaults to ``relative_position_bucket``; any other labelling
    (random labels, no clipping) fails. One instance of num_buckets and k.
    """
    k = max_distance
    bucket = bucket or (lambda d, nb, md: relative_position_bucket(torch.tensor(d), nb, md).tolist())
    offsets = list(range(-k - 3, k + 4))
    labels = dict(zip(offsets, bucket(offsets, num_buckets, k)))
    w = sp.symbols(f"w0:{max(labels.values()) + 1}", real=True)
    z = sum(sp.exp(w[label]) for label in labels.values())
    beta = {d: sp.exp(w[label]) / z for d, label in labels.items()}
    tails = [beta[d] - beta[k if d > 0 else -k] for d in offsets if abs(d) >= k]
    exact = [d for d in offsets if abs(d) < num_buckets // 4]
    shared = sum(1 for d, e in itertools.combinations(exact, 2) if labels[d] == labels[e])
    residual = sp.Matrix([*tails, shared])
    return verify_equal(
        f"T5-bucketed kernel: clipped tails, free centre ({num_buckets} buckets, k={k})",
        "β_δ = β_(±k) for |δ| ≥ k, and distinct weights for |δ| < num_buckets/4",
        residual, sp.zeros(len(tails) + 1, 1), simplify=sp.simplify,
        scope="instance", instance=f"num_buckets={num_buckets}, max_distance={k}",
    )


