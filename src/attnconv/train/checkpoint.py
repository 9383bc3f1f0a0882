"""Checkpoints written atomically: a crash while saving leaves the previous checkpoint intact."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import torch

__all__ = ["atomic_write_text", "load_checkpoint", "save_checkpoint", "write_json"]


def _replace_from_temp(path: Path, write) -> None:
    """Call ``write(tmp_path)`` on a temporary file next to ``path``, then rename it over ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        write(Path(tmp))
        os.replace(tmp, path)  # atomic on POSIX: readers see the old file or the new one, never half of one
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def save_checkpoint(path: str | os.PathLike, state: dict[str, Any]) -> None:
    """``torch.save(state)`` to ``path`` through a temporary file and a rename."""
    _replace_from_temp(Path(path), lambda tmp: torch.save(state, tmp))


def load_checkpoint(path: str | os.PathLike, map_location: str | torch.device = "cpu") -> dict[str, Any]:
    """A checkpoint saved by :func:`save_checkpoint`."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no checkpoint at {path}")
    return torch.load(path, map_location=map_location, weights_only=False)


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    """Write a text file through a temporary file and a rename."""
    _replace_from_temp(Path(path), lambda tmp: tmp.write_text(text))


def write_json(path: str | os.PathLike, obj: Any) -> None:
    """Write ``obj`` as indented JSON, atomically."""
    atomic_write_text(path, json.dumps(obj, indent=2) + "\n")
