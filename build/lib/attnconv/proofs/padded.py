"""Theorem 1 of Cordonnier et al. 2020 on the zero-padded canvas, its 1-D case, dilation and stride, and what goes
wrong without padding. Re-exported by :mod:`attnconv.proofs.image`.

The padded input is defined from the image: X̃_k = X_k for k inside the image (0 ≤ k_a ≤ H_a - 1 on every axis)
and 0 outside. MHSA attends over the keys of the padded canvas (-p .. H - 1 + p per axis), each head's weights the
derived α → ∞ limit of its logit (:func:`~attnconv.proofs.limit.axis_limit`), and the output is cropped to the
convolution's grid. Without padding a head sees only the image: its limit is one-hot on the *nearest existing*
key (derived from the logit for targets left and right of the image), so at the border it reads a pixel where the
convolution reads zero, and in the interior the two agree.

Conventions: a query at q attends to the key at k = q + δ; the convolution is the cross-correlation
y_q = Σ_a X̃_{s q + d a - p} W_a (PyTorch's).
"""

from __future__ import annotations

import itertools

import sympy as sp

from ._symbolic import alpha, hard_limits
from .encoding import centre_offset, hard_attention_limit, softmax_factorization
from .heads import lemma1_block_identity
from .limit import AxisLimit, axis_limit, decide_conditions, encoding_logit, nonnegative
from .rank import rank_condition
from .result import ProofResult, verify_equal

__all__ = ["theorem1", "one_dimensional_case", "dilation_and_stride", "unpadded_boundary_refutation",
           "border_lemmas", "zero_padded"]

_int = dict(integer=True)
_pos_int = dict(integer=True, positive=True)


def zero_padded(x: sp.IndexedBase, index: tuple[sp.Expr, ...], size: list[sp.Expr]) -> sp.Expr:
    """X̃ at ``index``, defined from X: X[index] when every axis lies in 0..size_a - 1, else 0 (the padding)."""
    *pixel, channel = index
    inside = sp.And(*(sp.And(k >= 0, k <= n - 1) for k, n in zip(pixel, size)))
    return sp.Piecewise((x[index], inside), (0, True))


def border_lemmas() -> tuple[ProofResult, ProofResult]:
    """Without padding, a head whose target lies off the image attends, as α → ∞, to the nearest existing key.

    Left of the image: the centre is c = -1 - n + f (n ≥ 0, f < 1/2, i.e. f = 1/2 - h with h > 0), and every key
    1 + m (m ≥ 0) has a logit at least 2α below key 0's. Right of the image (H keys): c = H + n + f with f > -1/2,
    and every key H - 2 - m is at least 2α below key H - 1. With these gaps the hard-limit squeeze puts weight 1 on
    key 0 (resp. H - 1). Symbolic in H, n, m, h and α.
    """
    n, m = sp.symbols("n m", integer=True, nonnegative=True)
    key, h = sp.Symbol("k", integer=True), sp.Symbol("h", positive=True)
    height = sp.Symbol("H", **_pos_int)
    out = []
    for name, centre, winner, loser in (("left", -1 - n + (sp.Rational(1, 2) - h), 0, 1 + m),
                                        ("right", height + n + (h - sp.Rational(1, 2)), height - 1, height - 2 - m)):
        logit = encoding_logit([key], [centre])
        margin = sp.expand((logit.subs(key, winner) - logit.subs(key, loser)) / alpha) - 2
        out.append(ProofResult(f"a target {name} of the image: the border key wins by a gap 2α",
                               f"ℓ({winner}) - ℓ({loser}) ≥ 2α for every m ≥ 0, centre {centre}",
                               sp.Integer(0) if nonnegative(margin) else margin, scope="general",
                               variables=("H", "n", "m", "f", "α")))
    return out[0], out[1]


def _existing_key_cases(limit: AxisLimit, key: sp.Expr, position: sp.Expr, size: sp.Expr) -> list[tuple]:
    """The limit weight of ``key`` over the image's keys 0..size-1 only: (weight, condition) for a target inside the
    image (the derived limit), left of it (key 0 wins) and right of it (key size - 1 wins), by :func:`border_lemmas`."""
    target = position + limit.nearest
    nearest, _ = hard_limits(-1, 1)
    return [(limit.weight(key, position), sp.And(target >= 0, target <= size - 1)),
            (nearest * sp.KroneckerDelta(key, 0), target < 0),
            (nearest * sp.KroneckerDelta(key, size - 1), target > size - 1)]


