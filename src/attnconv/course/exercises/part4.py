"""Checks for Part IV: chapter 06 (training self-attention vision models on CIFAR-10)."""

from __future__ import annotations

import math

from .core import CheckResult, register

CH06 = "06_cifar10_training"


@register("ex-06-params", CH06, "code", 15, ("by_hand", "block"))
def block_parameters(by_hand, block) -> CheckResult:
    actual = sum(p.numel() for p in block.parameters())
    if not isinstance(by_hand, int):
        return CheckResult(False, f"expected an int count, received {type(by_hand).__name__}")
    if by_hand != actual:
        return CheckResult(False, f"received {by_hand:,} parameters, off by {by_hand - actual:+,}; recount the "
                                  "shared value projection, the 3600-wide output projection and the head parameters")
    return CheckResult(True, f"{actual:,} parameters per block")


@register("ex-06-contour", CH06, "proof", 15, ("radius", "inside", "alpha", "m"))
def contour_radius(radius, inside, alpha, m) -> CheckResult:
    r = float(radius)
    target = -math.log(1 - m) / alpha
    if abs(r * r - target) > 1e-5 * target:  # float32 arithmetic is fine
        return CheckResult(False, f"received a radius of {r:.4f}; it does not solve 1 - exp(-α r²) = m")
    if abs(float(inside) - m) >= 1e-3:
        return CheckResult(False, f"your numerical mass inside the disc is {float(inside):.4f}, expected close to m")
    return CheckResult(True, f"the disc of radius {r:.3f} holds {float(inside):.4f} of the mass")


@register("ex-06-flops", CH06, "code", 10, ("cost16", "cost32"))
def attention_flops(cost16, cost32) -> CheckResult:
    ratio = cost32.attention_flops / cost16.attention_flops
    weights = cost32.weight_flops / cost16.weight_flops
    if ratio != 16:
        return CheckResult(False, f"attention FLOPs grow by {ratio:.2f}x between your two models; expected the "
                                  "16x of a quadratic term: use 16x16 and 32x32 images with block 2")
    if not 3.9 < weights < 4.0:
        return CheckResult(False, f"weight FLOPs grow by {weights:.2f}x; expected just under 4x")
    return CheckResult(True, "attention grows 16x and the weight products about 4x")
