"""The conventions table (book/conventions_table.md): Chang et al.'s convolutional query, key and value projections.

Their BertSelfAttention (``tests/chang_reference.py``) is written out from the published code; the weights are
copied into a CompositeAttention by the table's rule and the contexts agree in float64, while the plausible wrong
rule differs.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from attnconv.composite import CompositeAttention, GroupedConv1d, MixedProjection

from .chang_reference import CHANG_PROJECTIONS, _chang_params, _composite_for, _ours_from_chang, _unpadded, chang_reference
from .reference_helpers import D, _close, _copy, _differs, _padding_mask, _randn


@pytest.fixture(autouse=True)
def _float64(float64_default):
    """Every module is built in float64, so that copied weights keep their exact values."""


@pytest.mark.parametrize("name", sorted(CHANG_PROJECTIONS))
@pytest.mark.parametrize("where", ["qk", "value"])
def test_chang_convolutional_projection_rows(name, where):
    """Chang et al.'s qk/value ``convolution[_mixed][_depth][_no_act] radius groups``: depth is a
    DepthwiseSeparableConv1d (GELU unless no_act), otherwise one grouped conv (conv_groups); mixed covers half."""
    spec = CHANG_PROJECTIONS[name]
    qk, value = (spec, None) if where == "qk" else (None, spec)
    p = _chang_params(8, 2, 2, qk=qk, value=value)
    mask = _padding_mask(12)
    x = _randn(2, 12, 8, seed=11)
    theirs = chang_reference(x, p, 2, 2, mask, convfixed=True, qk=qk, value=value)
    layer = _ours_from_chang(_composite_for(spec, which=("query", "key") if where == "qk" else ("value",)), p,
                             qk=qk, value=value)
    _close(*_unpadded(layer(x, key_padding_mask=mask)[0], theirs, mask))
    conv = getattr(layer, "q_proj" if where == "qk" else "v_proj")
    conv = conv.conv if isinstance(conv, MixedProjection) else conv
    weight = conv.conv.weight if isinstance(conv, GroupedConv1d) else conv.depthwise.weight
    _copy(weight, weight.flip(-1))  # the kernel reversed: a cross-correlation read as a convolution
    _differs(*_unpadded(layer(x, key_padding_mask=mask)[0], theirs, mask))


def test_chang_separate_kernel_sizes_for_qk_convolution_and_the_branch():
    """Their qk convolutions take their own radius (here K = 3) while the ``convolution`` branch uses the relative
    terms' k (here K = 5)."""
    spec = dict(radius=1, groups=8, depth=True)
    p = _chang_params(8, 2, 2, qk=spec)
    x = _randn(2, 12, 8, seed=12)
    theirs = chang_reference(x, p, 2, 2, convfixed=True, convolution=True, qk=spec)
    layer = _composite_for(spec, value_conv=True, value_conv_kernel_size=5, value_conv_bias=True,
                           value_conv_scale="per_head")
    assert layer.q_proj.kernel_size == 3 and layer.value_conv.kernel_size == (5,)
    _close(_ours_from_chang(layer, p, qk=spec)(x)[0], theirs)
    per_projection = CompositeAttention(8, 2, 2, 12, conv_projections=("query", "key", "value"),
                                        conv_kernel_size={"query": 3, "key": 3, "value": 7})
    assert (per_projection.q_proj.kernel_size, per_projection.v_proj.kernel_size) == (3, 7)


@pytest.mark.parametrize("spec_name", ["depth-mixed", "grouped-mixed"])
def test_chang_mixed_row_with_odd_heads_splits_channels(spec_name):
    """With N_h = 3 Chang et al.'s code makes the first (N_h D_h) // 2 channels convolutional, half a head:
    mixed_split="channels". The default split between heads (the first N_h // 2 heads) is a different layer."""
    spec = dict(CHANG_PROJECTIONS[spec_name])
    heads, c = 3, 12
    spec["groups"] = c if spec.get("depth") else 2
    p = _chang_params(c, heads, 2, qk=spec)
    x = _randn(2, 12, c, seed=13)
    theirs = chang_reference(x, p, heads, 2, convfixed=True, qk=spec)
    layer = _composite_for(spec, heads=heads, c=c, mixed_split="channels")
    assert layer.q_proj.conv_channels == 6
    _close(_ours_from_chang(layer, p, qk=spec)(x)[0], theirs)
    by_heads = _composite_for(spec, heads=heads, c=c)
    assert by_heads.q_proj.conv_channels == 4
    with pytest.raises(RuntimeError):  # the weights do not even fit: 4 convolutional channels, not 6
        _ours_from_chang(by_heads, p, qk=spec)


