"""The reference implementations' options (Wu et al.'s fairseq convolutions, Chang et al.'s composite attention),
each checked against its attention-side counterpart in float64, or against the computation it names when no
attention counterpart exists."""

import pytest
import torch
import torch.nn.functional as F

from attnconv.composite import CompositeAttention, MixedProjection
from attnconv.construct import conv_to_mhsa, dynamic_conv_to_attention, lightconv_to_attention
from attnconv.lightconv import DepthwiseSeparableConv1d, DynamicConv1d, LightweightConv1d
from attnconv.models.bert import VARIANTS, BertConfig, BertForMaskedLM, composite_layers

D = torch.float64
TOL = dict(rtol=0, atol=1e-12)


def _tokens(b=2, n=11, c=8, seed=0):
    torch.manual_seed(seed)
    return torch.randn(b, n, c, dtype=D)


def _mask(b=2, n=11):
    mask = torch.zeros(b, n, dtype=torch.bool)
    mask[1, n - 4:] = True
    mask[0, 3] = True
    return mask


# ------------------------------------------------------------------ causal convolutions


@pytest.mark.parametrize("kernel_size", [1, 2, 3, 4, 6])
def test_causal_lightweight_conv_is_causal_relative_bias_attention(kernel_size):
    """Proposition (chapter 05): a causal, boundary-renormalised lightweight convolution with K taps is attention
    with the windowed bias b_δ = w_δ on δ = -(K-1)..0 and -inf on every future key, at every position."""
    conv = LightweightConv1d(8, 2, kernel_size, boundary="renormalize", causal=True, bias=True).to(D)
    with torch.no_grad():
        conv.bias.normal_()
    attention = lightconv_to_attention(conv)
    assert attention.positional.causal and attention.positional.window
    x, mask = _tokens(), _mask()
    torch.testing.assert_close(attention(x)[0], conv(x), **TOL)
    torch.testing.assert_close(attention(x, key_padding_mask=mask)[0][~mask], conv(x, mask)[~mask], **TOL)


def test_causal_attention_needs_the_future_masked():
    """The wrong variant: the same bias without the causal mask reads the future and differs."""
    conv = LightweightConv1d(8, 2, 3, boundary="renormalize", causal=True).to(D)
    attention = lightconv_to_attention(conv)
    attention.positional.causal = False
    x = _tokens()
    assert (attention(x)[0] - conv(x)).abs().max() > 1e-3


def test_causal_conv_reads_only_the_past_and_zero_padding_agrees_from_position_k():
    conv = LightweightConv1d(8, 2, 4, causal=True).to(D)
    x = _tokens()
    later = x.clone()
    later[:, 6:] += 1.0
    torch.testing.assert_close(conv(later)[:, :6], conv(x)[:, :6], **TOL)
    renormalised = LightweightConv1d(8, 2, 4, boundary="renormalize", causal=True).to(D)
    renormalised.load_state_dict(conv.state_dict())
    attention = lightconv_to_attention(conv, interior_only=True)
    torch.testing.assert_close(attention(x)[0][:, 3:], conv(x)[:, 3:], **TOL)  # i >= K - 1
    assert (attention(x)[0][:, :3] - conv(x)[:, :3]).abs().max() > 1e-3  # the first K - 1 positions differ
    torch.testing.assert_close(attention(x)[0], renormalised(x), **TOL)


@pytest.mark.parametrize("kernel_size,causal", [(3, False), (5, False), (2, True), (4, True)])
def test_dynamic_conv_with_conv_bias_and_causal_taps_is_relative_key_attention(kernel_size, causal):
    conv = DynamicConv1d(8, 2, kernel_size, boundary="renormalize", causal=causal, conv_bias=True).to(D)
    with torch.no_grad():
        conv.conv_bias.normal_()
    attention = dynamic_conv_to_attention(conv)
    x, mask = _tokens(), _mask()
    torch.testing.assert_close(attention(x)[0], conv(x), **TOL)
    torch.testing.assert_close(attention(x, key_padding_mask=mask)[0][~mask], conv(x, mask)[~mask], **TOL)


