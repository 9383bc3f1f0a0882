"""The from-scratch functions that chapters 04 and 05 show a reader, read from the chapters themselves and checked
against the library on other sizes than the chapter's, with a plausible wrong variant failing each check."""

from __future__ import annotations

from pathlib import Path

import jupytext
import pytest
import torch

from attnconv import LightweightConv1d
from attnconv.construct import lightconv_to_attention
from attnconv.positional import QuadraticEncoding

ROOT = Path(__file__).resolve().parents[1]


def chapter_functions(chapter: str, *names: str) -> dict:
    """Run the code cell of ``notebooks/<chapter>.md`` that defines ``names`` (only its ``def`` blocks)."""
    notebook = jupytext.read(ROOT / "notebooks" / f"{chapter}.md")
    for cell in notebook.cells:
        if cell.cell_type == "code" and all(f"def {name}(" in cell.source for name in names):
            source = cell.source.split("\n\n\n")  # the defs, then the cell's own check
            namespace = {"torch": torch}
            exec("\n\n\n".join(part for part in source if part.lstrip().startswith("def ")), namespace)
            return namespace
    raise AssertionError(f"{chapter} has no code cell defining {names}")


CH05 = chapter_functions("05_relative_positions_are_convolutions", "relative_bias_attention", "lightweight_conv")
CH04 = chapter_functions("04_positional_encoding_zoo", "quadratic_logits")


@pytest.mark.parametrize("n, k, heads", [(7, 1, 1), (12, 2, 4), (5, 3, 2)])
def test_chapter05_scratch_functions_agree_with_the_library(n, k, heads):
    torch.manual_seed(n + k)
    conv = LightweightConv1d(4 * heads, heads, kernel_size=2 * k + 1, boundary="renormalize").double()
    x = torch.randn(1, n, 4 * heads, dtype=torch.float64)
    out = lightconv_to_attention(conv)(x)[0]
    for h, w in enumerate(conv.weight.detach()):
        channels = slice(4 * h, 4 * h + 4)
        torch.testing.assert_close(CH05["lightweight_conv"](x[0, :, channels], w), out[0, :, channels],
                                   rtol=0, atol=1e-12)
        torch.testing.assert_close(CH05["relative_bias_attention"](x[0, :, channels], w), out[0, :, channels],
                                   rtol=0, atol=1e-12)


def test_chapter05_check_fails_for_a_flipped_kernel():
    """Indexing the bias by i - j instead of j - i is the plausible bug; the chapter's assert catches it."""
    torch.manual_seed(0)
    x, b = torch.randn(9, 4, dtype=torch.float64), torch.tensor([-1.0, 0.5, 1.0, 2.0, -1.0], dtype=torch.float64)
    flipped = CH05["relative_bias_attention"](x, b.flip(0))
    assert (flipped - CH05["lightweight_conv"](x, b)).abs().max() > 1e-3


@pytest.mark.parametrize("grid, center, alpha", [((6, 5), [1, -2], 0.3), ((4, 4), [0, 0], 2.0)])
def test_chapter04_quadratic_logits_give_the_library_attention(grid, center, alpha):
    library = torch.softmax(QuadraticEncoding(1, centers=[center], alpha=[alpha])(grid)[0], -1)
    ours = torch.softmax(CH04["quadratic_logits"](grid, center, alpha), -1)
    torch.testing.assert_close(ours, library, rtol=0, atol=1e-6)
    swapped = torch.softmax(CH04["quadratic_logits"](grid, center[::-1], alpha), -1)
    assert center[0] == center[1] or (swapped - library).abs().max() > 1e-3  # (row, col) order matters
