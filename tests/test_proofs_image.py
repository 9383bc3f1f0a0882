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


def test_lemma1_compares_up_to_a_relabelling_of_heads():
    # a true permutation of the heads (each with its centre, value and output block) verifies
    for relabel in [(2, 1), (2, 3, 1), (1,)]:
        assert proofs.lemma1_block_identity(relabel=relabel).verified, relabel
    # blocks swapped without moving the heads fails, at the index-level step, with the mixed products left
    swapped = proofs.lemma1_block_identity(swap_blocks=True)
    failed = [step for step in swapped.steps if not step.verified]
    assert [step.claim for step in failed] == ["heads meet swapped blocks"]
    residual = str(failed[0].residual)
    assert "U[1, i, c]*V[2, c, o]" in residual and "U[2, i, c]*V[1, c, o]" in residual
    # two heads on one tap: the tap 2 term is missing
    doubled = proofs.lemma1_block_identity(relabel=(1, 1))
    assert not doubled.verified and "U[2, i, c]*V[2, c, o]" in str(doubled.steps[0].residual)
    with pytest.raises(ValueError, match="relabel"):
        proofs.lemma1_block_identity(relabel=(3,))


def _pieces(result):
    summand = result.residual.function
    assert isinstance(summand, sp.Piecewise), summand
    return summand.args


def test_unpadded_theorem_fails_at_the_border_only():
    wrong = proofs.theorem1(padded=False)
    assert not wrong.verified and all(step.verified for step in wrong.steps)  # the residual is the reason
    pieces = _pieces(wrong)
    # inside the image (every target on it) the two agree; the first piece is exactly that case
    first, condition = pieces[0]
    assert first == 0 and "a1 - p1 + q1 >= 0" in str(condition)
    # left of the image the head reads the border pixel X_0 where the padded convolution reads 0
    x, i = sp.IndexedBase("X"), sp.Symbol("i", integer=True)
    assert any(expr.has(x[0, 0, i]) for expr, _ in pieces)
    assert "refutation" in wrong.steps[-1].claim and wrong.steps[-1].verified
    # the true statement about the interior verifies, without padding as with it
    assert proofs.theorem1(padded=False, interior=True).verified
    assert proofs.theorem1(interior=True).verified


def test_zero_padding_is_defined_from_the_image():
    from attnconv.proofs.padded import zero_padded
    x, k, c = sp.IndexedBase("X"), sp.Symbol("k", integer=True), sp.Symbol("c", integer=True)
    h = sp.Symbol("H", integer=True, positive=True)
    padded = zero_padded(x, (k, c), [h])
    assert padded.subs(k, -1) == 0 and padded.subs(k, h) == 0 and padded.subs(k, 0) == x[0, c]


def test_unpadded_border_head_reads_the_nearest_pixel():
    # The library's encoding over the image's keys only (no padding): from query 0 a head centred on -1 - n
    # puts its weight on key 0; from query H-1 a head centred on +1 + n on key H-1, as the border lemmas derive.
    from attnconv.positional.quadratic import positional_query, quadratic_features
    height, a = 9, torch.tensor([30.0], dtype=torch.float64)
    for query, centre, nearest in [(0, -1.0, 0), (0, -3.0, 0), (height - 1, 1.0, height - 1),
                                   (height - 1, 2.0, height - 1)]:
        delta = (torch.arange(height, dtype=torch.float64) - query)[:, None]
        v = positional_query(torch.tensor([[centre]], dtype=torch.float64), a)
        weights = torch.softmax(quadratic_features(delta) @ v[0], 0)
        assert float(weights[nearest]) > 1 - 1e-12, (query, centre)
    left, right = __import__("attnconv.proofs.padded", fromlist=["border_lemmas"]).border_lemmas()
    assert left.verified and right.verified


def test_lemma1_recognises_a_symbolic_relabelling_of_all_heads():
    """Head h carries tap π(h) for all N_h heads: the reflection N_h + 1 - h and a cyclic shift are bijections, and
    the sum over heads, re-indexed by t = π(h), verifies; a map that is not a bijection is refuted; one SymPy cannot
    read is not decided, never refuted."""
    shift = sp.Symbol("c", integer=True, nonnegative=True)
    for relabel in (lambda h, n: n + 1 - h, lambda h, n: sp.Mod(h, n) + 1, lambda h, n: sp.Mod(h + shift, n) + 1,
                    lambda h, n: h):
        result = proofs.lemma1_block_identity(relabel=relabel)
        assert result.verified, result.steps[0].statement
    reflected = proofs.lemma1_block_identity(relabel=lambda h, n: n + 1 - h).steps[0]
    reindex = [step for step in reflected.steps if step.claim.startswith("re-index")]
    assert len(reindex) == 1 and reindex[0].verified and not reindex[0].immediate  # a derived change of index
    for relabel, taps in ((lambda h, n: h + 1, "(2, N_h + 1)"), (lambda h, n: n - h, "(0, N_h - 1)")):
        wrong = proofs.lemma1_block_identity(relabel=relabel)
        assert not wrong.verified and wrong.decided
        assert "not a bijection" in wrong.steps[0].claim and taps in wrong.steps[0].statement
    unread = proofs.lemma1_block_identity(relabel=lambda h, n: h**2)
    assert not unread.verified and unread.status == "not decided"
    # moving the heads does not rescue a wrong head: the opposite sign still fails under the reflection
    assert not proofs.lemma1_block_identity(relabel=lambda h, n: n + 1 - h, sign=1).verified
    with pytest.raises(ValueError, match="swap_blocks"):
        proofs.lemma1_block_identity(relabel=lambda h, n: h, swap_blocks=True)
