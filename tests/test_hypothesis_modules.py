"""Every public module, fed random shapes, dtypes and padding masks: it returns finite outputs of the right shape,
or raises ValueError or TypeError (never another exception, never a silent NaN)."""

import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from attnconv.attention import MultiHeadSelfAttention
from attnconv.composite import CompositeAttention, MixedProjection
from attnconv.lightconv import DepthwiseSeparableConv1d, DynamicConv1d, LightweightConv1d, ProjectedConv1d
from attnconv.positional import (
    ALiBi,
    AnisotropicGaussianEncoding,
    KeyRelativeLogits,
    LearnedRelativeEncoding2d,
    QuadraticEncoding,
    QueryRelativeLogits,
    RelativePositionBias,
)

C, HEADS = 8, 2
D64 = torch.float64
DTYPES = [torch.float32, torch.float64, torch.float16, torch.int64]
CLEAR = (ValueError, TypeError)


def _sequence_module(kind: str) -> tuple[torch.nn.Module, int]:
    """A module and its output channels."""
    return {
        "mhsa": lambda: (MultiHeadSelfAttention(C, HEADS), C),
        "mhsa-causal-bias": lambda: (MultiHeadSelfAttention(C, HEADS, content=False, positional=RelativePositionBias(
            HEADS, 2, window=True, causal=True)), C),
        "mhsa-alibi": lambda: (MultiHeadSelfAttention(C, HEADS, positional=ALiBi(HEADS)), C),
        "mhsa-shaw": lambda: (MultiHeadSelfAttention(C, HEADS, positional=QueryRelativeLogits(HEADS, 4, 2)), C),
        "mhsa-key-causal": lambda: (MultiHeadSelfAttention(C, HEADS, positional=KeyRelativeLogits(
            HEADS, 4, 2, causal=True)), C),
        "mhsa-quadratic-1d": lambda: (MultiHeadSelfAttention(C, HEADS, content=False, positional=QuadraticEncoding(
            HEADS, centers=[[-1.0], [1.0]], alpha=2.0)), C),
        "composite": lambda: (CompositeAttention(C, HEADS, 2, 6, fixed=True, query_dynamic=True, key_dynamic=True,
                                                 query_chunk=2), C),
        "composite-window": lambda: (CompositeAttention(C, HEADS, 1, 6, content=False, fixed=True, window=True), C),
        "composite-chang": lambda: (CompositeAttention(C, HEADS, 2, 6, conv_projections=("query", "value"),
                                                       mixed_projections=True, conv_activation="gelu",
                                                       value_conv=True), C),
        "lightweight": lambda: (LightweightConv1d(C, HEADS, 3, bias=True), C),
        "lightweight-renormalize": lambda: (LightweightConv1d(C, HEADS, 5, boundary="renormalize"), C),
        "lightweight-causal-raw": lambda: (LightweightConv1d(C, HEADS, 2, causal=True, weight_softmax=False), C),
        "dynamic": lambda: (DynamicConv1d(C, HEADS, 3, conv_bias=True), C),
        "dynamic-renormalize-causal": lambda: (DynamicConv1d(C, HEADS, 3, boundary="renormalize", causal=True), C),
        "depthwise-separable": lambda: (DepthwiseSeparableConv1d(C, 6, 3, activation="gelu"), 6),
        "mixed-projection": lambda: (MixedProjection(C, 4, HEADS, 1, 3), C),
        "projected": lambda: (ProjectedConv1d(LightweightConv1d(C, HEADS, 3), torch.nn.Linear(C, C)), C),
    }[kind]()


def _image_module(kind: str) -> torch.nn.Module:
    return {
        "quadratic": lambda: MultiHeadSelfAttention(C, 4, content=False, positional=QuadraticEncoding(4, alpha=1.0)),
        "quadratic-hard": lambda: MultiHeadSelfAttention(C, 4, content=False, positional=QuadraticEncoding(
            4, centers=[[0, 0], [0, 1], [1, 0], [-1, -1]], alpha=None)),
        "anisotropic": lambda: MultiHeadSelfAttention(C, 4, positional=AnisotropicGaussianEncoding(4)),
        "learned": lambda: MultiHeadSelfAttention(C, 2, content=False, positional=LearnedRelativeEncoding2d(2, 5, 4)),
        "learned-content": lambda: MultiHeadSelfAttention(C, 2, positional=LearnedRelativeEncoding2d(
            2, 5, 4, query_dependent=True)),
    }[kind]()


def _run(module: torch.nn.Module, x: torch.Tensor, mask: torch.Tensor | None):
    if isinstance(module, MixedProjection):
        return module(x, mask)
    out = module(x, key_padding_mask=mask)
    return out[0] if isinstance(out, tuple) else out


FAULTS = ["none"] * 6 + ["dtype", "channels", "rank", "mask-shape", "mask-dtype"]


def _mask(draw, shape, fault):
    """No mask, or a random one (a row may be all padding); a malformed one for the mask faults."""
    if fault == "mask-shape":
        return torch.zeros(*shape[:-1], shape[-1] + 1, dtype=torch.bool)
    if fault != "mask-dtype" and draw(st.booleans()):
        return None
    generator = torch.Generator().manual_seed(draw(st.integers(0, 2**16)))
    mask = torch.rand(*shape, generator=generator) < draw(st.floats(0.0, 0.9))
    return mask.long() if fault == "mask-dtype" else mask


