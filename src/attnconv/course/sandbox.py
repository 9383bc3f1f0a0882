"""The sandbox: where the grader runs a function exercise's cell on hidden inputs.

The grader (:mod:`attnconv.course.grade`) never executes student code itself. For a function exercise it starts
``python -m attnconv.course.sandbox`` as a separate process, isolated as the kernel is
(``attnconv.course.isolation``: another user, no network, read-only files but an empty scratch folder, limits,
killed with its whole process tree when it returns), importing the submission's pristine copy of the library,
and sends it the
exercise's label, the source of the student's answer cell and a random seed. The sandbox builds the hidden inputs
from the seed (the exercise's ``context``), runs the cell with them in place of the chapter's, applies the
exercise's ``probe`` to the student's objects and writes the result as data (:mod:`attnconv.course.wire`). Only that
data goes back. The check then runs in the checker (``attnconv.course.checker``), against inputs it rebuilds from
the same seed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

__all__ = ["base_namespace", "free_names", "is_private", "portable_probe", "run_function_exercise"]

MARKER = "@@ATTNCONV-SANDBOX@@"
REPLY_CAP = 64 * 2**20  # characters of the sandbox's reply (the probe's answers as data)


# What a cell that names nothing of PyTorch or the library may be given alone: with only these, the sandbox does
# not import PyTorch (about 1.2 CPU seconds of its start-up).
_LIGHT = frozenset({"np", "sp", "math", "replace"})
# Names through which code reads its namespace as a whole: a cell that uses one gets the full namespace.
_DYNAMIC = {"globals", "vars", "locals", "eval", "exec", "__import__", "__builtins__"}


def free_names(code: str) -> set[str] | None:
    """The names ``code`` reads but never binds itself (assignment, ``def``, ``class``, ``import``, an argument, a
    loop or comprehension target, ``as``) and that are not builtins: what it needs from its namespace. ``None``
    when that cannot be told from the source: it does not parse, or it can read its namespace as a whole (one of
    ``globals``, ``vars``, ``locals``, ``eval``, ``exec``, ``__import__``, or an attribute such as
    ``__globals__`` or ``f_globals``)."""
    import ast
    import builtins

    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return None
    read, bound = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (read if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.alias):
            bound.add(node.asname or node.name.split(".")[0])
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            bound.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            bound.add(node.rest)
        elif isinstance(node, ast.Attribute) and ("globals" in node.attr or "frame" in node.attr):
            return None
    if read & _DYNAMIC:
        return None
    return read - bound - set(dir(builtins))


def base_namespace(needs: set[str] | None = None) -> dict:
    """What a chapter imports and a student's answer may use: torch, NumPy, SymPy and the library's public API.

    ``needs``: the names a cell reads from its namespace (:func:`free_names`). When they are all NumPy's ``np``,
    SymPy's ``sp``, ``math`` or ``replace``, only those are given and PyTorch is not imported; otherwise (and for
    ``None``) everything is."""
    import importlib
    import math
    from dataclasses import replace

    if needs is not None and needs <= _LIGHT:
        light = {"math": math, "replace": replace}
        if "np" in needs:
            light["np"] = importlib.import_module("numpy")
        if "sp" in needs:
            light["sp"] = importlib.import_module("sympy")
        return {name: value for name, value in light.items() if name in needs}

    import numpy as np
    import sympy as sp
    import torch
    import torch.nn.functional as F

    ns = {"torch": torch, "np": np, "sp": sp, "math": math, "F": F, "replace": replace}
    for name in ("attnconv", "attnconv.construct", "attnconv.positional", "attnconv.bounds",
                 "attnconv.models.smallcnn", "attnconv.lightconv"):
        module = importlib.import_module(name)
        ns.update({n: getattr(module, n) for n in getattr(module, "__all__", ()) if hasattr(module, n)})
    return ns


def is_private(exercise) -> bool:
    """Whether a function exercise comes from a ``--checks`` module rather than from ``attnconv`` itself."""
    return getattr(exercise.context, "__module__", "").split(".")[0] != "attnconv"


def portable_probe(exercise, private: tuple[str, ...] = ()) -> dict:
    """A private exercise's ``probe`` as data the sandbox can run without the checks: its compiled code
    (``marshal``, read by the same Python) and, for each global name it loads, the module or the importable object
    it names. Raises ``ValueError`` (naming the exercise) for a probe that needs anything of the checks modules
    ``private`` (a helper defined there, a closure): that would hand the checks to the student's process."""
    import base64
    import builtins
    import dis
    import marshal
    import types

    probe = exercise.probe
    code = getattr(probe, "__code__", None)
    if code is None or probe.__closure__ or probe.__defaults__ or probe.__kwdefaults__:
        raise ValueError(f"{exercise.label}: the probe of a private check must be a plain function or lambda "
                         "(no closure, no defaults), since it runs where the checks are not")
    names, todo = set(), [code]
    while todo:
        current = todo.pop()
        names |= {i.argval for i in dis.get_instructions(current) if i.opname in ("LOAD_GLOBAL", "LOAD_NAME")}
        todo += [c for c in current.co_consts if isinstance(c, types.CodeType)]
    roots = {m.split(".")[0] for m in private} | {probe.__module__.split(".")[0]}
    refs = {}
    for name in sorted(names):
        if name not in probe.__globals__:
            if hasattr(builtins, name):
                continue
            raise ValueError(f"{exercise.label}: the probe reads {name!r}, which its module does not define")
        value = probe.__globals__[name]
        module = value.__name__ if isinstance(value, types.ModuleType) else getattr(value, "__module__", None)
        qualname = "" if isinstance(value, types.ModuleType) else getattr(value, "__qualname__", None)
        if not module or qualname is None or "<" in qualname or module.split(".")[0] in roots:
            raise ValueError(f"{exercise.label}: the probe uses {name!r} from the private checks; a probe may use "
                             "only builtins, modules and what they define (attnconv, torch, numpy, ...)")
        refs[name] = [module, qualname]
    return {"code": base64.b64encode(marshal.dumps(code)).decode(), "globals": refs}


