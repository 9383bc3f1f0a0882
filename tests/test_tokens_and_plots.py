"""space_to_depth, and the chapters' figures."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import pytest
import torch

from attnconv import space_to_depth
from attnconv.figures.image import plot_attention, plot_shifted_copies, plot_weight_matrices


def test_space_to_depth_groups_patches():
    x = torch.arange(2 * 4 * 4 * 3).reshape(2, 4, 4, 3)
    y = space_to_depth(x, 2)
    assert y.shape == (2, 2, 2, 12)
    # Token (0, 1) holds the 2x2 patch at rows 0-1, columns 2-3, row-major, channels innermost.
    patch = x[0, 0:2, 2:4].reshape(-1)
    assert torch.equal(y[0, 0, 1], patch)


@pytest.mark.parametrize("shape, block, message", [
    ((1, 5, 4, 3), 2, "divisible by block=2"),
    ((5, 4, 3), 2, r"x must be \(B, H, W, C\)"),
    ((1, 4, 4, 3), 0, "block must be a positive integer"),
])
def test_space_to_depth_bad_input(shape, block, message):
    with pytest.raises(ValueError, match=message):
        space_to_depth(torch.zeros(shape), block)


def test_figures_have_one_panel_per_item():
    image = torch.rand(8, 8, 3)
    assert len(plot_shifted_copies(image, 3).axes) == 1 + 9  # the input near q, then one copy per shift
    assert len(plot_weight_matrices(torch.randn(4, 3, 2, 3)).axes) == 6 + 1  # plus the colour bar
    probs = torch.softmax(torch.randn(4, 16, 16), -1)
    fig = plot_attention(probs, (4, 4), (1, 2), image=image)
    assert len(fig.axes) == 1 + 4 + 1  # input, one map per head, the colour bar
    assert fig.axes[-1].get_ylabel() == "attention weight"
    with pytest.raises(ValueError, match="odd"):
        plot_shifted_copies(image, 2)
