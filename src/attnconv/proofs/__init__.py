"""Symbolic (SymPy) proofs of the book's claims. Each function returns a :class:`~attnconv.proofs.result.ProofResult`.

- :mod:`attnconv.proofs.image`: Cordonnier et al. 2020, all in one namespace: convolution as shifts, and the
  re-exports of ``encoding`` (the quadratic encoding, the hard-attention limit, the softmax
  factorisation), ``heads`` (Lemma 1), ``padded`` (Theorem 1 on the
  zero-padded canvas, 1-D, dilation and stride, the unpadded border) and ``finite_alpha``.
- :mod:`attnconv.proofs.rank`: how much of a tap one head carries (the rank condition, and a counterexample
  to its converse).
- :mod:`attnconv.proofs.sequence`: Chang et al. 2021 (relative biases and embeddings as convolution kernels,
  boundaries), with ``kernels`` (ALiBi, T5 buckets) re-exported, and
  ``conventions`` (the offset and clip every sequence proof uses, checked against the library).
- :mod:`attnconv.proofs.rotary`: sinusoidal and rotary positions (Vaswani et al. 2017, Su et al. 2021): when an
  absolute position acts through the offset, and the kernel of a rotary head.
- :mod:`attnconv.proofs.after`: chapter 08: the scalar SSM as convolution and masked attention (Dao & Gu 2024),
  stochastic rows of softmax attention (Luo et al. 2022), convolution on patch tokens (Li et al. 2021).
- :mod:`attnconv.proofs.limit`: the α → ∞ limit of a quadratic head, derived from the encoding's logit.
- :mod:`attnconv.proofs.result`: :class:`~attnconv.proofs.result.ProofResult` and
  :func:`~attnconv.proofs.result.verify_equal`.

Most proofs take arguments that build false variants of the claim, which the proof must reject, and some take
arguments that keep it true (an off-grid centre), which it must still verify.
"""

from . import after, conventions, encoding, finite_alpha, heads, image, kernels, limit, padded, rank, rotary, sequence
from .result import ProofResult, verify_equal

__all__ = ["ProofResult", "after", "conventions", "encoding", "finite_alpha", "heads", "image", "kernels", "limit", "padded", "rank",
           "rotary", "sequence", "verify_equal"]
