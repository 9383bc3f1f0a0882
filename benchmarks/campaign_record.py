"""The campaign record of ``benchmarks/gpu_campaign.sh``: ``OUT/campaign.json``.

Usage (by the script): python benchmarks/campaign_record.py --out OUT --start EPOCH_SECONDS --dry-run 0|1

It holds the machine (device, versions, commit), the start, end and wall time of the whole campaign, every step's
exit status and wall time (from ``steps.jsonl``), and each run folder's ``final.json`` with its provenance's
device and wall time, so that one file says what ran where and for how long.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import numpy as np
import torch

import attnconv
from attnconv.train.cuda import gpu_name, peak_memory_gib
from attnconv.train.provenance import device_description, git_commit

RUNS = ("vision-sa-quadratic", "vision-resnet18", "bert-pretrain", "bert-finetune-mr")


def record(out: Path, start: float, dry_run: bool) -> dict:
    """The campaign's record; also written to ``out/campaign.json`` (atomically)."""
    device = torch.device("cuda") if gpu_name() is not None else torch.device("cpu")
    steps = [json.loads(line) for line in (out / "steps.jsonl").read_text().splitlines() if line.strip()]
    runs = {}
    for name in RUNS:
        folder = out / name
        final = folder / "final.json"
        prov = folder / "provenance.json"
        runs[name] = {"final": json.loads(final.read_text()) if final.is_file() else None,
                      "device": json.loads(prov.read_text()).get("device") if prov.is_file() else None,
                      "wall_time_s": json.loads(prov.read_text()).get("wall_time_s") if prov.is_file() else None}
    end = time.time()
    result = {"dry_run": dry_run, "device": device_description(device), "gpu": gpu_name(),
              "peak_memory_gib": peak_memory_gib(device),  # this process only: each run records its own
              "python": platform.python_version(), "torch": torch.__version__, "numpy": np.__version__,
              "cuda": torch.version.cuda, "attnconv": attnconv.__version__ if hasattr(attnconv, "__version__") else None,
              **git_commit(Path(attnconv.__file__)), "platform": platform.platform(),
              "start": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(start)),
              "end": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(end)), "wall_time_s": end - start,
              "steps": steps, "runs": runs, "ok": all(s["exit_status"] == 0 for s in steps) and len(steps) == len(RUNS)}
    tmp = out / "campaign.json.tmp"
    tmp.write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
    tmp.replace(out / "campaign.json")
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--start", required=True, type=float)
    parser.add_argument("--dry-run", type=int, choices=(0, 1), default=0)
    args = parser.parse_args(argv)
    result = record(Path(args.out), args.start, bool(args.dry_run))
    print(f"campaign {'(dry run) ' if result['dry_run'] else ''}on {result['device']}: "
          f"{result['wall_time_s']:.0f} s, {'all steps succeeded' if result['ok'] else 'a step failed'}")
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
