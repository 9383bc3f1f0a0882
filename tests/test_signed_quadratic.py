"""SignedQuadraticEncoding (α of any sign) and the argument checks of the options added for the reference layers."""

from __future__ import annotations

import pytest
import torch

from attnconv._checks import NonFiniteResultError
from attnconv.attention import MultiHeadSelfAttention
from attnconv.construct import dynamic_conv_to_attention
from attnconv.conv_projections import activation_function
from attnconv.gpsa import GatedPositionalSelfAttention
from attnconv.lightconv import DepthwiseSeparableConv1d, DynamicConv1d
from attnconv.positional import QuadraticEncoding, SignedQuadraticEncoding

D = torch.float64
TOL = dict(rtol=1e-12, atol=1e-12)


def test_positive_alpha_is_the_default_encoding(float64_default):
    """With α > 0 in every head the two parameterisations are the same logits; a flipped linear term is not."""
    torch.manual_seed(0)
    enc = QuadraticEncoding(3, centers=torch.randn(3, 2), alpha=torch.rand(3) + 0.3)
    signed = SignedQuadraticEncoding(enc.positional_query())
    torch.testing.assert_close(signed((4, 5)), enc((4, 5)), **TOL)
    for ours, theirs in zip(signed.factorized_probs((4, 5)), enc.factorized_probs((4, 5))):
        torch.testing.assert_close(ours, theirs, **TOL)
    torch.testing.assert_close(signed.alpha, enc.alpha, **TOL)
    torch.testing.assert_close(signed.centers, enc.centers, **TOL)
    flipped = enc.positional_query() * torch.tensor([1.0, -1.0, -1.0])  # Δ -> -Δ
    assert (SignedQuadraticEncoding(flipped)((4, 5)) - enc((4, 5))).abs().max() > 1e-3


def test_factorised_attention_equals_the_dense_softmax_for_every_sign(float64_default):
    """The logit is a sum over axes for any α, so the layer's per-axis fast path is the dense attention."""
    torch.manual_seed(1)
    query = torch.randn(4, 3)
    query[:, 0] = torch.tensor([-0.9, 0.0, 0.4, 1.5])
    layer = MultiHeadSelfAttention(8, 4, positional=SignedQuadraticEncoding(query), content=False)
    x = torch.randn(2, 5, 6, 8)
    fast, _ = layer(x)  # the factorised path (no weights asked for)
    dense, probs = layer(x, need_weights=True)
    torch.testing.assert_close(fast, dense, **TOL)
    far = probs[0, 3].reshape(30, 5, 6)[0]  # head 3 (α = -1.5), query at the corner (0, 0)
    assert far[-1, -1] == far.max()  # a bowl: the far corner gets the most weight


def test_signed_encoding_trains_and_can_be_fixed(float64_default):
    enc = SignedQuadraticEncoding(torch.tensor([[0.5, 1.0, -1.0]]))
    enc((3, 3)).sum().backward()
    assert isinstance(enc.weight, torch.nn.Parameter) and enc.weight.grad is not None
    fixed = SignedQuadraticEncoding([[0.5, 1.0, -1.0]], learnable=False)
    assert not isinstance(fixed.weight, torch.nn.Parameter) and "weight" in dict(fixed.named_buffers())
    assert torch.isinf(SignedQuadraticEncoding([[0.0, 1.0]]).centers).all()  # a ramp has no centre


def test_signed_encoding_arguments_are_checked():
    with pytest.raises(TypeError, match="query"):
        SignedQuadraticEncoding("abc")
    with pytest.raises(TypeError, match="real numbers"):
        SignedQuadraticEncoding(torch.ones(2, 3, dtype=torch.bool))
    for shape in ((3,), (2, 1), (0, 3)):
        with pytest.raises(ValueError, match=r"query must be \(N_h, d \+ 1\)"):
            SignedQuadraticEncoding(torch.zeros(shape))
    with pytest.raises(ValueError, match="finite"):
        SignedQuadraticEncoding([[float("nan"), 0.0, 0.0]])
    with pytest.raises(ValueError, match="2-D offsets"):
        SignedQuadraticEncoding([[0.1, 0.2, 0.3]])((5,))
    with pytest.raises(NonFiniteResultError, match="overflow"):
        SignedQuadraticEncoding(torch.tensor([[3e38, 0.0, 0.0]], dtype=torch.float32))((4, 4))
    with pytest.raises(TypeError, match="signed must be a bool"):
        QuadraticEncoding.from_positional_query(torch.tensor([[-1.0, 0.0, 0.0]]), signed="yes")


def test_gpsa_local_init_places_a_signed_encoding_on_convits_grid(float64_default):
    gpsa = GatedPositionalSelfAttention(8, 4, SignedQuadraticEncoding(torch.randn(4, 3)))
    gpsa.local_init(locality_strength=1.5)
    torch.testing.assert_close(gpsa.positional.positional_query(),
                               QuadraticEncoding.local_init(4, 1.5).positional_query(), **TOL)
    torch.testing.assert_close(gpsa.v_proj.weight, torch.eye(8), **TOL)


def test_new_projection_and_convolution_options_are_checked():
    with pytest.raises(ValueError, match="activation must be one of"):
        activation_function("elu")
    with pytest.raises(ValueError, match="depth_multiplier"):
        DepthwiseSeparableConv1d(8, 6, 3, depth_multiplier=0)
    with pytest.raises(ValueError, match="value_dim"):
        DynamicConv1d(8, 2, 3, value_dim=0)
    conv = DynamicConv1d(8, 2, 3, boundary="renormalize", value_dim=6)
    with pytest.raises(ValueError, match="value_dim=6"):
        dynamic_conv_to_attention(conv)


def test_depth_multiplier_repeats_each_input_channel_m_times(float64_default):
    """Output channel o of the depthwise step filters input channel o // m: with identity taps and a pointwise
    map that sums each group of m, the projection is m times its input."""
    proj = DepthwiseSeparableConv1d(4, 4, 3, depth_multiplier=3)
    with torch.no_grad():
        proj.depthwise.weight.zero_()
        proj.depthwise.weight[:, 0, 1] = 1.0
        proj.depthwise.bias.zero_()
        proj.pointwise.weight.copy_(torch.eye(4).repeat_interleave(3, dim=1))
        proj.pointwise.bias.zero_()
    x = torch.randn(2, 7, 4)
    torch.testing.assert_close(proj(x), 3 * x, **TOL)
    with torch.no_grad():
        proj.pointwise.weight.copy_(torch.eye(4).repeat(1, 3))  # read as o mod C: channels mixed up
    assert (proj(x) - 3 * x).abs().max() > 1e-3
