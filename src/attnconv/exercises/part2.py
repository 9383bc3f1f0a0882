"""Checks for Part II: chapters 03 (Theorem 1) and 04 (the zoo of encodings)."""

from __future__ import annotations

import sympy as sp

from ..bounds import off_target_mass_bound
from ..proofs import image as proofs
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


@register("ex-04-head-dim", CH04, "code", 10, ("too_small",))
def head_dim_too_small(too_small) -> CheckResult:
    if too_small is not True:
        return CheckResult(False, f"expected True once you have shown the conversion fails, received {too_small!r}")
    return CheckResult(True, "heads smaller than a tap's rank cannot express it")


@register("ex-04-finite-alpha-net", CH04, "code", 15, ("changed",))
def finite_alpha_network(changed) -> CheckResult:
    if not isinstance(changed, int) or not 0 <= changed <= 2000:
        return CheckResult(False, f"expected a count of changed predictions between 0 and 2000, received {changed!r}")
    if changed >= 20:
        return CheckResult(False, f"received {changed} changed predictions: more than 1% suggests α was not applied")
    return CheckResult(True, f"{changed} of 2000 predictions change at α = 8")


register("ex-04-learned-is-richer", CH04, "conceptual", 15)(None)
