"""The finite-α bounds and the "how convolutional is this head" analysis."""

from __future__ import annotations

import math

import pytest
import torch

from attnconv import MultiHeadSelfAttention
from attnconv.analysis import head_shift, kernel_coverage, layer_shifts
from attnconv.bounds import gaussian_tail_sum, off_target_mass_bound, theta
from attnconv.construct import conv_to_mhsa
from attnconv.positional import QuadraticEncoding


@pytest.mark.parametrize("alpha", [0.05, 0.2, 1.0])
def test_theta_matches_poisson_summation(alpha):
    # θ(α) = sqrt(π/α) Σ_k e^{-π² k² / α}: an independent formula for the same sum.
    dual = math.sqrt(math.pi / alpha) * sum(math.exp(-math.pi**2 * k * k / alpha) for k in range(-20, 21))
    assert theta(alpha) == pytest.approx(dual, rel=1e-12)


def test_tail_sum_stays_accurate_below_machine_epsilon():
    assert gaussian_tail_sum(46.0) == pytest.approx(4 * math.exp(-46.0), rel=1e-12)
    assert off_target_mass_bound(46.0, dims=1) == pytest.approx(2 * math.exp(-46.0), rel=1e-12)


def test_bound_is_attained_in_the_interior_and_respected_everywhere(float64_default):
    alpha = 0.8
    enc = QuadraticEncoding(1, centers=[[0.0, 0.0]], alpha=alpha)
    probs = torch.softmax(enc((21, 21)), dim=-1)[0].detach()  # (N, N)
    off_target = 1 - probs.diagonal()
    bound = off_target_mass_bound(alpha)
    assert torch.all(off_target <= bound + 1e-15)
    assert float(off_target[10 * 21 + 10]) == pytest.approx(bound, rel=1e-9)  # centre of a large grid


def test_head_shift_recovers_constructed_centres():
    conv = torch.nn.Conv2d(2, 2, 3, padding=1, dtype=torch.float64)
    layer = conv_to_mhsa(conv)
    _, probs = layer(torch.randn(1, 2, 6, 6, dtype=torch.float64), need_weights=True)
    shifts = layer_shifts(probs, (8, 8))
    assert [s.shift for s in shifts] == [tuple(c) for c in layer.centers.long().tolist()]
    assert all(s.mass == 1.0 for s in shifts)
    assert all(kernel_coverage(shifts, 3).values())


def test_content_attention_is_not_convolutional():
    torch.manual_seed(0)
    layer = MultiHeadSelfAttention(8, 2)
    _, probs = layer(torch.randn(4, 6, 6, 8), need_weights=True)
    assert all(s.mass < 0.2 for s in layer_shifts(probs, (6, 6)))
    one = head_shift(probs[0, 0], (6, 6))
    assert 0 < one.mass < 0.2


def test_analysis_bad_input():
    with pytest.raises(ValueError, match=r"N = 16 for grid \(4, 4\)"):
        layer_shifts(torch.rand(2, 9, 9), (4, 4))
    with pytest.raises(ValueError, match=r"one head's \(N, N\) matrix"):
        head_shift(torch.rand(2, 16, 16), (4, 4))
