"""Exact converters between lightweight/dynamic convolutions and position-only attention (Chang et al. 2021)."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from attnconv import CompositeAttention, DynamicConv1d, LightweightConv1d, MultiHeadSelfAttention
from attnconv.composite import RelativeLogitSum
from attnconv.construct import (
    attention_to_dynamic_conv,
    attention_to_lightconv,
    dynamic_conv_to_attention,
    lightconv_to_attention,
)
from attnconv.positional import ALiBi, KeyRelativeLogits, QueryRelativeLogits, RelativePositionBias

f64 = dict(dtype=torch.float64)


def _mask(batch, n, rate, generator):
    mask = torch.rand(batch, n, generator=generator) < rate
    mask[:, 0] = False
    return mask


@settings(max_examples=25, deadline=None)
@given(heads=st.integers(1, 3), group=st.integers(1, 3), k=st.integers(0, 4), n=st.integers(1, 14),
       masked=st.booleans(), bias=st.booleans(), seed=st.integers(0, 2**16))
def test_lightconv_to_attention_is_exact(heads, group, k, n, masked, bias, seed):
    """Equivalence 1, both ways: a renormalised lightweight conv is attention with a windowed bias b = w."""
    torch.manual_seed(seed)
    conv = LightweightConv1d(heads * group, heads, 2 * k + 1, boundary="renormalize", bias=bias).double()
    if bias:
        torch.nn.init.normal_(conv.bias)
    x = torch.randn(2, n, heads * group, **f64)
    mask = _mask(2, n, 0.3, torch.Generator().manual_seed(seed)) if masked else None
    layer = lightconv_to_attention(conv)
    keep = slice(None) if mask is None else ~mask
    torch.testing.assert_close(layer(x, key_padding_mask=mask)[0][keep], conv(x, mask)[keep], rtol=0, atol=1e-12)
    back = attention_to_lightconv(layer)
    torch.testing.assert_close(back(x, mask)[keep], conv(x, mask)[keep], rtol=0, atol=1e-12)
    assert back.conv.kernel_size == 2 * k + 1


@settings(max_examples=15, deadline=None)
@given(heads=st.integers(1, 3), k=st.integers(1, 4), n=st.integers(1, 14), seed=st.integers(0, 2**16))
def test_zero_padded_lightconv_equals_attention_in_the_interior_only(heads, k, n, seed):
    torch.manual_seed(seed)
    conv = LightweightConv1d(2 * heads, heads, 2 * k + 1).double()
    layer = lightconv_to_attention(conv, interior_only=True)
    x = torch.randn(1, n, 2 * heads, **f64)
    diff = (layer(x)[0] - conv(x)).abs().amax(-1)[0]
    assert diff[k : n - k].sum() < 1e-12
    if n > k:
        assert diff[0] > 1e-9  # the first token misses k taps: zero padding and renormalisation differ


@settings(max_examples=20, deadline=None)
@given(kind=st.sampled_from(["clip", "window", "buckets", "alibi", "alibi-causal", "sum"]), heads=st.integers(1, 3),
       n=st.integers(1, 12), masked=st.booleans(), shared=st.booleans(), seed=st.integers(0, 2**16))
def test_attention_to_lightconv_for_every_fixed_term(kind, heads, n, masked, shared, seed):
    """Relative-bias-only attention (clipped, windowed, bucketed, ALiBi, or a sum) is a renormalised lightconv."""
    torch.manual_seed(seed)
    positional = {
        "clip": lambda: RelativePositionBias(heads, 2),
        "window": lambda: RelativePositionBias(heads, 2, window=True),
        "buckets": lambda: RelativePositionBias(heads, 9, num_buckets=8),
        "alibi": lambda: ALiBi(heads),
        "alibi-causal": lambda: ALiBi(heads, causal=True),
        "sum": lambda: RelativeLogitSum([RelativePositionBias(heads, 1), ALiBi(heads)]),
    }[kind]()
    layer = MultiHeadSelfAttention(4 * heads, heads, positional=positional, content=False, shared_values=shared).double()
    conv = attention_to_lightconv(layer, max_length=12)
    x = torch.randn(2, n, 4 * heads, **f64)
    mask = _mask(2, n, 0.3, torch.Generator().manual_seed(seed)) if masked else None
    keep = slice(None) if mask is None else ~mask
    torch.testing.assert_close(conv(x, mask)[keep], layer(x, key_padding_mask=mask)[0][keep], rtol=0, atol=1e-12)
    assert conv.conv.kernel_size == (5 if kind == "window" else 23)  # clipped tails need 2 max_length - 1 taps


def test_clipped_kernel_has_constant_tails():
    layer = MultiHeadSelfAttention(4, 2, positional=RelativePositionBias(2, 1), content=False)
    kernel = attention_to_lightconv(layer, max_length=6).conv.weight  # (N_h, 11)
    assert torch.equal(kernel[:, :5], kernel[:, 4:5].expand(2, 5)) and torch.equal(kernel[:, 6:], kernel[:, 6:7].expand(2, 5))


@settings(max_examples=20, deadline=None)
@given(heads=st.integers(1, 3), head_dim=st.integers(1, 4), k=st.integers(0, 3), n=st.integers(1, 12),
       fixed=st.booleans(), window=st.booleans(), masked=st.booleans(), seed=st.integers(0, 2**16))
def test_shaw_attention_is_a_dynamic_conv(heads, head_dim, k, n, fixed, window, masked, seed):
    """Equivalence 2: content-free attention with Shaw et al.'s term (+ a bias) is a dynamic conv, W^D = W^Q A^T/√D_h."""
    torch.manual_seed(seed)
    layer = CompositeAttention(heads * head_dim, heads, k, max_length=12, content=False, fixed=fixed,
                               query_dynamic=True, window=window).double()
    conv = attention_to_dynamic_conv(layer)
    x = torch.randn(2, n, heads * head_dim, **f64)
    mask = _mask(2, n, 0.3, torch.Generator().manual_seed(seed)) if masked else None
    keep = slice(None) if mask is None else ~mask
    torch.testing.assert_close(conv(x, mask)[keep], layer(x, key_padding_mask=mask)[0][keep], rtol=0, atol=1e-12)


