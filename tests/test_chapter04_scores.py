"""Chapter 04's head scores: content-only heads put about 1/N on their best shift (the chapter prints the mass times
N, close to 1, since 1/256 prints as 0.00), constructed heads exactly 1, and a quadratic head far more than 1/N."""

from __future__ import annotations

import pytest
import torch

from attnconv import MultiHeadSelfAttention
from attnconv.analysis import layer_shifts
from attnconv.construct import conv_to_mhsa
from attnconv.positional import QuadraticEncoding


@pytest.mark.parametrize("seed", range(3))
def test_content_only_heads_score_about_one_over_n(seed):
    torch.manual_seed(seed)
    grid = (16, 16)
    tokens = torch.rand(1, *grid, 12)  # (B, H, W, C), like the chapter's 2x2 patches of an image
    _, probs = MultiHeadSelfAttention(12, 4)(tokens, need_weights=True)
    n = grid[0] * grid[1]
    ratios = [s.mass * n for s in layer_shifts(probs, grid)]
    assert all(0.8 <= r <= 1.5 for r in ratios), ratios  # close to 1; a quadratic head scores over 10
    assert f"{max(ratios) / n:.2f}" == "0.00"  # why the chapter prints the ratio, not the mass


def test_the_ratio_check_can_fail():
    """A quadratic head (α = 1) and a constructed one are far from 1/N: the check tells them apart."""
    grid, n = (16, 16), 256
    tokens = torch.rand(1, *grid, 12)
    quadratic = MultiHeadSelfAttention(12, 1, content=False,
                                       positional=QuadraticEncoding(1, centers=[[1.0, 0.0]], alpha=1.0))
    _, probs = quadratic(tokens, need_weights=True)
    assert layer_shifts(probs, grid)[0].mass * n > 10
    _, conv_probs = conv_to_mhsa(torch.nn.Conv2d(12, 8, 3, padding=1))(tokens.permute(0, 3, 1, 2), need_weights=True)
    assert all(s.mass == 1.0 for s in layer_shifts(conv_probs, (18, 18)))
