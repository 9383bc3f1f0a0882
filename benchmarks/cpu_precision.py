"""Training speed on the CPU in float32 against bfloat16 autocast, for every CIFAR-10 model and the small BERT.

Usage: python benchmarks/cpu_precision.py [--repeats 5] [--variants absolute composite-noabs]
                                          [--out results/benchmarks/cpu_precision]

One vision step is what :func:`attnconv.train.train_vision` does per batch: augment (crop, flip, normalise),
forward, float32 cross-entropy, backward, SGD step, for each model of ``attnconv.models.MODEL_NAMES`` at the
``cpu-quick`` widths and batch (100). One BERT step is a pretraining step of the ``cpu-quick`` pretraining
config (batch 32, examples of 64 tokens without padding): masked-LM forward, backward, gradient clipping, AdamW.
bfloat16 runs the forward and backward under ``torch.autocast("cpu", torch.bfloat16)``
(:func:`attnconv.train.precision.precision_autocast`); weights and optimiser state are float32 in both.

The two precisions of one model alternate step by step (fp32, bf16, bf16, fp32, ...), so a change in the load
of a shared machine falls on both; each figure is the median of ``--repeats`` steps after one warm-up step of
each. The record names the CPU and whether it has AVX-512 BF16 and AMX, the instructions that run bfloat16
matmuls natively: on a CPU without them bfloat16 is emulated and slower, so a speed-up holds for the CPU
measured only.
"""

from __future__ import annotations

import torch

torch.set_flush_denormal(True)  # as the trainer's command line does, before the thread pool starts

import argparse  # noqa: E402
import os  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from dataclasses import replace  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Callable  # noqa: E402

import torch.nn.functional as F  # noqa: E402
from _measure import machine, write_record  # noqa: E402

from attnconv.data import CropFlip  # noqa: E402
from attnconv.models import MODEL_NAMES, build_model, count_parameters  # noqa: E402
from attnconv.models.bert import BertForMaskedLM  # noqa: E402
from attnconv.train import PRETRAIN_CONFIGS, named_config  # noqa: E402
from attnconv.train.optim import adamw  # noqa: E402
from attnconv.train.precision import precision_autocast  # noqa: E402

CPU = torch.device("cpu")
FLAGS = ("avx512f", "avx512_bf16", "amx_tile", "amx_bf16", "amx_int8")


def cpu_model() -> dict:
    """The CPU's model name and which of :data:`FLAGS` it reports (from /proc/cpuinfo; Linux)."""
    name, flags = "unknown", set()
    info = Path("/proc/cpuinfo")
    if info.is_file():
        for line in info.read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name" and name == "unknown":
                name = value.strip()
            elif key.strip() == "flags" and not flags:
                flags = set(value.split())
    return {"cpu_model": name, "cpu_flags": {f: f in flags for f in FLAGS}}


