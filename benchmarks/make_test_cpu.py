"""Where `make test`'s CPU time goes, by kind of check: each stage run alone, one test at a time, on an idle machine.

Usage: ATTNCONV_DATA=/path/to/data python benchmarks/make_test_cpu.py [--out results/benchmarks/make_test_cpu]

`make test` keeps both cores busy (about 96% on two), so its wall time is its CPU time over the cores. This script
measures that CPU time per check: it runs the book build (every chapter with the data, FRESH=1, and Sphinx) and
then each pytest stage of the Makefile with the same arguments but without pytest-xdist, so that one test runs at
a time, and takes each test's cost as the machine's busy CPU time from ``/proc/stat`` over that test (its own
process, its kernels, sandboxes, browsers and commands). Nothing else may run meanwhile.

Each test goes into one group (:func:`group`): the runs of whole chapters (the build with data, the course's
grading of every chapter without data, the Colab-like run, nbval), the browser checks of the built book and of
the explorables, the grader's situations and attacks, the claims ledger, and the library's other tests. The
summary compares the total with the CPU time that a 6-minute `make test` allows on this machine's cores at the
busy share `make test` reaches (96%).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch
from _busy_plugin import busy
from _measure import cpu_model, machine, write_record

from attnconv.train.provenance import git_commit

ROOT = Path(__file__).resolve().parents[1]
BIN = ROOT / ".venv" / "bin"
BUSY_SHARE = 0.96  # make test's busy share of two cores in the fresh-clone records
TARGET_S = 360

# The stages as the Makefile runs them (test-lib, test-course, test-book, test-notebooks), serially.
STAGES = {
    "test-lib": ["tests", "--ignore=tests/book", "--ignore=tests/course", "-q"],
    "test-course": ["tests/course", "-q"],
    "test-book": ["tests/book", "-q"],
}


def nodata_chapters(makefile: Path = ROOT / "Makefile") -> list[str]:
    """The chapters the Makefile's test-notebooks runs through nbval without data (its ``NODATA_CHAPTERS``)."""
    for line in makefile.read_text().splitlines():
        if line.startswith("NODATA_CHAPTERS ?="):
            return line.split("?=", 1)[1].split()
    raise ValueError(f"{makefile} sets no NODATA_CHAPTERS")


STAGES["test-notebooks"] = ["--nbval-lax", "--nbval-current-env", *nodata_chapters(), "-q", "-p", "no:cacheprovider"]


def group(stage: str, nodeid: str) -> str:
    """The kind of check a test is (one of the table's rows)."""
    if stage == "test-notebooks":
        return "chapter runs: nbval without data (07, 07a)"
    if nodeid.startswith("tests/colab/"):
        return "chapter runs: Colab-like (installed wheel, mirror downloads)"
    if nodeid.startswith("tests/course/test_editions.py::test_worked_edition") or \
            nodeid.startswith("tests/course/test_editions.py::test_untouched_student"):
        return "chapter runs: the course grades each chapter (without data)"
    if nodeid.startswith("tests/course/"):
        return "grader: situations, attacks, cheats, units"
    if nodeid.startswith("tests/book/"):
        return "browser: the built book at 1400 and 400 px"
    if nodeid.startswith("tests/explorables/"):
        return "browser: the explorables"
    if nodeid.startswith("tests/test_claims.py"):
        return "claims ledger"
    return "library: every other test"


