"""The BERT config's convolution options (Chang et al.'s): each reaches every layer, in its attributes and in its
outputs; the defaults build the variant's model unchanged; bad values are refused by the config, before any weight
or data exists; and the options survive the training command line's ``--set`` and a checkpoint's config."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from attnconv.composite import CompositeAttention, GroupedConv1d, MixedProjection
from attnconv.conv_projections import Activation, DepthwiseSeparableConv1d
from attnconv.models.bert import BERT_SIZES, VARIANTS, BertClassifier, BertConfig, BertForMaskedLM, composite_layers
from attnconv.train import bert_pretrain
from attnconv.train.bert_config import PRETRAIN_CONFIGS, PretrainConfig
from attnconv.train.cli import main
from attnconv.train.precision import resume_precision
from attnconv.train.runs import apply_overrides, config_from_dict, config_to_dict

TINY = replace(BERT_SIZES["tiny"], dropout=0.0)
IDS = torch.randint(5, TINY.vocab_size, (2, 13), generator=torch.Generator().manual_seed(1))
PAD = torch.zeros(2, 13, dtype=torch.bool)
PAD[1, 9:] = True


def _model(**kw) -> BertForMaskedLM:
    torch.manual_seed(0)
    return BertForMaskedLM(replace(TINY, **kw)).eval()


def _out(model: nn.Module) -> torch.Tensor:
    with torch.no_grad():
        return model(IDS, None, PAD)


def _old_attention(config: BertConfig) -> nn.Module:
    """Each block's attention as the model built it before the conv_* fields existed: from the variant alone."""
    v = VARIANTS[config.variant]
    if v.is_plain:
        from attnconv.attention import MultiHeadSelfAttention
        return MultiHeadSelfAttention(config.hidden_dim, config.num_heads, dropout=config.dropout)
    return CompositeAttention(config.hidden_dim, config.num_heads, config.max_distance, config.max_length,
                              content=True, fixed=v.fixed, query_dynamic=v.query_dynamic,
                              conv_projections=v.conv_projections, conv_kernel_size=config.conv_kernel_size,
                              conv_activation=v.conv_activation, mixed_projections=v.mixed_projections,
                              value_conv=v.value_conv, dropout=config.dropout, query_chunk=config.max_length)


def _differs(a: torch.Tensor, b: torch.Tensor, by: float = 1e-4) -> None:
    assert (a - b).abs().max() > by


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_default_fields_build_the_variants_model_bit_for_bit(variant):
    """Same seed, same output: the defaults, the defaults passed explicitly, the variant's own values passed
    explicitly, and the model assembled as before the fields existed (nn.GELU, the variant's layer) all agree."""
    v = VARIANTS[variant]
    default = _model(variant=variant)
    explicit = _model(variant=variant, hidden_act="gelu", conv_projections=None, conv_activation="auto",
                      conv_groups=None, conv_depth_multiplier=1, mixed_projections=None)
    spelled_out = _model(variant=variant, conv_projections=list(v.conv_projections), conv_activation=v.conv_activation,
                         mixed_projections=v.mixed_projections)
    for model in (explicit, spelled_out):
        assert torch.equal(_out(model), _out(default))
    old = _model(variant=variant)
    for block in old.encoder.blocks:
        attn = _old_attention(old.config)
        attn.load_state_dict(block.attn.state_dict())  # strict: the same parameters under the same names
        assert repr(attn) == repr(block.attn)
        block.attn, block.mlp[1] = attn, nn.GELU()
    old.transform[1] = nn.GELU()
    assert torch.equal(_out(old), _out(default))
    assert list(old.state_dict()) == list(default.state_dict())  # old checkpoints load