def _probe_from(spec: dict):
    import base64
    import builtins
    import importlib
    import marshal
    import types

    namespace = {"__builtins__": builtins}
    for name, (module, qualname) in spec["globals"].items():
        value = importlib.import_module(module)
        for part in filter(None, qualname.split(".")):
            value = getattr(value, part)
        namespace[name] = value
    return types.FunctionType(marshal.loads(base64.b64decode(spec["code"])), namespace)


def run_function_exercise(label: str, code: str, seed: int, timeout: float = 180, checks: tuple[str, ...] = (),
                          *, folder: Path | None = None, isolation=None, limits=None, inputs: str | None = None,
                          probe: dict | None = None, hide: tuple[Path, ...] = (),
                          cgroup=None, quota=None) -> tuple[dict | None, str]:
    """Run ``code`` (a student's cell) for exercise ``label`` on hidden inputs in a separate, isolated process.

    ``folder`` is the submission's private folder (its ``library`` is imported; a scratch folder is made in it);
    without one, a temporary folder with a fresh copy of the library is used. For a private exercise, ``inputs``
    (wire text from ``attnconv.course.checker.Checker.inputs``) and ``probe`` (:func:`portable_probe`) replace
    the seed, and ``checks`` are only hidden (with ``hide``), never imported. Returns ``(answers, "")`` with the
    probe's data still encoded as JSON text in ``answers["json"]``, or ``(None, reason)`` when the cell raised,
    the probe failed or the time ran out. ``quota`` (``attnconv.course.isolation.ScratchQuota``): the
    scratch folder is made inside the submission's, under its size limit, and the process is stopped once that is
    full. Never raises. The whole process tree is killed when it returns.
    """
    from .checker import Library, private_paths, python_path
    from .isolation import Limits, clean_env, detect

    isolation = isolation or detect()
    from .exercises import EXERCISES

    exercise = EXERCISES.get(label)
    if inputs is None and exercise is not None and exercise.sandboxed and is_private(exercise):
        from .wire import dumps  # called alone: this process has the checks, and builds what the sandbox gets

        inputs, probe = dumps(exercise.context(int(seed))), portable_probe(exercise, tuple(checks))
    if inputs is not None:
        request = json.dumps({"label": label, "code": code, "inputs": inputs, "probe": probe})
    else:
        request = json.dumps({"label": label, "code": code, "seed": int(seed)})
    with tempfile.TemporaryDirectory(prefix="attnconv-sandbox-") as own:
        base = Path(folder) if folder is not None else Path(own)
        Path(own).chmod(0o711)
        library = base / "library"
        if not library.exists():
            Library.capture(()).write(library)
        scratch = Path(tempfile.mkdtemp(prefix=f"sandbox-{label}-", dir=quota.folder if quota else base))
        isolation.prepare(scratch)
        env = clean_env({"PYTHONPATH": python_path(library, tuple(checks)), "HOME": str(scratch),
                         "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "PYTHONHASHSEED": "0", "MPLBACKEND": "Agg",
                         "PYTHONDONTWRITEBYTECODE": "1"})
        cmd = isolation.command([sys.executable, "-m", "attnconv.course.sandbox"], scratch, env,
                                limits or Limits(cpu_s=int(timeout) * 4, file_mb=256), readable=(library,),
                                hide=tuple(hide) + tuple(private_paths(tuple(checks))), cgroup=cgroup)
        # what it writes goes to files, never whole into the grader's memory: the reply line is read up to
        # REPLY_CAP characters, and only the end of stderr
        with open(Path(own) / "stdout", "wb+") as stdout, open(Path(own) / "stderr", "wb+") as stderr:
            proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=stdout, stderr=stderr, start_new_session=True)
            try:
                _wait(proc, request.encode(), timeout, quota)
            except subprocess.TimeoutExpired:
                return None, f"your cell ran past the {timeout:.0f} s limit on the hidden inputs"
            except _Full:
                return None, f"on hidden inputs your cell filled the scratch folder's {quota.mb} MiB quota"
            finally:
                try:
                    os.killpg(proc.pid, 9)  # whatever it left behind
                except (ProcessLookupError, PermissionError):
                    pass
                proc.wait()
            line = _reply_line(stdout)
            stderr.seek(max(0, stderr.seek(0, os.SEEK_END) - 4096))
            tail = stderr.read().decode(errors="replace").strip().splitlines()[-1:]
    lines = [line] if line is not None else []
    if not lines:
        if proc.returncode is not None and proc.returncode < 0:  # a kill: the signal, not what the cell printed
            return None, f"the grader could not run your cell on hidden inputs ({_status(proc.returncode)})"
        tail = tail or [_status(proc.returncode)]
        return None, f"the grader could not run your cell on hidden inputs ({tail[0][:200]})"
    try:
        reply = json.loads(lines[-1][len(MARKER):])
        if "error" in reply:  # only the sandbox's own two forms; anything else was forged by the cell
            error = str(reply["error"])
            if not error.startswith(("on hidden inputs your cell raised ", "on hidden inputs, using your answer raised ")):
                return None, "the sandbox's reply could not be read"
            return None, error[:2000]
        if not isinstance(reply.get("answers"), str):
            raise ValueError("no answers")
    except (ValueError, AttributeError):
        return None, "the sandbox's reply could not be read"
    return {"json": reply["answers"]}, ""


