"""Checks for Part I: chapters 01 (convolution as shifts) and 02 (self-attention from scratch)."""

from __future__ import annotations

import sympy as sp
import torch

from ...attention import MultiHeadSelfAttention
from ...conv import conv2d_as_shifts
from .core import CheckResult, as_array, as_whole_number, close, describe, load_state, register, state_of
from .hidden import generator, plain, seeded

CH01, CH02 = "01_convolution_as_shifts", "02_self_attention"


@register("ex-01-dilated-shifts", CH01, "code", 5, ("dilated",))
def dilated_shifts(dilated) -> CheckResult:
    array = as_array(list(dilated) if isinstance(dilated, (set, frozenset)) else dilated)
    if array is None or array.ndim != 2 or array.shape[1] != 2:
        return CheckResult(False, f"expected 9 shifts (Δ1, Δ2), in any order and any container; received "
                                  f"{describe(dilated)}")
    got = {(as_whole_number(a), as_whole_number(b)) for a, b in array}
    if len(array) != 9:
        return CheckResult(False, f"expected one shift per tap of a 3x3 kernel (9), received {len(array)}")
    if len(got) != 9 or any(None in d for d in got):
        return CheckResult(False, "expected 9 different integer shifts; some of yours repeat or are not whole")
    truth = {(2 * a - 2, 2 * b - 2) for a in range(3) for b in range(3)}
    wrong = sorted(got - truth)
    if wrong:
        return CheckResult(False, f"received {len(wrong)} shift(s) that the kernel does not read, such as "
                                  f"{wrong[0]}; expected Δ = a·d − p for every tap a")
    return CheckResult(True, "the nine shifts of the dilated kernel are right")


def _one_by_one_context(seed: int) -> dict:
    gen = generator(seed)
    with seeded(seed):
        pointwise = torch.nn.Conv2d(3, 4, kernel_size=1, dtype=torch.float64)
    x = torch.rand(2, 5, 7, 3, dtype=torch.float64, generator=gen)  # (B, H, W, C), not the chapter's image
    return {"x": x, "pointwise": pointwise}


@register("ex-01-one-by-one", CH01, "code", 5, ("as_matmul",), given=("x", "pointwise"),
          context=_one_by_one_context, probe=lambda ns: {"as_matmul": ns["as_matmul"]}, needs=("as_matmul",))
def one_by_one(as_matmul, x, pointwise) -> CheckResult:
    expected = conv2d_as_shifts(x, pointwise.weight, pointwise.bias)
    array = as_array(as_matmul)
    if array is None or array.shape != tuple(expected.shape):
        return CheckResult(False, f"expected an array of shape {tuple(expected.shape)} (B, H, W, D_out), received "
                                  f"{describe(as_matmul)}")
    ok, err, tol = close(array, expected)
    if ok:
        return CheckResult(True, "a 1x1 convolution is one matrix applied to every pixel")
    if close(array, expected - pointwise.bias)[0]:
        return CheckResult(False, "your product matches the convolution without its bias: add the bias")
    return CheckResult(False, f"received values that differ from the 1x1 convolution by up to {err:.2e} "
                              f"(expected within {tol:.0e} for {array.dtype})")


@register("ex-01-shift-adjoint", CH01, "code", 10, ("lost",))
def shift_adjoint(lost) -> CheckResult:
    count = as_whole_number(lost)
    if count is None:
        return CheckResult(False, f"expected a whole number of pixels, received {describe(lost)}")
    if count != 32 * 32 - 31 * 30:
        return CheckResult(False, f"received {count} lost pixels, expected the number that the round trip sets to "
                                  "zero; count the rows and columns that leave the frame")
    return CheckResult(True, "the round trip loses exactly the pixels shifted out of the frame")


def _sympy(value, what: str) -> CheckResult | None:
    if not isinstance(value, sp.Basic):
        return CheckResult(False, f"expected a SymPy expression in {what}, received {describe(value)}")
    return None


@register("ex-01-sympy-lemma", CH01, "proof", 10, ("output_2",))
def sympy_lemma(output_2) -> CheckResult:
    if (bad := _sympy(output_2, "x0..x4 and w0..w2")) is not None:
        return bad
    x = sp.symbols("x0:5")
    w = sp.symbols("w0:3")
    direct = sum(w[a] * x[2 + a - 1] for a in range(3))  # padded cross-correlation at q = 2, p = 1
    residual = sp.simplify(plain(output_2) - direct)
    if residual != 0:
        return CheckResult(False, f"received {output_2}; its residual against the convolution's definition is "
                                  f"{residual}, expected 0")
    return CheckResult(True, "residual simplifies to 0: the shifted sum is the convolution at q = 2")


