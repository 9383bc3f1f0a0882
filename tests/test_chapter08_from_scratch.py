"""Chapter 08's from-scratch functions, read from the chapter itself and checked against the library on other
sizes than the chapter's, each with a plausible wrong variant that the same check catches; and the chapter's
figure helpers stay legible."""

from __future__ import annotations

import itertools
from pathlib import Path

import jupytext
import matplotlib
import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from attnconv import LightweightConv1d
from attnconv.construct.patches import conv_to_patch_conv, patchify
from attnconv.ssm import scalar_ssm
from attnconv.toeplitz import ToeplitzMultiplier

matplotlib.use("Agg")

ROOT = Path(__file__).resolve().parents[1]
CHAPTER = ROOT / "notebooks" / "08_after_the_papers.md"


def chapter_functions(*names: str) -> dict:
    """The ``def`` blocks of the chapter's code cell that defines ``names``, run with the chapter's imports."""
    for cell in jupytext.read(CHAPTER).cells:
        if cell.cell_type == "code" and all(f"def {name}(" in cell.source for name in names):
            namespace = {"torch": torch, "F": F, "itertools": itertools}
            parts = cell.source.split("\n\n\n")
            exec("\n\n\n".join(p for p in parts if p.lstrip().startswith("def ")), namespace)
            return namespace
    raise AssertionError(f"chapter 08 has no code cell defining {names}")


