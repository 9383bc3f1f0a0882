"""Checks for Part III: chapter 05 (relative positions in language models are convolutions)."""

from __future__ import annotations

import math

import sympy as sp
import torch

from ...lightconv import LightweightConv1d, ProjectedConv1d
from .core import CheckResult, register

CH05 = "05_relative_positions_are_convolutions"


@register("ex-05-clipped-width", CH05, "code", 10, ("equivalent", "clipped"))
def clipped_width(equivalent, clipped) -> CheckResult:
    if not isinstance(equivalent, ProjectedConv1d) or not isinstance(equivalent.conv, LightweightConv1d):
        return CheckResult(False, f"expected the ProjectedConv1d that attention_to_lightconv returns, received "
                                  f"{type(equivalent).__name__}")
    width = equivalent.conv.kernel_size
    if width != 19:
        return CheckResult(False, f"your convolution has {width} taps; it must reach every offset of a 10-token "
                                  "sequence")
    generator = torch.Generator().manual_seed(5)
    for n in (10, 7):
        x = torch.randn(2, n, clipped.embed_dim, generator=generator, dtype=equivalent.conv.weight.dtype)
        err = float((equivalent(x) - clipped(x)[0]).abs().max())
        if err > 1e-10:
            return CheckResult(False, f"on {n} tokens your convolution differs from the attention layer by {err:.1e}")
    return CheckResult(True, "19 taps, constant tails beyond ±k, equal outputs on every length up to 10")


@register("ex-05-alibi-self-weight", CH05, "proof", 15, ("self_weight",))
def alibi_self_weight(self_weight) -> CheckResult:
    try:
        expr = sp.sympify(self_weight)
    except (TypeError, sp.SympifyError) as err:
        return CheckResult(False, f"expected a SymPy expression in m, received {self_weight!r} ({err})")
    names = {s.name for s in expr.free_symbols}
    if names != {"m"}:
        return CheckResult(False, f"expected an expression in the slope m only, received one in {sorted(names)}")
    m = next(iter(expr.free_symbols))
    for value in (0.25, 1.0, 3.0):
        got = complex(expr.subs(m, value).evalf())
        truth = 1.0 / (1.0 + 2.0 * math.exp(-value) / (1.0 - math.exp(-value)))
        if abs(got.imag) > 1e-12 or abs(got.real - truth) > 1e-9:
            return CheckResult(False, f"at m = {value} your expression gives {got.real:.6f}; sum the kernel over "
                                      "every offset of an infinitely long sequence")
    return CheckResult(True, "the self-weight is the closed form of the geometric kernel's centre tap")


@register("ex-05-shaw-rank", CH05, "code", 10, ("shaw", "tokens", "kernel_logits", "rank"))
def shaw_rank(shaw, tokens, kernel_logits, rank) -> CheckResult:
    q, _, _ = shaw.project(tokens)
    truth = shaw.query_term.band(tokens.shape[1], q, None)[0, 0]
    if not isinstance(kernel_logits, torch.Tensor) or kernel_logits.shape != truth.shape:
        shape = tuple(kernel_logits.shape) if isinstance(kernel_logits, torch.Tensor) else type(kernel_logits).__name__
        return CheckResult(False, f"expected head 0's kernel logits of shape {tuple(truth.shape)}, received {shape}")
    if not torch.allclose(kernel_logits, truth, atol=1e-10):
        return CheckResult(False, "your kernel logits are not head 0's band x_i W^D for this layer")
    if rank != int(torch.linalg.matrix_rank(truth)):
        return CheckResult(False, f"received rank {rank}; compute the rank of the {tuple(truth.shape)} matrix")
    return CheckResult(True, f"rank {rank}: with D_h = 1 every token's kernel logits are a multiple of one vector")


register("ex-05-key-not-query", CH05, "conceptual", 10)(None)
