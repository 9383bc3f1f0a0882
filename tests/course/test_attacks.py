"""The attack suite: every attack of the course's review scores no more than the untouched student notebook, and
leaves the library, the other notebooks, the reports and the sheets as they were, with no process left behind
(slow: each notebook runs in its own kernel; the folder run grades eight notebooks two at a time)."""

from __future__ import annotations

import csv
import json
import os
import time
from pathlib import Path

import pytest

import attnconv
from attacks import (
    attack_processes,
    background_rewriter,
    duplicated_and_renamed,
    exits_the_kernel,
    forged_written_mark,
    huge_power,
    ignores_interrupts,
    library_edit,
    memory_hog,
    srepr_in_kernel,
    srepr_through_sandbox,
    tree_digest,
    vandal,
)
from attnconv.course.grade import grade_notebook, main
from attnconv.course.isolation import detect
from toy_course import CHAPTER, MAX, honest_cells, stub_cells, write

LIBRARY = Path(attnconv.__file__).resolve().parent / "course"  # the package the attacks write to
FULL = detect().protections.get("filesystem", False)


def _rows(gradebook: Path) -> dict[str, dict]:
    return {row["student"]: row for row in csv.DictReader(gradebook.open())}


def _wait_for_attackers(seconds: float = 4.0) -> None:
    time.sleep(seconds)  # long enough for a surviving background process to strike


def test_a_folder_with_attackers_grades_everyone_as_if_they_were_not_there(toy):
    folder, written, outside = toy / "submissions", toy / "written", toy / "outside"
    folder.mkdir()
    outside.mkdir()
    (outside / "keep.txt").write_text("the instructor's file\n")
    gradebook = toy / "grades.csv"
    marker = outside / "pwned"
    # sorted order puts an attacker before each honest notebook: a grader that carried state over would show it
    write(folder / "a1-srepr.ipynb", *srepr_in_kernel(marker))
    write(folder / "a2-library.ipynb", *library_edit())
    write(folder / "alice.ipynb", *honest_cells())
    write(folder / "b1-sandbox-srepr.ipynb", *srepr_through_sandbox(marker))
    write(folder / "bob.ipynb", *stub_cells())
    write(folder / "c1-vandal.ipynb", *vandal(folder, written, "c1-vandal"))
    write(folder / "c2-forged-mark.ipynb", *forged_written_mark())
    write(folder / "c3-rewriter.ipynb", *background_rewriter([gradebook]))
    write(folder / "c4-duplicated.ipynb", *duplicated_and_renamed())
    (folder / "c5-garbage.ipynb").write_text("{ this is not a notebook")
    library = tree_digest(LIBRARY)
    notebooks = tree_digest(folder)

    assert main([str(folder), "--chapter", "99", "--checks", "toy_checks", "--jobs", "2", "--gradebook",
                 str(gradebook), "--written", str(written), "--total-timeout", "600"]) == 0
    after_run = {p.name: p.read_bytes() for p in [gradebook, *written.glob("*.md")]}
    _wait_for_attackers()

    rows = _rows(gradebook)
    stub = int(rows["bob"]["auto_score"])
    assert stub == 0 and int(rows["alice"]["auto_score"]) == MAX, rows["alice"]
    for student, row in rows.items():
        if student != "alice":
            assert int(row["auto_score"]) <= stub, (student, row)
            assert row["written_score"] == "0", (student, row)  # nobody marked anything yet
    assert "not a readable notebook" in rows["c5-garbage"]["problems"]
    assert "2 cells hold this exercise" in rows["c4-duplicated"]["problems"]
    assert "ex-toy-symbolic" in rows["c4-duplicated"]["problems"]
    assert not marker.exists(), "a payload ran somewhere that can write outside the scratch folder"
    assert tree_digest(LIBRARY) == library, "the library changed"
    assert not attack_processes(), "a process the submissions started is still running"
    assert {p.name: p.read_bytes() for p in [gradebook, *written.glob("*.md")]} == after_run, \
        "the gradebook or a sheet changed after the grader wrote it"
    if FULL:  # what only the sandbox's read-only filesystem can promise
        assert tree_digest(folder) == notebooks, "a notebook in the submissions folder changed"
        assert (outside / "keep.txt").read_text() == "the instructor's file\n"

    # the instructor marks the forged answer 0: the quoted "points: 3 / 3" lines never count, and are reported.
    # The folder is graded again with only the two notebooks whose sheets this is about (each notebook is graded on
    # its own; the other eight were checked above and would only take a kernel each).
    for path in folder.glob("*.ipynb"):
        if path.stem not in ("c1-vandal", "c2-forged-mark"):
            path.unlink()
    sheet = written / "c2-forged-mark.md"
    text = sheet.read_text()
    assert text.count("\npoints: ___ / 3") == 1 and "> points: 3 / 3" in text
    sheet.write_text(text.replace("\npoints: ___ / 3", "\npoints: 0 / 3"))
    assert main([str(folder), "--chapter", "99", "--checks", "toy_checks", "--jobs", "2", "--gradebook",
                 str(gradebook), "--written", str(written), "--total-timeout", "600"]) == 0
    rows = _rows(gradebook)
    assert rows["c2-forged-mark"]["ex-toy-essay-written"] == "0"
    assert "looks like a mark" in rows["c2-forged-mark"]["problems"]
    assert rows["c1-vandal"]["ex-toy-essay-written"] == "", "a sheet the student planted was kept"


