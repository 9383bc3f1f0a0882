"""Running a submission: its notebook in an isolated kernel, with limits that hold while a cell runs.

:func:`run_notebook` executes the notebook top to bottom in a fresh kernel started through
``attnconv.course.isolation``, in the submission's scratch folder. Right after an exercise's cell it runs a
short cell that hands that exercise's answers back as data (:mod:`attnconv.course.wire`). Limits:

- a cell is interrupted at ``cell_timeout`` seconds, or when the notebook's ``total_timeout`` is reached, even
  in the middle of the cell; a cell that ignores the interrupt is stopped 10 s later by killing the kernel;
- when the kernel dies (``os._exit``, the memory limit, a signal), the cell it died in is named, and so is the
  reason every later exercise was not graded;
- at the end the kernel's whole process tree is killed: the sandbox's PID namespace where there is one, and
  in any case every process left below the grader (which is a child subreaper, so that processes which detach
  from the kernel still end up below it).
"""

from __future__ import annotations

import ctypes
import logging
import os
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from .isolation import Isolation, Limits, clean_env

__all__ = ["KernelRun", "become_subreaper", "descendants", "kill_tree", "run_notebook"]

MARKER = "@@ATTNCONV-ANSWERS@@"
OUTPUT_CAP = 8 * 2**20  # characters of output kept per notebook (all cells but the answer captures)
ANSWER_CAP = 64 * 2**20  # characters of one exercise's answers, read back as one line
CAPTURE_TIMEOUT = 120  # seconds to hand one exercise's answers back (a large tensor on a busy machine)
GRACE = 10  # seconds a cell has to stop after it was interrupted

_QUIET = logging.getLogger("attnconv.course.grade.kernel")  # nbclient's own timeout messages: the report says it
_QUIET.setLevel(logging.CRITICAL)


@dataclass
class KernelRun:
    """What running the notebook gave: raw answer lines by label, and the error of each cell that failed."""

    captured: dict[str, str] = field(default_factory=dict)
    errors: dict[int, dict] = field(default_factory=dict)
    died_at: int | None = None
    dropped: list[str] = field(default_factory=list)  # what the caps left out, in the report's words


def become_subreaper() -> bool:
    """Make this process adopt orphaned descendants (Linux ``PR_SET_CHILD_SUBREAPER``); False where unsupported."""
    try:
        return ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def descendants(pid: int) -> list[int]:
    """Every live descendant of ``pid`` (from ``/proc``), deepest last."""
    out, todo = [], [pid]
    while todo:
        parent = todo.pop()
        try:
            tasks = os.listdir(f"/proc/{parent}/task")
        except OSError:
            continue
        for task in tasks:
            try:
                children = Path(f"/proc/{parent}/task/{task}/children").read_text().split()
            except OSError:
                continue
            for child in map(int, children):
                if child not in out:
                    out.append(child)
                    todo.append(child)
    return out


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] in "ZX"
    except (OSError, IndexError):
        return True


def kill_tree(keep: set[int]) -> int:
    """SIGKILL every live descendant of this process not in ``keep`` and reap it; returns how many were killed
    (finished processes that were not reaped yet are reaped and not counted)."""
    killed = 0
    time.sleep(0.5)  # processes that are already dying (the sandbox's, after its first process) finish first
    for _ in range(3):  # a process may fork while its parent is being killed
        found = [p for p in descendants(os.getpid()) if p not in keep]
        for pid in found:
            if _zombie(pid):
                try:
                    os.waitpid(pid, os.WNOHANG)
                except ChildProcessError:
                    pass
        victims = [p for p in found if not _zombie(p)]
        if not victims:
            break
        for pid in victims:
            try:
                os.kill(pid, signal.SIGKILL)
                killed += 1
            except (ProcessLookupError, PermissionError):
                pass
        time.sleep(0.05)
        for pid in victims:
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass
    return killed


