"""The grader in each situation it meets where instructors grade, from the command line, as a new process:

- **default**: whatever this machine gives (as root here with a Python under ``/root``: bubblewrap maps the kernel
  to ``nobody`` inside its own user namespace);
- **full**: root, with a Python that ``nobody`` can run (Gradescope's image). Arranged here in a private mount
  namespace (``unshare -m``) in which every folder on the way to this Python that ``nobody`` could not enter is
  replaced by an open copy of itself; nothing outside that namespace changes;
- **no bubblewrap**: a ``PATH`` without ``bwrap`` (a container without user namespaces): the grader refuses unless
  told ``--isolation none``, and then grades;
- **grader under /tmp**: the grader's Python is a virtual environment under ``/tmp``, which the sandbox replaces
  by a private, empty folder; the grader binds what it needs back, read-only.

In each, the honest notebook earns full marks and the untouched student edition earns none.
"""

from __future__ import annotations

import json
import os
import shutil
import site
import stat
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from toy_course import CHAPTER, MAX, honest_cells, stub_cells, write

ROOT = os.geteuid() == 0
NOBODY = 65534


def _grade(argv: list[str], checks: Path, tmp: Path, wrap: list[str] = (), python: str = sys.executable,
           env_extra: dict | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(checks), *[p for p in sys.path if p and Path(p).is_dir()
                                                                      and "site-packages" not in p]]))
    env.update(env_extra or {})
    return subprocess.run([*wrap, python, "-m", "attnconv.course.grade", *argv, "--chapter", CHAPTER, "--checks",
                           "toy_checks", "--total-timeout", "600"], capture_output=True, text=True, env=env,
                          cwd=tmp, timeout=1200)


def _score(report: Path) -> int:
    return json.loads(report.read_text())["score"]


def _grades_right(toy: Path, **kw) -> dict:
    alice, bob = write(toy / "alice.ipynb", *honest_cells()), write(toy / "bob.ipynb", *stub_cells())
    seen = {}
    for path in (alice, bob):
        out = _grade([str(path), "--report", str(path.with_suffix(".json"))], toy / "checks", toy, **kw)
        assert out.returncode == 0, out.stderr[-2000:]
        seen[path.stem] = (_score(path.with_suffix(".json")), out.stderr)
    assert seen["alice"][0] == MAX and seen["bob"][0] == 0, seen
    return seen


def _closed_folders(paths: list[Path]) -> list[Path]:
    """The folders on the way to ``paths`` that the user nobody may not enter (no execute bit for others)."""
    closed = []
    for path in paths:
        for folder in [*reversed(Path(path).resolve().parents)]:
            if folder != Path("/") and not os.stat(folder).st_mode & stat.S_IXOTH and folder not in closed:
                closed.append(folder)
    return closed


def _opened_namespace(closed: list[Path]) -> list[str]:
    """``unshare -m sh -c ...``: each closed folder replaced, in a private mount namespace, by a tmpfs of mode 755
    holding its entries bound back (each keeps its own mode)."""
    script = ["set -e", "mount --make-rprivate /"]
    for i, folder in enumerate(closed):
        keep = f"/run/attnconv-open-{i}"
        script += [f"mkdir -p {keep}", f"mount --bind '{folder}' {keep}",
                   f"mount -t tmpfs -o mode=755 tmpfs '{folder}'",
                   f"for e in {keep}/* {keep}/.[!.]*; do n=\"{folder}/$(basename \"$e\")\"; "
                   f"if [ -L \"$e\" ]; then ln -s \"$(readlink \"$e\")\" \"$n\"; continue; fi; "  # links as links
                   f"[ -e \"$e\" ] || continue; "
                   f"if [ -d \"$e\" ]; then mkdir -p \"$n\"; else touch \"$n\"; fi; mount --bind \"$e\" \"$n\"; done"]
    script.append('exec "$@"')
    return ["unshare", "-m", "sh", "-c", "\n".join(script), "sh"]


def test_default_situation_grades_honest_work_to_full_marks(toy):
    _grades_right(toy)


@pytest.mark.skipif(not ROOT or not shutil.which("unshare") or not shutil.which("bwrap"),
                    reason="needs root, unshare and bubblewrap")
def test_full_isolation_as_root_with_a_python_nobody_can_run(toy):
    toy.chmod(0o755)  # the folders above it are opened in the namespace; files written into it stay real
    needed = [Path(sys.executable), Path(sys.prefix), Path(sys.base_prefix), Path(__file__), toy]
    needed += [Path(p) for p in sys.path if p and Path(p).is_dir()]
    wrap = _opened_namespace(_closed_folders(needed))
    probe = subprocess.run([*wrap, "setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
                            sys.executable, "-c", "import torch"], capture_output=True, text=True, timeout=300)
    if probe.returncode != 0:
        pytest.skip(f"cannot arrange a Python that nobody can run here: {probe.stderr.strip()[-300:]}")
    seen = _grades_right(toy, wrap=wrap)
    summary = seen["alice"][1]
    assert "student code runs isolated" in summary, summary  # full isolation, not the mapped fallback


def _path_without_bwrap(tmp: Path) -> str:
    bin_dir = tmp / "bin-without-bwrap"
    bin_dir.mkdir()
    for tool in ("setpriv", "unshare", "sh", "env"):
        if shutil.which(tool):
            (bin_dir / tool).symlink_to(shutil.which(tool))
    return str(bin_dir)


