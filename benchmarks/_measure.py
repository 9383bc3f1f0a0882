"""What every benchmark script shares (Linux): timing, peak memory, the machine, and the record it writes.

:func:`write_record` is the one writer of a benchmark's results: ``OUT.json`` (the full record) and ``OUT.md``
(a title, a note on the set-up and the machine, one table, and an optional summary line).
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import torch

# A fixed mmap threshold makes glibc return every large buffer to the OS when it is freed, so the resident
# set's high-water mark follows the peak of live tensors rather than the allocator's caching.
MALLOC_ENV = {"MALLOC_MMAP_THRESHOLD_": "65536", "MALLOC_TRIM_THRESHOLD_": "0"}


def median_time(step: Callable[[], None], repeats: int, warmup: int = 2) -> float:
    """Median wall time of ``step()`` in seconds over ``repeats`` runs, after ``warmup`` runs."""
    for _ in range(warmup):
        step()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def status_kib(field: str) -> int:
    """A field of /proc/self/status (VmRSS, VmHWM) in KiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/self/status")


def reset_peak() -> int:
    """Reset the high-water mark to the current resident set; returns that baseline in KiB."""
    Path("/proc/self/clear_refs").write_text("5")
    return status_kib("VmRSS")


def peak_since(baseline_kib: int) -> float:
    """Growth of the high-water mark over ``baseline_kib``, in MiB."""
    return (status_kib("VmHWM") - baseline_kib) / 1024


def print_step_peak(step: Callable[[], None]) -> None:
    """For a child process: run ``step`` once to allocate what persists, then print the peak of a second run."""
    step()  # parameters' gradients, thread pools
    baseline = reset_peak()
    step()
    print(json.dumps({"peak_mib": peak_since(baseline)}))


def child_peak(script: str, args: list[str], runs: int = 3) -> float:
    """Median over ``runs`` fresh subprocesses of the ``peak_mib`` each prints as JSON on its last line."""
    env = dict(os.environ, **MALLOC_ENV)
    peaks = []
    for _ in range(runs):
        out = subprocess.run([sys.executable, script, *args], capture_output=True, text=True, check=True, env=env)
        peaks.append(json.loads(out.stdout.strip().splitlines()[-1])["peak_mib"])
    return statistics.median(peaks)


def machine() -> dict:
    """Where and with what a benchmark ran (and the load average, when other work may share the cores)."""
    return {
        "torch": torch.__version__, "python": platform.python_version(), "machine": platform.machine(),
        "processor": platform.processor() or "unknown", "cpus": os.cpu_count(), "threads": torch.get_num_threads(),
        "date": time.strftime("%Y-%m-%d"), "load_average": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
    }


def cpu_model() -> str:
    """The CPU's model name, as /proc/cpuinfo gives it (the platform's processor string elsewhere)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def machine_note(meta: Mapping[str, Any]) -> str:
    """One sentence on the software and machine in ``meta`` (from :func:`machine`)."""
    where = f"{meta['cpus']} CPUs" + (f" ({meta['machine']})" if meta.get("machine") else "")
    return (f"torch {meta['torch']}, Python {meta['python']}, {where}, {meta['threads']} thread(s), "
            f"{meta['date']}.")


def write_record(out: str | Path, record: Mapping[str, Any], *, title: str, note: str,
                 columns: Sequence[tuple[str, str]], rows: Sequence[Mapping[str, Any]], summary: str = "") -> str:
    """Write ``OUT.json`` (``record``) and ``OUT.md``; return the Markdown.

    Args:
        out: the path without suffix, e.g. ``results/benchmarks/attention``.
        record: everything measured, as JSON-able data (usually ``{"meta": ..., "rows": ...}``).
        title: the Markdown heading.
        note: the set-up, in a sentence or two (the machine sentence is appended).
        columns: ``(header, format)`` per column; ``format`` is a ``str.format`` template over a row's keys,
            e.g. ``("time (ms)", "{ms:.1f}")``.
        rows: the table's rows.
        summary: a closing line (a ratio, a conclusion), or nothing.
    """
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(record, indent=2) + "\n")
    meta = record.get("meta", {})
    lines = [f"# {title}", "", note + (" " + machine_note(meta) if {"torch", "cpus"} <= set(meta) else ""), "",
             "| " + " | ".join(h for h, _ in columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(fmt.format(**row) for _, fmt in columns) + " |" for row in rows]
    if summary:
        lines += ["", summary]
    text = "\n".join(lines) + "\n"
    out.with_suffix(".md").write_text(text)
    return text