def test_conv_bias_is_the_output_bias():
    conv = DynamicConv1d(8, 2, 3, conv_bias=True).to(D)
    x = _tokens()
    without = conv(x)
    with torch.no_grad():
        conv.conv_bias.copy_(torch.arange(8, dtype=D))
    torch.testing.assert_close(conv(x) - without, torch.arange(8, dtype=D).expand_as(without), **TOL)
    with pytest.raises(ValueError, match="conv_bias"):
        conv(x, values=torch.randn(2, 11, 4, dtype=D))


# ------------------------------------------------------------------ raw (signed) kernels


@pytest.mark.parametrize("causal", [False, True])
def test_raw_kernel_is_a_depthwise_conv_and_through_theorem_1_hard_attention(causal):
    """No softmax attention has a signed kernel; the dense nn.Conv1d does, and conv_to_mhsa turns it into
    attention with one hard head per tap (Theorem 1)."""
    conv = LightweightConv1d(8, 2, 4 if causal else 3, weight_softmax=False, causal=causal, bias=True).to(D)
    with torch.no_grad():
        conv.bias.normal_()
    assert (conv.kernel < 0).any()  # signed
    x = _tokens()
    n = x.shape[1]
    dense = conv.to_conv1d()
    torch.testing.assert_close(dense(x.transpose(1, 2))[..., :n].transpose(1, 2), conv(x), **TOL)
    as_attention = conv_to_mhsa(dense)
    torch.testing.assert_close(as_attention(x.transpose(1, 2))[..., :n].transpose(1, 2), conv(x), **TOL)
    with pytest.raises(ValueError, match="weight_softmax=False"):
        lightconv_to_attention(conv, interior_only=True)


def test_raw_kernel_is_not_the_softmax_kernel():
    raw = LightweightConv1d(8, 2, 3, weight_softmax=False).to(D)
    soft = LightweightConv1d(8, 2, 3).to(D)
    soft.load_state_dict(raw.state_dict())
    x = _tokens()
    assert (raw(x) - soft(x)).abs().max() > 1e-3
    with torch.no_grad():
        raw.weight.copy_(soft.kernel)  # the softmax kernel, given raw, is the same convolution
    torch.testing.assert_close(raw(x), soft(x), **TOL)


def test_raw_kernels_need_zero_padding():
    with pytest.raises(ValueError, match="weight_softmax=False needs boundary='zeros'"):
        LightweightConv1d(8, 2, 3, boundary="renormalize", weight_softmax=False)
    with pytest.raises(ValueError, match="weight_softmax=False"):
        dynamic_conv_to_attention(DynamicConv1d(8, 2, 3, weight_softmax=False), interior_only=True)
    with pytest.raises(ValueError, match="kernel_size must be odd"):
        LightweightConv1d(8, 2, 4)  # an even kernel has no centre; causal=True accepts it


def test_raw_dynamic_kernel_is_the_predictor_output():
    conv = DynamicConv1d(8, 2, 3, weight_softmax=False).to(D)
    x = _tokens()
    band = conv.kernel_logits(x)  # (B, N_h, N, 3)
    xs = F.pad(x, (0, 0, 1, 1)).view(2, 13, 2, 4)
    expected = sum(band.permute(0, 2, 1, 3)[..., t, None] * xs[:, t:t + 11] for t in range(3)).reshape(2, 11, 8)
    torch.testing.assert_close(conv(x), expected, **TOL)


# ------------------------------------------------------------------ Chang et al.'s variants


def _composite(**kw):
    torch.manual_seed(3)
    return CompositeAttention(8, 2, 2, 16, fixed=True, query_dynamic=True, **kw).to(D).eval()


def test_value_conv_branch_adds_gamma_times_a_depthwise_conv_of_the_values():
    """No attention counterpart: the branch's kernel is signed and unnormalised. Checked against its definition."""
    layer = _composite(value_conv=True)
    plain = _composite()
    plain.load_state_dict(layer.state_dict(), strict=False)
    x = _tokens()
    torch.testing.assert_close(layer(x)[0], plain(x)[0], **TOL)  # γ starts at 0: the plain layer
    with torch.no_grad():
        layer.value_conv_scale.fill_(0.8)
    v = layer.v_proj(x)  # (B, N, N_h D_h), head-major channels
    branch = F.conv1d(v.transpose(1, 2), layer.value_conv.weight, padding=1, groups=8).transpose(1, 2)
    expected = plain(x)[0] + 0.8 * branch @ layer.out_proj.weight.T
    torch.testing.assert_close(layer(x)[0], expected, **TOL)
    assert (layer(x)[0] - plain(x)[0]).abs().max() > 1e-3


