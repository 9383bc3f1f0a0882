"""The sandbox: where the grader runs a function exercise's cell on hidden inputs.

The grader (:mod:`attnconv.course.grade`) never executes student code itself. For a function exercise it starts
``python -m attnconv.course.sandbox`` as a separate process, in an empty temporary folder, and sends it the
exercise's label, the source of the student's answer cell and a random seed. The sandbox builds the hidden inputs
from the seed (the exercise's ``context``), runs the cell with them in place of the chapter's, applies the
exercise's ``probe`` to the student's objects and writes the result as data (:mod:`attnconv.course.wire`). Only that
data goes back. The check then runs in the grader, against inputs the grader rebuilds from the same seed.
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


def _package_root() -> str:
    import attnconv

    return str(Path(attnconv.__file__).resolve().parents[1])


def run_function_exercise(label: str, code: str, seed: int, timeout: float = 180,
                          checks: tuple[str, ...] = ()) -> tuple[dict | None, str]:
    """Run ``code`` (a student's cell) for exercise ``label`` on hidden inputs in a separate process.

    Returns ``(answers, "")`` with the probe's data still encoded as JSON text in ``answers["json"]``, or
    ``(None, reason)`` when the cell raised, the probe failed or the time ran out. Never raises.
    """
    request = json.dumps({"label": label, "code": code, "seed": int(seed), "checks": list(checks)})
    paths = [_package_root()] + [p for p in sys.path if p and os.path.isdir(p)]
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": os.pathsep.join(dict.fromkeys(paths)),
           "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "PYTHONHASHSEED": "0", "MPLBACKEND": "Agg"}
    with tempfile.TemporaryDirectory(prefix="attnconv-sandbox-") as folder:
        env["HOME"] = folder
        try:
            proc = subprocess.run([sys.executable, "-m", "attnconv.course.sandbox"], input=request, text=True,
                                  capture_output=True, timeout=timeout, cwd=folder, env=env)
        except subprocess.TimeoutExpired:
            return None, f"your cell ran past the {timeout:.0f} s limit on the hidden inputs"
    lines = [line for line in proc.stdout.splitlines() if line.startswith(MARKER)]
    if not lines:
        tail = proc.stderr.strip().splitlines()[-1:] or [f"exit status {proc.returncode}"]
        return None, f"the grader could not run your cell on hidden inputs ({tail[0][:200]})"
    reply = json.loads(lines[-1][len(MARKER):])
    if "error" in reply:
        return None, reply["error"]
    return {"json": reply["answers"]}, ""


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