def test_conv_activation_reaches_every_layer():
    relu = _model(variant="conv-value", conv_activation="relu")
    by_hand = _model(variant="conv-value")
    assert all(layer.v_proj.activation == "relu" for layer in composite_layers(relu))
    assert all(layer.v_proj.activation is None for layer in composite_layers(by_hand))
    for layer in composite_layers(by_hand):
        layer.v_proj.activation = "relu"
    assert torch.equal(_out(relu), _out(by_hand))
    for layer in composite_layers(by_hand):
        layer.v_proj.activation = "gelu"  # the wrong activation
    _differs(_out(relu), _out(by_hand))
    _differs(_out(relu), _out(_model(variant="conv-value")))  # none at all
    # a GELU asked for by name is the -gelu variant, weight for weight
    assert torch.equal(_out(_model(variant="conv-query", conv_activation="gelu")), _out(_model(variant="conv-query-gelu")))
    plain = _model(variant="conv-query-gelu", conv_activation=None)
    assert torch.equal(_out(plain), _out(_model(variant="conv-query")))


def test_hidden_act_is_the_mlp_and_mlm_head_activation_and_conv_activation_can_follow_it():
    """As in HuggingFace's BERT, hidden_act is the MLP's and the MLM transform's activation. Chang et al.'s
    convolutions use it too; here they do so when conv_activation='hidden_act', and keep the variant's otherwise."""
    relu = _model(variant="conv-value-gelu", hidden_act="relu")
    assert all(block.mlp[1].name == "relu" for block in relu.encoder.blocks) and relu.transform[1].name == "relu"
    assert all(layer.v_proj.activation == "gelu" for layer in composite_layers(relu))  # "auto": the variant's
    by_hand = _model(variant="conv-value-gelu")
    for block in by_hand.encoder.blocks:
        block.mlp[1] = nn.ReLU()
    by_hand.transform[1] = nn.ReLU()
    assert torch.equal(_out(relu), _out(by_hand))
    by_hand.transform[1] = nn.GELU()  # the MLM head left at the GELU: a different model
    _differs(_out(relu), _out(by_hand))
    follows = _model(variant="conv-value", hidden_act="gelu_new", conv_activation="hidden_act")
    assert all(layer.v_proj.activation == "gelu_new" for layer in composite_layers(follows))
    assert isinstance(follows.transform[1], Activation) and follows.transform[1].name == "gelu_new"
    clf = BertClassifier.from_pretrained(relu, dropout=0.0)
    assert all(block.mlp[1].name == "relu" for block in clf.encoder.blocks)
    assert isinstance(clf.pooler[1], nn.Tanh)  # BERT's pooler stays tanh