def run(argv: list[str], env: dict) -> tuple[float, float, int]:
    """(busy CPU s, wall s, exit status) of one command."""
    cpu, wall = busy(), time.monotonic()
    code = subprocess.run(argv, cwd=ROOT, env=env).returncode
    return busy() - cpu, time.monotonic() - wall, code


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="results/benchmarks/make_test_cpu")
    parser.add_argument("--stages", nargs="+", default=["book", *STAGES], choices=["book", *STAGES])
    args = parser.parse_args()
    if not os.environ.get("ATTNCONV_DATA"):
        parser.error("ATTNCONV_DATA must name the data folder: the build runs the chapters with the data")
    torch.set_num_threads(1)  # the record's thread count is the runs' (OMP_NUM_THREADS=1, as make test sets it)
    meta = {**machine(), "benchmark": "make_test_cpu",
            **git_commit(Path(__file__)), "cpu": cpu_model()}
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    rows, stages = {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        ledger = Path(tmp) / "ledger"
        ledger.mkdir()
        env["ATTNCONV_LEDGER_CACHE"] = str(ledger)  # one ledger run, shared by the book page and test_claims
        if "book" in args.stages:
            cpu, wall, code = run(["make", "--no-print-directory", "book", "FRESH=1"], env)
            stages["book"] = {"cpu_s": cpu, "wall_s": wall, "exit": code}
            rows["chapter runs: the book build with the data (Sphinx and the claims page's ledger included)"] = [cpu, 1]
        for stage in [s for s in args.stages if s != "book"]:
            out = Path(tmp) / f"{stage}.json"
            stage_env = {**env, "PYTHONPATH": str(Path(__file__).resolve().parent), "MAKE_TEST_CPU_OUT": str(out)}
            if stage == "test-notebooks":
                nodata = Path(tmp) / "nodata"
                nodata.mkdir()
                stage_env.pop("ATTNCONV_DATA")
                stage_env["ATTNCONV_CACHE"] = str(nodata)
            cpu, wall, code = run([str(BIN / "python"), "-m", "pytest", *STAGES[stage], "-p",
                                   "_busy_plugin"], stage_env)
            seen = json.loads(out.read_text()) if out.exists() else {}
            stages[stage] = {"cpu_s": cpu, "wall_s": wall, "exit": code, "tests": len(seen),
                             "slowest": sorted(seen.items(), key=lambda kv: -kv[1][0])[:15]}
            for nodeid, (test_cpu, _) in seen.items():
                name = group(stage, nodeid)
                rows.setdefault(name, [0.0, 0])
                rows[name][0] += test_cpu
                rows[name][1] += 1
    total = sum(cpu for cpu, _ in rows.values())
    budget = TARGET_S * (os.cpu_count() or 1) * BUSY_SHARE
    table = [{"group": name, "tests": n, "cpu_s": cpu, "share": 100 * cpu / total}
             for name, (cpu, n) in sorted(rows.items(), key=lambda kv: -kv[1][0])]
    table.append({"group": "**all**", "tests": sum(n for _, n in rows.values()), "cpu_s": total, "share": 100.0})
    chapters = sum(r["cpu_s"] for r in table if r["group"].startswith(("chapter runs", "browser")))
    summary = (f"A {TARGET_S}-second `make test` on {os.cpu_count()} cores at {BUSY_SHARE:.0%} busy allows "
               f"{budget:.0f} CPU s; the checks above take {total:.0f}. The chapter runs and the browser checks alone "
               f"take {chapters:.0f}, which leaves {budget - chapters:.0f} CPU s for the "
               f"{total - chapters:.0f} of every other test.")
    record = {"meta": {**meta, "budget_cpu_s": budget}, "stages": stages, "rows": table}
    text = write_record(
        args.out, record, title="Where make test's CPU time goes, by kind of check",
        note=(f"`benchmarks/make_test_cpu.py` at commit {meta['commit'][:7]}{'+' if meta['dirty'] else ''}, "
              f"CPU {meta['cpu']}: the book build "
              "(FRESH=1) and each pytest stage of the Makefile run alone, one test at a time (no pytest-xdist); "
              "each test's cost is the machine's busy CPU time over it (/proc/stat), its kernels, sandboxes, "
              f"browsers and commands included. Load average before: {meta['load_average']}."),
        columns=[("kind of check", "{group}"), ("tests", "{tests}"), ("CPU s", "{cpu_s:.0f}"),
                 ("share (%)", "{share:.0f}")],
        rows=table, summary=summary)
    print(text)
    return max((s["exit"] for s in stages.values()), default=0)


if __name__ == "__main__":
    sys.exit(main())
