"""The checker: the process where a student's answers are decoded and checked, and the pristine library it uses.

The grader's own process never decodes an answer. For each submission it starts one checker,
``python -m attnconv.course.checker``, isolated like the student's kernel (``attnconv.course.isolation``:
another user, no network, read-only files) and limited in memory; each exercise has a wall-clock limit. The
grader sends one request per exercise, a line of JSON with the exercise's label, the answers as the kernel or
the sandbox wrote them (:mod:`attnconv.course.wire`, still text) and the seed of the hidden inputs. The checker
decodes the answers, rebuilds the hidden inputs from the seed, runs the registered check and replies with one
line: the list of results, each a boolean, a part name and a message. That is all the grader reads back, and
it takes the points from its own registry. A check that runs too long or too large is killed with its
process, and a fresh checker carries on with the next exercise.

:class:`Library` is the copy of the library every student process and the checker import: the files of
``attnconv`` (and of the ``--checks`` modules) read once into memory, before any student code ran, and written
into each submission's private folder. So a submission that rewrites the installed package, or the copy it
imports, changes nothing for the next one.
"""

from __future__ import annotations

import importlib.util
import json
import os
import selectors
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .exercises.core import CheckResult
from .isolation import Isolation, Limits, clean_env, detect

__all__ = ["Checker", "Library", "parse_results", "private_paths", "python_path"]

MARKER = "@@ATTNCONV-CHECKER@@"


class Library:
    """The files of ``attnconv`` and of extra check modules, captured in memory (see the module docstring)."""

    _cache: dict[tuple[str, ...], Library] = {}

    def __init__(self, files: dict[str, bytes]) -> None:
        self.files = files

    @classmethod
    def capture(cls, checks: tuple[str, ...] = ()) -> Library:
        """The library as it is now (cached per process: the first call is the pristine copy). With ``checks``, the
        copy the checker imports; without, the copy the kernel and the sandbox import (``attnconv`` alone, cached by
        the same first call)."""
        if checks in cls._cache:
            return cls._cache[checks]
        import attnconv

        own = cls._read([Path(attnconv.__file__).resolve().parent])
        cls._cache.setdefault((), cls(own))
        cls._cache[checks] = library = cls({**own, **cls._read(_roots(checks))}) if checks else cls._cache[()]
        return library

    @staticmethod
    def _read(roots: list[Path]) -> dict[str, bytes]:
        files: dict[str, bytes] = {}
        for root in roots:
            paths = [root] if root.is_file() else sorted(root.rglob("*"))
            for path in paths:
                if (path.is_file() and "__pycache__" not in path.parts and "_records" not in path.parts
                        and path.suffix not in (".pyc", ".tmp")):  # records reach the kernel as $ATTNCONV_RESULTS
                    files[str(path.relative_to(root.parent))] = path.read_bytes()
        return files

    def write(self, folder: Path) -> Path:
        """Write the files under ``folder`` (readable by all, writable by the grader only); returns ``folder``."""
        for name, data in self.files.items():
            target = folder / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
            target.chmod(0o644)
        for path in [folder, *[p for p in folder.rglob("*") if p.is_dir()]]:
            path.chmod(0o755)
        return folder


def _roots(checks: tuple[str, ...]) -> list[Path]:
    """The source of each ``--checks`` module: its file, or its package's folder."""
    roots = []
    for module in checks:
        spec = importlib.util.find_spec(module.split(".")[0])
        if spec is None or spec.origin is None:
            raise ValueError(f"checks module {module!r} cannot be found")
        origin = Path(spec.origin).resolve()
        roots.append(origin.parent if origin.name == "__init__.py" else origin)
    return roots


def private_paths(checks: tuple[str, ...]) -> list[Path]:
    """Everything of the ``--checks`` modules that a student's process must not read: their sources and their
    compiled copies (``__pycache__``), as given and resolved."""
    found = []
    for root in _roots(checks):
        found.append(root)
        if root.is_file():
            found += sorted((root.parent / "__pycache__").glob(f"{root.stem}.*.pyc"))
    for module in checks:  # the way Python found it, which may go through a link
        spec = importlib.util.find_spec(module.split(".")[0])
        if spec is not None and spec.origin:
            found.append(Path(spec.origin).absolute())
    return list(dict.fromkeys(p for p in found if p.exists()))


