"""Where student code runs: an unprivileged user, a scratch folder, no network, a read-only filesystem, limits.

Every process that runs a student's code (the notebook's kernel, each rerun of a function exercise) and the
checker that reads their answers (``attnconv.course.checker``) is started through :meth:`Isolation.command`:

1. this file, run as a script, sets the resource limits (address space, CPU seconds, processes, file size, no
   core dumps), clears the environment down to what Python needs, and ``exec``\\ s the rest;
2. ``setpriv`` switches to an unprivileged user (``nobody``) when the grader runs as root;
3. ``bwrap`` (bubblewrap, Debian's ``bubblewrap`` package, the sandbox Flatpak uses) gives the process its own
   user, PID, network, IPC and UTS namespaces: the whole filesystem is bound read-only, ``/tmp`` is an empty
   private folder, only the scratch folder is writable, the folders passed as ``hide`` (the submissions, the
   sheets) are replaced by empty ones, there is no network but loopback, and every process it started dies with
   it (the PID namespace ends when its first process does).

:func:`detect` finds what this machine allows. Without bubblewrap, or without root, grading still works with
what is left (limits always; a separate user only as root), and :meth:`Isolation.missing` names the protections
that are missing; the grader prints them and puts them in every report.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["PROTECTIONS", "Isolation", "Limits", "detect"]

PROTECTIONS = {
    "user": "runs as an unprivileged user, not as the grader",
    "filesystem": "the filesystem is read-only except a scratch folder; submissions and sheets are hidden",
    "network": "no network",
    "processes": "every process it starts is killed with it (own PID namespace)",
    "limits": "memory, CPU time, process count and file size are limited",
}
_KEEP_ENV = ("PATH", "LANG", "LC_ALL", "PYTHONHASHSEED", "ATTNCONV_DATA", "MPLBACKEND", "OMP_NUM_THREADS",
             "MKL_NUM_THREADS", "TORCH_NUM_THREADS")


@dataclass(frozen=True)
class Limits:
    """Resource limits per process: address space (MiB), CPU seconds, file size (MiB), and ``processes``: how many
    more tasks its user may start (counted on top of those the user runs when it starts)."""

    memory_mb: int = 8192
    cpu_s: int = 3600
    processes: int = 512
    file_mb: int = 1024


@dataclass
class Isolation:
    """What this machine lets the grader do (see :func:`detect`)."""

    bwrap: str | None = None
    setpriv: str | None = None
    uid: int | None = None
    gid: int | None = None
    mapped: bool = False  # bwrap maps the process to nobody inside its user namespace only
    protections: dict[str, bool] = field(default_factory=dict)

    def missing(self) -> list[str]:
        """Plain sentences for each protection that does not hold here."""
        out = [f"not isolated: {PROTECTIONS[name]}" for name, held in self.protections.items() if not held]
        if self.mapped:
            out[0] += (" (it appears as nobody, with no capabilities, only inside its own user namespace; outside "
                       "it reads files as the grader's user, e.g. because nobody cannot run this Python)")
        return out

    def summary(self) -> str:
        missing = self.missing()
        if not missing:
            return "student code runs isolated: " + "; ".join(PROTECTIONS.values())
        return "; ".join(missing) + (" (full isolation needs bubblewrap, the grader run as root, and a Python "
                                     "that the user nobody can run)")

    def prepare(self, folder: Path) -> None:
        """Make ``folder`` (a scratch folder) writable by the unprivileged user."""
        folder.mkdir(parents=True, exist_ok=True)
        if self.uid is not None:
            os.chown(folder, self.uid, self.gid)
        folder.chmod(0o700)

    def command(self, argv: list[str], scratch: Path, env: dict[str, str], limits: Limits, cwd: Path | None = None,
                hide: tuple[Path, ...] = (), readable: tuple[Path, ...] = ()) -> list[str]:
        """``argv`` wrapped: limits and a clean ``env``, then the user switch and the sandbox where available.

        ``readable`` names private folders (the pristine library) that the unprivileged user must read."""
        spec = {"limits": vars(limits), "env": env, "cwd": str(cwd or scratch),
                "uid": self.uid if self.uid is not None else os.getuid()}
        cmd = [sys.executable, "-I", "-S", str(Path(__file__).resolve()), json.dumps(spec), "--"]
        if self.setpriv and self.uid is not None:
            cmd += [self.setpriv, f"--reuid={self.uid}", f"--regid={self.gid}", "--clear-groups", "--"]
        if self.bwrap:
            cmd += [self.bwrap] + (["--uid", "65534", "--gid", "65534", "--cap-drop", "ALL"] if self.mapped else [])
            cmd += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
                    "--unshare-all", "--die-with-parent"]
            # Under /tmp: bound again, read-only, in the private /tmp; a folder inside a hidden one after the hiding
            # (the grader's Python beside the submissions), any other before it (so that it hides nothing again).
            back = rebound(readable, env, others_only=bool(self.setpriv and self.uid is not None))
            inside = [p for p in back if any(_under(p, Path(h).resolve()) for h in hide)]
            for path in [p for p in back if p not in inside]:
                cmd += ["--ro-bind", str(path), str(path)]
            for path in hide:
                if path.is_dir():
                    cmd += ["--tmpfs", str(path)]
                elif path.exists():
                    cmd += ["--ro-bind", "/dev/null", str(path)]
            for path in inside:
                cmd += ["--ro-bind", str(path), str(path)]
            cmd += ["--bind", str(scratch), str(scratch), "--chdir", str(cwd or scratch), "--"]
        return cmd + list(argv)


def _under(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def _open_to_others(path: Path) -> bool:
    """Whether a user with no claim on ``path`` can reach it: every folder above it enterable by others, and it
    readable (and, for a folder, enterable) by others."""
    try:
        if any(not os.stat(folder).st_mode & 0o001 for folder in path.parents):
            return False
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return bool(mode & 0o004) and (not path.is_dir() or bool(mode & 0o001))


def rebound(readable: tuple[Path, ...], env: dict[str, str], others_only: bool = False) -> list[Path]:
    """The folders under ``/tmp`` that a sandboxed process needs, each bound back read-only into its private
    ``/tmp``: ``readable`` (the pristine library), this Python (its executable, prefix and ``sys.path``), the
    ``PYTHONPATH`` given to the process, and the data and records it is pointed at (``ATTNCONV_DATA``,
    ``ATTNCONV_RESULTS``). A grader installed in a virtual environment under ``/tmp`` then runs the same as
    one anywhere else. Nested folders are bound once, through the outermost. ``others_only``: bubblewrap runs as
    the unprivileged user, which can bind only what it can reach (:func:`_open_to_others`)."""
    tmp = Path("/tmp").resolve()
    wanted = [Path(p) for p in readable]
    wanted += [Path(sys.executable).parent.parent, Path(sys.prefix), Path(sys.base_prefix), Path(sys.exec_prefix)]
    here = Path.cwd().resolve()  # the grader's working folder (sys.path[0] under -m) is nothing the process needs
    wanted += [Path(p) for p in sys.path if p and Path(p).resolve() != here]
    wanted += [Path(p) for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    wanted += [Path(env[k]) for k in ("ATTNCONV_DATA", "ATTNCONV_RESULTS") if env.get(k)]
    found: list[Path] = []
    for path in wanted:
        for candidate in dict.fromkeys([path.absolute(), path.resolve()]):
            if (_under(candidate, tmp) and candidate != tmp and candidate.exists()
                    and (not others_only or _open_to_others(candidate))):
                found.append(candidate)
    found = sorted(set(found), key=lambda p: len(p.parts))
    return [p for i, p in enumerate(found) if not any(_under(p, q) for q in found[:i])]


def _probe(cmd: list[str]) -> bool:
    try:
        return subprocess.run(cmd, capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


_DETECTED: dict[str, Isolation] = {}


def detect(mode: str = "auto") -> Isolation:
    """The isolation this machine allows: ``"auto"`` (the most it can), or ``"none"`` (limits only).

    In order: ``setpriv`` to ``nobody`` then ``bwrap`` (as root); ``bwrap`` alone, where the process appears as
    ``nobody`` only inside its user namespace (when not root, or when ``nobody`` cannot run this Python, e.g. one
    installed under ``/root``); ``setpriv`` alone; nothing but the limits."""
    if mode not in ("auto", "none"):
        raise ValueError(f"isolation must be 'auto' or 'none', got {mode!r}")
    if mode in _DETECTED:
        return _DETECTED[mode]
    found, python = Isolation(), [sys.executable, "-c", "import sys"]
    if mode == "auto":
        switch: list[str] = []
        if os.geteuid() == 0 and (setpriv := shutil.which("setpriv")):
            try:
                user = pwd.getpwnam("nobody")
                switch = [setpriv, f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", "--clear-groups", "--"]
                if _probe(switch + python):
                    found.setpriv, found.uid, found.gid = setpriv, user.pw_uid, user.pw_gid
                else:
                    switch = []
            except KeyError:
                pass
        bwrap = shutil.which("bwrap")
        if bwrap:
            test = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-all",
                    "--die-with-parent", "--", *python]
            if switch and _probe(switch + test):
                found.bwrap = bwrap
            elif _probe(test[:1] + ["--uid", "65534", "--gid", "65534"] + test[1:]):
                found.bwrap, found.setpriv, found.uid, found.gid, found.mapped = bwrap, None, None, None, True
    found.protections = {"user": found.uid is not None, "filesystem": found.bwrap is not None,
                         "network": found.bwrap is not None, "processes": found.bwrap is not None, "limits": True}
    _DETECTED[mode] = found
    return found


def _tasks(uid: int) -> int:
    """How many tasks (processes and threads) ``uid`` runs now: the process limit counts on top of them."""
    count = 0
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                if entry.stat().st_uid == uid:
                    count += len(os.listdir(f"/proc/{entry.name}/task"))
            except OSError:
                pass
    return count


def _launch(spec: dict, argv: list[str]) -> None:
    """Set the limits and the environment, then become ``argv`` (this file run as a script)."""
    import resource
    import signal

    limits = spec["limits"]
    mib = 1024 * 1024
    for which, soft, hard in ((resource.RLIMIT_AS, limits["memory_mb"] * mib, limits["memory_mb"] * mib),
                              (resource.RLIMIT_CPU, limits["cpu_s"], limits["cpu_s"] + 5),
                              (resource.RLIMIT_NPROC, *[_tasks(spec["uid"]) + limits["processes"]] * 2),
                              (resource.RLIMIT_FSIZE, limits["file_mb"] * mib, limits["file_mb"] * mib),
                              (resource.RLIMIT_CORE, 0, 0)):
        try:
            resource.setrlimit(which, (soft, hard))
        except (ValueError, OSError):
            pass  # a limit above the current hard limit stays at the hard limit
    os.chdir(spec["cwd"])
    # The chain (setpriv, bwrap) ignores SIGINT, inherited across exec, so that an interrupt of the process group
    # reaches the kernel (which installs its own handler while a cell runs) and never ends the sandbox itself.
    # No controlling terminal is passed on: every caller starts this in a new session.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.execvpe(argv[0], argv, spec["env"])


def clean_env(extra: dict[str, str]) -> dict[str, str]:
    """The environment a student's process gets: a few of the grader's variables, plus ``extra``."""
    env = {k: os.environ[k] for k in _KEEP_ENV if k in os.environ}
    env.setdefault("PATH", "/usr/bin:/bin")
    return env | extra


if __name__ == "__main__":
    split = sys.argv.index("--")
    _launch(json.loads(sys.argv[1]), sys.argv[split + 1:])
