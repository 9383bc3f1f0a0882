"""attnconv.lightconv: lightweight, dynamic and depthwise-separable convolutions, boundaries, masks, bad input."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from attnconv.lightconv import (
    DepthwiseSeparableConv1d,
    DynamicConv1d,
    LightweightConv1d,
    ProjectedConv1d,
    apply_band,
    masked_softmax,
    tap_mask,
)

f64 = dict(dtype=torch.float64)


def _depthwise_reference(x, kernel, heads):
    """Zero-padded depthwise conv with PyTorch: kernel (N_h, K) shared by each head's channels."""
    c, k = x.shape[-1], kernel.shape[-1] // 2
    weight = kernel.repeat_interleave(c // heads, dim=0)[:, None, :]  # (C, 1, K)
    return F.conv1d(x.transpose(1, 2), weight, padding=k, groups=c).transpose(1, 2)


def _renormalised_reference(x, logits, mask=None):
    """Per token: softmax of the kernel logits over taps that read an existing, unpadded token. Loops."""
    b, n, c = x.shape
    heads, width = logits.shape[-2], logits.shape[-1]
    k = width // 2
    out = torch.zeros_like(x)
    for bi in range(b):
        for i in range(n):
            for h in range(heads):
                row = logits[bi, i, h] if logits.dim() == 4 else logits[h]
                taps = [t for t in range(width) if 0 <= i + t - k < n and (mask is None or not mask[bi, i + t - k])]
                if not taps:
                    continue
                w = torch.softmax(row[taps], 0)
                cols = slice(h * c // heads, (h + 1) * c // heads)
                out[bi, i, cols] = sum(w[m] * x[bi, i + t - k, cols] for m, t in enumerate(taps))
    return out


@settings(max_examples=30, deadline=None)
@given(heads=st.integers(1, 3), group=st.integers(1, 3), k=st.integers(0, 3), n=st.integers(1, 12),
       batch=st.integers(1, 3), seed=st.integers(0, 2**16))
def test_zero_padded_lightconv_is_depthwise_conv(heads, group, k, n, batch, seed):
    torch.manual_seed(seed)
    conv = LightweightConv1d(heads * group, heads, 2 * k + 1).double()
    x = torch.randn(batch, n, heads * group, **f64)
    torch.testing.assert_close(conv(x), _depthwise_reference(x, conv.kernel, heads), rtol=0, atol=1e-12)


@settings(max_examples=25, deadline=None)
@given(heads=st.integers(1, 3), group=st.integers(1, 2), k=st.integers(0, 3), n=st.integers(1, 10),
       masked=st.booleans(), seed=st.integers(0, 2**16))
def test_renormalised_lightconv_matches_definition(heads, group, k, n, masked, seed):
    torch.manual_seed(seed)
    conv = LightweightConv1d(heads * group, heads, 2 * k + 1, boundary="renormalize").double()
    x = torch.randn(2, n, heads * group, **f64)
    mask = (torch.rand(2, n) < 0.3) if masked else None
    expected = _renormalised_reference(x, conv.weight, mask)
    torch.testing.assert_close(conv(x, mask), expected, rtol=0, atol=1e-12)


def test_boundaries_agree_in_the_interior_only():
    torch.manual_seed(0)
    zeros = LightweightConv1d(6, 2, 5).double()
    renorm = LightweightConv1d(6, 2, 5, boundary="renormalize").double()
    renorm.weight.data.copy_(zeros.weight.data)
    x = torch.randn(1, 11, 6, **f64)
    a, b = zeros(x), renorm(x)
    torch.testing.assert_close(a[:, 2:-2], b[:, 2:-2], rtol=0, atol=1e-12)
    assert (a[:, :2] - b[:, :2]).abs().min() > 1e-6
    ones = torch.ones(1, 11, 6, **f64)  # a renormalised kernel keeps a constant; zero padding dims the edges
    torch.testing.assert_close(renorm(ones), ones, rtol=0, atol=1e-12)
    assert zeros(ones)[0, 0, 0] < 1 - 1e-3


@settings(max_examples=20, deadline=None)
@given(heads=st.integers(1, 3), k=st.integers(0, 3), n=st.integers(2, 10), boundary=st.sampled_from(["zeros", "renormalize"]),
       seed=st.integers(0, 2**16))
def test_right_padding_changes_nothing_on_real_tokens(heads, k, n, boundary, seed):
    torch.manual_seed(seed)
    conv = LightweightConv1d(2 * heads, heads, 2 * k + 1, boundary=boundary).double()
    dyn = DynamicConv1d(2 * heads, heads, 2 * k + 1, boundary=boundary).double()
    sep = DepthwiseSeparableConv1d(2 * heads, 3, 2 * k + 1).double()
    short = torch.randn(1, n, 2 * heads, **f64)
    padded = torch.cat([short, torch.randn(1, 3, 2 * heads, **f64)], dim=1)
    mask = torch.zeros(1, n + 3, dtype=torch.bool)
    mask[:, n:] = True
    for module in (conv, dyn, sep):
        torch.testing.assert_close(module(padded, mask)[:, :n], module(short), rtol=0, atol=1e-12)


@settings(max_examples=20, deadline=None)
@given(heads=st.integers(1, 3), group=st.integers(1, 2), k=st.integers(0, 3), n=st.integers(1, 9),
       boundary=st.sampled_from(["zeros", "renormalize"]), seed=st.integers(0, 2**16))
def test_dynamic_conv_matches_definition(heads, group, k, n, boundary, seed):
    """β_i = softmax(x_i W^D + b^D): a per-token kernel, over all taps (zeros) or existing taps (renormalize)."""
    torch.manual_seed(seed)
    c, width = heads * group, 2 * k + 1
    dyn = DynamicConv1d(c, heads, width, boundary=boundary).double()
    x = torch.randn(2, n, c, **f64)
    logits = dyn.kernel_proj(x).view(2, n, heads, width)
    if boundary == "renormalize":
        expected = _renormalised_reference(x, logits)
    else:
        expected = torch.zeros_like(x)
        beta = torch.softmax(logits, -1)
        for i in range(n):
            for t in range(width):
                if 0 <= i + t - k < n:
                    expected[:, i] += beta[:, i, :, t].repeat_interleave(group, -1) * x[:, i + t - k]
    torch.testing.assert_close(dyn(x), expected, rtol=0, atol=1e-12)


def test_dynamic_conv_applies_kernels_to_other_values():
    torch.manual_seed(0)
    dyn = DynamicConv1d(4, 2, 3, boundary="renormalize").double()
    x, values = torch.randn(2, 6, 4, **f64), torch.randn(2, 6, 10, **f64)
    out = dyn(x, values=values)
    assert out.shape == (2, 6, 10)
    torch.testing.assert_close(out, apply_band(values, dyn.band(x)), rtol=0, atol=1e-12)


def test_lightconv_is_a_dynamic_conv_with_a_constant_kernel():
    torch.manual_seed(0)
    light = LightweightConv1d(6, 3, 5, boundary="renormalize").double()
    dyn = DynamicConv1d(6, 3, 5, boundary="renormalize").double()
    with torch.no_grad():
        dyn.kernel_proj.weight.zero_()
        dyn.kernel_proj.bias.copy_(light.weight.flatten())
    x = torch.randn(2, 8, 6, **f64)
    torch.testing.assert_close(dyn(x), light(x), rtol=0, atol=1e-12)


def test_apply_band_is_a_sum_of_shifts():
    torch.manual_seed(0)
    x = torch.randn(2, 7, 6, **f64)
    band = torch.randn(2, 3, 7, 5, **f64)
    out = apply_band(x, band)
    expected = torch.zeros_like(x)
    for i in range(7):
        for t in range(5):
            if 0 <= i + t - 2 < 7:
                expected[:, i] += band[:, :, i, t].repeat_interleave(2, -1) * x[:, i + t - 2]
    torch.testing.assert_close(out, expected, rtol=0, atol=1e-12)


def test_tap_mask():
    mask = tap_mask(4, 3)
    assert mask.shape == (1, 1, 4, 3)
    assert mask[0, 0].tolist() == [[True, False, False], [False, False, False], [False, False, False],
                                   [False, False, True]]
    pad = torch.tensor([[False, False, True, True]])
    assert tap_mask(4, 3, pad)[0, 0, 1].tolist() == [False, False, True]


def test_masked_softmax_has_no_nan_values_or_gradients():
    logits = torch.tensor([[0.0, 1.0], [float("-inf"), float("-inf")]], requires_grad=True)
    probs = masked_softmax(logits)
    assert torch.equal(probs[1], torch.zeros(2)) and torch.allclose(probs[0].sum(), torch.tensor(1.0))
    probs.sum().backward()
    assert torch.isfinite(logits.grad).all()


def test_depthwise_separable_equals_conv_then_linear():
    torch.manual_seed(0)
    sep = DepthwiseSeparableConv1d(4, 6, 3).double()
    x = torch.randn(2, 9, 4, **f64)
    expected = sep.pointwise(sep.depthwise(x.transpose(1, 2)).transpose(1, 2))
    torch.testing.assert_close(sep(x), expected, rtol=0, atol=1e-12)
    assert sep(x).shape == (2, 9, 6)


def test_weight_dropout_only_in_training():
    conv = LightweightConv1d(4, 2, 3, weight_dropout=0.5)
    x = torch.randn(2, 6, 4)
    conv.eval()
    torch.testing.assert_close(conv(x), conv(x))
    conv.train()
    torch.manual_seed(0)
    a = conv(x)
    torch.manual_seed(1)
    assert not torch.allclose(a, conv(x))


def test_gradcheck():
    conv = LightweightConv1d(4, 2, 3, boundary="renormalize", bias=True).double()
    dyn = DynamicConv1d(4, 2, 3).double()
    x = torch.randn(1, 5, 4, **f64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda t: conv(t), (x,))
    assert torch.autograd.gradcheck(lambda t: dyn(t), (x,))


@pytest.mark.parametrize(
    "factory, message",
    [
        (lambda: LightweightConv1d(4, 2, 4), "kernel_size must be odd"),
        (lambda: DynamicConv1d(4, 2, 2), "kernel_size must be odd"),
        (lambda: DepthwiseSeparableConv1d(4, 4, 6), "kernel_size must be odd"),
        (lambda: LightweightConv1d(4, 2, 0), "kernel_size must be a positive integer"),
        (lambda: LightweightConv1d(5, 2, 3), r"embed_dim \(5\) must be divisible by num_heads \(2\)"),
        (lambda: DynamicConv1d(6, 4, 3), r"embed_dim \(6\) must be divisible by num_heads \(4\)"),
        (lambda: LightweightConv1d(4, 2, 3, boundary="reflect"), "boundary must be one of"),
        (lambda: LightweightConv1d(4, 2, 3, weight_dropout=1.0), r"weight_dropout must be in \[0, 1\)"),
        (lambda: DepthwiseSeparableConv1d(0, 4, 3), "in_channels must be a positive integer"),
        (lambda: ProjectedConv1d(torch.nn.Linear(2, 2)), "conv must be a LightweightConv1d or DynamicConv1d"),
    ],
)
def test_constructor_bad_input(factory, message):
    with pytest.raises(ValueError, match=message):
        factory()


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda m: m(torch.randn(2, 5, 3)), r"x must be \(B, N, C\) with C=embed_dim=4"),
        (lambda m: m(torch.randn(5, 4)), r"x must be \(B, N, C\)"),
        (lambda m: m(torch.randn(2, 5, 4), torch.zeros(2, 5)), "key_padding_mask must be a bool tensor"),
        (lambda m: m(torch.randn(2, 5, 4), torch.zeros(2, 4, dtype=torch.bool)), r"key_padding_mask must have shape \(2, 5\)"),
    ],
)
def test_forward_bad_input(call, message):
    for module in (LightweightConv1d(4, 2, 3), DynamicConv1d(4, 2, 3), DepthwiseSeparableConv1d(4, 4, 3)):
        with pytest.raises(ValueError, match=message):
            call(module)