def _isolated_manager(isolation: Isolation, scratch: Path, cwd: Path, env: dict, limits: Limits,
                      hide: tuple[Path, ...], readable: tuple[Path, ...], cgroup=None):
    from jupyter_client.manager import AsyncKernelManager

    class IsolatedKernelManager(AsyncKernelManager):
        async def _async_launch_kernel(self, kernel_cmd, **kw):
            if isolation.uid is not None:  # jupyter_client wrote it 0600 for the grader: the kernel's user reads it
                os.chown(self.connection_file, isolation.uid, isolation.gid)
            kw.update(stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            return await super()._async_launch_kernel(kernel_cmd, **kw)

        def format_kernel_cmd(self, extra_arguments=None):
            cmd = super().format_kernel_cmd(extra_arguments)
            return isolation.command(cmd, scratch, env, limits, cwd=cwd, hide=hide, readable=readable, cgroup=cgroup)

    from traitlets.config import Config

    # IPC transport: the kernel's sockets are files in its scratch folder, so nothing listens on TCP (and the
    # sandbox has no network for TCP anyway).
    config = Config()
    config.KernelManager.transport = "ipc"
    config.KernelManager.ip = str(scratch / "kernel")
    manager = IsolatedKernelManager(config=config, kernel_name="python3")
    manager.connection_file = str(scratch / "kernel.json")
    return manager


def _capture_cell(names: tuple[str, ...], nonce: str) -> nbformat.NotebookNode:
    # Runs in the student's kernel: it only reads values and prints them as data; nothing it prints is a grade.
    code = ("(lambda g: print({marker!r} + __import__('attnconv.course.wire', fromlist=['dumps']).dumps("
            "{{n: g[n] for n in {names!r} if n in g}})))(globals())").format(marker=MARKER + nonce, names=names)
    return nbformat.v4.new_code_cell(code)


def _cell_error(cell) -> dict | None:
    for out in cell.get("outputs", []):
        if out.get("output_type") == "error":
            return {"ename": str(out.get("ename", ""))[:100], "evalue": str(out.get("evalue", ""))[:300]}
    return None


def _death(manager) -> str:
    process = getattr(getattr(manager, "provisioner", None), "process", None)
    code = process.poll() if process is not None else None
    if code is None:
        return "it stopped answering"
    if code < 0:
        name = signal.Signals(-code).name if -code in signal.Signals._value2member_map_ else str(-code)
        return f"killed by {name}" + (" (the memory or CPU limit, or a kill)" if name in ("SIGKILL", "SIGXCPU")
                                      else "")
    return f"exit status {code}" + (" (os._exit or sys.exit in the kernel's own process)" if code else "")


def _still_busy(client, index: int, cell) -> None:
    """After an interrupted cell, wait for the kernel to answer a no-op cell (the watchdog is still armed)."""
    probe = nbformat.v4.new_code_cell("pass")
    client.timeout = GRACE + 5
    try:
        client.execute_cell(probe, index)
    finally:
        client.nb.cells[index] = cell


def run_notebook(nb: nbformat.NotebookNode, capture_after: dict[int, list], nonce: str, isolation: Isolation,
                 scratch: Path, cwd: Path, library: Path, pythonpath: str, limits: Limits, cell_timeout: int,
                 total_timeout: int, hide: tuple[Path, ...] = (), extra_env: dict[str, str] | None = None,
                 cgroup=None, quota=None) -> KernelRun:
    """Execute ``nb`` in place (see the module docstring); ``capture_after`` maps a cell index to the exercises
    whose answers are read right after it; ``extra_env`` is added to the kernel's environment; ``cgroup``
    (:class:`~attnconv.course.isolation.Cgroup`) is the one the kernel joins; ``quota``
    (:class:`~attnconv.course.isolation.ScratchQuota`): the kernel is stopped once the scratch folder is full."""
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError, DeadKernelError

    run = KernelRun()
    kept = {"output": 0, "answer": 0, "dropped": 0, "capturing": False}

    class CappedClient(NotebookClient):
        """Keeps at most OUTPUT_CAP characters of the notebook's outputs, and ANSWER_CAP of each answer capture;
        the rest is counted and dropped, never held."""

        def output(self, outs, msg, display_id, cell_index):
            content = msg.get("content", {})
            if msg.get("msg_type") == "error":  # kept, so that the failed cell is known, but cut to size
                content["evalue"] = str(content.get("evalue", ""))[:2000]
                content["traceback"] = [str(line)[:2000] for line in (content.get("traceback") or [])[-30:]]
            size = sum(len(str(v)) for v in (content.get("data") or {}).values()) + len(str(content.get("text", ""))) \
                + sum(len(str(line)) for line in content.get("traceback", []) or [])
            which, cap = ("answer", ANSWER_CAP) if kept["capturing"] else ("output", OUTPUT_CAP)
            if kept[which] + size > cap and msg.get("msg_type") != "error":
                kept["dropped"] += size
                return None
            kept[which] += size
            return super().output(outs, msg, display_id, cell_index)

    env = clean_env({"PYTHONPATH": pythonpath, "HOME": str(scratch), "IPYTHONDIR": str(scratch / ".ipython"),
                     "MPLCONFIGDIR": str(scratch / ".matplotlib"), "MPLBACKEND": "Agg",
                     "PYTHONDONTWRITEBYTECODE": "1", "JUPYTER_PLATFORM_DIRS": "1", **(extra_env or {})})
    manager = _isolated_manager(isolation, scratch, cwd, env, limits, hide, (library,), cgroup)
    client = CappedClient(nb, km=manager, timeout=cell_timeout, allow_errors=True, interrupt_on_timeout=True,
                            error_on_timeout={"ename": "CellTimeout", "evalue": "time limit"}, log=_QUIET,
                            resources={"metadata": {"path": str(cwd)}}, startup_timeout=180)
    start = time.monotonic()
    deadline = {"at": None, "why": ""}
    fired = threading.Event()
    done = threading.Event()

    full = threading.Event()

    def stop_kernel():
        process = getattr(manager.provisioner, "process", None) if manager.provisioner else None
        if process is not None:
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        if cgroup is not None:
            cgroup.kill()

    def watchdog():  # kills the kernel when a cell outlives its limit and its interrupt, or fills its scratch
        while not done.wait(0.5):
            if quota is not None and not full.is_set() and quota.over():
                full.set()
                stop_kernel()
            at = deadline["at"]
            if at is not None and time.monotonic() > at:
                fired.set()
                stop_kernel()
                deadline["at"] = None

    guard = threading.Thread(target=watchdog, daemon=True)
    guard.start()
    try:
        with client.setup_kernel():
            for index, cell in enumerate(nb.cells):
                if cell.cell_type != "code":
                    continue
                left = total_timeout - (time.monotonic() - start)
                if left <= 1:
                    run.errors[index] = {"ename": "TimeLimit", "evalue": f"the notebook's {total_timeout} s time "
                                         "limit was reached before this cell ran"}
                    continue
                limit = min(cell_timeout, left)
                why = "cell" if limit == cell_timeout else "notebook"
                client.timeout = max(1, int(limit))
                began = time.monotonic()
                deadline["at"] = began + limit + GRACE
                timed_out = False
                try:
                    client.execute_cell(cell, index)
                    # nbclient interrupts at the limit and returns without an error output of its own
                    timed_out = time.monotonic() - began >= client.timeout - 0.05
                    if timed_out:
                        _still_busy(client, index, cell)  # the watchdog stops a kernel that ignored the interrupt
                except DeadKernelError:
                    overran = fired.is_set()
                    reason = (f"ran past the {cell_timeout if why == 'cell' else total_timeout} s time limit of the "
                              f"{why} and did not stop when interrupted, so the kernel was stopped") if overran else \
                        f"the kernel died while this cell ran ({_death(manager)})"
                    ename = "CellTimeout" if overran else "DeadKernel"
                    if full.is_set():
                        ename, reason = "ScratchQuota", f"this cell filled the scratch folder's {quota.mb} MiB " \
                                                       "quota, so the kernel was stopped"
                    run.errors[index] = {"ename": ename, "evalue": reason, "limit": why}
                    run.died_at = index
                    break
                except CellExecutionError as err:
                    run.errors[index] = {"ename": type(err).__name__, "evalue": str(err)[:300]}
                finally:
                    deadline["at"] = None
                if quota is not None and (full.is_set() or quota.over()):
                    # The cell ended before the watchdog looked: on a full tmpfs the writes fail at once and the
                    # cell may go on to end by itself. The quota is still what stopped it, and nothing runs after.
                    full.set()
                    stop_kernel()
                    run.errors[index] = {"ename": "ScratchQuota", "evalue": f"this cell filled the scratch folder's "
                                         f"{quota.mb} MiB quota, so the kernel was stopped", "limit": why}
                    run.died_at = index
                    break
                if timed_out:
                    run.errors[index] = {"ename": "CellTimeout", "evalue": "time limit", "limit": why}
                elif (error := _cell_error(cell)) is not None:
                    run.errors[index] = error
                for exercise in capture_after.get(index, []):
                    capture = _capture_cell(exercise.names, nonce)
                    wait = max(5, min(CAPTURE_TIMEOUT, total_timeout - (time.monotonic() - start)))
                    client.timeout = int(wait)
                    deadline["at"] = time.monotonic() + wait + GRACE
                    kept["capturing"], kept["answer"] = True, 0
                    try:
                        client.execute_cell(capture, index)
                    except DeadKernelError:
                        run.errors.setdefault(index, {"ename": "DeadKernel", "evalue": "the kernel died while "
                                                      f"its answers were read back ({_death(manager)})"})
                        run.died_at = index
                    except CellExecutionError:
                        pass
                    finally:
                        kept["capturing"] = False
                        deadline["at"] = None
                        nb.cells[index] = cell  # nbclient stores the executed cell at the index it is given
                    for out in capture.get("outputs", []):
                        text = out.get("text", "") if out.get("output_type") == "stream" else ""
                        for line in text.splitlines():
                            if line.startswith(MARKER + nonce):
                                run.captured[exercise.label] = line[len(MARKER + nonce):]
                    if run.died_at is not None:
                        break
                if run.died_at is not None:
                    break
    except DeadKernelError:
        run.died_at = run.died_at if run.died_at is not None else -1
    except RuntimeError as err:  # the kernel did not start
        run.errors[-1] = {"ename": "KernelStart", "evalue": f"the kernel did not start ({str(err)[:200]})"}
        run.died_at = -1
    finally:
        if kept["dropped"]:
            run.dropped.append(f"{kept['dropped']:,} characters of output were dropped (the grader keeps "
                               f"{OUTPUT_CAP // 2**20} MiB of a notebook's output and {ANSWER_CAP // 2**20} MiB of "
                               "each exercise's answers)")
        done.set()
        process = getattr(manager.provisioner, "process", None) if manager.provisioner else None
        if process is not None:
            try:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=10)
            except (ProcessLookupError, PermissionError, subprocess.TimeoutExpired):
                pass
    return run
