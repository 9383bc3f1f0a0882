"""Where student code runs: an unprivileged user, a scratch folder, no network, a read-only filesystem, limits.

Every process that runs a student's code (the notebook's kernel, each rerun of a function exercise) and the
checker that reads their answers (``attnconv.course.checker``) is started through :meth:`Isolation.command`:

1. this file, run as a script, sets the resource limits (address space, CPU seconds, processes, file size, no
   core dumps), clears the environment down to what Python needs, and ``exec``\\ s the rest;
2. ``bwrap`` (bubblewrap, Debian's ``bubblewrap`` package, the sandbox Flatpak uses) gives the process its own
   PID, network, IPC and UTS namespaces: the whole filesystem is bound read-only, ``/tmp`` is an empty private
   tmpfs of limited size, only the scratch folder is writable, the folders passed as ``hide`` (the submissions,
   the sheets, the private checks) are replaced by empty ones, there is no network but loopback, and every
   process it started dies with it (the PID namespace ends when its first process does);
3. as root, ``setpriv`` then becomes an unprivileged user (``nobody`` for the kernel and the sandbox, a user of its
   own for the checker) inside the sandbox, for real: outside it too that process is no longer root, so files
   only root may read stay closed and the process limit binds. A folder the user could not enter on the way to
   the grader's Python (one under ``/root``) is replaced, in the sandbox only, by an open empty folder holding
   just what is needed, bound back read-only. Not root, bubblewrap maps the process to ``nobody`` in a user
   namespace of its own, and outside it stays the grader's (unprivileged) user.

:class:`ScratchQuota` limits the size of a submission's scratch folder (a tmpfs of that size as root, else a watched
folder). :func:`detect` finds what this machine allows. Without bubblewrap, or without root, grading still works
with what is left (limits always; a separate user only as root), and :meth:`Isolation.missing` names the protections
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

__all__ = ["PROTECTIONS", "SCRATCH_MB", "Cgroup", "Isolation", "Limits", "ScratchQuota", "detect"]

PROTECTIONS = {
    "user": "runs as an unprivileged user, not as the grader",
    "filesystem": "the filesystem is read-only except a scratch folder; submissions and sheets are hidden",
    "network": "no network",
    "processes": "every process it starts is killed with it (own PID namespace)",
    "limits": "memory, CPU time, process count and file size are limited",
}
SCRATCH_MB = 1024  # the default size limit of one submission's scratch folder (MiB)
_KEEP_ENV = ("PATH", "LANG", "LC_ALL", "PYTHONHASHSEED", "ATTNCONV_DATA", "MPLBACKEND", "OMP_NUM_THREADS",
             "MKL_NUM_THREADS", "TORCH_NUM_THREADS")


@dataclass(frozen=True)
class Limits:
    """Resource limits per process: address space (MiB), CPU seconds, file size (MiB), and ``processes``: how many
    more tasks its user may start (counted on top of those the user runs when it starts); ``tmp_mb``: the size of
    the private ``/tmp`` (a tmpfs), whose pages the address-space limit does not count."""

    memory_mb: int = 8192
    cpu_s: int = 3600
    processes: int = 512
    file_mb: int = 1024
    tmp_mb: int = 256  # the sandbox's private /tmp, a tmpfs of this size


@dataclass
class Isolation:
    """What this machine lets the grader do (see :func:`detect`)."""

    bwrap: str | None = None
    setpriv: str | None = None
    uid: int | None = None
    gid: int | None = None
    mapped: bool = False  # bwrap maps the process to nobody inside its user namespace only
    inside: bool = False  # bwrap runs as root and setpriv switches to the unprivileged user inside the sandbox
    checker_uid: int | None = None  # the checker's own user (as root), never the kernel's
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

    def prepare(self, folder: Path, uid: int | None = None) -> None:
        """Make ``folder`` (a scratch folder) writable by the unprivileged user (or by ``uid``, group ``uid``)."""
        folder.mkdir(parents=True, exist_ok=True)
        if uid is not None:
            os.chown(folder, uid, uid)
        elif self.uid is not None:
            os.chown(folder, self.uid, self.gid)
        folder.chmod(0o700)

    def command(self, argv: list[str], scratch: Path, env: dict[str, str], limits: Limits, cwd: Path | None = None,
                hide: tuple[Path, ...] = (), readable: tuple[Path, ...] = (), uid: int | None = None,
                gid: int | None = None, cgroup: Cgroup | None = None) -> list[str]:
        """``argv`` wrapped: limits and a clean ``env``, then the sandbox and the user switch where available.

        ``readable`` names private folders (the pristine library) that the unprivileged user must read; ``uid`` and
        ``gid`` replace the unprivileged user (the checker runs as one of its own); ``cgroup``: the submission's
        cgroup, which the process joins before anything else runs."""
        uid = self.uid if uid is None else uid
        gid = self.gid if gid is None else gid
        spec = {"limits": vars(limits), "env": env, "cwd": str(cwd or scratch),
                "uid": uid if uid is not None else os.getuid(),
                "cgroup": [str(d / "cgroup.procs") for d in cgroup.dirs] if cgroup is not None else []}
        cmd = [sys.executable, "-I", "-S", str(Path(__file__).resolve()), json.dumps(spec), "--"]
        switch = []
        if self.setpriv and uid is not None:
            switch = [self.setpriv, f"--reuid={uid}", f"--regid={gid}", "--clear-groups"]
            if self.inside:  # nothing of root's is left: no capability can come back, not even through an exec
                switch += ["--inh-caps=-all", "--bounding-set=-all", "--no-new-privs"]
            switch.append("--")
        if not self.bwrap:
            return cmd + switch + list(argv)
        if self.inside:
            # bubblewrap runs as root without a user namespace: it builds the view, then setpriv becomes ``uid`` for
            # real (outside the sandbox too), so root-only files stay closed and the process limit binds.
            cmd += [self.bwrap, "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts",
                    "--unshare-cgroup-try", "--cap-add", "CAP_SETUID,CAP_SETGID,CAP_SETPCAP"]
        else:
            cmd += switch + [self.bwrap] + (["--uid", "65534", "--gid", "65534", "--cap-drop", "ALL"] if self.mapped
                                            else [])
            cmd += ["--unshare-all"]
        cmd += ["--die-with-parent", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
                "--perms", "1777", "--size", str(limits.tmp_mb * 1024 * 1024), "--tmpfs", "/tmp"]
        view = _View(uid if self.inside else None)
        needed = [p for p in wanted(readable, env) if p.exists()]
        hidden = [Path(h).absolute() for h in hide]
        inside = [p for p in needed if any(_under(p, h) or _under(p, h.resolve()) for h in hidden)]
        for path in sorted([p for p in needed if p not in inside], key=lambda p: len(p.parts)):
            view.expose(path)
        for path in hidden:
            view.hide(path)
        for path in sorted(inside, key=lambda p: len(p.parts)):
            view.expose(path)
        for path in hidden:  # what a folder bound back inside a hidden one brought back into view (private checks)
            if any(_under(path, p) and path != p for p in inside):
                view.hide(path)
        view.expose(Path(scratch).absolute(), writable=True)
        cmd += view.args + ["--chdir", str(cwd or scratch), "--"]
        return cmd + (switch if self.inside else []) + list(argv)


def _under(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


class _View:
    """The mounts that make some paths reachable in the sandbox, in order: a folder the user cannot enter is
    replaced by an empty tmpfs it can, and what is needed inside it is bound back (nothing else of it shows);
    everything under the private ``/tmp`` is bound back the same way. ``uid``: the user the sandbox becomes
    (``None``: the grader's own, which can enter what it owns)."""

    def __init__(self, uid: int | None) -> None:
        self.uid, self.args = uid, []
        self.mounts: dict[Path, str] = {Path("/"): "bound", Path("/tmp"): "made"}

    def _owner(self, path: Path) -> tuple[Path, str]:
        for folder in [path, *path.parents]:
            if folder in self.mounts:
                return folder, self.mounts[folder]
        return Path("/"), "bound"

    def _closed(self, folder: Path) -> bool:
        if self.uid is None:
            return False
        try:
            st = os.stat(folder)
        except OSError:
            return False
        return not st.st_mode & (0o100 if st.st_uid == self.uid else 0o001)

    def _make(self, folder: Path) -> None:
        at, kind = self._owner(folder)
        if kind == "made" and at != folder:
            self.args += ["--perms", "0755", "--dir", str(folder)]  # a folder of the empty tmpfs above
        else:
            self.args += ["--perms", "0755", "--tmpfs", str(folder)]
        self.mounts[folder] = "made"

    def expose(self, path: Path, writable: bool = False) -> None:
        for folder in reversed(path.parents[:-1] if len(path.parents) else []):
            at, kind = self._owner(folder)
            if (kind == "made" and at != folder) or (kind == "bound" and self._closed(folder)):
                self._make(folder)
        at, kind = self._owner(path)
        if writable or kind == "made" and at != path or kind == "hidden":
            self.args += ["--bind" if writable else "--ro-bind", str(path), str(path)]
            self.mounts[path] = "bound"

    def hide(self, path: Path) -> None:
        at, kind = self._owner(path)
        if kind == "made" and at != path or not os.path.lexists(path):
            return  # not in the view anyway
        if path.is_dir():
            self.args += ["--perms", "0755", "--tmpfs", str(path)]
            self.mounts[path] = "made"
        else:
            self.args += ["--ro-bind", "/dev/null", str(path)]
            self.mounts[path] = "hidden"


def wanted(readable: tuple[Path, ...], env: dict[str, str]) -> list[Path]:
    """The folders a sandboxed process reads: ``readable`` (the pristine library), this Python (its executable,
    prefix and ``sys.path``), the ``PYTHONPATH`` given to the process, and the data and records it is pointed at
    (``ATTNCONV_DATA``, ``ATTNCONV_RESULTS``), each as given and resolved. The grader's working folder
    (``sys.path[0]`` under ``-m``) is nothing the process needs."""
    paths = [Path(p) for p in readable]
    paths += [Path(sys.executable).parent.parent, Path(sys.executable).resolve().parent.parent, Path(sys.prefix),
              Path(sys.base_prefix), Path(sys.exec_prefix)]
    here = Path.cwd().resolve()
    paths += [Path(p) for p in sys.path if p and Path(p).resolve() != here]
    paths += [Path(p) for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    paths += [Path(env[k]) for k in ("ATTNCONV_DATA", "ATTNCONV_RESULTS") if env.get(k)]
    found = []
    for path in paths:
        for candidate in (path.absolute(), path.resolve()):
            if candidate != Path("/") and candidate not in found:
                found.append(candidate)
    return found


def _probe(cmd: list[str]) -> bool:
    try:
        return subprocess.run(cmd, capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


_DETECTED: dict[str, Isolation] = {}


class Cgroup:
    """A cgroup for one submission's processes (the kernel and the sandbox's reruns): memory, tmpfs pages included,
    and the number of processes, counted together whatever user they run as. cgroup v2 where its memory and pids
    controllers are enabled at the root, else v1's ``memory`` and ``pids`` hierarchies; only root can make one."""

    def __init__(self, dirs: list[Path]) -> None:
        self.dirs = dirs

    @classmethod
    def create(cls, memory_mb: int, processes: int) -> tuple[Cgroup | None, str]:
        """A new cgroup with these limits, and ``""``; or ``None`` and why this machine offers none."""
        import secrets

        if os.geteuid() != 0:
            return None, "only root can make a cgroup"
        base, name = Path("/sys/fs/cgroup"), f"attnconv-{os.getpid()}-{secrets.token_hex(4)}"
        made: list[Path] = []
        try:
            if (base / "cgroup.controllers").exists():
                if not {"memory", "pids"} <= set((base / "cgroup.subtree_control").read_text().split()):
                    return None, "cgroup v2 has no memory and pids controllers enabled at its root"
                made.append(base / name)
                made[0].mkdir()
                (made[0] / "memory.max").write_text(str(memory_mb * 2**20))
                (made[0] / "pids.max").write_text(str(processes))
                try:
                    (made[0] / "memory.swap.max").write_text("0")
                except OSError:
                    pass
            elif (base / "memory" / "cgroup.procs").exists() and (base / "pids" / "cgroup.procs").exists():
                made += [base / "memory" / name, base / "pids" / name]
                for folder in made:
                    folder.mkdir()
                (made[0] / "memory.limit_in_bytes").write_text(str(memory_mb * 2**20))
                try:
                    (made[0] / "memory.memsw.limit_in_bytes").write_text(str(memory_mb * 2**20))
                except OSError:
                    pass
                (made[1] / "pids.max").write_text(str(processes))
            else:
                return None, "no cgroup hierarchy with memory and pids controllers is mounted"
        except OSError as err:
            cls(made).remove()
            return None, f"a cgroup could not be made ({err.strerror or err})"
        return cls(made), ""

    def peak_mb(self) -> float | None:
        """The most memory its processes held at once, in MiB, where the kernel reports it."""
        for name in ("memory.peak", "memory.max_usage_in_bytes"):
            for folder in self.dirs:
                try:
                    return int((folder / name).read_text()) / 2**20
                except (OSError, ValueError):
                    pass
        return None

    def kill(self) -> None:
        """Kill every process in it now (it stays, and a new process may join it)."""
        import signal

        for folder in self.dirs:
            try:
                pids = {int(p) for p in (folder / "cgroup.procs").read_text().split()}
            except (OSError, ValueError):
                continue
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass

    def remove(self) -> None:
        """Kill every process still in it, then remove it."""
        import signal
        import time

        for _ in range(50):
            pids = set()
            for folder in self.dirs:
                try:
                    pids |= {int(p) for p in (folder / "cgroup.procs").read_text().split()}
                except (OSError, ValueError):
                    pass
            if not pids:
                break
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            time.sleep(0.1)
        for folder in self.dirs:
            try:
                folder.rmdir()
            except OSError:
                pass


class ScratchQuota:
    """A size limit on one submission's scratch folder (the kernel's and the sandbox's, the only places its code
    may write). As root, the folder is a tmpfs of that size, mounted for the grading: a write past it fails, and
    nothing reaches the disk. Elsewhere, a file is limited by ``RLIMIT_FSIZE`` (``Limits.file_mb``) and
    :meth:`over` sums the folder's allocated size. Either way the grader polls :meth:`over` and stops the
    submission's processes once the folder is full; :attr:`hit` then says so for the report."""

    def __init__(self, folder: Path, mb: int) -> None:
        self.folder, self.mb, self.limit = Path(folder), mb, mb * 2**20
        self.mounted = self.hit = self.closed = False
        self.peak = 0  # the most the folder held when :meth:`over` looked

    @classmethod
    def make(cls, folder: Path, mb: int = SCRATCH_MB) -> ScratchQuota:
        """Create ``folder`` with a quota of ``mb`` MiB (a mounted tmpfs where this process may mount one).

        Raises:
            ValueError: ``mb`` is not a positive number of MiB.
        """
        if not isinstance(mb, int) or mb < 1:
            raise ValueError(f"scratch_mb must be a positive number of MiB, got {mb!r}")
        quota = cls(folder, mb)
        quota.folder.mkdir(parents=True, exist_ok=True)
        mount = shutil.which("mount")
        if os.geteuid() == 0 and mount:
            options = f"size={mb}m,nr_inodes={max(1024, mb * 64)},mode=0700,nosuid,nodev"
            quota.mounted = _probe([mount, "-t", "tmpfs", "-o", options, "attnconv-scratch", str(quota.folder)])
        return quota

    def used(self) -> int:
        """Bytes the folder holds now (for a tmpfs, what the filesystem has allocated)."""
        if self.mounted:
            st = os.statvfs(self.folder)
            return (st.f_blocks - st.f_bfree) * st.f_frsize
        total, todo, seen = 0, [str(self.folder)], 0
        while todo and seen < 200_000:  # a folder of millions of empty files is over any honest use anyway
            try:
                entries = list(os.scandir(todo.pop()))
            except OSError:
                continue
            for entry in entries:
                seen += 1
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                total += max(st.st_size if entry.is_file(follow_symlinks=False) else 0, st.st_blocks * 512)
                if entry.is_dir(follow_symlinks=False):
                    todo.append(entry.path)
        return total if seen < 200_000 else max(total, self.limit)

    def over(self) -> bool:
        """Whether the folder is full (a tmpfs within 1 MiB of its size) or past its quota; sets :attr:`hit`."""
        used = self.used()
        self.peak = max(self.peak, used)
        if used >= self.limit - (2**20 if self.mounted else 0):
            self.hit = True
        return self.hit

    def reason(self) -> str:
        return (f"the submission filled its scratch folder's {self.mb} MiB quota, so its processes were stopped "
                "(what it wrote was discarded)")

    def close(self) -> None:
        """Unmount the tmpfs (its files go with it); the folder itself is left for the caller to remove."""
        if self.mounted and not self.closed:
            _probe(["umount", "-l", str(self.folder)])
        self.closed = True


def spare_uid(taken: tuple[int, ...] = ()) -> int:
    """A user id for the checker: ``$ATTNCONV_CHECKER_UID``, else the highest id under 65534 that no account, no
    group and no running process uses (and that is not in ``taken``)."""
    import grp

    if os.environ.get("ATTNCONV_CHECKER_UID"):
        return int(os.environ["ATTNCONV_CHECKER_UID"])
    running = set()
    for entry in os.listdir("/proc"):
        try:
            running.add(os.stat(f"/proc/{entry}").st_uid if entry.isdigit() else -1)
        except OSError:
            pass  # it ended meanwhile
    for uid in range(65533, 1000, -1):
        if uid in taken or uid in running:
            continue
        try:
            pwd.getpwuid(uid)
            continue
        except KeyError:
            pass
        try:
            grp.getgrgid(uid)
            continue
        except KeyError:
            return uid
    raise RuntimeError("no spare user id for the checker; set ATTNCONV_CHECKER_UID")


def detect(mode: str = "auto") -> Isolation:
    """The isolation this machine allows: ``"auto"`` (the most it can), or ``"none"`` (limits only).

    In order: as root, ``bwrap`` builds the sandbox and ``setpriv`` becomes ``nobody`` inside it (a folder that
    ``nobody`` cannot enter on the way to this Python is replaced by an open one holding only what is needed);
    ``bwrap`` alone, where the process appears as ``nobody`` only inside its user namespace (not root);
    ``setpriv`` alone; nothing but the limits. As root the checker runs as a user of its own
    (:func:`spare_uid`)."""
    if mode not in ("auto", "none"):
        raise ValueError(f"isolation must be 'auto' or 'none', got {mode!r}")
    if mode in _DETECTED:
        return _DETECTED[mode]
    found, python = Isolation(), [sys.executable, "-c", "import sys"]
    setpriv = shutil.which("setpriv") if os.geteuid() == 0 else None
    user = None
    if setpriv:
        try:
            user = pwd.getpwnam("nobody")
        except KeyError:
            setpriv = None
    bwrap = shutil.which("bwrap") if mode == "auto" else None
    if setpriv and user is not None:
        import tempfile

        checker = spare_uid((user.pw_uid,))
        with tempfile.TemporaryDirectory(prefix="attnconv-probe-") as scratch:
            for candidate in ([Isolation(bwrap=bwrap, setpriv=setpriv, uid=user.pw_uid, gid=user.pw_gid, inside=True,
                                         checker_uid=checker)] if bwrap else []) + \
                    [Isolation(setpriv=setpriv, uid=user.pw_uid, gid=user.pw_gid, checker_uid=checker)]:
                candidate.prepare(Path(scratch))
                if _probe(candidate.command(python, Path(scratch), clean_env({}), Limits(cpu_s=60))):
                    found = candidate
                    break
    if found.bwrap is None and bwrap:
        test = [bwrap, "--uid", "65534", "--gid", "65534", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
                "--unshare-all", "--die-with-parent", "--", *python]
        if _probe(test):
            found = Isolation(bwrap=bwrap, mapped=True, checker_uid=found.checker_uid)
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

    for procs in spec.get("cgroup", []):  # joined before anything of the student's runs; its children stay in it
        with open(procs, "w") as handle:
            handle.write(str(os.getpid()))
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