def test_conv_groups_make_one_grouped_convolution():
    grouped = _model(variant="conv-key", conv_groups=4)
    c = TINY.hidden_dim
    x = torch.randn(2, 13, c)
    for layer in composite_layers(grouped):
        conv = layer.k_proj
        assert isinstance(conv, GroupedConv1d) and conv.groups == 4 and conv.conv.weight.shape == (c, c // 4, 3)
        expected = F.conv1d(x.transpose(1, 2), conv.conv.weight, conv.conv.bias, padding=1, groups=4).transpose(1, 2)
        torch.testing.assert_close(conv(x), expected, rtol=0, atol=0)
    by_hand = _model(variant="conv-key")
    for layer in composite_layers(by_hand):
        layer.k_proj = GroupedConv1d(c, c, 3, groups=4)
    by_hand.load_state_dict(grouped.state_dict())
    assert torch.equal(_out(grouped), _out(by_hand))
    _differs(_out(grouped), _out(_model(variant="conv-key")))


def test_conv_depth_multiplier_widens_the_depthwise_step_channel_by_channel():
    wide = _model(variant="conv-query", conv_depth_multiplier=2)
    c = TINY.hidden_dim
    x = torch.randn(2, 13, c)
    for layer in composite_layers(wide):
        conv = layer.q_proj
        assert conv.depth_multiplier == 2 and conv.depthwise.weight.shape == (2 * c, 1, 3)
        assert conv.pointwise.weight.shape == (c, 2 * c)
        w, b = conv.depthwise.weight, conv.depthwise.bias
        right = F.conv1d(x.transpose(1, 2).repeat_interleave(2, 1), w, b, padding=1, groups=2 * c)  # o reads o // m
        tiled = F.conv1d(x.transpose(1, 2).repeat(1, 2, 1), w, b, padding=1, groups=2 * c)  # wrong: o reads o mod C
        torch.testing.assert_close(conv.depthwise(x.transpose(1, 2)), right, rtol=0, atol=1e-6)
        _differs(right, tiled)
    by_hand = _model(variant="conv-query")
    for layer in composite_layers(by_hand):
        layer.q_proj = DepthwiseSeparableConv1d(c, c, 3, depth_multiplier=2)
    by_hand.load_state_dict(wide.state_dict())
    assert torch.equal(_out(wide), _out(by_hand))


def test_mixed_projections_is_the_mixed_variant():
    mixed = _model(variant="conv-key", mixed_projections=True)
    assert all(isinstance(layer.k_proj, MixedProjection) for layer in composite_layers(mixed))
    assert torch.equal(_out(mixed), _out(_model(variant="conv-key-mixed")))
    x = torch.randn(2, 13, TINY.hidden_dim)
    with torch.no_grad():  # keys start small (N(0, 0.02) weights), so the model's outputs differ by only ~1e-5
        _differs(composite_layers(mixed)[0].k_proj(x), composite_layers(_model(variant="conv-key"))[0].k_proj(x))
    unmixed = _model(variant="conv-key-mixed", mixed_projections=False)
    assert torch.equal(_out(unmixed), _out(_model(variant="conv-key")))


def test_per_projection_settings_as_chang_et_al_configure_qk_and_value():
    """Their qk and value_forward differ: here query and key are K=3 convolutions with a GELU, the value a K=5
    convolution without one on half of the heads, added to the fixed variant's relative bias."""
    options = dict(conv_projections=["query", "key", "value"], conv_kernel_size={"query": 3, "key": 3, "value": 5},
                   conv_activation={"query": "gelu", "key": "gelu"}, mixed_projections={"value": True})
    model = _model(variant="fixed", **options)
    assert model.config.conv_projections == ("query", "key", "value")
    for layer in composite_layers(model):
        assert layer.fixed_term is not None
        assert (layer.q_proj.activation, layer.k_proj.activation) == ("gelu", "gelu")
        assert isinstance(layer.v_proj, MixedProjection) and layer.v_proj.conv.activation is None
        assert (layer.q_proj.kernel_size, layer.v_proj.conv.kernel_size) == (3, 5)
    by_hand = _model(variant="fixed")
    for block in by_hand.encoder.blocks:
        block.attn = CompositeAttention(32, 2, 4, 64, fixed=True, conv_projections=("query", "key", "value"),
                                        conv_kernel_size={"query": 3, "key": 3, "value": 5},
                                        conv_activation={"query": "gelu", "key": "gelu"},
                                        mixed_projections={"value": True}, query_chunk=64)
    by_hand.load_state_dict(model.state_dict())
    assert torch.equal(_out(model), _out(by_hand))
    for block in by_hand.encoder.blocks:
        block.attn.v_proj.conv.activation = "gelu"  # one activation for all three: another model
    _differs(_out(model), _out(by_hand))


@pytest.mark.parametrize("fields, error, message", [
    (dict(hidden_act="elu"), ValueError, "hidden_act must be one of"),
    (dict(hidden_act=None), TypeError, "hidden_act must be one of"),
    (dict(variant="conv-key", conv_activation="elu"), ValueError, "conv_activation must be"),
    (dict(variant="conv-key", conv_activation={"value": "gelu"}), ValueError, "conv_activation maps"),
    (dict(conv_activation="gelu"), ValueError, "applies to convolutional projections"),
    (dict(conv_groups=2), ValueError, "conv_groups=2 applies to convolutional projections"),
    (dict(variant="conv-key", conv_groups=3), ValueError, "conv_groups=3 must divide"),
    (dict(variant="conv-key-gelu", conv_groups=2), ValueError, "no step for conv_activation='gelu'"),
    (dict(variant="conv-key", conv_groups=2, conv_depth_multiplier=2), ValueError, "conv_depth_multiplier=2"),
    (dict(variant="conv-key", conv_depth_multiplier=0), ValueError, "conv_depth_multiplier must be a positive"),
    (dict(variant="conv-key", conv_depth_multiplier=[1, 2]), TypeError, "conv_depth_multiplier must be one value"),
    (dict(variant="conv-key", mixed_projections="yes"), TypeError, "mixed_projections must be True or False"),
    (dict(variant="conv-key", mixed_projections=True, hidden_dim=32, num_heads=1), ValueError, "num_heads >= 2"),
    (dict(conv_projections="query"), TypeError, "conv_projections must be None"),
    (dict(conv_projections=["query", "query"]), ValueError, "twice"),
    (dict(conv_projections=["queries"]), ValueError, "conv_projections must name"),
    (dict(variant="convolution", conv_kernel_size={"query": 3}), ValueError, "one odd int with the convolution"),
    (dict(variant="conv-key", conv_kernel_size={"key": 4}), ValueError, "conv_kernel_size must be odd"),
])
def test_bad_options_are_refused_by_the_config(fields, error, message):
    with pytest.raises(error, match=message):
        replace(TINY, **fields)


def test_options_round_trip_through_the_command_line_and_a_checkpoint(tmp_path, monkeypatch, capsys):
    sets = ["model.variant=conv-value", "model.hidden_act=gelu_new", "model.conv_activation=hidden_act",
            "model.conv_depth_multiplier={'value': 2}", "model.conv_projections=['key', 'value']",
            "model.mixed_projections={'key': True}", "model.conv_kernel_size=5"]
    config = apply_overrides(PRETRAIN_CONFIGS["smoke"], sets)
    m = config.model
    assert (m.variant, m.hidden_act, m.conv_activation, m.conv_projections) == (
        "conv-value", "gelu_new", "hidden_act", ("key", "value"))
    assert m.conv_depth_multiplier == {"value": 2} and m.mixed_projections == {"key": True}
    back = config_from_dict(PretrainConfig, json.loads(json.dumps(config_to_dict(config))))
    assert back == config  # through JSON, as a checkpoint and provenance keep it
    layer = composite_layers(BertForMaskedLM(back.model))[0]
    assert isinstance(layer.k_proj, MixedProjection) and layer.k_proj.conv.activation == "gelu_new"
    assert layer.v_proj.depth_multiplier == 2 and layer.v_proj.kernel_size == 5
    assert layer.v_proj.activation == "gelu_new" and layer.q_proj.__class__ is nn.Linear
    monkeypatch.setattr(bert_pretrain, "prepare_pretraining", lambda *a, **k: pytest.fail("data loaded"))
    for bad, needle in (("model.conv_groups=3", "conv_groups=3 applies"), ("model.hidden_act=elu", "hidden_act"),
                        ("model.conv_activation=[1]", "conv_activation")):
        code = main(["bert-pretrain", "--config", "smoke", "--out", str(tmp_path / "run"), "--set", bad])
        err = capsys.readouterr().err.strip()
        assert code == 2 and len(err.splitlines()) == 1 and "bad config" in err and needle in err, err
    assert main(["bert-pretrain", "--list"]) == 0
    listed = json.loads(capsys.readouterr().out.splitlines()[0].split(" ", 1)[1])
    assert listed["model"]["conv_activation"] == "auto" and listed["model"]["hidden_act"] == "gelu"


def test_a_checkpoint_from_before_the_options_resumes_and_a_changed_option_does_not():
    config = PRETRAIN_CONFIGS["smoke"]
    saved = config_to_dict(config)
    for field in ("hidden_act", "conv_projections", "conv_activation", "conv_groups", "conv_depth_multiplier",
                  "mixed_projections"):
        del saved["model"][field]
    state = {"config": saved, "precision": "fp32"}
    with pytest.raises(ValueError, match="differs"):
        resume_precision({"config": json.loads(json.dumps(saved)), "precision": "fp32"}, config_to_dict(config),
                         torch.device("cpu"))
    resume_precision(bert_pretrain.with_model_defaults(state), config_to_dict(config), torch.device("cpu"))
    changed = replace(config, model=replace(config.model, hidden_act="relu"))
    with pytest.raises(ValueError, match="differs"):
        resume_precision(state, config_to_dict(changed), torch.device("cpu"))
