"""The Gradescope zip of chapter 01, unpacked into a folder laid out as Gradescope's (``source``, ``submission``,
``results``), with ``run_autograder`` run as root for one submission at a time, in the three situations the grader
meets on an image:

- **python nobody can run**: every folder on the way to the grader's Python is open to all (Gradescope's image;
  arranged here in a private mount namespace, as in ``test_situations.py``): full isolation;
- **python nobody cannot run**: the grader's Python is one that only root may run: bubblewrap alone maps the kernel
  to ``nobody`` inside its user namespace ("mapped");
- **no bubblewrap**: a ``PATH`` without ``bwrap`` (a container without user namespaces): the zip built with the
  default isolation refuses in one line and writes no ``results.json``; the zip built with ``--isolation none``
  grades.

In each, the worked edition earns 4/4 and the untouched student edition its honest 0/4. The two editions are graded
at the same time (two roots, two ``run_autograder`` processes), as Gradescope grades two students on two machines.
The plain-folder path of every chapter is ``test_editions.py``'s; there the chapters take turns over these
situations."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from attnconv.course.gradescope import build_autograder
from test_situations import _closed_folders, _opened_namespace

ROOT = Path(__file__).resolve().parents[2]
CH01 = "01_convolution_as_shifts"
EDITIONS = {"worked": (ROOT / "notebooks" / f"{CH01}.ipynb", 4), "student": (ROOT / "student" / f"{CH01}.ipynb", 0)}
AS_ROOT = os.geteuid() == 0 and shutil.which("bwrap") and shutil.which("unshare")
needs_root = pytest.mark.skipif(not AS_ROOT, reason="run_autograder runs as root, with bubblewrap and unshare")


@pytest.fixture(scope="module")
def zips(tmp_path_factory):
    folder = tmp_path_factory.mktemp("zips")
    return {mode: build_autograder("01", folder / f"autograder-{mode}.zip", isolation=mode)
            for mode in ("auto", "none")}


def test_the_zip_holds_what_gradescope_runs(zips, tmp_path):
    root = _unpack(zips["none"], tmp_path / "autograder", None)
    for name in ("setup.sh", "run_autograder", "requirements.txt", "files/attnconv/course/grade.py"):
        assert (root / "source" / name).is_file(), name
    for script in ("setup.sh", "run_autograder"):
        subprocess.run(["bash", "-n", str(root / "source" / script)], check=True)
    config = json.loads((root / "source" / "autograder_config.json").read_text())
    assert config["chapter"] == CH01 and config["isolation"] == "none" and config["scratch_mb"] > 0
    with pytest.raises(ValueError, match="isolation"):
        build_autograder("01", tmp_path / "bad.zip", isolation="off")
    with pytest.raises(ValueError, match="scratch_mb"):
        build_autograder("01", tmp_path / "bad.zip", scratch_mb=0)


def _unpack(archive: Path, root: Path, notebook: Path | None) -> Path:
    for name in ("source", "submission", "results"):
        (root / name).mkdir(parents=True)
    with zipfile.ZipFile(archive) as z:
        z.extractall(root / "source")
    (root / "source" / "run_autograder").chmod(0o755)  # as Gradescope copies it (extractall drops the mode)
    if notebook is not None:
        shutil.copyfile(notebook, root / "submission" / notebook.name)
    return root


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "ATTNCONV_DATA")}  # the zip's own library
    return env | {"AUTOGRADER_PYTHON": sys.executable, "PYTHONDONTWRITEBYTECODE": "1"} | extra


def _autograde(archive: Path, where: Path, wrap: list[str] = (), **env: str) -> dict[str, tuple]:
    """Both editions graded at once, each in a root of its own: {edition: (process, results or None)}."""
    runs = {}
    for edition, (notebook, _) in EDITIONS.items():
        root = _unpack(archive, where / edition, notebook)
        runs[edition] = (root, subprocess.Popen([*wrap, str(root / "source" / "run_autograder")], text=True,
                                                env=_env(AUTOGRADER_ROOT=str(root), **env), stdout=subprocess.PIPE,
                                                stderr=subprocess.PIPE))
    done = {}
    for edition, (root, proc) in runs.items():
        out, err = proc.communicate(timeout=1500)
        results = root / "results" / "results.json"
        done[edition] = (proc.returncode, out, err, json.loads(results.read_text()) if results.exists() else None)
    return done


def _full_and_honest(done: dict) -> None:
    for edition, (code, out, err, results) in done.items():
        assert code == 0 and results is not None, (edition, err[-2000:])
        expected = EDITIONS[edition][1]
        assert results["score"] == expected and len(results["tests"]) == 4, (edition, results, out[-2000:])
        assert all(t["max_score"] == 1 for t in results["tests"])


def _isolated(out: str) -> None:
    assert "not isolated: runs as an unprivileged user" not in out and "not isolated: the filesystem" not in out, out


@needs_root
def test_a_python_nobody_can_run(zips, tmp_path):
    where = tmp_path / "full"
    where.mkdir(parents=True)
    needed = [Path(sys.executable), Path(sys.prefix), Path(sys.base_prefix), where, ROOT]
    needed += [Path(p) for p in sys.path if p and Path(p).is_dir()]
    wrap = _opened_namespace(_closed_folders(needed))
    probe = subprocess.run([*wrap, "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable,
                            "-c", "import torch"], capture_output=True, text=True, timeout=300)
    if probe.returncode != 0:
        pytest.skip(f"cannot arrange a Python that nobody can run here: {probe.stderr.strip()[-300:]}")
    done = _autograde(zips["auto"], where, wrap)
    _full_and_honest(done)
    for edition in done:
        _isolated(done[edition][1])


def _python_only_root_runs(folder: Path) -> str:
    """A virtual environment whose ``python`` only root may run: a script of mode 700 that runs this Python under
    its own name (so that it is the grader's ``sys.executable``, and the environment's). A folder or a binary
    closed to others is not enough on every kernel: the script's interpreter must read it. It sees this
    environment's packages through a ``.pth`` file."""
    import site
    import sysconfig

    venv = folder / "root-only-venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=300)
    purelib = Path(sysconfig.get_path("purelib", vars={"base": str(venv), "platbase": str(venv)}))
    dirs = [p for p in site.getsitepackages() if Path(p).is_dir()]
    (purelib / "zz_grader_packages.pth").write_text("".join(f"import site; site.addsitedir({d!r})\n" for d in dirs))
    python = venv / "bin" / "python"
    python.unlink()
    python.write_text(f'#!/bin/bash\nexec -a "$0" {os.path.realpath(sys.executable)} "$@"\n')
    python.chmod(0o700)
    return str(python)


