"""Image positional encodings: formulas, factorised softmax, hard mode, the learned tables, and bad input."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from attnconv import MultiHeadSelfAttention
from attnconv.positional import (
    AnisotropicGaussianEncoding,
    LearnedRelativeEncoding2d,
    QuadraticEncoding,
    positional_query,
    quadratic_features,
    relative_offsets,
)

f64 = torch.float64


def kron(axes):
    out = axes[0]
    for p in axes[1:]:
        out = torch.stack([torch.kron(a, b) for a, b in zip(out, p)])
    return out


def test_quadratic_logits_are_the_lemma2_formula(float64_default):
    enc = QuadraticEncoding(3, centers=[[0.5, -1.0], [2.0, 0.0], [-1.5, 1.5]], alpha=[0.3, 1.0, 2.5])
    rel = relative_offsets((4, 5)).to(f64)  # (N, N, 2)
    via_query = torch.einsum("hp,qkp->hqk", positional_query(enc.centers, enc.alpha), quadratic_features(rel))
    direct = -enc.alpha[:, None, None] * (
        (rel[None] - enc.centers[:, None, None]).pow(2).sum(-1) - enc.centers.pow(2).sum(-1)[:, None, None]
    )
    torch.testing.assert_close(enc((4, 5)), via_query, rtol=0, atol=1e-12)
    torch.testing.assert_close(enc((4, 5)), direct, rtol=0, atol=1e-12)


@settings(max_examples=30, deadline=None)
@given(h=st.integers(1, 7), w=st.integers(1, 7), heads=st.integers(1, 4), seed=st.integers(0, 999))
def test_softmax_factorises_over_axes(h, w, heads, seed):
    torch.manual_seed(seed)
    for enc in (QuadraticEncoding(heads, alpha=0.7), LearnedRelativeEncoding2d(heads, 7, 6)):
        enc = enc.double()
        dense = torch.softmax(enc((h, w)), dim=-1)
        torch.testing.assert_close(kron(enc.factorized_probs((h, w))), dense, rtol=0, atol=1e-12)


@settings(max_examples=25, deadline=None)
@given(h=st.integers(1, 6), w=st.integers(1, 6), shared=st.booleans(), hard=st.booleans(), seed=st.integers(0, 999))
def test_factorised_layer_equals_dense_layer(h, w, shared, hard, seed):
    torch.manual_seed(seed)
    centers = torch.randint(-2, 3, (4, 2)).double() if hard else None
    enc = QuadraticEncoding(4, centers=centers, alpha=None if hard else 0.5)
    layer = MultiHeadSelfAttention(6, 4, head_dim=3, positional=enc, content=False, shared_values=shared).double()
    x = torch.randn(2, h, w, 6, dtype=f64)
    fast, _ = layer(x)
    dense, _ = layer(x, need_weights=True)
    torch.testing.assert_close(fast, dense, rtol=0, atol=1e-12)


def test_hard_mode_is_exactly_one_hot_where_the_target_exists():
    enc = QuadraticEncoding(2, centers=[[1, 0], [0, -2]], alpha=None).double()
    probs = torch.softmax(enc((4, 4)), dim=-1).reshape(2, 4, 4, 4, 4)
    assert probs[0, 0, 0, 1, 0] == 1.0 and probs[0, 0, 0].sum() == 1.0
    assert probs[1, 2, 3, 2, 1] == 1.0
    assert torch.all((probs[0, :3] == 0) | (probs[0, :3] == 1))
    assert torch.isfinite(probs).all()  # a query whose target is off the grid reads its nearest pixel


@pytest.mark.parametrize("length", [1, 2, 5])
def test_hard_mode_reads_every_key_up_to_the_last(length):
    """Hard mode puts all the weight on clip(q + Δ, 0, L - 1), for every query and centre: a target on the last key
    (q + Δ = L - 1) is read there, not one key short, and a target past either end reads the end key."""
    centers = torch.arange(-length - 1, length + 2, dtype=torch.float64)[:, None]  # (N_h, 1): every target
    enc = QuadraticEncoding(len(centers), centers=centers, alpha=None).double()
    probs = torch.softmax(enc((length,)), dim=-1)  # (N_h, L, L)
    for h, centre in enumerate(centers[:, 0].long().tolist()):
        for q in range(length):
            nearest = min(max(q + centre, 0), length - 1)
            assert probs[h, q, nearest] == 1.0, (length, q, centre)
    last = centers[:, 0].long().tolist().index(1)  # the head one to the right: query L - 2 reads the last key
    if length >= 2:
        assert probs[last, length - 2, length - 1] == 1.0 and probs[last, length - 1, length - 1] == 1.0
    two_d = QuadraticEncoding(1, centers=[[1, 1]], alpha=None).double()
    grid = torch.softmax(two_d((length, length)), dim=-1).reshape(length, length, length, length)
    assert grid[length - 1, length - 1, length - 1, length - 1] == 1.0  # the corner reads itself, the last key


def test_anisotropic_with_isotropic_precision_equals_quadratic(float64_default):
    centers = torch.tensor([[0.3, -1.2], [1.0, 2.0]], dtype=f64)
    quad = QuadraticEncoding(2, centers=centers, alpha=1.7).double()
    aniso = AnisotropicGaussianEncoding(2, centers=centers, alpha=1.7).double()
    torch.testing.assert_close(aniso.precision(), 1.7 * torch.eye(2, dtype=f64).expand(2, 2, 2), rtol=0, atol=1e-12)
    torch.testing.assert_close(torch.softmax(aniso((5, 6)), -1), torch.softmax(quad((5, 6)), -1), rtol=0, atol=1e-12)


def test_anisotropic_rotated_precision_is_positive_definite_and_used():
    enc = AnisotropicGaussianEncoding(1, centers=[[0.0, 0.0]]).double()
    with torch.no_grad():
        enc.off_diag.fill_(1.5)
    prec = enc.precision()[0]
    assert torch.all(torch.linalg.eigvalsh(prec) > 0)
    rel = relative_offsets((5, 5)).to(f64)
    expected = -torch.einsum("qki,ij,qkj->qk", rel, prec, rel)
    torch.testing.assert_close(enc((5, 5))[0], expected, rtol=0, atol=1e-12)


def test_learned_query_dependent_equals_brute_force_embedding():
    torch.manual_seed(0)
    enc = LearnedRelativeEncoding2d(2, max_size=5, dim=6, query_dependent=True).double()
    q = torch.randn(3, 2, 12, 6, dtype=f64)
    rel = relative_offsets((3, 4))
    r = torch.cat([enc.rows[rel[..., 0] + 4], enc.cols[rel[..., 1] + 4]], dim=-1)  # (N, N, D_p)
    torch.testing.assert_close(enc((3, 4), q, None), torch.einsum("bhqd,qkd->bhqk", q, r), rtol=0, atol=1e-12)


def test_learned_positional_query_equals_brute_force():
    torch.manual_seed(0)
    enc = LearnedRelativeEncoding2d(3, max_size=4, dim=8).double()
    rel = relative_offsets((4, 3))
    r = torch.cat([enc.rows[rel[..., 0] + 3], enc.cols[rel[..., 1] + 3]], dim=-1)
    torch.testing.assert_close(enc((4, 3)), torch.einsum("hd,qkd->hqk", enc.query, r), rtol=0, atol=1e-12)


def test_content_independent_logits_have_no_batch_dimension():
    for enc in (QuadraticEncoding(3), AnisotropicGaussianEncoding(3), LearnedRelativeEncoding2d(3, 8, 4)):
        assert enc((8, 8), None, None).shape == (3, 64, 64)


@pytest.mark.parametrize("make, message", [
    (lambda: QuadraticEncoding(2, centers=[[0.5, 0.0], [1.0, 1.0]], alpha=None), "needs integer centers"),
    (lambda: QuadraticEncoding(2, alpha=0.0), "alpha must be finite and > 0"),
    (lambda: QuadraticEncoding(2, centers=torch.zeros(3, 2)), r"centers must be \(num_heads=2, d\)"),
    (lambda: AnisotropicGaussianEncoding(2, centers=torch.zeros(2, 3)), r"centers must be \(num_heads=2, 2\)"),
    (lambda: LearnedRelativeEncoding2d(2, 4, 5), "dim must be even"),
    (lambda: LearnedRelativeEncoding2d(2, 0, 4), "max_size must be a positive integer"),
])
def test_bad_construction(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_bad_grids_and_queries():
    with pytest.raises(ValueError, match="2-D centres but the input grid"):
        QuadraticEncoding(2)((5,))
    with pytest.raises(ValueError, match="exceeds max_size=4"):
        LearnedRelativeEncoding2d(2, 4, 4)((5, 3))
    with pytest.raises(ValueError, match="head_dim == dim=4"):
        LearnedRelativeEncoding2d(2, 4, 4, query_dependent=True)((3, 3), torch.randn(1, 2, 9, 6), None)
    with pytest.raises(ValueError, match="no finite positional query"):
        QuadraticEncoding(1, centers=[[0, 0]], alpha=None).positional_query()


def test_sharp_quadratic_attention_leaves_no_subnormal_probabilities():
    """At large α the per-axis softmax underflows; the flushed softmax keeps zeros instead of subnormal floats,
    and it changes nothing a float32 sum of values could see."""
    from attnconv.positional.base import negligible_probability, softmax_flushed
    from attnconv.positional.quadratic import QuadraticEncoding

    enc = QuadraticEncoding(9, alpha=30.0)
    logits = enc.axis_logits((16, 16))
    plain = [torch.softmax(part, dim=-1) for part in logits]
    tiny = torch.finfo(torch.float32).tiny
    assert any(((p > 0) & (p < tiny)).any() for p in plain)  # the problem is real at this α
    for part, p in zip(logits, plain):
        flushed = softmax_flushed(part)
        assert not ((flushed > 0) & (flushed < tiny)).any()
        assert ((flushed == 0) | (flushed >= negligible_probability(torch.float32))).all()
        torch.testing.assert_close(flushed, p, rtol=0, atol=negligible_probability(torch.float32))
    for part, flushed in zip(logits, enc.factorized_probs((16, 16))):
        torch.testing.assert_close(flushed, softmax_flushed(part), rtol=0, atol=0)


def test_from_kernel_puts_one_head_on_each_tap_like_conv_to_mhsa():
    import torch.nn as nn
    from attnconv.construct.image import conv_to_mhsa
    for k, d in [(3, 1), (5, 1), (3, 2)]:
        enc = QuadraticEncoding.from_kernel(k, alpha=0.5, dilation=d)
        conv = nn.Conv2d(2, 2, k, padding=d * (k - 1) // 2, dilation=d)
        assert torch.equal(enc.centers.detach(), conv_to_mhsa(conv).centers.to(enc.centers.dtype))
        assert torch.allclose(enc.alpha, torch.full((k * k,), 0.5))


def test_vision_grid_init_starts_exactly_on_the_taps():
    from attnconv.models import SelfAttentionNet, VisionConfig
    model = SelfAttentionNet(VisionConfig(hidden_dim=16, depth=2, head_dim=8, mlp_dim=16, init="grid",
                                          init_alpha=3.0))
    taps = torch.tensor([[a, b] for a in (-1, 0, 1) for b in (-1, 0, 1)], dtype=torch.get_default_dtype())
    for block in model.blocks:
        assert torch.equal(block.attn.positional.centers.detach(), taps)
        assert torch.allclose(block.attn.positional.alpha.detach(), torch.full((9,), 3.0))
    with pytest.raises(ValueError, match="square num_heads"):
        VisionConfig(num_heads=8, init="grid")
    with pytest.raises(ValueError, match="init must be one of"):
        VisionConfig(init="conv")
