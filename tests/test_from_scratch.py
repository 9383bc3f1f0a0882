"""The chapters' from-scratch functions agree with the library, and a plausible bug in them is caught.

Chapters 01-03 build each idea in a short visible function, then assert that it agrees with `attnconv`. These are
the pytest twins of those asserts: the functions are read from the chapter's own source (so that the test follows
the chapter), run on fresh inputs against the library, and run again with one plausible bug written into their
source, which must make them disagree.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import jupytext
import pytest
import torch
import torch.nn.functional as F

from attnconv import MultiHeadSelfAttention, conv2d_as_shifts
from attnconv.construct import conv_to_mhsa

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"


def chapter_functions(stem: str, names: list[str], bug: tuple[str, str] | None = None) -> list:
    """The top-level functions ``names`` defined in the code cells of ``notebooks/<stem>.md``; with ``bug`` =
    ``(old, new)``, ``old`` (which must occur) is replaced by ``new`` in their source first."""
    source = "\n\n".join(
        ast.get_source_segment(cell.source, node)
        for cell in jupytext.read(NOTEBOOKS / f"{stem}.md").cells if cell.cell_type == "code"
        for node in ast.parse(re.sub(r"(?m)^(\s*)%.*$", r"\1pass", cell.source)).body
        if isinstance(node, ast.FunctionDef) and node.name in names
    )
    if bug is not None:
        assert bug[0] in source, f"{stem}: {bug[0]!r} is not in the chapter's function any more"
        source = source.replace(bug[0], bug[1])
    namespace = {"torch": torch, "F": F}
    exec(compile(source, f"notebooks/{stem}.md", "exec"), namespace)
    missing = [n for n in names if n not in namespace]
    assert not missing, f"{stem}: no function {missing}"
    return [namespace[n] for n in names]


# ----- chapter 01: a convolution as shifted copies ------------------------------------------------------------

CH01 = "01_convolution_as_shifts"


@pytest.mark.parametrize("kernel_size, padding", [((3, 3), 1), ((2, 3), 0), ((5, 5), 2), ((3, 1), 3)])
def test_ch01_conv_from_scratch_equals_the_library_and_torch(kernel_size, padding):
    (conv2d_from_scratch,) = chapter_functions(CH01, ["conv2d_from_scratch"])
    g = torch.Generator().manual_seed(1)
    x = torch.randn(2, 9, 7, 3, generator=g, dtype=torch.float64)
    conv = torch.nn.Conv2d(3, 4, kernel_size, padding=padding, dtype=torch.float64)
    ours = conv2d_from_scratch(x, conv.weight, conv.bias, padding)
    torch.testing.assert_close(ours, conv2d_as_shifts(x, conv.weight, conv.bias, padding=padding), rtol=0, atol=1e-12)
    torch.testing.assert_close(ours, conv(x.permute(0, 3, 1, 2)).permute(0, 2, 3, 1), rtol=0, atol=1e-12)


def test_ch01_a_flipped_kernel_is_caught():
    """Reading tap K-1-a instead of a (a true convolution, not PyTorch's cross-correlation) must disagree."""
    (flipped,) = chapter_functions(CH01, ["conv2d_from_scratch"],
                                   bug=("weight[:, :, a1, a2]", "weight[:, :, k1 - 1 - a1, k2 - 1 - a2]"))
    x = torch.randn(1, 6, 6, 2, dtype=torch.float64)
    conv = torch.nn.Conv2d(2, 3, 3, padding=1, dtype=torch.float64)
    assert (flipped(x, conv.weight, conv.bias, 1) - conv2d_as_shifts(x, conv.weight, conv.bias, padding=1)).abs().max() > 1e-3


# ----- chapter 02: multi-head self-attention one equation at a time -------------------------------------------

CH02 = "02_self_attention"
CH02_NAMES = ["split_heads", "project", "attention_logits", "merge_heads"]


def _from_scratch_forward(fns, layer, flat):
    _, project, attention_logits, merge_heads = fns
    q, k, v = (project(flat, getattr(layer, n).weight.T, getattr(layer, n).bias, layer.num_heads)
               for n in ("q_proj", "k_proj", "v_proj"))
    probs = torch.softmax(attention_logits(q, k), dim=-1)
    return (q, k, v), probs, merge_heads(probs @ v, layer.out_proj.weight.T, layer.out_proj.bias)


@pytest.mark.parametrize("embed_dim, num_heads", [(12, 4), (8, 1), (6, 3)])
def test_ch02_steps_equal_the_library_methods_and_forward(embed_dim, num_heads):
    fns = chapter_functions(CH02, CH02_NAMES)
    torch.manual_seed(2)
    layer = MultiHeadSelfAttention(embed_dim, num_heads).double()
    flat = torch.randn(2, 20, embed_dim, dtype=torch.float64)
    (q, k, v), probs, out = _from_scratch_forward(fns, layer, flat)
    for mine, theirs in zip((q, k, v), layer.project(flat)):
        torch.testing.assert_close(mine, theirs, rtol=0, atol=1e-12)
    torch.testing.assert_close(probs, torch.softmax(layer.logits((20,), q, k), dim=-1), rtol=0, atol=1e-12)
    torch.testing.assert_close(out, layer.merge_heads(probs @ v, (20,)), rtol=0, atol=1e-12)
    torch.testing.assert_close(out, layer(flat)[0], rtol=0, atol=1e-12)


def test_ch02_logits_without_the_scale_are_caught():
    fns = chapter_functions(CH02, CH02_NAMES, bug=(" / q.shape[-1] ** 0.5", ""))
    torch.manual_seed(3)
    layer = MultiHeadSelfAttention(12, 4).double()
    flat = torch.randn(1, 10, 12, dtype=torch.float64)
    assert (_from_scratch_forward(fns, layer, flat)[2] - layer(flat)[0]).abs().max() > 1e-6


def test_ch02_one_hot_attention_is_a_shift():
    """The chapter's 'head that shifts': A[q, j] = 1[j = q + Δ] makes A X = shift_Δ(X)."""
    from attnconv import shift

    x = torch.randn(5, 6, 2, dtype=torch.float64)
    delta = (-1, 2)
    a = torch.zeros(30, 30, dtype=torch.float64)
    for r in range(5):
        for c in range(6):
            if 0 <= r + delta[0] < 5 and 0 <= c + delta[1] < 6:
                a[r * 6 + c, (r + delta[0]) * 6 + c + delta[1]] = 1.0
    torch.testing.assert_close((a @ x.reshape(30, 2)).view(5, 6, 2), shift(x, delta), rtol=0, atol=0)
    assert not torch.equal((a.T @ x.reshape(30, 2)).view(5, 6, 2), shift(x, delta)), "the transpose shifts by -Δ"


# ----- chapter 03: a convolution from K² quadratic heads ------------------------------------------------------

CH03 = "03_attention_can_express_convolution"


@pytest.mark.parametrize("kernel_size", [1, 3, 5])
def test_ch03_heads_from_scratch_equal_conv_to_mhsa_and_the_conv(kernel_size):
    (conv_by_attention,) = chapter_functions(CH03, ["conv_by_attention"])
    torch.manual_seed(4)
    conv = torch.nn.Conv2d(2, 3, kernel_size, padding=kernel_size // 2, dtype=torch.float64)
    x = torch.randn(2, 2, 7, 6, dtype=torch.float64)  # (B, C, H, W), the conv's layout
    ours = conv_by_attention(x.permute(0, 2, 3, 1), conv.weight, conv.bias, alpha=64.0)
    torch.testing.assert_close(ours, conv_to_mhsa(conv, alpha=64.0)(x).permute(0, 2, 3, 1), rtol=0, atol=1e-12)
    torch.testing.assert_close(ours, conv(x).permute(0, 2, 3, 1), rtol=0, atol=1e-12)
    if kernel_size > 1:  # a small α blurs every head, and the check sees it
        blurred = conv_by_attention(x.permute(0, 2, 3, 1), conv.weight, conv.bias, alpha=1.0)
        assert (blurred - ours).abs().max() > 1e-3


def test_ch03_heads_centred_on_minus_delta_are_caught():
    """The sign slip of the exercise ex-03-sign: centres -Δ compute the flipped kernel, not the conv."""
    (flipped,) = chapter_functions(CH03, ["conv_by_attention"], bug=("[a1 - p, a2 - p]", "[p - a1, p - a2]"))
    torch.manual_seed(5)
    conv = torch.nn.Conv2d(2, 3, 3, padding=1, dtype=torch.float64)
    x = torch.randn(1, 2, 6, 6, dtype=torch.float64)
    assert (flipped(x.permute(0, 2, 3, 1), conv.weight, conv.bias, alpha=64.0) - conv(x).permute(0, 2, 3, 1)).abs().max() > 1e-3


def test_the_chapters_define_only_short_functions_without_argument_checks():
    for stem, names in [(CH01, ["conv2d_from_scratch"]), (CH02, CH02_NAMES), (CH03, ["conv_by_attention"])]:
        for cell in jupytext.read(NOTEBOOKS / f"{stem}.md").cells:
            if cell.cell_type != "code":
                continue
            for node in ast.parse(re.sub(r"(?m)^(\s*)%.*$", r"\1pass", cell.source)).body:
                if isinstance(node, ast.FunctionDef) and node.name in names:
                    assert node.end_lineno - node.lineno + 1 <= 20, f"{stem}: {node.name} is long"
                    assert not any(isinstance(n, ast.Raise) for n in ast.walk(node)), f"{stem}: {node.name} raises"
