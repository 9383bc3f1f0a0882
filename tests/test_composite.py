"""CompositeAttention: every combination of terms against a direct formula, any length, masks, chunks, bad input."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.utils._python_dispatch import TorchDispatchMode

from attnconv import CompositeAttention, MultiHeadSelfAttention
from attnconv.composite import RelativeLogitSum
from attnconv.lightconv import DepthwiseSeparableConv1d
from attnconv.positional import KeyRelativeLogits, QueryRelativeLogits, RelativePositionBias

f64 = dict(dtype=torch.float64)


def _reference(layer: CompositeAttention, x, mask=None):
    """The composite logits written out with (N, N, D_h) embedding gathers (the textbook formula)."""
    n = x.shape[1]
    if mask is not None:  # a padded token reads as zeros
        x = x.masked_fill(mask[..., None], 0.0)
    q, k, v = layer.project(x)
    pos = torch.arange(n)
    delta = pos[None, :] - pos[:, None]
    tap = delta.clamp(-layer.max_distance, layer.max_distance) + layer.max_distance
    logits = torch.zeros(x.shape[0], layer.num_heads, n, n, **f64)
    if layer.content:
        logits = logits + q @ k.transpose(-1, -2) / math.sqrt(layer.head_dim)
    if layer.fixed_term is not None:
        logits = logits + layer.fixed_term.kernel_logits()[:, tap]
    if layer.query_term is not None:
        logits = logits + torch.einsum("bhid,ijd->bhij", q, layer.query_term.embedding[tap]) / math.sqrt(layer.head_dim)
    if layer.key_term is not None:
        logits = logits + torch.einsum("bhjd,ijd->bhij", k, layer.key_term.embedding[tap]) / math.sqrt(layer.head_dim)
    if layer.window:
        logits = logits.masked_fill(delta.abs() > layer.max_distance, float("-inf"))
    if mask is not None:
        logits = logits.masked_fill(mask[:, None, None, :], float("-inf"))
    probs = torch.softmax(logits, -1)
    return layer.merge_heads(probs @ v, (n,)), probs


flags = st.fixed_dictionaries({"content": st.booleans(), "fixed": st.booleans(), "query_dynamic": st.booleans(),
                               "key_dynamic": st.booleans()}).filter(lambda f: any(f.values()))


@settings(max_examples=40, deadline=None)
@given(terms=flags, heads=st.integers(1, 3), head_dim=st.integers(1, 4), k=st.integers(0, 4), n=st.integers(1, 14),
       chunk=st.integers(1, 16), masked=st.booleans(), seed=st.integers(0, 2**16))
def test_matches_the_formula(terms, heads, head_dim, k, n, chunk, masked, seed):
    torch.manual_seed(seed)
    layer = CompositeAttention(heads * head_dim, heads, k, max_length=16, query_chunk=chunk, **terms).double()
    x = torch.randn(2, n, heads * head_dim, **f64)
    mask = None
    if masked:
        mask = torch.rand(2, n) < 0.4
        mask[:, 0] = False
    out, probs = layer(x, key_padding_mask=mask, need_weights=True)
    expected, expected_probs = _reference(layer, x, mask)
    torch.testing.assert_close(out, expected, rtol=0, atol=1e-12)
    torch.testing.assert_close(probs, expected_probs, rtol=0, atol=1e-12)
    fast, _ = layer(x, key_padding_mask=mask)
    torch.testing.assert_close(fast, expected, rtol=0, atol=1e-12)


@settings(max_examples=15, deadline=None)
@given(terms=flags, k=st.integers(0, 3), n=st.integers(2, 12), seed=st.integers(0, 2**16))
def test_window_with_padding_matches_the_formula_on_real_tokens(terms, k, n, seed):
    """With a window, a padded query may have no key at all: its output is finite; real tokens are exact."""
    torch.manual_seed(seed)
    layer = CompositeAttention(6, 2, k, max_length=12, window=True, query_chunk=5, **terms).double()
    x = torch.randn(2, n, 6, **f64)
    mask = torch.zeros(2, n, dtype=torch.bool)
    mask[1, n // 2:] = True
    out, _ = layer(x, key_padding_mask=mask)
    expected, _ = _reference(layer, x, mask)
    assert torch.isfinite(out).all()
    torch.testing.assert_close(out[~mask], expected[~mask], rtol=0, atol=1e-12)


def test_equals_the_multihead_attention_path():
    """The chunked forward equals MultiHeadSelfAttention.forward on the same weights and positional module."""
    torch.manual_seed(0)
    layer = CompositeAttention(12, 3, 2, max_length=40, query_dynamic=True, key_dynamic=True, query_chunk=7).double()
    x = torch.randn(2, 30, 12, **f64)
    mask = torch.zeros(2, 30, dtype=torch.bool)
    mask[0, 25:] = True
    ours, _ = layer(x, key_padding_mask=mask)
    base, _ = MultiHeadSelfAttention.forward(layer, x, key_padding_mask=mask)
    torch.testing.assert_close(ours, base, rtol=0, atol=1e-12)



class _LargestIntegerTensor(TorchDispatchMode):
    """Records the largest storage (in bytes) of any int64 tensor an operation creates: the relative indices."""

    def __init__(self) -> None:
        super().__init__()
        self.largest = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for t in (out if isinstance(out, (tuple, list)) else (out,)):
            if isinstance(t, torch.Tensor) and t.dtype == torch.int64:
                self.largest = max(self.largest, t.untyped_storage().nbytes())
        return out


@pytest.mark.parametrize("window", [False, True])
@pytest.mark.parametrize("terms", [dict(fixed=True, query_dynamic=True, key_dynamic=True),
                                   dict(fixed=False, content=True)])
def test_index_memory_follows_query_chunk(window, terms):
    """A chunked call builds its relative index per chunk, (T, N), never (N, N), and gives the unchunked output."""
    torch.manual_seed(0)
    n, chunk = 96, 8
    layer = CompositeAttention(8, 2, 3, max_length=n, window=window, query_chunk=chunk, **terms).double()
    x = torch.randn(2, n, 8, **f64)
    mask = torch.zeros(2, n, dtype=torch.bool)
    mask[1, 80:] = True
    with _LargestIntegerTensor() as seen:
        out, probs = layer(x, key_padding_mask=mask, need_weights=True)
    assert 0 < seen.largest <= 8 * chunk * n  # the old shared index took 8 N^2 bytes, 12 times more here
    layer.query_chunk = n
    whole, whole_probs = layer(x, key_padding_mask=mask, need_weights=True)
    torch.testing.assert_close(out, whole, rtol=0, atol=1e-13)
    torch.testing.assert_close(probs, whole_probs, rtol=0, atol=1e-13)

@settings(max_examples=10, deadline=None)
@given(n=st.integers(1, 10), pad=st.integers(1, 6), window=st.booleans(), seed=st.integers(0, 2**16))
def test_any_length_and_padding_give_the_unpadded_result(n, pad, window, seed):
    """Right-padding a sequence changes nothing on its real tokens, with convolutional projections too."""
    torch.manual_seed(seed)
    layer = CompositeAttention(8, 2, 2, max_length=16, query_dynamic=True, key_dynamic=True, window=window,
                               conv_projections=("query", "key", "value")).double()
    short = torch.randn(1, n, 8, **f64)
    padded = torch.cat([short, torch.randn(1, pad, 8, **f64)], dim=1)
    mask = torch.zeros(1, n + pad, dtype=torch.bool)
    mask[:, n:] = True
    torch.testing.assert_close(layer(padded, key_padding_mask=mask)[0][:, :n], layer(short)[0], rtol=0, atol=1e-12)


def test_convolution_only_layer_works_and_is_shared_across_the_batch():
    """No content term: the layer is a pure convolution, and its probabilities are the same for the whole batch."""
    layer = CompositeAttention(8, 2, 3, max_length=32, content=False, fixed=True)
    assert layer.q_proj is None and layer.k_proj is None
    out, probs = layer(torch.randn(3, 20, 8), need_weights=True)
    assert out.shape == (3, 20, 8) and torch.equal(probs[0], probs[2])


def test_conv_projections_replace_the_linear_maps():
    layer = CompositeAttention(8, 2, 2, conv_projections=("key", "value"), conv_kernel_size=5)
    assert isinstance(layer.k_proj, DepthwiseSeparableConv1d) and isinstance(layer.v_proj, DepthwiseSeparableConv1d)
    assert isinstance(layer.q_proj, torch.nn.Linear) and layer.k_proj.kernel_size == 5
    out, _ = layer(torch.randn(2, 9, 8))
    assert out.shape == (2, 9, 8)


def test_terms_and_repr():
    layer = CompositeAttention(8, 2, 3, fixed=True, query_dynamic=True, key_dynamic=True, num_buckets=4)
    assert [type(t) for t in layer.terms] == [RelativePositionBias, QueryRelativeLogits, KeyRelativeLogits]
    assert layer.fixed_term.num_buckets == 4
    text = repr(layer)
    assert "terms=content+fixed+query_dynamic+key_dynamic" in text and "max_length=512" in text


def test_gradcheck_and_dropout():
    layer = CompositeAttention(4, 2, 1, max_length=8, query_dynamic=True, key_dynamic=True, query_chunk=2).double()
    x = torch.randn(1, 5, 4, **f64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda t: layer(t)[0], (x,))
    drop = CompositeAttention(8, 2, 2, dropout=0.5).train()
    torch.manual_seed(0)
    a = drop(torch.ones(1, 6, 8))[0]
    torch.manual_seed(1)
    assert not torch.allclose(a, drop(torch.ones(1, 6, 8))[0])


def test_relative_logit_sum():
    terms = [RelativePositionBias(2, 1), QueryRelativeLogits(2, 3, 1)]
    total = RelativeLogitSum(terms)
    assert total.uses_queries and not total.uses_keys and total.num_heads == 2
    q = torch.randn(1, 2, 4, 3)
    torch.testing.assert_close(total((4,), q, None), terms[0]((4,), None, None) + terms[1]((4,), q, None))


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(content=False, fixed=False), "at least one of content, fixed, query_dynamic, key_dynamic"),
        (dict(max_distance=-1), "max_distance must be a non-negative integer"),
        (dict(max_length=0), "max_length must be a positive integer"),
        (dict(query_chunk=0), "query_chunk must be a positive integer"),
        (dict(fixed=False, num_buckets=8), "num_buckets applies to the fixed term"),
        (dict(num_buckets=7, max_distance=10), "num_buckets must be even"),
        (dict(conv_projections=("output",)), "conv_projections must name some of"),
        (dict(content=False, conv_projections=("query",)), "computes no querys"),
        (dict(conv_projections=("query",), conv_kernel_size=4), "kernel_size must be odd"),
        (dict(embed_dim=10, num_heads=3, query_dynamic=True), r"embed_dim \(10\) must be divisible by num_heads \(3\)"),
        (dict(num_heads=0), "num_heads must be a positive integer"),
    ],
)
def test_constructor_bad_input(kwargs, message):
    args = dict(embed_dim=8, num_heads=2, max_distance=2)
    args.update(kwargs)
    with pytest.raises(ValueError, match=message):
        CompositeAttention(**args)


@pytest.mark.parametrize(
    "x, mask, message",
    [
        (torch.randn(1, 13, 8), None, "sequence length N=13 exceeds max_length=12"),
        (torch.randn(1, 3, 3, 8), None, r"x must be \(B, N, C\): CompositeAttention works on sequences"),
        (torch.randn(1, 5, 6), None, "embed_dim=8 channels"),
        (torch.randn(1, 5, 8), torch.zeros(1, 4, dtype=torch.bool), r"key_padding_mask must have shape \(1, 5\)"),
    ],
)
def test_forward_bad_input(x, mask, message):
    layer = CompositeAttention(8, 2, 2, max_length=12)
    with pytest.raises(ValueError, match=message):
        layer(x, key_padding_mask=mask)


def test_mismatched_heads():
    with pytest.raises(ValueError, match=r"terms must all have the same num_heads, got \[2, 3\]"):
        RelativeLogitSum([RelativePositionBias(2, 1), RelativePositionBias(3, 1)])
    with pytest.raises(ValueError, match="terms must hold at least one"):
        RelativeLogitSum([])


def test_the_composite_modules_are_small_and_keep_their_public_names():
    """The layer and its convolutional projections live in two modules under 400 lines; the old names still import."""
    import attnconv.composite as composite
    import attnconv.conv_projections as projections
    import attnconv.lightconv as lightconv

    for module in (composite, projections, lightconv):
        with open(module.__file__, encoding="utf-8") as f:
            assert sum(1 for _ in f) < 400, module.__name__
    for name in composite.__all__:
        assert getattr(composite, name) is not None
    assert composite.GroupedConv1d is projections.GroupedConv1d
    assert composite.MixedProjection is projections.MixedProjection
    assert lightconv.DepthwiseSeparableConv1d is projections.DepthwiseSeparableConv1d
    assert set(composite.__all__) >= {"RelativeLogitSum", "CompositeAttention", "GroupedConv1d", "MixedProjection",
                                      "CONV_PROJECTIONS", "MIXED_SPLITS", "VALUE_CONV_SCALES"}
