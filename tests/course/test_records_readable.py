"""The records an exercise reads reach the kernel whatever their modes on the grader's disk.

A record written by a training run with mode 600 (or a checkout cloned under ``umask 077``) is one the kernel's
user cannot read: chapter 06's worked edition, graded from a folder with the kernel as ``nobody``, raised
PermissionError on such a record. The grader hands the kernel a copy of the records of its own, readable by the
kernel's user."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from attnconv.course.grade import grade_notebook
from attnconv.course.isolation import detect
from toy_course import CHAPTER, honest_cells, write

READ_RECORD = ('import json\nfrom attnconv.records import results_dir\n'
               'answer = json.loads((results_dir() / "run" / "final.json").read_text())["answer"]\n'
               'verify("ex-toy-answer", answer=answer)')


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"), reason="needs root to run the kernel as nobody")
def test_a_record_only_its_owner_may_read_reaches_the_kernel(toy, monkeypatch):
    isolation = detect()
    if isolation.uid is None or isolation.uid == os.geteuid():
        pytest.skip("the kernel runs as the grader's own user here")
    records = toy / "records"
    (records / "run").mkdir(parents=True)
    final = records / "run" / "final.json"
    final.write_text(json.dumps({"answer": 42}))
    final.chmod(0o600)  # as a training run writes its records
    monkeypatch.setenv("ATTNCONV_RESULTS", str(records))
    cells = honest_cells()
    cells[1].source = READ_RECORD
    notebook = write(toy / "alice.ipynb", *cells)
    report = grade_notebook(notebook, chapter=CHAPTER, checks=("toy_checks",), isolation=isolation, cell_timeout=300)
    assert not report.cell_errors, report.cell_errors
    assert report.score == report.max_score == 4, report.table()
    assert final.stat().st_mode & 0o777 == 0o600, "the grader's own records are left as they are"