def test_value_conv_branch_treats_padding_as_zeros():
    layer = _composite(value_conv=True)
    with torch.no_grad():
        layer.value_conv_scale.fill_(0.8)
    x = _tokens()
    padded = torch.cat([x[:1, :7], torch.randn(1, 4, 8, dtype=D)], dim=1)
    mask = torch.zeros(1, 11, dtype=torch.bool)
    mask[0, 7:] = True
    torch.testing.assert_close(layer(padded, key_padding_mask=mask)[0][:, :7], layer(x[:1, :7])[0], **TOL)


def test_gelu_projection_is_pointwise_of_gelu_of_depthwise():
    """With the GELU the projection is not linear in X, so it has no convolution or attention counterpart."""
    torch.manual_seed(0)
    proj = DepthwiseSeparableConv1d(8, 6, 3, activation="gelu").to(D)
    linear = DepthwiseSeparableConv1d(8, 6, 3).to(D)
    linear.load_state_dict(proj.state_dict())
    x = _tokens()
    mixed = F.conv1d(x.transpose(1, 2), proj.depthwise.weight, proj.depthwise.bias, padding=1, groups=8)
    torch.testing.assert_close(proj(x), proj.pointwise(F.gelu(mixed.transpose(1, 2))), **TOL)
    assert (proj(x) - linear(x)).abs().max() > 1e-3
    y = _tokens(seed=1)
    blend = 0.3 * x + 0.7 * y  # an affine map keeps affine combinations; the GELU breaks that
    torch.testing.assert_close(linear(blend), 0.3 * linear(x) + 0.7 * linear(y), **TOL)
    assert (proj(blend) - 0.3 * proj(x) - 0.7 * proj(y)).abs().max() > 1e-3
    with pytest.raises(ValueError, match="activation"):
        DepthwiseSeparableConv1d(8, 6, 3, activation="elu")


def _identity_depthwise_(conv: DepthwiseSeparableConv1d) -> None:
    with torch.no_grad():
        conv.depthwise.weight.zero_()
        conv.depthwise.weight[:, 0, conv.max_distance] = 1.0
        conv.depthwise.bias.zero_()


@pytest.mark.parametrize("name", ["query", "key", "value"])
def test_mixed_projection_with_identity_depthwise_kernels_is_the_linear_layer(name):
    """Half of the heads convolutional: with the identity kernel (one tap at δ = 0) the layer is the plain
    composite layer whose projection stacks the pointwise and linear weights."""
    layer = _composite(conv_projections=(name,), mixed_projections=True)
    mixed = getattr(layer, name[0] + "_proj")
    assert isinstance(mixed, MixedProjection) and mixed.conv_heads == 1
    _identity_depthwise_(mixed.conv)
    plain = _composite()
    state = {k: v for k, v in layer.state_dict().items() if not k.startswith(name[0] + "_proj")}
    plain.load_state_dict(state, strict=False)
    linear = getattr(plain, name[0] + "_proj")
    with torch.no_grad():
        linear.weight.copy_(torch.cat([mixed.conv.pointwise.weight, mixed.linear.weight]))
        linear.bias.copy_(torch.cat([mixed.conv.pointwise.bias, mixed.linear.bias]))
    x = _tokens()
    torch.testing.assert_close(layer(x)[0], plain(x)[0], **TOL)
    with torch.no_grad():
        mixed.conv.depthwise.weight[:, 0, 0] = 0.5  # the wrong variant: a real (non-identity) kernel differs
    assert (layer(x)[0] - plain(x)[0]).abs().max() > 1e-3


