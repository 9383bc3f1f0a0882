"""The conventions table (book/conventions_table.md), row by row.

Each test re-implements a reference layer's forward pass from its published code (Cordonnier et al.'s
GaussianSelfAttention and Learned2DRelativeSelfAttention, ConViT's GPSA as in timm, fairseq's lightweight and dynamic
convolutions, Chang et al.'s BertSelfAttention, DeBERTa's position-to-content term), copies random weights into the
attnconv module with the mapping the table states, and checks that the outputs agree in float64. Each row also has
a negative control: the plausible wrong mapping (the one the table warns about) gives a different output.
"""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from attnconv.attention import MultiHeadSelfAttention
from attnconv.composite import CompositeAttention, GroupedConv1d, MixedProjection
from attnconv.gpsa import GatedPositionalSelfAttention
from attnconv.lightconv import DepthwiseSeparableConv1d, DynamicConv1d, LightweightConv1d
from attnconv.positional import (
    AnisotropicGaussianEncoding,
    KeyRelativeLogits,
    LearnedRelativeEncoding2d,
    QuadraticEncoding,
)

D = torch.float64


@pytest.fixture(autouse=True)
def _float64(float64_default):
    """Every module is built in float64, so that copied weights keep their exact values."""


def _close(ours, theirs):
    torch.testing.assert_close(ours, theirs, rtol=1e-10, atol=1e-12)


def _differs(ours, theirs, by=1e-3):
    assert (ours - theirs).abs().max() > by


def _randn(*shape, seed=None, scale=1.0):
    if seed is not None:
        torch.manual_seed(seed)
    return torch.randn(*shape, dtype=D) * scale


def _copy(param, value):
    with torch.no_grad():
        param.copy_(value)


# ====================================================================== Cordonnier et al.: Gaussian attention


def gaussian_reference(hidden, centers, spreads, value_w, value_b):
    """GaussianSelfAttention (no blur trick): a (δ_0, δ_1, δ_0², δ_1², δ_0 δ_1) table of key-minus-query offsets,
    one target vector per head, a softmax over all keys, the heads concatenated and mapped by ``value``."""
    b, w, h, c = hidden.shape
    heads = centers.shape[0]
    side = max(w, h)
    pos = torch.arange(side, dtype=D)
    grid = torch.stack(torch.meshgrid(pos, pos, indexing="ij"), dim=-1)  # (side, side, 2)
    rel = grid[None, None] - grid[:, :, None, None]  # [i, j, k, l] = (k, l) - (i, j)
    table = torch.cat([rel, rel**2, (rel[..., 0] * rel[..., 1])[..., None]], dim=-1)[:w, :h, :w, :h]
    if spreads.dim() == 1:  # isotropic: one inverse standard deviation per head
        a = c2 = spreads**2
        off = torch.zeros_like(spreads)
    else:  # Σ^-1 = S Sᵀ
        inv = torch.einsum("hij,hkj->hik", spreads, spreads)
        a, off, c2 = inv[:, 0, 0], inv[:, 0, 1], inv[:, 1, 1]
    mu1, mu2 = centers[:, 0], centers[:, 1]
    target = -0.5 * torch.stack([-2 * (a * mu1 + off * mu2), -2 * (c2 * mu2 + off * mu1), a, c2, 2 * off], dim=-1)
    scores = torch.einsum("ijkld,hd->ijhkl", table, target)
    probs = torch.softmax(scores.reshape(w, h, heads, w * h), dim=-1).reshape(w, h, heads, w, h)
    mixed = torch.einsum("ijhkl,bkld->bijhd", probs, hidden).reshape(b, w, h, heads * c)
    return mixed @ value_w.T + value_b


def _paper_layer(positional, channels, heads, value_w, value_b, content=False):
    layer = MultiHeadSelfAttention(channels, heads, head_dim=channels, positional=positional, content=content,
                                   shared_values=True, value_proj=False).to(D)
    _copy(layer.out_proj.weight, value_w)
    _copy(layer.out_proj.bias, value_b)
    return layer


def _gaussian_case(seed=0, heads=3, c=4, grid=(5, 4)):
    torch.manual_seed(seed)
    hidden = _randn(2, *grid, c)
    centers = _randn(heads, 2, scale=1.5)
    value_w, value_b = _randn(c, heads * c, scale=0.3), _randn(c)
    return hidden, centers, value_w, value_b


