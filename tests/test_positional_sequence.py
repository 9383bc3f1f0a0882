"""1-D relative positions (attnconv.positional.sequence): bands, T5 buckets, Shaw, key-dependent, ALiBi."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from attnconv import MultiHeadSelfAttention
from attnconv.positional import (
    ALiBi,
    KeyRelativeLogits,
    QueryRelativeLogits,
    RelativePositionBias,
    band_to_logits,
    key_to_query_frame,
    logits_to_band,
    relative_index,
    relative_position_bucket,
)

f64 = dict(dtype=torch.float64)


def _offsets(n):
    pos = torch.arange(n)
    return pos[None, :] - pos[:, None]  # δ = j - i


def test_relative_index():
    assert relative_index(4, 1).tolist() == [[1, 2, 2, 2], [0, 1, 2, 2], [0, 0, 1, 2], [0, 0, 0, 1]]
    assert relative_index(4, 1, rows=slice(2, 4)).tolist() == [[0, 0, 1, 2], [0, 0, 0, 1]]


@settings(max_examples=30, deadline=None)
@given(n=st.integers(1, 12), k=st.integers(0, 5), window=st.booleans(), frame=st.sampled_from(["query", "key"]),
       chunk=st.integers(1, 12), seed=st.integers(0, 2**16))
def test_band_to_logits_matches_the_definition_and_chunks(n, k, window, frame, chunk, seed):
    band = torch.randn(2, 3, n, 2 * k + 1, generator=torch.Generator().manual_seed(seed), **f64)
    delta = _offsets(n)
    tap = delta.clamp(-k, k) + k
    row = torch.arange(n)[:, None].expand(n, n) if frame == "query" else torch.arange(n)[None, :].expand(n, n)
    expected = band[:, :, row, tap]
    if window:
        expected = expected.masked_fill(delta.abs() > k, float("-inf"))
    full = band_to_logits(band, n, window, frame)
    torch.testing.assert_close(full, expected, rtol=0, atol=0)
    chunks = [band_to_logits(band, n, window, frame, rows=slice(s, min(s + chunk, n))) for s in range(0, n, chunk)]
    torch.testing.assert_close(torch.cat(chunks, dim=-2), expected, rtol=0, atol=0)
    if frame == "query":  # a query-frame band may also be passed already cut to the rows
        cut = [band_to_logits(part, n, window, frame, rows=slice(s, s + part.shape[-2]))
               for s, part in zip(range(0, n, chunk), band.split(chunk, dim=-2))]
        torch.testing.assert_close(torch.cat(cut, dim=-2), expected, rtol=0, atol=0)


def test_a_single_kernel_gives_a_toeplitz_matrix():
    kernel = torch.arange(5.0)[None, None]  # (1, 1, 2k+1), k = 2
    logits = band_to_logits(kernel, 6)[0]
    for d in range(-5, 6):
        diagonal = torch.diagonal(logits, offset=d)
        assert torch.all(diagonal == diagonal[0])  # constant along every diagonal j - i = d
        assert diagonal[0] == kernel[0, 0, max(-2, min(2, d)) + 2]


def test_logits_to_band_inverts_band_to_logits():
    band = torch.randn(2, 7, 7, **f64)  # N = 7, k = 3
    back = logits_to_band(band_to_logits(band, 7, window=True), radius=3)
    inside = ~torch.isnan(back)
    torch.testing.assert_close(back[inside], band[inside], rtol=0, atol=0)
    assert torch.isnan(back[:, 0, 0]).all() and not torch.isnan(back[:, 3]).any()  # only the middle row reads ±3


def test_key_to_query_frame():
    band = torch.randn(1, 6, 5, **f64)  # key frame, k = 2
    out = key_to_query_frame(band)
    for i in range(6):
        for t in range(5):
            j = i + t - 2
            expected = band[0, j, t] if 0 <= j < 6 else float("-inf")
            assert out[0, i, t] == expected
    # row i of the query frame, spread by the query rule, equals the key-frame band spread by the key rule
    torch.testing.assert_close(band_to_logits(out, 6, window=True), band_to_logits(band, 6, window=True, frame="key"))


def test_t5_buckets_known_values():
    """num_buckets=16, max_distance=10: 4 exact buckets per side, then log buckets, last one from |δ| = 8."""
    offsets = torch.arange(-12, 13)
    buckets = relative_position_bucket(offsets, 16, 10).tolist()
    expected_nonpositive = {0: 0, -1: 1, -2: 2, -3: 3, -4: 4, -5: 4, -6: 5, -7: 6, -8: 7, -10: 7, -12: 7}
    for d, b in expected_nonpositive.items():
        assert buckets[d + 12] == b
        if d < 0:
            assert buckets[-d + 12] == b + 8  # δ > 0 uses the second half


@settings(max_examples=30, deadline=None)
@given(half=st.integers(2, 16), extra=st.integers(1, 40))
def test_buckets_are_clipped_monotone_and_in_range(half, extra):
    num_buckets = 2 * half
    k = num_buckets // 4 + extra
    offsets = torch.arange(-3 * k, 3 * k + 1)
    b = relative_position_bucket(offsets, num_buckets, k)
    assert b.min() >= 0 and b.max() < num_buckets
    assert torch.equal(b, relative_position_bucket(offsets.clamp(-k, k), num_buckets, k))  # bucketing clips at ±k
    right = b[offsets >= 0]
    assert torch.all(right[1:] >= right[:-1])  # non-decreasing in |δ| on each side


@pytest.mark.parametrize("num_buckets, k, message", [(7, 10, "num_buckets must be even"),
                                                     (2, 10, "at least 4"), (16, 4, "max_distance must be larger")])
def test_bucket_bad_input(num_buckets, k, message):
    with pytest.raises(ValueError, match=message):
        relative_position_bucket(torch.arange(3), num_buckets, k)


@pytest.mark.parametrize("window", [False, True])
def test_relative_bias_logits(window):
    torch.manual_seed(0)
    bias = RelativePositionBias(3, 2, window=window).double()
    logits = bias((7,), None, None)
    delta = _offsets(7)
    expected = bias.weight[:, delta.clamp(-2, 2) + 2]
    if window:
        expected = expected.masked_fill(delta.abs() > 2, float("-inf"))
    torch.testing.assert_close(logits, expected, rtol=0, atol=0)
    wide = bias.kernel_logits(4)
    assert wide.shape == (3, 9)
    if window:
        assert torch.isinf(wide[:, [0, 1, 7, 8]]).all()
    else:
        assert torch.equal(wide[:, 0], wide[:, 2]) and torch.equal(wide[:, 8], wide[:, 6])  # constant tails


def test_bucketed_bias_is_piecewise_constant():
    bias = RelativePositionBias(2, 12, num_buckets=8)
    assert bias.weight.shape == (2, 8)
    kernel = bias.kernel_logits(20)
    buckets = relative_position_bucket(torch.arange(-20, 21), 8, 12)
    for b in buckets.unique():
        block = kernel[:, buckets == b]
        assert torch.all(block == block[:, :1])
    assert kernel.unique().numel() <= 2 * 8


def test_query_relative_logits_match_the_embedding_gather():
    """Shaw et al.: logit = q_i · a_clip(j-i) / sqrt(D_h); compared with the (N, N, D_h) gather of the embeddings."""
    torch.manual_seed(0)
    term = QueryRelativeLogits(2, 4, 3).double()
    q = torch.randn(2, 2, 9, 4, **f64)
    a = term.embedding[_offsets(9).clamp(-3, 3) + 3]  # (N, N, D_h)
    expected = torch.einsum("bhid,ijd->bhij", q, a) / 2.0
    torch.testing.assert_close(term((9,), q, None), expected, rtol=0, atol=1e-12)


def test_key_relative_logits_match_the_embedding_gather():
    torch.manual_seed(0)
    term = KeyRelativeLogits(2, 4, 3, window=True).double()
    k = torch.randn(2, 2, 9, 4, **f64)
    c = term.embedding[_offsets(9).clamp(-3, 3) + 3]  # (N, N, D_h)
    expected = torch.einsum("bhjd,ijd->bhij", k, c) / 2.0
    expected = expected.masked_fill(_offsets(9).abs() > 3, float("-inf"))
    torch.testing.assert_close(term((9,), None, k), expected, rtol=0, atol=1e-12)


def test_key_term_kernel_comes_from_the_key_token():
    """Changing token j changes the key term only in column j: the weight at offset δ is predicted by x_{i+δ}."""
    torch.manual_seed(0)
    term = KeyRelativeLogits(1, 3, 2).double()
    k = torch.randn(1, 1, 6, 3, **f64)
    changed = k.clone()
    changed[..., 4, :] += 1.0
    diff = term((6,), None, changed) - term((6,), None, k)
    assert diff[..., :4].abs().max() == 0 and diff[..., 5].abs().max() == 0 and diff[..., 4].abs().min() > 0


def test_alibi():
    alibi = ALiBi(8)
    torch.testing.assert_close(alibi.slopes, 2.0 ** -torch.arange(1.0, 9.0))  # 1/2, 1/4, ..., 1/256 for 8 heads
    logits = alibi((5,), None, None)
    torch.testing.assert_close(logits, -alibi.slopes[:, None, None] * _offsets(5).abs().float())
    causal = ALiBi(2, causal=True)((4,), None, None)
    assert torch.isinf(causal[:, 0, 1]).all() and causal[0, 3, 0] == -3 / 16  # 2 heads: m = 2^-4, 2^-8
    with pytest.raises(ValueError, match="give radius"):
        alibi.kernel_logits()


@pytest.mark.parametrize("positional", [RelativePositionBias(2, 3), QueryRelativeLogits(2, 4, 3),
                                        KeyRelativeLogits(2, 4, 3), ALiBi(2)])
def test_plugs_into_multihead_attention(positional):
    torch.manual_seed(0)
    layer = MultiHeadSelfAttention(8, 2, positional=positional).double()
    x = torch.randn(2, 10, 8, **f64)
    mask = torch.zeros(2, 10, dtype=torch.bool)
    mask[1, 7:] = True
    fused, _ = layer(x, key_padding_mask=mask)
    slow, probs = layer(x, key_padding_mask=mask, need_weights=True)
    torch.testing.assert_close(fused, slow, rtol=0, atol=1e-12)
    q, k, _ = layer.project(x.masked_fill(mask[..., None], 0.0))  # a padded token reads as zeros
    expected = q @ k.transpose(-1, -2) / 2.0 + positional((10,), q, k)
    expected = torch.softmax(expected.masked_fill(mask[:, None, None, :], float("-inf")), -1)
    torch.testing.assert_close(probs, expected, rtol=0, atol=1e-12)


def test_position_only_bias_attention_is_a_band():
    layer = MultiHeadSelfAttention(4, 2, positional=RelativePositionBias(2, 1, window=True), content=False)
    _, probs = layer(torch.randn(1, 8, 4), need_weights=True)
    assert torch.all(probs.masked_select(_offsets(8).abs() > 1) == 0)


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: RelativePositionBias(2, -1), "max_distance must be a non-negative integer"),
        (lambda: RelativePositionBias(0, 2), "num_heads must be a positive integer"),
        (lambda: QueryRelativeLogits(2, 0, 2), "head_dim must be a positive integer"),
        (lambda: RelativePositionBias(2, 2)((3, 3), None, None), r"grid must be \(N,\)"),
        (lambda: QueryRelativeLogits(2, 4, 2)((5,), None, None), "needs the projected queries"),
        (lambda: QueryRelativeLogits(2, 4, 2)((5,), torch.randn(1, 3, 5, 4), None), r"queries must be \(B, N_h=2"),
        (lambda: KeyRelativeLogits(2, 4, 2)((5,), None, torch.randn(1, 2, 6, 4)), r"keys must be \(B, N_h=2, N=5"),
        (lambda: band_to_logits(torch.randn(2, 5, 4), 5), "odd last dim"),
        (lambda: band_to_logits(torch.randn(2, 5, 3), 5, frame="value"), "frame must be one of"),
        (lambda: band_to_logits(torch.randn(2, 4, 3), 5), "must have N=5, 5 .the rows. or 1 rows"),
        (lambda: band_to_logits(torch.randn(2, 5, 3), 5, index=torch.zeros(4, 5, dtype=torch.long)), "index must be"),
        (lambda: band_to_logits(torch.randn(2, 5, 3), 5, rows=slice(3, 3)), "rows must be a non-empty"),
        (lambda: RelativePositionBias(2, 2).kernel_logits(-1), "radius must be a non-negative integer"),
    ],
)
def test_bad_input(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_mismatched_heads_with_attention():
    with pytest.raises(ValueError, match="logits for 3 heads but num_heads=2"):
        MultiHeadSelfAttention(8, 2, positional=RelativePositionBias(3, 2))


def test_scale_is_one_over_sqrt_head_dim():
    term = QueryRelativeLogits(1, 9, 0)
    with torch.no_grad():
        term.embedding.fill_(1.0)
    q = torch.ones(1, 1, 2, 9)
    assert term((2,), q, None)[0, 0, 0, 0].item() == pytest.approx(9 / math.sqrt(9))


@pytest.mark.parametrize("make", [lambda: RelativePositionBias(2, 3, causal=True),
                                  lambda: RelativePositionBias(2, 3, window=True, causal=True),
                                  lambda: RelativePositionBias(2, 3, num_buckets=8, causal=True),
                                  lambda: QueryRelativeLogits(2, 4, 3, causal=True),
                                  lambda: KeyRelativeLogits(2, 4, 3, window=True, causal=True),
                                  lambda: ALiBi(2, causal=True)],
                         ids=["bias", "bias-window", "bias-buckets", "query", "key", "alibi"])
def test_causal_terms_mask_the_future_and_keep_the_query_itself(make):
    """causal=True masks δ > 0 only: the query's own key (δ = 0) and the past stay finite, in the band and in the
    logits, for every term that masks (a mask of δ ≥ 0 would leave the first query nothing to read)."""
    torch.manual_seed(0)
    term = make().double()
    n = 8
    q, k = torch.randn(1, 2, n, 4, **f64), torch.randn(1, 2, n, 4, **f64)
    logits = term((n,), q, k)
    delta = _offsets(n).expand_as(logits)
    assert torch.isinf(logits[delta > 0]).all() and (logits[delta > 0] < 0).all()
    assert torch.isfinite(logits[delta == 0]).all()  # every query reads itself, the first one only itself
    assert torch.isfinite(logits[(delta < 0) & (delta >= -3)]).all()
    assert torch.isfinite(torch.softmax(logits, -1)).all()
    width = 2 * 3 + 1
    band = term.mask_future(torch.zeros(1, 1, width, **f64))[0, 0]
    assert torch.isfinite(band[:4]).all() and torch.isinf(band[4:]).all()  # columns t ≤ k (δ ≤ 0) kept


def test_mask_future_is_the_identity_without_causal():
    band = torch.randn(2, 5, 7, **f64)
    assert RelativePositionBias(2, 3).mask_future(band) is band