@needs_root
def test_a_python_nobody_cannot_run(zips, tmp_path):
    python = _python_only_root_runs(tmp_path)
    runs_as_nobody = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", python, "-c",
                                     "pass"], capture_output=True, timeout=120).returncode == 0
    assert not runs_as_nobody
    done = _autograde(zips["auto"], tmp_path / "mapped", AUTOGRADER_PYTHON=python)
    _full_and_honest(done)
    for edition in done:  # bubblewrap alone: nobody inside its own user namespace, the grader's user outside
        assert "it appears as nobody" in done[edition][1], done[edition][1][-2000:]


@needs_root
def test_no_bubblewrap_refuses_unless_the_zip_accepts_weaker_isolation(zips, tmp_path):
    bin_dir = tmp_path / "bin-without-bwrap"
    bin_dir.mkdir()
    for tool in ("setpriv", "unshare", "sh", "env", "bash", "id", "mount", "umount"):
        if shutil.which(tool):
            (bin_dir / tool).symlink_to(shutil.which(tool))
    root = _unpack(zips["auto"], tmp_path / "refused", EDITIONS["worked"][0])
    refused = subprocess.run([str(root / "source" / "run_autograder")], capture_output=True, text=True, timeout=600,
                             env=_env(AUTOGRADER_ROOT=str(root), PATH=str(bin_dir)))
    assert refused.returncode != 0 and not (root / "results" / "results.json").exists(), refused.stderr[-2000:]
    lines = [line for line in refused.stderr.splitlines() if "refusing to grade" in line]
    assert len(lines) == 1 and "bubblewrap" in lines[0] and "build --isolation none" in lines[0], refused.stderr
    done = _autograde(zips["none"], tmp_path / "none", PATH=str(bin_dir))
    _full_and_honest(done)
    assert "not isolated: the filesystem" in done["worked"][1], done["worked"][1][-2000:]
