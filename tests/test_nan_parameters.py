"""A NaN parameter shows: NaN logits give NaN outputs (or an error that names the parameter), never a finite output.

A fully masked row (a token with no key to read) is legitimately zero; a row of NaN logits is not masked, and the
fused CPU attention kernel used to return zeros for it, so a NaN weight in ``q_proj`` passed for a finite layer.
"""

from __future__ import annotations

import re

import pytest
import torch
from torch import nn

from attnconv import CompositeAttention, GatedPositionalSelfAttention, LightweightConv1d, MultiHeadSelfAttention
from attnconv._checks import NonFiniteResultError
from attnconv.construct import conv_to_mhsa
from attnconv.construct.sequence import attention_to_lightconv, dynamic_conv_to_attention, lightconv_to_attention
from attnconv.finite import deferred_finite_checks
from attnconv.lightconv import DynamicConv1d
from attnconv.models import BertConfig, BertForMaskedLM
from attnconv.positional import RelativePositionBias
from attnconv.taps import masked_softmax

from .test_torch_tools import CASES, _built

LAYERS = {
    "mhsa": (lambda: MultiHeadSelfAttention(8, 2), (2, 5, 8), {}),
    "mhsa-padded": (lambda: MultiHeadSelfAttention(8, 2), (2, 5, 8), {"mask": True}),
    "mhsa-weights": (lambda: MultiHeadSelfAttention(8, 2), (2, 5, 8), {"need_weights": True}),
    "mhsa-image": (lambda: MultiHeadSelfAttention(8, 2), (2, 3, 3, 8), {}),
    "composite": (lambda: CompositeAttention(8, 2, 2, max_length=16), (2, 5, 8), {}),
    "composite-window": (lambda: CompositeAttention(8, 2, 1, max_length=16, window=True), (2, 5, 8), {"mask": True}),
    "gpsa": (lambda: GatedPositionalSelfAttention(8, 4), (2, 3, 3, 8), {}),
}


def _nan_in(layer: nn.Module, proj: str) -> None:
    with torch.no_grad():
        getattr(layer, proj).weight[0, 0] = float("nan")  # head 0's first query (key) channel: every token's


def _call(layer, shape, mask=False, need_weights=False):
    x = torch.randn(*shape)
    padding = None
    if mask:
        padding = torch.zeros(shape[:-1], dtype=torch.bool)
        padding[0, -2:] = True
    return layer(x, key_padding_mask=padding, need_weights=need_weights)[0]


@pytest.mark.parametrize("proj", ["q_proj", "k_proj"])
@pytest.mark.parametrize("name", list(LAYERS))
def test_a_nan_query_or_key_weight_gives_nan_outputs_when_checks_are_deferred(name, proj):
    build, shape, options = LAYERS[name]
    torch.manual_seed(0)
    layer = build().eval()
    _nan_in(layer, proj)
    with deferred_finite_checks():
        out = _call(layer, shape, **options)
    assert torch.isnan(out).any(), "a NaN weight was hidden: the output is finite"


@pytest.mark.parametrize("proj", ["q_proj", "k_proj"])
@pytest.mark.parametrize("name", list(LAYERS))
def test_a_nan_query_or_key_weight_is_an_error_that_names_it(name, proj):
    build, shape, options = LAYERS[name]
    torch.manual_seed(0)
    layer = build().eval()
    _nan_in(layer, proj)
    with pytest.raises(NonFiniteResultError, match=rf"parameter {proj}\.weight holds NaN"):
        _call(layer, shape, **options)


def test_the_fused_path_keeps_a_finite_layer_exact():
    """The NaN marker adds exactly zero where queries and keys are finite: the fused and explicit paths agree."""
    torch.manual_seed(0)
    layer = MultiHeadSelfAttention(8, 2).eval()
    x = torch.randn(2, 5, 8)
    fused = layer(x)[0]
    explicit = layer(x, need_weights=True)[0]
    torch.testing.assert_close(fused, explicit)


def test_bert_with_a_nan_query_weight_is_stopped_with_its_name():
    torch.manual_seed(0)
    model = BertForMaskedLM(BertConfig(vocab_size=30, hidden_dim=8, depth=1, num_heads=2, mlp_dim=16, max_length=8,
                                       dropout=0.0)).eval()
    _nan_in(model.encoder.blocks[0].attn, "q_proj")
    ids = torch.randint(1, 30, (2, 7))
    with pytest.raises(NonFiniteResultError, match=r"q_proj\.weight holds NaN"):
        model(ids)
    with deferred_finite_checks():
        assert torch.isnan(model(ids)).all()