def test_isotropic_gaussian_row_alpha_is_half_the_squared_spread():
    hidden, centers, value_w, value_b = _gaussian_case()
    spreads = 1 + 0.3 * _randn(3)
    theirs = gaussian_reference(hidden, centers, spreads, value_w, value_b)
    encoding = QuadraticEncoding(3, centers=centers, alpha=spreads**2 / 2)
    ours = _paper_layer(encoding, 4, 3, value_w, value_b)(hidden)[0]
    _close(ours, theirs)
    wrong_alpha = _paper_layer(QuadraticEncoding(3, centers=centers, alpha=spreads**2), 4, 3, value_w, value_b)
    _differs(wrong_alpha(hidden)[0], theirs)  # α = s² (the ½ forgotten)
    swapped = _paper_layer(QuadraticEncoding(3, centers=centers.flip(1), alpha=spreads**2 / 2), 4, 3, value_w, value_b)
    _differs(swapped(hidden)[0], theirs)  # their centre's first coordinate is the row offset, as ours


def test_anisotropic_gaussian_row_precision_is_half_s_s_transpose():
    hidden, centers, value_w, value_b = _gaussian_case(seed=1)
    spreads = torch.eye(2, dtype=D) + 0.4 * _randn(3, 2, 2)
    theirs = gaussian_reference(hidden, centers, spreads, value_w, value_b)

    def layer_for(precision):
        encoding = AnisotropicGaussianEncoding(3, centers=centers).to(D)
        lower = torch.linalg.cholesky(precision)
        _copy(encoding.log_diag, torch.diagonal(lower, dim1=-2, dim2=-1).log())
        _copy(encoding.off_diag, lower[:, 1, 0])
        return _paper_layer(encoding, 4, 3, value_w, value_b)

    ours = layer_for(spreads @ spreads.transpose(-1, -2) / 2)
    _close(ours.positional.precision(), spreads @ spreads.transpose(-1, -2) / 2)
    _close(ours(hidden)[0], theirs)
    _differs(layer_for(spreads.transpose(-1, -2) @ spreads / 2)(hidden)[0], theirs)  # Sᵀ S: the wrong order


# ====================================================================== Cordonnier et al.: learned 2-D relative


def learned_2d_reference(hidden, row_emb, col_emb, keys_row, keys_col, value_w, value_b, qk=None):
    """Learned2DRelativeSelfAttention: ``row_embeddings`` scored along the grid's second axis (it is viewed over
    ``width`` = that axis), ``col_embeddings`` along the first; optionally plus content scores."""
    b, w, h, c = hidden.shape
    assert w == h, "the reference pairs its axes only on square grids"
    heads = keys_row.shape[0]
    m = (row_emb.shape[0] + 1) // 2
    pos = torch.arange(m)
    index = pos[None, :] - pos[:, None] + m - 1  # key minus query, shifted to a table row
    row_scores = (row_emb[index[:w, :w].reshape(-1)] @ keys_row.T).view(1, w, 1, w, heads)
    col_scores = (col_emb[index[:h, :h].reshape(-1)] @ keys_col.T).view(h, 1, h, 1, heads)
    scores = (row_scores + col_scores).permute(0, 1, 4, 2, 3)  # (H, W, heads, H, W)
    batch = ""
    if qk is not None:
        (qw, qb), (kw, kb) = qk
        q = (hidden @ qw.T + qb).view(b, w, h, heads, c)
        k = (hidden @ kw.T + kb).view(b, w, h, heads, c)
        scores = scores[None] + torch.einsum("bijhd,bklhd->bijhkl", q, k) / math.sqrt(c)
        batch = "b"
    probs = torch.softmax(scores.reshape(*scores.shape[:-2], h * w), dim=-1).reshape(scores.shape)
    mixed = torch.einsum(batch + "ijhkl,bkld->bijhd", probs, hidden).reshape(b, w, h, heads * c)
    return mixed @ value_w.T + value_b


