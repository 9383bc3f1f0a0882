"""Theorem 3.1 as stated in chapter 03 (rank W_Δ ≤ D_h, guaranteed by D_h ≥ min(D_in, D_out)) covers convolutions
that the paper's wording (min(D_h, D_out) output channels) leaves out: more output channels than D_h."""

from __future__ import annotations

import pytest
import torch

from attnconv.construct import conv_to_mhsa


@pytest.mark.parametrize("d_in, d_out", [(2, 6), (1, 5), (3, 3)])
def test_heads_of_dimension_min_d_in_d_out_express_the_convolution(d_in, d_out):
    torch.manual_seed(d_in * 10 + d_out)
    conv = torch.nn.Conv2d(d_in, d_out, kernel_size=3, padding=1, dtype=torch.float64)
    x = torch.randn(2, d_in, 7, 9, dtype=torch.float64)
    layer = conv_to_mhsa(conv, head_dim=min(d_in, d_out))
    torch.testing.assert_close(layer(x), conv(x), rtol=0, atol=1e-12)


def test_heads_one_dimension_short_of_the_rank_are_refused():
    """The statement can fail: D_h = min(D_in, D_out) - 1 is below a full-rank tap's rank."""
    torch.manual_seed(0)
    conv = torch.nn.Conv2d(2, 6, kernel_size=3, padding=1, dtype=torch.float64)
    with pytest.raises(ValueError, match="rank 2 > head_dim=1"):
        conv_to_mhsa(conv, head_dim=1)
