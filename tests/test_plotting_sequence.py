"""Chapter 05's figures: each returns a Figure and does not fail on edge cases (k = 0, -inf and NaN taps)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import torch  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from attnconv.plotting_sequence import (  # noqa: E402
    show_bias_widget_frame,
    show_boundary_effect,
    show_dynamic_kernels,
    show_kernel_and_attention,
    show_kernel_terms,
)


def test_figures():
    words = [f"w{i}" for i in range(6)]
    band = torch.rand(6, 5)
    band[0, 0] = float("-inf")
    band[1, 1] = float("nan")
    figures = [
        show_kernel_and_attention(torch.softmax(torch.randn(5), 0), torch.rand(6, 6), words, title="t"),
        show_bias_widget_frame([0.0, 1.0, 0.5], length=5),
        show_bias_widget_frame([0.0], length=3),
        show_dynamic_kernels(band, words),
        show_boundary_effect(torch.softmax(torch.randn(5), 0), length=8),
        show_kernel_terms({"a": torch.randn(5), "b": torch.full((5,), float("nan"))}, torch.rand(5), query=2, radius=2),
    ]
    assert all(isinstance(f, Figure) for f in figures)
    plt.close("all")