@pytest.mark.parametrize("content", [False, True])
def test_learned_2d_row_their_row_embeddings_index_the_horizontal_offset(content):
    torch.manual_seed(2)
    heads, c, m, d_p = 2, 4, 6, 3
    hidden = _randn(2, 5, 5, c)
    row_emb, col_emb = _randn(2 * m - 1, d_p), _randn(2 * m - 1, d_p)
    keys_row, keys_col = _randn(heads, d_p), _randn(heads, d_p)
    value_w, value_b = _randn(c, heads * c, scale=0.3), _randn(c)
    qk = ((_randn(heads * c, c, scale=0.5), _randn(heads * c)), (_randn(heads * c, c, scale=0.5), _randn(heads * c)))
    theirs = learned_2d_reference(hidden, row_emb, col_emb, keys_row, keys_col, value_w, value_b,
                                  qk if content else None)

    def layer_for(vertical, horizontal, vertical_keys, horizontal_keys):
        encoding = LearnedRelativeEncoding2d(heads, m, 2 * d_p).to(D)
        _copy(encoding.rows, vertical)
        _copy(encoding.cols, horizontal)
        _copy(encoding.query, torch.cat([vertical_keys, horizontal_keys], dim=1))
        layer = _paper_layer(encoding, c, heads, value_w, value_b, content=content)
        if content:
            for proj, (w, b) in zip((layer.q_proj, layer.k_proj), qk):
                _copy(proj.weight, w)
                _copy(proj.bias, b)
        return layer

    ours = layer_for(col_emb, row_emb, keys_col, keys_row)  # the table's mapping
    _close(ours(hidden)[0], theirs)
    literal = layer_for(row_emb, col_emb, keys_row, keys_col)  # "rows from rows": the misleading reading
    _differs(literal(hidden)[0], theirs)


# ====================================================================== ConViT's GPSA (timm)


def convit_local_init_weight(num_heads, locality_strength):
    """timm's GPSA.local_init, for pos_proj.weight (N_h, 3) over the features (δ_col, δ_row, ‖δ‖²)."""
    k = int(num_heads**0.5)
    center = (k - 1) / 2 if k % 2 == 0 else k // 2
    weight = torch.zeros(num_heads, 3, dtype=D)
    for h1 in range(k):
        for h2 in range(k):
            p = h1 + k * h2
            weight[p, 2] = -1
            weight[p, 1] = 2 * (h1 - center)
            weight[p, 0] = 2 * (h2 - center)
    return weight * locality_strength


def convit_rel_indices(side):
    ind = torch.arange(side)[None, :] - torch.arange(side)[:, None]
    indx = ind.repeat(side, side)
    indy = ind.repeat_interleave(side, dim=0).repeat_interleave(side, dim=1)
    return torch.stack([indx, indy, indx**2 + indy**2], dim=-1).to(D)  # (N, N, 3)


def gpsa_reference(x, qk_w, v_w, proj_w, proj_b, pos_w, pos_b, gating, qk_b=None, v_b=None):
    """timm's GPSA forward: gated sum of a content and a positional softmax, renormalised. ``qk_b`` (2C) and ``v_b``
    (C) are the biases of ``qk`` and ``v`` that ``qkv_bias=True`` adds (none by default)."""
    b, n, c = x.shape
    heads = gating.shape[0]
    d = c // heads
    qk_b = torch.zeros(2 * c) if qk_b is None else qk_b
    v_b = torch.zeros(c) if v_b is None else v_b
    qk = (x @ qk_w.T + qk_b).reshape(b, n, 2, heads, d).permute(2, 0, 3, 1, 4)
    q, k = qk[0], qk[1]
    pos_score = (convit_rel_indices(math.isqrt(n)) @ pos_w.T + pos_b).permute(2, 0, 1)[None]  # (1, N_h, N, N)
    patch = torch.softmax(q @ k.transpose(-2, -1) * d**-0.5, dim=-1)
    gate = torch.sigmoid(gating).view(1, -1, 1, 1)
    attn = (1 - gate) * patch + gate * torch.softmax(pos_score, dim=-1)
    attn = attn / attn.sum(dim=-1, keepdim=True)
    v = (x @ v_w.T + v_b).reshape(b, n, heads, d).permute(0, 2, 1, 3)
    return (attn @ v).transpose(1, 2).reshape(b, n, c) @ proj_w.T + proj_b


@pytest.mark.parametrize("num_heads", [1, 4, 9, 16, 25])
def test_convit_row_local_init_is_timms_for_every_square_head_count(num_heads):
    """Head p = h₁ + K h₂ at (h₁ − c, h₂ − c), c = (K − 1)/2, α = locality_strength: timm's pos_proj exactly."""
    theirs = convit_local_init_weight(num_heads, 0.7)
    ours = QuadraticEncoding.local_init(num_heads, 0.7).double().positional_query()  # (‖δ‖², δ_row, δ_col)
    _close(ours, theirs[:, [2, 1, 0]])