def test_a_lightweight_convolution_with_a_nan_weight_names_it():
    conv = LightweightConv1d(8, 2, 3)
    with torch.no_grad():
        conv.weight[1, 0] = float("nan")
    with pytest.raises(NonFiniteResultError, match=r"parameter weight holds NaN"):
        conv(torch.randn(2, 5, 8))
    with deferred_finite_checks():
        assert torch.isnan(conv(torch.randn(2, 5, 8))).any()


def test_a_fully_masked_row_is_zero_and_a_nan_row_is_nan():
    logits = torch.tensor([[float("-inf")] * 3, [0.0, float("nan"), 1.0], [0.0, 1.0, float("-inf")]])
    probs = masked_softmax(logits)
    assert torch.equal(probs[0], torch.zeros(3))  # nothing to read: zero weights
    assert torch.isnan(probs[1]).all()  # a NaN logit: NaN, not zero
    torch.testing.assert_close(probs[2], torch.softmax(logits[2], -1))


def test_a_padded_query_that_sees_no_key_is_zero_not_nan():
    """The legitimate zero: with a window and padding, a padded query has no key; its output is finite."""
    torch.manual_seed(0)
    layer = CompositeAttention(8, 2, 1, max_length=16, window=True, bias=False).eval()
    x = torch.randn(1, 6, 8)
    mask = torch.tensor([[False, False, False, True, True, True]])
    out = layer(x, key_padding_mask=mask)[0]
    assert torch.isfinite(out).all()
    assert torch.equal(out[0, -1], torch.zeros(8))  # token 5 reads keys 4..5, both padded


@pytest.mark.parametrize("value", [float("nan"), float("inf")])
@pytest.mark.parametrize("dims", [1, 2])
def test_conv_to_mhsa_refuses_a_non_finite_weight_and_names_it(dims, value):
    conv = (nn.Conv1d if dims == 1 else nn.Conv2d)(3, 4, 3, padding=1)
    with torch.no_grad():
        conv.weight.view(-1)[5] = value
    with pytest.raises(ValueError, match=r"conv\.weight must be finite"):
        conv_to_mhsa(conv)
    with pytest.raises(ValueError, match=r"conv\.weight must be finite"):
        conv_to_mhsa(conv, alpha=2.0)


def test_conv_to_mhsa_refuses_a_nan_bias_and_names_it():
    conv = nn.Conv2d(3, 4, 3, padding=1)
    with torch.no_grad():
        conv.bias[2] = float("nan")
    with pytest.raises(ValueError, match=r"conv\.bias must be finite, but it holds NaN"):
        conv_to_mhsa(conv)


def test_the_sequence_converters_refuse_nan_weights():
    conv = LightweightConv1d(8, 2, 3, boundary="renormalize")
    with torch.no_grad():
        conv.weight[0, 1] = float("nan")
    with pytest.raises(ValueError, match=r"conv\.weight must be finite"):
        lightconv_to_attention(conv)
    dynamic = DynamicConv1d(8, 2, 3, boundary="renormalize")
    with torch.no_grad():
        dynamic.kernel_proj.bias[0] = float("nan")
    with pytest.raises(ValueError, match=r"conv\.kernel_proj\.bias must be finite"):
        dynamic_conv_to_attention(dynamic)
    layer = MultiHeadSelfAttention(8, 2, positional=RelativePositionBias(2, 2, window=True), content=False)
    with torch.no_grad():
        layer.positional.weight[0, 0] = float("nan")
    with pytest.raises(ValueError, match=r"module\.positional\.weight must be finite"):
        attention_to_lightconv(layer)


# Every layer of tests/test_torch_tools.py (the models are made of these layers and are left out, for time).
_LAYER_CASES = [name for name in CASES if not name.startswith(("vision-", "bert-", "resnet", "small-cnn"))]


@pytest.mark.parametrize("name", _LAYER_CASES)
def test_every_parameter_of_every_layer_surfaces_as_nan_or_an_error_that_names_it(name):
    """Each floating-point parameter in turn filled with NaN (a corrupted state dict): with the checks deferred the
    output holds NaN; with them on, either the output holds NaN or the error names the parameter. A parameter that
    the output does not depend on would fail here, and so would a softmax that turns NaN logits into zeros."""
    call, inputs = _built(name)
    names = [pname for pname, p in call.named_parameters() if p.is_floating_point()]
    assert names or name == "rotary"  # rotary embeddings have no parameters
    for pname in names:
        call, inputs = _built(name)
        with torch.no_grad():
            dict(call.named_parameters())[pname].fill_(float("nan"))
            with deferred_finite_checks():
                assert torch.isnan(call(*inputs)).any(), f"{pname} = NaN gave a finite output"
            try:
                out = call(*inputs)
            except ValueError as err:  # named relative to the module whose check found it
                named = re.search(r"parameter (\S+) holds NaN", str(err))
                assert named and pname.endswith("." + named[1]), (pname, str(err))
            else:
                assert torch.isnan(out).any(), f"{pname} = NaN gave a finite output"
