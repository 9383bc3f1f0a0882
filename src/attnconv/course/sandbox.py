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

__all__ = ["base_namespace", "run_function_exercise"]

MARKER = "@@ATTNCONV-SANDBOX@@"


def base_namespace() -> dict:
    """What a chapter imports and a student's answer may use: torch, NumPy, SymPy and the library's public API."""
    import importlib
    import math
    from dataclasses import replace

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


def run_function_exercise(label: str, code: str, seed: int, timeout: float = 180, checks: tuple[str, ...] = (),
                          *, folder: Path | None = None, isolation=None, limits=None) -> tuple[dict | None, str]:
    """Run ``code`` (a student's cell) for exercise ``label`` on hidden inputs in a separate, isolated process.

    ``folder`` is the submission's private folder (its ``library`` is imported; a scratch folder is made in it);
    without one, a temporary folder with a fresh copy of the library is used. Returns ``(answers, "")`` with the
    probe's data still encoded as JSON text in ``answers["json"]``, or ``(None, reason)`` when the cell raised,
    the probe failed or the time ran out. Never raises. The whole process tree is killed when it returns.
    """
    from .checker import Library, python_path
    from .isolation import Limits, clean_env, detect

    isolation = isolation or detect()
    request = json.dumps({"label": label, "code": code, "seed": int(seed), "checks": list(checks)})
    with tempfile.TemporaryDirectory(prefix="attnconv-sandbox-") as own:
        base = Path(folder) if folder is not None else Path(own)
        Path(own).chmod(0o711)
        library = base / "library"
        if not library.exists():
            Library.capture(tuple(checks)).write(library)
        scratch = Path(tempfile.mkdtemp(prefix=f"sandbox-{label}-", dir=base))
        isolation.prepare(scratch)
        env = clean_env({"PYTHONPATH": python_path(library), "HOME": str(scratch), "OMP_NUM_THREADS": "1",
                         "MKL_NUM_THREADS": "1", "PYTHONHASHSEED": "0", "MPLBACKEND": "Agg",
                         "PYTHONDONTWRITEBYTECODE": "1"})
        cmd = isolation.command([sys.executable, "-m", "attnconv.course.sandbox"], scratch, env,
                                limits or Limits(cpu_s=int(timeout) * 4), readable=(library,))
        proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                start_new_session=True)
        try:
            stdout, stderr = proc.communicate(request.encode(), timeout=timeout)
        except subprocess.TimeoutExpired:
            return None, f"your cell ran past the {timeout:.0f} s limit on the hidden inputs"
        finally:
            try:
                os.killpg(proc.pid, 9)  # whatever it left behind
            except (ProcessLookupError, PermissionError):
                pass
            proc.wait()
    lines = [line for line in stdout.decode(errors="replace").splitlines() if line.startswith(MARKER)]
    if not lines:
        if proc.returncode is not None and proc.returncode < 0:  # a kill: the signal, not what the cell printed
            return None, f"the grader could not run your cell on hidden inputs ({_status(proc.returncode)})"
        tail = stderr.decode(errors="replace").strip().splitlines()[-1:] or [_status(proc.returncode)]
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

    import importlib

    from .exercises import EXERCISES
    from .wire import dumps

    for module in request["checks"]:
        importlib.import_module(module)
    exercise = EXERCISES[request["label"]]
    namespace = base_namespace()
    namespace.update(exercise.context(request["seed"]))
    namespace.update({"verify": lambda *a, **k: None, "display": lambda *a, **k: None, "__name__": "__main__"})
    del request["seed"]
    try:
        exec(compile(request["code"], "<your cell>", "exec"), namespace)  # noqa: S102  (the sandbox's one job)
    except BaseException as err:  # noqa: BLE001
        return reply({"error": f"on hidden inputs your cell raised {type(err).__name__}: {str(err)[:300]}"})
    try:
        import torch

        with torch.no_grad():
            answers = dumps(exercise.probe(namespace))
    except BaseException as err:  # noqa: BLE001
        return reply({"error": f"on hidden inputs, using your answer raised {type(err).__name__}: {str(err)[:300]}"})
    return reply({"answers": answers})


if __name__ == "__main__":
    sys.exit(_main())
