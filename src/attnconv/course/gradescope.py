"""A Gradescope autograder for one chapter, laid out as Otter-Grader lays out its zips.

``python -m attnconv.course.gradescope build --chapter 01 --out autograder.zip`` writes a zip with

- ``setup.sh``: installs bubblewrap, and the Python requirements into a virtual environment of their own,
  ``/opt/attnconv-venv`` (Gradescope runs it once, as root, when the image is built);
- ``run_autograder``: grades ``/autograder/submission/*.ipynb`` with :mod:`attnconv.course.grade`, run by that
  environment's Python as root (the grader runs the student's code as an unprivileged user), and writes
  ``/autograder/results/results.json`` in Gradescope's format (one test per exercise, partial credit as its
  score);
- ``requirements.txt`` and ``autograder_config.json`` (the chapter, the time limits, the largest submission, the
  scratch folder's size limit, and ``isolation``: ``auto``, or ``none`` to accept weaker isolation where the
  image has no bubblewrap, as ``--isolation`` of the grader);
- ``files/attnconv/``: the library, checks included, so the image grades with exactly this version.

Gradescope unzips it into ``/autograder/source``. ``setup.sh`` never installs into the system's Python: Debian 12
and Ubuntu 24.04 mark theirs ``EXTERNALLY-MANAGED`` (PEP 668) and pip refuses to install there. It creates the
environment with ``python3 -m venv``, installing ``python3-venv`` first where that is missing (Ubuntu 22.04, Python
3.10), and works the same on Ubuntu 24.04 (Python 3.12). Its environment variables, for a local test or another
image (Gradescope sets none of them):

- ``ATTNCONV_SETUP_VENV``: where the environment goes (default ``/opt/attnconv-venv``); ``run_autograder`` reads
  it too;
- ``ATTNCONV_SETUP_PIP_OPTIONS``: options added to every ``pip install`` (e.g. ``--no-index --find-links
  /wheels`` for an image without network);
- ``ATTNCONV_SETUP_PYTHON``: the Python that creates the environment (default ``python3``).

``AUTOGRADER_ROOT`` (default ``/autograder``) and ``AUTOGRADER_PYTHON`` (default: the environment's Python) let
``run_autograder`` run in a local folder laid out the same way.

Everything ``results.json`` shows a student is HTML-escaped and declared ``"html"`` (``output_format``,
``test_output_format``, ``test_name_format`` and each test's ``output_format`` and ``name_format``): Gradescope
renders outputs as HTML or Markdown, and a message that repeats a student's ``<script>`` must show it, never run it.
A submission that is a symbolic link, not a regular file, or larger than the limit (``--max-submission-mb``,
default 50) is refused before it is read, with a message that shows neither its contents nor its target.
Written parts are not in the autograder score: mark them in Gradescope's manual grading, or from the sheets of
``python -m attnconv.course.grade``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import zipfile
from pathlib import Path

from . import escape
from .grade import grade_notebook, refuse, resolve_chapter
from ..records import RECORD_SUFFIXES, results_dir
from .isolation import SCRATCH_MB, detect
from .report import MAX_SUBMISSION_MB, check_submission

__all__ = ["build_autograder", "gradescope_results", "main", "run"]

SETUP = """#!/usr/bin/env bash
# Gradescope runs this once, as root, while it builds the autograder image (Ubuntu 22.04 with Python 3.10, or
# 24.04 with Python 3.12). Everything Python goes into a virtual environment of its own: the system's Python may
# be EXTERNALLY-MANAGED (PEP 668: Debian 12, Ubuntu 24.04), where pip refuses to install.
# bubblewrap isolates the student's code when the container allows user namespaces; the grader says when not.
# ATTNCONV_SETUP_VENV, ATTNCONV_SETUP_PIP_OPTIONS and ATTNCONV_SETUP_PYTHON: see attnconv.course.gradescope.
set -euo pipefail
SOURCE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
VENV="${ATTNCONV_SETUP_VENV:-/opt/attnconv-venv}"
PYTHON="${ATTNCONV_SETUP_PYTHON:-python3}"
read -r -a PIP_OPTIONS <<< "${ATTNCONV_SETUP_PIP_OPTIONS:-}"
export DEBIAN_FRONTEND=noninteractive PIP_DISABLE_PIP_VERSION_CHECK=1

packages=(bubblewrap)
if ! command -v "$PYTHON" > /dev/null; then
    packages+=(python3 python3-venv)
elif ! "$PYTHON" -c "import ensurepip, venv" 2> /dev/null; then
    packages+=(python3-venv)  # Ubuntu 22.04: venv without ensurepip until python3-venv is installed
fi
apt-get update -q
apt-get install -y -q --no-install-recommends "${packages[@]}"

