"""Chapter 05's figures: each returns a Figure and does not fail on edge cases (k = 0, -inf and NaN taps)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import torch  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from attnconv.figures.sequence import (  # noqa: E402
    plot_bias_widget_frame,
    plot_boundary_effect,
    plot_dynamic_kernels,
    plot_kernel_and_attention,
    plot_kernel_terms,
)


def test_figures():
    words = [f"w{i}" for i in range(6)]
    band = torch.rand(6, 5)
    band[0, 0] = float("-inf")
    band[1, 1] = float("nan")
    figures = [
        plot_kernel_and_attention(torch.softmax(torch.randn(5), 0), torch.rand(6, 6), words, title="t"),
        plot_bias_widget_frame([0.0, 1.0, 0.5], length=5),
        plot_bias_widget_frame([0.0], length=3),
        plot_dynamic_kernels(band, words),
        plot_boundary_effect(torch.softmax(torch.randn(5), 0), length=8),
        plot_kernel_terms({"a": torch.randn(5), "b": torch.full((5,), float("nan"))}, torch.rand(5), query=2, radius=2),
    ]
    assert all(isinstance(f, Figure) for f in figures)
    plt.close("all")
