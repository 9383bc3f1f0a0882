"""The conventions table (book/conventions_table.md): Cordonnier et al.'s Gaussian and learned 2-D relative rows.

Each test re-implements the reference layer's forward pass from its published code (GaussianSelfAttention and
Learned2DRelativeSelfAttention), copies random weights into the attnconv module with the mapping the table states,
and checks that the outputs agree in float64; the plausible wrong mapping (the one the table warns about) gives a
different output.
"""

from __future__ import annotations

import math

import pytest
import torch

from attnconv.attention import MultiHeadSelfAttention
from attnconv.positional import (AnisotropicGaussianEncoding, LearnedRelativeEncoding2d, QuadraticEncoding,
                                 SignedQuadraticEncoding, positional_query)

from .reference_helpers import D, _close, _copy, _differs, _randn


@pytest.fixture(autouse=True)
def _float64(float64_default):
    """Every module is built in float64, so that copied weights keep their exact values."""


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


def test_isotropic_gaussian_row_a_zero_spread_is_a_signed_encoding():
    """A spread s = 0 (or one that trained through 0) gives α = s²/2 = 0: a uniform head, which the default
    encoding (α through log α) cannot hold; the positional query -α(1, -2μ) read by a SignedQuadraticEncoding
    can, and so is the whole layer."""
    hidden, centers, value_w, value_b = _gaussian_case(seed=3)
    spreads = torch.tensor([0.0, -0.8, 1.2], dtype=D)  # the sign of s cancels in s²
    theirs = gaussian_reference(hidden, centers, spreads, value_w, value_b)
    with pytest.raises(ValueError, match="alpha must be finite and > 0"):
        QuadraticEncoding(3, centers=centers, alpha=spreads**2 / 2)
    encoding = SignedQuadraticEncoding(positional_query(centers, spreads**2 / 2))
    _close(_paper_layer(encoding, 4, 3, value_w, value_b)(hidden)[0], theirs)
    probs = _paper_layer(encoding, 4, 3, value_w, value_b)(hidden, need_weights=True)[1]
    _close(probs[0, 0], torch.full((20, 20), 1 / 20, dtype=D))  # head 0 attends uniformly
    wrong = SignedQuadraticEncoding(positional_query(centers, spreads.abs()))  # α = |s|: the square forgotten
    _differs(_paper_layer(wrong, 4, 3, value_w, value_b)(hidden)[0], theirs)