"$PYTHON" -m venv "$VENV"
venv_pip() { "$VENV/bin/python" -m pip install ${PIP_OPTIONS[@]+"${PIP_OPTIONS[@]}"} "$@"; }
venv_pip --upgrade pip
venv_pip --extra-index-url https://download.pytorch.org/whl/cpu -r "$SOURCE/requirements.txt"
"$VENV/bin/python" -m ipykernel install --sys-prefix --name python3
"$VENV/bin/python" -c "import sys; sys.path.insert(0, sys.argv[1]); import attnconv.course.grade" "$SOURCE/files"
echo "the grader's Python is $VENV/bin/python"
"""

RUN = """#!/usr/bin/env bash
# Gradescope copies this to /autograder/run_autograder and runs it, as root, for every submission: the grader
# needs root to run the student's code as an unprivileged user. It uses the environment setup.sh made.
set -euo pipefail
ROOT="${AUTOGRADER_ROOT:-/autograder}"
PYTHON="${AUTOGRADER_PYTHON:-${ATTNCONV_SETUP_VENV:-/opt/attnconv-venv}/bin/python}"
if [ "$(id -u)" != 0 ]; then
    echo "run_autograder: not running as root, so the student's code cannot run as another user" >&2
fi
export PYTHONPATH="$ROOT/source/files${PYTHONPATH:+:$PYTHONPATH}"
exec "$PYTHON" -m attnconv.course.gradescope run --root "$ROOT"
"""

REQUIREMENTS = """# What the grader and the chapters' kernels need (torch from the CPU index, see setup.sh). NumPy 2.4 and
# Matplotlib 3.11 need Python 3.11; Ubuntu 22.04 (Gradescope's common base) has Python 3.10, where pip picks
# NumPy 2.2 and Matplotlib 3.10 from these ranges.
torch==2.13.0
numpy>=2.2,<2.5
sympy==1.14.0
matplotlib>=3.10,<3.12
pillow>=10
ipykernel==7.4.*
ipywidgets==8.1.9
nbclient>=0.10
nbformat>=5.10
jupytext==1.19.6
pyyaml>=6
"""


def build_autograder(chapter: str, out: Path, cell_timeout: int = 120, total_timeout: int = 1800,
                     max_submission_mb: float = MAX_SUBMISSION_MB, isolation: str = "auto",
                     scratch_mb: int = SCRATCH_MB) -> Path:
    """Write the autograder zip for ``chapter`` to ``out``; returns ``out``.

    Raises:
        ValueError: ``isolation`` is not ``"auto"`` or ``"none"``, or ``scratch_mb`` is not a positive number.
    """
    import attnconv

    if isolation not in ("auto", "none"):
        raise ValueError(f"isolation must be 'auto' or 'none', got {isolation!r}")
    if not isinstance(scratch_mb, int) or scratch_mb < 1:
        raise ValueError(f"scratch_mb must be a positive number of MiB, got {scratch_mb!r}")
    chapter = resolve_chapter(chapter)
    package = Path(attnconv.__file__).resolve().parent
    config = {"chapter": chapter, "cell_timeout": cell_timeout, "total_timeout": total_timeout,
              "max_submission_mb": max_submission_mb, "isolation": isolation, "scratch_mb": scratch_mb}
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".zip.tmp")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, text in (("setup.sh", SETUP), ("run_autograder", RUN)):
            info = zipfile.ZipInfo(name)
            info.external_attr = 0o100755 << 16  # executable, as Gradescope expects
            archive.writestr(info, text)
        archive.writestr("requirements.txt", REQUIREMENTS)
        archive.writestr("autograder_config.json", json.dumps(config, indent=2) + "\n")
        for path in sorted(package.rglob("*")):
            if (path.is_file() and "__pycache__" not in path.parts and "_records" not in path.parts
                    and path.suffix not in (".pyc", ".tmp")):
                archive.write(path, f"files/attnconv/{path.relative_to(package).as_posix()}")
        records = results_dir()  # what the exercises read, installed as the package's own copy
        for path in sorted(records.rglob("*")):
            if path.is_file() and path.suffix in RECORD_SUFFIXES:
                archive.write(path, f"files/attnconv/_records/{path.relative_to(records).as_posix()}")
    tmp.replace(out)
    return out


_HTML = {"output_format": "html", "test_output_format": "html", "test_name_format": "html"}


def _output(text: str) -> dict:
    """A top-level ``output`` for Gradescope: the grader's words made visible, HTML-escaped."""
    return {"output": escape.html_text(escape.cap(escape.plain(text), 5000)), **_HTML}


