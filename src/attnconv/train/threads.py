"""How many CPU threads a training process uses: set once at start-up, and recorded.

PyTorch picks its intra-op thread count when it starts (usually the number of cores it sees), and nothing
else in a run changes it. A trainer sets it explicitly instead, so that the record says what ran: on two idle
cores two threads train 1.55-1.85x faster than one, and a niced run beside other work may want one.
"""

from __future__ import annotations

import os
from typing import Any

import torch

__all__ = ["available_cores", "resolve_threads", "set_threads"]


def available_cores() -> int:
    """The CPU cores this process may run on (its affinity mask, which containers and ``taskset`` narrow)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def resolve_threads(requested: int | None, processes_per_machine: int = 1) -> int:
    """``requested`` itself, or for ``None`` the available cores shared evenly by the processes on this machine
    (at least one each). Where the environment sets ``OMP_NUM_THREADS`` to a positive number (PyTorch's own
    default follows it too), ``None`` is at most that: ``make test`` sets it to 1, as its processes already fill
    the cores."""
    if requested is not None:
        if isinstance(requested, bool) or not isinstance(requested, int) or requested < 1:
            raise ValueError(f"threads must be a positive int or None (all available cores), got {requested!r}")
        return requested
    shared = max(1, available_cores() // max(1, processes_per_machine))
    limit = os.environ.get("OMP_NUM_THREADS", "").strip()
    return min(shared, int(limit)) if limit.isdigit() and int(limit) > 0 else shared


def set_threads(requested: int | None, processes_per_machine: int = 1) -> dict[str, Any]:
    """Set PyTorch's intra-op thread count (:func:`resolve_threads`) and return what to record in provenance."""
    used = resolve_threads(requested, processes_per_machine)
    torch.set_num_threads(used)
    return {"requested": requested, "used": torch.get_num_threads(), "available_cores": available_cores()}
