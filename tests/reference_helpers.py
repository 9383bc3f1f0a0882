"""Shared pieces of the conventions tests (``tests/test_conventions_*.py``): float64 tensors, weight copies, the
agreement and disagreement checks, a padding mask."""

from __future__ import annotations

import torch

D = torch.float64


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


def _padding_mask(n=11):
    mask = torch.zeros(2, n, dtype=torch.bool)
    mask[1, 7:] = True
    return mask
