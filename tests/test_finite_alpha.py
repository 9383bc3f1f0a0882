"""The genuine quadratic encoding at finite α: it converges to the convolution, and the error bound is tight."""

from __future__ import annotations

import math

import pytest
import torch

from attnconv.bounds import conv_error_bound, off_target_mass_bound
from attnconv.construct import conv_to_mhsa


def _error(layer, conv, x) -> float:
    with torch.no_grad():
        return float((layer(x) - conv(x)).abs().max())


@pytest.mark.parametrize("kernel_size", [1, 2, 3, 4, 5])
@pytest.mark.parametrize("dims, dilation, stride", [(1, 1, 1), (1, 2, 3), (2, 1, 1), (2, 2, 1), (2, 1, 2),
                                                    (2, 3, 2)])
def test_finite_alpha_converges_to_the_convolution(kernel_size, dims, dilation, stride):
    torch.manual_seed(kernel_size + 10 * dilation + 100 * stride)
    conv_type = torch.nn.Conv1d if dims == 1 else torch.nn.Conv2d
    padding = dilation * (kernel_size - 1) // 2
    conv = conv_type(3, 4, kernel_size, stride=stride, padding=padding, dilation=dilation, dtype=torch.float64)
    x = torch.randn(2, 3, *([11] * dims), dtype=torch.float64)
    errors = {a: _error(conv_to_mhsa(conv, alpha=float(a)), conv, x) for a in (1, 4, 16, 64)}
    assert errors[64] <= 1e-12, errors
    if kernel_size > 1:  # a finite α really leaks: the check runs the encoding, not a hard mask
        assert errors[1] > 1e-3 and errors[1] > errors[4] > errors[16], errors


def test_shift_invariance_numerically():
    torch.manual_seed(0)
    z = torch.randn(5, 9, dtype=torch.float64)
    c = torch.randn(5, 1, dtype=torch.float64)
    torch.testing.assert_close(torch.softmax(z + c, -1), torch.softmax(z, -1), rtol=0, atol=1e-15)
    assert not torch.allclose(torch.softmax(z + torch.randn_like(z), -1), torch.softmax(z, -1))


@pytest.mark.parametrize("alpha", [0.5, 1.0, 2.0])
def test_bound_is_nearly_attained(alpha):
    # One head centred on the query (a 1x1 conv with weight 1): the query token is -1 and every other token +1,
    # so every off-target key adds (1 - (-1)) times its weight: the error is 2 ε, the bound 2 ε(α).
    conv = torch.nn.Conv1d(1, 1, 1, bias=False, dtype=torch.float64)
    with torch.no_grad():
        conv.weight.fill_(1.0)
    x = torch.ones(1, 1, 61, dtype=torch.float64)
    x[0, 0, 30] = -1.0
    with torch.no_grad():
        measured = float((conv_to_mhsa(conv, alpha=alpha)(x) - conv(x)).abs()[0, 0, 30])
    bound = float(conv_error_bound(conv, x, alpha)[0])
    # conv_to_mhsa rounds log α to float32 before casting, so the layer's α is 0.5 - 1e-9: allow that much
    assert measured <= bound * (1 + 1e-8)
    assert measured / bound >= 0.9, (measured, bound)  # a bound half as large would be broken
    assert bound == pytest.approx(2 * off_target_mass_bound(alpha, dims=1), rel=1e-6)


def _failed_steps(result):
    """The steps that are refuted (not verified, and decided)."""
    return [step.claim for step in result.steps if not step.verified and step.decided]


def _resting_steps(result):
    """The steps that are not decided: each rests on a premise that was not derived."""
    return [step.claim for step in result.steps if not step.verified and not step.decided]


DOWNSTREAM = ["tail-mass bound R ≤ S", "ε ≤ S/(1+S)"]  # c = 1: c·S/(1+S) - S/(1+S) = 0 needs no sign


