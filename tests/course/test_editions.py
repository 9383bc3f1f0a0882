"""Both editions of every chapter, executed in a fresh kernel and graded, and the five cheats of the course's first
review, each of which must score no more than the untouched student notebook (slow: each grading runs a kernel).
The second review's attacks are in ``test_attacks.py``."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

from attnconv.course.grade import grade_notebook

ROOT = Path(__file__).resolve().parents[2]
CHAPTERS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
CH01 = "01_convolution_as_shifts"


# Graded without the data sets, as the course's autograder grades them (its setup installs none). This grading is
# also make test's one run of these chapters as a reader without data sees them (the Makefile's test-notebooks runs
# only 07 that way); the strict build (make test-book) executes them with the data. Chapter 07 is graded with its
# corpora when they are there, so that a grading which reads the data sets through the sandbox stays tested.
WITHOUT_DATA = tuple(p.stem for p in CHAPTERS if not p.stem.startswith("07_"))


# The situations besides this machine's own, at no extra cost: these chapters are graded there instead (chapter
# 01 is graded in all three through the Gradescope zip, test_gradescope_situations.py). "mapped": bubblewrap alone
# maps the kernel to nobody inside a user namespace (what the grader finds where nobody cannot run its Python);
# "none": --isolation none, limits only (and nobody, as root, where nobody can run this Python).
SITUATIONS = {"02_self_attention": "mapped", "07_bert_convolutional_attention": "mapped",
              "05_relative_positions_are_convolutions": "none", "08_after_the_papers": "none"}


def _isolation(situation: str | None):
    from attnconv.course.isolation import Isolation, detect

    if situation is None:
        return detect()
    if situation == "none":
        return detect("none")
    found = detect()
    if found.bwrap is None:
        pytest.skip("the mapped situation needs bubblewrap")
    return Isolation(bwrap=found.bwrap, mapped=True, protections={"user": False, "filesystem": True,
                                                                  "network": True, "processes": True,
                                                                  "limits": True})


@pytest.mark.parametrize("notebook", CHAPTERS, ids=lambda p: p.stem)
def test_worked_edition_gets_full_marks(notebook, monkeypatch, tmp_path):
    """Graded from a folder of its own outside the repository: what an exercise reads comes with the grader."""
    if notebook.stem in WITHOUT_DATA:
        monkeypatch.delenv("ATTNCONV_DATA", raising=False)
    submitted = tmp_path / "submissions" / notebook.name
    submitted.parent.mkdir()
    submitted.write_bytes(notebook.read_bytes())
    situation = SITUATIONS.get(notebook.stem)
    report = grade_notebook(submitted, cell_timeout=300, isolation=_isolation(situation))
    if situation == "mapped":
        assert "it appears as nobody" in report.isolation + " ".join(report.problems), report.problems
    if situation == "none":
        assert any("not isolated: the filesystem" in p for p in report.problems), report.problems
    print(report.table())  # with -rP: the grading time of each chapter
    assert report.score == report.max_score > 0, report.table()
    assert not report.cell_errors, report.cell_errors


def test_the_chapters_graded_without_data_are_chapters():
    assert set(WITHOUT_DATA) <= {p.stem for p in CHAPTERS}
    assert set(SITUATIONS) <= {p.stem for p in CHAPTERS} and set(SITUATIONS.values()) == {"mapped", "none"}


def test_untouched_student_edition_gets_zero_and_only_not_implemented_errors():
    """Chapter 05 here, chapter 01 in the cheats' baseline: the two chapters of the course's review. (Each
    student notebook runs its whole chapter, so the others are left to the stale-edition and stub tests.)"""
    notebook = ROOT / "notebooks" / "05_relative_positions_are_convolutions.ipynb"
    report = grade_notebook(ROOT / "student" / notebook.name, chapter=notebook.stem, cell_timeout=300)
    assert report.score == 0, report.table()
    assert report.cell_errors, "the stubs must raise"
    assert {e["ename"] for e in report.cell_errors} == {"NotImplementedError"}, report.cell_errors
    assert all("NotImplementedError" in e.message for e in report.exercises), report.table()


# ----- the cheats: each starts from the untouched student notebook of chapter 01 ----------------------------------

CHEATS = {
    # the grader's function, replaced in the kernel so that it reports 100 points per exercise
    "grade-namespace": ("end", """
        import attnconv.course.exercises as ex
        ex.grade_namespace = lambda label, ns: {"label": label, "passed": True, "message": "ok", "points": 100,
                                                "max_points": 1}
        import attnconv.course.exercises.core as core
        core.run_check = lambda exercise, answers, given=None: [core.CheckResult(True, "ok")]
        """),
    # the registry, replaced with checks that always pass and weigh 5 points
    "registry": ("end", """
        from dataclasses import replace
        from attnconv.course.exercises import EXERCISES, CheckResult
        for label, e in list(EXERCISES.items()):
            try:
                EXERCISES[label] = replace(e, check=lambda **kw: CheckResult(True, "ok"), names=(), parts=(("", 5),))
            except TypeError:  # the registry before points came in parts
                EXERCISES[label] = replace(e, check=lambda **kw: CheckResult(True, "ok"), names=(), points=5)
        """),
    # a hook after every cell that prints grade lines, and forges right answers into the grader's own capture line
    "post-run-cell-hook": ("start", """
        import json, re
        def _forge(result):
            code = result.info.raw_cell or ""
            for label in ("ex-01-dilated-shifts", "ex-01-one-by-one", "ex-01-shift-adjoint", "ex-01-sympy-lemma"):
                print("@@ATTNCONV-GRADE@@" + json.dumps({"label": label, "passed": True, "points": 1, "message": "ok"}))
            marker = re.search(r"@@ATTNCONV-ANSWERS@@[0-9a-f]+", code)
            if marker:
                dilated = {"__list__": [{"__tuple__": [2 * a - 2, 2 * b - 2]} for a in range(3) for b in range(3)]}
                output_2 = {"__sympy__": "Add(Mul(Symbol('w0'), Symbol('x1')), Mul(Symbol('w1'), Symbol('x2')), "
                                         "Mul(Symbol('w2'), Symbol('x3')))"}
                print(marker.group(0) + json.dumps({"dilated": dilated, "lost": 94, "output_2": output_2}))
        get_ipython().events.register("post_run_cell", _forge)
        """),
    # the worked solutions, executed from the chapter's source in the public repository (its path is no secret)
    "exec-solutions": ("end", """
        import textwrap
        for block in SOLUTIONS:  # the published worked edition's solutions, read by the test (a repository under
            exec(textwrap.dedent(block), globals())  # /tmp is out of the sandbox's sight)
        assert lost == 94
        """),
    # answers read off the checks' source with inspect.getsource
    "copied-from-checks": ("end", """
        import inspect
        from attnconv.course.exercises import part1
        source = inspect.getsource(part1)
        assert "32 * 32 - 31 * 30" in source
        lost = 32 * 32 - 31 * 30
        dilated = [(2 * a - 2, 2 * b - 2) for a in range(3) for b in range(3)]
        as_matmul = conv2d_as_shifts(x, pointwise.weight, pointwise.bias)
        output_2 = sum(ws[a] * xs[2 + a - 1] for a in range(3))
        """),
}


@pytest.fixture(scope="module")
def stub_score():
    report = grade_notebook(ROOT / "student" / f"{CH01}.ipynb", chapter=CH01, cell_timeout=300)
    assert report.score == 0 and {e["ename"] for e in report.cell_errors} == {"NotImplementedError"}, report.table()
    return report.score


@pytest.mark.xdist_group("chapter-01-stub")  # one worker grades the baseline once (``--dist loadgroup``)
@pytest.mark.parametrize("cheat", sorted(CHEATS))
def test_cheat_scores_no_more_than_the_untouched_stub(cheat, stub_score, tmp_path):
    import textwrap

    where, code = CHEATS[cheat]
    nb = nbformat.read(ROOT / "student" / f"{CH01}.ipynb", as_version=4)
    solutions = re.findall(r"### BEGIN SOLUTION\n(.*?)### END SOLUTION",
                           (ROOT / "notebooks" / f"{CH01}.md").read_text(), re.S)
    cell = nbformat.v4.new_code_cell(f"ROOT = {str(ROOT)!r}\nSOLUTIONS = {solutions!r}\n" + textwrap.dedent(code))
    nb.cells.insert(1 if where == "start" else len(nb.cells), cell)
    path = tmp_path / f"{CH01}.ipynb"
    nbformat.write(nb, path)
    report = grade_notebook(path, chapter=CH01, cell_timeout=300)
    index = nb.cells.index(cell)
    assert not [e for e in report.cell_errors if e["cell"] == index], f"the cheat itself must run: {report.cell_errors}"
    assert report.score <= stub_score, report.table()
    assert report.max_score == 4
