"""Checks for Part II: chapters 03 (Theorem 1) and 04 (the zoo of encodings)."""

from __future__ import annotations

import re

import sympy as sp
import torch

from ...bounds import off_target_mass_bound
from ...construct import conv_to_mhsa, convert_convolutions
from ...models.smallcnn import SmallCNN, predict_logits, synthetic_images
from ...positional import QuadraticEncoding
from ...proofs import image as proofs
from .core import CheckResult, as_array, as_whole_number, close, describe, load_state, register, state_of
from .hidden import generator, plain, seeded

CH03, CH04 = "03_attention_can_express_convolution", "04_positional_encoding_zoo"


@register("ex-03-sign", CH03, "proof", 10, ("expected_residual",), written=1)
def flipped_sign(expected_residual) -> CheckResult:
    if not isinstance(expected_residual, sp.Basic):
        return CheckResult(False, f"expected a SymPy expression, received {describe(expected_residual)}")
    general = proofs.quadratic_identity(center_coefficient=2).residual  # -α Σ_{a=1}^{d} 4 Δ_a δ_a
    in_2d = general.subs(sp.Symbol("d", integer=True, positive=True), 2).doit()
    truth = plain(in_2d.replace(lambda e: isinstance(e, sp.Indexed),
                                lambda e: sp.Symbol(f"{e.base.label}{e.indices[0]}")))
    difference = sp.simplify(truth - plain(expected_residual))
    if difference != 0:
        return CheckResult(False, "received an expression that differs from the residual by a non-zero expression "
                                  f"in {sorted(s.name for s in difference.free_symbols)}; expected the residual "
                                  "that quadratic_identity reports, in delta1, delta2, Delta1, Delta2 and alpha")
    return CheckResult(True, "residual identified: the head attends to -Δ")


def _true_leak(alpha: int) -> float:
    head = QuadraticEncoding(1, centers=[[0, 0]], alpha=float(alpha))
    return 1 - torch.softmax(head((15, 15)), -1)[0, 7 * 15 + 7, 7 * 15 + 7].item()


@register("ex-03-alpha-for-epsilon", CH03, "code", 10, ("alpha_min", "leak"), parts=(("alpha_min", 1), ("leak", 1)))
def alpha_for_epsilon(alpha_min, leak) -> list[CheckResult]:
    smallest = next(a for a in range(1, 100) if off_target_mass_bound(a) < 1e-3)
    a = as_whole_number(alpha_min)
    if a is None:
        first = CheckResult(False, f"expected a whole number, received {describe(alpha_min)}", "alpha_min")
    elif off_target_mass_bound(a) >= 1e-3:
        first = CheckResult(False, f"received alpha_min = {a}, whose bound is not below 1e-3", "alpha_min")
    elif a != smallest:
        first = CheckResult(False, f"received alpha_min = {a}, but a smaller integer already works", "alpha_min")
    else:
        first = CheckResult(True, "smallest α found", "alpha_min")
    truth = _true_leak(smallest)
    value = as_array(leak)
    if value is None or value.size != 1:
        second = CheckResult(False, f"expected one number, received {describe(leak)}", "leak")
    elif abs(float(value.reshape(())) - truth) > 1e-3 * truth + 1e-9:
        second = CheckResult(False, f"received a measured leak of {float(value.reshape(())):.3e}; expected the "
                                    "mass off the centre pixel of the head with the smallest α", "leak")
    else:
        second = CheckResult(True, "the measured leak is under the bound", "leak")
    return [first, second]


def _even_context(seed: int) -> dict:
    with seeded(seed):
        even = torch.nn.Conv2d(3, 2, kernel_size=2, dtype=torch.float64)
    return {"even": even, "x": torch.randn(2, 3, 6, 5, dtype=torch.float64, generator=generator(seed + 1))}


def _even_probe(ns) -> dict:
    layer = ns["even_attention"]
    return {"attention_out": layer(ns["x"]), "state": state_of(layer)}


@register("ex-03-even-kernel", CH03, "code", 10, ("attention_out", "state"), given=("even", "x"),
          context=_even_context, probe=_even_probe, needs=("even_attention",), written=1)
def even_kernel(attention_out, state, even, x) -> CheckResult:
    """The student's parameters, loaded into the attention layer built here from the hidden convolution, must
    compute that convolution on hidden inputs, and so must the student's own layer."""
    layer, why = load_state(conv_to_mhsa(even), state, "the attention layer that conv_to_mhsa returns")
    if layer is None:
        return CheckResult(False, why)
    expected = even(x)
    for output, whose in ((attention_out, "your attention layer"), (layer(x), "an attention layer with your "
                                                                               "layer's parameters")):
        ok, err, tol = close(output, expected)
        if not ok:
            return CheckResult(False, f"on other inputs {whose} differs from the 2x2 convolution by {err:.2e} "
                                      f"(expected within {tol:.0e}), or its output is {describe(output)}")
    return CheckResult(True, "the 2x2 convolution is four heads, one per tap")