def test_apply_band_bad_input():
    with pytest.raises(ValueError, match="not divisible by the band's 3 heads"):
        apply_band(torch.randn(1, 4, 4), torch.randn(1, 3, 4, 3))
    with pytest.raises(ValueError, match="band.s last dim K .without padding_l. must be odd"):
        apply_band(torch.randn(1, 4, 4), torch.randn(1, 2, 4, 2))
    with pytest.raises(ValueError, match="band must be"):
        apply_band(torch.randn(1, 4, 4), torch.randn(1, 2, 3, 3))
    with pytest.raises(ValueError, match="values must be"):
        DynamicConv1d(4, 2, 3)(torch.randn(1, 4, 4), values=torch.randn(1, 5, 4))


def test_extra_repr():
    text = repr(LightweightConv1d(4, 2, 5, boundary="renormalize"))
    assert "kernel_size=5" in text and "boundary='renormalize'" in text and "num_heads=2" in text


def _summing_convolutions(dtype):
    """A lightweight and a dynamic convolution whose every kernel is K = 3 ones: each output sums three inputs."""
    light = LightweightConv1d(4, 2, 3, weight_softmax=False).to(dtype)
    dynamic = DynamicConv1d(4, 2, 3, weight_softmax=False).to(dtype)
    with torch.no_grad():
        light.weight.fill_(1.0)
        dynamic.kernel_proj.weight.zero_()
        dynamic.kernel_proj.bias.fill_(1.0)
    return light, dynamic