def test_without_bubblewrap_the_grader_refuses_unless_told_otherwise(toy):
    path = _path_without_bwrap(toy)
    alice = write(toy / "alice.ipynb", *honest_cells())
    refused = _grade([str(alice), "--report", str(toy / "alice.json")], toy / "checks", toy, env_extra={"PATH": path})
    assert refused.returncode == 2 and "bubblewrap" in refused.stderr and "--isolation none" in refused.stderr
    assert not (toy / "alice.json").exists(), "a refusal writes no report"
    for name, cells, expected in (("alice", honest_cells(), MAX), ("bob", stub_cells(), 0)):
        nb = write(toy / f"{name}.ipynb", *cells)
        out = _grade([str(nb), "--isolation", "none", "--report", str(toy / f"{name}.json")], toy / "checks", toy,
                     env_extra={"PATH": path})
        assert out.returncode == 0, out.stderr[-2000:]
        assert _score(toy / f"{name}.json") == expected


def test_a_grader_python_under_tmp_is_bound_back_into_the_sandbox(toy):
    venv = toy / "grader-venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    purelib = Path(sysconfig.get_path("purelib", vars={"base": str(venv), "platbase": str(venv)}))
    dirs = [p for p in site.getsitepackages() if Path(p).is_dir()]
    (purelib / "zz_grader_packages.pth").write_text("".join(f"import site; site.addsitedir({d!r})\n" for d in dirs))
    python = str(venv / "bin" / "python")
    assert str(Path(python).parent).startswith("/tmp/") or str(toy).startswith("/tmp/")
    _grades_right(toy, python=python)


def test_a_sandbox_that_cannot_start_a_kernel_refuses_before_grading(toy, monkeypatch):
    """The preflight runs the real kernel command: a sandbox that breaks it makes the grader refuse in one line."""
    from attnconv.course import grade, preflight
    from attnconv.course.isolation import detect

    isolation = detect()
    broken = type(isolation)(**{**vars(isolation)})
    real = broken.command
    monkeypatch.setattr(broken, "command", lambda argv, *a, **k: real(["/nonexistent/python", *argv[1:]], *a, **k))
    preflight._DONE.clear()
    reason = grade.refuse(broken, "none")
    assert reason and "did not run" in reason and "\n" not in reason
    preflight._DONE.clear()
    assert grade.refuse(isolation, "none") is None


@pytest.mark.skipif(not ROOT or not shutil.which("unshare") or not shutil.which("setpriv"),
                    reason="needs root (to become an ordinary user) and unshare")
def test_an_ordinary_user_grades_the_worked_edition_and_refuses_where_it_cannot_isolate(tmp_path):
    """The grader run as an ordinary user (nobody here), with a Python that user can run: bubblewrap maps the
    kernel into a user namespace of its own, and chapter 01's worked edition earns full marks. Without bwrap on
    its PATH it refuses in one line, before grading anything."""
    import attnconv

    chapter = "01_convolution_as_shifts"
    root = Path(attnconv.__file__).resolve().parents[2]
    tmp_path.chmod(0o755)
    work = tmp_path / "work"
    work.mkdir()
    notebook = work / f"{chapter}.ipynb"
    notebook.write_bytes((root / "notebooks" / notebook.name).read_bytes())
    bin_dir = Path(_path_without_bwrap(tmp_path))
    for path in (work, notebook):
        os.chown(path, NOBODY, NOBODY)
    needed = [Path(sys.executable), Path(sys.prefix), Path(sys.base_prefix), Path(__file__), tmp_path]
    needed += [Path(p) for p in sys.path if p and Path(p).is_dir()]
    wrap = _opened_namespace(_closed_folders(needed)) + ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}",
                                                         "--clear-groups", "--"]
    probe = subprocess.run([*wrap, sys.executable, "-c", "import torch, attnconv"], capture_output=True, text=True,
                           timeout=300)
    if probe.returncode != 0:
        pytest.skip(f"cannot arrange a Python that nobody can run here: {probe.stderr.strip()[-300:]}")
    env = {k: v for k, v in os.environ.items() if k != "ATTNCONV_DATA"} | {"HOME": str(work)}
    env["PYTHONPATH"] = str(Path(attnconv.__file__).resolve().parents[1])  # the library under test

    def grade(*extra: str, path: str = os.environ["PATH"]) -> subprocess.CompletedProcess:
        return subprocess.run([*wrap, "/usr/bin/env", f"PATH={path}", sys.executable, "-m", "attnconv.course.grade",
                               str(notebook), "--report", str(work / "report.json"), "--total-timeout", "900",
                               *extra], capture_output=True, text=True, env=env, cwd=work, timeout=1200)

    refused = grade(path=str(bin_dir))
    lines = [line for line in refused.stderr.splitlines() if "refusing to grade" in line]
    assert refused.returncode == 2 and len(lines) == 1 and "--isolation none" in lines[0], refused.stderr[-2000:]
    assert not (work / "report.json").exists(), "a refusal writes no report"
    done = grade()
    assert done.returncode == 0, done.stderr[-2000:]
    assert "it appears as nobody" in done.stderr, done.stderr[-2000:]  # mapped: bubblewrap alone, not root
    report = json.loads((work / "report.json").read_text())
    assert report["score"] == report["max_score"] == 4, report
    assert os.stat(work / "report.json").st_uid == NOBODY  # written by the ordinary user, not by root
