"""Opening a run folder: every check that can fail before the data loads, and a lock against a second run.

:func:`open_run` checks that ``--out`` is a folder this process can write in, that no other live run holds its lock
(``.lock``: the id and host of the process writing there; a lock whose process is gone is replaced), that
``--resume`` matches what is there, and that the checkpoint loads and matches the config and the data. It then
removes the temporary files that a killed run left behind. Each refusal is a :class:`RunSetupError`, one line.
"""

from __future__ import annotations

import dataclasses
import os
import socket
import time
from pathlib import Path
from typing import Any, Callable

from .checkpoint import load_checkpoint
from .runs import start_run

__all__ = ["LOCK_FILE", "RunFolder", "RunSetupError", "data_identity", "open_run"]

LOCK_FILE = ".lock"


class RunSetupError(ValueError):
    """A run refused before it trains (a run folder it cannot use, a resume that does not match, a batch larger than
    the data): one line that says what to change. The command line exits with code 2."""


@dataclasses.dataclass
class RunFolder:
    """A run folder opened by :func:`open_run`: its lock is held until :meth:`close` (or the ``with`` block ends).

    Attributes:
        out: the folder.
        checkpoint: ``out/checkpoint.pt``.
        state: the checkpoint to resume from, loaded and checked (``None`` for a new run).
        data: what identifies the run's data (:func:`data_identity`); saved in every checkpoint as ``"data"``.
    """

    out: Path
    checkpoint: Path
    state: dict[str, Any] | None
    data: Any
    lock: Path | None = None

    def close(self) -> None:
        """Release the lock (if this process holds it)."""
        if self.lock is not None and _lock_holder(self.lock)[0] == os.getpid():
            self.lock.unlink(missing_ok=True)
        self.lock = None

    def __enter__(self) -> "RunFolder":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def data_identity(path: str | os.PathLike | None) -> str | None:
    """The data a run reads, as saved in its checkpoint: the absolute path given as ``--data``, or ``None`` for the
    default copy."""
    return None if path is None else str(Path(path).expanduser().resolve())


def _lock_holder(lock: Path) -> tuple[int | None, str | None]:
    """``(pid, host)`` written in a lock file; ``(None, None)`` when it is missing, empty or unreadable."""
    try:
        pid, host = lock.read_text().split()[:2]
        return int(pid), host
    except (OSError, ValueError):
        return None, None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        return True
    return True


def _take_lock(out: Path) -> Path:
    """Create ``out/.lock`` holding this process's id; a lock left by a process that is gone is replaced."""
    lock, host = out / LOCK_FILE, socket.gethostname()
    for _ in range(3):
        try:
            fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            pid, where = _lock_holder(lock)
            if pid is None:  # being written this instant, or left empty by a kill long ago
                try:
                    fresh = time.time() - lock.stat().st_mtime < 10.0
                except FileNotFoundError:
                    continue
                if fresh:
                    raise RunSetupError(f"{out} is in use by another run that is starting (lock {lock}): wait for it, "
                                        "or use another --out") from None
            elif where != host:
                raise RunSetupError(f"{out} is in use by a run on {where} (pid {pid}); if no run is writing there, "
                                    f"delete {lock}") from None
            elif _alive(pid):
                raise RunSetupError(f"{out} is in use by another run (pid {pid}): wait for it to finish, or use "
                                    "another --out") from None
            lock.unlink(missing_ok=True)  # stale: the process that held it is gone
            continue
        except OSError as err:
            raise RunSetupError(f"cannot write in {out} ({err.strerror or err}): choose a folder you can write "
                                "to as --out") from None
        with os.fdopen(fd, "w") as f:
            f.write(f"{os.getpid()} {host}\n")
        return lock
    raise RunSetupError(f"could not take the lock {lock}: another run keeps replacing it")


def _remove_stale_temporaries(out: Path) -> None:
    """Delete the ``.NAME.*.tmp`` files that a run killed while writing left behind (the lock is held: no live run
    is writing them)."""
    for tmp in out.glob(".*.tmp"):
        if tmp.is_file():
            tmp.unlink(missing_ok=True)


def open_run(out: str | os.PathLike, resume: bool, *, data: Any = None, is_main: bool = True,
             required: tuple[str, ...] = ("config",), check: Callable[[dict[str, Any]], None] | None = None,
             map_location: Any = "cpu") -> RunFolder:
    """Check a run folder before any data loads, take its lock, and load the checkpoint to resume from.

    Args:
        out: the run folder (created if missing).
        resume: continue from ``out/checkpoint.pt``.
        data: :func:`data_identity` of the run's data; a checkpoint that saved another one is refused.
        is_main: the process that writes files (rank 0): it alone creates the folder and holds the lock.
        required: keys the checkpoint must hold.
        check: called with the loaded checkpoint; a ``ValueError`` it raises (a config that differs) is refused.

    Raises:
        RunSetupError: ``out`` is a file or cannot be written, another live run holds its lock, the checkpoint
            saved other data, or ``check`` refused it.
        FileExistsError, FileNotFoundError: as :func:`start_run`.
        ~attnconv.train.checkpoint.CheckpointError: the checkpoint cannot be used.
    """
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise RunSetupError(f"--out {out} is a file, not a folder: choose a folder for the run")
    ckpt = start_run(out, resume)
    folder = RunFolder(out, ckpt, None, data)
    if is_main:
        try:
            out.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise RunSetupError(f"cannot create the run folder {out} ({err.strerror or err}): choose a folder you "
                                "can write to as --out") from None
        folder.lock = _take_lock(out)
    try:
        if is_main:
            _remove_stale_temporaries(out)
        if resume:
            folder.state = load_checkpoint(ckpt, map_location=map_location, required=required)
            saved = folder.state.get("data", data)  # checkpoints written before this was recorded: not checked
            if saved != data:
                raise RunSetupError(f"cannot resume: {ckpt} was trained on --data {saved or '(the default copy)'}, "
                                    f"not {data or '(the default copy)'}: pass the same --data, or start a new run")
            if check is not None:
                try:
                    check(folder.state)
                except ValueError as err:
                    raise RunSetupError(str(err)) from None
    except BaseException:
        folder.close()
        raise
    return folder
