"""Every SymPy proof of Part II verifies its claim, and reports a wrong variant of it as not verified."""

from __future__ import annotations

import pytest

from attnconv.proofs import ProofResult
from attnconv.proofs import image as proofs

CASES = [
    (proofs.quadratic_identity, {}, dict(center_coefficient=2)),
    (proofs.shift_invariance, {}, dict(per_entry=True)),
    (proofs.hard_attention_limit, dict(kernel_size=3), dict(kernel_size=3, sign=1)),
    (proofs.hard_attention_limit, dict(kernel_size=5), dict(kernel_size=5, sign=1)),
    (proofs.lemma1_block_identity, {}, dict(swap_blocks=True)),
    (proofs.lemma1_block_identity, dict(grid=(5,), kernel_size=3), dict(grid=(5,), kernel_size=3, swap_blocks=True)),
    (proofs.rank_bound, {}, dict(d_h=2, claimed_rank=1)),
    (proofs.one_dimensional_case, {}, dict(center_coefficient=1)),
    (proofs.softmax_factorization, {}, dict(coupled=True)),
]


@pytest.mark.parametrize("proof, good, bad", CASES, ids=lambda v: getattr(v, "__name__", None))
def test_claim_verified_and_wrong_variant_rejected(proof, good, bad):
    result = proof(**good)
    assert isinstance(result, ProofResult) and result.verified, result
    wrong = proof(**bad)
    assert not wrong.verified, wrong
    assert wrong.residual != 0


def test_rank_bound_for_several_shapes():
    for d_in, d_h, d_out in [(2, 1, 2), (3, 2, 3), (4, 1, 2)]:
        assert proofs.rank_bound(d_in, d_h, d_out).verified