def _input(draw, shape, module_dtype, fault):
    """Random tokens of ``shape``, at most one fault: a wrong dtype or channel count, or a wrong rank."""
    if fault == "channels":
        shape = (*shape[:-1], shape[-1] + 3)
    if fault == "rank":
        shape = draw(st.sampled_from([shape[:1] + shape[-1:], (*shape, 1), shape[-1:]]))
    dtype = draw(st.sampled_from([t for t in DTYPES if t != module_dtype])) if fault == "dtype" else module_dtype
    return (torch.randn(*shape) * 3).to(dtype)


def _check(module, x, mask, expected_shape, fault):
    """A faulty input must raise a clear error; a sound one must give finite outputs (or a clear error, as for
    N = 0 tokens or a row of padding only)."""
    try:
        out = _run(module, x, mask)
    except CLEAR:
        return
    assert fault == "none", f"the fault {fault!r} passed silently"
    assert tuple(out.shape) == expected_shape
    assert torch.isfinite(out).all()


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(),
       kind=st.sampled_from(["mhsa", "mhsa-causal-bias", "mhsa-alibi", "mhsa-shaw", "mhsa-key-causal",
                             "mhsa-quadratic-1d",
                             "composite", "composite-window", "composite-chang", "lightweight",
                             "lightweight-renormalize", "lightweight-causal-raw", "dynamic",
                             "dynamic-renormalize-causal", "depthwise-separable", "mixed-projection", "projected"]))
def test_sequence_modules_return_finite_outputs_or_raise_clearly(data, kind):
    torch.manual_seed(0)
    module, out_channels = _sequence_module(kind)
    module_dtype = data.draw(st.sampled_from([torch.float32, torch.float64]))
    module = module.to(module_dtype).eval()
    b, n = data.draw(st.integers(0, 3)), data.draw(st.integers(0, 8))
    fault = data.draw(st.sampled_from(FAULTS))
    x = _input(data.draw, (b, n, C), module_dtype, fault)
    mask = _mask(data.draw, (b, n), fault)
    expected = (b, n, out_channels)
    _check(module, x, mask, expected, fault)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), kind=st.sampled_from(["quadratic", "quadratic-hard", "anisotropic", "learned",
                                             "learned-content"]))
def test_image_attention_returns_finite_outputs_or_raises_clearly(data, kind):
    torch.manual_seed(0)
    module = _image_module(kind).to(data.draw(st.sampled_from([torch.float32, torch.float64]))).eval()
    module_dtype = module.out_proj.weight.dtype
    b, h, w = data.draw(st.integers(0, 2)), data.draw(st.integers(0, 6)), data.draw(st.integers(0, 6))
    fault = data.draw(st.sampled_from(FAULTS))
    x = _input(data.draw, (b, h, w, C), module_dtype, fault)
    mask = _mask(data.draw, (b, h, w), fault)
    _check(module, x, mask, (b, h, w, C), fault)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), variant=st.sampled_from(["absolute", "composite-noabs", "conv-key-mixed", "convolution"]))
def test_bert_encoder_returns_finite_states_or_raises_clearly(data, variant):
    from attnconv.models.bert import BertConfig, BertEncoder

    torch.manual_seed(0)
    config = BertConfig(vocab_size=30, hidden_dim=8, depth=1, num_heads=2, mlp_dim=16, max_length=6,
                        variant=variant, max_distance=2, dropout=0.0)
    model = BertEncoder(config).eval()
    b, n = data.draw(st.integers(0, 2)), data.draw(st.integers(0, 8))
    fault = data.draw(st.sampled_from(["none"] * 4 + ["float-ids", "out-of-range", "mask-dtype", "types"]))
    generator = torch.Generator().manual_seed(data.draw(st.integers(0, 2**16)))
    ids = torch.randint(0, 30, (b, n), generator=generator)
    if fault == "float-ids":
        ids = ids.float()
    if fault == "out-of-range" and ids.numel():
        ids[0, 0] = 30
    types = torch.full((b, n), 2) if fault == "types" and b * n else None
    mask = None if data.draw(st.booleans()) else torch.rand(b, n, generator=generator) < 0.5
    if fault == "mask-dtype":
        mask = torch.zeros(b, n, dtype=torch.long)
    try:
        with torch.no_grad():
            out = model(ids, types, mask)
    except CLEAR:
        return
    assert fault == "none" or (b * n == 0 and fault in ("out-of-range", "types")), f"{fault!r} passed silently"
    assert tuple(out.shape) == (b, n, 8) and torch.isfinite(out).all()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), dims=st.sampled_from([1, 2]))
def test_convolution_as_attention_returns_finite_outputs_or_raises_clearly(data, dims):
    from attnconv.construct import conv_to_mhsa

    torch.manual_seed(0)
    conv = (torch.nn.Conv1d if dims == 1 else torch.nn.Conv2d)(3, 4, 3, padding=data.draw(st.integers(0, 1)))
    layer = conv_to_mhsa(conv.double())
    b = data.draw(st.integers(0, 2))
    spatial = tuple(data.draw(st.integers(0, 5)) for _ in range(dims))
    fault = data.draw(st.sampled_from(["none"] * 3 + ["dtype", "channels"]))
    x = torch.randn(b, 5 if fault == "channels" else 3, *spatial, dtype=torch.float32 if fault == "dtype" else D64)
    try:
        out = layer(x)
    except CLEAR:
        return
    assert fault == "none", f"the fault {fault!r} passed silently"
    torch.testing.assert_close(out, conv.double()(x), rtol=0, atol=1e-12)