def vision_step(name: str, precision: str) -> tuple[Callable[[], None], int, int]:
    """One training step of model ``name`` at the cpu-quick sizes in ``precision``; its parameters and batch."""
    config = named_config("cpu-quick", name)
    torch.manual_seed(0)
    model = build_model(name, config.model_config)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    augment, gen = CropFlip(), torch.Generator().manual_seed(0)
    x = torch.randint(0, 256, (config.batch_size, 32, 32, 3), dtype=torch.uint8)
    y = torch.randint(0, 10, (config.batch_size,))

    def step() -> None:
        with precision_autocast(precision, CPU):
            logits = model(augment(x, gen))
        loss = F.cross_entropy(logits.float(), y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()

    return step, count_parameters(model), config.batch_size


def bert_step(variant: str, precision: str) -> tuple[Callable[[], None], int, int]:
    """One cpu-quick pretraining step of ``variant`` in ``precision``; its parameters and tokens per step."""
    config = PRETRAIN_CONFIGS["cpu-quick"]
    torch.manual_seed(0)
    model = BertForMaskedLM(replace(config.model, variant=variant))
    optimizer = adamw(model, config.lr, config.weight_decay)
    ids = torch.randint(5, model.config.vocab_size, (config.batch_size, config.max_length))
    labels = torch.where(torch.rand(ids.shape) < config.mask_prob, ids, torch.full_like(ids, -100))

    def step() -> None:
        with precision_autocast(precision, CPU):
            loss, _ = model.loss(ids, None, None, labels)
        optimizer.zero_grad(set_to_none=True)
        loss.float().backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()

    return step, sum(p.numel() for p in model.parameters()), ids.numel()


def interleaved(build: Callable[[str], tuple[Callable[[], None], int, int]], repeats: int) -> dict:
    """Median step times of ``build("fp32")`` and ``build("bf16")``, alternating which runs first."""
    steps = {p: build(p) for p in ("fp32", "bf16")}
    for step, _, _ in steps.values():  # warm-up
        step()
    times: dict[str, list[float]] = {"fp32": [], "bf16": []}
    for r in range(repeats):
        for p in (("fp32", "bf16") if r % 2 == 0 else ("bf16", "fp32")):
            t0 = time.perf_counter()
            steps[p][0]()
            times[p].append(time.perf_counter() - t0)
    fp32, bf16 = statistics.median(times["fp32"]), statistics.median(times["bf16"])
    _, params, per_step = steps["fp32"]
    return {"params": params, "per_step": per_step, "fp32_s": times["fp32"], "bf16_s": times["bf16"],
            "fp32_step_s": fp32, "bf16_step_s": bf16, "fp32_per_s": per_step / fp32, "bf16_per_s": per_step / bf16,
            "speedup": fp32 / bf16}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--models", nargs="+", default=list(MODEL_NAMES), choices=list(MODEL_NAMES))
    parser.add_argument("--variants", nargs="+", default=["absolute", "composite-noabs"])
    parser.add_argument("--out", default="results/benchmarks/cpu_precision")
    args = parser.parse_args()
    load_start = os.getloadavg()
    rows = []
    for name in args.models:
        rows.append({"kind": "vision", "model": name, "unit": "images/s",
                     **interleaved(lambda p, name=name: vision_step(name, p), args.repeats)})
        print(f"{name:20s} fp32 {rows[-1]['fp32_per_s']:7.1f} img/s  bf16 {rows[-1]['bf16_per_s']:7.1f} img/s  "
              f"{rows[-1]['speedup']:.2f}x", flush=True)
    for variant in args.variants:
        rows.append({"kind": "bert", "model": f"bert {variant}", "unit": "tokens/s",
                     **interleaved(lambda p, variant=variant: bert_step(variant, p), args.repeats)})
        print(f"bert {variant:15s} fp32 {rows[-1]['fp32_per_s']:7.0f} tok/s  bf16 {rows[-1]['bf16_per_s']:7.0f} "
              f"tok/s  {rows[-1]['speedup']:.2f}x", flush=True)
    meta = {"benchmark": "CPU training speed: float32 against bfloat16 autocast", "repeats": args.repeats,
            "statistic": "median", **cpu_model(), **machine(), "load_average_start": list(load_start)}
    end, flags = meta["load_average"], meta["cpu_flags"]
    has = ", ".join(f"{f} {'yes' if v else 'no'}" for f, v in flags.items())
    write_record(args.out, {"meta": meta, "rows": rows}, title=meta["benchmark"],
                 note=f"{meta['cpu_model']} ({has}). One training step per model at the cpu-quick sizes (vision: "
                      f"batch 100, augment, forward, backward, SGD; BERT: batch 32 x 64 tokens, masked-LM, AdamW), "
                      f"float32 and bf16 autocast alternating, median of {args.repeats} steps each after one warm-up "
                      f"step, on {meta['threads']} thread(s). Load average (1, 5, 15 min) {load_start[0]:.1f} / "
                      f"{load_start[1]:.1f} / {load_start[2]:.1f} at the start and {end[0]:.1f} / {end[1]:.1f} / "
                      f"{end[2]:.1f} at the end, on {meta['cpus']} cores: "
                      + ("the machine was shared with other work, so absolute speeds are low and noisy; the ratios, "
                         "measured step by step under the same load, are the result."
                         if max(load_start[0], end[0]) > meta["cpus"] else
                         "the machine was otherwise idle."),
                 columns=[("model", "{model}"), ("params (M)", "{params_m:.2f}"), ("unit", "{unit}"),
                          ("float32", "{fp32_per_s:.1f}"), ("bf16", "{bf16_per_s:.1f}"),
                          ("bf16 speed-up", "{speedup:.2f}x")],
                 rows=[{**r, "params_m": r["params"] / 1e6} for r in rows],
                 summary="A speed-up above 1 means bf16 trains faster on this CPU. It holds for this CPU only: one "
                         "without AVX-512 BF16 and AMX emulates bfloat16.")
    print(f"wrote {args.out}.json and {args.out}.md")


if __name__ == "__main__":
    main()
