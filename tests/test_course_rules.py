"""The course edition: exercise rules per chapter, the generated student edition, and the grader's robustness."""

from __future__ import annotations

import re
import sys
import textwrap
from pathlib import Path

import nbformat
import pytest

from attnconv.course.exercises import EXERCISES, exercises_for
from attnconv.course.grade import grade_notebook
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


# The grader on a small synthetic chapter: right answers, an infinite loop, a deleted cell, a renamed function.
# Its checks live in a module that both this process and the notebook's kernel import, as a course's would.

TOY_CHECKS = """
from attnconv.course.exercises import CheckResult, register


@register("ex-toy-answer", "99_toy", "code", 1, ("answer",))
def answer_is_42(answer):
    ok = answer == 42
    return CheckResult(ok, "right" if ok else f"expected the answer to everything, received {answer!r}")


@register("ex-toy-square", "99_toy", "code", 1, ("square",))
def square_works(square):
    ok = callable(square) and square(7) == 49
    return CheckResult(ok, "square works" if ok else "square(7) should give 49")
"""


@pytest.fixture
def toy_chapter(tmp_path, monkeypatch):
    (tmp_path / "toy_checks.py").write_text(TOY_CHECKS)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path / "99_toy.ipynb"
    sys.modules.pop("toy_checks", None)
    EXERCISES.pop("ex-toy-answer", None)
    EXERCISES.pop("ex-toy-square", None)


def _write(path: Path, *sources: str) -> Path:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(textwrap.dedent(s)) for s in sources])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)
    return path


def test_grader_full_marks(toy_chapter):
    path = _write(toy_chapter, "answer = 6 * 7", "def square(x):\n    return x * x")
    report = grade_notebook(path, checks=("toy_checks",))
    assert (report.score, report.max_score) == (2, 2) and not report.cell_errors


def test_grader_survives_infinite_loop_and_keeps_other_marks(toy_chapter):
    path = _write(toy_chapter, "while True:\n    pass\nanswer = 42", "def square(x):\n    return x * x")
    report = grade_notebook(path, cell_timeout=3, checks=("toy_checks",))
    grades = {e.label: e for e in report.exercises}
    assert not grades["ex-toy-answer"].passed and "not defined" in grades["ex-toy-answer"].message
    assert grades["ex-toy-square"].passed
    assert report.cell_errors and report.cell_errors[0]["cell"] == 0


def test_grader_reports_deleted_cell_and_renamed_function(toy_chapter):
    path = _write(toy_chapter, "def squared(x):\n    return x * x")
    report = grade_notebook(path, checks=("toy_checks",))
    assert report.score == 0
    assert all("not defined" in e.message for e in report.exercises)


def test_grader_reports_wrong_answer_without_the_solution(toy_chapter):
    report = grade_notebook(_write(toy_chapter, "answer = 41", "square = abs"), checks=("toy_checks",))
    messages = {e.label: e.message for e in report.exercises}
    assert "received 41" in messages["ex-toy-answer"] and "42" not in messages["ex-toy-answer"]
    assert report.score == 0


def test_grader_rejects_unknown_chapter(tmp_path):
    with pytest.raises(ValueError, match="no graded exercises"):
        grade_notebook(_write(tmp_path / "00_nothing.ipynb", "x = 1"))


@pytest.mark.parametrize("md", CHAPTERS, ids=lambda p: p.stem)
def test_solution_code_is_folded_in_the_book(md):
    import jupytext

    cells = [c for c in jupytext.read(md).cells if c.cell_type == "code" and "### BEGIN SOLUTION" in c.source]
    assert cells, f"{md.name}: no solution code"
    unfolded = [c.source.splitlines()[0] for c in cells if "hide-cell" not in c.metadata.get("tags", [])]
    assert not unfolded, f"{md.name}: solution cells not tagged hide-cell: {unfolded}"
