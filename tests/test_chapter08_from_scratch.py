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

from attnconv import CompositeAttention, DynamicConv1d, LightweightConv1d
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


# ----- Han et al. 2022: local attention against (dynamic) depth-wise convolution ------------------------------------

def _mixing(layer, x: torch.Tensor, heads: int | None = None) -> torch.Tensor:
    """Each channel's token-mixing matrix ``(C, N, N)`` of a library layer on the tokens ``x`` ``(N, C)``: attention's
    probabilities repeated over the channels of each head; a convolution's response to one impulse per token."""
    n, c = x.shape
    impulses = torch.eye(n, dtype=x.dtype)[:, :, None].expand(n, n, c)
    if isinstance(layer, CompositeAttention):
        return layer(x[None], need_weights=True)[1][0].repeat_interleave(c // heads, dim=0).detach()
    if isinstance(layer, DynamicConv1d):
        return layer(x[None].expand(n, n, c), values=impulses).permute(2, 1, 0).detach()
    return layer(impulses).permute(2, 1, 0).detach()


@pytest.mark.parametrize("n, c, heads, k", [(9, 6, 3, 1), (11, 4, 2, 3), (7, 8, 4, 2)])
def test_mixing_matrices_from_scratch_are_the_librarys(n, c, heads, k):
    ns = chapter_functions("window_attention_mixing", "depthwise_mixing", "dynamic_depthwise_mixing")
    torch.manual_seed(n + k)
    x = torch.randn(n, c, dtype=torch.float64)
    window = CompositeAttention(c, heads, max_distance=k, max_length=n, fixed=False, window=True, bias=False).double()
    w_qry, w_key = (p.weight.detach().T.reshape(c, heads, -1).transpose(0, 1) for p in (window.q_proj, window.k_proj))
    torch.testing.assert_close(ns["window_attention_mixing"](x, w_qry, w_key, k).repeat_interleave(c // heads, dim=0),
                               _mixing(window, x, heads))
    conv = LightweightConv1d(c, c, 2 * k + 1, weight_softmax=False).double()
    torch.testing.assert_close(ns["depthwise_mixing"](conv.weight.detach(), n), _mixing(conv, x))
    dynamic = DynamicConv1d(c, c, 2 * k + 1, bias=False).double()
    torch.testing.assert_close(ns["dynamic_depthwise_mixing"](x, dynamic.kernel_proj.weight.detach().T, k),
                               _mixing(dynamic, x))
    # wrong variant: the kernel read at i - j instead of j - i (a flipped kernel) is another matrix
    assert not torch.allclose(ns["depthwise_mixing"](conv.weight.detach(), n).transpose(1, 2), _mixing(conv, x))


def _properties(mix, x, x_other, k) -> dict:
    """The chapter's three statements, measured: the same definitions as its folded cell."""
    n = x.shape[0]
    band = (torch.arange(n)[None, :] - torch.arange(n)[:, None]).abs() <= k
    a, a_other = mix(x), mix(x_other)
    return {"sparse (the band)": all(torch.equal(m.abs() > 1e-12, band) for m in torch.cat([a, a_other])),
            "shared across positions": all(torch.allclose(m[1:, 1:], m[:-1, :-1]) for m in a),
            "shared across channels": torch.allclose(a[0], a[1]),
            "dynamic": not torch.allclose(a, a_other)}


def chapter_properties() -> dict:
    """The table of properties the chapter asserts (``assert properties == {...}``), read from the chapter."""
    import ast

    for cell in jupytext.read(CHAPTER).cells:
        if cell.cell_type == "code" and "assert properties == {" in cell.source:
            for node in ast.walk(ast.parse(cell.source)):
                if isinstance(node, ast.Assert) and isinstance(node.test, ast.Compare) \
                        and getattr(node.test.left, "id", None) == "properties":
                    return ast.literal_eval(node.test.comparators[0])
    raise AssertionError("chapter 08 asserts no table of properties")


@pytest.mark.parametrize("seed, n, c, heads, k", [(0, 10, 4, 2, 2), (1, 13, 6, 3, 1), (2, 9, 8, 2, 3)])
def test_the_chapters_statements_hold_on_other_sizes_and_each_wrong_variant_breaks_one(seed, n, c, heads, k):
    torch.manual_seed(seed)
    x, x_other = torch.randn(2, n, c, dtype=torch.float64)
    window = CompositeAttention(c, heads, max_distance=k, max_length=n, fixed=False, window=True, bias=False).double()
    conv = LightweightConv1d(c, c, 2 * k + 1, weight_softmax=False).double()
    dynamic = DynamicConv1d(c, c, 2 * k + 1, bias=False).double()
    measured = {name: _properties(lambda z, layer=layer: _mixing(layer, z, heads), x, x_other, k)
                for name, layer in (("window attention", window), ("depth-wise convolution", conv),
                                    ("dynamic depth-wise convolution", dynamic))}
    claimed = chapter_properties()
    assert measured == claimed
    assert claimed["window attention"] != claimed["depth-wise convolution"]  # the table says they differ
    # attention without its window is dense: not the convolution's connectivity
    everywhere = CompositeAttention(c, heads, max_distance=k, max_length=n, fixed=False, bias=False).double()
    assert not _properties(lambda z: _mixing(everywhere, z, heads), x, x_other, k)["sparse (the band)"]
    # one kernel for all channels (a lightweight convolution with one head) shares across channels
    shared = LightweightConv1d(c, 1, 2 * k + 1, weight_softmax=False).double()
    assert _properties(lambda z: _mixing(shared, z), x, x_other, k)["shared across channels"]
    # attention by position only (a windowed relative bias, no content) is static, and inside the sequence the same
    # kernel at every position: a (renormalised) lightweight convolution, not what the chapter says of attention
    bias_only = CompositeAttention(c, heads, max_distance=k, max_length=n, content=False, window=True,
                                   bias=False).double()
    assert not _properties(lambda z: _mixing(bias_only, z, heads), x, x_other, k)["dynamic"]
    interior = _mixing(bias_only, x, heads)[0, k:n - k, :]
    assert all(torch.allclose(interior[i, i:i + 2 * k + 1], interior[0, :2 * k + 1]) for i in range(n - 2 * k))


# ----- mimetic initialisation (Trockman & Kolter 2023) ---------------------------------------------------------------

@pytest.mark.parametrize("c, heads, d_h", [(12, 3, 4), (16, 2, 8), (64, 9, 32)])
def test_mimetic_pair_from_scratch_is_the_library(c, heads, d_h):
    from attnconv import MultiHeadSelfAttention
    from attnconv.mimetic import mimetic_init_, query_key_products, value_output_product

    ns = chapter_functions("mimetic_pair")
    layer = MultiHeadSelfAttention(c, heads, head_dim=d_h).double()
    targets = mimetic_init_(layer, generator=torch.Generator().manual_seed(c))
    for h in range(heads):
        w_q, w_k_t = ns["mimetic_pair"](targets.query_key[h], min(d_h, c))
        torch.testing.assert_close(w_q @ w_k_t, query_key_products(layer)[h])
        # wrong variant: U S and S V^T (no square roots) multiply to U S^2 V^T, another matrix
        u, s, vh = torch.linalg.svd(targets.query_key[h])
        wrong = (u[:, :d_h] * s[:d_h]) @ (s[:d_h, None] * vh[:d_h])
        assert not torch.allclose(wrong, query_key_products(layer)[h], atol=1e-3)
    w_v, w_proj = ns["mimetic_pair"](targets.value_output, min(heads * d_h, c))
    torch.testing.assert_close(w_v @ w_proj, value_output_product(layer))


def test_mixing_and_mimetic_figures_are_legible():
    import matplotlib.pyplot as plt

    from attnconv.figures.legibility import overprinted_texts, smallest_text_px
    from attnconv.figures.mixing import plot_mimetic_attention, plot_mixing_matrices

    rng = np.random.default_rng(0)
    grid = [[rng.normal(size=(12, 12)) for _ in range(3)] for _ in range(3)]
    image = rng.integers(0, 255, size=(32, 32, 3)).astype(np.uint8)
    figures = [plot_mixing_matrices(grid, ["window attention", "depth-wise conv", "dynamic dw conv"],
                                    ["channel 1, X", "channel 2, X", "channel 1, X′"]),
               plot_mimetic_attention(image, (8, 8), (3, 4), rng.random(64), rng.random(64), rng.normal(size=(8, 8)))]
    for fig in figures:
        shown = min(1.0, 768 / (fig.get_size_inches()[0] * fig.dpi))
        assert smallest_text_px(fig) * shown >= 9, fig
        assert overprinted_texts(fig) == []
        plt.close(fig)
    narrow = [plot_mixing_matrices(grid, ["attention", "dw conv", "dynamic"], ["ch. 1, X", "ch. 2, X", "ch. 1, X′"],
                                   compact=True),
              plot_mimetic_attention(image, (8, 8), (3, 4), rng.random(64), rng.random(64), rng.normal(size=(8, 8)),
                                     ncols=1)]
    for fig in narrow:
        assert fig.get_size_inches()[0] * fig.dpi <= 480 and smallest_text_px(fig) * 352 / 440 >= 9
        assert overprinted_texts(fig) == []
        plt.close(fig)
    with pytest.raises(ValueError, match="matrices must be"):
        plot_mixing_matrices(grid[:2], ["a", "b", "c"], ["x", "y", "z"])
    with pytest.raises(ValueError, match="ncols"):
        plot_mimetic_attention(image, (8, 8), (3, 4), rng.random(64), rng.random(64), rng.normal(size=(8, 8)), ncols=3)
