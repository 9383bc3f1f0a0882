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


def test_sequence_conventions_are_the_library_band():
    import sympy as sp

    from attnconv.proofs import conventions
    # the sequence proofs use exactly these functions (on both sides of every identity) ...
    assert proofs._clip_symbolic is conventions.clip_offset
    assert proofs.relative_offset is conventions.relative_offset
    # ... and they read what the library's band reads, on every (query, key) pair of small sizes
    assert conventions.conventions_match_library().verified
    flipped = conventions.conventions_match_library(clip=lambda d, k: sp.Max(-k, sp.Min(k, -d)))
    assert not flipped.verified and flipped.residual > 0
    assert not conventions.conventions_match_library(offset=lambda i, j: i - j).verified
    # the window, the key frame and the causal mask the chapters use: each convention is the library's, and a
    # wrong one fails
    assert proofs.window_keys is conventions.window_keys and proofs.kernel_token is conventions.kernel_token
    assert proofs.causal_keys is conventions.causal_keys
    wrong = dict(window=lambda i, k, n: (sp.Max(0, i - k), sp.Min(n - 1, i + k + 1)),
                 token=lambda i, d: i, causal=lambda i, k: (i - k, i - 1))
    for name, convention in wrong.items():
        assert not conventions.conventions_match_library(**{name: convention}).verified, name


def test_bucket_tails_are_proved_for_every_offset():
    import sympy as sp

    from attnconv.proofs.kernels import t5_bucket
    for num_buckets, k in ((8, 6), (16, 10), (8, 12), (32, 128)):
        result = proofs.bucketed_kernel_is_piecewise_constant(num_buckets=num_buckets, max_distance=k)
        assert result.verified, (num_buckets, k)
        tails = [step for step in result.steps if "k + m" in step.claim]
        assert len(tails) == 2 and all(step.scope == "general" for step in tails)  # every m ≥ 0, not a window
        assert any(step.claim == "the library's buckets are T5's formula" for step in result.steps)

    def late(delta, nb, k):  # right up to |δ| = k + 3, a new bucket from k + 4 on
        return sp.Piecewise((nb, sp.Abs(delta) >= k + 4), (t5_bucket(delta, nb, k), True))

    wrong = proofs.bucketed_kernel_is_piecewise_constant(formula=late)
    assert not wrong.verified and wrong.decided
    assert any("at δ = 10" in step.statement for step in wrong.steps if not step.verified)  # k + 4, the witness
    # the same labelling given by its values only: it passes where it is asked, so it is not decided, not verified
    values = proofs.bucketed_kernel_is_piecewise_constant(
        bucket=lambda offsets, nb, k: [int(late(sp.Integer(d), nb, k)) for d in offsets])
    assert not values.verified and values.status == "not decided"
    # a relabelling of the buckets by a bijection keeps the kernel's shape
    assert proofs.bucketed_kernel_is_piecewise_constant(
        formula=lambda d, nb, k: sp.Mod(3 * t5_bucket(d, nb, k) + 1, nb)).verified
    for formula in (lambda d, nb, k: sp.Mod(d, nb), lambda d, nb, k: d + 20):
        assert not proofs.bucketed_kernel_is_piecewise_constant(formula=formula).verified


def test_sequence_proofs_follow_the_offset_they_are_given(monkeypatch):
    # With the offset flipped in the proofs (i - j), the fixed-bias identity no longer holds: the convention enters
    monkeypatch.setattr(proofs, "relative_offset", lambda query, key: query - key)
    assert not proofs.fixed_bias_is_lightweight_conv().verified


def test_fixed_bias_and_boundary_use_the_sequence_length():
    import sympy as sp
    after = sp.Symbol("r", integer=True, nonnegative=True)
    # one key too many: harmless when the query is the last interior one (the key i+k+1 does not exist, r = 0)
    extra = proofs.fixed_bias_is_lightweight_conv(extra_key=True)
    assert sp.simplify(extra.residual.subs(after, 0)) == 0
    assert sp.simplify(extra.residual.subs(after, after + 1)) != 0
    # zero padding is right wherever all 2k+1 keys exist (i ≥ k, N-1-i ≥ k), and only there
    zero = proofs.boundary_renormalisation(renormalize=False)
    i, k = sp.Symbol("i", integer=True, nonnegative=True), sp.Symbol("k", integer=True, positive=True)
    e = sp.Symbol("e", integer=True, nonnegative=True)
    assert sp.simplify(zero.residual.subs({i: k + e, after: k + after}).doit()) == 0
    assert zero.residual.subs(i, 0) != 0


