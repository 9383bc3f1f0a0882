"""Checks for Part II: chapters 03 (Theorem 1) and 04 (the zoo of encodings)."""

from __future__ import annotations

import sympy as sp
import torch

from ...bounds import off_target_mass_bound
from ...proofs import image as proofs
from .core import CheckResult, register

CH03, CH04 = "03_attention_can_express_convolution", "04_positional_encoding_zoo"


def _plain(expr: sp.Expr) -> sp.Expr:
    """The same expression with assumption-free symbols, so that names alone decide equality."""
    return expr.subs({s: sp.Symbol(s.name) for s in expr.free_symbols})


@register("ex-03-sign", CH03, "proof", 10, ("expected_residual",))
def flipped_sign(expected_residual) -> CheckResult:
    general = proofs.quadratic_identity(center_coefficient=2).residual  # -α Σ_{a=1}^{d} 4 Δ_a δ_a
    in_2d = general.subs(sp.Symbol("d", integer=True, positive=True), 2).doit()
    truth = _plain(in_2d.replace(lambda e: isinstance(e, sp.Indexed),
                                 lambda e: sp.Symbol(f"{e.base.label}{e.indices[0]}")))
    try:
        student = _plain(sp.sympify(expected_residual))
    except (TypeError, sp.SympifyError) as err:
        return CheckResult(False, f"expected a SymPy expression, received {expected_residual!r} ({err})")
    difference = sp.simplify(truth - student)
    if difference != 0:
        return CheckResult(False, "your expression does not match the residual; it differs by a non-zero "
                                  f"expression in {sorted(s.name for s in difference.free_symbols)}")
    return CheckResult(True, "residual identified: the head attends to -Δ")


@register("ex-03-alpha-for-epsilon", CH03, "code", 10, ("alpha_min", "leak"))
def alpha_for_epsilon(alpha_min, leak) -> CheckResult:
    if not isinstance(alpha_min, int) or off_target_mass_bound(alpha_min) >= 1e-3:
        return CheckResult(False, f"received alpha_min = {alpha_min!r}, whose bound is not below 1e-3")
    if off_target_mass_bound(alpha_min - 1) < 1e-3:
        return CheckResult(False, f"received alpha_min = {alpha_min}, but a smaller integer already works")
    if not 0 <= float(leak) < 1e-3:
        return CheckResult(False, f"received a measured leak of {float(leak):.2e}; expected it between 0 and the bound")
    return CheckResult(True, "smallest α found and the measured leak is under the bound")


@register("ex-03-even-kernel", CH03, "code", 10, ("even_attention", "even", "x"))
def even_kernel(even_attention, even, x) -> CheckResult:
    err = float((even_attention(x) - even(x)).abs().max())
    if err > 1e-12:
        return CheckResult(False, f"your attention layer differs from the 2x2 convolution by {err:.2e}")
    return CheckResult(True, "the 2x2 convolution is four heads, one per tap")


@register("ex-04-head-dim", CH04, "code", 10, ("too_small", "error", "cnn"))
def head_dim_too_small(too_small, error, cnn) -> CheckResult:
    taps = cnn.conv1.weight.detach().flatten(2).permute(2, 1, 0)  # (K², D_in, D_out): one matrix per tap
    rank = int(torch.linalg.matrix_rank(taps.double()).max())
    if not isinstance(error, ValueError):
        return CheckResult(False, "expected the ValueError that conv_to_mhsa raises with head_dim=11, "
                                  f"received {error!r}")
    if f"rank {rank} > head_dim=11" not in str(error):
        return CheckResult(False, f"the first layer's largest tap rank is {rank}; the error you caught says {error}")
    if too_small is not (rank > 11):
        return CheckResult(False, f"too_small should say whether rank {rank} exceeds 11; received {too_small!r}")
    return CheckResult(True, f"a tap of rank {rank} cannot fit in 11-dimensional heads")


@register("ex-04-finite-alpha-net", CH04, "code", 15, ("changed", "soft_logits", "cnn", "cnn_logits", "test_x",
                                                     "some"))
def finite_alpha_network(changed, soft_logits, cnn, cnn_logits, test_x, some) -> CheckResult:
    from ...construct import convert_convolutions
    from ...models.smallcnn import predict_logits

    if not isinstance(changed, int) or not 0 <= changed <= len(some):
        return CheckResult(False, f"expected a count of changed predictions between 0 and {len(some)}, "
                                  f"received {changed!r}")
    reference = predict_logits(convert_convolutions(cnn, alpha=8.0), test_x[some[:32]])
    if soft_logits.shape != (len(some), reference.shape[1]) or \
            not torch.allclose(soft_logits[:32], reference, rtol=0, atol=1e-4):
        return CheckResult(False, "soft_logits are not the α = 8 network's logits on test_x[some]")
    if not (soft_logits - cnn_logits[some]).abs().max() > 1e-6:
        return CheckResult(False, "soft_logits equal the hard network's logits: α = 8 was not applied")
    count = int((soft_logits.argmax(1) != cnn_logits[some].argmax(1)).sum())
    if changed != count:
        return CheckResult(False, f"your logits change {count} predictions, but changed = {changed}")
    return CheckResult(True, f"{changed} of {len(some)} predictions change at α = 8")


register("ex-04-learned-is-richer", CH04, "conceptual", 15)(None)