@pytest.mark.parametrize("dtype, scale", [(torch.float16, 6e4), (torch.float32, 3e38)])
def test_overflow_of_finite_input_is_refused(dtype, scale):
    """Three taps of 6e4 (fp16) or 3e38 (fp32) overflow: NonFiniteResultError, not a silent inf; unless deferred."""
    from attnconv._checks import NonFiniteResultError
    from attnconv.finite import deferred_finite_checks

    x = torch.full((2, 5, 4), scale, dtype=dtype)
    for conv in _summing_convolutions(dtype):
        assert torch.equal(conv(x / scale), torch.full_like(x, 3.0).index_fill(1, torch.tensor([0, 4]), 2.0))  # 3 taps
        with pytest.raises(NonFiniteResultError, match=f"overflow {dtype}"):
            conv(x)
        with deferred_finite_checks():  # the caller checks once per step: the layer returns the inf
            assert torch.isinf(conv(x)).any()
    light, dynamic = _summing_convolutions(dtype)
    with pytest.raises(NonFiniteResultError):
        dynamic(x / scale, values=x)  # finite kernels, finite values, an overflowing sum
    inf = x.clone()
    inf[0, 2, 0] = float("inf")
    assert torch.isinf(light(inf)).any() and torch.isinf(dynamic(x / scale, values=inf)).any()  # not an overflow


