"""Lemma (convolution as shifted linear maps): conv_as_shifts equals torch's conv1d/conv2d."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from attnconv import conv1d_as_shifts, conv2d_as_shifts, kernel_shifts, shift

f64 = dict(dtype=torch.float64)


def test_shift_moves_content_and_fills_zeros():
    x = torch.arange(1.0, 10.0).reshape(1, 3, 3, 1)
    out = shift(x, (1, -1))  # out[q] = x[q + (1, -1)]
    expected = torch.tensor([[0.0, 4.0, 5.0], [0.0, 7.0, 8.0], [0.0, 0.0, 0.0]])
    assert torch.equal(out[0, :, :, 0], expected)
    assert torch.equal(shift(x, (0, 0)), x)
    assert torch.equal(shift(x, (3, 0)), torch.zeros_like(x))


def test_shift_1d():
    x = torch.tensor([[[1.0], [2.0], [3.0], [4.0]]])
    assert shift(x, 2)[0, :, 0].tolist() == [3.0, 4.0, 0.0, 0.0]
    assert shift(x, -1)[0, :, 0].tolist() == [0.0, 1.0, 2.0, 3.0]


def test_kernel_shifts_centred_grid():
    shifts = [d for _, d in kernel_shifts((3, 3), (1, 1), (1, 1))]
    assert shifts == [(a, b) for a in (-1, 0, 1) for b in (-1, 0, 1)]
    assert [d for _, d in kernel_shifts((2,), (3,), (0,))] == [(0,), (3,)]


@settings(max_examples=60, deadline=None)
@given(
    c_in=st.integers(1, 4), c_out=st.integers(1, 4),
    k1=st.integers(1, 5), k2=st.integers(1, 5),
    p1=st.integers(0, 4), p2=st.integers(0, 4),
    d1=st.integers(1, 3), d2=st.integers(1, 3),
    s1=st.integers(1, 3), s2=st.integers(1, 3),
    h=st.integers(1, 9), w=st.integers(1, 9),
    bias=st.booleans(), seed=st.integers(0, 2**16),
)
def test_conv2d_as_shifts_matches_torch(c_in, c_out, k1, k2, p1, p2, d1, d2, s1, s2, h, w, bias, seed):
    if h + 2 * p1 < d1 * (k1 - 1) + 1 or w + 2 * p2 < d2 * (k2 - 1) + 1:
        return  # the kernel does not fit: covered by test_conv_kernel_too_large
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(2, h, w, c_in, generator=g, **f64)
    weight = torch.randn(c_out, c_in, k1, k2, generator=g, **f64)
    b = torch.randn(c_out, generator=g, **f64) if bias else None
    ref = F.conv2d(x.permute(0, 3, 1, 2), weight, b, (s1, s2), (p1, p2), (d1, d2)).permute(0, 2, 3, 1)
    out = conv2d_as_shifts(x, weight, b, (s1, s2), (p1, p2), (d1, d2))
    torch.testing.assert_close(out, ref, rtol=0, atol=1e-12)


@settings(max_examples=60, deadline=None)
@given(
    c_in=st.integers(1, 5), c_out=st.integers(1, 5), k=st.integers(1, 7), p=st.integers(0, 6),
    d=st.integers(1, 4), s=st.integers(1, 3), length=st.integers(1, 30), seed=st.integers(0, 2**16),
)
def test_conv1d_as_shifts_matches_torch(c_in, c_out, k, p, d, s, length, seed):
    if length + 2 * p < d * (k - 1) + 1:
        return
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(3, length, c_in, generator=g, **f64)
    weight = torch.randn(c_out, c_in, k, generator=g, **f64)
    b = torch.randn(c_out, generator=g, **f64)
    ref = F.conv1d(x.transpose(1, 2), weight, b, s, p, d).transpose(1, 2)
    torch.testing.assert_close(conv1d_as_shifts(x, weight, b, s, p, d), ref, rtol=0, atol=1e-12)


def test_matches_nn_conv2d_module_float32():
    conv = torch.nn.Conv2d(3, 16, kernel_size=3, padding=1)
    x = torch.randn(4, 32, 32, 3)
    ref = conv(x.permute(0, 3, 1, 2)).permute(0, 2, 3, 1)
    torch.testing.assert_close(conv2d_as_shifts(x, conv.weight, conv.bias, padding=1), ref, rtol=1e-5, atol=1e-5)


def test_gradients_flow_to_weight_and_input():
    x = torch.randn(1, 5, 5, 2, requires_grad=True, **f64)
    w = torch.randn(3, 2, 3, 3, requires_grad=True, **f64)
    conv2d_as_shifts(x, w, padding=1).sum().backward()
    xr, wr = x.detach().clone().requires_grad_(), w.detach().clone().requires_grad_()
    F.conv2d(xr.permute(0, 3, 1, 2), wr, padding=1).sum().backward()
    torch.testing.assert_close(x.grad, xr.grad, rtol=0, atol=1e-12)
    torch.testing.assert_close(w.grad, wr.grad, rtol=0, atol=1e-12)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(x=torch.randn(1, 4, 4), weight=torch.randn(2, 3, 3, 3)), "x must be"),
        (dict(x=torch.randn(1, 4, 4, 2), weight=torch.randn(2, 3, 3, 3)), "C_in=3"),
        (dict(x=torch.randn(1, 4, 4, 3), weight=torch.randn(2, 3, 3, 3), bias=torch.randn(3)), "bias must"),
        (dict(x=torch.randn(1, 4, 4, 3), weight=torch.randn(2, 3, 3, 3), padding=-1), "padding must be >= 0"),
        (dict(x=torch.randn(1, 4, 4, 3), weight=torch.randn(2, 3, 3, 3), stride=0), "stride must be >= 1"),
        (dict(x=torch.randn(1, 4, 4, 3), weight=torch.randn(2, 3, 3, 3), dilation=(1, 2, 3)), "dilation must"),
        (dict(x=torch.randn(1, 4, 4, 3), weight=torch.randn(2, 3, 3)), "weight must be"),
    ],
)
def test_conv2d_bad_input(kwargs, message):
    with pytest.raises(ValueError, match=message):
        conv2d_as_shifts(**kwargs)


def test_conv_kernel_too_large():
    with pytest.raises(ValueError, match="larger than the padded input"):
        conv2d_as_shifts(torch.randn(1, 3, 3, 1), torch.randn(1, 1, 5, 5))


def test_shift_bad_input():
    with pytest.raises(ValueError, match="delta must be"):
        shift(torch.randn(1, 3, 3, 1), (1.5, 0))
    with pytest.raises(ValueError, match="at least 3 dims"):
        shift(torch.randn(3), (1, 0))
