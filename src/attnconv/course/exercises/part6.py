"""Checks for Part VI: chapter 08 (after the papers: patch tokens, state-space models, Toeplitz multipliers)."""

from __future__ import annotations

import numpy as np
import torch

from ...construct.patches import patch_heads
from ...ssm import ssm_kernel
from ...toeplitz import ToeplitzMultiplier
from .core import CheckResult, as_array, as_whole_number, close, describe, register

CH08 = "08_after_the_papers"

_KERNEL = (0.1, 0.6, 0.3)  # y_i = 0.1 x_(i-1) + 0.6 x_i + 0.3 x_(i+1)
_LENGTH = 8


@register("ex-08-patch-heads", CH08, "code", 5, ("heads_p2", "heads_p4"), parts=(("P = 2", 1), ("P = 4", 1)))
def patch_heads_check(heads_p2, heads_p4) -> list[CheckResult]:
    """The heads of the patch construction for a 7 x 7 convolution on 2 x 2 and on 4 x 4 patches."""
    out = []
    for name, value, p in (("P = 2", heads_p2, 2), ("P = 4", heads_p4, 4)):
        n = as_whole_number(value)
        want = patch_heads(7, p)
        if n is None:
            out.append(CheckResult(False, f"expected a whole number of heads, received {describe(value)}", name))
        elif n == want:
            out.append(CheckResult(True, f"{n} heads: every patch the kernel reaches, one head each", name))
        else:
            out.append(CheckResult(False, f"received {n} heads; count the patches within reach of every pixel of a "
                                          f"patch, along each axis, then square", name))
    return out


@register("ex-08-decay-steps", CH08, "code", 5, ("steps",))
def decay_steps(steps) -> CheckResult:
    """The first lag k at which the kernel c a^k b of an SSM with a = 0.9 falls below 1% of its first tap."""
    n = as_whole_number(steps)
    kernel = ssm_kernel(0.9, 1.0, 1.0, 200)
    want = int((kernel < 0.01).nonzero()[0])
    if n is None:
        return CheckResult(False, f"expected a whole number of steps, received {describe(steps)}")
    if n == want:
        return CheckResult(True, f"the kernel first falls below 1% at lag {n}")
    side = "the kernel is still at or above 1% there" if n < want else "the kernel was already below 1% earlier"
    return CheckResult(False, f"received lag {n}: {side}")


@register("ex-08-toeplitz-conv", CH08, "code", 10, ("weights",))
def toeplitz_conv(weights) -> CheckResult:
    """Weights of a ``ToeplitzMultiplier(8)`` such that uniform attention times C is the 3-tap convolution
    y_i = 0.1 x_(i-1) + 0.6 x_i + 0.3 x_(i+1) (zero padded) on 8 tokens."""
    w = as_array(weights)
    size = 2 * _LENGTH - 1
    if w is None or w.shape != (size,) or not np.all(np.isfinite(w)):
        return CheckResult(False, f"expected {size} finite numbers (offsets -7 .. 7), received {describe(weights)}")
    module = ToeplitzMultiplier(_LENGTH).double()
    with torch.no_grad():
        module.weight.copy_(torch.as_tensor(w, dtype=torch.float64)[None])
    uniform = torch.full((1, 1, _LENGTH, _LENGTH), 1.0 / _LENGTH, dtype=torch.float64)
    got = module(uniform)[0, 0]
    want = torch.zeros(_LENGTH, _LENGTH, dtype=torch.float64)
    for i in range(_LENGTH):
        for delta, value in zip((-1, 0, 1), _KERNEL):
            if 0 <= i + delta < _LENGTH:
                want[i, i + delta] = value
    ok, err, tol = close(got.numpy().astype(w.dtype if w.dtype.kind == "f" else np.float64), want.numpy())
    if ok:
        return CheckResult(True, "uniform attention times your Toeplitz matrix is the convolution")
    if close(got.numpy(), want.T.numpy())[0]:  # the kernel read backwards
        return CheckResult(False, "your matrix is the convolution's transpose: the kernel is read at i - j, not j - i")
    return CheckResult(False, f"uniform attention times your matrix differs from the convolution's matrix by "
                              f"{err:.1e} (expected within {tol:.0e}); remember the 1/N of uniform attention")


register("ex-08-time-varying", CH08, "conceptual", 10)(None)