def python_path(library: Path, private: tuple[str, ...] = ()) -> str:
    """PYTHONPATH for a student's process: the pristine library first, then the grader's own packages, without the
    folders the ``private`` checks modules were found in (unless they are an installation's site-packages)."""
    import attnconv

    own = str(Path(attnconv.__file__).resolve().parents[1])
    if Path(own).name in ("site-packages", "dist-packages"):  # an installed attnconv: its neighbours are needed
        own = ""
    here = os.path.realpath(os.getcwd())  # the grader's working folder is no place to import from
    closed = {os.path.realpath(root.parent) for root in _roots(private)
              if root.parent.name not in ("site-packages", "dist-packages")}
    rest = [p for p in sys.path if p and os.path.isdir(p) and os.path.realpath(p) not in (own, here, *closed)]
    return os.pathsep.join(dict.fromkeys([str(library)] + rest))


def parse_results(text: str) -> list[CheckResult]:
    """The checker's reply as results; anything but a list of {passed: bool, message: str, part: str} is refused."""
    reply = json.loads(text)
    if not isinstance(reply, dict):
        raise ValueError("the checker's reply must be an object")
    if "error" in reply:
        return [CheckResult(False, str(reply["error"])[:2000])]
    results = reply.get("results")
    if not isinstance(results, list) or not results:
        raise ValueError("the checker's reply holds no results")
    out = []
    for r in results:
        if not (isinstance(r, dict) and type(r.get("passed")) is bool and isinstance(r.get("message"), str)
                and isinstance(r.get("part", ""), str)):
            raise ValueError("a result must be {passed: bool, message: str, part: str}")
        out.append(CheckResult(r["passed"], r["message"][:2000], r.get("part", "")[:100]))
    return out


class Checker:
    """A checker process for one submission (a context manager); :meth:`check` checks one exercise.

    Its library (``attnconv`` and the ``--checks`` modules) is a folder of its own, ``checker-library``, which as
    root belongs to the checker's own user (``Isolation.checker_uid``) and is closed to everyone else, the kernel's
    user included; ``hide`` names what it must not see (the submission, the kernel's scratch folder)."""

    def __init__(self, checks: tuple[str, ...] = (), exercise_timeout: float = 120, memory_mb: int = 6144,
                 isolation: Isolation | None = None, folder: Path | None = None, hide: tuple[Path, ...] = (),
                 deadline: float | None = None) -> None:
        self.checks, self.timeout, self.memory_mb = tuple(checks), exercise_timeout, memory_mb
        self.isolation = isolation or detect()
        self.hide, self.deadline = tuple(hide), deadline
        self._own = folder is None
        self.folder = Path(tempfile.mkdtemp(prefix="attnconv-checker-")) if folder is None else folder
        self.folder.chmod(0o711)
        self.library = self.folder / "checker-library"
        self.uid = self.isolation.checker_uid if os.geteuid() == 0 else None
        if not self.library.exists():
            Library.capture(self.checks).write(self.library)
            if self.uid is not None:
                for path in [self.library, *self.library.rglob("*")]:
                    os.chown(path, self.uid, self.uid, follow_symlinks=False)
                self.library.chmod(0o500)  # read-only, and closed to the kernel's user
        self.proc: subprocess.Popen | None = None

    def __enter__(self) -> Checker:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _start(self) -> subprocess.Popen:
        scratch = self.folder / "checker"
        self.isolation.prepare(scratch, self.uid)
        env = clean_env({"PYTHONPATH": python_path(self.library, self.checks), "HOME": str(scratch),
                         "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "MPLBACKEND": "Agg",
                         "PYTHONDONTWRITEBYTECODE": "1"})
        # -P (Python 3.11+): the working folder is not put on sys.path; it is the read-only library in any case
        safe = ["-P"] if sys.version_info >= (3, 11) else []
        cmd = self.isolation.command([sys.executable, *safe, "-m", "attnconv.course.checker", json.dumps(self.checks)],
                                     scratch, env, Limits(memory_mb=self.memory_mb, cpu_s=int(self.timeout) * 50),
                                     cwd=self.library, readable=(self.library,), hide=self.hide, uid=self.uid,
                                     gid=self.uid)
        return subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                start_new_session=True)

    def _kill(self) -> None:
        if self.proc is not None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            self.proc.wait()
            self.proc = None

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            try:
                self.proc.stdin.close()
                self.proc.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                pass
        self._kill()
        if self._own:
            import shutil

            shutil.rmtree(self.folder, ignore_errors=True)

    def _ask(self, request: dict) -> tuple[str | None, str]:
        """Send one request; the reply line, or ``None`` and why not."""
        if self.proc is None or self.proc.poll() is not None:
            self._kill()
            self.proc = self._start()
        try:
            self.proc.stdin.write((json.dumps(request) + "\n").encode())
            self.proc.stdin.flush()
        except OSError:
            self._kill()
            return None, "the checker stopped before it could read your answers (too large?)"
        limit = self.timeout if self.deadline is None else max(1.0, min(self.timeout, self.deadline - time.monotonic()))
        line = self._read_line(time.monotonic() + limit)
        if line is None:
            died = self.proc.poll() is not None
            self._kill()
            if died:
                return None, "checking your answer ran past the checker's memory limit"
            if limit < self.timeout:
                return None, "checking your answer was stopped when the submission's time budget ran out"
            return None, f"checking your answer ran past the checker's {self.timeout:.0f} s time limit"
        return line, ""

    def check(self, label: str, answers: str, seed: int) -> list[CheckResult]:
        """Decode ``answers`` (wire JSON text) and run ``label``'s check in the checker; never raises."""
        line, why = self._ask({"label": label, "answers": answers, "seed": int(seed)})
        if line is None:
            return [CheckResult(False, why)]
        try:
            return parse_results(line)
        except ValueError as err:
            return [CheckResult(False, f"the checker's reply could not be read ({err})")]

    def inputs(self, label: str, seed: int) -> tuple[str | None, str]:
        """The hidden inputs of function exercise ``label`` for ``seed``, built here from the checks and encoded as
        data (:mod:`attnconv.course.wire`) for the sandbox, which never sees the checks; or ``(None, why)``."""
        line, why = self._ask({"label": label, "inputs": True, "seed": int(seed)})
        if line is None:
            return None, why.replace("checking your answer", "building the hidden inputs")
        try:
            reply = json.loads(line)
            if isinstance(reply.get("inputs"), str):
                return reply["inputs"], ""
            return None, f"the hidden inputs could not be built ({str(reply.get('error'))[:200]})"
        except (ValueError, AttributeError):
            return None, "the checker's reply could not be read"

    def _read_line(self, deadline: float) -> str | None:
        buffer = b""
        with selectors.DefaultSelector() as sel:
            sel.register(self.proc.stdout, selectors.EVENT_READ)
            while time.monotonic() < deadline:
                if not sel.select(timeout=max(0.0, deadline - time.monotonic())):
                    continue
                chunk = os.read(self.proc.stdout.fileno(), 1 << 20)
                if not chunk:
                    return None
                buffer += chunk
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    text = line.decode(errors="replace")
                    if text.startswith(MARKER):
                        return text[len(MARKER):]
        return None