def test_alibi_proof_matches_the_library_head():
    import sympy as sp
    import torch

    from attnconv.positional.sequence import ALiBi
    from attnconv.proofs.kernels import alibi_weights
    for causal in (False, True):
        head = ALiBi(8, causal=causal)
        slope = float(head.slopes[0])
        n = 7
        library = torch.softmax(head((n,), None, None)[0].double(), -1)  # (N, N)
        past, future, _, (m, i, r, t, s) = alibi_weights(causal)
        for query in range(n):
            for key in range(n):
                values = {m: slope, i: query, r: n - 1 - query}
                if key <= query:
                    derived = past.subs({**values, t: query - key})
                else:
                    derived = future.subs({**values, s: key - query - 1})
                assert float(sp.N(derived)) == pytest.approx(float(library[query, key]), rel=1e-6, abs=1e-12)


def test_alibi_false_causal_statements_fail_at_the_weights():
    import sympy as sp
    future = proofs.alibi_kernel_decay(causal=True, future_weight=True)
    failed = [step for step in future.steps if not step.verified]
    assert [step.claim for step in failed] == ["the weights of the row (causal)"]
    assert failed[0].residual[0] == 0 and failed[0].residual[1] != 0  # the past is right, the future is masked
    normaliser = proofs.alibi_kernel_decay(causal=True, causal_normaliser=False)
    failed = [step for step in normaliser.steps if not step.verified]
    assert [step.claim for step in failed] == ["the weights of the row (causal)"]
    after = sp.Symbol("r", integer=True, nonnegative=True)
    assert sp.simplify(failed[0].residual[0].subs(after, 0)) == 0  # no future keys: the two normalisers agree


def test_sums_are_compared_in_one_written_form():
    """A sum and its re-indexing by a shift (a table read at column δ + k), a reflection (δ → -δ) or an equivalent
    Max/Min form of its range are one sum: the true written forms verify and the false ones are still refuted. What
    SymPy cannot simplify but the numbers support is "not decided", never refuted."""
    import sympy as sp

    from attnconv.proofs._symbolic import minmax_normal, sum_simplify
    from attnconv.proofs.result import numeric_agreement, verify_equal
    for kwargs in (dict(table="column"), dict(kernel_index="reflected"), dict(table="column", kernel_index="reflected")):
        assert proofs.fixed_bias_is_lightweight_conv(**kwargs).verified, kwargs
        for wrong in (dict(offset="query-key"), dict(extra_key=True)):
            refuted = proofs.fixed_bias_is_lightweight_conv(**kwargs, **wrong)
            assert not refuted.verified and refuted.decided, (kwargs, wrong)
    assert proofs.boundary_renormalisation(range_form="offsets").verified
    assert not proofs.boundary_renormalisation(renormalize=False, range_form="offsets").verified
    i, k = sp.symbols("i k", integer=True, nonnegative=True)
    n, d = sp.Symbol("N", integer=True, positive=True), sp.Symbol("d", integer=True)
    f = sp.Function("f")
    assert minmax_normal(sp.Max(0, i - k) - i) == sp.Max(-k, -i)
    assert minmax_normal(-sp.Max(-k, -i)) == sp.Min(k, i)
    assert sum_simplify(sp.Sum(f(d), (d, -k, k)) - sp.Sum(f(-d), (d, -k, k))) == 0
    assert sum_simplify(sp.Sum(f(d), (d, 1, n)) - sp.Sum(f(n + 1 - d), (d, 1, n))) == 0
    assert sum_simplify(sp.Sum(f(d), (d, -k, k)) - sp.Sum(f(d), (d, -k, k + 1))) != 0
    # SymPy's plain simplify does not see the reflection: the verdict is "not decided", backed by the numbers
    b = sp.IndexedBase("b", real=True)
    plain = verify_equal("reflection", "Σ_δ b_δ = Σ_δ b_{-δ}", sp.Sum(b[d], (d, -k, k)), sp.Sum(b[-d], (d, -k, k)),
                         simplify=lambda e: e, scope="general")
    assert not plain.verified and plain.status == "not decided" and not plain.decided
    false = verify_equal("shift", "Σ_δ b_δ = Σ_δ b_{δ+1}", sp.Sum(b[d], (d, -k, k)), sp.Sum(b[d + 1], (d, -k, k)),
                         simplify=lambda e: e, scope="general")
    assert not false.verified and false.status == "NOT verified"
    assert numeric_agreement(sp.MatrixSymbol("M", 2, 2)) is None  # what cannot be evaluated is not judged
