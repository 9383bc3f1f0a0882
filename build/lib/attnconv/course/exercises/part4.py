"""Checks for Part IV: chapter 06 (training self-attention vision models on CIFAR-10)."""

from __future__ import annotations

import math
from dataclasses import replace

from .core import CheckResult, as_array, as_whole_number, describe, register

CH06 = "06_cifar10_training"


@register("ex-06-params", CH06, "code", 15, ("by_hand",))
def block_parameters(by_hand) -> CheckResult:
    from ...models import VisionConfig, build_model

    actual = sum(p.numel() for p in build_model("sa-quadratic", VisionConfig()).blocks[0].parameters())
    count = as_whole_number(by_hand)
    if count is None:
        return CheckResult(False, f"expected a whole number, received {describe(by_hand)}")
    if count != actual:
        return CheckResult(False, f"received {count:,} parameters, off by {count - actual:+,}; recount the "
                                  "shared value projection, the 3600-wide output projection and the head parameters")
    return CheckResult(True, f"{actual:,} parameters per block")


def _number(value) -> float | None:
    array = as_array(value)
    return float(array.reshape(())) if array is not None and array.size == 1 else None


@register("ex-06-contour", CH06, "proof", 15, ("radius", "inside"), parts=(("radius", 1), ("inside", 1)), written=1)
def contour_radius(radius, inside) -> list[CheckResult]:
    alpha, m = 0.5, 0.9  # the values the exercise's cell sets
    target = -math.log(1 - m) / alpha
    r, mass = _number(radius), _number(inside)
    if r is None:
        first = CheckResult(False, f"expected one number, received {describe(radius)}", "radius")
    elif abs(r * r - target) > 1e-5 * target:  # float32 arithmetic is fine
        first = CheckResult(False, f"received a radius of {r:.4f}; expected one that solves 1 - exp(-α r²) = m",
                            "radius")
    else:
        first = CheckResult(True, f"radius {r:.3f}", "radius")
    if mass is None:
        second = CheckResult(False, f"expected one number, received {describe(inside)}", "inside")
    elif abs(mass - m) >= 1e-3:
        second = CheckResult(False, f"received a numerical mass of {mass:.4f} inside the disc, expected close to m",
                             "inside")
    else:
        second = CheckResult(True, f"the disc holds {mass:.4f} of the mass", "inside")
    return [first, second]


def _costs() -> tuple:
    from ...models import VisionConfig, build_model, model_cost

    small = VisionConfig(attention="content", hidden_dim=32, depth=1, num_heads=4, head_dim=8, mlp_dim=32)
    return (model_cost(build_model("sa-content", replace(small, image_size=16)), image_size=16),
            model_cost(build_model("sa-content", small), image_size=32))


@register("ex-06-flops", CH06, "code", 10, ("cost16", "cost32"), parts=(("attention", 1), ("weights", 1)), written=1)
def attention_flops(cost16, cost32) -> list[CheckResult]:
    if not all(isinstance(c, dict) and {"flops", "weight_flops"} <= set(c) for c in (cost16, cost32)):
        bad = f"expected two model_cost results, received {describe(cost16)} and {describe(cost32)}"
        return [CheckResult(False, bad, "attention"), CheckResult(False, bad, "weights")]
    truth16, truth32 = _costs()
    attention = [c["flops"] - c["weight_flops"] for c in (cost16, cost32)]
    ratio = attention[1] / attention[0] if attention[0] else math.inf
    ok = attention == [truth16.attention_flops, truth32.attention_flops]
    first = CheckResult(ok, "attention grows 16x" if ok else
                        f"received attention FLOPs that grow {ratio:.2f}x; expected the costs of the content-only "
                        "model at 16x16 and 32x32 (block 2)", "attention")
    ok = [c["weight_flops"] for c in (cost16, cost32)] == [truth16.weight_flops, truth32.weight_flops]
    weights = cost32["weight_flops"] / cost16["weight_flops"] if cost16["weight_flops"] else math.inf
    second = CheckResult(ok, "weight products grow just under 4x" if ok else
                         f"received weight FLOPs that grow {weights:.2f}x; expected those of the same two models",
                         "weights")
    return [first, second]
