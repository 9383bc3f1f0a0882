"""The fuzz's cases: two lists of calls, each with one argument made bad or extreme, over every public module
(checked in :mod:`tests.test_fuzz`).

- ``BAD``: wrong Python types, shapes, dtypes, ranges and non-finite values.
- ``EDGE``: legal but extreme inputs (huge or tiny magnitudes, float16, one token, an empty batch).

Sizes are small, so no case can hang: every call is a few small tensor operations.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable

import torch
from torch import nn

from attnconv import bounds, tokens
from attnconv.analysis import head_shift, kernel_coverage, layer_shifts
from attnconv.attention import MultiHeadSelfAttention
from attnconv.composite import CompositeAttention, MixedProjection, RelativeLogitSum
from attnconv.construct.image import conv_to_mhsa
from attnconv.construct.sequence import (
    attention_to_dynamic_conv,
    attention_to_lightconv,
    dynamic_conv_to_attention,
    lightconv_to_attention,
)
from attnconv.conv import conv1d_as_shifts, conv2d_as_shifts, conv_as_shifts, kernel_shifts, shift
from attnconv.lightconv import DepthwiseSeparableConv1d, DynamicConv1d, LightweightConv1d, ProjectedConv1d
from attnconv.models.bert import BertConfig, BertEncoder, BertForMaskedLM
from attnconv.models.resnet import ResNetConfig
from attnconv.models.vision import VisionConfig
from attnconv.positional import (
    ALiBi,
    AnisotropicGaussianEncoding,
    KeyRelativeLogits,
    LearnedRelativeEncoding2d,
    QuadraticEncoding,
    QueryRelativeLogits,
    RelativePositionBias,
    band_to_logits,
    grid_positions,
    logits_to_band,
    positional_query,
    quadratic_features,
    relative_index,
    relative_offsets,
    relative_position_bucket,
)
from attnconv.taps import apply_band, masked_softmax, odd_kernel_size, tap_mask
from attnconv.train.bert_config import FINETUNE_CONFIGS, PRETRAIN_CONFIGS
from attnconv.train.runs import apply_overrides
from attnconv.train.vision_config import VISION_CONFIGS

NAN, INF = float("nan"), float("inf")
# Bad values of an argument that must be a positive int, a probability in [0, 1), a positive real number.
POSITIVE_INT = {"zero": 0, "negative": -1, "float": 1.5, "string": "2", "bool": True, "none": None, "nan": NAN}
PROBABILITY = {"string": "0.1", "bool": True, "negative": -0.1, "one": 1.0, "nan": NAN, "inf": INF, "none": None}
POSITIVE_REAL = {"string": "1", "bool": True, "zero": 0.0, "negative": -1.0, "nan": NAN}

BAD: list[tuple[str, str, Callable[[], Any]]] = []  # (id, argument that must be named, call)
EDGE: list[tuple[str, str, Callable[[], Any]]] = []


def bad(case: str, argument: str, call: Callable[[], Any]) -> None:
    BAD.append((case, argument, call))


def edge(case: str, argument: str, call: Callable[[], Any]) -> None:
    EDGE.append((case, argument, call))


def each_bad(name: str, argument: str, values: dict[str, Any], make: Callable[[Any], Any]) -> None:
    for label, value in values.items():
        bad(f"{name}-{argument}-{label}", argument, lambda value=value: make(value))


def x(*shape: int, dtype: torch.dtype = torch.float32, scale: float = 1.0) -> torch.Tensor:
    generator = torch.Generator().manual_seed(0)
    return (torch.randn(*shape, generator=generator, dtype=torch.float64) * scale).to(dtype)


def seeded(make: Callable[[], nn.Module]) -> nn.Module:
    torch.manual_seed(0)
    return make()


# ---------------------------------------------------------------- constructors: every argument of every module

def _constructors() -> None:
    each_bad("mhsa", "embed_dim", POSITIVE_INT, lambda v: MultiHeadSelfAttention(v, 2))
    each_bad("mhsa", "num_heads", POSITIVE_INT, lambda v: MultiHeadSelfAttention(8, v))
    each_bad("mhsa", "head_dim", {k: v for k, v in POSITIVE_INT.items() if v is not None},
             lambda v: MultiHeadSelfAttention(8, 2, head_dim=v))
    each_bad("mhsa", "out_dim", {k: v for k, v in POSITIVE_INT.items() if v is not None},
             lambda v: MultiHeadSelfAttention(8, 2, out_dim=v))
    each_bad("mhsa", "dropout", PROBABILITY, lambda v: MultiHeadSelfAttention(8, 2, dropout=v))
    bad("mhsa-positional-module", "positional", lambda: MultiHeadSelfAttention(8, 2, positional=nn.Linear(2, 2)))
    bad("mhsa-positional-heads", "positional", lambda: MultiHeadSelfAttention(8, 2, positional=ALiBi(4)))
    bad("mhsa-from_torch-linear", "mha", lambda: MultiHeadSelfAttention.from_torch(nn.Linear(8, 8)))
    bad("mhsa-from_torch-none", "mha", lambda: MultiHeadSelfAttention.from_torch(None))

    each_bad("composite", "max_distance", {"negative": -1, "float": 1.5, "string": "2", "bool": True},
             lambda v: CompositeAttention(8, 2, v))
    each_bad("composite", "max_length", POSITIVE_INT, lambda v: CompositeAttention(8, 2, 2, v))
    each_bad("composite", "dropout", PROBABILITY, lambda v: CompositeAttention(8, 2, 2, 16, dropout=v))
    each_bad("composite", "conv_kernel_size", {"even": 2, "zero": 0, "float": 3.0, "string": "3"},
             lambda v: CompositeAttention(8, 2, 2, 16, conv_projections=("query",), conv_kernel_size=v))
    each_bad("composite", "conv_projections", {"string": "query", "unknown": ("queries",)},
             lambda v: CompositeAttention(8, 2, 2, 16, conv_projections=v))
    each_bad("composite", "query_chunk", {"zero": 0, "float": 2.5}, lambda v: CompositeAttention(8, 2, 2, 16, query_chunk=v))
    bad("composite-num_buckets-odd", "num_buckets", lambda: CompositeAttention(8, 2, 8, 16, num_buckets=5))
    bad("composite-conv_activation", "conv_activation",
        lambda: CompositeAttention(8, 2, 2, 16, conv_projections=("key",), conv_activation="elu"))
    bad("composite-mixed-one-head", "mixed_projections",
        lambda: CompositeAttention(8, 1, 2, 16, conv_projections=("key",), mixed_projections=True))
    bad("relative-sum-empty", "terms", lambda: RelativeLogitSum([]))
    bad("relative-sum-modules", "terms", lambda: RelativeLogitSum([nn.Linear(2, 2)]))
    bad("mixed-conv_heads", "conv_heads", lambda: MixedProjection(8, 4, 2, 2, 3))

    for name, make in (("lightweight", LightweightConv1d), ("dynamic", DynamicConv1d)):
        each_bad(name, "embed_dim", {"zero": 0, "float": 8.0, "string": "8"}, lambda v, make=make: make(v, 2, 3))
        each_bad(name, "num_heads", {"zero": 0, "bool": True, "indivisible": 3}, lambda v, make=make: make(8, v, 3))
        each_bad(name, "kernel_size", {"even": 4, "zero": 0, "float": 3.0, "none": None},
                 lambda v, make=make: make(8, 2, v))
        each_bad(name, "boundary", {"unknown": "reflect", "none": None}, lambda v, make=make: make(8, 2, 3, boundary=v))
        each_bad(name, "weight_dropout", PROBABILITY, lambda v, make=make: make(8, 2, 3, weight_dropout=v))
    bad("lightweight-signed-renormalize", "weight_softmax",
        lambda: LightweightConv1d(8, 2, 3, boundary="renormalize", weight_softmax=False))
    each_bad("depthwise-separable", "out_channels", {"zero": 0, "float": 4.5}, lambda v: DepthwiseSeparableConv1d(8, v, 3))
    bad("depthwise-separable-activation", "activation", lambda: DepthwiseSeparableConv1d(8, 4, 3, activation="elu"))
    bad("projected-conv", "conv", lambda: ProjectedConv1d(nn.Conv1d(8, 8, 3)))

    each_bad("quadratic", "alpha", {"string": "1", "bool": True, "zero": 0.0, "negative": -1.0, "nan": NAN, "inf": INF,
                                    "wrong-length": torch.ones(3), "matrix": torch.ones(4, 1), "complex": 1j},
             lambda v: QuadraticEncoding(4, alpha=v))
    each_bad("quadratic", "num_heads", {"zero": 0, "float": 2.0}, lambda v: QuadraticEncoding(v))
    each_bad("quadratic", "centers", {"nan": [[0.0, NAN]], "shape": [[0.0, 0.0], [1.0, 1.0]], "flat": [0.0, 1.0]},
             lambda v: QuadraticEncoding(1, centers=v))
    bad("quadratic-hard-fractional", "centers", lambda: QuadraticEncoding(1, centers=[[0.5, 0.0]], alpha=None))
    each_bad("from_kernel", "kernel_size", {"float": 2.0, "zero": 0, "string": "3", "none": None, "floats": (3.0, 3.0)},
             lambda v: QuadraticEncoding.from_kernel(v))
    each_bad("from_kernel", "dilation", {"zero": 0, "float": 1.5, "too-many": (1, 1, 1)},
             lambda v: QuadraticEncoding.from_kernel(3, dilation=v))
    each_bad("anisotropic", "alpha", {"zero": 0.0, "nan": NAN, "inf": INF}, lambda v: AnisotropicGaussianEncoding(2, alpha=v))
    each_bad("learned-2d", "dim", {"odd": 3, "zero": 0, "float": 4.0}, lambda v: LearnedRelativeEncoding2d(2, 4, v))
    each_bad("learned-2d", "max_size", {"zero": 0, "string": "4"}, lambda v: LearnedRelativeEncoding2d(2, v, 4))
    each_bad("relative-bias", "max_distance", {"negative": -1, "float": 1.5}, lambda v: RelativePositionBias(2, v))
    each_bad("relative-bias", "num_buckets", {"odd": 5, "small": 2}, lambda v: RelativePositionBias(2, 8, num_buckets=v))
    each_bad("query-relative", "head_dim", {"zero": 0, "float": 4.0}, lambda v: QueryRelativeLogits(2, v, 2))
    each_bad("key-relative", "max_distance", {"negative": -2, "string": "2"}, lambda v: KeyRelativeLogits(2, 4, v))
    each_bad("alibi", "num_heads", {"zero": 0, "float": 2.0}, lambda v: ALiBi(v))

    each_bad("bert-config", "hidden_dim", {"zero": 0, "float": 16.0, "indivisible": 15},
             lambda v: BertConfig(vocab_size=50, hidden_dim=v, num_heads=2))
    each_bad("bert-config", "dropout", {"negative": -0.1, "one": 1.0, "nan": NAN, "string": "0.1"},
             lambda v: BertConfig(vocab_size=50, dropout=v))
    each_bad("bert-config", "variant", {"unknown": "mystery", "none": None}, lambda v: BertConfig(variant=v))
    each_bad("bert-config", "pad_id", {"negative": -1, "too-large": 50}, lambda v: BertConfig(vocab_size=50, pad_id=v))
    each_bad("vision-config", "dropout", {"nan": NAN, "one": 1.0, "string": "0.1"}, lambda v: VisionConfig(dropout=v))
    each_bad("vision-config", "attention", {"unknown": "gaussian"}, lambda v: VisionConfig(attention=v))
    each_bad("resnet-config", "width", {"zero": 0, "float": 8.0}, lambda v: ResNetConfig(width=v))


# ---------------------------------------------------------------- functions

def _functions() -> None:
    seq = x(1, 5, 2)
    each_bad("shift", "delta", {"float": 1.5, "string": "1", "bool": True, "empty": (), "none": None},
             lambda v: shift(seq, v))
    bad("shift-x-list", "x", lambda: shift([[1.0, 2.0]], 1))
    bad("shift-x-too-few-dims", "x", lambda: shift(torch.ones(3), (1, 1)))
    weight = x(3, 2, 3)
    each_bad("conv_as_shifts", "stride", {"float": 1.5, "zero": 0, "bool": True, "string": "1", "too-many": (1, 1)},
             lambda v: conv_as_shifts(seq, weight, stride=v))
    each_bad("conv_as_shifts", "padding", {"negative": -1, "float": 0.5}, lambda v: conv_as_shifts(seq, weight, padding=v))
    each_bad("conv_as_shifts", "dilation", {"zero": 0, "none": None}, lambda v: conv_as_shifts(seq, weight, dilation=v))
    bad("conv_as_shifts-fp16-x", "x", lambda: conv_as_shifts(seq.half(), weight))
    bad("conv_as_shifts-int-x", "x", lambda: conv_as_shifts(seq.long(), weight))
    bad("conv_as_shifts-x-list", "x", lambda: conv_as_shifts(seq.tolist(), weight))
    bad("conv_as_shifts-channels", "x", lambda: conv_as_shifts(x(1, 5, 3), weight))
    bad("conv_as_shifts-bias-shape", "bias", lambda: conv_as_shifts(seq, weight, bias=torch.zeros(4)))
    bad("conv_as_shifts-bias-dtype", "bias", lambda: conv_as_shifts(seq, weight, bias=torch.zeros(3, dtype=torch.float64)))
    bad("conv_as_shifts-kernel-too-large", "kernel", lambda: conv_as_shifts(x(1, 2, 2), weight))
    bad("conv1d-weight-2d", "weight", lambda: conv1d_as_shifts(seq, x(3, 2, 3, 3)))
    bad("conv2d-weight-1d", "weight", lambda: conv2d_as_shifts(x(1, 4, 4, 2), weight))
    each_bad("kernel_shifts", "dilation", {"short": [1], "long": [1, 1, 1], "float": [1.5, 1]},
             lambda v: kernel_shifts([3, 3], v, [0, 0]))
    each_bad("kernel_shifts", "padding", {"short": [0], "string": ["0", "0"]}, lambda v: kernel_shifts([3, 3], [1, 1], v))
    each_bad("kernel_shifts", "kernel_size", {"int": 3, "zero": [0, 3], "float": [3.0, 3]},
             lambda v: kernel_shifts(v, [1, 1], [0, 0]))

    bad("quadratic_features-0d", "delta", lambda: quadratic_features(torch.tensor(1.0)))
    bad("quadratic_features-list", "delta", lambda: quadratic_features([1.0, 2.0]))
    bad("positional_query-sizes", "alpha", lambda: positional_query(torch.zeros(3, 2), torch.ones(4)))
    bad("positional_query-centers-1d", "centers", lambda: positional_query(torch.zeros(3), torch.ones(3)))
    bad("positional_query-int", "centers", lambda: positional_query(torch.zeros(3, 2, dtype=torch.long), torch.ones(3)))

    each_bad("theta", "alpha", {"zero": 0.0, "negative": -1.0, "nan": NAN, "string": "1", "none": None},
             lambda v: bounds.theta(v))
    each_bad("theta", "max_offset", {"negative": -1, "float": 2.5}, lambda v: bounds.theta(1.0, max_offset=v))
    each_bad("odd_kernel_size", "kernel_size", {"even": 4, "zero": 0, "float": 3.0}, odd_kernel_size)
    each_bad("tap_mask", "n", {"zero": 0, "float": 4.0}, lambda v: tap_mask(v, 3))
    each_bad("tap_mask", "padding_l", {"negative": -1, "too-large": 3}, lambda v: tap_mask(5, 3, padding_l=v))
    bad("tap_mask-mask-dtype", "key_padding_mask", lambda: tap_mask(5, 3, torch.zeros(1, 5)))
    each_bad("relative_index", "n", {"zero": 0, "float": 4.5}, lambda v: relative_index(v, 2))
    each_bad("relative_index", "max_distance", {"negative": -1, "string": "2"}, lambda v: relative_index(5, v))
    bad("relative_index-rows", "rows", lambda: relative_index(5, 2, rows=slice(3, 1)))
    bad("band_to_logits-even-band", "band", lambda: band_to_logits(torch.zeros(2, 5, 4), 5))
    bad("band_to_logits-frame", "frame", lambda: band_to_logits(torch.zeros(2, 5, 3), 5, frame="middle"))
    bad("logits_to_band-shape", "logits", lambda: logits_to_band(torch.zeros(2, 5, 4)))
    bad("relative_position_bucket-odd", "num_buckets", lambda: relative_position_bucket(torch.arange(5), 5, 8))
    each_bad("grid_positions", "device", {"unknown": "gpu0", "number": 3.5}, lambda v: grid_positions((3,), device=v))
    bad("relative_offsets-device", "device", lambda: relative_offsets((3,), device="tpu"))
    bad("space_to_depth-indivisible", "x", lambda: tokens.space_to_depth(x(1, 5, 5, 3), 2))
    bad("space_to_depth-3d", "x", lambda: tokens.space_to_depth(x(5, 5, 3), 2))
    bad("space_to_depth-block", "block", lambda: tokens.space_to_depth(x(1, 4, 4, 3), 0))
    bad("masked_softmax-list", "logits", lambda: masked_softmax([0.0, 1.0]))
    bad("apply_band-shape", "band", lambda: apply_band(x(1, 5, 4), torch.ones(1, 2, 5, 4)))
    bad("conv_to_mhsa-linear", "conv", lambda: conv_to_mhsa(nn.Linear(2, 2)))
    bad("conv_to_mhsa-alpha", "alpha", lambda: conv_to_mhsa(nn.Conv2d(2, 2, 3, padding=1), alpha=-1.0))
    bad("conv_to_mhsa-head_dim", "head_dim", lambda: conv_to_mhsa(nn.Conv2d(2, 2, 3, padding=1), head_dim=0))
    bad("lightconv_to_attention-type", "conv", lambda: lightconv_to_attention(nn.Conv1d(4, 4, 3)))
    bad("dynamic_conv_to_attention-type", "conv", lambda: dynamic_conv_to_attention(LightweightConv1d(4, 2, 3)))
    bad("attention_to_lightconv-type", "module", lambda: attention_to_lightconv(nn.Linear(4, 4)))
    bad("attention_to_dynamic_conv-content", "module", lambda: attention_to_dynamic_conv(MultiHeadSelfAttention(4, 2)))
    probs = torch.softmax(x(2, 9, 9), -1)
    bad("head_shift-grid", "grid", lambda: head_shift(probs[0], (2, 2)))
    bad("layer_shifts-grid-size", "grid", lambda: layer_shifts(probs, (2, 5)))
    bad("kernel_coverage-kernel_size", "kernel_size", lambda: kernel_coverage([], 0))


# ---------------------------------------------------------------- forward passes: inputs and masks

def _forward_cases() -> None:
    sequence_modules = {
        "mhsa": lambda: MultiHeadSelfAttention(8, 2),
        "composite": lambda: CompositeAttention(8, 2, 2, 16, query_dynamic=True),
        "composite-conv": lambda: CompositeAttention(8, 2, 2, 16, conv_projections=("key",)),
        "lightweight": lambda: LightweightConv1d(8, 2, 3),
        "dynamic": lambda: DynamicConv1d(8, 2, 3),
        "depthwise-separable": lambda: DepthwiseSeparableConv1d(8, 4, 3),
    }
    for name, make in sequence_modules.items():
        module = seeded(make)
        call = lambda *a, module=module, **k: module(*a, **k)
        bad(f"{name}-x-list", "x", lambda call=call: call([[[0.0] * 8]]))
        bad(f"{name}-x-2d", "x", lambda call=call: call(x(5, 8)))
        bad(f"{name}-x-channels", "x", lambda call=call: call(x(2, 5, 7)))
        bad(f"{name}-x-int", "x", lambda call=call: call(torch.ones(2, 5, 8, dtype=torch.long)))
        bad(f"{name}-x-float64", "x", lambda call=call: call(x(2, 5, 8, dtype=torch.float64)))
        bad(f"{name}-x-no-tokens", "x", lambda call=call: call(x(2, 0, 8)))
        bad(f"{name}-mask-float", "key_padding_mask", lambda call=call: call(x(2, 5, 8), key_padding_mask=torch.zeros(2, 5)))
        bad(f"{name}-mask-shape", "key_padding_mask",
            lambda call=call: call(x(2, 5, 8), key_padding_mask=torch.zeros(2, 4, dtype=torch.bool)))
        edge(f"{name}-one-token", "x", lambda call=call: call(x(1, 1, 8)))
        edge(f"{name}-huge-1e20", "x", lambda call=call: call(x(2, 5, 8, scale=1e20)))
        edge(f"{name}-tiny-1e-30", "x", lambda call=call: call(x(2, 5, 8, scale=1e-30)))
        edge(f"{name}-float16-std-300", "x",
             lambda make=make: seeded(make).half()(x(2, 5, 8, dtype=torch.float16, scale=300.0)))
        mask = torch.zeros(2, 5, dtype=torch.bool)
        mask[0, 3:] = True
        edge(f"{name}-padding-holds-inf", "x",
             lambda call=call, mask=mask: call(x(2, 5, 8).masked_fill(mask[..., None], INF), key_padding_mask=mask))
    for name in ("mhsa", "composite"):
        module = seeded(sequence_modules[name])
        bad(f"{name}-mask-all-padding", "key_padding_mask",
            lambda module=module: module(x(2, 5, 8), key_padding_mask=torch.ones(2, 5, dtype=torch.bool)))
        edge(f"{name}-need-weights-1e20", "x", lambda module=module: module(x(2, 5, 8, scale=1e20), need_weights=True))
        edge(f"{name}-need-weights-float16", "x", lambda name=name: seeded(sequence_modules[name]).half()(
            x(2, 5, 8, dtype=torch.float16, scale=300.0), need_weights=True))
        edge(f"{name}-empty-batch", "x", lambda module=module: module(x(0, 5, 8)))
    composite = seeded(sequence_modules["composite"])
    bad("composite-too-long", "max_length", lambda: composite(x(1, 17, 8)))
    bad("composite-image", "x", lambda: composite(x(1, 3, 3, 8)))
    bad("dynamic-values-shape", "values", lambda: seeded(sequence_modules["dynamic"])(x(2, 5, 8), values=x(2, 4, 8)))

    learned = MultiHeadSelfAttention(8, 2, positional=LearnedRelativeEncoding2d(2, 4, 4), content=False)
    bad("learned-2d-on-a-sequence", "grid", lambda: learned(x(1, 3, 8)))
    bad("learned-2d-too-large", "max_size", lambda: learned(x(1, 5, 5, 8)))
    quadratic = MultiHeadSelfAttention(8, 4, positional=QuadraticEncoding(4), content=False)
    bad("quadratic-on-a-sequence", "grid", lambda: quadratic(x(1, 3, 8)))
    edge("quadratic-image-1x1", "x", lambda: quadratic(x(1, 1, 1, 8)))
    edge("quadratic-alpha-1e30", "alpha", lambda: MultiHeadSelfAttention(
        8, 4, positional=QuadraticEncoding(4, alpha=1e30), content=False)(x(1, 3, 3, 8)))
    edge("quadratic-alpha-1e-30", "alpha", lambda: MultiHeadSelfAttention(
        8, 4, positional=QuadraticEncoding(4, alpha=1e-30), content=False)(x(1, 3, 3, 8)))
    anisotropic = MultiHeadSelfAttention(8, 2, positional=AnisotropicGaussianEncoding(2), content=False)
    bad("anisotropic-on-a-sequence", "grid", lambda: anisotropic(x(1, 4, 8)))
    sequence_term = MultiHeadSelfAttention(8, 2, positional=RelativePositionBias(2, 2))
    bad("relative-bias-on-an-image", "grid", lambda: sequence_term(x(1, 3, 3, 8)))

    edge("theta-1e-20", "alpha", lambda: bounds.theta(1e-20))
    edge("theta-1e-300", "alpha", lambda: bounds.theta(1e-300))
    edge("theta-inf", "alpha", lambda: bounds.theta(INF))
    edge("theta-1e-20-cut", "max_offset", lambda: bounds.theta(1e-20, max_offset=10**12))
    edge("off-target-1e-20", "alpha", lambda: bounds.off_target_mass_bound(1e-20))
    edge("conv-as-shifts-1x1", "x", lambda: conv_as_shifts(x(1, 1, 2), x(3, 2, 1)))
    edge("shift-beyond", "delta", lambda: shift(x(1, 3, 2), 5))


# ---------------------------------------------------------------- BERT and the training configs

def _bert_and_configs() -> None:
    config = BertConfig(vocab_size=30, hidden_dim=8, depth=1, num_heads=2, mlp_dim=16, max_length=8, dropout=0.0)
    model = seeded(lambda: BertForMaskedLM(config))
    ids = torch.randint(1, 30, (2, 6), generator=torch.Generator().manual_seed(0))
    labels = torch.full((2, 6), -100)
    bad("bert-ids-float", "input_ids", lambda: model.encoder(ids.float()))
    bad("bert-ids-large", "input_ids", lambda: model.encoder(ids + 30))
    bad("bert-ids-negative", "input_ids", lambda: model.encoder(-ids))
    bad("bert-ids-long-sequence", "max_length", lambda: model.encoder(torch.ones(1, 9, dtype=torch.long)))
    bad("bert-mask-float", "padding_mask", lambda: model.encoder(ids, padding_mask=torch.zeros(2, 6)))
    bad("bert-mask-shape", "padding_mask", lambda: model.encoder(ids, padding_mask=torch.zeros(2, 5, dtype=torch.bool)))
    bad("bert-token-types", "token_type_ids", lambda: model.encoder(ids, token_type_ids=ids))
    bad("bert-labels-vocab", "labels", lambda: model.loss(ids, None, None, labels.masked_fill(labels == -100, 30)))
    bad("bert-labels-negative", "labels", lambda: model.loss(ids, None, None, labels.masked_fill(labels == -100, -5)))
    bad("bert-labels-float", "labels", lambda: model.loss(ids, None, None, labels.float()))
    bad("bert-labels-shape", "labels", lambda: model.loss(ids, None, None, labels[:, :3]))
    edge("bert-labels-all-ignored", "labels", lambda: model.loss(ids, None, None, labels))
    edge("bert-one-token", "input_ids", lambda: model.encoder(ids[:, :1]))

    vision = VISION_CONFIGS["smoke"]
    for field, values in (("lr", {"inf": INF, "nan": NAN, "zero": 0.0, "string": "0.1", "bool": True}),
                          ("momentum", {"one": 1.0, "nan": NAN}), ("weight_decay", {"negative": -1.0, "inf": INF}),
                          ("warmup", {"one": 1.0, "nan": NAN}), ("epochs", {"zero": 0, "float": 2.5}),
                          ("device", {"unknown": "gpu", "number": 0})):
        each_bad("train-config", field, values, lambda v, field=field: replace(vision, **{field: v}))
    for override, field in (("sa=3", "sa"), ("lr=nan", "lr"), ("lr=inf", "lr"), ("epochs=abc", "epochs"),
                            ("sa.depth=1.5", "depth"), ("unknown=1", "unknown"), ("lr", "overrides")):
        bad(f"train-override-{override}", field, lambda override=override: apply_overrides(vision, [override]))
    for name, configs in (("pretrain", PRETRAIN_CONFIGS), ("finetune", FINETUNE_CONFIGS)):
        smoke = configs["smoke"]
        each_bad(f"{name}-config", "lr", {"inf": INF, "nan": NAN, "string": "1e-3"},
                 lambda v, smoke=smoke: replace(smoke, lr=v))
        bad(f"{name}-override-lr-inf", "lr", lambda smoke=smoke: apply_overrides(smoke, ["lr=inf"]))


_constructors()
_functions()
_forward_cases()
_bert_and_configs()



def _option_cases() -> None:
    from .fuzz_cases_options import option_cases  # here, so that either module may be imported first

    option_cases()


_option_cases()