@pytest.mark.parametrize("kernel_size, patch_size", [(3, 2), (5, 2), (7, 3), (9, 4)])
def test_patch_construction_from_scratch_is_the_library_and_nn_conv2d(kernel_size, patch_size):
    ns = chapter_functions("patch_tokens", "patch_conv_weight")
    torch.manual_seed(kernel_size)
    conv = nn.Conv2d(2, 3, kernel_size, padding=(kernel_size - 1) // 2).double()
    x = torch.randn(1, 2, 3 * patch_size, 2 * patch_size, dtype=torch.float64)
    tokens = ns["patch_tokens"](x, patch_size)
    assert torch.equal(tokens, patchify(x, patch_size))
    weight = ns["patch_conv_weight"](conv.weight.detach(), patch_size)
    torch.testing.assert_close(weight, conv_to_patch_conv(conv, patch_size).weight.detach())
    out = F.conv2d(tokens, weight, conv.bias.detach().repeat_interleave(patch_size ** 2), padding=1)
    torch.testing.assert_close(out, patchify(conv(x), patch_size))


def test_patch_construction_with_swapped_in_patch_positions_fails():
    ns = chapter_functions("patch_tokens", "patch_conv_weight")
    source = [c.source for c in jupytext.read(CHAPTER).cells if "def patch_conv_weight(" in c.source][0]
    wrong = source.replace("row, col = di * p + s - u, dj * p + t - v", "row, col = di * p + u - s, dj * p + v - t")
    assert wrong != source
    namespace = {"torch": torch, "itertools": itertools}
    exec("\n\n\n".join(p for p in wrong.split("\n\n\n") if p.lstrip().startswith("def ")), namespace)
    torch.manual_seed(1)
    conv = nn.Conv2d(1, 1, 3, padding=1).double()
    x = torch.randn(1, 1, 4, 4, dtype=torch.float64)
    out = F.conv2d(ns["patch_tokens"](x, 2), namespace["patch_conv_weight"](conv.weight.detach(), 2),
                   conv.bias.detach().repeat_interleave(4), padding=1)
    assert (out - patchify(conv(x), 2)).abs().max() > 1e-3


@pytest.mark.parametrize("a", [0.3, -0.7, 0.99])
def test_ssm_three_ways_from_scratch(a):
    ns = chapter_functions("ssm_three_ways")
    x = torch.randn(13, dtype=torch.float64)
    recurrence, convolution, masked = ns["ssm_three_ways"](x, a, 0.4, 2.0)
    for y in (recurrence, convolution, masked):
        torch.testing.assert_close(y, scalar_ssm(x, a, 0.4, 2.0))
    # a mask one power too high is not the model
    assert not torch.allclose(masked * a, recurrence)


def test_relative_attention_keeps_a_constant_and_the_toeplitz_fix_moves_it():
    ns = chapter_functions("relative_attention", "toeplitz")
    torch.manual_seed(3)
    n = 7
    x = torch.full((n, 3), -1.5, dtype=torch.float64)
    w_qry, w_key = torch.randn(2, 3, 3, dtype=torch.float64)
    out, probs = ns["relative_attention"](x, w_qry, w_key, 5 * torch.randn(2 * n - 1, dtype=torch.float64))
    torch.testing.assert_close(out, x)
    torch.testing.assert_close(probs.sum(-1), torch.ones(n, dtype=torch.float64))
    module = ToeplitzMultiplier(n).double()
    with torch.no_grad():
        module.weight.copy_(torch.randn(1, 2 * n - 1))
    torch.testing.assert_close(ns["toeplitz"](module.weight[0].detach(), n), module.matrix(n)[0].detach())
    # the transposed matrix (c read at i - j) is a different matrix
    assert not torch.allclose(ns["toeplitz"](module.weight[0].detach(), n).T, module.matrix(n)[0].detach())


def test_coatnet_without_content_is_a_lightweight_conv_inside_and_a_plain_one_after():
    ns = chapter_functions("coatnet_attention")
    n, c = 9, 4
    x = torch.randn(n, c, dtype=torch.float64)
    w = torch.randn(2 * n - 1, dtype=torch.float64)
    inside = LightweightConv1d(c, 1, 2 * n - 1, boundary="renormalize").double()
    after = LightweightConv1d(c, 1, 2 * n - 1, weight_softmax=False).double()
    with torch.no_grad():
        inside.weight.copy_(w.flip(0)[None])
        after.weight.copy_(w.flip(0)[None])
    torch.testing.assert_close(ns["coatnet_attention"](x, w, content=0.0), inside(x[None])[0])
    torch.testing.assert_close(ns["coatnet_attention"](x, w, content=0.0, inside=False), x.mean(0) + after(x[None])[0])
    with torch.no_grad():  # the kernel not flipped: CoAtNet's w_(i-j) read as the library's j - i
        inside.weight.copy_(w[None])
    assert not torch.allclose(ns["coatnet_attention"](x, w, content=0.0), inside(x[None])[0])
    assert not torch.allclose(ns["coatnet_attention"](x, w, content=1.0), ns["coatnet_attention"](x, w, content=0.0))


def test_chapter_figures_are_legible_and_refuse_bad_layouts():
    import matplotlib.pyplot as plt

    from attnconv.figures.after_papers import plot_coatnet_kernels, plot_patch_reach, plot_toeplitz_fix
    from attnconv.figures.family_map import FAMILY_MAP, plot_family_map
    from attnconv.figures.legibility import overprinted_texts, smallest_text_px

    figures = [plot_family_map(ncols=2), plot_family_map(ncols=1), plot_patch_reach(5, 4, (7, 4)),
               plot_toeplitz_fix([np.eye(4)] * 3, ["a", "b", "c"], [np.ones(4)], ["x"], ncols=2),
               plot_coatnet_kernels(np.arange(-2, 3), np.ones(5) / 5, np.ones(5), np.arange(3.0), np.arange(3.0))]
    for fig in figures:
        shown = min(1.0, 768 / (fig.get_size_inches()[0] * fig.dpi))
        assert smallest_text_px(fig) * shown >= 9, fig
        assert overprinted_texts(fig) == []
        plt.close(fig)
    narrow = plot_family_map(ncols=1)
    assert narrow.get_size_inches()[0] * narrow.dpi <= 480 and smallest_text_px(narrow) * 352 / 440 >= 9
    plt.close(narrow)
    assert len({e.number for e in FAMILY_MAP}) == len(FAMILY_MAP)
    with pytest.raises(ValueError, match="ncols"):
        plot_family_map(ncols=3)