def test_shaw_kernel_predictor_has_rank_at_most_head_dim():
    layer = CompositeAttention(16, 2, 4, max_length=8, content=False, fixed=False, query_dynamic=True, window=True,
                               head_dim=2).double()
    w_d = attention_to_dynamic_conv(layer).conv.kernel_proj.weight.view(2, 9, 16)  # per head (2k+1, C)
    assert [int(torch.linalg.matrix_rank(w)) for w in w_d] == [2, 2]


@settings(max_examples=20, deadline=None)
@given(heads=st.integers(1, 3), group=st.integers(1, 3), k=st.integers(0, 3), n=st.integers(1, 12),
       masked=st.booleans(), seed=st.integers(0, 2**16))
def test_every_dynamic_conv_is_shaw_attention(heads, group, k, n, masked, seed):
    """The converse of Equivalence 2, with D_h = max(C / N_h, 2k+1)."""
    torch.manual_seed(seed)
    conv = DynamicConv1d(heads * group, heads, 2 * k + 1, boundary="renormalize").double()
    layer = dynamic_conv_to_attention(conv)
    assert layer.head_dim == max(group, 2 * k + 1)
    x = torch.randn(2, n, heads * group, **f64)
    mask = _mask(2, n, 0.3, torch.Generator().manual_seed(seed)) if masked else None
    keep = slice(None) if mask is None else ~mask
    torch.testing.assert_close(layer(x, key_padding_mask=mask)[0][keep], conv(x, mask)[keep], rtol=0, atol=1e-12)
    back = attention_to_dynamic_conv(layer)
    torch.testing.assert_close(back(x, mask)[keep], conv(x, mask)[keep], rtol=0, atol=1e-12)


def test_zero_padded_dynamic_conv_in_the_interior():
    torch.manual_seed(0)
    conv = DynamicConv1d(6, 2, 5).double()
    layer = dynamic_conv_to_attention(conv, interior_only=True)
    x = torch.randn(2, 10, 6, **f64)
    torch.testing.assert_close(layer(x)[0][:, 2:-2], conv(x)[:, 2:-2], rtol=0, atol=1e-12)


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: lightconv_to_attention(LightweightConv1d(4, 2, 3)), "conv is zero-padded"),
        (lambda: lightconv_to_attention(DynamicConv1d(4, 2, 3)), "conv must be a LightweightConv1d"),
        (lambda: dynamic_conv_to_attention(DynamicConv1d(4, 2, 3)), "conv is zero-padded"),
        (lambda: dynamic_conv_to_attention(LightweightConv1d(4, 2, 3, boundary="renormalize")), "conv must be a DynamicConv1d"),
        (lambda: attention_to_lightconv(MultiHeadSelfAttention(4, 2)), "module has a content term"),
        (lambda: attention_to_lightconv(torch.nn.Linear(2, 2)), "module must be a MultiHeadSelfAttention"),
        (lambda: attention_to_lightconv(MultiHeadSelfAttention(4, 2, positional=RelativePositionBias(2, 1),
                                                               content=False)), "give max_length"),
        (lambda: attention_to_lightconv(MultiHeadSelfAttention(4, 2, positional=RelativePositionBias(2, 1),
                                                               content=False), max_length=0), "max_length must be"),
        (lambda: attention_to_lightconv(CompositeAttention(4, 2, 1, content=False, query_dynamic=True)),
         "query- or key-dependent term"),
        (lambda: attention_to_dynamic_conv(CompositeAttention(4, 2, 1, content=False, key_dynamic=True)),
         "exactly one QueryRelativeLogits"),
        (lambda: attention_to_dynamic_conv(CompositeAttention(4, 2, 1, content=False, fixed=False, query_dynamic=True,
                                                              conv_projections=("query",))),
         "query projection must be nn.Linear"),
        (lambda: attention_to_dynamic_conv(MultiHeadSelfAttention(4, 2, positional=KeyRelativeLogits(2, 2, 1),
                                                                  content=False)), "exactly one QueryRelativeLogits"),
        (lambda: attention_to_lightconv(MultiHeadSelfAttention(4, 2, positional=QueryRelativeLogits(2, 2, 1),
                                                               content=False), max_length=4), "dynamic convolution"),
    ],
)
def test_bad_input(call, message):
    with pytest.raises(ValueError, match=message):
        call()
