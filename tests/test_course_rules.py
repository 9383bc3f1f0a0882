"""The course edition: exercise rules per chapter, the generated student edition, and the grader's robustness."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import nbformat
import pytest

from attnconv.course.exercises import exercises_for
from attnconv.course.student import plain_exercises, strip_solutions, student_notebook

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.md"))
THEORY = {"01_convolution_as_shifts", "02_self_attention", "03_attention_can_express_convolution",
          "05_relative_positions_are_convolutions"}


@pytest.mark.parametrize("md", CHAPTERS, ids=lambda p: p.stem)
def test_chapter_exercises_are_registered_and_follow_the_rules(md):
    labels = re.findall(r":::\{exercise\}\n:label: (\S+)", md.read_text())
    registered = exercises_for(md.stem)
    assert labels == [e.label for e in registered], f"{md.name}: exercises and registry differ"
    assert len(labels) >= 3, f"{md.name}: at least three exercises"
    assert any(e.graded and e.kind == "code" for e in registered), f"{md.name}: at least one graded coding exercise"
    if md.stem in THEORY:
        assert any(e.graded and e.kind == "proof" for e in registered), f"{md.name}: a graded proof by computation"
    text = md.read_text()
    for e in registered:
        if e.graded:
            assert f'verify("{e.label}"' in text, f"{md.name}: {e.label} is graded but never verified in the chapter"


@pytest.mark.parametrize("md", CHAPTERS, ids=lambda p: p.stem)
def test_student_edition_is_current(md):
    committed = ROOT / "student" / md.with_suffix(".ipynb").name
    assert committed.is_file(), f"{committed} missing: run `make student`"
    assert committed.read_text() == nbformat.writes(student_notebook(md)) + "\n", "stale: run `make student`"


@pytest.mark.parametrize("md", CHAPTERS, ids=lambda p: p.stem)
def test_student_edition_hides_every_solution(md):
    nb = nbformat.read(ROOT / "student" / md.with_suffix(".ipynb").name, as_version=4)
    text = "\n".join(c.source for c in nb.cells)
    assert "BEGIN SOLUTION" not in text and ":::{solution}" not in text
    code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    assert code.count("raise NotImplementedError()") == md.read_text().count("### BEGIN SOLUTION")
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code")
    assert "google.colab" in text, "the Colab install cell is kept"
    assert f"student/{md.stem}.ipynb" in nb.cells[0].source, "the Colab link points at the student path"
    stubs = [c for c in nb.cells if "raise NotImplementedError()" in c.source]
    assert all("hide-cell" not in c.metadata.get("tags", []) for c in stubs), "a student stub folded away"


def test_book_folds_solution_code_but_student_stub_stays_in_view(tmp_path):
    chapter = tmp_path / "01_x.md"
    chapter.write_text(textwrap.dedent("""\
        ```{code-cell} ipython3
        ---
        tags: [hide-cell, nbval-ignore-output]
        ---
        ### BEGIN SOLUTION
        x = 1
        ### END SOLUTION
        ```

        ```{code-cell} ipython3
        :tags: [hide-cell]

        shown = "an ordinary folded cell keeps its tag"
        ```
        """))
    cells = [c for c in student_notebook(chapter).cells if c.cell_type == "code"]
    assert cells[0].metadata["tags"] == ["nbval-ignore-output"]
    assert cells[1].metadata["tags"] == ["hide-cell"]


def test_strip_solutions_keeps_indentation_and_code_around():
    source = "a = 1\nwith ctx:\n    ### BEGIN SOLUTION\n    b = secret()\n    ### END SOLUTION\nverify(b)"
    assert strip_solutions(source) == (
        "a = 1\nwith ctx:\n    # YOUR CODE HERE\n    raise NotImplementedError()\nverify(b)")


@pytest.mark.parametrize("source", ["### BEGIN SOLUTION\nx = 1", "x = 1\n### END SOLUTION",
                                    "### BEGIN SOLUTION\n### BEGIN SOLUTION\n### END SOLUTION"])
def test_strip_solutions_rejects_unbalanced_markers(source):
    with pytest.raises(ValueError, match="SOLUTION"):
        strip_solutions(source)


def test_plain_exercises():
    text = ":::{exercise}\n:label: ex-x\n\nDo this.\n:::"
    assert plain_exercises(text) == "**Exercise** `ex-x`\n\nDo this."


@pytest.mark.parametrize("md", CHAPTERS, ids=lambda p: p.stem)
def test_solution_code_is_folded_in_the_book(md):
    import jupytext

    cells = [c for c in jupytext.read(md).cells if c.cell_type == "code" and "### BEGIN SOLUTION" in c.source]
    assert cells, f"{md.name}: no solution code"
    unfolded = [c.source.splitlines()[0] for c in cells if "hide-cell" not in c.metadata.get("tags", [])]
    assert not unfolded, f"{md.name}: solution cells not tagged hide-cell: {unfolded}"


@pytest.mark.parametrize("md", CHAPTERS, ids=lambda p: p.stem)
def test_function_exercises_take_their_inputs_from_earlier_cells(md):
    """The sandbox reruns a function exercise's cell with hidden inputs: the cell must not build them itself. It
    may derive one from another hidden input made in an earlier cell (``kernels`` from the loaded ``composite``
    run, ``rows`` from the ``bench`` path), which the sandbox swaps in its place."""
    import jupytext

    cells = jupytext.read(md).cells
    for e in exercises_for(md.stem):
        if not e.sandboxed:
            continue
        [cell] = [c for c in cells if c.cell_type == "code" and f'verify("{e.label}"' in c.source]
        assigned = set(re.findall(r"^(\w+)\s*=", cell.source, re.MULTILINE))
        sources = set(e.context(0)) - assigned
        for name in assigned & set(e.given):
            [line] = re.findall(rf"^{name}\s*=(.*)$", cell.source, re.MULTILINE)
            assert set(re.findall(r"\w+", line)) & sources, f"{e.label}: its cell builds its input {name!r} itself"


@pytest.mark.parametrize("md", CHAPTERS, ids=lambda p: p.stem)
def test_student_edition_has_nbgrader_cells_and_an_answer_cell_per_written_part(md):
    nb = nbformat.read(ROOT / "student" / md.with_suffix(".ipynb").name, as_version=4)
    ids = {c.metadata["nbgrader"]["grade_id"]: c for c in nb.cells if "nbgrader" in c.metadata}
    for e in exercises_for(md.stem):
        if e.graded:
            assert ids[e.label].cell_type == "code" and ids[e.label].metadata["nbgrader"]["solution"]
        if e.written:
            cell = ids[f"{e.label}-written"]
            assert cell.cell_type == "markdown" and "YOUR ANSWER HERE" in cell.source
            assert cell.metadata["nbgrader"]["points"] == e.written and cell.metadata["nbgrader"]["grade"]
    assert any(e.kind == "conceptual" for e in exercises_for(md.stem)) <= any(k.endswith("-written") for k in ids)


def _names(source: str, ctx) -> set[str]:
    import ast

    try:
        tree = ast.parse(textwrap.dedent(source))
    except SyntaxError:
        return set()
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ctx)}
    if ctx is ast.Store:  # function parameters and imports bind names too
        names |= {a.arg for a in ast.walk(tree) if isinstance(a, ast.arg)}
        imports = [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]
        names |= {(a.asname or a.name).split(".")[0] for n in imports for a in n.names}
    return names


@pytest.mark.parametrize("md", CHAPTERS, ids=lambda p: p.stem)
def test_no_later_cell_needs_a_name_that_only_a_solution_defines(md):
    """The student edition runs with only its stubs failing: a name assigned only between BEGIN and END SOLUTION
    is never read by a cell that is not itself an exercise's cell (a static stand-in for running every student
    notebook, which costs a kernel per chapter)."""
    import ast

    import jupytext

    cells = [c.source for c in jupytext.read(md).cells if c.cell_type == "code"]
    regions = [r for c in cells for r in re.findall(r"### BEGIN SOLUTION\n(.*?)### END SOLUTION", c, re.DOTALL)]
    outside = [strip_solutions(c) for c in cells]
    only_solution = set().union(*[_names(r, ast.Store) for r in regions]) - set().union(
        *[_names(c, ast.Store) for c in outside]) - {"_"}
    for source in cells:
        if "### BEGIN SOLUTION" in source:
            continue
        needed = _names(source, ast.Load) & only_solution
        assert not needed, f"{md.name}: a cell outside the exercises reads {needed}, which only a solution defines"
