"""Notebook hygiene: paired .md/.ipynb in step, no committed outputs, a Colab cell, listed in the table of contents."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import jupytext
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
CHAPTERS = sorted(NOTEBOOKS.glob("[0-9][0-9]_*.md"))
PAGES = sorted(NOTEBOOKS.glob("[0-9][0-9]*_*.md"))  # the chapters and their appendix pages (06a, 07a)
FROM_SCRATCH_LINES = 20  # a chapter's own function: the idea built from scratch, then checked against the library


def test_chapters_exist():
    assert len(CHAPTERS) >= 2


def test_every_md_has_an_ipynb_and_back():
    md = {p.stem for p in NOTEBOOKS.glob("*.md")}
    ipynb = {p.stem for p in NOTEBOOKS.glob("*.ipynb")}
    assert md == ipynb, f"unpaired: {sorted(md ^ ipynb)} (run `jupytext --to ipynb notebooks/NAME.md`)"


@pytest.mark.parametrize("md", PAGES, ids=lambda p: p.stem)
def test_pair_has_not_drifted(md):
    a = jupytext.read(md)
    b = jupytext.read(md.with_suffix(".ipynb"))
    cells_a = [(c.cell_type, c.source.strip()) for c in a.cells]
    cells_b = [(c.cell_type, c.source.strip()) for c in b.cells]
    assert cells_a == cells_b, f"{md.name} and its .ipynb differ: run `jupytext --to ipynb {md}`"


@pytest.mark.parametrize("md", PAGES, ids=lambda p: p.stem)
def test_committed_ipynb_has_no_outputs(md):
    nb = json.loads(md.with_suffix(".ipynb").read_text())
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            assert not cell.get("outputs"), f"{md.stem}.ipynb holds outputs"
            assert cell.get("execution_count") is None, f"{md.stem}.ipynb holds execution counts"


@pytest.mark.parametrize("md", PAGES, ids=lambda p: p.stem)
def test_first_code_cell_installs_in_colab_only(md):
    first = next(c for c in jupytext.read(md).cells if c.cell_type == "code")
    tags = first.metadata.get("tags", [])
    assert "remove-cell" in tags and "nbval-skip" in tags
    assert '"google.colab" in sys.modules' in first.source and "pip install" in first.source
    assert "torch" not in first.source, "the Colab cell must not pin torch: Colab ships its own"


@pytest.mark.parametrize("md", CHAPTERS, ids=lambda p: p.stem)
def test_a_numbered_viewer_is_shown_once(md):
    """A cell that glues a viewer for a numbered figure shows it in its output too: unless the output is removed,
    the page holds the viewer twice, with one HTML id, and the numbered copy never starts."""
    for cell in jupytext.read(md).cells:
        if cell.cell_type == "code" and "numbered_figure(" in cell.source:
            assert "remove-output" in cell.metadata.get("tags", []), (
                f"{md.stem}: a cell calling numbered_figure must be tagged remove-output (and print nothing else): "
                f"{cell.source[:80]!r}")


@pytest.mark.parametrize("md", CHAPTERS, ids=lambda p: p.stem)
def test_chapter_is_in_table_of_contents(md):
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [c["file"] for part in toc["parts"] for c in part["chapters"]]
    assert f"notebooks/{md.stem}" in files


@pytest.mark.parametrize("md", CHAPTERS, ids=lambda p: p.stem)
def test_chapter_has_exercises_with_solutions(md):
    text = md.read_text()
    exercises = re.findall(r":::\{exercise\}\n:label: (\S+)", text)
    solutions = re.findall(r":::\{solution\} (\S+)", text)
    assert len(exercises) >= 2, f"{md.name}: at least two exercises"
    assert sorted(exercises) == sorted(solutions), f"{md.name}: every exercise needs one solution"


FROM_SCRATCH_LINES = 20  # an idea built from scratch for the reader, then checked against the library
CHECKED = re.compile(r"\bassert\b|assert_close|\bverify\(")


@pytest.mark.parametrize("md", CHAPTERS, ids=lambda p: p.stem)
def test_notebooks_call_the_library_rather_than_implement_it(md):
    """A chapter defines only helpers of at most 6 lines, or a from-scratch version of an idea of at most 20 lines
    that the same cell or one of the next two checks against the library (an ``assert``); everything else is the
    library's."""
    cells = [c for c in jupytext.read(md).cells if c.cell_type == "code"]
    for at, cell in enumerate(cells):
        source = re.sub(r"(?m)^(\s*)%.*$", r"\1pass", cell.source)  # IPython magics are not Python
        checked = any(CHECKED.search(c.source) for c in cells[at:at + 3])  # this cell or one of the next two
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.ClassDef):
                raise AssertionError(f"{md.name}: class `{node.name}` belongs in attnconv")
            if isinstance(node, ast.FunctionDef):
                # A from-scratch function shows the mechanism: short, and free of argument checks, which are
                # the library's job (the chapter then asserts that the two agree).
                length = node.end_lineno - node.lineno + 1
                limit = FROM_SCRATCH_LINES if checked else 6
                assert length <= limit, f"{md.name}: `{node.name}` is {length} lines; move it into attnconv"
                raises = [n for n in ast.walk(node) if isinstance(n, ast.Raise)]
                assert not raises, f"{md.name}: `{node.name}` checks its arguments; that is the library's job"