def test_cut_long_kernel_renormalises_over_the_taps_that_reach_a_token():
    """cut_long_kernel (causal only): for N < K the kernel's softmax covers its last N taps only; for N >= K nothing
    changes. Non-causal use is refused."""
    with pytest.raises(ValueError, match="cut_long_kernel needs causal=True"):
        DynamicConv1d(4, 2, 5, cut_long_kernel=True)
    torch.manual_seed(0)
    full = DynamicConv1d(4, 2, 5, causal=True).double()
    cut = DynamicConv1d(4, 2, 5, causal=True, cut_long_kernel=True).double()
    cut.load_state_dict(full.state_dict())
    short, long = torch.randn(2, 3, 4, **f64), torch.randn(2, 9, 4, **f64)
    band = cut.band(short)
    assert torch.equal(band[..., :2], torch.zeros_like(band[..., :2]))  # taps -4, -3 reach no token of 3
    torch.testing.assert_close(band.sum(-1), torch.ones_like(band.sum(-1)), rtol=0, atol=1e-12)
    # The two softmaxes round differently (one sums 5 terms, two of them exactly 0, in a vectorised kernel; the other
    # 3): each probability is within ~3.5 ulps of the exact one (exp ~1, a 3-term sum 2, the division 0.5), so
    # they agree to 8 eps relative, 1.8e-15. A renormalisation over one tap too many (or none) would move every
    # probability by at least that tap's share, softmax of the full kernel, checked to be over 1e12 times larger.
    rtol = 8 * torch.finfo(torch.float64).eps
    reference = torch.softmax(full.kernel_logits(short)[..., 2:], -1)
    torch.testing.assert_close(band[..., 2:], reference, rtol=rtol, atol=0)
    assert torch.softmax(full.kernel_logits(short), -1)[..., :2].min() > 1e12 * rtol  # a wrong cut is visible
    assert (full.band(short)[..., 2:].sum(-1) < 1 - 1e-3).all()  # all K taps: mass lost to the missing past
    assert torch.equal(cut(long), full(long)) and not torch.allclose(cut(short), full(short))


def test_padding_l_checks_and_the_windows_it_has():
    """padding_l in 0..K-1 only, equal to K - 1 with causal; only centred and causal kernels have a max_distance
    (an attention window), and to_conv1d needs padding_l >= (K - 1) / 2."""
    for bad in (-1, 4, 1.0, True):
        with pytest.raises(ValueError, match="padding_l must be an int in"):
            LightweightConv1d(4, 2, 4, padding_l=bad)
    with pytest.raises(ValueError, match="causal=True is padding_l"):
        DynamicConv1d(4, 2, 4, causal=True, padding_l=1)
    assert LightweightConv1d(4, 2, 5, padding_l=2).max_distance == 2 == LightweightConv1d(4, 2, 3, causal=True).max_distance
    skewed = LightweightConv1d(4, 2, 4, padding_l=1).double()
    with pytest.raises(ValueError, match="neither centred nor causal"):
        skewed.max_distance
    with pytest.raises(ValueError, match="to_conv1d needs padding_l"):
        skewed.to_conv1d()
    late = LightweightConv1d(4, 2, 4, padding_l=2).double()  # taps read offsets -2..1
    x = torch.randn(2, 9, 4, **f64)
    torch.testing.assert_close(late.to_conv1d()(x.transpose(1, 2))[..., :9].transpose(1, 2), late(x), rtol=0,
                               atol=1e-12)