def test_sympy_bound_fails_at_the_step_it_breaks():
    import sympy as sp

    from attnconv.proofs.finite_alpha import finite_alpha_bound
    assert finite_alpha_bound().verified
    # looser bounds are true and verify: the proof shows "≤", not equality
    assert finite_alpha_bound(factor=2).verified and finite_alpha_bound(claimed_alpha=sp.Rational(1, 2)).verified
    # a smaller constant fails only where it is compared with S/(1+S), which an infinite grid attains
    for factor in (sp.Rational(1, 2), sp.Rational(9, 10)):
        assert _failed_steps(finite_alpha_bound(factor=factor)) == ["the claimed bound is at least S/(1+S)"]
    # a tighter θ, or a head whose weights are not the bound's terms, fails where the weights are compared:
    # the weights come from the head's own logit, so a wrong head cannot borrow the right weights
    for kwargs in (dict(claimed_alpha=2), dict(coefficient=-1), dict(sign=1)):
        result = finite_alpha_bound(**kwargs)
        # the termwise comparison fails, and with it the sum of the termwise gaps in θ - P_a ≥ 0
        assert _failed_steps(result) == ["each key weighs at most the bound's term"] * 2 + [
            "d_1 = θ - P_1 ≥ 0", "d_2 = θ - P_2 ≥ 0"], kwargs
        # the steps that need θ - P_a ≥ 0 are not decided: the sign is missing, it is not read from a name
        assert _resting_steps(result) == DOWNSTREAM, kwargs
        assert result.decided  # refuted at the comparison of the weights
    shifted = [s for s in finite_alpha_bound(coefficient=-1).steps if not s.verified][0]
    assert shifted.residual.has(sp.Symbol("Delta1", integer=True))  # the peak moved off the target


def test_weighted_triangle_inequality_is_an_induction_over_keys():
    from attnconv.proofs.finite_alpha import weighted_triangle_inequality
    result = weighted_triangle_inequality()
    assert result.verified and result.scope == "induction"
    claims = [step.claim for step in result.steps]
    assert "base case N = 1: ‖A v‖ = A ‖v‖" in claims and "inductive step N → N + 1" in claims


def _failures(result, depth=0):
    """(claim, depth) of every failing step, recursively."""
    found = []
    for step in result.steps:
        if not step.verified:
            found.append(step.claim)
            found += _failures(step, depth + 1)
    return found


def test_tails_are_shown_nonnegative_from_their_summand_and_range():
    """θ - P_a = tails + gaps holds for any θ by SymPy's convention for reversed ranges; the positivity of each
    tail is derived from its range, so a one-sided or truncated θ fails there, and θ over Z verifies."""
    import sympy as sp

    from attnconv.proofs.finite_alpha import finite_alpha_bound
    right = finite_alpha_bound()
    pieces = [claim for claim in (s.claim for s in right.steps) if claim.startswith("d_")]
    assert pieces == ["d_1 = θ - P_1 ≥ 0", "d_2 = θ - P_2 ≥ 0"]
    for theta_range, tails in (((0, sp.oo), ["the left tail of axis 1 is ≥ 0", "the left tail of axis 2 is ≥ 0"]),
                               ((-5, 5), ["the left tail of axis 1 is ≥ 0", "the right tail of axis 1 is ≥ 0",
                                          "the left tail of axis 2 is ≥ 0", "the right tail of axis 2 is ≥ 0"])):
        wrong = finite_alpha_bound(theta_range=theta_range)
        assert not wrong.verified and wrong.decided
        failed = _failures(wrong)
        assert [c for c in failed if "tail of" in c] == tails, theta_range
        assert all("θ - P" not in c or c.startswith("d_") for c in failed)  # the identity itself still holds
        assert _resting_steps(wrong) == DOWNSTREAM  # the sign of θ - P_a is missing downstream, not assumed
        assert "rests on d_1 = θ - P_1 ≥ 0" in next(s for s in wrong.steps if s.claim == DOWNSTREAM[0]).statement
    # the same θ written with the range its symmetry allows is still the paper's: Σ over Z
    assert finite_alpha_bound(theta_range=(-sp.oo, sp.oo)).verified


