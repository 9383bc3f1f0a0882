"""Bad and edge-case inputs: clear errors instead of silent NaN, and padding that never reaches valid tokens."""

import math

import pytest
import torch

from attnconv.attention import MultiHeadSelfAttention
from attnconv.composite import CompositeAttention
from attnconv.lightconv import DepthwiseSeparableConv1d, DynamicConv1d, LightweightConv1d, ProjectedConv1d, tap_mask
from attnconv.models.bert import BertConfig, BertEncoder
from attnconv.positional import (
    AnisotropicGaussianEncoding,
    KeyRelativeLogits,
    LearnedRelativeEncoding2d,
    QuadraticEncoding,
    QueryRelativeLogits,
    RelativePositionBias,
    grid_positions,
    relative_index,
)

D = torch.float64


def _seq_modules() -> dict[str, torch.nn.Module]:
    """One instance of every public sequence module, in float64, with every option that touches padding."""
    torch.manual_seed(0)
    value_branch = CompositeAttention(8, 2, 2, 16, fixed=True, query_dynamic=True, key_dynamic=True,
                                      conv_projections=("query", "key", "value"), value_conv=True)
    with torch.no_grad():
        value_branch.value_conv_scale.fill_(0.7)
    modules = {
        "mhsa": MultiHeadSelfAttention(8, 2),
        "mhsa-relative": MultiHeadSelfAttention(8, 2, positional=KeyRelativeLogits(2, 4, 2)),
        "composite": CompositeAttention(8, 2, 2, 16, fixed=True, query_dynamic=True, key_dynamic=True),
        "composite-window": CompositeAttention(8, 2, 1, 16, fixed=True, window=True),
        "composite-value-conv": value_branch,
        "composite-mixed-gelu": CompositeAttention(8, 2, 2, 16, conv_projections=("key", "value"),
                                                   mixed_projections=True, conv_activation="gelu"),
        "lightweight": LightweightConv1d(8, 2, 3, bias=True),
        "lightweight-renormalize": LightweightConv1d(8, 2, 5, boundary="renormalize"),
        "lightweight-causal": LightweightConv1d(8, 2, 4, boundary="renormalize", causal=True),
        "lightweight-raw": LightweightConv1d(8, 2, 3, weight_softmax=False),
        "dynamic": DynamicConv1d(8, 2, 3, conv_bias=True),
        "dynamic-renormalize-causal": DynamicConv1d(8, 2, 3, boundary="renormalize", causal=True),
        "depthwise-separable": DepthwiseSeparableConv1d(8, 6, 3, activation="gelu"),
        "projected": ProjectedConv1d(DynamicConv1d(8, 2, 3), torch.nn.Linear(8, 8), torch.nn.Linear(8, 8)),
    }
    return {name: m.to(D).eval() for name, m in modules.items()}