def test_a_background_process_cannot_rewrite_the_report(toy):
    path = toy / "mallory.ipynb"
    report = toy / "mallory.grade.json"
    write(path, *background_rewriter([report]))
    assert main([str(path), "--chapter", "99", "--checks", "toy_checks"]) == 0
    written = report.read_bytes()
    _wait_for_attackers()
    assert report.read_bytes() == written
    assert json.loads(written)["score"] == 0
    assert not attack_processes()


def test_total_time_holds_while_a_cell_ignores_interrupts(toy):
    began = time.monotonic()
    report = grade_notebook(write(toy / "a.ipynb", *ignores_interrupts()), CHAPTER, checks=("toy_checks",),
                            cell_timeout=600, total_timeout=40)
    assert time.monotonic() - began < 40 + 10 + 90  # the limit, the grace after the interrupt, the checks
    errors = {e["cell"]: e for e in report.cell_errors}
    assert errors[5]["ename"] == "CellTimeout" and "did not stop when interrupted" in errors[5]["evalue"]
    assert report.score == 0


def test_a_dead_kernel_names_the_cell_it_died_in(toy):
    report = grade_notebook(write(toy / "a.ipynb", *exits_the_kernel()), CHAPTER, checks=("toy_checks",))
    grades = {e.label: e for e in report.exercises}
    assert "the kernel died while this cell ran (exit status 0" in grades["ex-toy-answer"].message
    assert "the kernel died in cell 1, before this exercise's cell 2 ran" in grades["ex-toy-square"].message
    assert report.score == 0


def test_memory_is_limited_and_a_huge_power_is_refused(toy):
    write(toy / "hog.ipynb", *memory_hog())
    report = grade_notebook(toy / "hog.ipynb", CHAPTER, checks=("toy_checks",), memory_mb=4096)
    grades = {e.label: e for e in report.exercises}
    assert "MemoryError" in grades["ex-toy-answer"].message and report.score == 0
    began = time.monotonic()
    report = grade_notebook(write(toy / "pow.ipynb", *huge_power()), CHAPTER, checks=("toy_checks",))
    grades = {e.label: e for e in report.exercises}
    assert "exponent" in grades["ex-toy-sym"].message and report.score == 0
    assert time.monotonic() - began < 300


@pytest.mark.skipif(not FULL, reason="needs bubblewrap: without it the sandbox's filesystem is not read-only")
def test_the_sandbox_has_no_network_and_writes_only_its_scratch_folder(tmp_path):
    import subprocess
    import sys

    from attnconv.course.isolation import Limits, clean_env

    isolation = detect()
    real = Path(__file__).resolve().parent / ".attnconv-sandbox-test"  # outside /tmp: read-only in the sandbox
    scratch = tmp_path / "scratch"
    isolation.prepare(scratch)
    probe = ("import socket, os, pathlib\n"
             f"pathlib.Path({str(scratch)!r}, 'ok').write_text('ok')\n"
             f"for target in ('/etc/attnconv-test', {str(real)!r}):\n"
             "    try:\n        open(target, 'w')\n        print('wrote', target)\n"
             "    except OSError:\n        pass\n"
             "try:  # /tmp is the sandbox's own, private: the write fails, or lands there and vanishes\n"
             f"    open({str(tmp_path / 'outside')!r}, 'w')\n"
             "except OSError:\n    pass\n"
             "try:\n    socket.create_connection(('1.1.1.1', 53), timeout=3)\n    print('network')\n"
             "except OSError:\n    pass\n"
             "print('uid', os.getuid())\n"
             "data = os.environ.get('ATTNCONV_DATA')\n"
             "print('data', sorted(os.listdir(data)) if data else None)\n")
    cmd = isolation.command([sys.executable, "-c", probe], scratch, clean_env({}), Limits())
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120, start_new_session=True)
    assert out.returncode == 0, out.stderr
    assert "wrote" not in out.stdout and "network" not in out.stdout, out.stdout
    assert "uid 65534" in out.stdout
    data = os.environ.get("ATTNCONV_DATA")  # a grading with the data sets reads them through the sandbox
    assert f"data {sorted(os.listdir(data)) if data else None}" in out.stdout, out.stdout
    assert (scratch / "ok").read_text() == "ok" and not (tmp_path / "outside").exists() and not real.exists()


def test_without_isolation_it_still_grades_and_says_what_is_missing(toy):
    report = grade_notebook(write(toy / "alice.ipynb", *honest_cells()), CHAPTER, checks=("toy_checks",),
                            isolation=detect("none"))
    assert report.score == MAX, report.table()
    missing = [p for p in report.problems if p.startswith("not isolated") and "cgroup" not in p]
    user = detect("none").uid is not None  # as root, setpriv alone still switches to nobody where it can run Python
    assert len(missing) == 4 - user and any("unprivileged user" in p for p in missing) != user and \
        any("no network" in p for p in missing), report.problems
    assert "bubblewrap" in report.isolation
