"""Every SymPy proof of Part II verifies its claim in general, and reports a wrong variant of it as not verified."""

from __future__ import annotations

import pytest
import sympy as sp
import torch

from attnconv.proofs import ProofResult
from attnconv.proofs import image as proofs

CASES = [
    (proofs.conv_is_sum_of_shifts, {}, dict(flipped=True)),
    (proofs.quadratic_identity, {}, dict(center_coefficient=2)),
    (proofs.shift_invariance, {}, dict(per_entry=True)),
    (proofs.hard_attention_limit, {}, dict(sign=1)),
    (proofs.hard_attention_limit, {}, dict(offset=sp.Rational(1, 2))),
    (proofs.hard_attention_limit, dict(offset=sp.Rational(1, 3)), dict(offset=sp.Rational(-1, 2))),
    (proofs.lemma1_block_identity, {}, dict(swap_blocks=True)),
    (proofs.lemma1_block_identity, {}, dict(sign=1)),
    (proofs.rank_condition, {}, dict(short_by=1)),
    (proofs.rank_bound, {}, dict(d_h=2, claimed_rank=1)),
    (proofs.theorem1, {}, dict(offset=sp.Rational(1, 2))),
    (proofs.theorem1, {}, dict(sign=1)),
    (proofs.theorem1, {}, dict(padded=False)),
    (proofs.one_dimensional_case, {}, dict(center_coefficient=2)),
    (proofs.one_dimensional_case, dict(offset=sp.Rational(-1, 4)), dict(sign=1)),
    (proofs.dilation_and_stride, {}, dict(dilated_centers=False)),
    (proofs.finite_alpha_bound, {}, dict(factor=sp.Rational(1, 2))),
    (proofs.softmax_factorization, {}, dict(coupled=True)),
]


@pytest.mark.parametrize("proof, good, bad", CASES, ids=lambda v: getattr(v, "__name__", None))
def test_claim_verified_and_wrong_variant_rejected(proof, good, bad):
    result = proof(**good)
    assert isinstance(result, ProofResult) and result.verified, result
    assert result.scope in ("general", "induction", "definition") or proof is proofs.rank_bound
    wrong = proof(**bad)
    assert not wrong.verified, wrong
    assert "✘ NOT verified" in wrong._repr_markdown_() and "✔ verified" in result._repr_markdown_()


def test_lemma1_rejects_a_non_shift():
    # Attention 3·S^T + 1 is not a shift: the per-head step must fail, whatever the block identity says.
    wrong = proofs.lemma1_block_identity(attention=lambda q, k, c: 3 * sp.KroneckerDelta(q, k + c) + 1)
    assert not wrong.verified
    assert [step.verified for step in wrong.steps] == [False, True, True, True]
    flipped = proofs.lemma1_block_identity(attention=lambda q, k, c: sp.KroneckerDelta(k, q - c))
    assert not flipped.verified


def test_display_is_typeset_maths_not_literal_dollars():
    block = proofs.lemma1_block_identity()
    shown = block._repr_html_()
    assert "$$" not in shown and shown.count('<div class="math notranslate nohighlight">\\[') == 2
    assert "\\operatorname{concat}" in shown and "✔ verified" in shown
    assert "$$" not in block._repr_markdown_()


def test_verified_is_computed_not_set():
    with pytest.raises(TypeError):
        ProofResult("c", "s", 0, "general", verified=True)  # type: ignore[call-arg]
    assert not ProofResult("c", "s", sp.Symbol("x"), "general").verified
    assert not ProofResult("c", "s", sp.oo, "general").verified
    with pytest.raises(ValueError, match="scope"):
        ProofResult("c", "s", 0, "everywhere")
    with pytest.raises(ValueError, match="instance"):
        ProofResult("c", "s", 0, "instance")


def test_rank_counterexample_is_exact_numerically():
    result = proofs.rank_counterexample()
    assert result.verified and result.scope == "instance"
    # The same two D_h = 1 heads in torch, on a sequence: A_1 = (S_0 + S_1)/2, A_2 = S_0/3 + 2 S_1/3.
    torch.manual_seed(0)
    n = 7
    s0 = torch.eye(n, dtype=torch.float64)
    s1 = torch.diag(torch.ones(n - 1, dtype=torch.float64), 1)  # (S_1 X)_q = X_{q+1}: taps Δ = 0, 1
    x = torch.randn(n, 2, dtype=torch.float64)
    conv = s0 @ x @ torch.eye(2, dtype=torch.float64) + s1 @ x @ torch.diag(torch.tensor([1.0, 2.0],
                                                                                         dtype=torch.float64))
    heads = ((s0 + s1) / 2) @ x @ torch.diag(torch.tensor([2.0, 0.0], dtype=torch.float64)) \
        + (s0 / 3 + 2 * s1 / 3) @ x @ torch.diag(torch.tensor([0.0, 3.0], dtype=torch.float64))
    torch.testing.assert_close(heads, conv, rtol=0, atol=1e-14)


def test_rank_bound_for_several_shapes():
    for d_in, d_h, d_out in [(2, 1, 2), (3, 2, 3), (4, 1, 2)]:
        assert proofs.rank_bound(d_in, d_h, d_out).verified