def _call(module: torch.nn.Module, x: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    out = module(x, key_padding_mask=mask)
    return out[0] if isinstance(out, tuple) else out


@pytest.mark.parametrize("name", list(_seq_modules()))
def test_nan_in_a_padded_token_never_reaches_a_valid_output(name):
    module = _seq_modules()[name]
    torch.manual_seed(1)
    x = torch.randn(2, 9, 8, dtype=D)
    mask = torch.zeros(2, 9, dtype=torch.bool)
    mask[0, 6:] = True
    mask[1, 2] = True  # a hole inside the sequence, too
    clean = _call(module, x, mask)
    poisoned = x.clone()
    poisoned[mask] = float("nan")
    poisoned[0, 7] = float("inf")
    dirty = _call(module, poisoned, mask)
    assert torch.isfinite(dirty[~mask]).all()
    torch.testing.assert_close(dirty[~mask], clean[~mask], rtol=0, atol=1e-12)


def test_without_zeroing_a_padded_nan_spreads_everywhere():
    """The wrong variant: masking the logits alone leaves NaN keys and values, as torch's own layer shows."""
    torch.manual_seed(0)
    mha = torch.nn.MultiheadAttention(8, 2, batch_first=True, dtype=D)
    x = torch.randn(1, 5, 8, dtype=D)
    mask = torch.tensor([[False, False, False, True, True]])
    x[mask] = float("nan")
    out, _ = mha(x, x, x, key_padding_mask=mask, need_weights=False)
    assert torch.isnan(out[~mask]).all()
    ours = MultiHeadSelfAttention.from_torch(mha)
    assert torch.isfinite(ours(x, key_padding_mask=mask)[0][~mask]).all()


def test_image_attention_ignores_padded_pixels():
    torch.manual_seed(0)
    layer = MultiHeadSelfAttention(6, 3, positional=LearnedRelativeEncoding2d(3, 4, 2, query_dependent=True),
                                   ).to(D)
    x = torch.randn(2, 4, 4, 6, dtype=D)
    mask = torch.zeros(2, 4, 4, dtype=torch.bool)
    mask[:, 3] = True
    clean = layer(x, key_padding_mask=mask)[0]
    x[mask] = float("nan")
    dirty = layer(x, key_padding_mask=mask)[0]
    torch.testing.assert_close(dirty[~mask], clean[~mask], rtol=0, atol=1e-12)


def test_bert_encoder_ignores_what_padding_holds():
    torch.manual_seed(0)
    config = BertConfig(vocab_size=50, hidden_dim=16, depth=2, num_heads=2, mlp_dim=32, max_length=12,
                        variant="composite", max_distance=3, dropout=0.0)
    model = BertEncoder(config).eval()
    ids = torch.randint(1, 50, (2, 12))
    mask = torch.zeros(2, 12, dtype=torch.bool)
    mask[1, 8:] = True
    other = ids.clone()
    other[mask] = torch.randint(1, 50, (int(mask.sum()),))
    with torch.no_grad():
        torch.testing.assert_close(model(ids, padding_mask=mask)[~mask], model(other, padding_mask=mask)[~mask],
                                   rtol=0, atol=1e-5)


def test_dynamic_conv_predicts_a_padded_tokens_kernel_from_zeros():
    """As in the reference, which zeroes padded tokens before the layer: the kernel there is softmax(b^D)."""
    torch.manual_seed(0)
    conv = DynamicConv1d(4, 2, 3).to(D)
    x = torch.randn(1, 5, 4, dtype=D)
    mask = torch.tensor([[False, False, False, True, True]])
    band = conv.band(x, mask)  # (1, N_h, N, 3)
    expected = torch.softmax(conv.kernel_proj.bias.view(2, 3), dim=-1)
    torch.testing.assert_close(band[0, :, 3], expected, rtol=0, atol=1e-15)
    assert not torch.allclose(conv.band(x)[0, :, 3], expected)  # from the token's features, it differs


# ------------------------------------------------------------------ clear errors


@pytest.mark.parametrize("make", [
    lambda: QuadraticEncoding(2, centers=[[0.0, float("nan")], [1.0, 0.0]]),
    lambda: QuadraticEncoding(2, centers=[[0.0, float("inf")], [1.0, 0.0]]),
    lambda: QuadraticEncoding(2, alpha=float("inf")),
    lambda: AnisotropicGaussianEncoding(2, alpha=float("inf")),
    lambda: AnisotropicGaussianEncoding(2, alpha=float("nan")),
    lambda: AnisotropicGaussianEncoding(2, centers=[[float("nan"), 0.0], [1.0, 0.0]]),
])
def test_non_finite_encoding_parameters_are_refused(make):
    with pytest.raises(ValueError, match="finite"):
        make()


def test_alpha_that_overflows_after_a_dtype_change_raises():
    """α = 1e5 is fine in float32 but exp(log α) is inf in float16; α = 1e39 overflows float32 likewise."""
    for alpha, build, cast in ((1e5, torch.float32, torch.float16), (1e39, torch.float64, torch.float32)):
        torch.set_default_dtype(build)
        try:
            encoding = QuadraticEncoding(4, centers=[[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], alpha=alpha)
        finally:
            torch.set_default_dtype(torch.float32)
        layer = MultiHeadSelfAttention(4, 4, positional=encoding, content=False).to(cast)
        with pytest.raises(ValueError, match="alpha"):
            layer(torch.randn(1, 3, 3, 4).to(cast))
        # The wrong variant, the formula evaluated unchecked: -inf * 0 at δ = 0 makes every logit row NaN.
        alpha_t = encoding.log_alpha.exp()
        delta = torch.arange(3, dtype=cast)[None, :] - torch.arange(3, dtype=cast)[:, None]
        unchecked = -alpha_t[:, None, None] * (delta**2 - 2 * encoding.centers[:, 0, None, None] * delta)
        assert torch.isnan(torch.softmax(unchecked, dim=-1)).all()


def test_anisotropic_precision_that_overflows_raises():
    encoding = AnisotropicGaussianEncoding(2, alpha=1.0)
    with torch.no_grad():
        encoding.log_diag.fill_(45.0)  # trained far out: L's diagonal e^45, so Σ^-1 = e^90 overflows float32
        encoding.off_diag.fill_(1.0)
    with pytest.raises(ValueError, match="precision"):
        encoding((5, 5), None, None)
    assert torch.isfinite(AnisotropicGaussianEncoding(2, alpha=1e3)((5, 5), None, None)).all()


@pytest.mark.parametrize("layer", [MultiHeadSelfAttention(8, 2), CompositeAttention(8, 2, 2, 16)],
                         ids=["mhsa", "composite"])
def test_an_empty_batch_gives_an_empty_output(layer):
    out, probs = layer(torch.randn(0, 5, 8), need_weights=True)
    assert out.shape == (0, 5, 8) and probs.shape == (0, 2, 5, 5)
    masked, _ = layer(torch.randn(0, 5, 8), key_padding_mask=torch.zeros(0, 5, dtype=torch.bool))
    assert masked.shape == (0, 5, 8)


@pytest.mark.parametrize("layer", [MultiHeadSelfAttention(8, 2), CompositeAttention(8, 2, 2, 16),
                                   LightweightConv1d(8, 2, 3), DynamicConv1d(8, 2, 3)],
                         ids=["mhsa", "composite", "lightweight", "dynamic"])
def test_no_tokens_is_a_clear_error(layer):
    with pytest.raises(ValueError, match="at least one token"):
        layer(torch.randn(2, 0, 8))


@pytest.mark.parametrize("layer", [MultiHeadSelfAttention(8, 2), CompositeAttention(8, 2, 2, 16),
                                   LightweightConv1d(8, 2, 3), DynamicConv1d(8, 2, 3),
                                   DepthwiseSeparableConv1d(8, 4, 3)],
                         ids=["mhsa", "composite", "lightweight", "dynamic", "depthwise-separable"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.int64])
def test_a_dtype_mismatch_is_a_type_error(layer, dtype):
    layer = layer.to(D)
    with pytest.raises(TypeError, match="x"):
        layer(torch.ones(2, 5, 8).to(dtype))


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the error on a machine without CUDA")
@pytest.mark.parametrize("call", [
    lambda: grid_positions((3, 3), device="cuda"),
    lambda: relative_index(5, 2, device="cuda"),
    lambda: tap_mask(5, 3, device="cuda:0"),
])
def test_a_cuda_device_without_cuda_is_a_clear_error(call):
    with pytest.raises(ValueError, match="needs CUDA"):
        call()


def test_a_malformed_device_is_a_value_error():
    with pytest.raises(ValueError, match="device"):
        grid_positions((3,), device="gpu0")


# ------------------------------------------------------------------ Chang et al.'s key-term sign


def test_key_term_table_is_chang_et_al_reversed():
    """Their key term reads c'_{clip(i - j)} (query minus key); ours reads c_{clip(j - i)}: c = c'.flip(0)."""
    torch.manual_seed(0)
    n, k, d = 7, 2, 3
    keys = torch.randn(1, 1, n, d, dtype=D)
    theirs = torch.randn(2 * k + 1, d, dtype=D)  # row t is their offset i - j = t - k
    pos = torch.arange(n)
    their_offset = (pos[:, None] - pos[None, :]).clamp(-k, k) + k  # [i, j]
    reference = torch.einsum("jd,ijd->ij", keys[0, 0], theirs[their_offset]) / math.sqrt(d)
    term = KeyRelativeLogits(1, d, k).to(D)
    with torch.no_grad():
        term.embedding.copy_(theirs.flip(0))
    torch.testing.assert_close(term((n,), None, keys)[0, 0], reference, rtol=0, atol=1e-12)
    with torch.no_grad():
        term.embedding.copy_(theirs)  # the wrong variant: copied without the flip
    assert (term((n,), None, keys)[0, 0] - reference).abs().max() > 1e-2


def test_causal_terms_mask_every_future_key():
    torch.manual_seed(0)
    q = torch.randn(1, 2, 6, 4)
    for term in (RelativePositionBias(2, 2, causal=True), QueryRelativeLogits(2, 4, 2, causal=True),
                 KeyRelativeLogits(2, 4, 2, causal=True)):
        logits = term((6,), q, q)
        future = torch.ones(6, 6, dtype=torch.bool).triu(1)
        assert torch.isneginf(logits[..., future]).all() and torch.isfinite(logits[..., ~future]).all()
