"""The conventions table (book/conventions_table.md): Chang et al.'s relative terms and ``convolution`` branch,
and DeBERTa's position-to-content term.

The references (``tests/chang_reference.py``, and DeBERTa's term here) are written out from the published code;
the weights are copied by the table's rule and the outputs agree in float64, while the plausible wrong rule differs.
"""

from __future__ import annotations

import math

import pytest
import torch

from attnconv.composite import CompositeAttention
from attnconv.positional import KeyRelativeLogits

from .chang_reference import _chang_params, _ours_from_chang, _unpadded, chang_reference
from .reference_helpers import D, _close, _copy, _differs, _padding_mask, _randn


@pytest.fixture(autouse=True)
def _float64(float64_default):
    """Every module is built in float64, so that copied weights keep their exact values."""


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
