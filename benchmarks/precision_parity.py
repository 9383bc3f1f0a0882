"""Float32 against bfloat16 at equal training time: which precision reaches the higher accuracy in the same minutes.

Usage: python benchmarks/precision_parity.py [--seeds 0 1 2] [--base-epochs 6] [--out results/precision-parity]
                                             [--record results/benchmarks/precision_parity] [--data DATA]

The question is a reader's: given a fixed number of minutes on this CPU, train in float32 or in bfloat16? At equal
epochs bfloat16 loses a little accuracy per step, but it takes more steps in the same time. So the float32 arm
trains the ``cpu-quick`` quadratic model for ``--base-epochs`` epochs, and the bfloat16 arm for as many epochs as
its measured speed buys in the same time: ``round(base_epochs * speedup)``, where ``speedup`` comes from
interleaved training steps of the model in both precisions on one thread, timed in process CPU time
(:func:`measured_speedup`). Each arm's learning-rate schedule spans its own epochs, as a run of that
length would.

Each run is a subprocess of the trainer's command line (one thread, its own run folder under ``--out``), seeds in
turn and the two precisions alternating which goes first, so a change in the machine's load falls on both arms.
The record keeps each run's wall time and the CPU time its process used (``resource.getrusage`` of the child),
and the ratio of the arms' times, which shows how equal the budgets came out. A run folder that already holds a
``final.json`` is read, not retrained, and one with a checkpoint resumes: the script can be stopped and rerun.

Writes ``RECORD.json`` and ``RECORD.md`` (:func:`_measure.write_record`).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from _measure import machine, write_record

from attnconv.data import CropFlip
from attnconv.models import build_model
from attnconv.train import named_config
from attnconv.train.precision import precision_autocast

PRECISIONS = ("fp32", "bf16")


def measured_speedup(repeats: int) -> dict:
    """bfloat16's speed-up over float32 for one ``cpu-quick`` quadratic-model training step, in CPU time.

    A training step as the trainer runs it (augmented batch, forward, float32 cross-entropy, backward, SGD), the
    two precisions alternating, after two warm-up steps of each. CPU time of this process, not wall time: on a
    shared machine the wall clock also counts the time other processes hold the core, and would hand one arm a
    budget the other did not get.
    """
    torch.manual_seed(0)
    config = named_config("cpu-quick")
    model = build_model("sa-quadratic", config.sa).train()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    raw = torch.randint(0, 256, (config.batch_size, 32, 32, 3), dtype=torch.uint8)
    augment, gen = CropFlip(), torch.Generator().manual_seed(0)
    labels = torch.randint(0, 10, (config.batch_size,))

    def step(precision: str) -> float:
        start = time.process_time()
        with precision_autocast(precision, torch.device("cpu")):
            logits = model(augment(raw, gen))
        loss = F.cross_entropy(logits.float(), labels)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        return time.process_time() - start

    for _ in range(2):
        step("fp32"), step("bf16")
    times: dict[str, list[float]] = {"fp32": [], "bf16": []}
    for r in range(repeats):
        for precision in (PRECISIONS if r % 2 == 0 else PRECISIONS[::-1]):
            times[precision].append(step(precision))
    fp32, bf16 = statistics.median(times["fp32"]), statistics.median(times["bf16"])
    return {"clock": "process CPU time", "fp32_s": times["fp32"], "bf16_s": times["bf16"], "fp32_median_s": fp32,
            "bf16_median_s": bf16, "speedup": fp32 / bf16}


def train(folder: Path, seed: int, precision: str, epochs: int, data: str | None) -> dict:
    """Train (or resume, or read) one run; returns its final record plus ``cpu_s`` and ``wall_s`` of this call."""
    final = folder / "final.json"
    if final.exists():
        record = json.loads(final.read_text())
        timing = json.loads((folder / "parity-timing.json").read_text())
        return {**record, **timing}
    command = [sys.executable, "-m", "attnconv.train", "vision", "--config", "cpu-quick", "--model", "sa-quadratic",
               "--out", str(folder), "--set", f"seed={seed}", "--set", f"precision={precision}",
               "--set", f"epochs={epochs}", "--set", "threads=1", "--set", "progress=False"]
    if (folder / "checkpoint.pt").exists():
        command.append("--resume")
    if data:
        command += ["--data", data]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(command, check=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    timing = {"cpu_s": cpu, "wall_s": wall, "resumed": "--resume" in command, "load_after": list(os.getloadavg())}
    tmp = folder / "parity-timing.json.tmp"
    tmp.write_text(json.dumps(timing, indent=2) + "\n")
    tmp.replace(folder / "parity-timing.json")
    return {**json.loads(final.read_text()), **timing}


def paired_t(differences: list[float]) -> float | None:
    """Student's t of the mean of paired differences (None for fewer than two, or no spread)."""
    if len(differences) < 2 or statistics.stdev(differences) == 0:
        return None
    return statistics.mean(differences) / (statistics.stdev(differences) / len(differences) ** 0.5)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--base-epochs", type=int, default=6, help="the float32 arm's epochs (cpu-quick's)")
    parser.add_argument("--probe-repeats", type=int, default=9)
    parser.add_argument("--out", default="results/precision-parity", help="folder of the run folders")
    parser.add_argument("--record", default="results/benchmarks/precision_parity")
    parser.add_argument("--data", default=None, help="an explicit CIFAR-10 copy, passed to the trainer")
    args = parser.parse_args()
    if args.base_epochs < 1:
        parser.error(f"--base-epochs must be at least 1, got {args.base_epochs}")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    plan_file = out / "plan.json"
    if plan_file.exists():  # a rerun keeps the epochs it planned, so resumed runs continue the same schedule
        plan = json.loads(plan_file.read_text())
    else:
        torch.set_num_threads(1)
        probe = measured_speedup(args.probe_repeats)
        plan = {"probe": probe, "epochs": {"fp32": args.base_epochs,
                                           "bf16": max(args.base_epochs, round(args.base_epochs * probe["speedup"]))},
                "meta_at_plan": machine()}
        plan_file.write_text(json.dumps(plan, indent=2) + "\n")
    rows = []
    for i, seed in enumerate(args.seeds):
        for precision in (PRECISIONS if i % 2 == 0 else PRECISIONS[::-1]):
            run = train(out / f"{precision}-s{seed}", seed, precision, plan["epochs"][precision], args.data)
            rows.append({"seed": seed, "precision": precision, "epochs": plan["epochs"][precision],
                         "acc": 100 * run["full_test_acc"], "cpu_min": run["cpu_s"] / 60,
                         "wall_min": run["wall_s"] / 60, "train_min": run["wall_time_s"] / 60})
    by = {(r["seed"], r["precision"]): r for r in rows}
    diffs = [by[s, "bf16"]["acc"] - by[s, "fp32"]["acc"] for s in args.seeds]
    cpu_ratio = [by[s, "bf16"]["cpu_min"] / by[s, "fp32"]["cpu_min"] for s in args.seeds]
    t = paired_t(diffs)
    mean = {p: statistics.mean(by[s, p]["acc"] for s in args.seeds) for p in PRECISIONS}
    winner = "bf16" if statistics.mean(diffs) > 0 else "fp32"
    summary = {"mean_acc": mean, "bf16_minus_fp32": diffs, "mean_difference": statistics.mean(diffs),
               "paired_t": t, "bf16_over_fp32_cpu_time": cpu_ratio, "higher_at_equal_time": winner}
    meta = machine()
    record = {"meta": meta, "plan": plan, "rows": rows, "summary": summary}
    t_text = f"paired t = {t:.2f} on {len(diffs) - 1} degrees of freedom" if t is not None else "no paired t"
    write_record(
        args.record, record, title="Float32 against bfloat16 at equal training time (cpu-quick sa-quadratic)",
        note=(f"Each arm trains the cpu-quick quadratic model on 10,000 images, one thread per run; float32 for "
              f"{plan['epochs']['fp32']} epochs, bfloat16 for {plan['epochs']['bf16']} (its probed speed-up "
              f"{plan['probe']['speedup']:.2f}x); accuracy on all 10,000 test images. Load average at the end "
              f"{meta['load_average'][0]:.1f}."),
        columns=[("seed", "{seed}"), ("precision", "{precision}"), ("epochs", "{epochs}"),
                 ("test accuracy (%)", "{acc:.2f}"), ("CPU time (min)", "{cpu_min:.1f}"),
                 ("wall time (min)", "{wall_min:.1f}")],
        rows=rows,
        summary=(f"bfloat16 minus float32 per seed: {', '.join(f'{d:+.2f}' for d in diffs)} points "
                 f"(mean {statistics.mean(diffs):+.2f}; {t_text}); bfloat16's CPU time over float32's: "
                 f"{', '.join(f'{r:.2f}' for r in cpu_ratio)}. Higher at equal time: {winner}."))
    print((Path(args.record).with_suffix(".md")).read_text())


if __name__ == "__main__":
    main()
