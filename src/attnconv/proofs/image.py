"""SymPy proofs of the claims behind Theorem 1 of Cordonnier et al. 2020 (multi-head attention ⊇ convolution).

What SymPy derives here, and what it does not:

- Each head's attention (``attnconv.proofs.encoding``) is derived from the encoding's own logit v·r_δ (:mod:`attnconv.proofs.limit`): the logit
  has an interior maximum at the centre, the nearest key wins by a gap α·g, and the squeeze gives the α → ∞
  limit. It is never typed in as a shift matrix, so the opposite sign fails (no interior maximum) and a
  half-integer centre fails (a named tie), a centre whose fractional part is not known to be below 1/2 fails
  (the condition is named), while an off-grid centre with a unique nearest key still verifies.
- Theorem 1, the 1-D case and dilation/stride (``attnconv.proofs.padded``) sum over the keys of the
  zero-padded canvas with the image size, K, the padding, stride, dilation, the channels and the output pixel
  symbolic. The padded input X̃ is defined from X (zero outside the image), so without padding a border head
  reads the nearest pixel where the convolution reads zero, while the interior still agrees.
- Lemma 1 (``attnconv.proofs.heads``) compares the sum over heads up to a relabelling; the concatenation
  identity is by induction over N_h.
- The finite-α bound (``attnconv.proofs.finite_alpha``) takes the grid weights from the derived logit, proves
  "≤" (so looser bounds verify), and derives the triangle inequality for a weighted sum by induction over keys.
  Taking the limit with M keys and the gap symbolic is SymPy's ``limit``.
- Not derived: that a product of per-axis limits is the 2-D limit beyond the factorisation of the softmax
  (:func:`softmax_factorization`); it is stated in the docstrings.

Every function has arguments that make its claim false (a sign, a centre, a block order) and, where natural, ones
that keep it true (an off-grid centre); ``attnconv.claims`` lists them and the tests run them.

Conventions: a query at q attends to the key at k = q + δ; head h has centre Δ^(h); the input X̃ is X padded with
zeros; the convolution is the cross-correlation y_q = Σ_a X̃_{s q + d a - p} W_a (PyTorch's).
"""

from __future__ import annotations

import sympy as sp

from .encoding import (gaussian_kernel_regression, hard_attention_limit, quadratic_identity, shift_invariance,
                       softmax_factorization)
from .finite_alpha import finite_alpha_bound
from .heads import lemma1_block_identity
from .padded import dilation_and_stride, one_dimensional_case, theorem1, unpadded_boundary_refutation
from .rank import rank_bound, rank_condition, rank_counterexample  # noqa: F401  (Theorem 1's step; kept here for callers)
from .result import ProofResult

__all__ = [
    "conv_is_sum_of_shifts",
    "quadratic_identity",
    "shift_invariance",
    "gaussian_kernel_regression",
    "hard_attention_limit",
    "lemma1_block_identity",
    "theorem1",
    "one_dimensional_case",
    "dilation_and_stride",
    "unpadded_boundary_refutation",
    "finite_alpha_bound",
    "softmax_factorization",
]

_int = dict(integer=True)
_pos_int = dict(integer=True, positive=True)


def conv_is_sum_of_shifts(flipped: bool = False, stride_ignored: bool = False) -> ProofResult:
    """Lemma (chapter 01): a 2-D convolution (PyTorch's cross-correlation) with padding p, dilation d and stride s is
    Σ_a shift_{Δ_a}(X) W_{Δ_a} + b with Δ_a = a ⊙ d - p, read at the outputs s ⊙ q.

    By definition Conv(X)_{q,o} = b_o + Σ_{a, i} X̃_{s⊙q + a⊙d - p, i} w_{o,i,a} with X̃ the zero-padded input, and
    shift_Δ(X)_q = X̃_{q+Δ}. Symbolic in the kernel size, channels, p, d, s and q. ``flipped=True`` uses
    Δ_a = p - a ⊙ d, the textbook convolution that flips the kernel (false for PyTorch's layer).
    """
    a = sp.symbols("a1:3", **_int)
    q = sp.symbols("q1:3", **_int)
    pad, dil, stride = sp.symbols("p1:3", **_int), sp.symbols("d1:3", **_pos_int), sp.symbols("s1:3", **_pos_int)
    i, o = sp.symbols("i o", **_int)
    d_in = sp.Symbol("D_in", **_pos_int)
    k1, k2 = sp.symbols("K1 K2", **_pos_int)
    x, w, b = sp.IndexedBase("X"), sp.IndexedBase("w"), sp.IndexedBase("b")
    sign = -1 if flipped else 1
    shift = [sign * (a[m] * dil[m] - pad[m]) for m in range(2)]  # Δ_a
    read = [stride[m] * q[m] + a[m] * dil[m] - pad[m] for m in range(2)]  # the input pixel PyTorch's layer reads
    conv_summand = x[read[0], read[1], i] * w[o, i, a[0], a[1]]
    at = q if stride_ignored else [stride[m] * q[m] for m in range(2)]
    shift_summand = x[at[0] + shift[0], at[1] + shift[1], i] * w[o, i, a[0], a[1]]
    difference = sp.expand(conv_summand - shift_summand)
    limits = [(i, 0, d_in - 1), (a[0], 0, k1 - 1), (a[1], 0, k2 - 1)]
    residual = difference if difference == 0 else sp.Sum(difference, *limits)
    return ProofResult(
        "convolution = sum of shifted, projected inputs",
        "Conv(X)_q = Σ_a shift_{a⊙d-p}(X)_{s⊙q} W_{a⊙d-p} + b, W_Δ = w_{:,:,a}^T",
        residual, scope="definition", variables=("K1", "K2", "D_in", "D_out", "p", "d", "s", "q"),
    )