def _padded_conv(dims: int, *, offset: sp.Expr = 0, sign: int = -1, strided: bool = False,
                 dilated_centers: bool = True, padded: bool = True, interior: bool = False,
                 coefficient: int = -2) -> tuple[sp.Expr, list[ProofResult]]:
    """MHSA with one derived-limit head per tap, cropped, minus the convolution, summed over channels and taps.

    Per axis: kernel size K = a + b + 1 (tap a, b ≥ 0 taps after it), padding p ≥ 0, stride s, dilation d, output
    index q ≥ 0 with r ≥ 0 pixels to spare after it, so the input has H = s q + d (K - 1) + 1 - 2p + r pixels; the
    query sits at the canvas position s q. With ``interior=True`` the query is any one whose receptive field lies
    inside the image: position p + e and H = e + d (K - 1) + 1 + r (e, r ≥ 0). The head for tap a is centred on
    d a - p (+ ``offset``). ``padded``: it attends over the canvas keys -p .. H-1+p of X̃ (:func:`zero_padded`);
    otherwise over the image's keys 0 .. H-1 of X, where its limit is the nearest existing key. The convolution
    reads X̃_{s q + d a - p}. Every condition on where a target lies is decided symbolically where it can be.
    """
    tap = sp.symbols(f"a1:{dims + 1}", integer=True, nonnegative=True)
    after = sp.symbols(f"b1:{dims + 1}", integer=True, nonnegative=True)
    q = sp.symbols(f"q1:{dims + 1}", integer=True, nonnegative=True)
    spare = sp.symbols(f"e1:{dims + 1}", integer=True, nonnegative=True)
    rest = sp.symbols(f"r1:{dims + 1}", integer=True, nonnegative=True)
    pad = sp.symbols(f"p1:{dims + 1}", integer=True, nonnegative=True)
    stride = sp.symbols(f"s1:{dims + 1}", **_pos_int) if strided else (1,) * dims
    dil = sp.symbols(f"d1:{dims + 1}", **_pos_int) if strided else (1,) * dims
    k = sp.symbols(f"k1:{dims + 1}", **_int)
    i, o = sp.symbols("i o", **_int)
    d_in = sp.Symbol("D_in", **_pos_int)
    xt, x, w = sp.IndexedBase("X̃"), sp.IndexedBase("X"), sp.IndexedBase("W")
    if interior:
        position = [pad[a] + spare[a] for a in range(dims)]
        size = [spare[a] + dil[a] * (tap[a] + after[a]) + 1 + rest[a] for a in range(dims)]
    else:
        position = [stride[a] * q[a] for a in range(dims)]
        size = [position[a] + dil[a] * (tap[a] + after[a]) + 1 - 2 * pad[a] + rest[a] for a in range(dims)]
    limits = [axis_limit((dil[a] if dilated_centers else 1) * tap[a] - pad[a] + centre_offset(offset), sign,
                         coefficient) for a in range(dims)]
    if padded:
        weight = sp.Mul(*(limits[a].weight(k[a], position[a]) for a in range(dims)))
        ranges = [(k[a], -pad[a], size[a] - 1 + pad[a]) for a in range(dims)]
        head = decide_conditions(sp.piecewise_fold(sp.Sum(weight * xt[(*k, i)], *ranges[::-1]).doit()))
        head = head.replace(lambda e: isinstance(e, sp.Indexed) and e.base == xt,
                            lambda e: zero_padded(x, e.indices, size))  # X̃ defined from X
    else:  # attention over the image itself: the limit is the nearest existing key on each axis
        cases = [_existing_key_cases(limits[a], k[a], position[a], size[a]) for a in range(dims)]
        pieces = []
        for combo in itertools.product(*cases):
            weight = sp.Mul(*(c[0] for c in combo))
            ranges = [(k[a], 0, size[a] - 1) for a in range(dims)]
            pieces.append((sp.Sum(weight * x[(*k, i)], *ranges[::-1]).doit(), sp.And(*(c[1] for c in combo))))
        head = sp.piecewise_fold(sp.Piecewise(*pieces[:-1], (pieces[-1][0], True)))
    conv = zero_padded(x, (*(position[a] + dil[a] * tap[a] - pad[a] for a in range(dims)), i), size)
    difference = decide_conditions(sp.piecewise_fold(head - conv))
    summand = sp.expand(sp.piecewise_fold(difference * w[(*tap, i, o)]))
    kernel = sp.symbols(f"K1:{dims + 1}", **_pos_int)  # each tap's residual vanishes for every a ≤ K - 1
    taps = [(tap[a], 0, kernel[a] - 1) for a in range(dims)]
    residual = summand if summand == 0 else sp.Sum(summand, (i, 0, d_in - 1), *taps)
    return residual, [limit.proof for limit in limits] + ([] if padded else list(border_lemmas()))