def test_mixed_and_gelu_arguments_are_checked():
    with pytest.raises(ValueError, match="mixed_projections needs"):
        CompositeAttention(8, 1, 2, 16, conv_projections=("key",), mixed_projections=True)
    with pytest.raises(ValueError, match="mixed_projections needs"):
        CompositeAttention(8, 2, 2, 16, mixed_projections=True)
    with pytest.raises(ValueError, match="conv_activation applies"):
        CompositeAttention(8, 2, 2, 16, conv_activation="gelu")
    with pytest.raises(ValueError, match="conv_heads"):
        MixedProjection(8, 4, 2, 2, 3)


def test_bert_variants_build_chang_et_al_layers():
    base = dict(vocab_size=60, hidden_dim=16, depth=1, num_heads=2, mlp_dim=32, max_length=16, max_distance=3)
    for proj in ("query", "key", "value"):
        gelu = composite_layers(BertForMaskedLM(BertConfig(variant=f"conv-{proj}-gelu", **base)))[0]
        assert getattr(gelu, proj[0] + "_proj").activation == "gelu"
        mixed = composite_layers(BertForMaskedLM(BertConfig(variant=f"conv-{proj}-mixed", **base)))[0]
        assert isinstance(getattr(mixed, proj[0] + "_proj"), MixedProjection)
    branch = composite_layers(BertForMaskedLM(BertConfig(variant="convolution", **base)))[0]
    assert branch.value_conv is not None and branch.positional is None and branch.content
    assert VARIANTS["convolution"].value_conv and not VARIANTS["convolution"].is_plain


def test_sympy_proof_of_the_causal_proposition():
    from attnconv.proofs import sequence as proofs

    proof = proofs.causal_bias_is_causal_lightconv()
    assert proof.verified and proof.scope == "general"
    assert not proofs.causal_bias_is_causal_lightconv(mask_future=False).verified  # the future left open


def test_causal_relative_keys_convert_back_to_a_causal_dynamic_conv():
    from attnconv.construct import attention_to_dynamic_conv

    conv = DynamicConv1d(8, 2, 3, boundary="renormalize", causal=True).to(D)
    attention = dynamic_conv_to_attention(conv)
    back = attention_to_dynamic_conv(attention)
    x, mask = _tokens(), _mask()
    torch.testing.assert_close(back(x), attention(x)[0], **TOL)
    torch.testing.assert_close(back(x, mask)[~mask], conv(x, mask)[~mask], **TOL)
    assert torch.isneginf(back.conv.kernel_proj.bias.view(2, -1)[:, back.conv.max_distance + 1:]).all()


# ------------------------------------------------------------------ options added for the references' layers


def test_options_are_checked():
    from attnconv import MultiHeadSelfAttention
    from attnconv.composite import GroupedConv1d
    from attnconv.positional import QuadraticEncoding

    with pytest.raises(ValueError, match="value_proj=False needs shared_values=True"):
        MultiHeadSelfAttention(8, 2, value_proj=False)
    with pytest.raises(ValueError, match="head_dim == embed_dim"):
        MultiHeadSelfAttention(8, 2, head_dim=4, shared_values=True, value_proj=False)
    with pytest.raises(ValueError, match="perfect square"):
        QuadraticEncoding.local_init(8)
    with pytest.raises(ValueError, match="must be negative"):
        QuadraticEncoding.from_positional_query(torch.tensor([[1.0, 0.0, 0.0]]))
    with pytest.raises(ValueError, match="groups=3 must divide"):
        GroupedConv1d(8, 8, 3, groups=3)
    with pytest.raises(ValueError, match="value_conv_scale must be one of"):
        CompositeAttention(8, 2, 2, 16, value_conv=True, value_conv_scale="one")
    with pytest.raises(ValueError, match="mixed_split must be one of"):
        CompositeAttention(8, 2, 2, 16, conv_projections=("key",), mixed_projections=True, mixed_split="half")
    with pytest.raises(ValueError, match="conv_kernel_size maps"):
        CompositeAttention(8, 2, 2, 16, conv_projections=("key",), conv_kernel_size={"keys": 3})
    with pytest.raises(ValueError, match="value_conv_kernel_size is needed"):
        CompositeAttention(8, 2, 2, 16, conv_projections=("key",), conv_kernel_size={"key": 3}, value_conv=True)
    with pytest.raises(ValueError, match="conv_activation needs depthwise-separable"):
        CompositeAttention(8, 2, 2, 16, conv_projections=("key",), conv_activation="gelu", conv_groups=2)
    with pytest.raises(ValueError, match="padded_keys must be one of"):
        DynamicConv1d(8, 2, 3, boundary="renormalize", padded_keys="ignored")


