"""Checks for Part III: chapter 05 (relative positions in language models are convolutions)."""

from __future__ import annotations

import math

import numpy as np
import sympy as sp
import torch

from ...attention import MultiHeadSelfAttention
from ...composite import CompositeAttention
from ...construct import attention_to_lightconv
from ...positional import RelativePositionBias, RotaryEmbedding
from .core import CheckResult, as_array, as_whole_number, close, describe, load_state, register, state_of
from .hidden import generator, seeded

CH05 = "05_relative_positions_are_convolutions"


def _clipped_context(seed: int) -> dict:
    with seeded(seed):
        clipped = MultiHeadSelfAttention(16, 4, positional=RelativePositionBias(4, max_distance=2),
                                         content=False).double()
    return {"clipped": clipped}


def _clipped_inputs(clipped) -> list[torch.Tensor]:
    """Random sequences of 10, 7 and 3 tokens, seeded by the layer's own (hidden) weights."""
    weights = torch.cat([p.detach().double().flatten() for p in clipped.parameters()])
    gen = generator(int(float(weights.abs().sum()) * 1e6) % 2**31)
    return [torch.randn(2, n, clipped.embed_dim, dtype=torch.float64, generator=gen) for n in (10, 7, 3)]


def _clipped_probe(ns) -> dict:
    """The student's convolution on sequences of 10, 7 and 3 tokens (hidden ones in the grader's sandbox), and its
    parameters; the check rebuilds the inputs itself."""
    equivalent = ns["equivalent"]
    conv = getattr(equivalent, "conv", None)
    dtype = getattr(getattr(conv, "weight", None), "dtype", torch.float64)
    inputs = _clipped_inputs(ns["clipped"])
    return {"state": state_of(equivalent), "outputs": [equivalent(x.to(dtype)) for x in inputs]}


@register("ex-05-clipped-width", CH05, "code", 10, ("state", "outputs"), given=("clipped",),
          context=_clipped_context, probe=_clipped_probe, needs=("equivalent",), parts=(("width", 1), ("outputs", 1)))
