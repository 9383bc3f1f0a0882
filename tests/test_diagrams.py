"""attnconv.figures.diagrams: the explanatory diagrams of chapters 01-03 draw the library's numbers and stay legible
on a phone."""

from __future__ import annotations

import io

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from matplotlib.text import Text  # noqa: E402
from PIL import Image  # noqa: E402

from attnconv import conv1d_as_shifts  # noqa: E402
from attnconv.figures.diagrams import (plot_attention_weighted_sum, plot_conv_as_shift_sum,  # noqa: E402
                                       plot_heads_to_kernel, plot_quadratic_bump)
from attnconv.figures.legibility import MIN_TEXT_PX, PHONE_COLUMN_PX, png_bytes, smallest_text_px  # noqa: E402

SOBEL = torch.tensor([[1.0, 0.0, -1.0], [2.0, 0.0, -2.0], [1.0, 0.0, -1.0]])
DIAGRAMS = {
    "shift-sum": lambda: plot_conv_as_shift_sum([3, 1, 4, 1, 5, 9, 2, 6], [1, 2, -1], query=3),
    "weighted-sum": lambda: plot_attention_weighted_sum(torch.tensor([0.5, 2.0, -1.0, 1.0]), torch.eye(4)[:, :3],
                                                        ["a", "b", "c", "d"], query=1),
    "heads-to-kernel": lambda: plot_heads_to_kernel(SOBEL),
    "quadratic-bump": lambda: plot_quadratic_bump(),
}


def _texts(fig):
    return [t.get_text() for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()]


@pytest.mark.parametrize("name", DIAGRAMS)
def test_a_diagram_shows_whole_and_legible_in_a_phone_column(name):
    fig = DIAGRAMS[name]()
    width = Image.open(io.BytesIO(png_bytes(fig, dpi=100))).size[0]
    shown = smallest_text_px(fig, 100) * min(1.0, PHONE_COLUMN_PX / width)
    assert shown >= MIN_TEXT_PX, f"{name}: smallest text {shown:.1f} px in a {PHONE_COLUMN_PX} px column"
    assert fig.get_size_inches()[0] <= 5.0, f"{name}: too wide to stack on a phone"
    assert not any("_" in t and "$" not in t for t in _texts(fig)), f"{name}: a raw underscore in its text"
    plt.close(fig)


def test_the_shift_sum_writes_the_convolution_the_library_computes():
    x, w = [3, 1, 4, 1, 5, 9, 2, 6], [1, 2, -1]
    fig = plot_conv_as_shift_sum(x, w, query=3)
    expected = conv1d_as_shifts(torch.tensor(x, dtype=torch.float64)[None, :, None],
                                torch.tensor(w, dtype=torch.float64).view(1, 1, 3), padding=1)[0, :, 0]
    ax = fig.axes[0]
    bottom = sorted((t.get_position()[0], t.get_text()) for t in ax.texts if t.get_position()[1] == 4.5)
    assert [f"{v:g}" for v in expected.tolist()] == [text for col, text in bottom if col > 0]  # the sum row
    assert "1" == f"{expected[3].item():g}"  # the caption's worked example: 1·4 + 2·1 − 1·5 = 1
    plt.close(fig)


def test_the_weighted_sum_shows_softmax_weights():
    scores = torch.tensor([0.5, 2.0, -1.0, 1.0])
    fig = plot_attention_weighted_sum(scores, torch.eye(4)[:, :3], ["a", "b", "c", "d"], query=1)
    weights = [f"{p:.2f}" for p in torch.softmax(scores, 0).tolist()]
    assert all(w in _texts(fig) for w in weights)
    plt.close(fig)


def test_heads_to_kernel_lights_exactly_one_key_per_head():
    fig = plot_heads_to_kernel(SOBEL)
    head_axes = [ax for ax in fig.axes if ax.get_title().startswith("head")]
    assert len(head_axes) == 9
    for ax in head_axes:
        rgb = ax.get_images()[0].get_array()
        assert int((rgb.sum(-1) < 3).sum()) == 1, ax.get_title()  # one coloured cell, white elsewhere
    plt.close(fig)
