"""Checks for Part V: chapter 07 (small BERT models with convolutional attention)."""

from __future__ import annotations

import numpy as np

from .core import CheckResult, register

CH07 = "07_bert_convolutional_attention"


@register("ex-07-peak-offsets", CH07, "code", 10, ("peak", "weight", "kernels"))
def peak_offsets(peak, weight, kernels) -> CheckResult:
    kernels = np.asarray(kernels)
    offsets = np.arange(-(kernels.shape[-1] // 2), kernels.shape[-1] // 2 + 1)
    peak, weight = np.asarray(peak), np.asarray(weight)
    if peak.shape != kernels.shape[:2] or weight.shape != kernels.shape[:2]:
        return CheckResult(False, f"expected one peak and one weight per (layer, head) {kernels.shape[:2]}, "
                                  f"received shapes {peak.shape} and {weight.shape}")
    if not np.allclose(weight, kernels.max(-1)):
        return CheckResult(False, "some peak weights are not the largest tap of their kernel")
    if not np.all(kernels[..., :].max(-1) == np.take_along_axis(kernels, (peak + offsets[-1])[..., None], -1)[..., 0]):
        return CheckResult(False, "some peak offsets do not point at the largest tap (offsets run from -k to k)")
    return CheckResult(True, "peaks found for every layer and head")


@register("ex-07-padding", CH07, "code", 10, ("gap", "tiny", "ids", "pad"))
def padding_gap(gap, tiny, ids, pad) -> CheckResult:
    import torch

    gap = float(gap)
    if not bool(pad.any()) or bool(pad.all(dim=1).any()):
        return CheckResult(False, "pad must mark some padded positions, and every sentence needs a real token")
    with torch.no_grad():
        batched = tiny(ids, padding_mask=pad)
        alone = [tiny(row[~mask][None])[0] for row, mask in zip(ids, pad)]
    recomputed = max(float((out[~mask] - single).abs().max()) for out, mask, single in zip(batched, pad, alone))
    if abs(gap - recomputed) > max(1e-12, 0.5 * recomputed):  # a typed-in 0 fails when rounding is visible
        return CheckResult(False, f"received gap = {gap:.2e}, but the model's padded and unpadded logits differ by "
                                  f"{recomputed:.2e}")
    if not gap < 1e-4:
        return CheckResult(False, f"received a largest difference of {gap:.2e}; padded and unpadded outputs should "
                                  "agree to rounding on the real tokens")
    return CheckResult(True, f"padding changes nothing on real tokens (largest difference {gap:.1e})")


@register("ex-07-cost", CH07, "code", 10, ("ratios", "within_goal", "rows"))
def cost_ratios(ratios, within_goal, rows) -> CheckResult:
    if not rows:
        return CheckResult(isinstance(ratios, dict) and not ratios, "no committed benchmark here: nothing to compute")
    base = rows["absolute"]["median_step_s"]
    for variant, row in rows.items():
        if variant not in ratios or abs(float(ratios[variant]) - row["median_step_s"] / base) > 1e-9:
            return CheckResult(False, f"the ratio you give for {variant!r} is not its time per step over absolute's")
    expected = sorted(v for v, r in rows.items() if r["median_step_s"] / base <= 1.25)
    if sorted(within_goal) != expected:
        return CheckResult(False, f"received {sorted(within_goal)} within the goal; check the 1.25 threshold")
    return CheckResult(True, "ratios and the variants within the goal are right")
