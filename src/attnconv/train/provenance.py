"""Where a result came from: the machine, the software, the code version and the data."""

from __future__ import annotations

import os
import platform
import subprocess
import time
from pathlib import Path
from typing import Any

import torch

__all__ = ["device_description", "git_commit", "provenance"]


def device_description(device: torch.device) -> str:
    """``"NVIDIA H200"`` or ``"CPU: <model name>, 2 cores, 2 threads"``."""
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    name = platform.processor() or platform.machine()
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                name = line.split(":", 1)[1].strip()
                break
    threads = torch.get_num_threads()
    return f"CPU: {name}, {os.cpu_count()} cores, {threads} thread{'' if threads == 1 else 's'}"


def git_commit(path: Path | None = None) -> dict[str, Any]:
    """The commit of the repository holding ``path`` (default: this package) and whether tracked files differ
    from it. Read-only git commands; ``{"commit": None}`` outside a repository."""
    where = Path(path or __file__).resolve().parent
    env = dict(os.environ, GIT_OPTIONAL_LOCKS="0")  # never write the index, not even its stat cache
    try:
        commit = subprocess.run(["git", "-C", str(where), "rev-parse", "HEAD"], capture_output=True, text=True,
                                check=True, env=env).stdout.strip()
        status = subprocess.run(["git", "-C", str(where), "status", "--porcelain", "--untracked-files=no"],
                                capture_output=True, text=True, check=True, env=env).stdout
    except (OSError, subprocess.CalledProcessError):
        return {"commit": None, "dirty": None}
    return {"commit": commit, "dirty": bool(status.strip())}


def provenance(device: torch.device, world_size: int, data_description: str, data_source: str,
               config: dict[str, Any], extra: dict[str, Any] | None = None,
               code: dict[str, Any] | None = None) -> dict[str, Any]:
    """A JSON-able record for ``provenance.json``; ``extra`` adds run-specific entries (wall time, ...).

    ``code`` is :func:`git_commit` taken when the run (or its resumed part) started: the code that trained it. A
    record written at the end of a long run would otherwise name whatever the checkout holds by then. Without it,
    the commit is read now.
    """
    record = {
        "device": device_description(device),
        "processes": world_size,
        "torch": torch.__version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
        **(code if code is not None else git_commit()),
        "data": data_description,
        "data_source": data_source,
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "config": config,
    }
    record.update(extra or {})
    return record
