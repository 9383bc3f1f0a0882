"""A claim about every offset is proved for every offset, or states its window: T5's buckets, and the library's."""

from __future__ import annotations

import pytest
import sympy as sp

from attnconv.claims import CLAIMS
from attnconv.proofs.kernels import bucketed_kernel_is_piecewise_constant, t5_bucket


def _opens_at(threshold: int, sides: str = "both"):
    """T5's buckets, except a new bucket from |δ| = threshold on (on one side, or both)."""
    def formula(delta, num_buckets, max_distance):
        far = {"both": sp.Abs(delta) >= threshold, "left": delta <= -threshold, "right": delta >= threshold}[sides]
        return sp.Piecewise((num_buckets, far), (t5_bucket(delta, num_buckets, max_distance), True))
    return formula


@pytest.mark.parametrize("threshold", [7, 10, 37, 1000, 10**6, 30_000_001, 10**15])
@pytest.mark.parametrize("sides", ["both", "left", "right"])
def test_a_bucket_opened_at_any_distance_is_refuted_with_its_offset(threshold, sides):
    """k = 6: a label that leaves the last bucket at |δ| = k + 1, k + 4 (the old window's edge), 5k + 7 or far
    beyond any sequence is refuted, not left undecided, and the failing step names the first offset that moves."""
    result = bucketed_kernel_is_piecewise_constant(formula=_opens_at(threshold, sides))
    assert not result.verified and result.decided, (threshold, sides)
    failed = [step for step in result.steps if not step.verified]
    assert len(failed) == (2 if sides == "both" else 1)
    offsets = {f"at δ = {threshold}", f"at δ = {-threshold}"}
    assert all(any(text in step.statement for text in offsets) for step in failed), [s.statement for s in failed]


@pytest.mark.parametrize("num_buckets, k", [(8, 6), (16, 10), (8, 12)])
def test_true_forms_of_the_buckets_verify_for_every_offset(num_buckets, k):
    """T5's buckets of the clipped offset (clip, then bucket), and T5's buckets with a threshold that changes
    nothing (beyond it the label is the edge bucket it already was), are proved for every m ≥ 0."""
    def clipped_first(delta, nb, kk):
        return t5_bucket(sp.Max(-kk, sp.Min(kk, delta)), nb, kk)

    def same_beyond(delta, nb, kk):
        edge = t5_bucket(sp.Integer(kk), nb, kk) * sp.Piecewise((1, delta > 0), (0, True)) \
            + t5_bucket(sp.Integer(-kk), nb, kk) * sp.Piecewise((1, delta <= 0), (0, True))
        return sp.Piecewise((edge, sp.Abs(delta) >= 1000), (t5_bucket(delta, nb, kk), True))

    for formula in (clipped_first, same_beyond):
        result = bucketed_kernel_is_piecewise_constant(num_buckets=num_buckets, max_distance=k, formula=formula)
        assert result.verified, (formula.__name__, [s.statement for s in result.steps if not s.verified])
        tails = [step for step in result.steps if "k + m" in step.claim]
        assert len(tails) == 2 and all(step.scope == "general" for step in tails)


def test_the_library_step_and_the_claim_state_their_window():
    """Where a step checks the library on offsets, its statement and the ledger's claim say which offsets."""
    result = bucketed_kernel_is_piecewise_constant()
    library = next(step for step in result.steps if step.claim == "the library's buckets are T5's formula")
    assert library.verified and library.scope == "instance"
    assert "|δ| ≤ 2^20" in library.statement and "2^20" in library.instance
    claim = next(c for c in CLAIMS if c.label == "t5-buckets")
    assert "2^20" in claim.statement and "every offset" in claim.statement
    # a labelling given by its values alone is checked on a window and says "not decided" beyond it
    values = bucketed_kernel_is_piecewise_constant(
        bucket=lambda offsets, nb, k: [int(t5_bucket(sp.Integer(d), nb, k)) for d in offsets])
    assert not values.verified and values.status == "not decided"
    assert any("|δ| ≤ 9" in (step.instance or "") for step in values.steps)
