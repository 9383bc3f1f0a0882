"""Checkpoints written atomically: a crash while saving leaves the previous checkpoint intact."""

from __future__ import annotations

import io
import json
import os
import tempfile
from pathlib import Path
from typing import Any

import torch

__all__ = ["CheckpointError", "atomic_write_text", "load_checkpoint", "save_checkpoint", "write_json"]


def _write_bytes(path: Path, data: bytes | memoryview) -> None:
    """The one place that writes a run's bytes to disk: an ``OSError`` (a full disk: ``ENOSPC``) comes out as it is."""
    with open(path, "wb") as f:
        f.write(data)


def _umask() -> int:
    """The process's umask: Linux's /proc/self/status, which reads it without changing it; elsewhere by setting it
    and putting it back at once (Python has no other way to read it)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except OSError:
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _replace_from_temp(path: Path, data: bytes | memoryview) -> None:
    """Write ``data`` to a temporary file next to ``path``, then rename it over ``path``.

    On any failure (a full disk, an interrupt) the temporary file is removed and ``path`` keeps its old contents;
    an ``OSError`` names ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        # mkstemp makes the file readable by its owner alone; a record is for everyone the umask lets read it (a
        # grader's kernel runs as another user, and a committed record keeps the mode it was written with).
        os.chmod(tmp, 0o666 & ~_umask())
        _write_bytes(Path(tmp), data)
        os.replace(tmp, path)  # atomic on POSIX: readers see the old file or the new one, never half of one
    except OSError as err:
        Path(tmp).unlink(missing_ok=True)
        raise OSError(err.errno, err.strerror or str(err), str(path)) from err
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def save_checkpoint(path: str | os.PathLike, state: dict[str, Any]) -> None:
    """``torch.save(state)`` to ``path`` through a temporary file and a rename.

    The state is serialised in memory first, so that a write that fails (a full disk) raises the ``OSError`` itself,
    not torch's own error about a stream position."""
    buffer = io.BytesIO()
    torch.save(state, buffer)
    _replace_from_temp(Path(path), buffer.getbuffer())


class CheckpointError(ValueError):
    """A checkpoint file that cannot be used: empty, not a checkpoint, or missing what the run needs. Its message
    is one line that names the file."""


def load_checkpoint(path: str | os.PathLike, map_location: str | torch.device = "cpu",
                    required: tuple[str, ...] = ()) -> dict[str, Any]:
    """A checkpoint saved by :func:`save_checkpoint`.

    Args:
        required: keys the caller reads; a checkpoint without one of them is refused here, not with a
            ``KeyError`` later.

    Raises:
        FileNotFoundError: there is no file at ``path``.
        CheckpointError: the file is empty, unreadable (truncated or not written by ``torch.save``), does not hold
            a dict, or lacks a ``required`` key.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no checkpoint at {path}")
    if path.stat().st_size == 0:
        raise CheckpointError(f"checkpoint {path} is empty (0 bytes): delete it, or resume from another copy")
    try:
        state = torch.load(path, map_location=map_location, weights_only=False)
    except Exception as err:  # torch.load raises many kinds (UnpicklingError, EOFError, RuntimeError, ...)
        reason = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise CheckpointError(f"checkpoint {path} cannot be read, it is truncated or not a checkpoint "
                              f"({type(err).__name__}: {reason[:200]})") from err
    if not isinstance(state, dict):
        raise CheckpointError(f"checkpoint {path} holds a {type(state).__name__}, not a dict of training state")
    missing = [key for key in required if key not in state]
    if missing:
        raise CheckpointError(f"checkpoint {path} lacks {', '.join(map(repr, missing))}: it is not a checkpoint "
                              "of this kind of run")
    return state


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    """Write a text file through a temporary file and a rename."""
    _replace_from_temp(Path(path), text.encode())


def write_json(path: str | os.PathLike, obj: Any) -> None:
    """Write ``obj`` as indented JSON, atomically."""
    atomic_write_text(path, json.dumps(obj, indent=2) + "\n")
