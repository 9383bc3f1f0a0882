"""SymPy proofs of the sequence equivalences: each claim verifies in general, and its false variant does not."""

from __future__ import annotations

import random

import pytest

from attnconv.proofs import ProofResult
from attnconv.proofs import sequence as proofs

TRUE_AND_FALSE = [
    (proofs.fixed_bias_is_lightweight_conv, {}, dict(offset="query-key")),
    (proofs.boundary_renormalisation, {}, dict(renormalize=False)),
    (proofs.clipped_bias_tails, dict(), dict(tails="zero")),
    (proofs.query_dependent_is_dynamic_conv, dict(), dict(scaled=False)),
    (proofs.dynamic_kernel_rank, dict(head_dim=2), dict(head_dim=2, claimed_rank=1)),
    (proofs.key_dependent_is_dynamic_conv, dict(), dict(predictor="query")),
    (proofs.composite_is_sum_of_kernels, dict(), dict(key_predictor="query")),
    (proofs.alibi_kernel_decay, dict(), dict(rate=2)),
    (proofs.alibi_kernel_decay, dict(causal=True), dict(causal=True, rate=2)),
]


@pytest.mark.parametrize("proof, true_kwargs, false_kwargs", TRUE_AND_FALSE,
                         ids=lambda v: getattr(v, "__name__", None) or str(v))
def test_claim_verifies_and_false_variant_does_not(proof, true_kwargs, false_kwargs):
    result = proof(**true_kwargs)
    assert isinstance(result, ProofResult) and result.verified, result
    wrong = proof(**false_kwargs)
    assert not wrong.verified, f"a false statement was reported verified: {wrong}"
    assert "NOT verified" in repr(wrong) and "NOT verified" not in repr(result)
    assert "✘ NOT verified" in wrong._repr_markdown_() and "✔ verified" in result._repr_markdown_()


def test_bucketed_kernel_rejects_other_labellings():
    assert proofs.bucketed_kernel_is_piecewise_constant().verified
    rng = random.Random(0)
    random_labels = proofs.bucketed_kernel_is_piecewise_constant(
        bucket=lambda offsets, nb, k: [rng.randrange(nb) for _ in offsets])
    assert not random_labels.verified
    unclipped = proofs.bucketed_kernel_is_piecewise_constant(
        bucket=lambda offsets, nb, k: [d + 20 for d in offsets])  # every offset its own bucket: no clipping
    assert not unclipped.verified


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: proofs.fixed_bias_is_lightweight_conv(offset="both"), "offset must be"),
        (lambda: proofs.clipped_bias_tails(tails="none"), "tails must be"),
        (lambda: proofs.key_dependent_is_dynamic_conv(predictor="value"), "predictor must be"),
        (lambda: proofs.composite_is_sum_of_kernels(key_predictor="value"), "key_predictor must be"),
    ],
)
def test_bad_arguments(call, message):
    with pytest.raises(ValueError, match=message):
        call()
