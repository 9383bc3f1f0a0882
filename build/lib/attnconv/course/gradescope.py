"""A Gradescope autograder for one chapter, laid out as Otter-Grader lays out its zips.

``python -m attnconv.course.gradescope build --chapter 01 --out autograder.zip`` writes a zip with

- ``setup.sh``: installs the Python requirements (Gradescope runs it once, when the image is built);
- ``run_autograder``: grades ``/autograder/submission/*.ipynb`` with :mod:`attnconv.course.grade` and writes
  ``/autograder/results/results.json`` in Gradescope's format (one test per exercise, partial credit as its
  score);
- ``requirements.txt`` and ``autograder_config.json`` (the chapter, the time limits);
- ``files/attnconv/``: the library, checks included, so the image grades with exactly this version.

Gradescope unzips it into ``/autograder/source``. ``AUTOGRADER_ROOT`` (default ``/autograder``) and
``AUTOGRADER_PYTHON`` (default ``python3``) let the same script run in a local folder laid out the same way.
Written parts are not in the autograder score: mark them in Gradescope's manual grading, or from the sheets of
``python -m attnconv.course.grade``.
"""

from __future__ import annotations

import argparse
import json
import sys
import zipfile
from pathlib import Path

from .grade import grade_notebook, resolve_chapter

__all__ = ["build_autograder", "gradescope_results", "main", "run"]

SETUP = """#!/usr/bin/env bash
# Gradescope runs this once while it builds the autograder image (Ubuntu 22.04 with Python 3.10, or newer).
# bubblewrap isolates the student's code when the container allows user namespaces; the grader says when not.
set -euo pipefail
apt-get update -q
apt-get install -y -q --no-install-recommends python3-pip python3-venv bubblewrap
python3 -m pip install --upgrade pip
python3 -m pip install --extra-index-url https://download.pytorch.org/whl/cpu -r /autograder/source/requirements.txt
python3 -m ipykernel install --name python3
python3 -c "import sys; sys.path.insert(0, '/autograder/source/files'); import attnconv.course.grade"
"""

RUN = """#!/usr/bin/env bash
# Gradescope copies this to /autograder/run_autograder and runs it for every submission.
set -euo pipefail
ROOT="${AUTOGRADER_ROOT:-/autograder}"
PYTHON="${AUTOGRADER_PYTHON:-python3}"
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


def build_autograder(chapter: str, out: Path, cell_timeout: int = 120, total_timeout: int = 1800) -> Path:
    """Write the autograder zip for ``chapter`` to ``out``; returns ``out``."""
    import attnconv

    chapter = resolve_chapter(chapter)
    package = Path(attnconv.__file__).resolve().parent
    config = {"chapter": chapter, "cell_timeout": cell_timeout, "total_timeout": total_timeout}
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
            if path.is_file() and "__pycache__" not in path.parts and path.suffix not in (".pyc", ".tmp"):
                archive.write(path, f"files/attnconv/{path.relative_to(package).as_posix()}")
    tmp.replace(out)
    return out


def gradescope_results(report) -> dict:
    """A :class:`~attnconv.course.grade.GradeReport` in Gradescope's ``results.json`` format."""
    tests = [{"name": e.label, "score": e.points, "max_score": e.max_points, "output": e.message,
              "status": "passed" if e.passed else "failed", "visibility": "visible"} for e in report.exercises]
    errors = "".join(f"\ncell {c['cell']}: {c['ename']}: {c['evalue']}" for c in report.cell_errors)
    problems = "".join(f"\n{p}" for p in report.problems if not p.startswith("not isolated"))
    return {"score": report.score, "execution_time": round(report.seconds, 1), "tests": tests,
            "output": f"{report.chapter}: {report.score}/{report.max_score} points graded automatically; written "
                      f"parts are marked by hand.{errors and chr(10) + 'Cells that raised:' + errors}"
                      f"{problems and chr(10) + 'Problems:' + problems}"}


def _write_results(results_dir: Path, results: dict) -> None:
    results_dir.mkdir(parents=True, exist_ok=True)
    tmp = results_dir / ".results.json.tmp"
    tmp.write_text(json.dumps(results, indent=2) + "\n")
    tmp.replace(results_dir / "results.json")


def run(root: Path) -> dict:
    """Grade the notebook in ``root/submission`` and write ``root/results/results.json``; a run that fails still
    writes one, with score 0 and the reason, so the student sees why."""
    results_dir = root / "results"
    try:
        config = json.loads((root / "source" / "autograder_config.json").read_text())
        notebooks = sorted((root / "submission").glob("*.ipynb"))
        named = [p for p in notebooks if p.stem == config["chapter"]]
        if not notebooks:
            results = {"score": 0, "tests": [], "output": "no .ipynb notebook was submitted"}
        else:
            report = grade_notebook((named or notebooks)[0], config["chapter"], config["cell_timeout"],
                                    config["total_timeout"], hide=(root / "submission", results_dir))
            results = gradescope_results(report)
            print(report.table())
    except Exception as err:  # noqa: BLE001  (whatever went wrong, the student gets a results.json saying so)
        results = {"score": 0, "tests": [], "output": f"the autograder could not grade this submission: "
                                                      f"{type(err).__name__}: {str(err)[:500]}"}
        print(results["output"], file=sys.stderr)
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
    grade = sub.add_parser("run", help="grade a submission (what run_autograder calls)")
    grade.add_argument("--root", type=Path, default=Path("/autograder"))
    args = parser.parse_args(argv)
    if args.command == "build":
        out = build_autograder(args.chapter, args.out, args.cell_timeout, args.total_timeout)
        print(f"autograder written to {out}")
    else:
        run(args.root)
    return 0


if __name__ == "__main__":
    sys.exit(main())
