"""The conventions table (book/conventions_table.md): Wu et al.'s lightweight and dynamic convolutions, as in fairseq.

fairseq's ``LightweightConv1dTBC``, ``LightweightConv1d`` (B x C x T) and ``DynamicConv1dTBC`` (both of its paths)
are written out from their published code; the weights are copied into attnconv's LightweightConv1d and
DynamicConv1d by the table's rule and the outputs agree in float64, while the plausible wrong rule differs.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from attnconv.lightconv import DynamicConv1d, LightweightConv1d

from .reference_helpers import D, _close, _copy, _differs, _padding_mask, _randn


@pytest.fixture(autouse=True)
def _float64(float64_default):
    """Every module is built in float64, so that copied weights keep their exact values."""


# ====================================================================== fairseq: lightweight and dynamic convolutions


def fairseq_band(weight, t, padding_l, fill):
    """fairseq's band trick: kernel row i written at columns i..i+K-1 of a (T, T+K-1) matrix, then the T columns
    from ``padding_l`` kept, so that tap k of token i reads token i + k - padding_l."""
    bh, _, k = weight.shape
    full = weight.new_full((bh, t, t + k - 1), fill)
    for i in range(t):
        full[:, i, i:i + k] = weight[:, i]
    return full[:, :, padding_l:padding_l + t]


def fairseq_lightconv_tbc(x, weight, bias, padding_l, softmax_dtype=torch.float32):
    """LightweightConv1dTBC._forward_expanded with weight_softmax=True: channel c belongs to head c // (C/H). Its
    kernel's softmax is taken in float32 and cast back to the weight's dtype (fairseq's ``utils.softmax``)."""
    t, b, c = x.shape
    heads, _, k = weight.shape
    w = torch.softmax(weight.view(heads, k), dim=1, dtype=softmax_dtype).to(weight.dtype)
    w = w[None].expand(t * b, heads, k).reshape(t, b * heads, k).transpose(0, 1)
    band = fairseq_band(w, t, padding_l, 0.0)
    out = torch.bmm(band, x.reshape(t, b * heads, c // heads).transpose(0, 1))
    return out.transpose(0, 1).reshape(t, b, c) + bias


def fairseq_lightconv_bct(x, weight, bias, padding):
    """LightweightConv1d (B x C x T): the channels viewed as (B C/H, H, T), so channel c belongs to head c mod H."""
    b, c, t = x.shape
    heads = weight.shape[0]
    out = F.conv1d(x.reshape(-1, heads, t), torch.softmax(weight, dim=-1), padding=padding, groups=heads)
    return out.reshape(b, c, t) + bias.view(1, -1, 1)


def fairseq_dynamic_tbc(x, lin_w, lin_b, conv_bias, kernel_size, padding_l, renorm_padding, query=None):
    """DynamicConv1dTBC._forward_expanded with weight_softmax=True; the input is already zero on padding (fairseq's
    encoder layer masks it before the convolution), and the layer itself takes no mask. Its softmax is over all K
    taps; a causal kernel longer than the sequence is cut to its last T taps after it (the band's columns). The
    kernels are predicted from ``query`` (``query_size`` channels; default ``x``) and convolve ``x`` (``input_size``
    channels); ``conv_bias`` (``input_size``) is added to the output, in ``forward``."""
    t, b, c = x.shape
    heads = lin_w.shape[0] // kernel_size
    w = ((x if query is None else query) @ lin_w.T + lin_b).reshape(t * b * heads, kernel_size)
    if not renorm_padding:
        w = torch.softmax(w, dim=1)
    w = w.reshape(t, b * heads, kernel_size).transpose(0, 1)
    if renorm_padding:  # softmax over the positions that exist in the (padded) sequence
        band = torch.softmax(fairseq_band(w, t, padding_l, float("-inf")), dim=2)
    else:
        band = fairseq_band(w, t, padding_l, 0.0)
    out = torch.bmm(band, x.reshape(t, b * heads, c // heads).transpose(0, 1))
    return out.transpose(0, 1).reshape(t, b, c) + conv_bias


def fairseq_dynamic_unfolded(x, lin_w, lin_b, conv_bias, kernel_size, padding_l):
    """DynamicConv1dTBC._forward_unfolded with weight_softmax=True (renorm_padding=False, no incremental state): a
    causal kernel longer than the sequence (K > T, padding_l = K - 1) is cut to its last T taps *before* the
    softmax; then tap t of token i reads token i + t - padding_l, zero outside."""
    t, b, c = x.shape
    heads = lin_w.shape[0] // kernel_size
    w = (x @ lin_w.T + lin_b).reshape(t, b, heads, kernel_size)
    if kernel_size > t and padding_l == kernel_size - 1:
        w, kernel_size, padding_l = w[..., kernel_size - t:], t, t - 1
    w = torch.softmax(w, dim=-1)
    xs = x.reshape(t, b, heads, c // heads)
    out = torch.zeros_like(xs)
    for i in range(t):
        for tap in range(kernel_size):
            j = i + tap - padding_l
            if 0 <= j < t:
                out[i] += w[i, :, :, tap, None] * xs[j]
    return out.reshape(t, b, c) + conv_bias

@pytest.mark.parametrize("kernel_size,causal", [(3, False), (5, False), (4, True)])
def test_fairseq_lightconv_tbc_row_copies_as_is(kernel_size, causal):
    torch.manual_seed(5)
    weight, bias, x = _randn(2, 1, kernel_size), _randn(8), _randn(2, 11, 8)
    padding_l = kernel_size - 1 if causal else kernel_size // 2
    theirs = fairseq_lightconv_tbc(x.transpose(0, 1), weight, bias, padding_l).transpose(0, 1)
    ours = LightweightConv1d(8, 2, kernel_size, bias=True, causal=causal).to(D)
    _copy(ours.weight, weight.squeeze(1))
    _copy(ours.bias, bias)
    # fairseq rounds the kernel to float32: equal up to that rounding (here ~1e-8), and not closer
    torch.testing.assert_close(ours(x), theirs, rtol=0, atol=8 * torch.finfo(torch.float32).eps * x.abs().max())
    assert (ours(x) - theirs).abs().max() > 1e-12
    exact = fairseq_lightconv_tbc(x.transpose(0, 1), weight, bias, padding_l, softmax_dtype=D).transpose(0, 1)
    _close(ours(x), exact)  # the whole residual is that rounding: with a float64 softmax they agree to 1e-12
    if not causal:  # the two fairseq modules group the channels differently
        _differs(fairseq_lightconv_bct(x.transpose(1, 2), weight, bias, padding_l).transpose(1, 2), theirs)


@pytest.mark.parametrize("kernel_size", [4, 5])
def test_fairseq_rows_any_padding_l(kernel_size):
    """fairseq's padding_l may be any of 0..K-1 (tap t reads token i + t - padding_l): the option padding_l, for the
    lightweight and the dynamic convolution (both boundaries); the centred default differs when padding_l is not."""
    torch.manual_seed(9)
    weight, bias, x = _randn(2, 1, kernel_size), _randn(8), _randn(2, 11, 8)
    lin_w, lin_b = _randn(2 * kernel_size, 8, scale=0.7), _randn(2 * kernel_size)
    for padding_l in range(kernel_size):
        theirs = fairseq_lightconv_tbc(x.transpose(0, 1), weight, bias, padding_l, softmax_dtype=D).transpose(0, 1)
        light = LightweightConv1d(8, 2, kernel_size, bias=True, padding_l=padding_l).to(D)
        light.load_state_dict({"weight": weight.squeeze(1), "bias": bias})
        _close(light(x), theirs)
        for renorm in (False, True):
            theirs = fairseq_dynamic_tbc(x.transpose(0, 1), lin_w, lin_b, bias, kernel_size, padding_l,
                                         renorm).transpose(0, 1)
            dynamic = DynamicConv1d(8, 2, kernel_size, boundary="renormalize" if renorm else "zeros", conv_bias=True,
                                    padded_keys="zeros", padding_l=padding_l).to(D)
            dynamic.load_state_dict({"kernel_proj.weight": lin_w, "kernel_proj.bias": lin_b, "conv_bias": bias})
            _close(dynamic(x), theirs)
            if kernel_size % 2 and padding_l != kernel_size // 2:
                centred = DynamicConv1d(8, 2, kernel_size, boundary=dynamic.boundary, conv_bias=True).to(D)
                centred.load_state_dict(dynamic.state_dict())
                _differs(centred(x), theirs)


@pytest.mark.parametrize("t", [3, 5, 7, 11])
def test_fairseq_dynamic_conv_row_causal_kernel_longer_than_the_sequence(t):
    """Causal K = 7: fairseq's expanded path (softmax over all K taps) is the default; its unfolded path (the last
    T taps only, when K > T) is cut_long_kernel=True. The two agree once T >= K."""
    torch.manual_seed(11)
    k = 7
    lin_w, lin_b, conv_bias, x = _randn(2 * k, 8, scale=0.7), _randn(2 * k), _randn(8), _randn(2, t, 8)
    args = (x.transpose(0, 1), lin_w, lin_b, conv_bias, k, k - 1)
    expanded = fairseq_dynamic_tbc(*args, renorm_padding=False).transpose(0, 1)
    unfolded = fairseq_dynamic_unfolded(*args).transpose(0, 1)
    outs = {}
    for cut in (False, True):
        conv = DynamicConv1d(8, 2, k, causal=True, conv_bias=True, cut_long_kernel=cut).to(D)
        conv.load_state_dict({"kernel_proj.weight": lin_w, "kernel_proj.bias": lin_b, "conv_bias": conv_bias})
        outs[cut] = conv(x)
    _close(outs[False], expanded)
    _close(outs[True], unfolded)
    if t < k:
        _differs(outs[True], expanded, by=0.1)
        _differs(outs[False], unfolded, by=0.1)
    else:
        _close(expanded, unfolded)


def test_fairseq_lightconv_bct_row_permutes_the_channels():
    torch.manual_seed(6)
    heads, c = 2, 8
    group = c // heads
    weight, bias, x = _randn(heads, 1, 5), _randn(c), _randn(2, 11, c)
    theirs = fairseq_lightconv_bct(x.transpose(1, 2), weight, bias, 2).transpose(1, 2)
    ours = LightweightConv1d(c, heads, 5, bias=True).to(D)
    _copy(ours.weight, weight.squeeze(1))
    perm = torch.tensor([r * heads + h for h in range(heads) for r in range(group)])  # our h (C/H) + r <- their r H + h
    _copy(ours.bias, bias[perm])
    _close(ours(x[..., perm])[..., torch.argsort(perm)], theirs)
    _differs(ours(x), theirs)  # channels copied in place


@pytest.mark.parametrize("renorm_padding", [False, True])
@pytest.mark.parametrize("masked", [False, True])
def test_fairseq_dynamic_conv_row(renorm_padding, masked):
    """renorm_padding=False is boundary="zeros"; True is boundary="renormalize", and with a padding mask also
    padded_keys="zeros": fairseq's softmax keeps the padded keys (they read zeros)."""
    torch.manual_seed(7)
    lin_w, lin_b, conv_bias, x = _randn(2 * 5, 8, scale=0.7), _randn(10), _randn(8), _randn(2, 11, 8)
    mask = _padding_mask() if masked else None
    x_zeroed = x if mask is None else x.masked_fill(mask[..., None], 0.0)
    theirs = fairseq_dynamic_tbc(x_zeroed.transpose(0, 1), lin_w, lin_b, conv_bias, 5, 2, renorm_padding).transpose(0, 1)

    def ours_with(padded_keys):
        conv = DynamicConv1d(8, 2, 5, boundary="renormalize" if renorm_padding else "zeros", conv_bias=True,
                             padded_keys=padded_keys).to(D)
        _copy(conv.kernel_proj.weight, lin_w)
        _copy(conv.kernel_proj.bias, lin_b)
        _copy(conv.conv_bias, conv_bias)
        return conv(x, mask)

    _close(ours_with("zeros"), theirs)
    if renorm_padding and masked:  # the attention-style default leaves padded keys out of the softmax
        _differs(ours_with("excluded")[~mask], theirs[~mask], by=0.1)
    else:  # without a mask (or without renormalising) padded keys read zeros either way
        _close(ours_with("excluded"), theirs)
    wrong = DynamicConv1d(8, 2, 5, boundary="zeros" if renorm_padding else "renormalize", conv_bias=True).to(D)
    wrong.load_state_dict({"kernel_proj.weight": lin_w, "kernel_proj.bias": lin_b, "conv_bias": conv_bias})
    _differs(wrong(x, mask), theirs)  # the other boundary


@pytest.mark.parametrize("renorm_padding", [False, True])
def test_fairseq_dynamic_conv_row_query_size_other_than_input_size(renorm_padding):
    """``query_size`` = 6 (the kernel predictor's input) and ``input_size`` = 8 (what is convolved, the output, and
    ``conv_bias``): embed_dim=6, value_dim=8, values=x. Adding the bias to the input instead of the output is the
    same for a kernel that sums to 1 at every token, and differs where zero padding drops part of the kernel."""
    torch.manual_seed(18)
    k, query_size, input_size = 5, 6, 8
    lin_w, lin_b, conv_bias = _randn(2 * k, query_size, scale=0.7), _randn(2 * k), _randn(input_size)
    x, query = _randn(2, 11, input_size), _randn(2, 11, query_size)
    theirs = fairseq_dynamic_tbc(x.transpose(0, 1), lin_w, lin_b, conv_bias, k, 2, renorm_padding,
                                 query=query.transpose(0, 1)).transpose(0, 1)
    boundary = "renormalize" if renorm_padding else "zeros"
    conv = DynamicConv1d(query_size, 2, k, boundary=boundary, conv_bias=True, padded_keys="zeros",
                         value_dim=input_size).to(D)
    conv.load_state_dict({"kernel_proj.weight": lin_w, "kernel_proj.bias": lin_b, "conv_bias": conv_bias})
    assert conv.conv_bias.shape == (input_size,)
    _close(conv(query, values=x), theirs)
    bias_first = fairseq_dynamic_tbc((x + conv_bias).transpose(0, 1), lin_w, lin_b, torch.zeros(input_size), k, 2,
                                     renorm_padding, query=query.transpose(0, 1)).transpose(0, 1)
    if renorm_padding:
        _close(bias_first, theirs)
    else:
        _differs(bias_first, theirs)
    with pytest.raises(ValueError, match="value_dim=6"):  # without value_dim the bias has the query's channels
        DynamicConv1d(query_size, 2, k, conv_bias=True).to(D)(query, values=x)
    with pytest.raises(ValueError, match="value_dim=8"):
        conv(query)  # the values are not the query
    with pytest.raises(ValueError, match="value_dim"):
        DynamicConv1d(query_size, 2, k, value_dim=7)