def test_convit_row_from_kernel_is_not_convits_init_for_even_k():
    """The wrong rule: from_kernel centres at a − (K − 1)//2 (a convolution's "same" padding); ConViT's 4 and 16 heads
    are centred at a − (K − 1)/2. For odd K the two agree up to the order of the heads (transpose the K × K grid)."""
    for k in (2, 4):
        ours = QuadraticEncoding.from_kernel(k, alpha=1.0).double().positional_query()
        theirs = convit_local_init_weight(k * k, 1.0)[:, [2, 1, 0]]
        order = torch.arange(k * k).view(k, k).T.reshape(-1)  # ConViT head h₁ + K h₂ is our head h₁ K + h₂
        _differs(ours[order], theirs, by=0.5)
    ours = QuadraticEncoding.from_kernel(3, alpha=1.0).double().positional_query()
    theirs = convit_local_init_weight(9, 1.0)[:, [2, 1, 0]]
    _close(ours[torch.arange(9).view(3, 3).T.reshape(-1)], theirs)
    _differs(ours, theirs, by=0.5)  # without the transpose


@pytest.mark.parametrize("qkv_bias", [False, True])
@pytest.mark.parametrize("num_heads", [4, 9])
def test_convit_row_gated_gpsa_equals_timms_forward(num_heads, qkv_bias, float64_default):
    """With ``qkv_bias``: ``q_proj.bias`` / ``k_proj.bias`` = first / last C entries of ``qk.bias``, ``v_proj.bias`` =
    ``v.bias``."""
    torch.manual_seed(3)
    c, side = 2 * num_heads, 4
    x = _randn(2, side * side, c)
    qk_w, v_w, proj_w, proj_b = _randn(2 * c, c, scale=0.4), _randn(c, c, scale=0.4), _randn(c, c), _randn(c)
    pos_w = convit_local_init_weight(num_heads, 1.3) + 0.1 * _randn(num_heads, 3)
    pos_b, gating = _randn(num_heads), _randn(num_heads)
    qk_b, v_b = (_randn(2 * c), _randn(c)) if qkv_bias else (None, None)
    theirs = gpsa_reference(x, qk_w, v_w, proj_w, proj_b, pos_w, pos_b, gating, qk_b, v_b)

    def layer_for(feature_order, biases=(qk_b, v_b)):
        layer = GatedPositionalSelfAttention(c, num_heads, QuadraticEncoding.from_positional_query(pos_w[:, feature_order]),
                                             qkv_bias=qkv_bias)
        for param, value in ((layer.q_proj.weight, qk_w[:c]), (layer.k_proj.weight, qk_w[c:]),
                             (layer.v_proj.weight, v_w), (layer.out_proj.weight, proj_w),
                             (layer.out_proj.bias, proj_b), (layer.gating, gating)):
            _copy(param, value)
        if qkv_bias:
            for param, value in ((layer.q_proj.bias, biases[0][:c]), (layer.k_proj.bias, biases[0][c:]),
                                 (layer.v_proj.bias, biases[1])):
                _copy(param, value)
        return layer

    ours = layer_for([2, 1, 0])(x.view(2, side, side, c))[0].view(2, side * side, c)
    _close(ours, theirs)
    literal = layer_for([2, 0, 1])(x.view(2, side, side, c))[0].view(2, side * side, c)  # their δ_col taken as our δ_row
    _differs(literal, theirs)
    if qkv_bias:  # the query and key halves of qk.bias swapped
        swapped = layer_for([2, 1, 0], (qk_b.roll(c), v_b))(x.view(2, side, side, c))[0].view(2, side * side, c)
        _differs(swapped, theirs)


def test_convit_row_gpsa_local_init_matches_timms_local_init(float64_default):
    torch.manual_seed(4)
    layer = GatedPositionalSelfAttention(8, 4, locality_strength=2.0)
    with torch.no_grad():
        layer.v_proj.weight.normal_()
    layer.local_init(locality_strength=2.0)
    _close(layer.v_proj.weight, torch.eye(8))
    _close(layer.positional.positional_query(), convit_local_init_weight(4, 2.0)[:, [2, 1, 0]])
    x = _randn(2, 16, 8)
    theirs = gpsa_reference(x, torch.cat([layer.q_proj.weight, layer.k_proj.weight]).detach(), torch.eye(8),
                            layer.out_proj.weight.detach(), layer.out_proj.bias.detach(),
                            convit_local_init_weight(4, 2.0), torch.zeros(4), torch.ones(4))
    _close(layer(x.view(2, 4, 4, 8))[0].view(2, 16, 8), theirs)


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


