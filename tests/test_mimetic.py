"""Mimetic initialisation (Trockman & Kolter 2023): the weight products are the targets the function returns, cut
to the rank the layer's shapes allow, on the book's shapes and others; the targets have the paper's form; a wrong
factorisation is caught by the same check; bad arguments are refused by name."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

import attnconv.mimetic as mimetic
from attnconv import CompositeAttention, MultiHeadSelfAttention
from attnconv.mimetic import mimetic_init_, query_key_products, value_output_product
from attnconv.models import VisionConfig, make_attention
from attnconv.positional import QuadraticEncoding

# chapter 6's cpu-quick widths with a value projection per head (C = 64, 9 heads of D_h = 32); a ViT-Tiny layer
# (C = 192, 3 heads of 64); heads wider than the tokens (D_h > C); N_h D_h = C exactly, as in the paper's ViTs
QUICK = VisionConfig(hidden_dim=64, depth=3, num_heads=9, head_dim=32, mlp_dim=128, attention="content",
                     shared_values=False)
SHAPES = {"book": lambda: make_attention(QUICK), "vit-tiny": lambda: MultiHeadSelfAttention(192, 3),
          "wide-heads": lambda: MultiHeadSelfAttention(16, 2, head_dim=32),
          "inner-equals-c": lambda: MultiHeadSelfAttention(12, 3)}


def best_rank(target: torch.Tensor, rank: int) -> torch.Tensor:
    """Eckart-Young: the closest matrix of rank ``rank`` to ``target`` (Frobenius and spectral norms)."""
    u, s, vh = torch.linalg.svd(target)
    return (u[:, :rank] * s[:rank]) @ vh[:rank]


def check_mimetic(layer: MultiHeadSelfAttention, targets: mimetic.MimeticTargets, tol: float = 1e-5) -> None:
    """The claim of ``mimetic_init_``'s docstring, for any layer: each product is its target's best approximation
    of the rank the factors can hold (the target itself when they can hold all of it)."""
    c, d_h, n_h = layer.embed_dim, layer.head_dim, layer.num_heads
    qk = query_key_products(layer).double()
    assert qk.shape == targets.query_key.shape == (n_h, c, c)
    for h in range(n_h):
        want = best_rank(targets.query_key[h], min(d_h, c))
        assert (qk[h] - want).abs().max() <= tol * want.abs().max(), f"head {h}"
    vo = value_output_product(layer).double()
    want = best_rank(targets.value_output, min(n_h * d_h, c))
    assert (vo - want).abs().max() <= tol * want.abs().max()


@pytest.mark.parametrize("shape", SHAPES)
def test_products_are_the_targets_cut_to_the_layers_rank(shape):
    torch.manual_seed(0)
    layer = SHAPES[shape]()
    targets = mimetic_init_(layer, generator=torch.Generator().manual_seed(1))
    check_mimetic(layer, targets)
    c = layer.embed_dim
    # the targets have the paper's form: alpha Z + beta I with Z ~ N(0, 1/d), one Z per head
    eye = torch.eye(c, dtype=torch.float64)
    noise = (targets.query_key - 0.7 * eye) / 0.7 * c ** 0.5
    assert abs(noise.mean()) < 0.05 and abs(noise.std() - 1) < 0.1
    assert not torch.allclose(targets.query_key[0], targets.query_key[-1])
    noise = (targets.value_output + 0.4 * eye) / 0.4 * c ** 0.5
    assert abs(noise.mean()) < 0.1 and abs(noise.std() - 1) < 0.15
    # exact where the factors can hold the whole target: W_v W_proj in every shape here, W_q W_k^T when D_h >= C
    torch.testing.assert_close(value_output_product(layer).double(), targets.value_output, atol=1e-5, rtol=0)
    if layer.head_dim >= c:
        torch.testing.assert_close(query_key_products(layer).double(), targets.query_key, atol=1e-5, rtol=0)


def test_the_books_shapes_keep_a_positive_diagonal_and_a_negative_value_map():
    """At C = 64 and D_h = 32 half the spectrum is cut: the diagonal of W_q W_k^T drops below beta1 but stays well
    above the off-diagonal; W_v W_proj is -beta2 I plus noise, exactly."""
    torch.manual_seed(0)
    layer = make_attention(QUICK)
    mimetic_init_(layer, generator=torch.Generator().manual_seed(0))
    qk = query_key_products(layer)
    diagonal = qk.diagonal(dim1=1, dim2=2)
    off = qk - torch.diag_embed(diagonal)
    assert 0.4 < diagonal.mean() < 0.7 and off.abs().mean() < 0.1
    assert (value_output_product(layer).diagonal().mean() + 0.4).abs() < 0.02


def test_every_head_receives_values_when_the_heads_are_wider_than_the_tokens():
    torch.manual_seed(0)
    layer = make_attention(QUICK)  # N_h D_h = 288 value channels for C = 64
    mimetic_init_(layer)
    per_head = layer.v_proj.weight.detach().view(9, 32, 64).norm(dim=(1, 2))
    assert (per_head > 0.3 * per_head.mean()).all()


def test_a_factorisation_without_square_roots_is_caught(monkeypatch):
    """The wrong variant U S, V^T (the singular values on one side only, squared in the product) fails the check."""

    def wrong(target, rank, width, generator):
        u, s, vh = torch.linalg.svd(target)
        left, right = u[:, :rank] * s[:rank], s[:rank, None] * vh[:rank]
        if width > rank:
            rows = torch.linalg.qr(torch.randn(width, rank, dtype=torch.float64, generator=generator)).Q.T
            left, right = left @ rows, rows.T @ right
        return left, right

    monkeypatch.setattr(mimetic, "_factors", wrong)
    layer = MultiHeadSelfAttention(16, 2, head_dim=8)
    targets = mimetic_init_(layer, generator=torch.Generator().manual_seed(0))
    with pytest.raises(AssertionError):
        check_mimetic(layer, targets)


def test_a_transposed_key_is_caught():
    """Writing W_k^(h) into k_proj without the transpose gives W_q W_k (not W_k^T): the check fails."""
    layer = MultiHeadSelfAttention(16, 2, head_dim=16)
    targets = mimetic_init_(layer, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        for h in range(2):
            rows = slice(16 * h, 16 * (h + 1))
            layer.k_proj.weight[rows] = layer.k_proj.weight[rows].T.clone()
    with pytest.raises(AssertionError):
        check_mimetic(layer, targets)


def test_same_generator_same_weights_and_dtype_kept():
    a, b = MultiHeadSelfAttention(8, 2).double(), MultiHeadSelfAttention(8, 2).double()
    mimetic_init_(a, generator=torch.Generator().manual_seed(5))
    mimetic_init_(b, generator=torch.Generator().manual_seed(5))
    for pa, pb in zip(a.parameters(), b.parameters()):
        if pa.shape == pb.shape and pa.dim() == 2:
            assert torch.equal(pa, pb)
    assert a.q_proj.weight.dtype == torch.float64
    targets = mimetic_init_(a, alpha1=0.0, beta1=1.0, alpha2=0.0, beta2=1.0)
    torch.testing.assert_close(value_output_product(a), -torch.eye(8, dtype=torch.float64))
    assert torch.equal(targets.query_key[0], torch.eye(8, dtype=torch.float64))


def test_bad_arguments_are_refused_by_name():
    layer = MultiHeadSelfAttention(8, 2)
    with pytest.raises(TypeError, match="attention must be a MultiHeadSelfAttention"):
        mimetic_init_(nn.MultiheadAttention(8, 2))
    with pytest.raises(ValueError, match="content term"):
        mimetic_init_(MultiHeadSelfAttention(8, 2, positional=QuadraticEncoding(2), content=False))
    with pytest.raises(ValueError, match="value projection per head"):
        mimetic_init_(MultiHeadSelfAttention(8, 2, shared_values=True))
    with pytest.raises(ValueError, match="out_dim == embed_dim"):
        mimetic_init_(MultiHeadSelfAttention(8, 2, out_dim=4))
    with pytest.raises(TypeError, match="q_proj must be an nn.Linear"):
        mimetic_init_(CompositeAttention(8, 2, 1, max_length=8, conv_projections=("query",)))
    with pytest.raises(ValueError, match="alpha1 must be >= 0"):
        mimetic_init_(layer, alpha1=-0.1)
    with pytest.raises(ValueError, match="beta1"):
        mimetic_init_(layer, beta1=float("nan"))
    with pytest.raises(TypeError, match="beta2"):
        mimetic_init_(layer, beta2=True)
    with pytest.raises(TypeError, match="alpha2"):
        mimetic_init_(layer, alpha2="0.4")
    with pytest.raises(TypeError, match="generator"):
        mimetic_init_(layer, generator=0)
    with pytest.raises(ValueError, match="value projection per head"):
        mimetic_init_(make_attention(replace(QUICK, shared_values=True)))



@settings(max_examples=25, deadline=None)
@given(c=st.integers(1, 24), heads=st.integers(1, 4), d_h=st.integers(1, 12),
       weights=st.tuples(*[st.floats(0, 2, allow_nan=False)] * 4), seed=st.integers(0, 2**31 - 1))
def test_products_are_the_targets_cut_to_the_layers_rank_for_any_shape(c, heads, d_h, weights, seed):
    layer = MultiHeadSelfAttention(c, heads, head_dim=d_h).double()
    alpha1, beta1, alpha2, beta2 = weights
    targets = mimetic_init_(layer, alpha1, beta1, alpha2, beta2, generator=torch.Generator().manual_seed(seed))
    check_mimetic(layer, targets, tol=1e-9)