def test_positional_query_round_trip(float64_default):
    from attnconv.positional import QuadraticEncoding

    enc = QuadraticEncoding(3, centers=torch.randn(3, 2, dtype=D), alpha=torch.rand(3, dtype=D) + 0.5).to(D)
    back = QuadraticEncoding.from_positional_query(enc.positional_query())
    torch.testing.assert_close(back.centers, enc.centers, **TOL)
    torch.testing.assert_close(back.alpha, enc.alpha, **TOL)


def test_value_proj_false_attends_over_the_tokens_themselves():
    """With value_proj=False the layer equals the one with an identity value projection."""
    from attnconv import MultiHeadSelfAttention
    from attnconv.positional import QuadraticEncoding

    torch.manual_seed(0)
    enc = QuadraticEncoding(4, alpha=0.7)
    bare = MultiHeadSelfAttention(6, 4, head_dim=6, positional=enc, content=False, shared_values=True,
                                  value_proj=False).to(D)
    identity = MultiHeadSelfAttention(6, 4, head_dim=6, positional=enc, content=False, shared_values=True).to(D)
    identity.out_proj.load_state_dict(bare.out_proj.state_dict())
    with torch.no_grad():
        identity.v_proj.weight.copy_(torch.eye(6))
        identity.v_proj.bias.zero_()
    x = torch.randn(2, 5, 4, 6, dtype=D)
    assert bare.v_proj is None and sum(p.numel() for p in bare.parameters()) < sum(
        p.numel() for p in identity.parameters())
    torch.testing.assert_close(bare(x)[0], identity(x)[0], **TOL)
    mask = torch.zeros(2, 5, 4, dtype=torch.bool)
    mask[1, 3:] = True
    poisoned = x.masked_fill(mask[..., None], float("nan"))
    torch.testing.assert_close(bare(poisoned, key_padding_mask=mask)[0][~mask], bare(x, key_padding_mask=mask)[0][~mask],
                               **TOL)


def test_gpsa_gate_interpolates_between_content_and_position(float64_default):
    from attnconv import MultiHeadSelfAttention
    from attnconv.gpsa import GatedPositionalSelfAttention

    torch.manual_seed(1)
    gpsa = GatedPositionalSelfAttention(8, 4, qkv_bias=True)
    x = torch.randn(2, 4, 4, 8)
    for gate, content in ((60.0, False), (-60.0, True)):  # σ(±60) is 1 or 0 to float64 precision
        plain = MultiHeadSelfAttention(8, 4, positional=None if content else gpsa.positional, content=content)
        plain.load_state_dict({k: v for k, v in gpsa.state_dict().items() if k in plain.state_dict()}, strict=False)
        with torch.no_grad():
            gpsa.gating.fill_(gate)
        torch.testing.assert_close(gpsa(x)[0], plain(x)[0], rtol=1e-10, atol=1e-12)
    with torch.no_grad():
        gpsa.gating.fill_(0.0)
    assert (gpsa(x)[0] - plain(x)[0]).abs().max() > 1e-3  # an open gate mixes the two


def test_gpsa_padding_never_reaches_unpadded_tokens(float64_default):
    from attnconv.gpsa import GatedPositionalSelfAttention

    torch.manual_seed(2)
    gpsa = GatedPositionalSelfAttention(8, 4, qkv_bias=True)
    x = torch.randn(2, 4, 4, 8)
    mask = torch.zeros(2, 4, 4, dtype=torch.bool)
    mask[0, 3] = True
    out = gpsa(x, key_padding_mask=mask)[0]
    poisoned = gpsa(x.masked_fill(mask[..., None], float("nan")), key_padding_mask=mask)[0]
    torch.testing.assert_close(poisoned[~mask], out[~mask], rtol=0, atol=0)
    assert (gpsa(x)[0][~mask] - out[~mask]).abs().max() > 1e-4  # the mask does change the unpadded outputs
