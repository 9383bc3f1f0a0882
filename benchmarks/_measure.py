"""Timing and peak-memory helpers shared by the benchmark scripts (Linux)."""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

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
    """Where and with what a benchmark ran."""
    return {
        "torch": torch.__version__, "python": platform.python_version(), "machine": platform.machine(),
        "processor": platform.processor() or "unknown", "cpus": os.cpu_count(), "threads": torch.get_num_threads(),
        "date": time.strftime("%Y-%m-%d"),
    }
