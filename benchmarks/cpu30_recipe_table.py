"""The table of what each change of the cpu-30min recipe bought, from the records of
``benchmarks/cpu30_recipe_steps.sh`` (``results/cpu-30min-steps-<step>/``), run back to back on one machine.

Usage: python benchmarks/cpu30_recipe_table.py [--out results/benchmarks/cpu30_recipe_steps]

Per step: the change against the step before, the accuracy on all 10,000 test images at the end (with and without
the mirrored look), the best 2,000-image accuracy of its epochs, the median epoch's wall seconds and images/s, the
CPU seconds per epoch (two processes: up to twice the wall seconds on two idle cores) and the commit and date of
the record. A step whose record is missing is left out and named.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

from _measure import machine, write_record

ROOT = Path(__file__).resolve().parents[1]
STEPS = {"v1": "the first recipe (dropout 0.1)",
         "no-dropout": "no dropout: today's cpu-30min",
         "wd-5e-4": "no dropout, weight decay 5e-4 instead of 1e-4",
         "no-smoothing": "no dropout, no label smoothing"}


def step_row(step: str, folder: Path) -> dict:
    final = json.loads((folder / "final.json").read_text())
    prov = json.loads((folder / "provenance.json").read_text())
    epochs = [json.loads(line) for line in (folder / "metrics.jsonl").read_text().splitlines() if line.strip()]
    return {"step": step, "change": STEPS[step], "epochs": final["epochs"],
            "full_acc": 100 * final["full_test_acc"], "full_acc_no_flip": 100 * final["full_test_acc_no_flip"],
            "best_subset": 100 * max(e["test_acc"] for e in epochs),
            "epoch_s": statistics.median(e["epoch_time_s"] for e in epochs),
            "images_per_s": statistics.median(e["train_images_per_s"] for e in epochs),
            "cpu_s": statistics.median(e["cpu_time_s"] for e in epochs), "wall_min": final["wall_time_s"] / 60,
            "commit": prov["commit"][:7], "dirty": prov["dirty"], "date": prov["date"], "device": prov["device"]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "results" / "benchmarks" / "cpu30_recipe_steps"))
    parser.add_argument("--edits", default="", help="what the tracked edits of a dirty tree were (said in the note)")
    args = parser.parse_args(argv)
    rows, missing = [], []
    for step in STEPS:
        folder = ROOT / "results" / f"cpu-30min-steps-{step}"
        if (folder / "final.json").is_file():
            rows.append(step_row(step, folder))
        else:
            missing.append(step)
    if not rows:
        print("no step has a finished record: run benchmarks/cpu30_recipe_steps.sh first", file=sys.stderr)
        return 2
    meta = machine()
    note = ("Each step is the cpu-30min command (torchrun, two processes of one thread, bfloat16, all 50,000 "
            "training images) for 6 epochs, a proxy for the recipe's 22, run back to back by "
            "benchmarks/cpu30_recipe_steps.sh." + (f" Missing: {', '.join(missing)}." if missing else "")
            + (" A + after the commit: the tree had tracked edits when the step started"
               + (f" ({args.edits})." if args.edits else ".") if any(r["dirty"] for r in rows) else ""))
    print(write_record(args.out, {"meta": meta, "rows": rows, "missing": missing},
                       title="What each change of the cpu-30min recipe bought (6-epoch proxies)", note=note,
                       columns=[("step", "{step}"), ("change", "{change}"),
                                ("10,000 images, mirrored (%)", "{full_acc:.2f}"),
                                ("without the mirror (%)", "{full_acc_no_flip:.2f}"),
                                ("best 2,000-image epoch (%)", "{best_subset:.2f}"),
                                ("epoch (s, median)", "{epoch_s:.1f}"), ("images/s", "{images_per_s:.0f}"),
                                ("CPU s per epoch", "{cpu_s:.0f}"), ("commit", "{commit}{plus}")],
                       rows=[{**r, "plus": "+" if r["dirty"] else ""} for r in rows]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