def unpadded_boundary_refutation(padded: bool = False) -> ProofResult:
    """Refutation: without padding, the construction fails at the border. Verified when the refutation holds.

    At the query q = 0 the head for the tap Δ = -1 - n (n ≥ 0) sees only the keys 0..H-1 (H symbolic). Over those
    keys the logit is largest at key 0 and every key 1 + m (m ≥ 0) is at least 3α below it, so the limit is
    one-hot on key 0 and the head reads X_0; the zero-padded convolution reads X̃_{-1-n}, which is 0 because -1-n
    lies outside 0..H-1. The difference X_0 is not identically zero (the witness X_0 = 1 gives 1), for every H and
    every such tap: that is what verifies. ``padded=True`` tries to refute the padded construction instead (the
    head attends over the canvas -p .. H-1+p with p ≥ 1 + n, reads X̃_{-1-n} = 0, the difference is 0): that
    refutation must fail.
    """
    n, m, extra = sp.symbols("n m c", integer=True, nonnegative=True)
    key, i = sp.symbols("k i", **_int)
    height = sp.Symbol("H", **_pos_int)
    target = -1 - n
    logit = encoding_logit([key], [target])
    margin = sp.expand((logit.subs(key, 0) - logit.subs(key, 1 + m)) / alpha) - 3
    gap = ProofResult("key 0 is the nearest existing key, by a gap 3α",
                      "ℓ(0) - ℓ(1 + m) ≥ 3α for every m ≥ 0 when the target is -1 - n",
                      sp.Integer(0) if nonnegative(margin) else margin, scope="general", variables=("n", "m", "α"))
    x, xt = sp.IndexedBase("X"), sp.IndexedBase("X̃")
    nearest = hard_limits(-1, 1)[0]
    if padded:  # the canvas holds the target: the derived limit is one-hot on it, and it reads the padding
        pad = 1 + n + extra
        head = sp.Sum(nearest * sp.KroneckerDelta(key, target) * xt[key, i], (key, -pad, height - 1 + pad)).doit()
    else:
        head = sp.Sum(nearest * sp.KroneckerDelta(key, 0) * x[key, i], (key, 0, height - 1)).doit()
    head = decide_conditions(head).replace(lambda e: isinstance(e, sp.Indexed) and e.base == xt,
                                           lambda e: zero_padded(x, e.indices, [height]))
    conv = zero_padded(x, (target, i), [height])
    difference = decide_conditions(sp.piecewise_fold(head - conv))
    witness = difference.replace(lambda e: isinstance(e, sp.Indexed) and e.base == x, lambda e: sp.Integer(1))
    shown = witness.is_number and witness != 0
    return ProofResult("without padding, a border head reads the nearest pixel (refutation)",
                       f"at q = 0, tap Δ = -1 - n: MHSA - Conv = {difference}"
                       + (" ≠ 0 (witness X_0 = 1)" if shown else ": no non-zero witness, nothing refuted"),
                       sp.Integer(0) if shown else sp.Integer(1), scope="general",
                       variables=("H", "n", "α"), steps=(gap,))