def _main() -> int:
    """The checker process: one request per line on stdin, one reply per line on the original stdout."""
    checks = json.loads(sys.argv[1]) if len(sys.argv) > 1 else []
    out = os.dup(1)
    os.dup2(2, 1)  # whatever a check prints never reaches the reply
    from . import wire
    from .exercises import EXERCISES, run_check

    for module in checks:
        importlib.import_module(module)
    for line in sys.stdin:
        try:
            request = json.loads(line)
            exercise = EXERCISES[request["label"]]
            if request.get("inputs"):  # the hidden inputs of a private function exercise, as data for the sandbox
                inputs = wire.dumps(exercise.context(request["seed"]))
                if "__object__" in inputs:
                    raise ValueError(f"the hidden inputs of {exercise.label} are not all data (numbers, lists, "
                                     "tensors, arrays, SymPy): a private check's context must return data")
                os.write(out, (MARKER + json.dumps({"inputs": inputs}) + "\n").encode())
                continue
            try:
                answers = wire.loads(request["answers"])
            except (ValueError, SyntaxError, TypeError, KeyError, RecursionError) as err:
                raise ValueError(f"your answers could not be read as data ({err})") from None
            given = exercise.context(request["seed"]) if exercise.sandboxed else None
            results = run_check(exercise, answers, given)
            reply = {"results": [{"passed": bool(r.passed), "message": str(r.message), "part": str(r.part)}
                                 for r in results]}
        except Exception as err:  # noqa: BLE001  (any failure is that exercise's failure)
            reply = {"error": str(err)[:2000]}
        os.write(out, (MARKER + json.dumps(reply) + "\n").encode())
    return 0


if __name__ == "__main__":
    sys.exit(_main())
