"""The α → ∞ limit derived from the encoding's logit: tied to the library's encoding, and each failure for its reason."""

from __future__ import annotations

import pytest
import sympy as sp
import torch

from attnconv.positional.quadratic import positional_query, quadratic_features
from attnconv.proofs import image as proofs
from attnconv.proofs._symbolic import alpha
from attnconv.proofs.limit import axis_limit, encoding_logit, gap_lemma, nonnegative


def _library_weights(center: float, a: float, sign: int = 1, length: int = 15) -> torch.Tensor:
    """Softmax over the keys of a 1-D grid, query in the middle, logits v·r_δ from the library (sign flips v)."""
    delta = (torch.arange(length, dtype=torch.float64) - length // 2)[:, None]  # (L, 1)
    v = sign * positional_query(torch.tensor([[center]], dtype=torch.float64), torch.tensor([a], dtype=torch.float64))
    return torch.softmax(quadratic_features(delta) @ v[0], 0)  # (L,)


def test_symbolic_logit_is_the_library_encoding():
    d1, d2, c1, c2 = sp.symbols("d1 d2 c1 c2")
    logit = sp.lambdify((d1, d2, c1, c2, alpha), encoding_logit([d1, d2], [c1, c2]))
    torch.manual_seed(0)
    for _ in range(5):
        delta, center = torch.randn(2, dtype=torch.float64), torch.randn(1, 2, dtype=torch.float64)
        a = float(torch.rand(()) * 5 + 0.1)
        library = quadratic_features(delta) @ positional_query(center, torch.tensor([a], dtype=torch.float64))[0]
        assert float(library) == pytest.approx(logit(*delta.tolist(), *center[0].tolist(), a), rel=1e-12)
    flipped = sp.lambdify((d1, d2, c1, c2, alpha), encoding_logit([d1, d2], [c1, c2], sign=1))
    assert flipped(1.0, 2.0, 0.5, -1.0, 2.0) == pytest.approx(-logit(1.0, 2.0, 0.5, -1.0, 2.0))


def test_off_grid_centre_limit_matches_the_library():
    limit = axis_limit(sp.Symbol("Delta", integer=True) + sp.Rational(1, 3))
    assert limit.proof.verified and limit.ties == 1
    assert limit.nearest == sp.Symbol("Delta", integer=True)
    # the library's encoding with centre 1/3: one-hot on the nearest key (offset 0) as α grows
    middle = 7
    assert float(_library_weights(1 / 3, 10.0)[middle]) == pytest.approx(0.9655, abs=1e-4)
    assert float(_library_weights(1 / 3, 100.0)[middle]) > 1 - 1e-9
    # and the opposite sign is anti-peaked: half the weight on each far end of the grid
    flipped = _library_weights(0.0, 1.0, sign=-1)
    assert float(flipped[0]) == pytest.approx(0.5, abs=1e-4) and float(flipped[-1]) == pytest.approx(0.5, abs=1e-4)


def test_opposite_sign_fails_for_lack_of_an_interior_maximum():
    limit = axis_limit(sp.Symbol("Delta", integer=True), sign=1)
    assert not limit.proof.verified
    failed = [step.claim for step in limit.proof.steps if not step.verified]
    assert failed == ["no interior maximum"]


def test_a_tie_is_rejected_and_named():
    limit = axis_limit(sp.Symbol("Delta", integer=True) + sp.Rational(1, 2))
    assert not limit.proof.verified and limit.ties == 2
    assert any(step.claim.startswith("tie:") and "Delta + 1" in step.claim for step in limit.proof.steps
               if not step.verified)
    assert not proofs.theorem1(offset=sp.Rational(1, 2)).verified


def test_gap_lemma_and_its_decision_procedure():
    assert gap_lemma().verified
    n, u = sp.Symbol("n", integer=True, nonnegative=True), sp.Symbol("u", nonnegative=True)
    assert nonnegative(n * (n + 1 + u) / (1 + u))
    assert not nonnegative(n - 1)  # n = 0 makes it negative
    assert not nonnegative(sp.Symbol("x") ** 2 - 1)  # a symbol with no sign


@pytest.mark.parametrize("proof", [proofs.hard_attention_limit, proofs.lemma1_block_identity, proofs.theorem1,
                                   proofs.one_dimensional_case, proofs.dilation_and_stride])
def test_every_encoding_claim_rejects_the_opposite_sign(proof):
    assert proof().verified
    wrong = proof(sign=1)
    assert not wrong.verified


def test_unpadded_refutation_verifies_what_it_shows():
    refutation = proofs.unpadded_boundary_refutation()
    assert refutation.verified and refutation.steps[0].verified  # the gap holds, and MHSA - Conv = X_0 ≠ 0
    assert "X[0, i] ≠ 0" in refutation.statement
    # refuting the padded construction must fail: there the head reads the zero padding, like the convolution
    padded = proofs.unpadded_boundary_refutation(padded=True)
    assert not padded.verified and "nothing refuted" in padded.statement


DELTA = sp.Symbol("Delta", integer=True)
U, V = sp.symbols("u v", nonnegative=True)
ANY_FRACTION = (U - V) / (2 * (1 + U + V))  # every f in (-1/2, 1/2)


def _failed(limit):
    return [(step.claim, step.residual) for step in limit.proof.steps if not step.verified]


def test_a_centre_without_a_known_unique_nearest_key_is_refused_and_the_condition_named():
    # Δ/2 is a half-integer for odd Δ: it must not verify as if Δ/2 were a key; its values mod 1 decide it
    half = axis_limit(DELTA / 2)
    assert not half.proof.verified and half.ties == 0 and half.proof.decided
    assert _failed(half)[0] == ("no unique nearest key: the centre is a half-integer at Delta = 1", 1)
    # a real fractional part with no bound: not decided, and the step names |f| < 1/2, necessary and sufficient
    # for Δ to be the unique nearest key
    f = sp.Symbol("f", real=True)
    loose = axis_limit(DELTA + f)
    assert not loose.proof.verified and _failed(loose)[0][1] == (sp.Abs(f) < sp.Rational(1, 2))
    assert loose.proof.status == "not decided"
    assert "exactly when Abs(f) < 1/2 (necessary and sufficient)" in loose.proof.steps[2].statement
    # 1/3 + f with f in (-1/2, 1/2) can cross 1/2: undecided as well
    assert not axis_limit(DELTA + sp.Rational(1, 3) + ANY_FRACTION).proof.verified
    # and nothing built on an undecided limit verifies
    assert not proofs.hard_attention_limit(center=DELTA / 2).verified
    assert not proofs.hard_attention_limit(offset=f).verified


def test_a_bounded_symbolic_fractional_part_is_decided_and_verifies():
    limit = axis_limit(DELTA + ANY_FRACTION)
    assert limit.proof.verified and limit.ties == 1 and limit.nearest == DELTA
    gaps = next(step for step in limit.proof.steps if step.claim == "the nearest key wins by a gap")
    assert gaps.verified and "1 - 2f" in gaps.statement
    assert axis_limit(DELTA + 1 + U / (2 * (1 + U))).nearest == DELTA + 1  # f in [0, 1/2): key Δ + 1
    assert axis_limit(2 * DELTA - 3).proof.verified and axis_limit(sp.Rational(7, 3)).nearest == 2
    result = proofs.hard_attention_limit(offset=ANY_FRACTION)
    assert result.verified and {"u", "v"} <= set(result.variables)


def test_positive_is_sound_and_strict():
    from attnconv.proofs.limit import positive
    assert positive((1 + 2 * V) / (2 * (1 + U + V)))
    assert not positive(U / (1 + U))  # zero at u = 0
    assert not positive(sp.Symbol("x") + 1)  # a symbol with no sign
    assert not positive(sp.Integer(0)) and positive(sp.Rational(1, 3))


@pytest.mark.parametrize("bad", [sp.I, [1, 2], "not a centre"])
def test_a_centre_that_is_not_real_is_refused(bad):
    with pytest.raises(TypeError, match="offset must be a real"):
        proofs.hard_attention_limit(offset=bad)


def test_floats_are_read_exactly():
    """A float offset is its exact binary value: 0.49999999999999994 is just below 1/2 (key Δ, verified), never
    rounded to 1/2 (a tie); 0.5 is 1/2 exactly (a tie); a float that is not finite is refused."""
    from attnconv.proofs.encoding import centre_offset
    just_below = 0.49999999999999994
    assert centre_offset(just_below) == sp.Rational(just_below) < sp.Rational(1, 2)
    assert centre_offset(just_below) == sp.Rational(9007199254740991, 2**54)
    assert centre_offset(0.1) == sp.Rational(3602879701896397, 2**55)  # the binary value, not 1/10
    assert centre_offset(sp.Float(0.25)) == sp.Rational(1, 4)
    result = proofs.hard_attention_limit(offset=just_below)
    assert result.verified and "1[δ = Delta]" in result.statement
    assert not proofs.hard_attention_limit(offset=0.5).verified
    for bad in (float("inf"), float("nan")):
        with pytest.raises(TypeError, match="finite"):
            centre_offset(bad)


def test_max_and_min_give_a_verdict_never_a_traceback():
    """nonnegative and positive read a Max or Min by what is known of it (Max(a, b) = a + s, s ≥ 0, or each case),
    and answer "not proved" for what they cannot read, instead of raising PolynomialError."""
    from attnconv.proofs.limit import positive
    n = sp.Symbol("n", integer=True, nonnegative=True)
    f = sp.Symbol("f", real=True)
    assert nonnegative(sp.Max(n, 1) - 1) and nonnegative(n * sp.Max(n, 1)) and nonnegative((n + 1) * sp.Max(n, 1))
    assert not nonnegative(sp.Min(n, 1) - 1)  # n = 0
    assert not positive(1 - sp.Min(1, U))  # zero for u ≥ 1: positive must not read the Min at u = 0
    clamp = sp.Max(-sp.Rational(1, 4), sp.Min(sp.Rational(1, 3), f))
    assert positive(sp.Rational(1, 2) - clamp) and positive(sp.Rational(1, 2) + clamp)
    assert not nonnegative(sp.floor(f)) and not nonnegative(sp.Function("g")(n))  # unknown: not proved, no error
    assert proofs.hard_attention_limit(offset=sp.Min(sp.Rational(1, 3), U)).verified
    assert proofs.hard_attention_limit(offset=clamp).verified
    unbounded = proofs.hard_attention_limit(offset=sp.Max(sp.Rational(1, 3), U))
    assert not unbounded.verified  # u = 1/2 makes it a tie: a verdict, not a crash
    assert proofs.theorem1(offset=sp.Min(sp.Rational(1, 3), U)).verified
    from attnconv.proofs.finite_alpha import finite_alpha_bound
    assert finite_alpha_bound(factor=sp.Max(1, U)).verified
    assert not finite_alpha_bound(factor=sp.Max(sp.Rational(1, 2), U)).verified


@pytest.mark.parametrize("centre, nearest", [
    (DELTA * (DELTA + 1) / 2, sp.expand(DELTA * (DELTA + 1) / 2)),  # always an integer
    (DELTA * (DELTA + 1) * (DELTA + 2) / 6, sp.expand(DELTA * (DELTA + 1) * (DELTA + 2) / 6)),
    (DELTA / 2 + sp.Rational(1, 4), sp.floor(DELTA / 2 + sp.Rational(3, 4))),  # never a half-integer
    (DELTA / 3 + sp.Rational(1, 4), sp.floor(DELTA / 3 + sp.Rational(3, 4))),
])
def test_integrality_is_decided(centre, nearest):
    """A centre that is a polynomial in integer symbols is decided by its values mod 1 (periodic with the common
    denominator of its coefficients): an integer-valued one is its own nearest key, one that is never a half-integer
    has the unique nearest key floor(c + 1/2); both verify."""
    limit = axis_limit(centre)
    assert limit.proof.verified and limit.ties == 1, _failed(limit)
    assert sp.simplify(limit.nearest - nearest) == 0
    assert proofs.hard_attention_limit(center=centre).verified
    for value in range(-5, 6):  # the derived nearest key is the nearest key
        at = centre.subs(DELTA, value)
        assert limit.nearest.subs(DELTA, value) == sp.floor(at + sp.Rational(1, 2))
        assert abs(at - limit.nearest.subs(DELTA, value)) < sp.Rational(1, 2)


@pytest.mark.parametrize("centre, witness", [(DELTA * (DELTA + 1) / 4, 1), (DELTA / 2 + sp.Rational(1, 2), 0),
                                             (DELTA / 3 + sp.Rational(1, 2), 0)])
def test_a_centre_that_is_sometimes_a_half_integer_is_refuted_with_a_witness(centre, witness):
    limit = axis_limit(centre)
    assert not limit.proof.verified and limit.proof.decided and limit.ties == 0
    claim = _failed(limit)[0][0]
    assert claim == f"no unique nearest key: the centre is a half-integer at Delta = {witness}"
    assert (centre.subs(DELTA, witness) - sp.Rational(1, 2)).is_integer  # the witness is a tie
    assert "needs" not in str(limit.proof.steps)  # no condition that would be wrong to name
