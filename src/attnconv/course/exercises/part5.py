"""Checks for Part V: chapter 07 (small BERT models with convolutional attention)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import torch

from .core import CheckResult, as_array, close, describe, register
from .hidden import generator, seeded

CH07 = "07_bert_convolutional_attention"


@register("ex-07-peak-offsets", CH07, "code", 10, ("peak", "weight", "kernels"), parts=(("peak", 1), ("weight", 1)),
          written=1)
def peak_offsets(peak, weight, kernels) -> list[CheckResult]:
    kernels = as_array(kernels)
    if kernels is None or kernels.ndim != 3:
        bad = f"expected the (layers, heads, taps) kernels the chapter loads, received {describe(kernels)}"
        return [CheckResult(False, bad, "peak"), CheckResult(False, bad, "weight")]
    offsets = np.arange(-(kernels.shape[-1] // 2), kernels.shape[-1] // 2 + 1)
    p, w = as_array(peak), as_array(weight)
    results = []
    if p is None or p.shape != kernels.shape[:2]:
        results.append(CheckResult(False, f"expected one peak per (layer, head) {kernels.shape[:2]}, received "
                                          f"{describe(peak)}", "peak"))
    else:
        index = np.clip(p.astype(np.int64) + offsets[-1], 0, kernels.shape[-1] - 1)
        at = np.take_along_axis(kernels, index[..., None], -1)[..., 0]
        ok = bool(np.all(at == kernels.max(-1))) and bool(np.all(np.abs(p) <= offsets[-1]))
        results.append(CheckResult(ok, "peaks found" if ok else "received peak offsets, some of which do not point "
                                   "at the largest tap; expected offsets from -k to k", "peak"))
    if w is None or w.shape != kernels.shape[:2]:
        results.append(CheckResult(False, f"expected one weight per (layer, head) {kernels.shape[:2]}, received "
                                          f"{describe(weight)}", "weight"))
    else:
        ok = close(w, kernels.max(-1))[0]
        results.append(CheckResult(ok, "peak weights right" if ok else "received peak weights, some of which are not "
                                   "the largest tap of their kernel", "weight"))
    return results


def _padding_context(seed: int) -> dict:
    from ...models.bert import BERT_SIZES, BertForMaskedLM

    with seeded(seed):
        tiny = BertForMaskedLM(replace(BERT_SIZES["tiny"], variant="composite-noabs")).eval()
    return {"tiny": tiny, "ids": torch.randint(5, 200, (2, 12), generator=generator(seed + 1))}


@register("ex-07-padding", CH07, "code", 10, ("gap", "pad"), given=("tiny", "ids"), context=_padding_context,
          probe=lambda ns: {"gap": ns["gap"], "pad": ns["pad"]}, needs=("gap", "pad"))
def padding_gap(gap, pad, tiny, ids) -> CheckResult:
    mask, value = as_array(pad), as_array(gap)
    if mask is None or mask.shape != tuple(ids.shape) or mask.dtype.kind != "b":
        return CheckResult(False, f"expected pad to be a boolean mask of shape {tuple(ids.shape)}, received "
                                  f"{describe(pad)}")
    if value is None or value.size != 1:
        return CheckResult(False, f"expected gap to be one number, received {describe(gap)}")
    gap, mask = float(value.reshape(())), torch.as_tensor(mask)
    if not bool(mask.any()) or bool(mask.all(dim=1).any()):
        return CheckResult(False, "expected pad to mark some padded positions, and to leave every sentence a real "
                                  "token")
    batched = tiny(ids, padding_mask=mask)
    alone = [tiny(row[~m][None])[0] for row, m in zip(ids, mask)]
    recomputed = max(float((out[~m] - single).abs().max()) for out, m, single in zip(batched, mask, alone))
    if abs(gap - recomputed) > max(1e-12, 0.5 * recomputed):  # a typed-in 0 fails when rounding is visible
        return CheckResult(False, f"received gap = {gap:.2e}, but on the hidden sentences the model's padded and "
                                  f"unpadded logits differ by {recomputed:.2e}")
    if not gap < 1e-4:
        return CheckResult(False, f"received a largest difference of {gap:.2e}; expected padded and unpadded outputs "
                                  "to agree to rounding on the real tokens")
    return CheckResult(True, f"padding changes nothing on real tokens (largest difference {gap:.1e})")


@register("ex-07-cost", CH07, "code", 10, ("ratios", "within_goal", "rows"), parts=(("ratios", 1), ("within_goal", 1)),
          written=1)
def cost_ratios(ratios, within_goal, rows) -> list[CheckResult]:
    if not isinstance(rows, dict) or not isinstance(ratios, dict):
        bad = f"expected dicts of rows and ratios, received {describe(rows)} and {describe(ratios)}"
        return [CheckResult(False, bad, "ratios"), CheckResult(False, bad, "within_goal")]
    if not rows:
        ok = not ratios and not list(within_goal)
        return [CheckResult(ok, "no committed benchmark here: nothing to compute", "ratios"),
                CheckResult(ok, "nothing within the goal", "within_goal")]
    base = rows["absolute"]["median_step_s"]
    first = CheckResult(True, "ratios right", "ratios")
    for variant, row in rows.items():
        value = as_array(ratios.get(variant))
        if value is None or value.size != 1 or abs(float(value.reshape(())) - row["median_step_s"] / base) > 1e-9:
            first = CheckResult(False, f"received {describe(ratios.get(variant))} for {variant!r}; expected its time "
                                       "per step over absolute's", "ratios")
            break
    expected = {v for v, r in rows.items() if r["median_step_s"] / base <= 1.25}
    got = set(within_goal) if isinstance(within_goal, (list, tuple, set)) else None
    second = CheckResult(got == expected, "variants within the goal right" if got == expected else
                         f"received {describe(within_goal)} within the goal; check the 1.25 threshold", "within_goal")
    return [first, second]
