"""Wrong answers the fuzz found, made right: the hard (α → ∞) limit at a grid's border, and GPSA's padding, overflow
and empty batch. Each test fails on the old behaviour (noted in its docstring)."""

from __future__ import annotations

import pytest
import torch

from attnconv._checks import NonFiniteResultError
from attnconv.attention import MultiHeadSelfAttention
from attnconv.gpsa import GatedPositionalSelfAttention
from attnconv.positional import QuadraticEncoding

f64 = torch.float64
# Centres that reach past every border of a 4 x 5 grid from some query: off by 1, 2 and 3 pixels.
CENTERS = [[0, 0], [1, -1], [-2, 3], [3, 1]]


def _pair(alpha: float) -> tuple[MultiHeadSelfAttention, MultiHeadSelfAttention]:
    """A hard layer and a finite-α layer with the same projections, both float64, position only."""
    torch.manual_seed(0)
    hard = MultiHeadSelfAttention(8, 4, positional=QuadraticEncoding(4, centers=CENTERS, alpha=None), content=False)
    soft = MultiHeadSelfAttention(8, 4, positional=QuadraticEncoding(4, centers=CENTERS, alpha=alpha), content=False)
    soft.v_proj.load_state_dict(hard.v_proj.state_dict())
    soft.out_proj.load_state_dict(hard.out_proj.state_dict())
    return hard.double(), soft.double()


@pytest.mark.parametrize("need_weights", [False, True])  # the factorised path and the dense one
def test_hard_attention_is_the_large_alpha_limit_at_the_borders(need_weights):
    """α = None equals α = 1e4 (whose off-target weights are e^-1e4 = 0 in float64) everywhere, borders included.
    Before, a query whose target q + Δ was off the grid attended uniformly along a row or column (0.66 apart)."""
    hard, soft = _pair(1e4)
    x = torch.randn(2, 4, 5, 8, dtype=f64, generator=torch.Generator().manual_seed(1))
    out_hard, p_hard = hard(x, need_weights=need_weights)
    out_soft, p_soft = soft(x, need_weights=need_weights)
    torch.testing.assert_close(out_hard, out_soft, rtol=0, atol=1e-12)
    if need_weights:
        torch.testing.assert_close(p_hard, p_soft, rtol=0, atol=0)


def test_hard_attention_at_a_border_reads_the_nearest_pixel():
    """Head 2 (Δ = (-2, 3)) at query (0, 4) of a 4 x 5 grid: the target (-2, 7) is off the grid in both axes, and all
    the weight goes to the nearest pixel (0, 4). A moderate α agrees on the argmax, so the rule is the softmax's."""
    hard, soft = _pair(3.0)
    p_hard = torch.softmax(hard.positional((4, 5)), -1).reshape(4, 4, 5, 4, 5)
    p_soft = torch.softmax(soft.positional((4, 5)).double(), -1).reshape(4, 4, 5, 4, 5)
    assert p_hard[2, 0, 4, 0, 4] == 1.0 and p_hard[2, 0, 4].sum() == 1.0
    assert torch.equal(p_hard.flatten(-2).argmax(-1), p_soft.flatten(-2).argmax(-1))
    assert torch.all((p_hard == 0) | (p_hard == 1))


def _gpsa() -> GatedPositionalSelfAttention:
    torch.manual_seed(0)
    return GatedPositionalSelfAttention(8, 4)


def test_gpsa_nan_in_padded_tokens_reaches_no_output_or_gradient():
    """A padded token reads as zeros before the projections. Before, NaN there made every gradient NaN."""
    layer = _gpsa()
    mask = torch.zeros(2, 3, 3, dtype=torch.bool)
    mask[0, 2] = True
    x = torch.randn(2, 3, 3, 8).masked_fill(mask[..., None], float("nan")).requires_grad_()
    out, _ = layer(x, key_padding_mask=mask)
    assert torch.isfinite(out).all()
    out[~mask].sum().backward()
    assert all(torch.isfinite(p.grad).all() for p in layer.parameters() if p.grad is not None)
    assert torch.isfinite(x.grad[~mask]).all()


def test_gpsa_overflow_is_refused():
    """Finite input at 1e20 overflows the content logits in float32. Before: an all-NaN output."""
    with pytest.raises(NonFiniteResultError, match=r"\bx\b"):
        _gpsa()(torch.randn(1, 3, 3, 8) * 1e20)


@pytest.mark.parametrize("need_weights", [False, True])
def test_gpsa_empty_batch(need_weights):
    """A batch of 0 gives an empty output (and empty weights). Before: a crash inside."""
    out, probs = _gpsa()(torch.zeros(0, 3, 3, 8), need_weights=need_weights)
    assert out.shape == (0, 3, 3, 8)
    assert (probs is None) if not need_weights else probs.shape == (0, 4, 9, 9)
