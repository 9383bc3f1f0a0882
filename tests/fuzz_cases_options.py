"""The fuzz's cases for the reference implementations' options (added to ``BAD`` and ``EDGE`` of
:mod:`tests.fuzz_cases`): the signed quadratic encoding, GPSA's ``proj_drop``, the dynamic convolution's
``value_dim`` and ``conv_bias``, the per-projection convolution settings, ``depth_multiplier``, the activation names,
and the BERT config's convolution fields (directly and through ``--set``).
"""

from __future__ import annotations

from dataclasses import replace

import torch
from torch import nn

from attnconv.attention import MultiHeadSelfAttention
from attnconv.composite import CompositeAttention
from attnconv.conv_projections import Activation, DepthwiseSeparableConv1d, activation_function
from attnconv.gpsa import GatedPositionalSelfAttention
from attnconv.lightconv import DynamicConv1d
from attnconv.models.bert import BERT_SIZES, BertForMaskedLM
from attnconv.positional import QuadraticEncoding, QueryRelativeLogits, SignedQuadraticEncoding
from attnconv.train.bert_config import PRETRAIN_CONFIGS
from attnconv.train.runs import apply_overrides

NAN, INF = float("nan"), float("inf")
# A positive int, and one per projection: wrong types, out of range, non-finite, wrong containers.
COUNT = {"zero": 0, "negative": -1, "float": 1.5, "float-int": 2.0, "string": "2", "bool": True, "nan": NAN,
         "inf": INF}
PER_PROJECTION = {"list": [2, 2], "list-short": [2], "tuple": (2,), "set": {2}}
ACTIVATION = {"unknown": "elu", "case": "GELU", "int": 3, "float": 1.0, "bool": True, "list": ["gelu"], "nan": NAN}
FLAG = {"string": "yes", "string-false": "False", "int": 1, "none": None, "float": 0.0}


