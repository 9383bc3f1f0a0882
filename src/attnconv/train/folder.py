"""Opening a run folder: every check that can fail before the data loads, and a lock against a second run.

:func:`open_run` checks that ``--out`` is a folder this process can write in, that no other live run holds its lock
(an exclusive ``flock`` on ``.lock``, which names the process; the system drops it when that process dies), that
``--resume`` matches what is there, and that the checkpoint loads and matches the config and the data. It then
removes the temporary files that a killed run left behind. Each refusal is a :class:`RunSetupError`, one line.
"""

from __future__ import annotations

import dataclasses
import os
import socket
from pathlib import Path
from typing import Any, Callable

try:
    import fcntl
except ImportError:  # Windows: no flock, so no lock (the rest of the checks still run)
    fcntl = None

from .checkpoint import load_checkpoint
from .runs import CHECKPOINT_NAME, start_run

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
        data: what the run reads (:func:`data_identity`); saved in every checkpoint as ``"data"``.
    """

    out: Path
    checkpoint: Path
    state: dict[str, Any] | None
    data: dict[str, str | None]
    lock: Path | None = None
    lock_fd: int | None = None

    def close(self) -> None:
        """Release the lock: remove ``.lock`` (while still holding it) and close it."""
        if self.lock_fd is not None:
            try:
                if os.stat(self.lock).st_ino == os.fstat(self.lock_fd).st_ino:
                    self.lock.unlink()
            except FileNotFoundError:
                pass
            os.close(self.lock_fd)
        self.lock, self.lock_fd = None, None

    def __enter__(self) -> "RunFolder":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def data_identity(**paths: str | os.PathLike | None) -> dict[str, str | None]:
    """What a run reads, as saved in its checkpoint: each command-line option (``data="..."`` is ``--data``,
    ``from_="..."`` is ``--from``) with its absolute path, or ``None`` for the default copy. A run folder given as
    ``--from`` stands for its checkpoint, so that the folder and its ``checkpoint.pt`` are the same source."""
    out = {}
    for option, path in paths.items():
        resolved = None if path is None else Path(path).expanduser().resolve()
        if resolved is not None and resolved.is_dir() and option == "from_":
            resolved = resolved / CHECKPOINT_NAME
        out["--" + option.rstrip("_")] = None if resolved is None else str(resolved)
    return out


def _lock_holder(lock: Path) -> tuple[int | None, str | None]:
    """``(pid, host)`` written in a lock file; ``(None, None)`` when it is missing, empty or unreadable."""
    try:
        pid, host = lock.read_text().split()[:2]
        return int(pid), host
    except (OSError, ValueError):
        return None, None


def _in_use(out: Path, lock: Path) -> RunSetupError:
    pid, host = _lock_holder(lock)
    where = "" if host == socket.gethostname() else f" on {host}"
    who = "another run" if pid is None else f"another run (pid {pid}{where})"
    return RunSetupError(f"{out} is in use by {who}: wait for it to finish, or use another --out")


def _take_lock(out: Path) -> tuple[Path, int]:
    """Hold ``out/.lock``: an exclusive ``flock`` on it for as long as the returned descriptor is open, with this
    process's id and host written in it for the message a second run gets.

    The operating system releases a ``flock`` when its process dies, however it dies, so a lock file left by a
    killed run (its pid dead) holds no lock and is simply taken over; there is nothing stale to clean up by hand.
    """
    lock = out / LOCK_FILE
    for _ in range(5):
        try:
            fd = os.open(lock, os.O_CREAT | os.O_RDWR, 0o644)
        except OSError as err:
            raise RunSetupError(f"cannot write in {out} ({err.strerror or err}): choose a folder you can write "
                                "to as --out") from None
        try:
            if fcntl is not None:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise _in_use(out, lock) from None
        try:
            same = os.stat(lock).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        if not same:  # the run that held it ended and removed the file between our open and our lock: again
            os.close(fd)
            continue
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()} {socket.gethostname()}\n".encode(), 0)
        return lock, fd
    raise RunSetupError(f"could not take the lock {lock}: other runs keep taking and releasing it")


def _remove_stale_temporaries(out: Path) -> None:
    """Delete the ``.NAME.*.tmp`` files that a run killed while writing left behind (the lock is held: no live run
    is writing them)."""
    for tmp in out.glob(".*.tmp"):
        if tmp.is_file():
            tmp.unlink(missing_ok=True)


def open_run(out: str | os.PathLike, resume: bool, *, data: dict[str, str | None] | None = None,
             is_main: bool = True, required: tuple[str, ...] = ("config",),
             check: Callable[[dict[str, Any]], None] | None = None, map_location: Any = "cpu") -> RunFolder:
    """Check a run folder before any data loads, take its lock, and load the checkpoint to resume from.

    Args:
        out: the run folder (created if missing).
        resume: continue from ``out/checkpoint.pt``.
        data: :func:`data_identity` of what the run reads; a checkpoint that saved another one is refused.
        is_main: the process that writes files (rank 0): it alone creates the folder and holds the lock.
        required: keys the checkpoint must hold.
        check: called with the loaded checkpoint; a ``ValueError`` it raises (a config that differs) is refused.

    Raises:
        RunSetupError: ``out`` is a file or cannot be written, another live run holds its lock, the checkpoint
            saved other data, or ``check`` refused it.
        FileExistsError, FileNotFoundError: as ``start_run``.
        ~attnconv.train.checkpoint.CheckpointError: the checkpoint cannot be used.
    """
    out, data = Path(out), data or {}
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
        folder.lock, folder.lock_fd = _take_lock(out)
    try:
        if is_main:
            _remove_stale_temporaries(out)
        if resume:
            folder.state = load_checkpoint(ckpt, map_location=map_location, required=required)
            saved = folder.state.get("data", data)  # checkpoints written before this was recorded: not checked
            if saved != data:
                differ = [k for k in sorted(set(saved) | set(data)) if saved.get(k) != data.get(k)]
                was = ", ".join(f"{k} {saved.get(k) or '(the default copy)'}" for k in differ)
                now = ", ".join(f"{k} {data.get(k) or '(the default copy)'}" for k in differ)
                raise RunSetupError(f"cannot resume: {ckpt} was trained on {was}, not {now}: pass the same "
                                    f"{' and '.join(differ)}, or start a new run")
            if check is not None:
                try:
                    check(folder.state)
                except ValueError as err:
                    raise RunSetupError(str(err)) from None
    except BaseException:
        folder.close()
        raise
    return folder
