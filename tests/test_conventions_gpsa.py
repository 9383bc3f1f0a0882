"""The conventions table (book/conventions_table.md): ConViT's gated positional self-attention, as in timm.

timm's GPSA (``local_init``, ``get_rel_indices`` and the forward pass) is written out from its published code; the
weights are copied into attnconv's GatedPositionalSelfAttention by the table's rule and the outputs agree in
float64, while the plausible wrong rule differs.
"""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from attnconv.gpsa import GatedPositionalSelfAttention
from attnconv.positional import QuadraticEncoding, SignedQuadraticEncoding

from .reference_helpers import D, _close, _copy, _differs, _randn


@pytest.fixture(autouse=True)
def _float64(float64_default):
    """Every module is built in float64, so that copied weights keep their exact values."""


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


def gpsa_reference(x, qk_w, v_w, proj_w, proj_b, pos_w, pos_b, gating, qk_b=None, v_b=None, attn_drop=0.0,
                   proj_drop=0.0, drop_before_proj=False):
    """timm's GPSA forward: gated sum of a content and a positional softmax, renormalised. ``qk_b`` (2C) and ``v_b``
    (C) are the biases of ``qk`` and ``v`` that ``qkv_bias=True`` adds (none by default). In training, ``attn_drop``
    drops the renormalised weights and ``proj_drop`` the output of ``proj`` (``drop_before_proj``: the wrong place,
    its input)."""
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
    attn = F.dropout(attn, attn_drop, training=True)
    v = (x @ v_w.T + v_b).reshape(b, n, heads, d).permute(0, 2, 1, 3)
    merged = (attn @ v).transpose(1, 2).reshape(b, n, c)
    if drop_before_proj:
        return F.dropout(merged, proj_drop, training=True) @ proj_w.T + proj_b
    return F.dropout(merged @ proj_w.T + proj_b, proj_drop, training=True)


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


def _gpsa_case(num_heads=4, seed=15):
    torch.manual_seed(seed)
    c, side = 2 * num_heads, 4
    x = _randn(2, side * side, c)
    weights = dict(qk_w=_randn(2 * c, c, scale=0.4), v_w=_randn(c, c, scale=0.4), proj_w=_randn(c, c),
                   proj_b=_randn(c), pos_b=_randn(num_heads), gating=_randn(num_heads))
    return x, weights


def _gpsa_from_timm(positional, w, **kw):
    c = w["v_w"].shape[0]
    layer = GatedPositionalSelfAttention(c, w["gating"].shape[0], positional, **kw)
    for param, value in ((layer.q_proj.weight, w["qk_w"][:c]), (layer.k_proj.weight, w["qk_w"][c:]),
                         (layer.v_proj.weight, w["v_w"]), (layer.out_proj.weight, w["proj_w"]),
                         (layer.out_proj.bias, w["proj_b"]), (layer.gating, w["gating"])):
        _copy(param, value)
    return layer


def test_convit_row_heads_with_alpha_at_most_zero_are_signed_encodings():
    """A trained pos_proj may have weight[:, 2] = -α ≥ 0 (α ≤ 0: a linear ramp at α = 0, a bowl below): the
    default encoding refuses such heads, ``from_positional_query(..., signed=True)`` holds them exactly."""
    x, w = _gpsa_case()
    pos_w = _randn(4, 3)
    pos_w[:, 2] = torch.tensor([-1.3, 0.0, 0.7, 0.2], dtype=D)  # α = 1.3, 0, -0.7, -0.2
    theirs = gpsa_reference(x, pos_w=pos_w, **w)
    query = pos_w[:, [2, 1, 0]]
    with pytest.raises(ValueError, match="signed=True"):
        QuadraticEncoding.from_positional_query(query)
    signed = QuadraticEncoding.from_positional_query(query, signed=True)
    assert isinstance(signed, SignedQuadraticEncoding)
    _close(signed.alpha, -pos_w[:, 2])
    ours = _gpsa_from_timm(signed, w)(x.view(2, 4, 4, 8))[0].view(2, 16, 8)
    _close(ours, theirs)
    flipped = query.clone()
    flipped[:, 0] = -flipped[:, 0].abs()  # the sign lost (|α| kept): every head a bump again
    wrong = _gpsa_from_timm(SignedQuadraticEncoding(flipped), w)(x.view(2, 4, 4, 8))[0].view(2, 16, 8)
    _differs(wrong, theirs)


@pytest.mark.parametrize("attn_drop", [0.0, 0.25])
def test_convit_row_proj_drop_drops_the_projected_output(attn_drop):
    """timm's ``proj_drop`` is ``proj_drop``, after ``proj``; ``attn_drop`` is ``dropout``. With the same seed the
    dropout masks are the same draws, so the training outputs agree exactly; dropping before ``proj`` differs."""
    x, w = _gpsa_case(num_heads=9, seed=16)
    pos_w = convit_local_init_weight(9, 1.1) + 0.1 * _randn(9, 3)
    layer = _gpsa_from_timm(QuadraticEncoding.from_positional_query(pos_w[:, [2, 1, 0]]), w, dropout=attn_drop,
                            proj_drop=0.3).train()
    grid = x.view(2, 4, 4, 18)
    torch.manual_seed(17)
    ours = layer(grid)[0].view(2, 16, 18)
    for before in (False, True):
        torch.manual_seed(17)
        theirs = gpsa_reference(x, pos_w=pos_w, attn_drop=attn_drop, proj_drop=0.3, drop_before_proj=before, **w)
        if before:
            _differs(ours, theirs)
        else:
            _close(ours, theirs)
            assert (ours == 0).float().mean() > 0.2  # about 30 % of the outputs are dropped
    _close(layer.eval()(grid)[0].view(2, 16, 18), gpsa_reference(x, pos_w=pos_w, **w))  # no dropout in eval
    with pytest.raises(ValueError, match="proj_drop"):
        GatedPositionalSelfAttention(8, 4, proj_drop=1.0)
