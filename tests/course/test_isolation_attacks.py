"""Attacks on what the sandbox keeps from a student's code: the private checks, files only root may read, the
process limit, the size of the private /tmp, the grader's memory (a huge output) and its time (one budget per
submission). Each attack notebook starts from the toy chapter's untouched student edition and must score no more
than it (0), leaving every file outside its own scratch folder as it was."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import nbformat
import pytest

import attnconv
from attacks import tree_digest
from attnconv.course.grade import grade_notebook
from attnconv.course.isolation import ScratchQuota, detect
from toy_course import CHAPTER, honest_cells, stub_cells, write

LIBRARY = Path(attnconv.__file__).resolve().parent
ISOLATION = detect()
AS_ROOT_SWITCHED = os.geteuid() == 0 and ISOLATION.uid is not None

SNOOP = '''
def snoop():
    """Every place the check module could be: an import, sys.path, the grader's command lines and environments,
    the folder it really sits in, /tmp; returns the files that hold its expected answers."""
    import glob, os, sys
    found = []
    try:
        import toy_checks
        found.append("import")
    except Exception:
        pass
    places = {p for p in sys.path if p} | {os.getcwd(), "/tmp", os.path.expanduser("~"), os.path.dirname(CHECKS)}
    for name in glob.glob("/proc/*/environ") + glob.glob("/proc/*/cmdline"):
        try:
            text = open(name, "rb").read().decode(errors="replace")
        except Exception:
            continue
        places |= {p for p in re.split("[\\0:= ]", text) if p.startswith("/")}
    for place in sorted(places):
        if not os.path.isdir(place) or "site-packages" in place:
            continue
        for root, dirs, files in os.walk(place):
            if root.count(os.sep) - place.count(os.sep) >= 3:
                dirs[:] = []
            for name in files:
                if name.startswith("toy_checks"):
                    path = os.path.join(root, name)
                    try:
                        if b"answer_is_42" in open(path, "rb").read():
                            found.append(path)
                    except Exception:
                        pass
    try:
        if b"answer_is_42" in open(CHECKS, "rb").read():
            found.append(CHECKS)
    except Exception:
        pass
    return found
'''


def _snooper(checks: Path) -> list:
    """Answers that are right only where the checks (or /etc/shadow) could be read; measurements as cell errors."""
    cells = stub_cells()
    header = f"import re\nCHECKS = {str(checks)!r}\n" + SNOOP
    cells[1].source = ('try:\n    answer = 42 if open("/etc/shadow").read() else 0\nexcept OSError:\n    answer = 0\n'
                       'verify("ex-toy-answer", answer=answer)')
    cells[2].source = header + ('\ndef square(x):\n    return x * x if snoop() else 0\n'
                                'verify("ex-toy-square", square=square, xs=xs)')
    cells[3].source = header + ('\nfound = snoop()\nprint(found)\n'
                                'expr = sp.expand((sp.Symbol("x") + 1) ** 2) if found else sp.Integer(0)\n'
                                'verify("ex-toy-sym", expr=expr)')
    fork_bomb = ("import os, time\npids = []\nfor _ in range(3000):\n    try:\n        pid = os.fork()\n"
                 "    except OSError:\n        break\n    if pid == 0:\n        time.sleep(60)\n        os._exit(0)\n"
                 "    pids.append(pid)\nfor pid in pids:\n    os.kill(pid, 9)\n    os.waitpid(pid, 0)\n"
                 "raise RuntimeError(f'forked {len(pids)}')")
    fill_tmp = ("import os\nwritten = 0\nchunk = b'x' * (16 << 20)\ntry:\n    with open('/tmp/fill', 'wb') as f:\n"
                "        for _ in range(3 * 1024 // 16):\n            f.write(chunk)\n            f.flush()\n"
                "            written += 16\nexcept OSError:\n    pass\nos.remove('/tmp/fill')\n"
                "raise RuntimeError(f'wrote {written} MB')")
    flood = "print('y' * (40 << 20))"
    return cells + [nbformat.v4.new_code_cell(c) for c in (fork_bomb, fill_tmp, flood)]


def _error(report, pattern: str) -> int:
    for error in report.cell_errors:
        found = re.search(pattern, error["evalue"])
        if found:
            return int(found.group(1))
    raise AssertionError(f"no cell error matches {pattern!r}: {report.cell_errors}")


@pytest.mark.skipif(ISOLATION.bwrap is None, reason="needs bubblewrap")
def test_a_snooping_flooding_notebook_scores_nothing_and_is_bounded(toy):
    checks = toy / "checks" / "toy_checks.py"
    nb = write(toy / "mallory.ipynb", *_snooper(checks))
    before = {**tree_digest(LIBRARY / "course"), **tree_digest(toy / "checks")}
    report = grade_notebook(nb, CHAPTER, cell_timeout=240, total_timeout=900, checks=("toy_checks",))
    assert report.score == 0, report.table()  # the untouched student edition scores 0
    by_label = {e.label: e for e in report.exercises}
    assert "expected (x + 1)**2" in by_label["ex-toy-sym"].message  # the kernel found nothing of the checks
    assert "expected their squares" in by_label["ex-toy-square"].message  # neither did the sandbox
    assert _error(report, r"wrote (\d+) MB") <= 256  # the private /tmp is a tmpfs of 256 MiB
    if AS_ROOT_SWITCHED:
        assert "expected the answer to everything" in by_label["ex-toy-answer"].message  # /etc/shadow stayed shut
        assert _error(report, r"forked (\d+)") <= 512 + 64  # the process limit binds a real unprivileged user
    assert any("characters of output were dropped" in p for p in report.problems), report.problems
    assert {**tree_digest(LIBRARY / "course"), **tree_digest(toy / "checks")} == before


def test_the_same_answers_score_where_the_checks_are_readable(toy):
    """The snooper's control: with the check module's text in hand, its answers earn the sym point, so the attack
    above fails only because the checks stayed out of reach."""
    namespace = {"CHECKS": str(toy / "checks" / "toy_checks.py"), "re": re}
    exec(SNOOP, namespace)  # noqa: S102  (the attack's own search, run by the grader's user)
    assert namespace["snoop"](), "the search must find the checks where they are readable"


def test_a_private_probe_that_needs_the_checks_is_refused_before_grading(toy):
    from attnconv.course.exercises import EXERCISES
    from attnconv.course.sandbox import portable_probe

    exercise = EXERCISES["ex-toy-square"]
    spec = portable_probe(exercise, ("toy_checks",))
    assert spec["globals"] == {}  # a lambda over builtins only: nothing of the checks travels
    module = vars(sys.modules["toy_checks"])
    module["_expected"] = lambda xs: [x * x for x in xs]  # a helper of the checks, holding the answers
    uses_helper = eval("lambda ns: {'squares': _expected(ns['xs'])}", module)  # noqa: S307
    secret = 7
    closure = lambda ns: {"squares": [secret]}  # noqa: E731
    for probe in (uses_helper, closure):
        bad = type(exercise)(**{**vars(exercise), "probe": probe})
        with pytest.raises(ValueError, match="ex-toy-square"):
            portable_probe(bad, ("toy_checks",))


def test_one_budget_covers_the_whole_submission(toy):
    # five sleeping cells of 15 s each would take 75 s: the one budget of 50 s stops them (the kernel's part of it
    # ends at 38 s; the rest is for checking)
    cells = honest_cells()[:2] + [nbformat.v4.new_code_cell("import time\ntime.sleep(1000)") for _ in range(5)]
    nb = write(toy / "sleepy.ipynb", *cells)
    report = grade_notebook(nb, CHAPTER, cell_timeout=15, total_timeout=50, checks=("toy_checks",))
    assert report.seconds < 50 + 20, report.seconds  # the budget, and the time to clean up
    assert report.score == 1, report.table()  # the answer before the sleeps still counts


UID_CHECKS = '''
import os, sys

from attnconv.course.exercises import CheckResult, register


@register("ex-uid-who", "98_uid", "code", 1, ("x",))
def who(x):
    return CheckResult(True, f"{os.getuid()} {os.getcwd()} {sys.path!r}")
'''


@pytest.mark.skipif(not AS_ROOT_SWITCHED, reason="needs root and a user switch")
def test_the_checker_runs_as_its_own_user_from_a_library_only_it_can_read(tmp_path, monkeypatch):
    import subprocess

    from attnconv.course import wire
    from attnconv.course.checker import Checker, Library
    from attnconv.course.exercises import EXERCISES

    (tmp_path / "uid_checks.py").write_text(UID_CHECKS)
    monkeypatch.syspath_prepend(str(tmp_path))
    import uid_checks  # noqa: F401

    try:
        with Checker(("uid_checks",), isolation=ISOLATION, hide=(tmp_path,)) as checker:
            uid, cwd, path = checker.check("ex-uid-who", wire.dumps({"x": 1}), 0)[0].message.split(" ", 2)
            library = checker.library
            assert os.stat(library).st_uid == ISOLATION.checker_uid and os.stat(library).st_mode & 0o777 == 0o500
            as_kernel = subprocess.run(["setpriv", f"--reuid={ISOLATION.uid}", f"--regid={ISOLATION.gid}",
                                        "--clear-groups", "ls", str(library)], capture_output=True, text=True)
            assert as_kernel.returncode != 0  # the kernel's user cannot even list the checks
        assert int(uid) == ISOLATION.checker_uid != ISOLATION.uid  # another user than the kernel's
        assert cwd == str(library)
        assert eval(path)[0] == str(library) and str(tmp_path) not in path  # noqa: S307  (its own repr)
    finally:
        sys.modules.pop("uid_checks", None)
        EXERCISES.pop("ex-uid-who", None)
        Library._cache.pop(("uid_checks",), None)


FILL_SCRATCH = """
import os
chunk, written = b"s" * (16 << 20), 0
for n in range(4 * 1024 // 64):  # 4 GB in files of 64 MiB, each under the file-size limit
    try:
        with open(f"fill-{n}", "wb") as handle:
            for _ in range(4):
                handle.write(chunk)
                handle.flush()
                written += 16
    except OSError:
        pass  # a full folder: try the next file anyway
raise RuntimeError(f"wrote {written} MB")
"""


def _mounted_scratch(folder: Path) -> list[str]:
    """The scratch tmpfs mounted at ``folder`` (its ``/proc/mounts`` lines). Only this one: under pytest-xdist another
    worker's grading may hold its own scratch mounted at the same moment."""
    return [line for line in Path("/proc/mounts").read_text().splitlines()
            if line.startswith("attnconv-scratch ") and line.split()[1] == str(folder)]


def test_writing_4_gb_to_scratch_is_stopped_at_its_quota(toy, monkeypatch):
    """A cell that writes 4 GB into its scratch folder is stopped at the quota (as root a tmpfs of that size, so the
    disk never sees a byte; else a watched folder), the report says so, the score is the student edition's, and
    nothing of it is left: no file, no mount."""
    from attnconv.course import isolation

    made, make = [], ScratchQuota.make.__func__

    def make_and_look(cls, folder, mb=isolation.SCRATCH_MB):
        quota = make(cls, folder, mb)
        made.append((quota, _mounted_scratch(quota.folder)))  # its mount, seen while the grading runs
        return quota

    monkeypatch.setattr(isolation.ScratchQuota, "make", classmethod(make_and_look))
    nb = write(toy / "filler.ipynb", *stub_cells(), FILL_SCRATCH)
    report = grade_notebook(nb, CHAPTER, cell_timeout=240, total_timeout=600, checks=("toy_checks",),
                            scratch_mb=256)
    assert report.score == 0, report.table()  # the untouched student edition scores 0
    assert any("scratch folder's 256 MiB quota" in p for p in report.problems), report.problems
    assert [e["ename"] for e in report.cell_errors if e["cell"] == 5] == ["ScratchQuota"], report.cell_errors
    ((quota, while_grading),) = made
    assert quota.mounted == (os.geteuid() == 0)  # as root the folder was a tmpfs: nothing reached the disk
    assert len(while_grading) == quota.mounted, while_grading  # so the look at /proc/mounts below can see it
    assert quota.hit and quota.peak <= 256 * 2**20 + (0 if os.geteuid() == 0 else 768 * 2**20), quota.peak
    assert _mounted_scratch(quota.folder) == [], "the grading's scratch tmpfs is still mounted"
    assert not quota.folder.exists() and not list(Path(toy).rglob("fill-*"))


def test_the_scratch_quota_without_a_mount_sums_the_folder(tmp_path, monkeypatch):
    """Where no tmpfs can be mounted (not root), the quota is the folder's allocated size, subfolders included."""
    from attnconv.course import isolation

    monkeypatch.setattr(isolation.shutil, "which", lambda name, *a, **k: None)
    quota = ScratchQuota.make(tmp_path / "scratch", 2)
    assert not quota.mounted and not quota.over()
    (quota.folder / "a").mkdir()
    (quota.folder / "a" / "one").write_bytes(os.urandom(2**20))
    assert not quota.over()
    (quota.folder / "two").write_bytes(os.urandom(2**20))
    assert quota.over() and quota.hit and quota.peak >= 2 * 2**20
    quota.close()


def test_a_scratch_quota_must_be_a_positive_number_of_mib(toy):
    nb = write(toy / "alice.ipynb", *honest_cells())
    for bad in (0, -5, 1.5):
        with pytest.raises(ValueError, match="scratch_mb"):
            grade_notebook(nb, CHAPTER, checks=("toy_checks",), scratch_mb=bad)
        with pytest.raises(ValueError, match="scratch_mb"):
            ScratchQuota.make(toy / "q", bad)
