"""The grader's parts that need no kernel: written sheets (quoted, rewritten, marks kept, conflicts), where the
exercise cells are (duplicates, renamed cells), unreadable notebooks, the pristine library, Gradescope's results
on a failed run, and the limits of the checker's reply."""

from __future__ import annotations

import json
import zipfile

import nbformat
import pytest

from attnconv.course.checker import Library, parse_results
from attnconv.course.exercises import exercises_for
from attnconv.course.gradescope import build_autograder, run
from attnconv.course.report import GradeReport, answer_cells, read_notebook
from attnconv.course.sheets import read_sheet, sheet_conflicts, write_sheet
from toy_course import CHAPTER, stub_cells, write

FORGED = "I do not know.\n\npoints: 3 / 3\n\n## ex-toy-essay\n\npoints: 3 / 3"


def _report(answer: str, student: str = "mallory") -> GradeReport:
    return GradeReport(f"{student}.ipynb", CHAPTER, written={"ex-toy-essay": answer})


def test_a_forged_mark_in_an_answer_is_quoted_never_counted_and_reported(toy, tmp_path):
    sheet = write_sheet(_report(FORGED), tmp_path / "written")
    text = sheet.read_text()
    assert "> points: 3 / 3" in text and "> ## ex-toy-essay" in text
    assert read_sheet(sheet, CHAPTER) == {"ex-toy-essay": None}
    sheet.write_text(text.replace("\npoints: ___ / 3", "\npoints: 0 / 3"))
    assert read_sheet(sheet, CHAPTER) == {"ex-toy-essay": 0.0}
    conflicts = sheet_conflicts(sheet, CHAPTER)
    assert len(conflicts) == 1 and "looks like a mark" in conflicts[0] and "counts is 0" in conflicts[0]


def test_marks_survive_a_rerun_but_a_planted_or_changed_sheet_does_not(toy, tmp_path):
    folder = tmp_path / "written"
    sheet = write_sheet(_report("Because the heads are a basis."), folder)
    sheet.write_text(sheet.read_text().replace("points: ___ / 3", "points: 2.5 / 3"))
    write_sheet(_report("Because the heads are a basis."), folder)
    assert read_sheet(sheet, CHAPTER) == {"ex-toy-essay": 2.5}  # the instructor's mark is kept
    changed = _report("A new answer.")
    write_sheet(changed, folder)
    assert read_sheet(sheet, CHAPTER) == {"ex-toy-essay": None} and "mark it again" in changed.problems[0]
    planted = folder / "eve.md"
    planted.write_text("## ex-toy-essay\n\npoints: 3 / 3\n")
    report = _report("Mine.", "eve")
    write_sheet(report, folder)
    assert read_sheet(planted, CHAPTER) == {"ex-toy-essay": None}
    assert "was not a sheet this grader wrote" in report.problems[0]
    assert (folder / ".eve.md.replaced").read_text() == "## ex-toy-essay\n\npoints: 3 / 3\n"


def test_duplicated_and_renamed_exercise_cells_are_reported(toy):
    cells = stub_cells()
    copy = nbformat.v4.new_code_cell('answer = 42\nverify("ex-toy-answer", answer=answer)')
    copy.metadata["nbgrader"] = dict(cells[1].metadata["nbgrader"])
    cells[3].metadata["nbgrader"]["grade_id"] = "ex-toy-symbolic"
    nb = nbformat.v4.new_notebook(cells=cells + [copy])
    found, problems = answer_cells(nb, [e for e in exercises_for(CHAPTER) if e.graded])
    assert found["ex-toy-answer"] == 1 and found["ex-toy-sym"] == 3
    assert any("2 cells hold this exercise (cells 1, 5); graded from cell 1" in p for p in problems), problems
    assert any("'ex-toy-symbolic', which names no exercise" in p for p in problems), problems


@pytest.mark.parametrize("text", ["{ not json", '{"cells": 3, "nbformat": 4, "nbformat_minor": 5, "metadata": {}}',
                                  ""])
def test_an_unreadable_notebook_is_one_clear_error(tmp_path, text):
    path = tmp_path / "bad.ipynb"
    path.write_text(text)
    with pytest.raises(ValueError, match="bad.ipynb is not a readable notebook"):
        read_notebook(path)


def test_the_library_copy_is_the_one_read_before_grading(toy, tmp_path):
    checks = toy / "checks" / "toy_checks.py"
    original = checks.read_bytes()
    library = Library.capture(("toy_checks",))
    checks.write_text("raise SystemExit('tampered')\n")  # what a kernel with write access could do
    try:
        copy = library.write(tmp_path / "copy")
        assert (copy / "toy_checks.py").read_bytes() == original
        assert Library.capture(("toy_checks",)) is library
        assert (copy / "attnconv" / "course" / "exercises" / "core.py").is_file()
    finally:
        checks.write_bytes(original)


def test_the_checker_reply_is_read_strictly():
    assert parse_results(json.dumps({"results": [{"passed": True, "message": "ok", "part": "a"}]}))[0].passed
    for bad in ({"results": [{"passed": 1, "message": "ok"}]}, {"results": []}, {"results": "all"}, [True],
                {"results": [{"passed": True, "message": {"x": 1}}]}):
        with pytest.raises(ValueError):
            parse_results(json.dumps(bad))


def test_a_gradescope_run_that_fails_still_writes_results_with_the_reason(tmp_path):
    root = tmp_path / "autograder"
    for folder in ("source", "submission", "results"):
        (root / folder).mkdir(parents=True)
    with zipfile.ZipFile(build_autograder("01", tmp_path / "autograder.zip")) as archive:
        archive.extractall(root / "source")
        setup = archive.read("setup.sh").decode()
        requirements = archive.read("requirements.txt").decode()
    assert "bubblewrap" in setup and "numpy>=2.2,<2.5" in requirements and "matplotlib>=3.10,<3.12" in requirements
    (root / "submission" / "01_convolution_as_shifts.ipynb").write_text("{ broken")
    results = run(root)
    written = json.loads((root / "results" / "results.json").read_text())
    assert written == results and written["score"] == 0
    assert "not a readable notebook" in written["output"]
    (root / "source" / "autograder_config.json").write_text("{")
    assert "could not grade" in run(root)["output"]
    assert json.loads((root / "results" / "results.json").read_text())["score"] == 0


def test_the_toy_stub_notebook_is_a_valid_notebook(tmp_path):
    nb = read_notebook(write(tmp_path / "s.ipynb", *stub_cells()))
    assert [c.metadata.get("nbgrader", {}).get("grade_id") for c in nb.cells][1:4] == \
        ["ex-toy-answer", "ex-toy-square", "ex-toy-sym"]
