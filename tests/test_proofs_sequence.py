"""SymPy proofs of the sequence equivalences: each claim verifies, and its false variant does not."""

from __future__ import annotations

import pytest

from attnconv.proofs import ProofResult
from attnconv.proofs import sequence as proofs

TRUE_AND_FALSE = [
    (proofs.fixed_bias_is_lightweight_conv, dict(positions="interior", boundary="zeros"),
     dict(positions="all", boundary="zeros")),
    (proofs.fixed_bias_is_lightweight_conv, dict(positions="all", boundary="renormalize"),
     dict(positions="all", boundary="zeros", length=5, max_distance=1)),
    (proofs.clipped_bias_tails, dict(), dict(tails="zero")),
    (proofs.query_dependent_is_dynamic_conv, dict(), dict(scaled=False)),
    (proofs.dynamic_kernel_rank, dict(head_dim=2), dict(head_dim=2, claimed_rank=1)),
    (proofs.key_dependent_is_dynamic_conv, dict(), dict(predictor="query")),
    (proofs.composite_is_sum_of_kernels, dict(), dict(key_predictor="query")),
    (proofs.alibi_kernel_decay, dict(), dict(rate=2)),
    (proofs.alibi_kernel_decay, dict(causal=True), dict(causal=True, rate=2)),
    (proofs.bucketed_kernel_is_piecewise_constant, dict(), dict(merge_adjacent=True)),
]


@pytest.mark.parametrize("proof, true_kwargs, false_kwargs", TRUE_AND_FALSE,
                         ids=lambda v: getattr(v, "__name__", None) or str(v))
def test_claim_verifies_and_false_variant_does_not(proof, true_kwargs, false_kwargs):
    result = proof(**true_kwargs)
    assert isinstance(result, ProofResult) and result.verified, result
    wrong = proof(**false_kwargs)
    assert not wrong.verified, f"a false statement was reported verified: {wrong}"
    assert "NOT verified" in repr(wrong) and "verified" in result._repr_markdown_()


def test_larger_instances():
    assert proofs.fixed_bias_is_lightweight_conv(length=7, max_distance=3, positions="interior").verified
    assert proofs.query_dependent_is_dynamic_conv(length=5, embed_dim=3, head_dim=1, max_distance=2).verified
    assert proofs.composite_is_sum_of_kernels(length=5, embed_dim=2, head_dim=2, max_distance=2).verified
    assert proofs.dynamic_kernel_rank(embed_dim=4, head_dim=2, max_distance=2).verified


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: proofs.fixed_bias_is_lightweight_conv(positions="edges"), "positions must be"),
        (lambda: proofs.fixed_bias_is_lightweight_conv(length=3, max_distance=2), "length must be at least"),
        (lambda: proofs.clipped_bias_tails(tails="none"), "tails must be"),
        (lambda: proofs.key_dependent_is_dynamic_conv(predictor="value"), "predictor must be"),
    ],
)
def test_bad_arguments(call, message):
    with pytest.raises(ValueError, match=message):
        call()
