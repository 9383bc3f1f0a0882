""""Run all" as a Colab reader does it, for every chapter and every student edition, with no repository around.

- The package is installed as the first cell installs it: built from this checkout into a wheel (not editable,
  records included) and installed into a folder of its own, once for the module; each notebook's install cell
  then puts that folder first on ``sys.path`` in place of the ``%pip`` line.
- Each notebook runs top to bottom in a fresh kernel whose working folder is outside the repository, with a
  stand-in ``google.colab``, no ``ATTNCONV_DATA``, and the downloads served on 127.0.0.1 (a tiny CIFAR-10 archive
  in the official format and sample NLTK zips), so that every chapter takes its Colab branches at small sizes.
- A chapter must finish with no error. A student edition must stop at its first stub with the stub's
  ``NotImplementedError``, and nowhere before it; like Colab's "Run all", the run stops there.
- A student edition's code up to its first stub is the chapter's own, cell for cell (the student edition only
  empties answers). Where it is, its "Run all" is the chapter's run up to that cell, so the chapter's run makes both:
  the student's stub runs in the chapter's kernel just before the chapter's own version of that cell, and must raise
  ``NotImplementedError`` there. A student edition whose code before the stub differs from the chapter's runs on its
  own, top to bottom, in a kernel of its own.
- Each notebook has a download cache of its own, as a fresh Colab runtime has. Chapters 01 and 02 show the
  photograph matplotlib ships and ask the mirror for no CIFAR-10 archive.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

from ..local_mirror import build_mirror, serve
from .test_colab import _COLAB  # the stand-in google.colab and the reader's environment

ROOT = Path(__file__).resolve().parents[2]
CHAPTERS = sorted(p.stem for p in (ROOT / "notebooks").glob("[0-9][0-9]*_*.ipynb"))  # chapters and appendices
STUDENT = [c for c in CHAPTERS if (ROOT / "student" / f"{c}.ipynb").exists()]
STUB = "raise NotImplementedError()"


def _code(nb) -> list:
    return [c for c in nb.cells if c.cell_type == "code"]


def first_stub(chapter: str) -> tuple[int, nbformat.NotebookNode] | None:
    """The student edition's first stub (its index among the code cells, the cell) when every code cell before it
    is the chapter's own, else ``None``: then the student edition needs a run of its own."""
    if chapter not in STUDENT:
        return None
    return _shared_prefix(nbformat.read(ROOT / "student" / f"{chapter}.ipynb", as_version=4),
                          nbformat.read(ROOT / "notebooks" / f"{chapter}.ipynb", as_version=4))


def _shared_prefix(student, worked) -> tuple[int, nbformat.NotebookNode] | None:
    student, worked = _code(student), _code(worked)
    index = next(i for i, c in enumerate(student) if STUB in c.source)
    if [c.source for c in student[:index]] != [c.source for c in worked[:index]]:
        return None
    return index, student[index]


NOTEBOOKS = [("notebooks", c) for c in CHAPTERS] + [("student", c) for c in STUDENT if first_stub(c) is None]
INSTALL = '%pip install -q "attnconv @ git+https://github.com/attnconv/attnconv"'
# Chapters that read only committed records, no data set: their run here, with no $ATTNCONV_DATA and an empty cache,
# is their run without data (the book build is their run with it), so `make test` runs them nowhere else.
RECORDS_ONLY = ("06a_appendix_vision_runs", "08_after_the_papers")


@pytest.fixture(scope="module")
def reader(tmp_path_factory):
    """The installed package (a wheel of this checkout in ``site``), the mirror and the reader's environment."""
    tmp = tmp_path_factory.mktemp("colab-run-all")
    clone, wheels, site = tmp / "clone", tmp / "wheels", tmp / "site"
    files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                           capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, files):  # what a clone of this working tree holds (pip builds from a clone)
        if (ROOT / name).is_file():
            (clone / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, clone / name)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(wheels),
                    str(clone)], check=True, timeout=600, cwd=tmp)
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--target", str(site),
                    *map(str, wheels.glob("*.whl"))], check=True, timeout=600, cwd=tmp)
    served, requests = tmp / "served", []
    sums = build_mirror(served)
    with serve(served, sums, requests) as urls:
        env = {**urls, "ATTNCONV_CACHE": str(tmp / "cache"), "ATTNCONV_DRIVE_MOUNT": str(tmp / "drive"),
               "MPLBACKEND": "module://matplotlib_inline.backend_inline"}
        saved = {k: os.environ.pop(k, None) for k in ("ATTNCONV_DATA", "ATTNCONV_RESULTS", "PYTHONPATH",
                                                       "ATTNCONV_BUDGET")}
        try:
            yield tmp, site, env, requests
        finally:
            os.environ.update({k: v for k, v in saved.items() if v is not None})


def _as_in_colab(nb, site: Path, env: dict) -> nbformat.NotebookNode:
    install = next(c for c in nb.cells if c.cell_type == "code")
    assert INSTALL in install.source, "the first code cell must be the Colab install cell"
    install.source = install.source.replace(INSTALL, f"sys.path.insert(0, {str(site)!r})")
    nb.cells.insert(0, nbformat.v4.new_code_cell(f"ENV = {env!r}\n" + _COLAB))
    nb.cells.append(nbformat.v4.new_code_cell("import attnconv\nprint('@@attnconv', attnconv.__file__)"))
    return nb


def _seconds(cell) -> float:
    """How long a cell ran, from the times nbclient records in its metadata (0 where it did not run)."""
    from datetime import datetime

    times = cell.metadata.get("execution", {})
    try:
        start, end = (datetime.fromisoformat(times[k].replace("Z", "+00:00"))
                      for k in ("iopub.execute_input", "shell.execute_reply"))
    except KeyError:
        return 0.0
    return round((end - start).total_seconds(), 2)