def fairseq_dynamic_tbc(x, lin_w, lin_b, conv_bias, kernel_size, padding_l, renorm_padding):
    """DynamicConv1dTBC._forward_expanded with weight_softmax=True; the input is already zero on padding (fairseq's
    encoder layer masks it before the convolution), and the layer itself takes no mask. Its softmax is over all K
    taps; a causal kernel longer than the sequence is cut to its last T taps after it (the band's columns)."""
    t, b, c = x.shape
    heads = lin_w.shape[0] // kernel_size
    w = (x @ lin_w.T + lin_b).reshape(t * b * heads, kernel_size)
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


def _padding_mask(n=11):
    mask = torch.zeros(2, n, dtype=torch.bool)
    mask[1, 7:] = True
    return mask


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


# ====================================================================== Chang et al.: BertSelfAttention


def _chang_projection(hidden, p, name, spec):
    """Chang et al.'s query/key/value projection: linear, or a convolution (grouped, or depthwise + act + pointwise),
    optionally on half of the channels with a linear map for the rest ("mixed")."""
    if spec is None:
        return hidden @ p[name].T + p[name + "_b"]
    out = F.conv1d(hidden.transpose(1, 2), p[name + "_conv"], p[name + "_conv_b"], padding=spec["radius"],
                   groups=spec["groups"]).transpose(1, 2)
    if spec.get("depth"):
        if spec.get("act", True):
            out = F.gelu(out)
        out = out @ p[name + "_pointwise"].T + p[name + "_pointwise_b"]
    if spec.get("mixed"):
        out = torch.cat([out, hidden @ p[name + "_linear"].T + p[name + "_linear_b"]], dim=-1)
    return out


def chang_reference(hidden, p, heads, radius, mask=None, use_qk=True, convfixed=False, convq=False, convk=False,
                    convolution=False, qk=None, value=None):
    """BertSelfAttention of Chang et al.'s code: the context layer (before BertSelfOutput), for N = max length."""
    b, n, c = hidden.shape
    if mask is not None and (qk is not None or value is not None):
        hidden = hidden.masked_fill(mask[..., None], 0.0)
    q_all = _chang_projection(hidden, p, "query", qk)
    k_all = _chang_projection(hidden, p, "key", qk)
    v_all = _chang_projection(hidden, p, "value", value)
    d = q_all.shape[-1] // heads

    def split(t):
        return t.view(b, n, heads, d).permute(0, 2, 1, 3)

    q, k, v = split(q_all), split(k_all), split(v_all)
    scores = q @ k.transpose(-1, -2) / math.sqrt(d) if use_qk else torch.zeros(b, heads, n, n, dtype=D)
    pos = torch.arange(n)
    rel = (pos[None, :] - pos[:, None]).clamp(-radius, radius) + radius  # [query, key]: clip(key - query) + k
    index = rel.expand(b, heads, n, n)
    query_weights = torch.zeros(b, heads, n, 2 * radius + 1, dtype=D)
    if convfixed:
        query_weights = query_weights + p["convfixed"]  # (1, N_h, 1, 2k+1)
    if convq:
        query_weights = query_weights + torch.einsum("dr,bhsd->bhsr", p["convq"], q) / math.sqrt(d)
    if convfixed or convq:
        scores = scores + torch.gather(query_weights, 3, index)
    if convk:
        key_weights = torch.einsum("dr,bhsd->bhsr", p["convk"], k) / math.sqrt(d)
        scores = scores + torch.gather(key_weights, 3, index).permute(0, 1, 3, 2)
    if mask is not None:
        scores = scores + (-10000.0 * mask.to(D))[:, None, None, :]
    context = torch.softmax(scores, dim=-1) @ v
    if convolution:
        values = v_all if mask is None else v_all.masked_fill(mask[..., None], 0.0)
        conv = F.conv1d(values.transpose(1, 2), p["convolution"], p["convolution_b"], padding=radius,
                        groups=c).transpose(1, 2)
        context = context + split(conv) * p["convolution_scalar"]
    return context.permute(0, 2, 1, 3).reshape(b, n, heads * d)


