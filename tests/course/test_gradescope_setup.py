"""The Gradescope zip's ``setup.sh`` installs on a system Python that PEP 668 marks ``EXTERNALLY-MANAGED`` (Debian 12,
Ubuntu 24.04), where ``pip install`` into the system refuses, and ``run_autograder`` then grades with the
environment it made.

The test runs the real ``setup.sh`` of a built zip with ``python3`` being the distribution's own Python
(``/usr/bin/python3``, whose standard library holds the ``EXTERNALLY-MANAGED`` marker), as root, with two shims:

- ``apt-get`` records what it is asked to install (and installs nothing);
- ``python3`` hides ``ensurepip`` until ``apt-get install python3-venv`` ran, as on Ubuntu 22.04, where
  ``python3 -m venv`` fails without that package.

The requirements are not downloaded: ``ATTNCONV_SETUP_PIP_OPTIONS=--no-index`` keeps pip off the network and
``PYTHONPATH`` holds this project's environment (same Python minor version), so pip finds every requirement
already satisfied instead of installing torch again. Everything else is what Gradescope's image runs: the virtual
environment is created by the system's Python, pip runs inside it, the kernel spec is installed into it, the
library is imported by it, and ``run_autograder`` grades with its Python (with no other ``python3`` on ``PATH``).
Skipped where the machine has no such system Python.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from attnconv.course.gradescope import build_autograder

SYSTEM_PYTHON = Path("/usr/bin/python3")
CH01 = "01_convolution_as_shifts"


def _system_python_problem() -> str | None:
    """Why the system Python cannot stand in for Gradescope's, or None."""
    if not SYSTEM_PYTHON.exists():
        return "no /usr/bin/python3"
    probe = subprocess.run([str(SYSTEM_PYTHON), "-I", "-c",
                            "import os, sys, sysconfig; print(sys.version_info[:2] == (%d, %d)); "
                            "print(os.path.isfile(os.path.join(sysconfig.get_path('stdlib'), 'EXTERNALLY-MANAGED')))"
                            % sys.version_info[:2]], capture_output=True, text=True)
    same, marked = (probe.stdout.split() + ["False", "False"])[:2]
    if same != "True":
        return "the system Python is another minor version than this environment's"
    if marked != "True":
        return "the system Python is not marked EXTERNALLY-MANAGED (PEP 668)"
    if subprocess.run([str(SYSTEM_PYTHON), "-m", "pip", "--version"], capture_output=True).returncode != 0:
        return "the system Python has no pip"
    return None


pytestmark = pytest.mark.skipif(_system_python_problem() is not None,
                                reason=str(_system_python_problem()))

APT_GET = """#!/bin/bash
echo "$*" >> "{shims}/apt.log"
case " $* " in *" python3-venv "*) touch "{shims}/venv-installed" ;; esac
exit 0
"""
PYTHON3 = """#!/bin/bash
if [ ! -e "{shims}/venv-installed" ]; then
    export PYTHONPATH="{shims}/no-ensurepip${{PYTHONPATH:+:$PYTHONPATH}}"
fi
exec {python} "$@"
"""


def _shims(folder: Path) -> Path:
    folder.mkdir()
    for name, text in (("apt-get", APT_GET), ("python3", PYTHON3)):
        (folder / name).write_text(text.format(shims=folder, python=SYSTEM_PYTHON))
        (folder / name).chmod(0o755)
    (folder / "no-ensurepip").mkdir()
    (folder / "no-ensurepip" / "ensurepip.py").write_text("raise ImportError('ensurepip is not available: "
                                                           "install python3-venv')\n")
    return folder


def _env(tmp_path: Path, path: str, **extra: str) -> dict[str, str]:
    return {"PATH": path, "HOME": str(tmp_path / "home"), "LANG": "C.UTF-8", "PIP_CONFIG_FILE": os.devnull,
            "PIP_NO_INPUT": "1", "PYTHONPATH": sysconfig.get_path("purelib"), **extra}


def test_setup_installs_into_its_own_environment_on_an_externally_managed_python(tmp_path):
    refused = subprocess.run([str(SYSTEM_PYTHON), "-m", "pip", "install", "--no-index", "--dry-run", "attnconv"],
                             capture_output=True, text=True, env=_env(tmp_path, "/usr/bin:/bin"))
    assert refused.returncode != 0 and "externally-managed-environment" in refused.stderr, refused.stderr

    root = tmp_path / "autograder"
    for folder in ("source", "submission", "results"):
        (root / folder).mkdir(parents=True)
    (tmp_path / "home").mkdir()
    with zipfile.ZipFile(build_autograder("01", tmp_path / "autograder.zip")) as archive:
        archive.extractall(root / "source")
    (root / "source" / "run_autograder").chmod(0o755)  # as Gradescope copies it (extractall drops the mode)
    shims = _shims(tmp_path / "shims")
    venv = tmp_path / "opt" / "attnconv-venv"
    setup = subprocess.run(["bash", str(root / "source" / "setup.sh")], capture_output=True, text=True, timeout=900,
                           cwd=root / "source",
                           env=_env(tmp_path, f"{shims}:/usr/bin:/bin", ATTNCONV_SETUP_VENV=str(venv),
                                    ATTNCONV_SETUP_PIP_OPTIONS="--no-index"))
    assert setup.returncode == 0, (setup.stdout[-3000:], setup.stderr[-3000:])

    installs = [line.split() for line in (shims / "apt.log").read_text().splitlines() if "install" in line]
    assert installs and {"bubblewrap", "python3-venv"} <= set(installs[-1])  # as on Ubuntu 22.04
    config = dict(line.split(" = ", 1) for line in (venv / "pyvenv.cfg").read_text().splitlines() if " = " in line)
    assert config["home"] == str(SYSTEM_PYTHON.parent)  # made by the system's Python, not by this environment
    assert config["include-system-site-packages"] == "false"
    spec = json.loads((venv / "share" / "jupyter" / "kernels" / "python3" / "kernel.json").read_text())
    assert spec["argv"][0] == str(venv / "bin" / "python")  # the kernels run in the environment too

    # run_autograder grades with the environment's Python: there is no other python3 on its PATH
    bare = tmp_path / "bare-bin"
    bare.mkdir()
    for tool in ("bash", "env", "id"):
        (bare / tool).symlink_to(shutil.which(tool, path="/usr/bin:/bin"))
    outside = tmp_path / "outside.txt"
    outside.write_text("ROOT-ONLY CONTENT\n")
    (root / "submission" / f"{CH01}.ipynb").symlink_to(outside)
    done = subprocess.run([str(root / "source" / "run_autograder")], capture_output=True, text=True, timeout=600,
                          env=_env(tmp_path, str(bare), ATTNCONV_SETUP_VENV=str(venv), AUTOGRADER_ROOT=str(root)))
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads((root / "results" / "results.json").read_text())
    assert results["score"] == 0 and "symbolic link" in results["output"], results
    assert "ROOT-ONLY" not in json.dumps(results)