def gradescope_results(report) -> dict:
    """A :class:`~attnconv.course.grade.GradeReport` in Gradescope's ``results.json`` format. Every text is
    HTML-escaped and declared ``"html"``: the messages repeat what the student's code said."""
    tests = [{"name": escape.html_text(escape.visible(e.label)), "score": e.points, "max_score": e.max_points,
              "output": escape.html_text(escape.settled(e.message)), "output_format": "html", "name_format": "html",
              "status": "passed" if e.passed else "failed", "visibility": "visible"} for e in report.exercises]
    errors = "".join(f"\ncell {c['cell']}: {escape.cap(escape.visible(c['ename']), 100)}: "
                     f"{escape.quote(c['evalue'])}" for c in report.cell_errors)
    problems = "".join(f"\n{escape.cap(escape.plain(p), escape.TEXT_LIMIT)}" for p in report.problems
                       if not p.startswith("not isolated"))
    summary = (f"{escape.visible(report.chapter)}: {report.score}/{report.max_score} points graded automatically; "
               f"written parts are marked by hand.{errors and chr(10) + 'Cells that raised:' + errors}"
               f"{problems and chr(10) + 'Problems:' + problems}")
    return {"score": report.score, "execution_time": round(report.seconds, 1), "tests": tests,
            "output": escape.html_text(summary), **_HTML}


def _write_results(results_dir: Path, results: dict) -> None:
    results_dir.mkdir(parents=True, exist_ok=True)
    tmp = results_dir / ".results.json.tmp"
    tmp.write_text(json.dumps(results, indent=2) + "\n")
    tmp.replace(results_dir / "results.json")


def run(root: Path) -> dict:
    """Grade the notebook in ``root/submission`` and write ``root/results/results.json``; a run that fails still
    writes one, with score 0 and the reason, so the student sees why. A submission that is a symbolic link, not a
    regular file, or too large is refused unread."""
    results_dir = root / "results"
    try:
        config = json.loads((root / "source" / "autograder_config.json").read_text())
        limit_mb = float(config.get("max_submission_mb", MAX_SUBMISSION_MB))
        os.environ["ATTNCONV_MAX_SUBMISSION_MB"] = f"{limit_mb:g}"  # read_notebook's limit too
        notebooks = sorted((root / "submission").glob("*.ipynb"))
        named = [p for p in notebooks if p.stem == config["chapter"]]
        if not notebooks:
            results = {"score": 0, "tests": [], **_output("no .ipynb notebook was submitted")}
        else:
            notebook = (named or notebooks)[0]
            try:
                check_submission(notebook, int(limit_mb * 2 ** 20))
            except ValueError as err:
                results = {"score": 0, "tests": [], **_output(f"this submission was not graded: {err}")}
            else:
                # A sandbox that cannot start a kernel grades nobody: no results.json, so Gradescope reports the
                # autograder's failure to the instructor instead of a 0 for an honest student.
                isolation = detect(config.get("isolation", "auto"))
                refusal = refuse(isolation, config.get("isolation", "auto"))
                if refusal:  # the grader's own words name its --isolation option: the zip's is build's
                    raise SystemExit(f"refusing to grade: {refusal} (for this autograder: build it with "
                                     "python -m attnconv.course.gradescope build --isolation none)")
                report = grade_notebook(notebook, config["chapter"], config["cell_timeout"],
                                        config["total_timeout"], isolation=isolation,
                                        hide=(root / "submission", results_dir),
                                        scratch_mb=int(config.get("scratch_mb", SCRATCH_MB)))
                results = gradescope_results(report)
                print(report.table())
    except Exception as err:  # noqa: BLE001  (whatever went wrong, the student gets a results.json saying so)
        text = f"the autograder could not grade this submission: {type(err).__name__}: {str(err)[:500]}"
        results = {"score": 0, "tests": [], **_output(text)}
        print(escape.plain(text), file=sys.stderr)
    _write_results(results_dir, results)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    build = sub.add_parser("build", help="write the autograder zip")
    build.add_argument("--chapter", required=True, help="NN or NN_name")
    build.add_argument("--out", type=Path, default=Path("autograder.zip"))
    build.add_argument("--cell-timeout", type=int, default=120)
    build.add_argument("--total-timeout", type=int, default=1800)
    build.add_argument("--max-submission-mb", type=float, default=MAX_SUBMISSION_MB,
                       help=f"larger submissions are refused unread (default {MAX_SUBMISSION_MB})")
    build.add_argument("--isolation", choices=("auto", "none"), default="auto",
                       help="none: grade where the image has no bubblewrap, accepting weaker isolation")
    build.add_argument("--scratch-mb", type=int, default=SCRATCH_MB,
                       help=f"size limit of a submission's scratch folder in MiB (default {SCRATCH_MB})")
    grade = sub.add_parser("run", help="grade a submission (what run_autograder calls)")
    grade.add_argument("--root", type=Path, default=Path("/autograder"))
    args = parser.parse_args(argv)
    if args.command == "build":
        out = build_autograder(args.chapter, args.out, args.cell_timeout, args.total_timeout,
                               args.max_submission_mb, args.isolation, args.scratch_mb)
        print(f"autograder written to {out}")
    else:
        run(args.root)
    return 0


if __name__ == "__main__":
    sys.exit(main())