def clipped_width(state, outputs, clipped) -> list[CheckResult]:
    """The student's parameters are loaded into the ProjectedConv1d that ``attention_to_lightconv`` builds here,
    with as many taps as theirs; that layer, and the student's own, must equal the attention layer."""
    weight = as_array(state.get("conv.weight")) if isinstance(state, dict) else None
    taps = int(weight.shape[-1]) if weight is not None and weight.ndim == 2 else None
    what = "the ProjectedConv1d that attention_to_lightconv returns"
    if taps is None or taps % 2 == 0 or not 1 <= taps <= 99:
        bad = f"expected {what}, with an odd number of taps; received {describe(state)}"
        return [CheckResult(False, bad, "width"), CheckResult(False, bad, "outputs")]
    layer, why = load_state(attention_to_lightconv(clipped, max_length=(taps + 1) // 2), state, what)
    if layer is None:
        return [CheckResult(False, why, "width"), CheckResult(False, why, "outputs")]
    first = CheckResult(taps == 19, "19 taps" if taps == 19 else
                        f"received a convolution with {taps} taps; expected one that reaches every offset of a "
                        "10-token sequence", "width")
    xs = _clipped_inputs(clipped)
    if not isinstance(outputs, (list, tuple)) or len(outputs) != len(xs):
        return [first, CheckResult(False, f"expected outputs on {len(xs)} sequences, received {describe(outputs)}",
                                   "outputs")]
    for x, got in zip(xs, outputs):
        truth = clipped(x)[0]
        for output, whose in ((got, "your convolution"), (layer(x), "a convolution with your parameters")):
            ok, err, tol = close(output, truth)
            if not ok:
                return [first, CheckResult(False, f"on {x.shape[1]} random tokens {whose} differs from the "
                                                  f"attention layer by {err:.1e} (expected within {tol:.0e})",
                                           "outputs")]
    return [first, CheckResult(True, "equal outputs on every length up to 10", "outputs")]


@register("ex-05-alibi-self-weight", CH05, "proof", 15, ("self_weight",))
def alibi_self_weight(self_weight) -> CheckResult:
    if not isinstance(self_weight, sp.Basic):
        return CheckResult(False, f"expected a SymPy expression in m, received {describe(self_weight)}")
    names = {s.name for s in self_weight.free_symbols}
    if names != {"m"}:
        return CheckResult(False, f"expected an expression in the slope m only, received one in {sorted(names)}")
    m = next(iter(self_weight.free_symbols))
    for value in (0.25, 1.0, 3.0):
        got = complex(self_weight.subs(m, value).evalf())
        truth = 1.0 / (1.0 + 2.0 * math.exp(-value) / (1.0 - math.exp(-value)))
        if abs(got.imag) > 1e-12 or abs(got.real - truth) > 1e-9:
            return CheckResult(False, f"received {self_weight}, which gives {got.real:.6f} at m = {value}; expected "
                                      "the sum of the kernel over every offset of an infinitely long sequence")
    return CheckResult(True, "the self-weight is the closed form of the geometric kernel's centre tap")


def _shaw_context(seed: int) -> dict:
    with seeded(seed):
        shaw = CompositeAttention(16, 16, max_distance=3, content=False, fixed=False, query_dynamic=True,
                                  bias=False).double()
    tokens = torch.randn(1, 11, 16, dtype=torch.float64, generator=generator(seed + 1))
    return {"shaw": shaw, "tokens": tokens, "n": tokens.shape[1]}


@register("ex-05-shaw-rank", CH05, "code", 10, ("kernel_logits", "rank"), given=("shaw", "tokens"),
          context=_shaw_context, probe=lambda ns: {"kernel_logits": ns["kernel_logits"], "rank": ns["rank"]},
          needs=("kernel_logits", "rank"), parts=(("kernel_logits", 1), ("rank", 1)), written=1)
def shaw_rank(kernel_logits, rank, shaw, tokens) -> list[CheckResult]:
    q, _, _ = shaw.project(tokens)
    truth = shaw.query_term.band(tokens.shape[1], q, None)[0, 0]
    logits = as_array(kernel_logits)
    if logits is None or logits.shape != tuple(truth.shape):
        first = CheckResult(False, f"expected head 0's kernel logits of shape {tuple(truth.shape)} (N, 2k+1), "
                                   f"received {describe(kernel_logits)}", "kernel_logits")
    else:
        ok, err, tol = close(logits, truth)
        first = CheckResult(ok, "head 0's band x_i W^D" if ok else
                            f"received kernel logits that differ from head 0's band x_i W^D by {err:.1e} "
                            f"(expected within {tol:.0e})", "kernel_logits")
    expected = int(np.linalg.matrix_rank(truth.numpy()))
    got = as_whole_number(rank)
    second = CheckResult(got == expected, f"rank {expected}: with D_h = 1 every token's kernel logits are a multiple "
                         "of one vector" if got == expected else
                         f"received rank {describe(rank)}; expected the rank of the {tuple(truth.shape)} matrix",
                         "rank")
    return [first, second]


register("ex-05-key-not-query", CH05, "conceptual", 10)(None)


def _rope_target(radius: int = 60) -> torch.Tensor:
    """The kernel logits the exercise asks for, e(δ) = 2 cos δ - sin(δ / 100), for δ = -radius .. radius."""
    delta = torch.arange(-radius, radius + 1, dtype=torch.float64)
    return 2 * torch.cos(delta) - torch.sin(0.01 * delta)


@register("ex-05-rope-reach", CH05, "code", 15, ("rope_query", "rope_key"), written=1)
def rope_reach(rope_query, rope_key) -> CheckResult:
    """The student's query and key go through ``RotaryEmbedding(4).kernel_logits`` here, over δ = -60 .. 60: the
    logits must be 2 cos δ - sin(δ / 100), within the precision of the coarser of the two dtypes."""
    q, k = as_array(rope_query), as_array(rope_key)
    if q is None or k is None or q.shape != (4,) or k.shape != (4,):
        return CheckResult(False, f"expected a query and a key of 4 numbers each (D_h = 4), received "
                                  f"{describe(rope_query)} and {describe(rope_key)}")
    coarse = min((a.dtype for a in (q, k) if a.dtype.kind == "f"), key=lambda d: d.itemsize, default=np.float64)
    got = RotaryEmbedding(4).kernel_logits(torch.as_tensor(q, dtype=torch.float64),
                                           torch.as_tensor(k, dtype=torch.float64), 60)
    ok, err, tol = close(got.numpy().astype(coarse), _rope_target().numpy())
    if ok:
        return CheckResult(True, "the kernel logits are 2 cos δ - sin(δ/100) at every offset |δ| ≤ 60")
    worst = int((got - _rope_target()).abs().argmax()) - 60
    return CheckResult(False, f"your query and key give kernel logits that differ from 2 cos δ - sin(δ/100) by "
                              f"{err:.1e} (at δ = {worst}; expected within {tol:.0e})")
