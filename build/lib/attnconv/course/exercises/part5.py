"""Checks for Part V: chapter 07 (small BERT models with convolutional attention)."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import torch

from .core import CheckResult, as_array, close, describe, register
from .hidden import generator, seeded

CH07 = "07_bert_convolutional_attention"


class _Run:
    """A stand-in for a loaded composite run: only its ``kernels`` (hidden ones, in the grader's sandbox)."""

    def __init__(self, kernels: np.ndarray) -> None:
        self.kernels = {"fixed": kernels.tolist()}


def _kernels_context(seed: int) -> dict:
    rng = np.random.default_rng(int(seed) % 2**63)
    k = int(rng.integers(3, 9))
    logits = rng.normal(0, 2, size=(int(rng.integers(2, 5)), 4, 2 * k + 1))
    kernels = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    return {"composite": _Run(kernels), "kernels": kernels}


@register("ex-07-peak-offsets", CH07, "code", 10, ("peak", "weight"), given=("kernels",), context=_kernels_context,
          probe=lambda ns: {"peak": ns["peak"], "weight": ns["weight"]}, needs=("peak", "weight"),
          parts=(("peak", 1), ("weight", 1)), written=1)
def peak_offsets(peak, weight, kernels) -> list[CheckResult]:
    """Recomputed from the kernels the check was given: the chapter's in a chapter, hidden random ones (other
    layers, other widths) when graded, so answers computed from anything but ``kernels`` fail."""
    kernels = as_array(kernels)
    offsets = np.arange(-(kernels.shape[-1] // 2), kernels.shape[-1] // 2 + 1)
    p, w = as_array(peak), as_array(weight)
    results = []
    if p is None or p.shape != kernels.shape[:2]:
        results.append(CheckResult(False, f"expected one peak per (layer, head) {kernels.shape[:2]}, received "
                                          f"{describe(peak)}", "peak"))
    else:
        index = np.clip(p.astype(np.int64) + offsets[-1], 0, kernels.shape[-1] - 1)
        at = np.take_along_axis(kernels, index[..., None], -1)[..., 0]
        ok = bool(np.all(at == kernels.max(-1))) and bool(np.all(np.abs(p) <= offsets[-1])) and \
            bool(np.all(p == np.round(p)))
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


class _OffsetWhenPadded(torch.nn.Module):
    """The hidden model for ex-07-padding: the chapter's model, plus a small known offset on every logit of a
    padded call, so that the true gap is not 0 and a typed-in 0 fails."""

    def __init__(self, model: torch.nn.Module, offset: torch.Tensor) -> None:
        super().__init__()
        self.model = model
        self.register_buffer("offset", offset)

    def forward(self, ids, padding_mask=None, **kwargs):
        out = self.model(ids, padding_mask=padding_mask, **kwargs)
        return out if padding_mask is None else out + self.offset.to(out.dtype)


def _padding_context(seed: int) -> dict:
    from ...models.bert import BERT_SIZES, BertForMaskedLM

    with seeded(seed):
        tiny = BertForMaskedLM(replace(BERT_SIZES["tiny"], variant="composite-noabs")).eval()
    gen = generator(seed + 2)
    scale = 10 ** (-6 + float(torch.rand((), generator=gen)))  # 1e-6 to 1e-5: under the 1e-4 that passes
    offset = scale * torch.randn(tiny.config.vocab_size if hasattr(tiny, "config") else 1, generator=gen)
    return {"tiny": _OffsetWhenPadded(tiny, offset).eval(),
            "ids": torch.randint(5, 200, (2, 12), generator=generator(seed + 1))}


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


class _Bench:
    """A stand-in for the benchmark's path (``bench``): ``with_suffix(".json")`` reads hidden rows."""

    def __init__(self, rows: dict) -> None:
        self.rows = rows

    def with_suffix(self, suffix: str) -> _Bench:
        return self

    def is_file(self) -> bool:
        return True

    def read_text(self) -> str:
        return json.dumps({"rows": self.rows})


def _cost_context(seed: int) -> dict:
    rng = np.random.default_rng(int(seed) % 2**63)
    base = float(rng.uniform(0.2, 2.0))
    names = ["absolute", "fixed", "dynamic", "composite", "fixed-noabs", "composite-noabs"]
    factors = [1.0, *rng.uniform(0.8, 1.2, size=2), *rng.uniform(1.3, 2.0, size=2), float(rng.uniform(0.8, 2.0))]
    rows = {n: {"median_step_s": base * f, "tokens_per_s": 4096 / (base * f)} for n, f in zip(names, factors)}
    return {"bench": _Bench(rows), "json": json, "rows": rows}


@register("ex-07-cost", CH07, "code", 10, ("ratios", "within_goal"), given=("rows",), context=_cost_context,
          probe=lambda ns: {"ratios": ns["ratios"], "within_goal": ns["within_goal"]},
          needs=("ratios", "within_goal"), parts=(("ratios", 1), ("within_goal", 1)), written=1)
def cost_ratios(ratios, within_goal, rows) -> list[CheckResult]:
    """Recomputed from the rows the check was given: the committed ones in a chapter, hidden ones when graded
    (other times, some variants over the goal), so answers that ignore ``rows`` fail."""
    if not isinstance(ratios, dict):
        bad = f"expected a dict of ratios by variant, received {describe(ratios)}"
        return [CheckResult(False, bad, "ratios"), CheckResult(False, bad, "within_goal")]
    if not rows:  # only in a chapter without the committed benchmark: the grader's hidden rows are never empty
        ok = not ratios and not list(within_goal)
        return [CheckResult(ok, "no committed benchmark here: nothing to compute", "ratios"),
                CheckResult(ok, "nothing within the goal", "within_goal")]
    base = rows["absolute"]["median_step_s"]
    first = CheckResult(True, "ratios right", "ratios")
    if set(ratios) != set(rows):
        first = CheckResult(False, f"received ratios for {sorted(map(str, ratios))[:6]}; expected one per variant "
                                   "of the benchmark", "ratios")
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