def _as_bool(value) -> bool | None:
    if isinstance(value, bool):
        return value
    array = as_array(value)
    if array is not None and array.size == 1 and array.dtype.kind == "b":
        return bool(array.reshape(()))
    return None


@register("ex-04-head-dim", CH04, "code", 10, ("too_small", "error"), parts=(("error", 1), ("too_small", 1)),
          written=1)
def head_dim_too_small(too_small, error) -> list[CheckResult]:
    # The first layer maps 12 channels to 24: a trained tap matrix has full rank 12 (with probability 1).
    match = re.search(r"rank (\d+) > head_dim=11", getattr(error, "message", ""))
    if getattr(error, "type", None) != "ValueError" or match is None:
        first = CheckResult(False, "expected the ValueError that conv_to_mhsa raises with head_dim=11, received "
                                   f"{describe(error)}", "error")
    else:
        first = CheckResult(True, f"the error names rank {match.group(1)}", "error")
    flag = _as_bool(too_small)
    if flag is None:
        second = CheckResult(False, f"expected True or False, received {describe(too_small)}", "too_small")
    elif not flag:
        second = CheckResult(False, "received too_small = False, expected whether the largest tap rank exceeds 11",
                             "too_small")
    else:
        second = CheckResult(True, "a tap of full rank cannot fit in 11-dimensional heads", "too_small")
    return [first, second]


def _finite_alpha_context(seed: int) -> dict:
    with seeded(seed):
        cnn = SmallCNN(width=24).eval()
    test_x, _ = synthetic_images(40, seed=int(seed) % 10_000 + 7)
    return {"cnn": cnn, "test_x": test_x, "cnn_logits": predict_logits(cnn, test_x)}


@register("ex-04-finite-alpha-net", CH04, "code", 15, ("changed", "soft_logits", "some"),
          given=("cnn", "test_x", "cnn_logits"), context=_finite_alpha_context,
          probe=lambda ns: {n: ns[n] for n in ("changed", "soft_logits", "some")},
          needs=("changed", "soft_logits", "some"), parts=(("soft_logits", 1), ("changed", 1)), written=1)
def finite_alpha_network(changed, soft_logits, some, cnn, test_x, cnn_logits) -> list[CheckResult]:
    index = as_array(some)
    if index is None or index.ndim != 1 or index.dtype.kind not in "iu" or len(index) == 0 or \
            index.min() < 0 or index.max() >= len(test_x):
        bad = CheckResult(False, f"expected `some` to be indices into test_x, received {describe(some)}")
        return [CheckResult(False, bad.message, "soft_logits"), CheckResult(False, bad.message, "changed")]
    index = torch.as_tensor(index, dtype=torch.long)
    check_rows = index[:32]
    reference = predict_logits(convert_convolutions(cnn, alpha=8.0), test_x[check_rows])
    logits = as_array(soft_logits)
    hard = cnn_logits[index]
    if logits is None or logits.shape != tuple(hard.shape):
        first = CheckResult(False, f"expected logits of shape {tuple(hard.shape)}, received {describe(soft_logits)}",
                            "soft_logits")
    elif not close(logits[:32], reference)[0] and not torch.allclose(torch.as_tensor(logits[:32]).double(),
                                                                      reference.double(), atol=1e-4, rtol=0):
        same_as_hard = torch.allclose(torch.as_tensor(logits).double(), hard.double(), atol=1e-6, rtol=0)
        first = CheckResult(False, "received the hard network's logits: expected α = 8 to be applied" if same_as_hard
                            else "received logits that are not the α = 8 network's logits on test_x[some]",
                            "soft_logits")
    else:
        first = CheckResult(True, "the α = 8 network's logits", "soft_logits")
    count = as_whole_number(changed)
    truth = int((reference.argmax(1) != hard[:32].argmax(1)).sum())
    if first.passed:
        truth = int((torch.as_tensor(logits).argmax(1) != hard.argmax(1)).sum())
    if count is None:
        second = CheckResult(False, f"expected a whole number of predictions, received {describe(changed)}", "changed")
    elif not first.passed or count != truth:
        second = CheckResult(False, f"received changed = {count}; expected the number of predictions that α = 8 "
                                    "changes", "changed")
    else:
        second = CheckResult(True, f"{count} of {len(index)} predictions change at α = 8", "changed")
    return [first, second]


register("ex-04-learned-is-richer", CH04, "conceptual", 15)(None)
