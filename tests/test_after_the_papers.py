"""Chapter 08's library and proofs: the scalar SSM's three faces, the Toeplitz multiplier, convolution on patch
tokens; each proof verifies and rejects its wrong variants for the reason it names."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from attnconv.construct.patches import (conv_to_patch_conv, conv_to_patch_mhsa, patch_heads, patchify,
                                        unpatchify)
from attnconv.proofs import after
from attnconv.ssm import causal_conv, scalar_ssm, semiseparable_mask, ssm_kernel
from attnconv.toeplitz import ToeplitzMultiplier


@pytest.mark.parametrize("a", [0.0, 0.5, -0.9, 1.0, 1.1])
def test_ssm_recurrence_kernel_and_mask_agree(a):
    torch.manual_seed(0)
    x = torch.randn(9, dtype=torch.float64)
    b, c = 1.3, -0.7
    y = scalar_ssm(x, a, b, c)
    kernel = ssm_kernel(a, b, c, 9)
    mask = semiseparable_mask(a, 9)
    assert kernel.shape == (9,) and mask.shape == (9, 9)
    torch.testing.assert_close(causal_conv(x, kernel), y)
    torch.testing.assert_close((mask * c * b) @ x, y)
    assert torch.equal(torch.triu(mask, 1), torch.zeros(9, 9, dtype=torch.float64))  # causal
    assert torch.allclose(torch.diagonal(mask, -2), torch.full((7,), a ** 2, dtype=torch.float64))  # Toeplitz
    # a wrong mask (one power too many) is not the SSM
    if a not in (0.0, 1.0):
        assert not torch.allclose((mask * a * c * b) @ x, y)


def test_ssm_refuses_bad_input_by_name():
    with pytest.raises(ValueError, match="length"):
        ssm_kernel(0.5, 1, 1, 0)
    with pytest.raises(ValueError, match="a must be finite"):
        semiseparable_mask(float("nan"), 3)
    with pytest.raises(TypeError, match="b must be a real number"):
        ssm_kernel(0.5, "1", 1, 3)
    with pytest.raises(ValueError, match="x must be a 1-D"):
        scalar_ssm(torch.zeros(2, 3), 0.5, 1, 1)
    with pytest.raises(ValueError, match="kernel must be"):
        causal_conv(torch.zeros(5), torch.zeros(3))


def test_ssd_proof_rejects_its_wrong_variants_for_the_right_reason():
    proof = after.ssm_is_conv_and_masked_attention()
    assert proof.verified and proof.scope == "induction"
    for kwargs in ({"power_shift": 1}, {"causal": False}):
        wrong = after.ssm_is_conv_and_masked_attention(**kwargs)
        assert not wrong.verified and wrong.decided, kwargs
        failing = [step.claim for step in wrong.steps if not step.verified]
        assert failing == ["the SSM is masked linear attention"], kwargs  # the recurrence itself stays proved


def test_toeplitz_multiplier_shapes_and_matrix():
    module = ToeplitzMultiplier(6, num_heads=2)
    with torch.no_grad():
        module.weight.copy_(torch.arange(22, dtype=torch.float32).reshape(2, 11))
    c = module.matrix(4)
    assert c.shape == (2, 4, 4)
    assert c[1, 0, 3] == module.weight[1, 3 + 5] and c[0, 3, 0] == module.weight[0, -3 + 5]
    assert torch.equal(c[:, 1:, 1:], c[:, :-1, :-1])  # constant along diagonals
    probs = torch.softmax(torch.randn(3, 2, 4, 4), -1)
    assert module(probs).shape == (3, 2, 4, 4)
    assert "max_len=6" in repr(module)
    fresh = ToeplitzMultiplier(4)
    torch.testing.assert_close(fresh(probs[:, :1]), probs[:, :1])  # starts as the identity


def test_toeplitz_multiplier_refuses_bad_input_by_name():
    with pytest.raises(ValueError, match="max_len"):
        ToeplitzMultiplier(0)
    with pytest.raises(ValueError, match="num_heads"):
        ToeplitzMultiplier(4, num_heads=0)
    with pytest.raises(ValueError, match="longer than max_len"):
        ToeplitzMultiplier(4).matrix(5)
    with pytest.raises(ValueError, match="probs must be"):
        ToeplitzMultiplier(4, num_heads=2)(torch.zeros(1, 1, 3, 3))


def test_constant_input_is_fixed_by_softmax_attention_and_moved_by_the_toeplitz_fix():
    torch.manual_seed(1)
    n = 7
    logits = torch.randn(1, 1, n, n) + torch.randn(2 * n - 1)[torch.arange(n)[None] - torch.arange(n)[:, None] + n - 1]
    probs = torch.softmax(logits, -1)  # content plus relative positions, inside the softmax
    v = torch.full((n, 1), 2.5)
    torch.testing.assert_close(probs[0, 0] @ v, v)  # whatever the positions: the constant stays
    fix = ToeplitzMultiplier(n)
    with torch.no_grad():
        fix.weight.copy_(torch.linspace(0.2, 2.0, 2 * n - 1))
    moved = fix(probs)[0, 0] @ v
    assert (moved - v).abs().max() > 0.1
    uniform = torch.full((1, 1, n, n), 1.0 / n)  # uniform attention times C: the convolution with kernel c / n
    conv = fix(uniform)[0, 0]
    assert torch.allclose(conv, fix.matrix(n)[0] / n)


def test_stochastic_rows_proof_and_its_variants():
    assert after.relative_softmax_is_stochastic().verified
    for kwargs in ({"multiplier": True}, {"keys": "one short"}):
        wrong = after.relative_softmax_is_stochastic(**kwargs)
        assert not wrong.verified and wrong.decided, kwargs
    assert "c[" in str(after.relative_softmax_is_stochastic(multiplier=True).residual)  # through c_(j-i)


@pytest.mark.parametrize("kernel_size, patch_size, heads", [(3, 4, 9), (5, 2, 9), (3, 1, 9), (7, 2, 25), (9, 4, 9),
                                                            (1, 2, 1)])
def test_patch_attention_equals_conv2d(kernel_size, patch_size, heads):
    torch.manual_seed(kernel_size + patch_size)
    conv = nn.Conv2d(3, 2, kernel_size, padding=(kernel_size - 1) // 2).double()
    x = torch.randn(2, 3, 4 * patch_size, 2 * patch_size, dtype=torch.float64)
    layer = conv_to_patch_mhsa(conv, patch_size)
    assert layer.num_heads == heads == patch_heads(kernel_size, patch_size)
    out = layer(x)
    assert out.shape == conv(x).shape
    torch.testing.assert_close(out, conv(x))
    torch.testing.assert_close(conv_to_patch_conv(conv, patch_size)(patchify(x, patch_size)),
                               patchify(conv(x), patch_size))


def test_patches_round_trip_and_refuse_bad_input_by_name():
    x = torch.randn(2, 3, 8, 4)
    tokens = patchify(x, 2)
    assert tokens.shape == (2, 12, 4, 2)
    assert torch.equal(tokens[0, :4, 0, 0], x[0, 0, :2, :2].reshape(4))  # channel-major, row by row
    assert torch.equal(unpatchify(tokens, 2), x)
    with pytest.raises(ValueError, match="multiple of patch_size"):
        patchify(torch.zeros(1, 1, 5, 4), 2)
    with pytest.raises(ValueError, match="patch_size"):
        patchify(x, 0)
    with pytest.raises(ValueError, match="tokens must be"):
        unpatchify(torch.zeros(1, 3, 2, 2), 2)
    with pytest.raises(ValueError, match="square and odd"):
        conv_to_patch_conv(nn.Conv2d(1, 1, 2), 2)
    with pytest.raises(ValueError, match="stride 1"):
        conv_to_patch_conv(nn.Conv2d(1, 1, 3, stride=2, padding=1), 2)
    with pytest.raises(ValueError, match="zero-pad"):
        conv_to_patch_conv(nn.Conv2d(1, 1, 3), 2)
    with pytest.raises(ValueError, match="conv must be a torch.nn.Conv2d"):
        conv_to_patch_conv(nn.Conv1d(1, 1, 3, padding=1), 2)


def test_patch_proof_rejects_too_few_heads_and_swapped_positions():
    proof = after.patch_tokens_express_conv()
    assert proof.verified and proof.scope == "instance" and "(P, r) = (4, 5)" in proof.instance
    floor = after.patch_tokens_express_conv(reach="floor")
    assert not floor.verified
    # floor(r/P) = ceil(r/P) when P divides r: those instances still verify, the others fail
    assert {s.claim for s in floor.steps if not s.verified} == {"P = 2, r = 1", "P = 2, r = 3", "P = 3, r = 1",
                                                                 "P = 3, r = 4", "P = 4, r = 2", "P = 4, r = 5"}
    swapped = after.patch_tokens_express_conv(index="query-key")
    assert not swapped.verified and all(not s.verified for s in swapped.steps if not s.claim.startswith("P = 1"))


def test_chapter_08_reads_no_data_set_so_its_colab_like_run_is_its_run_without_data():
    """Chapter 08 reads committed records and no data set: `make test` runs it without data only in the Colab-like
    run (no $ATTNCONV_DATA, an empty cache), which also holds it to downloading nothing."""
    import re
    from pathlib import Path

    import jupytext

    from tests.colab.test_run_all import CHAPTERS, RECORDS_ONLY

    chapter = Path(__file__).resolve().parents[1] / "notebooks" / "08_after_the_papers.md"
    assert chapter.stem in CHAPTERS and chapter.stem in RECORDS_ONLY
    code = "\n".join(c.source for c in jupytext.read(chapter).cells if c.cell_type == "code")
    assert not re.search(r"\b(load_cifar10|load_corpus|load_task|prepare_data|generated_cifar10)\b", code)