def test_chang_separate_settings_for_the_qk_and_the_value_convolutions():
    """Their ``qk`` and ``value_forward`` are configured apart: here qk = ``convolution_depth 1 ·`` (GELU, K = 3) and
    value = ``convolution_mixed_depth_no_act 2 ·`` (K = 5). Each ``conv_*`` option maps projection names to
    settings; one activation for all three (the qk's GELU on the values too) is a different layer."""
    qk, value = dict(radius=1, groups=8, depth=True), dict(radius=2, groups=8, depth=True, act=False, mixed=True)
    p = _chang_params(8, 2, 2, qk=qk, value=value)
    mask = _padding_mask(12)
    x = _randn(2, 12, 8, seed=19)
    theirs = chang_reference(x, p, 2, 2, mask, convfixed=True, qk=qk, value=value)

    def ours(activation):
        layer = CompositeAttention(8, 2, 2, 12, fixed=True, conv_projections=("query", "key", "value"),
                                   conv_kernel_size={"query": 3, "key": 3, "value": 5}, conv_activation=activation,
                                   mixed_projections={"value": True}, mixed_split="channels").to(D)
        return _ours_from_chang(layer, p, qk=qk, value=value)(x, key_padding_mask=mask)[0]

    _close(*_unpadded(ours({"query": "gelu", "key": "gelu"}), theirs, mask))
    _differs(*_unpadded(ours("gelu"), theirs, mask))
    with pytest.raises(ValueError, match="conv_activation maps names of conv_projections"):
        CompositeAttention(8, 2, 2, 12, conv_projections=("query",), conv_activation={"value": "gelu"})
    with pytest.raises(ValueError, match="conv_activation must be one of"):
        CompositeAttention(8, 2, 2, 12, conv_projections=("query",), conv_activation={"query": "elu"})


def _grouped_by_tiling(x, weight, bias, radius, multiplier):
    """The wrong channel order for a depthwise step with a multiplier: output channel o reads channel o mod C."""
    tiled = x.transpose(1, 2).repeat(1, multiplier, 1)
    return F.conv1d(tiled, weight, bias, padding=radius, groups=weight.shape[0]).transpose(1, 2)


@pytest.mark.parametrize("multiplier", [2, 3])
def test_chang_depthwise_step_with_more_head_channels_than_hidden_channels(multiplier):
    """With N_h D_h = m C their depthwise step is Conv1d(C, m C, groups=C), output channel o filtering channel
    o // m: ``conv_depth_multiplier=m``. Without it the weights do not fit; read as o mod C they give other values."""
    heads, c, radius = 2, 8, 1
    spec = dict(radius=radius, groups=c, depth=True)
    p = _chang_params(c, heads, 2, qk=spec, head_size=multiplier * c // heads)
    x = _randn(2, 12, c, seed=20)
    theirs = chang_reference(x, p, heads, 2, convfixed=True, qk=spec)
    layer = CompositeAttention(c, heads, 2, 12, fixed=True, head_dim=multiplier * c // heads,
                               conv_projections=("query", "key"), conv_kernel_size=3, conv_activation="gelu",
                               conv_depth_multiplier=multiplier).to(D)
    assert layer.q_proj.depthwise.weight.shape == (multiplier * c, 1, 3)
    ours = _ours_from_chang(layer, p, qk=spec)
    with torch.no_grad():
        theirs_out = ours.out_proj(theirs)
    _close(ours(x)[0], theirs_out)
    depthwise = _grouped_by_tiling(x, p["query_conv"], p["query_conv_b"], radius, multiplier)
    right = layer.q_proj.depthwise(x.transpose(1, 2)).transpose(1, 2)
    _differs(depthwise, right)
    with pytest.raises(RuntimeError):  # the weights do not even fit: C depthwise channels, not m C
        _ours_from_chang(CompositeAttention(c, heads, 2, 12, head_dim=multiplier * c // heads,
                                            conv_projections=("query", "key"), conv_kernel_size=3).to(D), p, qk=spec)
    with pytest.raises(ValueError, match="conv_depth_multiplier"):
        CompositeAttention(c, heads, 2, 12, conv_projections=("key",), conv_depth_multiplier=0)
    with pytest.raises(ValueError, match="conv_depth_multiplier needs depthwise-separable"):
        CompositeAttention(c, heads, 2, 12, conv_projections=("key",), conv_depth_multiplier=2, conv_groups=2)


@pytest.mark.parametrize("activation", ["gelu_new", "gelu_fast", "relu", "swish", "mish", "tanh", "sigmoid"])
def test_chang_projection_activations_other_than_gelu(activation):
    """Their activation is the model's ``hidden_act`` (HuggingFace's names): ``conv_activation`` takes the same
    names. The exact GELU in place of its tanh approximation (``gelu_new``, ``gelu_fast``) is close, and still
    another layer (by 4·10⁻⁴ here, 10⁸ times the tolerance); in place of the others it is far off (0.2 to 1.4)."""
    spec = dict(radius=1, groups=8, depth=True, act=activation)
    p = _chang_params(8, 2, 2, value=spec)
    mask = _padding_mask(12)
    x = _randn(2, 12, 8, seed=21)
    theirs = chang_reference(x, p, 2, 2, mask, convfixed=True, value=spec)
    layer = _ours_from_chang(_composite_for(spec, which=("value",)), p, value=spec)
    assert layer.v_proj.activation == activation
    _close(*_unpadded(layer(x, key_padding_mask=mask)[0], theirs, mask))
    exact_gelu = _ours_from_chang(_composite_for(dict(spec, act="gelu"), which=("value",)), p, value=spec)
    _differs(*_unpadded(exact_gelu(x, key_padding_mask=mask)[0], theirs, mask), by=1e-4)
