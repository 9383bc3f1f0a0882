"""Does torch.compile pay in the cpu-30min recipe? The recipe's own command, compiled and not, in alternation.

Usage: ATTNCONV_DATA=/path/to/data python benchmarks/cpu30_compile.py [--rounds 2] [--epochs 3] [--images 6000]
       [--out results/benchmarks/cpu30_compile]

Each run is ``torchrun --standalone --nproc_per_node 2 -m attnconv.train vision --config cpu-30min`` (two processes
of one thread, bfloat16 autocast, batch 100) on a fixed subset of the training images for a few epochs, with
``--set compile=True`` or without; the two kinds alternate, ``--rounds`` times each. From each run's
``metrics.jsonl``: the first epoch's wall seconds (the compiled model compiles during it, into a compile cache
that starts empty, as on a reader's first run) and the median training seconds of the later epochs (the step's
own speed). The summary weighs the two over the recipe's 22 epochs of 50,000 images. Nothing else may run
meanwhile.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch
from _measure import cpu_model, machine, write_record

from attnconv.train.provenance import git_commit

ROOT = Path(__file__).resolve().parents[1]
BIN = ROOT / ".venv" / "bin"
RECIPE_EPOCHS, RECIPE_IMAGES = 22, 50_000


def one_run(compiled: bool, epochs: int, images: int, folder: Path) -> dict:
    out = folder / f"{'compiled' if compiled else 'eager'}-{time.monotonic_ns()}"
    argv = [str(BIN / "torchrun"), "--standalone", "--nproc_per_node", "2", "-m", "attnconv.train", "vision",
            "--config", "cpu-30min", "--model", "sa-quadratic", "--out", str(out), "--set", "progress=False",
            "--set", f"epochs={epochs}", "--set", f"train_images={images}", "--set", f"compile={compiled}"]
    # An empty compile cache for each run, as a reader's first run has: a warm one would skip most of the compiling.
    cache = folder / f"inductor-cache-{time.monotonic_ns()}"
    start = time.monotonic()
    subprocess.run(argv, cwd=ROOT, env={**os.environ, "OMP_NUM_THREADS": "1", "TORCHINDUCTOR_CACHE_DIR": str(cache),
                                        "TRITON_CACHE_DIR": str(cache / "triton")}, check=True,
                   stdout=subprocess.DEVNULL)
    wall = time.monotonic() - start
    epochs_seen = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines() if line.strip()]
    final = json.loads((out / "final.json").read_text())
    return {"compiled": compiled, "first_epoch_s": epochs_seen[0]["epoch_time_s"],
            "later_train_s": statistics.median(e["train_time_s"] for e in epochs_seen[1:]),
            "process_wall_s": wall, "full_test_acc": final["full_test_acc"]}


def report(meta: dict, runs: list[dict], out: str) -> str:
    """Write the record (medians per path, and whether compiling pays over the recipe); return its Markdown."""
    rows = []
    for compiled in (False, True):
        mine = [r for r in runs if r["compiled"] == compiled]
        later = statistics.median(r["later_train_s"] for r in mine)
        first = statistics.median(r["first_epoch_s"] for r in mine)
        rows.append({"path": "compiled" if compiled else "eager", "runs": len(mine), "first_epoch_s": first,
                     "later_train_s": later, "images_per_s": meta["images"] / later,
                     "process_wall_s": statistics.median(r["process_wall_s"] for r in mine)})
    eager, compiled = rows
    step_ratio = eager["later_train_s"] / compiled["later_train_s"]
    compiling_s = compiled["first_epoch_s"] - eager["first_epoch_s"]
    recipe_train_s = RECIPE_EPOCHS * RECIPE_IMAGES / eager["images_per_s"]
    won_s = recipe_train_s * (1 - 1 / step_ratio)
    steps = (f"the compiled steps would save {won_s:.0f} s against those {compiling_s:.0f} s" if won_s > 0 else
             f"the compiled steps would cost {-won_s:.0f} s more, on top of those {compiling_s:.0f} s")
    summary = (f"Compiled steps ran at {step_ratio:.2f}x the eager speed and compiling added {compiling_s:.0f} s to "
               f"the first epoch. Over the recipe's {RECIPE_EPOCHS} epochs of {RECIPE_IMAGES:,} images (about "
               f"{recipe_train_s / 60:.0f} min of eager training here) {steps}: "
               f"{'it pays' if won_s > compiling_s else 'it does not pay'}.")
    return write_record(
        out, {"meta": meta, "runs": runs, "rows": rows},
        title="torch.compile in the cpu-30min recipe",
        note=(f"`benchmarks/cpu30_compile.py` at commit {meta['commit'][:7]}{'+' if meta.get('dirty') else ''}, "
              f"CPU {meta['cpu']}: the recipe's "
              f"torchrun command on {meta['images']:,} training images for {meta['epochs']} epochs, eager and "
              f"compiled in alternation, {meta['rounds']} runs each; medians. Load average before: "
              f"{meta['load_average']}."),
        columns=[("path", "{path}"), ("runs", "{runs}"), ("first epoch (s)", "{first_epoch_s:.1f}"),
                 ("later epochs' training (s, median)", "{later_train_s:.2f}"),
                 ("images/s", "{images_per_s:.0f}"), ("whole command (s)", "{process_wall_s:.0f}")],
        rows=rows, summary=summary)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--images", type=int, default=6000)
    parser.add_argument("--out", default="results/benchmarks/cpu30_compile")
    args = parser.parse_args()
    if args.epochs < 2:
        parser.error("--epochs must be at least 2: the first epoch holds the compiling")
    if not os.environ.get("ATTNCONV_DATA"):
        parser.error("ATTNCONV_DATA must name the data folder (the CIFAR-10 JPEG zips)")
    torch.set_num_threads(1)  # the record's thread count is the runs' (OMP_NUM_THREADS=1 in each process)
    meta = {**machine(), "benchmark": "cpu30_compile", "rounds": args.rounds, "epochs": args.epochs,
            "images": args.images,
            **git_commit(Path(__file__)), "cpu": cpu_model()}
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            for compiled in (False, True):
                runs.append({"round": r + 1, **one_run(compiled, args.epochs, args.images, Path(tmp))})
                print(runs[-1], flush=True)
    print(report(meta, runs, args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