def _errors(nb) -> list[tuple[int, dict]]:
    return [(i, o) for i, c in enumerate(nb.cells) for o in c.get("outputs", []) if o.get("output_type") == "error"]


def _text(nb) -> str:
    return "".join(o.get("text", "") for c in nb.cells for o in c.get("outputs", []) if o.get("output_type") == "stream")


@pytest.mark.parametrize("edition,chapter", NOTEBOOKS, ids=[f"{e}-{c.split('_')[0]}" for e, c in NOTEBOOKS])
def test_run_all_in_colab(reader, edition, chapter):
    tmp, site, env, requests = reader
    cwd = tmp / f"{edition}-{chapter}"  # a folder of its own, outside the repository
    cwd.mkdir()
    env = {**env, "ATTNCONV_CACHE": str(cwd / "cache")}  # a fresh runtime: nothing downloaded yet
    nb = _as_in_colab(nbformat.read(ROOT / edition / f"{chapter}.ipynb", as_version=4), site, env)
    stub = first_stub(chapter) if edition == "notebooks" else None
    if stub is not None:  # the student's "Run all" up to its first stub is this run: its stub runs here
        index, cell = stub
        cell = nbformat.v4.new_code_cell(cell.source, metadata={"tags": ["raises-exception"]})
        nb.cells.insert(nb.cells.index(_code(nb)[index + 1]), cell)  # _code(nb)[0] is the stand-in google.colab
    asked = len(requests)
    start = time.monotonic()
    try:  # Colab's "Run all" stops at the first cell that raises, and so does this run
        NotebookClient(nb, timeout=900, kernel_name="python3", resources={"metadata": {"path": str(cwd)}}).execute()
    except CellExecutionError:
        if edition != "student":
            raise
    seconds = time.monotonic() - start
    slowest = sorted(((_seconds(c), i) for i, c in enumerate(nb.cells) if c.cell_type == "code"), reverse=True)[:3]
    (tmp / "times.jsonl").open("a").write(json.dumps({"notebook": f"{edition}/{chapter}", "seconds": seconds,
                                                      "slowest cells": slowest}) + "\n")
    errors = _errors(nb)
    if stub is not None:
        _stub_stopped_there(nb, cell, errors)
        errors = [(i, o) for i, o in errors if nb.cells[i] is not cell]
    if edition == "notebooks":
        assert not errors, errors[:1]
        assert f"@@attnconv {site}" in _text(nb), "the chapter must import the installed package"
        if chapter[:3] in ("01_", "02_"):
            assert "Image used: a photograph of Grace Hopper" in _text(nb), "chapters 01-02 show the photograph"
            assert "sha256 a8ca6d734765, the copy the book was written with" in _text(nb)
            cifar = [r for r in requests[asked:] if "cifar" in r.lower()]
            assert not cifar, f"chapters 01-02 must not download CIFAR-10: {cifar}"
        if chapter in RECORDS_ONLY:  # this run is also their run without data: nbval no longer makes one
            assert requests[asked:] == [], f"{chapter} reads only committed records, yet asked the mirror for data"
        if chapter.startswith("05_"):
            assert "brown corpus, sentence 0" in _text(nb), "chapter 05 must show the downloaded Brown text"
    else:
        assert errors, "a student edition must stop at its first stub"
        index, first = errors[0]
        assert first["ename"] == "NotImplementedError", (index, first["ename"], first["evalue"][:300])
        assert "NotImplementedError" in nb.cells[index].source, "the first error must come from a stub cell"
        assert not any(c.get("outputs") for c in nb.cells[index + 1:] if c.cell_type == "code"), "the run stops there"


def _stub_stopped_there(nb, stub, errors) -> None:
    """The student's first stub, run in the chapter's kernel after the chapter's cells before it, raised
    ``NotImplementedError`` itself; and no cell before it raised, so the student's "Run all" stops at the stub."""
    at = next(i for i, c in enumerate(nb.cells) if c is stub)
    raised = [o for i, o in errors if i == at]
    assert raised, "the student edition's first stub must raise NotImplementedError, and it ran through"
    assert raised[0]["ename"] == "NotImplementedError", (raised[0]["ename"], raised[0]["evalue"][:300])
    before = [(i, o["ename"]) for i, o in errors if i < at]
    assert not before, f"a cell before the student edition's first stub raised: {before[:1]}"


def _nb(*sources):
    return nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(x) for x in sources])


def test_a_student_edition_shares_the_chapters_run_only_when_its_code_before_the_stub_is_the_chapters():
    worked = _nb("import attnconv", "x = 1", "y = x + 1")
    assert _shared_prefix(_nb("import attnconv", "x = 1", STUB), worked)[0] == 2
    assert _shared_prefix(_nb("import attnconv", "x = 2", STUB), worked) is None, "a changed cell needs its own run"
    assert _shared_prefix(_nb("import attnconv", STUB, "y = 2"), worked)[0] == 1


def test_the_merged_run_fails_when_the_stub_runs_through_raises_otherwise_or_a_cell_before_it_raises():
    nb = _nb("a = 1", "stub", "a = 2")
    stub = nb.cells[1]
    error = {"output_type": "error", "ename": "NotImplementedError", "evalue": ""}
    _stub_stopped_there(nb, stub, [(1, error)])
    with pytest.raises(AssertionError, match="ran through"):
        _stub_stopped_there(nb, stub, [])
    with pytest.raises(AssertionError, match="NameError"):
        _stub_stopped_there(nb, stub, [(1, {**error, "ename": "NameError"})])
    with pytest.raises(AssertionError, match="before the student edition's first stub"):
        _stub_stopped_there(nb, stub, [(0, {**error, "ename": "KeyError"}), (1, error)])