def theorem1(offset: sp.Expr = 0, sign: int = -1, padded: bool = True, interior: bool = False) -> ProofResult:
    """Theorem 1 (2-D): a multi-head self-attention layer with N_h = K² heads, D_h ≥ rank W_Δ, the quadratic
    encoding with centres on the taps Δ = a - p, α → ∞, on the zero-padded input with the output cropped to the
    convolution's output grid, computes the K x K convolution y_q = Σ_a X̃_{q+a-p} W_a.

    Symbolic in the image size H x W, the kernel size K, the padding p, D_in, D_out and the output pixel q
    (``_padded_conv``): the pad-attend-crop step is derived for every size, X̃ is defined from X with zeros
    outside the image, and each head's attention is the derived limit of its logit.

    True variants: ``offset=1/3`` (off-grid centres, each with a unique nearest key); ``padded=False,
    interior=True`` (without padding, every output whose receptive field lies inside the image is still the
    convolution). False variants: ``offset=1/2`` (ties), ``sign=+1`` (no interior maximum), ``padded=False``
    (attention over the unpadded image: at the border a head reads the nearest pixel where the convolution reads
    zero; the residual is that pixel, and :func:`unpadded_boundary_refutation` is a step).
    """
    residual, limits = _padded_conv(2, offset=offset, sign=sign, padded=padded, interior=interior)
    steps = [hard_attention_limit(), softmax_factorization(), lemma1_block_identity(), rank_condition(), *limits]
    if not padded and not interior:
        steps.append(unpadded_boundary_refutation())
    where = "every output whose receptive field lies inside the image" if interior else "every output"
    return ProofResult(
        "MHSA with K² quadratic heads = K×K convolution (the paper's Theorem 1, 2-D)"
        + ("" if padded else ", without padding"),
        f"α→∞, centres on the taps, {'zero padding then crop' if padded else 'no padding'}, D_h ≥ rank W_Δ: "
        f"MHSA(X)_q = Σ_Δ X̃_{{q+Δ}} W_Δ at {where}",
        residual, scope="general", variables=("H", "W", "K", "p", "D_in", "D_out", "q"), steps=tuple(steps),
    )


def one_dimensional_case(center_coefficient: int = -2, sign: int = -1, offset: sp.Expr = 0) -> ProofResult:
    """The 1-D case: the encoding r_δ = (δ², δ) (D_p = 2) with v = -α(1, c Δ), c = -2, centres each head on Δ, and
    K heads compute the 1-D convolution y_q = Σ_a X̃_{q+a-p} W_a for any length, K, padding and channels.

    The head's centre is derived, not assumed: completing the square gives logits -α(δ - δ*)² + const with
    δ* = -c Δ / 2. ``center_coefficient=2`` puts the head on -Δ: a flipped kernel (false); ``sign=+1`` is the
    encoding with the opposite sign (false); ``offset=1/3`` off-grid centres (true).
    """
    delta, center = sp.symbols("delta Delta", **_int)
    logit = -alpha * (delta**2 + center_coefficient * center * delta)
    peak = sp.solve(sp.diff(logit, delta), delta)[0]
    square = verify_equal("completing the square", "-α(δ² + cΔδ) = -α(δ - δ*)² + α δ*², δ* = -cΔ/2",
                          logit, -alpha * (delta - peak) ** 2 + alpha * peak**2, simplify=sp.expand,
                          scope="general", variables=("α", "δ", "Δ"))
    residual, limits = _padded_conv(1, offset=offset, sign=sign, coefficient=center_coefficient)
    return ProofResult(
        "1-D case (D_p = 2)",
        f"r_δ = (δ², δ), v = -α(1, {center_coefficient}Δ): K heads at α→∞ give y_q = Σ_Δ X̃_{{q+Δ}} W_Δ",
        residual, scope="general", variables=("N", "K", "p", "D_in", "D_out", "q"),
        steps=(square, hard_attention_limit(), *limits),
    )


def dilation_and_stride(dilated_centers: bool = True, sign: int = -1, offset: sp.Expr = 0) -> ProofResult:
    """Dilation d and stride s: heads centred on d a - p, with the output read at the canvas queries s q, compute
    the dilated, strided convolution y_q = Σ_a X̃_{s q + d a - p} W_a (PyTorch's). Symbolic in s, d, K, p, the
    image size, the channels and q, on the zero-padded canvas (``_padded_conv``).

    ``dilated_centers=False`` centres the heads on a - p, as if the dilation were ignored (false); ``sign=+1``
    is the encoding with the opposite sign (false).
    """
    residual, limits = _padded_conv(2, offset=offset, sign=sign, strided=True, dilated_centers=dilated_centers)
    return ProofResult(
        "dilation and stride",
        "heads centred on d⊙a - p, output read at s⊙q: y_q = Σ_a X̃_{s⊙q + d⊙a - p} W_a",
        residual, scope="general", variables=("s", "d", "H", "W", "K", "p", "D_in", "D_out", "q"),
        steps=(hard_attention_limit(), *limits),
    )



