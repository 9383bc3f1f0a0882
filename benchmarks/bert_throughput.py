"""Pretraining throughput (tokens/s) of every BERT attention variant, and its cost relative to ``absolute``.

Usage: python benchmarks/bert_throughput.py [--size cpu-quick] [--batch 32] [--length 128] [--repeats 5]
                                            [--variants absolute composite ...] [--out results/benchmarks/bert_throughput]

One timed step is what a pretraining step does: the masked-LM forward pass (15% of the positions predicted,
through the tied output layer), backward, gradient clipping and an AdamW update, on a random batch without
padding. The time is the median of ``--repeats`` steps after two warm-up steps; variants take turns, so a change
in machine load spreads over all of them. The goal of the issue is a ratio ≤ 1.25 for the relative variants.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from dataclasses import replace

import torch
from _measure import machine, write_record

from attnconv.models.bert import BERT_SIZES, VARIANTS, BertForMaskedLM
from attnconv.train.provenance import provenance


def make_step(variant: str, size: str, batch: int, length: int):
    """A closure running one full training step of ``variant``, and its parameter count."""
    torch.manual_seed(0)
    model = BertForMaskedLM(replace(BERT_SIZES[size], variant=variant, max_length=max(length, 1)))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    ids = torch.randint(5, model.config.vocab_size, (batch, length))
    labels = torch.where(torch.rand(batch, length) < 0.15, ids, torch.full_like(ids, -100))

    def step() -> None:
        loss, _ = model.loss(ids, None, None, labels)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()

    return step, sum(p.numel() for p in model.parameters())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", default="cpu-quick", choices=sorted(BERT_SIZES))
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--length", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    parser.add_argument("--out", default="results/benchmarks/bert_throughput")
    args = parser.parse_args()
    torch.set_flush_denormal(True)
    steps = {v: make_step(v, args.size, args.batch, args.length) for v in args.variants}
    times: dict[str, list[float]] = {v: [] for v in args.variants}
    for v, (step, _) in steps.items():  # warm-up
        step(), step()
    for _ in range(args.repeats):
        for v, (step, _) in steps.items():
            t0 = time.perf_counter()
            step()
            times[v].append(time.perf_counter() - t0)
    tokens = args.batch * args.length
    rows = {v: {"median_step_s": statistics.median(t), "tokens_per_s": tokens / statistics.median(t),
                "params": steps[v][1]} for v, t in times.items()}
    if "absolute" in rows:
        for r in rows.values():
            r["time_vs_absolute"] = r["median_step_s"] / rows["absolute"]["median_step_s"]
    record = {"meta": {"benchmark": "BERT variants: one pretraining step (forward, backward, AdamW)", **machine()},
              "rows": rows, "provenance": provenance(torch.device("cpu"), 1, "random token ids", "none", vars(args),
                                                     {"load_average_at_end": os.getloadavg()})}
    print(write_record(args.out, record, title=record["meta"]["benchmark"],
                       note=f"BERT size {args.size}, batch {args.batch} x {args.length} tokens, median of "
                            f"{args.repeats} interleaved steps after 2 warm-up steps.",
                       columns=[("variant", "{variant}"), ("params", "{params:,}"), ("step (s)", "{median_step_s:.3f}"),
                                ("tokens/s", "{tokens_per_s:.0f}"), ("time vs absolute", "{time_vs_absolute:.2f}x")],
                       rows=[{"variant": v, "time_vs_absolute": float("nan"), **r} for v, r in rows.items()]))


if __name__ == "__main__":
    main()
