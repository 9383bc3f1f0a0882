"""Theorem 1 as a function: conv_to_mhsa reproduces nn.Conv1d / nn.Conv2d exactly (hard) or within the bound."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from attnconv.bounds import conv_error_bound
from attnconv.construct import conv_to_mhsa

f64 = torch.float64


def rel_error(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a - b).detach().norm() / b.detach().norm().clamp_min(1e-300))


@pytest.mark.parametrize("k", [1, 2, 3, 4, 5, 7])
@pytest.mark.parametrize("dilation", [1, 2, 3])
@pytest.mark.parametrize("stride", [1, 2])
def test_hard_mode_matches_conv2d(k, dilation, stride):
    torch.manual_seed(k * 100 + dilation * 10 + stride)
    padding = dilation * (k - 1) // 2
    conv = torch.nn.Conv2d(3, 5, k, stride=stride, padding=padding, dilation=dilation, dtype=f64)
    x = torch.randn(2, 3, 15, 17, dtype=f64)
    assert rel_error(conv_to_mhsa(conv)(x), conv(x)) <= 1e-12


@settings(max_examples=40, deadline=None)
@given(
    c_in=st.integers(1, 4), c_out=st.integers(1, 4), k1=st.integers(1, 5), k2=st.integers(1, 5),
    d1=st.integers(1, 3), d2=st.integers(1, 3), s1=st.integers(1, 2), s2=st.integers(1, 2),
    p1=st.integers(0, 5), p2=st.integers(0, 5), h=st.integers(1, 10), w=st.integers(1, 10),
    bias=st.booleans(), seed=st.integers(0, 2**16),
)
def test_hard_mode_property_2d(c_in, c_out, k1, k2, d1, d2, s1, s2, p1, p2, h, w, bias, seed):
    if h + 2 * p1 < d1 * (k1 - 1) + 1 or w + 2 * p2 < d2 * (k2 - 1) + 1:
        return
    torch.manual_seed(seed)
    conv = torch.nn.Conv2d(c_in, c_out, (k1, k2), (s1, s2), (p1, p2), (d1, d2), bias=bias, dtype=f64)
    x = torch.randn(2, c_in, h, w, dtype=f64)
    out = conv_to_mhsa(conv)(x)
    assert out.shape == conv(x).shape
    assert rel_error(out, conv(x)) <= 1e-12


@settings(max_examples=30, deadline=None)
@given(c_in=st.integers(1, 4), c_out=st.integers(1, 4), k=st.integers(1, 7), d=st.integers(1, 3),
       s=st.integers(1, 2), p=st.integers(0, 6), length=st.integers(1, 25), seed=st.integers(0, 2**16))
def test_hard_mode_property_1d(c_in, c_out, k, d, s, p, length, seed):
    if length + 2 * p < d * (k - 1) + 1:
        return
    torch.manual_seed(seed)
    conv = torch.nn.Conv1d(c_in, c_out, k, s, p, d, dtype=f64)
    x = torch.randn(3, c_in, length, dtype=f64)
    assert rel_error(conv_to_mhsa(conv)(x), conv(x)) <= 1e-12


def test_heads_are_one_hot_and_centres_are_the_kernel_grid():
    conv = torch.nn.Conv2d(2, 3, 3, padding=1, dtype=f64)
    layer = conv_to_mhsa(conv)
    assert layer.attention.num_heads == 9
    assert sorted(map(tuple, layer.centers.long().tolist())) == [(a, b) for a in (-1, 0, 1) for b in (-1, 0, 1)]
    _, probs = layer(torch.randn(1, 2, 6, 6, dtype=f64), need_weights=True)
    inner = probs.reshape(1, 9, 8, 8, 64)[:, :, 1:7, 1:7]  # queries of the output window on the padded grid
    assert torch.all((inner == 0) | (inner == 1)) and torch.all(inner.sum(-1) == 1)


@pytest.mark.parametrize("alpha", [0.5, 1.0, 2.0, 4.0, 8.0, 16.0])
def test_finite_alpha_error_is_under_the_bound(alpha):
    torch.manual_seed(0)
    conv = torch.nn.Conv2d(3, 4, 3, padding=1, dtype=f64)
    x = torch.randn(2, 3, 12, 12, dtype=f64)
    err = (conv_to_mhsa(conv, alpha=alpha)(x) - conv(x)).flatten(2).norm(dim=1).amax(-1)  # max_q ‖·‖_2
    bound = conv_error_bound(conv, x, alpha)
    assert torch.all(err <= bound + 1e-12), (err, bound)
    assert torch.all(err > 0) if alpha < 8 else True


def test_error_decreases_with_alpha_and_alpha_46_is_hard_in_float32():
    torch.manual_seed(0)
    conv = torch.nn.Conv2d(3, 8, 3, padding=1)
    x = torch.randn(4, 3, 16, 16)
    hard = conv_to_mhsa(conv)(x)
    with torch.no_grad():
        errors = [float((conv_to_mhsa(conv, alpha=a)(x) - conv(x)).abs().max()) for a in (1, 2, 4, 8)]
    assert errors == sorted(errors, reverse=True)
    assert torch.equal(conv_to_mhsa(conv, alpha=46.0)(x), hard)


def test_low_rank_taps_factorise_and_full_rank_raises():
    torch.manual_seed(1)
    conv = torch.nn.Conv2d(4, 6, 3, padding=1, dtype=f64)
    with torch.no_grad():  # make every tap rank 2
        left, right = torch.randn(6, 2, 9, dtype=f64), torch.randn(2, 4, 9, dtype=f64)
        conv.weight.copy_(torch.einsum("oat,ait->oit", left, right).reshape(6, 4, 3, 3))
    x = torch.randn(2, 4, 7, 7, dtype=f64)
    assert rel_error(conv_to_mhsa(conv, head_dim=2)(x), conv(x)) <= 1e-10
    with pytest.raises(ValueError, match=r"W_Δ has rank 2 > head_dim=1"):
        conv_to_mhsa(conv, head_dim=1)


def test_head_dim_between_in_and_out_channels():
    conv = torch.nn.Conv2d(2, 6, 3, padding=1, dtype=f64)
    x = torch.randn(1, 2, 5, 5, dtype=f64)
    assert rel_error(conv_to_mhsa(conv, head_dim=2)(x), conv(x)) <= 1e-12


def test_valid_padding_string_and_no_bias():
    conv = torch.nn.Conv2d(3, 2, (2, 3), padding="valid", bias=False, dtype=f64)
    x = torch.randn(2, 3, 6, 7, dtype=f64)
    assert rel_error(conv_to_mhsa(conv)(x), conv(x)) <= 1e-12


def test_gradients_match_the_convolution():
    conv = torch.nn.Conv2d(2, 3, 3, padding=1, dtype=f64)
    x1 = torch.randn(1, 2, 5, 5, dtype=f64, requires_grad=True)
    x2 = x1.detach().clone().requires_grad_()
    conv_to_mhsa(conv)(x1).pow(2).sum().backward()
    conv(x2).pow(2).sum().backward()
    torch.testing.assert_close(x1.grad, x2.grad, rtol=0, atol=1e-12)


@pytest.mark.parametrize("conv, message", [
    (torch.nn.Conv2d(4, 4, 3, groups=2), "groups=2 is not supported"),
    (torch.nn.Conv2d(2, 2, 3, padding=1, padding_mode="reflect"), "padding_mode='reflect' is not supported"),
    (torch.nn.Conv2d(2, 2, 3, padding="same"), "padding='same' is not supported"),
    (torch.nn.Linear(2, 2), "must be a torch.nn.Conv1d or torch.nn.Conv2d"),
])
def test_unsupported_convolutions(conv, message):
    with pytest.raises(ValueError, match=message):
        conv_to_mhsa(conv)


def test_forward_checks_its_input():
    layer = conv_to_mhsa(torch.nn.Conv2d(3, 2, 3))
    with pytest.raises(ValueError, match=r"C_in=3"):
        layer(torch.randn(1, 4, 8, 8))
    with pytest.raises(ValueError, match="smaller than the kernel"):
        layer(torch.randn(1, 3, 2, 2))