def _uniform_context(seed: int) -> dict:
    with seeded(seed):
        pool = MultiHeadSelfAttention(embed_dim=12, num_heads=1, bias=False).double()
    return {"pool": pool, "tokens": torch.randn(2, 3, 5, 12, dtype=torch.float64, generator=generator(seed + 1))}


def _uniform_probe(ns) -> dict:
    out, probs = ns["pool"](ns["tokens"], need_weights=True)
    return {"state": state_of(ns["pool"]), "out": out}


@register("ex-02-uniform", CH02, "code", 10, ("state", "out"), given=("tokens",), context=_uniform_context,
          probe=_uniform_probe, needs=("pool",), parts=(("uniform", 1), ("pooling", 1)))
def uniform_attention(state, out, tokens) -> list[CheckResult]:
    """The student's weights, loaded into a layer built here, run on hidden tokens: what the layer does decides."""
    layer, why = load_state(MultiHeadSelfAttention(embed_dim=12, num_heads=1, bias=False).double(), state,
                            "the MultiHeadSelfAttention layer pool, with its weights set")
    if layer is None:
        return [CheckResult(False, why, "uniform"), CheckResult(False, why, "pooling")]
    rebuilt, probs = layer(tokens, need_weights=True)
    if not close(out, rebuilt)[0]:
        bad = ("your layer's output on hidden tokens is not what a MultiHeadSelfAttention with its weights "
               f"computes (received {describe(out)})")
        return [CheckResult(False, bad, "uniform"), CheckResult(False, bad, "pooling")]
    n = probs.shape[-1]
    uniform = close(probs, torch.full(probs.shape, 1.0 / n, dtype=torch.float64))[0]
    first = CheckResult(uniform, "every attention weight is 1/N" if uniform else
                        f"expected every attention weight to be 1/N = {1 / n:.5f}; received weights from "
                        f"{float(probs.min()):.5f} to {float(probs.max()):.5f}", "uniform")
    mean = tokens.mean(dim=(1, 2), keepdim=True).expand_as(tokens)
    ok, err, _ = close(rebuilt, mean)
    second = CheckResult(ok, "the output is the mean token: global average pooling" if ok else
                         f"the output differs from the mean token by {err:.2e}: expected identity value and output "
                         "projections", "pooling")
    return [first, second]


@register("ex-02-params", CH02, "code", 5, ("n_attention", "n_conv"), parts=(("attention", 1), ("convolution", 1)),
          written=1)
def parameter_counts(n_attention, n_conv) -> list[CheckResult]:
    truth_attention = sum(p.numel() for p in MultiHeadSelfAttention(64, 8).parameters())
    truth_conv = sum(p.numel() for p in torch.nn.Conv2d(64, 64, 3).parameters())
    results = []
    for part, value, truth, hint in (("attention", n_attention, truth_attention, "count four projections and their "
                                      "biases"), ("convolution", n_conv, truth_conv, "count K² D_in D_out weights "
                                                                                       "and the bias")):
        count = as_whole_number(value)
        if count is None:
            results.append(CheckResult(False, f"expected a whole number, received {describe(value)}", part))
        elif count != truth:
            results.append(CheckResult(False, f"received {count:,} parameters, expected another count; {hint}", part))
        else:
            results.append(CheckResult(True, "right", part))
    return results


register("ex-02-permutation", CH02, "conceptual", 10)(None)


@register("ex-02-scale", CH02, "proof", 10, ("scale",))
def logit_scale(scale) -> CheckResult:
    if (bad := _sympy(scale, "D_h")) is not None:
        return bad
    d_h = sp.Symbol("D_h", positive=True)
    variance = sp.simplify(d_h / plain(scale).subs(sp.Symbol("D_h"), d_h) ** 2)
    if sp.simplify(variance - 1) != 0:
        return CheckResult(False, f"received scale = {scale}; with it the logit's variance is {variance}, "
                                  "expected 1")
    return CheckResult(True, "Var(q·k / scale) simplifies to 1")
