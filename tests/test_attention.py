"""MultiHeadSelfAttention: equal to torch.nn.MultiheadAttention, masks, positional logits, bad input."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from attnconv import MultiHeadSelfAttention
from attnconv.positional import PositionalLogits, grid_positions, relative_offsets


def _reference(embed_dim, num_heads, dtype, bias=True, seed=0):
    torch.manual_seed(seed)
    mha = torch.nn.MultiheadAttention(embed_dim, num_heads, bias=bias, batch_first=True, dtype=dtype)
    if bias:
        with torch.no_grad():  # PyTorch zero-initialises its biases; randomise them so they are tested
            mha.in_proj_bias.normal_(0, 0.1)
            mha.out_proj.bias.normal_(0, 0.1)
    return mha, MultiHeadSelfAttention.from_torch(mha)


@settings(max_examples=40, deadline=None)
@given(
    heads=st.integers(1, 4), head_dim=st.integers(1, 6), n=st.integers(1, 20), batch=st.integers(1, 3),
    bias=st.booleans(), masked=st.booleans(), seed=st.integers(0, 2**16),
    dtype_tol=st.sampled_from([(torch.float64, 1e-12), (torch.float32, 1e-6)]),
)
def test_equals_torch_multihead_attention(heads, head_dim, n, batch, bias, masked, seed, dtype_tol):
    dtype, tol = dtype_tol
    embed_dim = heads * head_dim
    mha, ours = _reference(embed_dim, heads, dtype, bias, seed)
    x = torch.randn(batch, n, embed_dim, dtype=dtype)
    mask = None
    if masked:
        mask = torch.rand(batch, n) < 0.4
        mask[:, 0] = False  # keep at least one key
    # Padded tokens read as zeros in this layer: on valid rows that changes nothing, on padded rows it is torch's
    # layer on the zeroed input, so every row is compared.
    xz = x if mask is None else x.masked_fill(mask[..., None], 0.0)
    expected, expected_w = mha(xz, xz, xz, key_padding_mask=mask, need_weights=True, average_attn_weights=False)
    fast, _ = ours(x, key_padding_mask=mask)
    slow, weights = ours(x, key_padding_mask=mask, need_weights=True)
    torch.testing.assert_close(fast, expected, rtol=tol, atol=tol)
    torch.testing.assert_close(slow, expected, rtol=tol, atol=tol)
    torch.testing.assert_close(weights, expected_w, rtol=tol, atol=tol)


def test_image_input_equals_flattened_sequence():
    layer = MultiHeadSelfAttention(12, 3).double()
    x = torch.randn(2, 5, 7, 12, dtype=torch.float64)
    out, probs = layer(x, need_weights=True)
    flat, flat_probs = layer(x.reshape(2, 35, 12), need_weights=True)
    assert out.shape == (2, 5, 7, 12) and probs.shape == (2, 3, 35, 35)
    torch.testing.assert_close(out.reshape(2, 35, 12), flat, rtol=0, atol=1e-12)
    torch.testing.assert_close(probs, flat_probs, rtol=0, atol=1e-12)


def test_image_mask_shape_and_effect():
    layer = MultiHeadSelfAttention(8, 2).double()
    x = torch.randn(1, 4, 4, 8, dtype=torch.float64)
    mask = torch.zeros(1, 4, 4, dtype=torch.bool)
    mask[:, :, 2:] = True
    _, probs = layer(x, key_padding_mask=mask, need_weights=True)
    assert torch.all(probs.reshape(1, 2, 16, 4, 4)[..., 2:] == 0)
    torch.testing.assert_close(probs.sum(-1), torch.ones(1, 2, 16, dtype=torch.float64))


def test_head_dim_larger_than_split_and_out_dim():
    layer = MultiHeadSelfAttention(6, 9, head_dim=10, out_dim=4)
    out, probs = layer(torch.randn(2, 3, 3, 6), need_weights=True)
    assert out.shape == (2, 3, 3, 4) and probs.shape == (2, 9, 9, 9)
    assert layer.v_proj.weight.shape == (90, 6) and layer.out_proj.weight.shape == (4, 90)


@pytest.mark.parametrize("content", [True, False])
def test_shared_values_equal_per_head_copies(content):
    """Sharing one value projection equals giving every head an identical copy of it."""
    pos = None if content else OffsetBias(3, scale=0.5)
    shared = MultiHeadSelfAttention(8, 3, head_dim=8, positional=pos, content=content, shared_values=True).double()
    copies = MultiHeadSelfAttention(8, 3, head_dim=8, positional=pos, content=content).double()
    with torch.no_grad():
        for name in ("q_proj", "k_proj", "out_proj"):
            if getattr(shared, name) is not None:
                getattr(copies, name).load_state_dict(getattr(shared, name).state_dict())
        copies.v_proj.weight.copy_(shared.v_proj.weight.repeat(3, 1))
        copies.v_proj.bias.copy_(shared.v_proj.bias.repeat(3))
    assert shared.v_proj.weight.shape == (8, 8) and shared.out_proj.weight.shape == (8, 24)
    x = torch.randn(2, 4, 4, 8, dtype=torch.float64)
    for need_weights in (False, True):
        torch.testing.assert_close(shared(x, need_weights=need_weights)[0], copies(x, need_weights=need_weights)[0],
                                   rtol=0, atol=1e-12)


class OffsetBias(PositionalLogits):
    """A test encoding: logit = -scale * |δ|^2 per head (content-independent)."""

    def __init__(self, num_heads, scale=1.0):
        super().__init__(num_heads)
        self.scale = torch.nn.Parameter(torch.full((num_heads,), scale))

    def forward(self, grid, queries, keys):
        d2 = relative_offsets(grid).pow(2).sum(-1).to(self.scale.dtype)  # (N, N)
        return -self.scale[:, None, None] * d2  # (N_h, N, N)


class QueryDotOffset(PositionalLogits):
    """A query-dependent test encoding: logit = q · a(δ), a linear in δ."""

    uses_queries = True

    def __init__(self, num_heads, head_dim, dims):
        super().__init__(num_heads)
        self.a = torch.nn.Parameter(torch.randn(dims, head_dim))

    def forward(self, grid, queries, keys):
        rel = relative_offsets(grid).to(self.a.dtype) @ self.a  # (N, N, D_h)
        return torch.einsum("bhqd,qkd->bhqk", queries, rel)


def test_positional_logits_are_added():
    torch.manual_seed(0)
    pos = OffsetBias(2, scale=0.7).double()
    layer = MultiHeadSelfAttention(8, 2, positional=pos).double()
    x = torch.randn(2, 3, 4, 8, dtype=torch.float64)
    _, probs = layer(x, need_weights=True)
    q, k, _ = layer.project(x.reshape(2, 12, 8))
    expected = torch.softmax(q @ k.transpose(-1, -2) / 2.0 + pos((3, 4), None, None), dim=-1)
    torch.testing.assert_close(probs, expected, rtol=0, atol=1e-12)
    fused, _ = layer(x)  # scaled_dot_product_attention with the positional term as its mask
    slow, _ = layer(x, need_weights=True)
    torch.testing.assert_close(fused, slow, rtol=0, atol=1e-12)


def test_position_only_attention_is_shared_across_batch():
    layer = MultiHeadSelfAttention(4, 2, positional=OffsetBias(2, scale=3.0), content=False)
    assert layer.q_proj is None and layer.k_proj is None
    x = torch.randn(3, 5, 5, 4)
    _, probs = layer(x, need_weights=True)
    assert torch.equal(probs[0], probs[1]) and torch.equal(probs[1], probs[2])
    # Peaked on δ = 0: each token attends to itself most; at an interior token the weight is 1 / Σ_δ e^{-3|δ|²}.
    assert torch.equal(probs[0].argmax(-1), torch.arange(25).expand(2, 25))
    interior = 1 / (1 + 4 * torch.exp(torch.tensor(-3.0)) + 4 * torch.exp(torch.tensor(-6.0)) + 4 * torch.exp(torch.tensor(-12.0)))
    torch.testing.assert_close(probs[0, :, 12, 12], interior.expand(2), rtol=1e-4, atol=0)


def test_query_dependent_positional_gets_queries_without_content():
    layer = MultiHeadSelfAttention(6, 2, positional=QueryDotOffset(2, 3, 1), content=False).double()
    assert layer.q_proj is not None and layer.k_proj is None
    x = torch.randn(2, 7, 6, dtype=torch.float64)
    _, probs = layer(x, need_weights=True)
    q, _, _ = layer.project(x)
    expected = torch.softmax(layer.positional((7,), q, None), dim=-1)
    torch.testing.assert_close(probs, expected, rtol=0, atol=1e-12)


def test_gradcheck_float64():
    layer = MultiHeadSelfAttention(4, 2, positional=OffsetBias(2)).double()
    x = torch.randn(1, 5, 4, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda t: layer(t, need_weights=True)[0], (x,))


def test_grid_helpers():
    assert grid_positions((2, 3)).tolist() == [[0, 0], [0, 1], [0, 2], [1, 0], [1, 1], [1, 2]]
    rel = relative_offsets((2, 3))
    assert rel.shape == (6, 6, 2) and rel[0, 5].tolist() == [1, 2] and rel[5, 0].tolist() == [-1, -2]


def test_dropout_only_in_training():
    layer = MultiHeadSelfAttention(8, 2, dropout=0.5).eval()
    x = torch.randn(2, 6, 8)
    torch.testing.assert_close(layer(x)[0], layer(x)[0])
    layer.train()
    torch.manual_seed(0)
    a = layer(x)[0]
    torch.manual_seed(1)
    assert not torch.allclose(a, layer(x)[0])


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(embed_dim=0, num_heads=1), "embed_dim must be a positive integer"),
        (dict(embed_dim=8, num_heads=0), "num_heads must be a positive integer"),
        (dict(embed_dim=10, num_heads=3), r"embed_dim \(10\) must be divisible by num_heads \(3\)"),
        (dict(embed_dim=8, num_heads=2, head_dim=-1), "head_dim must be a positive integer"),
        (dict(embed_dim=8, num_heads=2, out_dim=0), "out_dim must be a positive integer"),
        (dict(embed_dim=8, num_heads=2, dropout=1.0), "dropout must be in"),
        (dict(embed_dim=8, num_heads=2, content=False), "content=False needs a positional module"),
        (dict(embed_dim=8, num_heads=2, positional=OffsetBias(3)), "logits for 3 heads but num_heads=2"),
        (dict(embed_dim=8, num_heads=2, positional=torch.nn.Identity()), "positional must be"),
    ],
)
def test_constructor_bad_input(kwargs, message):
    with pytest.raises(ValueError, match=message):
        MultiHeadSelfAttention(**kwargs)


@pytest.mark.parametrize(
    "x, mask, message",
    [
        (torch.randn(4, 8), None, r"x must be \(B, N, C\) or \(B, H, W, C\)"),
        (torch.randn(1, 2, 3, 4, 8), None, r"x must be \(B, N, C\)"),
        (torch.randn(2, 5, 7), None, "embed_dim=8 channels"),
        (torch.randn(2, 5, 8), torch.zeros(2, 4, dtype=torch.bool), r"key_padding_mask must have shape \(2, 5\)"),
        (torch.randn(2, 5, 8), torch.zeros(2, 5), "key_padding_mask must be a bool tensor"),
        (torch.randn(2, 5, 8), torch.ones(2, 5, dtype=torch.bool), "masks every key"),
    ],
)
def test_forward_bad_input(x, mask, message):
    layer = MultiHeadSelfAttention(8, 2)
    with pytest.raises(ValueError, match=message):
        layer(x, key_padding_mask=mask)


def test_from_torch_rejects_unsupported():
    mha = torch.nn.MultiheadAttention(8, 2, add_bias_kv=True)
    with pytest.raises(ValueError, match="bias_k"):
        MultiHeadSelfAttention.from_torch(mha)


def test_extra_repr_shows_configuration():
    text = repr(MultiHeadSelfAttention(8, 2, head_dim=5, out_dim=3))
    assert "embed_dim=8" in text and "num_heads=2" in text and "head_dim=5" in text and "out_dim=3" in text
