"""Checks for Part I: chapters 01 (convolution as shifts) and 02 (self-attention from scratch)."""

from __future__ import annotations

import sympy as sp
import torch

from ...conv import conv2d_as_shifts
from .core import CheckResult, register

CH01, CH02 = "01_convolution_as_shifts", "02_self_attention"


@register("ex-01-dilated-shifts", CH01, "code", 5, ("dilated",))
def dilated_shifts(dilated) -> CheckResult:
    got = [tuple(int(v) for v in d) for d in dilated]
    if len(got) != 9:
        return CheckResult(False, f"expected one shift per tap of a 3x3 kernel (9), received {len(got)}")
    if len(set(got)) != 9:
        return CheckResult(False, "expected 9 different shifts; some of yours repeat")
    taps = [(i, j) for i in range(3) for j in range(3)]
    for tap, d in zip(taps, got):
        if d != (2 * tap[0] - 2, 2 * tap[1] - 2):
            return CheckResult(False, f"the shift you give for tap {tap} is {d}; recall Δ = a·d − p, in row-major tap order")
    return CheckResult(True, "the nine shifts of the dilated kernel are right")


@register("ex-01-one-by-one", CH01, "code", 5, ("as_matmul", "x", "pointwise"))
def one_by_one(as_matmul, x, pointwise) -> CheckResult:
    expected = conv2d_as_shifts(x, pointwise.weight, pointwise.bias)
    if not isinstance(as_matmul, torch.Tensor) or as_matmul.shape != expected.shape:
        shape = tuple(as_matmul.shape) if isinstance(as_matmul, torch.Tensor) else type(as_matmul).__name__
        return CheckResult(False, f"expected a tensor of shape {tuple(expected.shape)}, received {shape}")
    err = float((as_matmul - expected).abs().max())
    if err > 1e-10:
        return CheckResult(False, f"your product differs from the 1x1 convolution by up to {err:.2e}; is the bias added?")
    return CheckResult(True, "a 1x1 convolution is one matrix applied to every pixel")


@register("ex-01-shift-adjoint", CH01, "code", 10, ("lost",))
def shift_adjoint(lost) -> CheckResult:
    if not isinstance(lost, int):
        return CheckResult(False, f"expected an int count of pixels, received {type(lost).__name__}")
    if lost != 32 * 32 - 31 * 30:
        return CheckResult(False, f"received {lost} lost pixels; count the rows and columns that leave the frame")
    return CheckResult(True, "the round trip loses exactly the pixels shifted out of the frame")


@register("ex-01-sympy-lemma", CH01, "proof", 10, ("output_2",))
def sympy_lemma(output_2) -> CheckResult:
    x = sp.symbols("x0:5")
    w = sp.symbols("w0:3")
    direct = sum(w[a] * x[2 + a - 1] for a in range(3))  # padded cross-correlation at q = 2, p = 1
    try:
        residual = sp.simplify(sp.sympify(output_2) - direct)
    except (TypeError, sp.SympifyError) as err:
        return CheckResult(False, f"expected a SymPy expression in x0..x4 and w0..w2, received {output_2!r} ({err})")
    if residual != 0:
        return CheckResult(False, f"the residual against the convolution's definition is {residual}, not 0")
    return CheckResult(True, "residual simplifies to 0: the shifted sum is the convolution at q = 2")


@register("ex-02-uniform", CH02, "code", 10, ("pool", "tokens"))
def uniform_attention(pool, tokens) -> CheckResult:
    out, probs = pool(tokens, need_weights=True)
    n = probs.shape[-1]
    if not torch.allclose(probs, torch.full_like(probs, 1.0 / n), atol=1e-12):
        return CheckResult(False, f"expected every attention weight to be 1/N = {1 / n:.5f}; received weights from "
                                  f"{float(probs.min()):.5f} to {float(probs.max()):.5f}")
    mean = tokens.mean(dim=(1, 2), keepdim=True).expand_as(tokens)
    err = float((out - mean).abs().max())
    if err > 1e-10:
        return CheckResult(False, f"attention is uniform, but the output differs from the mean token by {err:.2e}: "
                                  "check the value and output projections")
    return CheckResult(True, "uniform attention with identity projections is global average pooling")


@register("ex-02-params", CH02, "code", 5, ("n_attention", "n_conv"))
def parameter_counts(n_attention, n_conv) -> CheckResult:
    if n_attention != 4 * 64 * 64 + 4 * 64:
        return CheckResult(False, f"received {n_attention} attention parameters; count four projections and their biases")
    if n_conv != 9 * 64 * 64 + 64:
        return CheckResult(False, f"received {n_conv} convolution parameters; count K² D_in D_out weights and the bias")
    return CheckResult(True, "both counts are right")


register("ex-02-permutation", CH02, "conceptual", 10)(None)


@register("ex-02-scale", CH02, "proof", 10, ("scale",))
def logit_scale(scale) -> CheckResult:
    d_h = sp.Symbol("D_h", positive=True)
    try:
        variance = sp.simplify(d_h / sp.sympify(scale).subs(sp.Symbol("D_h"), d_h) ** 2)
    except (TypeError, sp.SympifyError, ZeroDivisionError) as err:
        return CheckResult(False, f"expected a SymPy expression in D_h, received {scale!r} ({err})")
    if sp.simplify(variance - 1) != 0:
        return CheckResult(False, f"with your scale the logit's variance is {variance}, not 1")
    return CheckResult(True, "Var(q·k / scale) simplifies to 1")