def _library_off_target_mass(alpha: float, size: int = 61) -> float:
    """1 - the target's weight for the library's head centred on the query, in the middle of a size×size grid."""
    from attnconv.positional import QuadraticEncoding
    enc = QuadraticEncoding(1, centers=[[0.0, 0.0]], alpha=alpha, learnable=False).double()
    probs = torch.softmax(enc((size, size)), -1)[0]  # (N, N)
    middle = (size // 2) * size + size // 2
    return 1 - float(probs[middle, middle])


def test_one_sided_and_truncated_theta_are_broken_by_the_library_head():
    """At α = 1 on a 61×61 grid, the library's head puts 0.682 of its mass off the target: above the one-sided
    bound 1 - θ_+^(-2) = 0.480 (θ_+ = Σ_{n ≥ 0} e^(-n²)), within the paper's 1 - θ^(-2) (θ over Z). θ truncated to
    |n| ≤ 5 is broken at a small α, where the head spreads beyond five keys."""
    import math

    def theta(alpha, lo, hi):
        return sum(math.exp(-alpha * n * n) for n in range(lo, hi + 1))

    off_target = _library_off_target_mass(1.0)
    assert off_target == pytest.approx(0.682, abs=1e-3)
    assert off_target > 1 - theta(1.0, 0, 40) ** -2 == pytest.approx(0.480, abs=1e-3)
    assert off_target <= 1 - theta(1.0, -40, 40) ** -2 + 1e-12
    spread = _library_off_target_mass(0.05)
    assert spread > 1 - theta(0.05, -5, 5) ** -2 + 1e-3
    assert spread <= 1 - theta(0.05, -400, 400) ** -2 + 1e-9  # the grid holds all but e^(-0.05·31²) of θ


def test_the_factor_two_is_derived_and_met():
    """‖Y_k - Y_t‖ ≤ 2 max ‖Y‖ is a derived step: the factor 1 fails there. The reason, numerically: a query
    token -1 among tokens +1 makes every off-target key add 2 times its weight, so the error is 2ε."""
    import sympy as sp

    from attnconv.proofs.finite_alpha import finite_alpha_bound
    assert finite_alpha_bound(difference_factor=3).verified  # looser: true
    wrong = finite_alpha_bound(difference_factor=1)
    assert not wrong.verified and wrong.decided
    failed = _failures(wrong)
    assert failed[:2] == ["‖Y_k - Y_t‖ ≤ 1 max_j ‖Y_j‖", "‖Y_k - Y_t‖ ≤ 1·max_j ‖Y_j‖ fails"]
    step = next(s for s in wrong.steps if s.claim == failed[0])
    assert "‖a - b‖ = 2 > 1" in step.steps[-1].statement
    right = next(s for s in finite_alpha_bound().steps if s.claim.startswith("‖Y_k - Y_t‖"))
    assert right.verified and [t.claim for t in right.steps][0] == "‖a - b‖² expands"
    assert sp.Symbol("M", nonnegative=True)  # the bound is in terms of the largest norm M
    conv = torch.nn.Conv1d(1, 1, 1, bias=False, dtype=torch.float64)
    with torch.no_grad():
        conv.weight.fill_(1.0)
    x = torch.ones(1, 1, 61, dtype=torch.float64)
    x[0, 0, 30] = -1.0
    for alpha in (0.5, 1.0, 2.0):
        with torch.no_grad():
            layer = conv_to_mhsa(conv, alpha=alpha)
            measured = float((layer(x) - conv(x)).abs()[0, 0, 30])
        epsilon = off_target_mass_bound(alpha, dims=1)
        assert measured > 1.5 * epsilon  # max ‖Y‖ = 1: a bound of 1·ε is broken
        assert measured <= 2 * epsilon * (1 + 1e-8)


def test_float_constants_are_read_exactly():
    """A float constant in the bound is its exact binary value: just below 1 (or 2) is a tighter, false bound."""
    from attnconv.proofs.finite_alpha import finite_alpha_bound
    assert not finite_alpha_bound(factor=0.9999999999999999).verified
    assert finite_alpha_bound(factor=1.0).verified and finite_alpha_bound(factor=1.0000000000000002).verified
    assert not finite_alpha_bound(difference_factor=1.9999999999999998).verified
    assert finite_alpha_bound(difference_factor=2.0).verified
    assert finite_alpha_bound(theta_range=(float("-inf"), float("inf"))).verified


def test_a_sign_comes_from_a_derivation_never_from_a_name():
    """Every symbol the bound declares ≥ 0 is either made by ``_premise`` (nonnegative only when the steps that
    derive its sign verified) or says why it is ≥ 0 by definition or as a hypothesis of the statement."""
    import inspect

    import sympy as sp

    from attnconv.proofs import finite_alpha
    from attnconv.proofs.result import ProofResult
    lines = inspect.getsource(finite_alpha).splitlines()
    for number, line in enumerate(lines):
        if "nonnegative=True" in line and "def _premise" not in "\n".join(lines[max(0, number - 6):number]):
            reason = line + lines[number - 1]
            assert "by definition" in reason or "hypothes" in reason, line
    # a premise that did not verify gives a plain real symbol, and the step that needs its sign is not decided
    good = ProofResult("a ≥ 0", "derived", sp.Integer(0), scope="general")
    bad = ProofResult("b ≥ 0", "not derived", sp.Symbol("r"), scope="general")
    assert finite_alpha._premise("a", good)[0].is_nonnegative is True
    assert finite_alpha._premise("b", good, bad)[0].is_nonnegative is None
    step = finite_alpha._decided("x ≥ 0", "x ≥ 0", finite_alpha._premise("x", bad)[0], ("x",), premises=(bad,))
    assert not step.verified and not step.decided and "rests on b ≥ 0" in step.statement


def test_without_cauchy_schwarz_the_triangle_steps_are_not_decided(monkeypatch):
    """The slack c = ‖a‖‖b‖ ± a·b ≥ 0 comes from the Lagrange identity: without it, the triangle inequality, the
    factor 2 and the induction over keys rest on a missing premise, and the bound does not verify."""
    import sympy as sp

    from attnconv.proofs import finite_alpha
    from attnconv.proofs.result import ProofResult
    missing = ProofResult("Lagrange identity (Cauchy-Schwarz)", "not derived here", sp.Symbol("r"), scope="general",
                          undecided=True)
    monkeypatch.setattr(finite_alpha, "_lagrange", lambda: missing)
    triangle = finite_alpha.weighted_triangle_inequality()
    assert not triangle.verified and not triangle.decided
    resting = [s.claim for s in triangle.steps if not s.verified]
    assert resting == ["Lagrange identity (Cauchy-Schwarz)", "triangle inequality, squared",
                       "inductive step N → N + 1"]
    bound = finite_alpha.finite_alpha_bound()
    assert not bound.verified
    factor_two = next(s for s in bound.steps if s.claim.startswith("‖Y_k - Y_t‖"))
    assert not factor_two.verified and not factor_two.decided


@pytest.mark.parametrize("theta_range", [(-math.inf, 0), (1, math.inf), (-3, 100), (-math.inf, 5), (-10, 10)])
def test_every_theta_short_of_the_integers_is_refuted(theta_range):
    """θ summed over any range short of Z: one-sided either way, without the centre term, truncated on one side or
    on both. The tail over the missing range runs over a reversed range, so its step fails, the bound is refuted,
    and the library's head breaks the bound at some α on a 61×61 grid."""
    from attnconv.proofs.finite_alpha import finite_alpha_bound
    wrong = finite_alpha_bound(theta_range=theta_range)
    assert not wrong.verified and wrong.decided
    assert any("tail of axis 1" in claim for claim in _failures(wrong))
    assert _resting_steps(wrong) == DOWNSTREAM

    lo, hi = (max(theta_range[0], -400), min(theta_range[1], 400))

    def bound(alpha):  # 1 - θ^(-2) with θ over the range (θ ≤ 0 gives no bound at all: 1 - θ^(-2) < 0 or none)
        theta = sum(math.exp(-alpha * n * n) for n in range(int(lo), int(hi) + 1))
        return 1 - theta ** -2

    broken = [alpha for alpha in (1.0, 0.05, 0.01) if _library_off_target_mass(alpha) > bound(alpha) + 1e-6]
    assert broken, theta_range


@pytest.mark.parametrize("factor", ["3/2", "19/10", "sqrt(3)", "1"])
def test_a_factor_below_two_in_the_difference_step_is_refuted(factor):
    import sympy as sp

    from attnconv.proofs.finite_alpha import finite_alpha_bound
    wrong = finite_alpha_bound(difference_factor=sp.sympify(factor))
    assert not wrong.verified and wrong.decided
    step = next(s for s in wrong.steps if s.claim.startswith("‖Y_k - Y_t‖"))
    assert not step.verified and step.decided and "‖a - b‖ = 2 >" in step.steps[-1].statement
    for right in ("2", "5/2", "2 + sqrt(2)"):
        assert finite_alpha_bound(difference_factor=sp.sympify(right)).verified, right


@pytest.mark.parametrize("alpha", [0.5, 1.0, 2.0])
@pytest.mark.parametrize("scale", [1.0, 3.0])
def test_the_factor_two_is_met_in_two_dimensions_and_at_any_largest_norm(alpha, scale):
    """A 1×1 Conv2d with weight 1, the query pixel -M among pixels +M: every off-target key adds 2M times its
    weight, so the error is 2εM, above 1.5 ε(α) M (a factor 1 would be broken) and within 2 ε(α) M."""
    conv = torch.nn.Conv2d(1, 1, 1, bias=False, dtype=torch.float64)
    with torch.no_grad():
        conv.weight.fill_(1.0)
    x = torch.full((1, 1, 21, 21), scale, dtype=torch.float64)
    x[0, 0, 10, 10] = -scale
    with torch.no_grad():
        measured = float((conv_to_mhsa(conv, alpha=alpha)(x) - conv(x)).abs()[0, 0, 10, 10])
    epsilon = off_target_mass_bound(alpha, dims=2)
    assert 1.5 * epsilon * scale < measured <= 2 * epsilon * scale * (1 + 1e-8)