class _Full(Exception):
    """The scratch folder's quota was reached."""


def _wait(proc: subprocess.Popen, request: bytes, timeout: float, quota) -> None:
    """Send ``request`` and wait for ``proc``: ``subprocess.TimeoutExpired`` past ``timeout``, ``_Full`` as
    soon as ``quota`` says the scratch folder is full."""
    import threading
    import time

    def send():
        try:
            proc.stdin.write(request)
            proc.stdin.close()
        except OSError:  # it ended before reading its request
            pass

    threading.Thread(target=send, daemon=True).start()
    end = time.monotonic() + timeout
    while True:
        try:
            proc.wait(timeout=max(0.01, min(0.5, end - time.monotonic())))
            return
        except subprocess.TimeoutExpired:
            if time.monotonic() >= end:
                raise
        if quota is not None and quota.over():
            raise _Full


def _reply_line(handle) -> str | None:
    """The last line of ``handle`` that starts with the marker, reading at most REPLY_CAP characters of any line."""
    handle.seek(0)
    found, marker = None, MARKER.encode()
    while True:
        line = handle.readline(REPLY_CAP)
        if not line:
            return found
        if not line.endswith(b"\n") and len(line) >= REPLY_CAP:  # longer than any reply: skip the rest of it
            while line and not line.endswith(b"\n"):
                line = handle.readline(REPLY_CAP)
            continue
        if line.startswith(marker):
            found = line.decode(errors="replace").rstrip("\n")


def _status(code: int) -> str:
    if code < 0:
        from .escape import exit_status

        return f"the process was {exit_status(code)}: the memory or CPU limit, or a kill"
    return f"exit status {code}"


def _main() -> int:
    request = json.loads(sys.stdin.read())
    real_stdout = os.dup(1)
    os.dup2(2, 1)  # whatever the student's code prints goes to stderr, not into the reply

    def reply(data: dict) -> int:
        os.write(real_stdout, (MARKER + json.dumps(data) + "\n").encode())
        return 0

    from .exercises.core import no_grad
    from .wire import dumps, loads

    if "inputs" in request:  # a private exercise: data and the probe's code, nothing of the checks
        given = loads(request.pop("inputs"))
        probe = _probe_from(request.pop("probe"))
    else:
        from .exercises import EXERCISES

        exercise = EXERCISES[request["label"]]
        given = exercise.context(request.pop("seed"))
        probe = exercise.probe
    extra = {"verify": lambda *a, **k: None, "display": lambda *a, **k: None, "__name__": "__main__"}
    needs = free_names(request["code"])
    namespace = base_namespace(None if needs is None else needs - given.keys() - extra.keys())
    namespace.update(given)
    namespace.update(extra)
    try:
        exec(compile(request["code"], "<your cell>", "exec"), namespace)  # noqa: S102  (the sandbox's one job)
    except BaseException as err:  # noqa: BLE001
        return reply({"error": f"on hidden inputs your cell raised {type(err).__name__}: {str(err)[:300]}"})
    try:
        with no_grad():  # torch.no_grad() where the cell, its inputs or the probe imported PyTorch
            answers = dumps(probe(namespace))
    except BaseException as err:  # noqa: BLE001
        return reply({"error": f"on hidden inputs, using your answer raised {type(err).__name__}: {str(err)[:300]}"})
    return reply({"answers": answers})


if __name__ == "__main__":
    sys.exit(_main())