def _chang_params(c, heads, radius, qk=None, value=None, seed=8):
    torch.manual_seed(seed)
    inner = c  # all_head_size = hidden_size
    d = inner // heads
    p = {"convfixed": _randn(1, heads, 1, 2 * radius + 1), "convq": _randn(d, 2 * radius + 1),
         "convk": _randn(d, 2 * radius + 1), "convolution": _randn(inner, 1, 2 * radius + 1, scale=0.5),
         "convolution_b": _randn(inner), "convolution_scalar": 1 + 0.5 * _randn(1, heads, 1, 1)}
    for name, spec in (("query", qk), ("key", qk), ("value", value)):
        p[name], p[name + "_b"] = _randn(inner, c, scale=0.4), _randn(inner)
        if spec is None:
            continue
        out = inner // 2 if spec.get("mixed") else inner
        conv_out = inner if spec.get("depth") else out
        p[name + "_conv"] = _randn(conv_out, c // spec["groups"], 2 * spec["radius"] + 1, scale=0.4)
        p[name + "_conv_b"] = _randn(conv_out)
        p[name + "_pointwise"], p[name + "_pointwise_b"] = _randn(out, conv_out, scale=0.4), _randn(out)
        p[name + "_linear"], p[name + "_linear_b"] = _randn(inner - out, c, scale=0.4), _randn(inner - out)
    return p


def _ours_from_chang(layer: CompositeAttention, p, qk=None, value=None):
    """Copy Chang et al.'s weights into a CompositeAttention whose out_proj is the identity (to compare contexts)."""
    for name, spec in (("query", qk), ("key", qk), ("value", value)):
        proj = getattr(layer, name[0] + "_proj")
        if proj is None:
            continue
        if spec is None:
            _copy(proj.weight, p[name])
            _copy(proj.bias, p[name + "_b"])
            continue
        conv = proj.conv if isinstance(proj, MixedProjection) else proj
        if isinstance(conv, GroupedConv1d):
            _copy(conv.conv.weight, p[name + "_conv"])
            _copy(conv.conv.bias, p[name + "_conv_b"])
        else:
            assert isinstance(conv, DepthwiseSeparableConv1d)
            _copy(conv.depthwise.weight, p[name + "_conv"])
            _copy(conv.depthwise.bias, p[name + "_conv_b"])
            _copy(conv.pointwise.weight, p[name + "_pointwise"])
            _copy(conv.pointwise.bias, p[name + "_pointwise_b"])
        if isinstance(proj, MixedProjection):
            _copy(proj.linear.weight, p[name + "_linear"])
            _copy(proj.linear.bias, p[name + "_linear_b"])
    if layer.fixed_term is not None:
        _copy(layer.fixed_term.weight, p["convfixed"][0, :, 0, :])
    if layer.query_term is not None:
        _copy(layer.query_term.embedding, p["convq"].T)
    if layer.key_term is not None:
        _copy(layer.key_term.embedding, p["convk"].T.flip(0))
    if layer.value_conv is not None:
        _copy(layer.value_conv.weight, p["convolution"])
        if layer.value_conv.bias is not None:
            _copy(layer.value_conv.bias, p["convolution_b"])
        if layer.value_conv_scale.dim() == 1:
            _copy(layer.value_conv_scale, p["convolution_scalar"].view(-1))
    _copy(layer.out_proj.weight, torch.eye(layer.out_proj.weight.shape[0], dtype=D))
    _copy(layer.out_proj.bias, torch.zeros_like(layer.out_proj.bias))
    return layer


def _unpadded(ours, theirs, mask):
    return (ours, theirs) if mask is None else (ours[~mask], theirs[~mask])


@pytest.mark.parametrize("masked", [False, True])
def test_chang_relative_terms_row_fixed_query_and_key(masked):
    """convfixed: weight = convfixed_param[0, :, 0]; convq: embedding = convq_param.T; convk: embedding =
    convk_param.T.flip(0). With D_h = 2k+1 = 5 the literal rules copy without error, and differ."""
    heads, c, radius, n = 2, 10, 2, 12
    p = _chang_params(c, heads, radius)
    mask = _padding_mask(n) if masked else None
    x = _randn(2, n, c, seed=9)
    theirs = chang_reference(x, p, heads, radius, mask, convfixed=True, convq=True, convk=True)
    layer = CompositeAttention(c, heads, radius, n, fixed=True, query_dynamic=True, key_dynamic=True).to(D)
    ours = _ours_from_chang(layer, p)
    _close(*_unpadded(ours(x, key_padding_mask=mask)[0], theirs, mask))
    for wrong in (p["convk"].flip(0), p["convk"].T):  # the transpose or the flip left out
        _copy(layer.key_term.embedding, wrong)
        _differs(*_unpadded(layer(x, key_padding_mask=mask)[0], theirs, mask))
    _copy(layer.key_term.embedding, p["convk"].T.flip(0))
    _copy(layer.query_term.embedding, p["convq"].T.flip(0))  # the key's flip applied to the query term
    _differs(*_unpadded(layer(x, key_padding_mask=mask)[0], theirs, mask))


@pytest.mark.parametrize("scaled", [False, True])
@pytest.mark.parametrize("masked", [False, True])
def test_chang_convolution_branch_row_bias_and_per_head_scalar(scaled, masked):
    """``convolution``: a biased depthwise Conv1d of the values times a per-head scalar that starts at 1 (trained only
    in ``convolution_scaled``): value_conv_bias=True and value_conv_scale "fixed" / "per_head"."""
    heads, c, radius, n = 2, 8, 2, 12
    p = _chang_params(c, heads, radius)
    if not scaled:
        p["convolution_scalar"] = torch.ones(1, heads, 1, 1, dtype=D)
    mask = _padding_mask(n) if masked else None
    x = _randn(2, n, c, seed=10)
    theirs = chang_reference(x, p, heads, radius, mask, convfixed=True, convolution=True)
    scale = "per_head" if scaled else "fixed"
    layer = CompositeAttention(c, heads, radius, n, value_conv=True, value_conv_kernel_size=2 * radius + 1,
                               value_conv_bias=True, value_conv_scale=scale).to(D)
    assert layer.value_conv_scale.requires_grad == scaled
    assert torch.equal(layer.value_conv_scale, torch.ones(heads, dtype=D))
    ours = _ours_from_chang(layer, p)
    _close(*_unpadded(ours(x, key_padding_mask=mask)[0], theirs, mask))
    no_bias = CompositeAttention(c, heads, radius, n, value_conv=True, value_conv_kernel_size=2 * radius + 1,
                                 value_conv_scale=scale).to(D)
    _differs(*_unpadded(_ours_from_chang(no_bias, p)(x, key_padding_mask=mask)[0], theirs, mask))
    zero_start = CompositeAttention(c, heads, radius, n, value_conv=True, value_conv_kernel_size=2 * radius + 1,
                                    value_conv_bias=True).to(D)  # attnconv's default: one γ starting at 0
    _differs(*_unpadded(_ours_from_chang(zero_start, p)(x, key_padding_mask=mask)[0], theirs, mask))


CHANG_PROJECTIONS = {
    "depth-gelu": dict(radius=1, groups=8, depth=True),
    "depth-no_act": dict(radius=1, groups=8, depth=True, act=False),
    "grouped": dict(radius=2, groups=2),
    "depth-mixed": dict(radius=1, groups=8, depth=True, mixed=True),
    "grouped-mixed": dict(radius=1, groups=4, mixed=True),
}


def _composite_for(spec, heads=2, c=8, radius=2, n=12, which=("query", "key"), mixed_split="heads", **kw):
    depth = spec.get("depth", False)
    return CompositeAttention(
        c, heads, radius, n, fixed=True, conv_projections=which, conv_kernel_size=2 * spec["radius"] + 1,
        conv_activation="gelu" if depth and spec.get("act", True) else None,
        conv_groups=None if depth else spec["groups"], mixed_projections=spec.get("mixed", False),
        mixed_split=mixed_split, **kw).to(D)


@pytest.mark.parametrize("name", sorted(CHANG_PROJECTIONS))
@pytest.mark.parametrize("where", ["qk", "value"])
def test_chang_convolutional_projection_rows(name, where):
    """Chang et al.'s qk/value ``convolution[_mixed][_depth][_no_act] radius groups``: depth is a
    DepthwiseSeparableConv1d (GELU unless no_act), otherwise one grouped conv (conv_groups); mixed covers half."""
    spec = CHANG_PROJECTIONS[name]
    qk, value = (spec, None) if where == "qk" else (None, spec)
    p = _chang_params(8, 2, 2, qk=qk, value=value)
    mask = _padding_mask(12)
    x = _randn(2, 12, 8, seed=11)
    theirs = chang_reference(x, p, 2, 2, mask, convfixed=True, qk=qk, value=value)
    layer = _ours_from_chang(_composite_for(spec, which=("query", "key") if where == "qk" else ("value",)), p,
                             qk=qk, value=value)
    _close(*_unpadded(layer(x, key_padding_mask=mask)[0], theirs, mask))
    conv = getattr(layer, "q_proj" if where == "qk" else "v_proj")
    conv = conv.conv if isinstance(conv, MixedProjection) else conv
    weight = conv.conv.weight if isinstance(conv, GroupedConv1d) else conv.depthwise.weight
    _copy(weight, weight.flip(-1))  # the kernel reversed: a cross-correlation read as a convolution
    _differs(*_unpadded(layer(x, key_padding_mask=mask)[0], theirs, mask))


def test_chang_separate_kernel_sizes_for_qk_convolution_and_the_branch():
    """Their qk convolutions take their own radius (here K = 3) while the ``convolution`` branch uses the relative
    terms' k (here K = 5)."""
    spec = dict(radius=1, groups=8, depth=True)
    p = _chang_params(8, 2, 2, qk=spec)
    x = _randn(2, 12, 8, seed=12)
    theirs = chang_reference(x, p, 2, 2, convfixed=True, convolution=True, qk=spec)
    layer = _composite_for(spec, value_conv=True, value_conv_kernel_size=5, value_conv_bias=True,
                           value_conv_scale="per_head")
    assert layer.q_proj.kernel_size == 3 and layer.value_conv.kernel_size == (5,)
    _close(_ours_from_chang(layer, p, qk=spec)(x)[0], theirs)
    per_projection = CompositeAttention(8, 2, 2, 12, conv_projections=("query", "key", "value"),
                                        conv_kernel_size={"query": 3, "key": 3, "value": 7})
    assert (per_projection.q_proj.kernel_size, per_projection.v_proj.kernel_size) == (3, 7)


@pytest.mark.parametrize("spec_name", ["depth-mixed", "grouped-mixed"])
def test_chang_mixed_row_with_odd_heads_splits_channels(spec_name):
    """With N_h = 3 Chang et al.'s code makes the first (N_h D_h) // 2 channels convolutional, half a head:
    mixed_split="channels". The default split between heads (the first N_h // 2 heads) is a different layer."""
    spec = dict(CHANG_PROJECTIONS[spec_name])
    heads, c = 3, 12
    spec["groups"] = c if spec.get("depth") else 2
    p = _chang_params(c, heads, 2, qk=spec)
    x = _randn(2, 12, c, seed=13)
    theirs = chang_reference(x, p, heads, 2, convfixed=True, qk=spec)
    layer = _composite_for(spec, heads=heads, c=c, mixed_split="channels")
    assert layer.q_proj.conv_channels == 6
    _close(_ours_from_chang(layer, p, qk=spec)(x)[0], theirs)
    by_heads = _composite_for(spec, heads=heads, c=c)
    assert by_heads.q_proj.conv_channels == 4
    with pytest.raises(RuntimeError):  # the weights do not even fit: 4 convolutional channels, not 6
        _ours_from_chang(by_heads, p, qk=spec)


# ====================================================================== DeBERTa: position-to-content


def deberta_p2c_reference(keys, rel_query, span, scale_factor=3):
    """DeBERTa's p2c term: key j against the projected relative embedding of clamp(i - j + span, 0, 2 span - 1),
    scaled by 1/√(D_h · scale_factor); ``rel_query``: (N_h, 2 span, D_h), ``keys``: (B, N_h, N, D_h)."""
    n, d = keys.shape[2], keys.shape[3]
    pos = torch.arange(n)
    r_pos = pos[:, None] - pos[None, :]  # query minus key
    p2c_pos = torch.clamp(-r_pos + span, 0, 2 * span - 1)
    att = keys @ (rel_query / math.sqrt(d * scale_factor)).transpose(-1, -2)[None]  # (B, N_h, N, 2 span)
    return torch.gather(att, -1, p2c_pos.expand(keys.shape[0], keys.shape[1], n, n)).transpose(-1, -2)


def test_deberta_row_key_term_is_their_reversed_table_over_root_three():
    torch.manual_seed(14)
    span, d, n = 3, 5, 11
    keys = _randn(2, 1, n, d)
    rel_query = _randn(1, 2 * span, d)
    theirs = deberta_p2c_reference(keys, rel_query, span)
    term = KeyRelativeLogits(1, d, span).to(D)
    rows = torch.clamp(2 * span - torch.arange(2 * span + 1), max=2 * span - 1)  # row t (δ = t - k) <- theirs
    _copy(term.embedding, rel_query[0, rows] / math.sqrt(3))
    _close(term((n,), None, keys), theirs)
    _copy(term.embedding, rel_query[0, rows])  # without the 1/√3
    _differs(term((n,), None, keys), theirs)