def option_cases() -> None:
    from .fuzz_cases import bad, each_bad, edge, seeded, x

    # ---- SignedQuadraticEncoding and from_positional_query(signed=True)
    each_bad("signed-quadratic", "query", {"string": "v", "none": None, "strings": [["a", "b"]], "flat": [0.0, 1.0],
                                           "one-column": [[1.0]], "no-heads": torch.zeros(0, 3), "nan": [[NAN, 0.0]],
                                           "inf": [[-1.0, INF]], "bool": torch.ones(2, 3, dtype=torch.bool),
                                           "complex": torch.ones(2, 3, dtype=torch.complex64),
                                           "ragged": [[1.0, 0.0], [1.0]], "3d": torch.zeros(2, 3, 1)},
             lambda v: SignedQuadraticEncoding(v))
    each_bad("signed-quadratic", "learnable", FLAG, lambda v: SignedQuadraticEncoding([[-1.0, 0.0, 0.0]], learnable=v))
    signed_2d = MultiHeadSelfAttention(8, 2, positional=SignedQuadraticEncoding([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]),
                                       content=False)
    bad("signed-quadratic-on-a-sequence", "grid", lambda: signed_2d(x(1, 4, 8)))
    bad("signed-quadratic-heads", "positional",
        lambda: MultiHeadSelfAttention(8, 4, positional=SignedQuadraticEncoding([[-1.0, 0.0, 0.0]])))
    edge("signed-quadratic-bowl", "query", lambda: signed_2d(x(1, 3, 3, 8)))  # α < 0: the farthest keys win
    edge("signed-quadratic-ramp-1x1", "query", lambda: signed_2d(x(1, 1, 1, 8)))
    edge("signed-quadratic-1e30", "query", lambda: MultiHeadSelfAttention(
        8, 2, positional=SignedQuadraticEncoding([[1e30, 0.0, 0.0], [-1e30, 1e30, 0.0]]), content=False)(x(1, 3, 3, 8)))
    each_bad("from_positional_query", "signed", FLAG,
             lambda v: QuadraticEncoding.from_positional_query(torch.tensor([[-1.0, 0.0, 0.0]]), signed=v))
    for signed in (True, False):
        each_bad(f"from_positional_query-signed-{signed}", "query",
                 {"string": "v", "flat": torch.zeros(3), "nan": [[NAN, 0.0, 0.0]], "none": None},
                 lambda v, signed=signed: QuadraticEncoding.from_positional_query(v, signed=signed))
    bad("from_positional_query-unsigned-alpha", "query",
        lambda: QuadraticEncoding.from_positional_query(torch.tensor([[1.0, 0.0, 0.0]])))
    bad("from_positional_query-signed-learnable", "learnable",
        lambda: QuadraticEncoding.from_positional_query(torch.tensor([[1.0, 0.0, 0.0]]), learnable="no", signed=True))

    # ---- GPSA
    probability = {"string": "0.1", "bool": True, "negative": -0.1, "one": 1.0, "nan": NAN, "inf": INF, "none": None}
    each_bad("gpsa", "proj_drop", probability, lambda v: GatedPositionalSelfAttention(8, 4, proj_drop=v))
    each_bad("gpsa", "dropout", {"one": 1.0, "nan": NAN}, lambda v: GatedPositionalSelfAttention(8, 4, dropout=v))
    each_bad("gpsa", "qkv_bias", FLAG, lambda v: GatedPositionalSelfAttention(8, 4, qkv_bias=v))
    each_bad("gpsa", "positional", {"linear": nn.Linear(2, 2), "string": "quadratic",
                                    "query-dependent": QueryRelativeLogits(4, 2, 2)},
             lambda v: GatedPositionalSelfAttention(8, 4, positional=v))
    each_bad("gpsa", "locality_strength", {"zero": 0.0, "negative": -1.0, "nan": NAN, "string": "1"},
             lambda v: GatedPositionalSelfAttention(8, 4, locality_strength=v))
    gpsa = seeded(lambda: GatedPositionalSelfAttention(8, 4, proj_drop=0.5).train())
    edge("gpsa-proj_drop-training", "x", lambda: gpsa(x(2, 3, 3, 8)))
    edge("gpsa-proj_drop-0.999", "x",
         lambda: seeded(lambda: GatedPositionalSelfAttention(8, 4, proj_drop=0.999).train())(x(1, 2, 2, 8)))

    # ---- DynamicConv1d(value_dim=..., conv_bias=...)
    each_bad("dynamic", "value_dim", {k: v for k, v in COUNT.items()} | {"indivisible": 3},
             lambda v: DynamicConv1d(8, 2, 3, value_dim=v))
    each_bad("dynamic", "conv_bias", FLAG, lambda v: DynamicConv1d(8, 2, 3, conv_bias=v))
    each_bad("dynamic", "cut_long_kernel", {"string": "yes", "int": 1}, lambda v: DynamicConv1d(
        8, 2, 3, causal=True, cut_long_kernel=v))
    wide = seeded(lambda: DynamicConv1d(8, 2, 3, value_dim=4, conv_bias=True))
    bad("dynamic-value_dim-no-values", "values", lambda: wide(x(2, 5, 8)))
    bad("dynamic-value_dim-values-channels", "values", lambda: wide(x(2, 5, 8), values=x(2, 5, 6)))
    bad("dynamic-value_dim-values-list", "values", lambda: wide(x(2, 5, 8), values=[[0.0] * 4] * 5))
    bad("dynamic-value_dim-values-dtype", "values", lambda: wide(x(2, 5, 8), values=x(2, 5, 4, dtype=torch.float64)))
    bad("dynamic-value_dim-values-tokens", "values", lambda: wide(x(2, 5, 8), values=x(2, 4, 4)))
    edge("dynamic-value_dim-values-1e20", "values", lambda: wide(x(2, 5, 8), values=x(2, 5, 4, scale=1e20)))
    edge("dynamic-value_dim-one-token", "values", lambda: wide(x(1, 1, 8), values=x(1, 1, 4)))

    # ---- per-projection convolution settings of CompositeAttention
    def composite(**kw):
        return CompositeAttention(8, 2, 2, 16, conv_projections=("query", "value"), **kw)

    each_bad("composite", "conv_groups", COUNT | PER_PROJECTION | {"indivisible": 3, "map-zero": {"query": 0},
                                                                   "map-unconvolved": {"key": 2}},
             lambda v: composite(conv_groups=v))
    each_bad("composite", "conv_depth_multiplier", COUNT | PER_PROJECTION | {"map-zero": {"value": 0},
                                                                             "map-float": {"query": 1.5}},
             lambda v: composite(conv_depth_multiplier=v))
    bad("composite-conv_depth_multiplier-grouped", "conv_depth_multiplier",
        lambda: composite(conv_groups=2, conv_depth_multiplier=2))
    each_bad("composite", "conv_activation", ACTIVATION | {"map-unknown": {"query": "elu"}, "map-int": {"value": 3},
                                                           "map-unconvolved": {"key": "gelu"}},
             lambda v: composite(conv_activation=v))
    bad("composite-conv_activation-grouped", "conv_activation", lambda: composite(conv_groups=2, conv_activation="gelu"))
    bad("composite-conv_activation-no-projections", "conv_activation",
        lambda: CompositeAttention(8, 2, 2, 16, conv_activation="relu"))
    each_bad("composite", "mixed_projections", {"string": "yes", "int": 1, "list": [True], "none": None,
                                                "map-string": {"query": "yes"}, "map-unconvolved": {"key": True}},
             lambda v: composite(mixed_projections=v))
    each_bad("composite", "conv_kernel_size", {"map-even": {"query": 4}, "map-unknown": {"queries": 3},
                                               "list": [3, 3], "map-float": {"value": 3.0},
                                               "map-unconvolved": {"key": 5}},
             lambda v: composite(conv_kernel_size=v))
    bad("composite-mixed_split", "mixed_split", lambda: composite(mixed_projections=True, mixed_split="half"))
    edge("composite-per-projection-one-token", "x", lambda: seeded(lambda: composite(
        conv_activation={"query": "mish"}, conv_depth_multiplier={"value": 3}, mixed_projections={"value": True},
        conv_kernel_size={"query": 5, "value": 3}))(x(1, 1, 8)))
    edge("composite-grouped-1e20", "x", lambda: seeded(lambda: composite(conv_groups=2))(x(2, 5, 8, scale=1e20)))

    # ---- depth_multiplier and the activation names
    each_bad("depthwise-separable", "depth_multiplier", COUNT | {"none": None},
             lambda v: DepthwiseSeparableConv1d(8, 4, 3, depth_multiplier=v))
    each_bad("depthwise-separable", "activation", ACTIVATION, lambda v: DepthwiseSeparableConv1d(8, 4, 3, activation=v))
    each_bad("activation_function", "activation", ACTIVATION, activation_function)
    each_bad("Activation", "activation", ACTIVATION | {"none": None}, Activation)
    for name in ("gelu", "gelu_new", "gelu_fast", "relu", "swish", "mish", "tanh", "sigmoid"):
        edge(f"depthwise-separable-{name}-1e20", "x", lambda name=name: seeded(
            lambda: DepthwiseSeparableConv1d(8, 4, 3, activation=name, depth_multiplier=2))(x(2, 5, 8, scale=1e20)))

    # ---- the BERT config's fields, directly and through --set
    tiny = BERT_SIZES["tiny"]
    each_bad("bert-config", "hidden_act", ACTIVATION | {"none": None}, lambda v: replace(tiny, hidden_act=v))
    each_bad("bert-config", "conv_projections", {"string": "query", "unknown": ["queries"], "twice": ["key", "key"],
                                                 "int": 3, "bool": True, "dict": {"query": True}},
             lambda v: replace(tiny, conv_projections=v))
    conv = replace(tiny, variant="conv-key")
    each_bad("bert-config", "conv_activation", ACTIVATION | {"map-unconvolved": {"value": "gelu"},
                                                             "map-auto-unknown": {"key": "elu"}},
             lambda v: replace(conv, conv_activation=v))
    bad("bert-config-conv_activation-no-projections", "conv_activation", lambda: replace(tiny, conv_activation="relu"))
    each_bad("bert-config", "conv_groups", COUNT | PER_PROJECTION | {"indivisible": 3, "map-zero": {"key": 0}},
             lambda v: replace(conv, conv_groups=v))
    bad("bert-config-conv_groups-gelu-variant", "conv_groups", lambda: replace(tiny, variant="conv-key-gelu",
                                                                               conv_groups=2))
    bad("bert-config-conv_groups-mixed-indivisible", "conv_groups",
        lambda: replace(tiny, variant="conv-key-mixed", hidden_dim=24, num_heads=2, conv_groups=24))
    bad("bert-config-conv_groups-no-projections", "conv_groups", lambda: replace(tiny, conv_groups=2))
    each_bad("bert-config", "conv_depth_multiplier", COUNT | PER_PROJECTION | {"map-zero": {"key": 0}},
             lambda v: replace(conv, conv_depth_multiplier=v))
    bad("bert-config-conv_depth_multiplier-no-projections", "conv_depth_multiplier",
        lambda: replace(tiny, conv_depth_multiplier=2))
    each_bad("bert-config", "mixed_projections", {"string": "yes", "int": 1, "list": [True], "map-string": {"key": "y"}},
             lambda v: replace(conv, mixed_projections=v))
    bad("bert-config-mixed_projections-one-head", "mixed_projections",
        lambda: replace(conv, num_heads=1, mixed_projections=True))
    each_bad("bert-config", "conv_kernel_size", {"map-even": {"key": 4}, "map-unknown": {"keys": 3}, "list": [3],
                                                 "nan": NAN, "bool": True},
             lambda v: replace(conv, conv_kernel_size=v))
    bad("bert-config-conv_kernel_size-convolution-map", "conv_kernel_size",
        lambda: replace(tiny, variant="convolution", conv_kernel_size={"value": 3}))
    smoke = PRETRAIN_CONFIGS["smoke"]
    for override, field in (("model.hidden_act=elu", "hidden_act"), ("model.conv_groups=3", "conv_groups"),
                            ("model.conv_depth_multiplier=nan", "conv_depth_multiplier"),
                            ("model.conv_activation=[1]", "conv_activation"),
                            ("model.conv_projections=query", "conv_projections"),
                            ("model.mixed_projections=maybe", "mixed_projections"),
                            ("model.conv_activation.key=relu", "model.conv_activation.key")):
        bad(f"pretrain-override-{override}", field, lambda override=override: apply_overrides(smoke, [override]))
    bert = seeded(lambda: BertForMaskedLM(replace(tiny, variant="conv-value", hidden_act="mish", dropout=0.0,
                                                  conv_activation="hidden_act", conv_depth_multiplier=2)).eval())
    edge("bert-options-one-token", "input_ids", lambda: bert(torch.ones(1, 1, dtype=torch.long)))
    edge("bert-options-full-length", "input_ids", lambda: bert(torch.ones(2, tiny.max_length, dtype=torch.long)))
