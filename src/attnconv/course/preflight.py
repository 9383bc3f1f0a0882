"""Before any grading: start one real kernel through the real sandbox, and refuse to grade when it cannot start.

:func:`~attnconv.course.isolation.detect` finds what the machine allows from small probes. A probe can pass
while every kernel dies (a connection file the kernel's user cannot read, a Python under a folder the sandbox
hides), and a grader that went on would give every student 0. :func:`preflight` runs the same code path as a
grading (:func:`~attnconv.course.execute.run_notebook`: the pristine library, the scratch folder, the limits, the
user switch and bubblewrap), on a notebook of one cell that imports the library, then starts the checker (under
its own user, with the checks) the same way, and says in one line why either failed, if one did.
"""

from __future__ import annotations

import secrets
import shutil
import tempfile
from pathlib import Path

import nbformat

from .checker import Checker, Library, private_paths, python_path
from .execute import run_notebook
from .isolation import Isolation, Limits

__all__ = ["preflight"]

_DONE: dict[tuple, str | None] = {}


def preflight(isolation: Isolation, checks: tuple[str, ...] = (), timeout: int = 300) -> str | None:
    """``None`` when a kernel starts through ``isolation`` and imports ``attnconv``, and a checker starts and
    imports ``checks``; otherwise one line: what failed and what to do. Cached per isolation and checks in this
    process."""
    key = (isolation.bwrap, isolation.setpriv, isolation.uid, isolation.mapped, tuple(checks))
    if key in _DONE:
        return _DONE[key]
    token = secrets.token_hex(8)
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(f"import attnconv\nprint({token!r})")])
    folder = Path(tempfile.mkdtemp(prefix="attnconv-preflight-"))
    try:
        folder.chmod(0o711)
        library = Library.capture(()).write(folder / "library")
        scratch = folder / "scratch"
        isolation.prepare(scratch)
        run = run_notebook(nb, {}, token, isolation, scratch, scratch, library, python_path(library, tuple(checks)),
                           Limits(cpu_s=timeout), timeout, timeout, hide=tuple(private_paths(tuple(checks))))
        checker = ""
        if token in "".join(o.get("text", "") for o in nb.cells[0].get("outputs", [])):
            with Checker(tuple(checks), exercise_timeout=timeout, isolation=isolation, folder=folder) as probe:
                reply = probe.check("attnconv-preflight-no-such-exercise", "{}", 0)
            if "attnconv-preflight-no-such-exercise" not in reply[0].message:  # the checker's own KeyError
                checker = reply[0].message
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    printed = "".join(o.get("text", "") for o in nb.cells[0].get("outputs", []) if o.get("output_type") == "stream")
    problem = None
    if token not in printed:
        error = next(iter(run.errors.values()), {"evalue": "it printed nothing"})
        problem = (f"a test kernel did not run in this machine's sandbox ({isolation.summary().split(';')[0]}): "
                   f"{error['evalue'][:200]}. Check that the user nobody can read this Python and the data, or "
                   "run the grader with --isolation none to accept weaker isolation")
    elif checker:
        problem = (f"the checker did not run in this machine's sandbox under its own user: {checker[:200]}. Check "
                   "that any user can read this Python and the checks, or set ATTNCONV_CHECKER_UID")
    _DONE[key] = problem
    return problem
