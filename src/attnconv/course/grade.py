"""The grader: ``python -m attnconv.course.grade SUBMISSION.ipynb`` or ``... SUBMISSIONS_DIR --chapter NN
--gradebook grades.csv``.

Nothing the student's code says or leaves behind is trusted:

1. Each submission gets a private folder with a pristine copy of the library and checks, read into memory before
   any student code ran (``attnconv.course.checker.Library``). In a folder, each submission is graded by
   a fresh grader process of its own.
2. The submission runs top to bottom in a fresh kernel, isolated (``attnconv.course.isolation``: an
   unprivileged user, a scratch folder, no network, read-only files, limits on memory, CPU time and processes),
   with a time limit per cell and for the whole notebook that holds while a cell runs, carrying on past cells
   that fail (``attnconv.course.execute``). Its whole process tree is killed at the end.
3. Right after an exercise's cell runs, a short cell hands that exercise's answers back as data
   (:mod:`attnconv.course.wire`). A function exercise's cell runs again in an isolated sandbox, on hidden inputs
   built from a seed the notebook never sees (:mod:`attnconv.course.sandbox`).
4. The answers are decoded and checked in an isolated checker process with time and memory limits
   (``attnconv.course.checker``); only a list of pass/fail results with messages comes back. The points come
   from the grader's registry and are capped there.

A folder of submissions is graded in parallel (``--jobs``) into one CSV gradebook, with a row per student (a
notebook that cannot be read or graded gets a row with the reason) and a column per exercise. Written answers are
collected into a Markdown sheet per student (``attnconv.course.sheets``).
"""

from __future__ import annotations

import argparse
import importlib
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from .checker import Checker, Library, private_paths, python_path
from .execute import become_subreaper, descendants, kill_tree, run_notebook
from .escape import exit_status, plain, visible
from .exercises import exercises_for, score_results
from .exercises.core import CheckResult, Exercise
from .gradebook import write_gradebook
from ..records import RECORD_SUFFIXES, RESULTS_ENV_VAR, results_dir
from .isolation import SCRATCH_MB, Cgroup, Isolation, Limits, ScratchQuota, detect
from .report import ExerciseGrade, GradeReport, answer_cells, read_notebook, resolve_chapter, written_answers
from .sandbox import is_private, portable_probe, run_function_exercise
from .sheets import read_sheet, sheet_conflicts, write_sheet

__all__ = ["ExerciseGrade", "GradeReport", "grade_folder", "grade_notebook", "main", "read_sheet",
           "resolve_chapter", "sheet_conflicts", "write_gradebook", "write_sheet"]

WORKER_MARKER = "@@ATTNCONV-REPORT@@"
_ACTIVE = [0]  # gradings running in this process: orphans are swept only when one runs alone
_LOCK = threading.Lock()


def _own_error(label: str, error: dict | None, cell_timeout: int, total_timeout: int) -> str | None:
    """The reason an exercise fails because its own cell did, or None (no error, or only verify's verdict)."""
    if error is None:
        return None
    if error["ename"] == "AssertionError" and error["evalue"].startswith(f"{label}:"):
        return None  # the chapter's own verify said no: the answers are still there to be graded
    if error["ename"] == "CellTimeout":
        if error.get("limit") == "notebook":
            return f"your cell was stopped when the notebook's {total_timeout} s time limit was reached"
        return f"your cell ran past the {cell_timeout} s time limit" + \
            (" and did not stop when interrupted" if "not stop" in error["evalue"] else "")
    if error["ename"] in ("TimeLimit", "DeadKernel", "KernelStart", "ScratchQuota"):
        return error["evalue"]
    return f"your cell raised {error['ename']}: {error['evalue']}"


def _later(label: str, index: int, died_at: int | None) -> str | None:
    if died_at is not None and index > died_at:
        return f"the kernel died in cell {died_at}, before this exercise's cell {index} ran" if died_at >= 0 \
            else "the kernel did not start"
    return None


def _records(folder: Path) -> Path | None:
    """A copy, in the grading's own ``folder``, of the committed records an exercise reads
    (:func:`attnconv.records.results_dir`, resolved by the grader; the record files only, as the Gradescope zip
    carries them), readable by the kernel's user whatever the modes of the originals: a record written with mode
    600 (by a training run, or in a checkout cloned under ``umask 077``) is closed to ``nobody``."""
    try:
        source = results_dir().resolve()
    except FileNotFoundError:
        return None
    copy = folder / "records"
    copy.mkdir(mode=0o755)
    copy.chmod(0o755)
    for path in sorted(source.rglob("*")):
        if path.is_file() and not path.is_symlink() and path.suffix in RECORD_SUFFIXES:
            target = copy / path.relative_to(source)
            for parent in reversed(target.relative_to(copy).parents[:-1]):
                if not (copy / parent).is_dir():
                    (copy / parent).mkdir()
                    (copy / parent).chmod(0o755)
            shutil.copyfile(path, target)
            target.chmod(0o644)
    return copy


def grade_notebook(path: str | Path, chapter: str | None = None, cell_timeout: int = 120,
                   total_timeout: int = 1800, checks: tuple[str, ...] = (), seed: int | None = None,
                   isolation: Isolation | None = None, memory_mb: int = 8192,
                   hide: tuple[Path, ...] = (), scratch_mb: int = SCRATCH_MB) -> GradeReport:
    """Execute ``path`` isolated and grade the exercises of ``chapter`` (default: the file's stem, ``NN_name``).

    ``checks`` names extra modules that register exercises of their own (a course's additions); the grader and the
    checker import them, and no process that runs the student's code can read them (the kernel and the sandbox
    import ``attnconv`` alone; a private function exercise's hidden inputs are built by the checker and reach the
    sandbox as data). ``total_timeout`` is the submission's one wall-clock budget: the kernel, the sandbox's reruns
    and the checker all stop when it is spent. ``seed`` fixes the hidden inputs (default: a fresh random seed).
    ``hide``: folders the student's code must not see (the other submissions, the sheets). ``scratch_mb``: the
    size limit of the submission's scratch folder (``attnconv.course.isolation.ScratchQuota``); a submission
    that fills it is stopped, and the report says so.

    Raises:
        ValueError: the file is not a notebook, the chapter has no graded exercises, or ``scratch_mb`` is not a
            positive number of MiB.
    """
    path = Path(path)
    if not isinstance(scratch_mb, int) or scratch_mb < 1:
        raise ValueError(f"scratch_mb must be a positive number of MiB, got {scratch_mb!r}")
    for module in checks:
        importlib.import_module(module)
    library = Library.capture(tuple(checks))  # the first capture in this process is the pristine one
    chapter = resolve_chapter(chapter or path.stem)
    isolation = isolation or detect()
    graded = [e for e in exercises_for(chapter) if e.graded]
    private = tuple(checks)
    for e in graded:  # fails before any student code runs when a private probe would need the checks
        if e.sandboxed and is_private(e):
            portable_probe(e, private)
    nb = read_notebook(path)
    report = GradeReport(str(path), chapter, isolation=isolation.summary())
    report.problems += isolation.missing()
    cells, problems = answer_cells(nb, graded)
    report.problems += problems
    capture_after: dict[int, list[Exercise]] = {}
    for e in graded:
        if e.label in cells and not e.sandboxed:
            capture_after.setdefault(cells[e.label], []).append(e)
    subreaper = become_subreaper()
    before = set(descendants(os.getpid()))
    with _LOCK:
        _ACTIVE[0] += 1
    start = time.monotonic()
    deadline = start + total_timeout  # one budget: kernel, sandbox and checker together
    kernel_budget = max(1, total_timeout - min(total_timeout // 4, 300))  # the rest is kept for checking
    folder = Path(tempfile.mkdtemp(prefix="attnconv-grade-"))
    checker = quota = None
    # memory (tmpfs pages included) and processes of the kernel and the sandbox together, where the machine allows
    cgroup, why = Cgroup.create(memory_mb + Limits.tmp_mb + scratch_mb, Limits.processes)
    if cgroup is None:
        report.problems.append(f"not isolated: no cgroup ({why}); memory and processes are limited per process")
    try:
        folder.chmod(0o711)
        lib = Library.capture(()).write(folder / "library")  # attnconv only: the checks stay with the checker
        scratch = folder / "scratch"
        quota = ScratchQuota.make(scratch, scratch_mb)  # a tmpfs of that size where the grader may mount one
        isolation.prepare(scratch)
        cwd = scratch / "notebook"  # the notebook's folder, so that an older edition's ../results resolves too
        cwd.mkdir()
        os.chown(cwd, *(os.stat(scratch)[4:6]))
        records = _records(folder)  # the grader's own records, wherever the submission sits
        if records is not None:
            (scratch / "results").symlink_to(records)
        hidden = tuple(hide) + (path.resolve().parent,)
        checker = Checker(private, exercise_timeout=max(60, cell_timeout), isolation=isolation, folder=folder,
                          hide=hidden + (scratch,), deadline=deadline)
        secret = hidden + (checker.library,) + tuple(private_paths(private))
        extra = {"ATTNCONV_GRADING": "1"} | ({RESULTS_ENV_VAR: str(records)} if records is not None else {})
        run = run_notebook(nb, capture_after, secrets.token_hex(8), isolation, scratch, cwd, lib,
                           python_path(lib, private), Limits(memory_mb=memory_mb, cpu_s=total_timeout + 60,
                                                             file_mb=min(Limits.file_mb, scratch_mb)),
                           cell_timeout, kernel_budget, hide=secret, extra_env=extra, cgroup=cgroup, quota=quota)
        report.cell_errors = [{"cell": i, "ename": e["ename"], "evalue": e["evalue"]}
                              for i, e in sorted(run.errors.items())]
        report.problems += run.dropped
        report.written, problems = written_answers(nb, chapter)
        report.problems += problems

        seed = secrets.randbits(48) if seed is None else seed
        reasons = {e.label: _later(e.label, cells[e.label], run.died_at) or _own_error(
            e.label, run.errors.get(cells[e.label]), cell_timeout, kernel_budget) for e in graded if e.label in cells}
        sandboxed = [e for e in graded if e.sandboxed and e.label in cells and reasons[e.label] is None]
        seeds = {e.label: seed + i for i, e in enumerate(graded)}
        given = {e.label: checker.inputs(e.label, seeds[e.label]) for e in sandboxed if is_private(e)}

        def rerun(e: Exercise) -> tuple[dict | None, str]:
            left = deadline - time.monotonic()
            if left < 1:
                return None, "the submission's time budget ran out before your cell ran on hidden inputs"
            if e.label in given and given[e.label][0] is None:
                return None, given[e.label][1]
            return run_function_exercise(e.label, nb.cells[cells[e.label]].source, seeds[e.label],
                                         min(cell_timeout + 60, left), private, folder=folder, isolation=isolation,
                                         inputs=given.get(e.label, (None,))[0],
                                         probe=portable_probe(e, private) if e.label in given else None,
                                         hide=secret, cgroup=cgroup, quota=quota)

        with ThreadPoolExecutor(max_workers=2) as pool:
            runs = {e.label: pool.submit(rerun, e) for e in sandboxed}
            answers = {label: future.result() for label, future in runs.items()}
        for exercise in graded:
            report.exercises.append(_grade_one(exercise, cells, reasons, run.captured, answers, seeds, checker))
    finally:
        if checker is not None:
            checker.close()
        if cgroup is not None:
            cgroup.remove()
        with _LOCK:
            alone = _ACTIVE[0] == 1
            killed = kill_tree(before) if subreaper and alone else 0  # never another grading's processes
            _ACTIVE[0] -= 1
        if quota is not None:
            quota.close()
        shutil.rmtree(folder, ignore_errors=True)
    if quota is not None and quota.hit:
        report.problems.append(quota.reason())
    if killed:
        report.problems.append(f"{killed} process(es) the submission started were still running and were killed")
    report.seconds = time.monotonic() - start
    return report


def _grade_one(exercise: Exercise, cells: dict, reasons: dict, captured: dict, answers: dict, seeds: dict,
               checker: Checker) -> ExerciseGrade:
    def grade(results: list[CheckResult]) -> ExerciseGrade:
        points, passed, message = score_results(exercise, results)
        parts = [{"part": r.part, "passed": r.passed, "message": r.message} for r in results]
        return ExerciseGrade(exercise.label, exercise.kind, passed, points, exercise.points, message, parts)

    if exercise.label not in cells:
        return grade([CheckResult(False, f"no cell calls verify(\"{exercise.label}\", ...): expected the exercise's "
                                         "cell, received none (was it deleted?)")])
    if reasons.get(exercise.label):
        return grade([CheckResult(False, reasons[exercise.label])])
    if exercise.sandboxed:
        data, why = answers.get(exercise.label, (None, "the hidden check did not run"))
        if data is None:
            return grade([CheckResult(False, why)])
        text = data["json"]
    elif exercise.label in captured:
        text = captured[exercise.label]
    else:
        return grade([CheckResult(False, "your answers could not be read back after the cell ran")])
    return grade(checker.check(exercise.label, text, seeds[exercise.label]))


# ----- a folder of submissions -------------------------------------------------------------------------------------

def _failed(path: Path, chapter: str, reason: str) -> GradeReport:
    report = GradeReport(str(path), chapter, problems=[reason])
    for e in exercises_for(chapter):
        if e.graded:
            report.exercises.append(ExerciseGrade(e.label, e.kind, False, 0, e.points, reason))
    return report


def _grade_in_worker(path: Path, chapter: str, cell_timeout: int, total_timeout: int, checks: tuple[str, ...],
                     hide: tuple[Path, ...], memory_mb: int, isolation_mode: str,
                     scratch_mb: int = SCRATCH_MB) -> GradeReport:
    """Grade ``path`` in a fresh grader process that imports a pristine copy of the library."""
    folder = Path(tempfile.mkdtemp(prefix="attnconv-worker-"))
    try:
        lib = Library.capture(checks).write(folder / "library")
        argv = [sys.executable, "-m", "attnconv.course.grade", str(path), "--chapter", chapter, "--worker",
                "--cell-timeout", str(cell_timeout), "--total-timeout", str(total_timeout),
                "--memory-mb", str(memory_mb), "--isolation", isolation_mode, "--scratch-mb", str(scratch_mb)]
        for module in checks:
            argv += ["--checks", module]
        for folder_hidden in hide:
            argv += ["--hide", str(folder_hidden)]
        env = dict(os.environ, PYTHONPATH=python_path(lib))
        worker = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                                  cwd=folder, start_new_session=True)
        try:
            stdout, stderr = worker.communicate(timeout=total_timeout + 180)  # the budget, and starting and ending
        except subprocess.TimeoutExpired:
            for pid in [*descendants(worker.pid), worker.pid]:  # the worker's kernels first, then the worker
                try:
                    os.kill(pid, 9)
                except OSError:
                    pass
            worker.communicate()
            return _failed(path, chapter, "grading this notebook ran past the grader's own time limit")
        lines = [line for line in stdout.splitlines() if line.startswith(WORKER_MARKER)]
        if not lines:
            tail = (stderr.strip().splitlines() or [exit_status(worker.returncode)])[-1]
            return _failed(path, chapter, f"this notebook could not be graded: {tail[:300]}")
        return GradeReport.from_json(lines[-1][len(WORKER_MARKER):])
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def grade_folder(folder: Path, chapter: str, jobs: int | None = None, cell_timeout: int = 120,
                 total_timeout: int = 1800, checks: tuple[str, ...] = (), hide: tuple[Path, ...] = (),
                 memory_mb: int = 8192, isolation: str = "auto", scratch_mb: int = SCRATCH_MB) -> list[GradeReport]:
    """Grade every ``*.ipynb`` in ``folder``, ``jobs`` at a time (default: half the CPU cores), each in a fresh
    grader process. A notebook that cannot be read or graded gets a report with the reason; the rest go on."""
    paths = sorted(p for p in Path(folder).glob("*.ipynb") if not p.name.startswith("."))
    if not paths:
        raise ValueError(f"no .ipynb submissions in {folder}")
    for module in checks:
        importlib.import_module(module)
    Library.capture(tuple(checks))  # before any submission runs
    jobs = jobs or max(1, (os.cpu_count() or 1) // 2)
    hide = tuple(hide) + (Path(folder).resolve(),)
    with ThreadPoolExecutor(max_workers=min(jobs, len(paths))) as pool:
        return list(pool.map(lambda p: _grade_in_worker(p, chapter, cell_timeout, total_timeout, tuple(checks),
                                                        hide, memory_mb, isolation, scratch_mb), paths))


def _worker(args) -> int:
    try:
        report = grade_notebook(args.submission, args.chapter, args.cell_timeout, args.total_timeout,
                                tuple(args.checks), isolation=detect(args.isolation), memory_mb=args.memory_mb,
                                hide=tuple(args.hide), scratch_mb=args.scratch_mb)
    except ValueError as err:
        report = _failed(args.submission, resolve_chapter(args.chapter), str(err))
    print(WORKER_MARKER + report.to_json().replace("\n", " "), flush=True)
    return 0


def refuse(isolation: Isolation, mode: str, checks: tuple[str, ...] = ()) -> str | None:
    """Why the grader must not start, in one line, or ``None``: untrusted code without bubblewrap needs the
    instructor's explicit ``--isolation none``, and a sandbox that cannot start a kernel grades nobody."""
    if mode == "auto" and isolation.bwrap is None:
        return ("bubblewrap (bwrap) is not available, so a student's code could reach the grader and the other "
                "submissions. Install it (Debian/Ubuntu: apt-get install bubblewrap; in Docker it also needs user "
                "namespaces), or pass --isolation none to accept weaker isolation (one submission at a time)")
    from .preflight import preflight

    return preflight(isolation, checks)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("submission", type=Path, help="a notebook (.ipynb), or a folder of them")
    parser.add_argument("--chapter", help="NN or NN_name of the chapter (default: the file name)")
    parser.add_argument("--report", type=Path, help="where to write the JSON report of one notebook "
                                                    "(default: SUBMISSION.grade.json)")
    parser.add_argument("--gradebook", type=Path, help="CSV gradebook to write (one row per notebook)")
    parser.add_argument("--written", type=Path, help="folder of written-answer sheets (default: next to the "
                                                     "gradebook, in written/)")
    parser.add_argument("--jobs", type=int, help="notebooks graded at once (default: half the CPU cores)")
    parser.add_argument("--cell-timeout", type=int, default=120, help="seconds per cell (default 120)")
    parser.add_argument("--total-timeout", type=int, default=1800, help="seconds for the whole notebook")
    parser.add_argument("--memory-mb", type=int, default=8192, help="address space of the kernel (default 8192)")
    parser.add_argument("--scratch-mb", type=int, default=SCRATCH_MB,
                        help=f"size limit of a submission's scratch folder in MiB (default {SCRATCH_MB})")
    parser.add_argument("--isolation", choices=("auto", "none"), default="auto",
                        help="auto: bubblewrap and an unprivileged user (the default; refuses to grade without "
                             "bubblewrap); none: limits only, accepted explicitly, one submission at a time")
    parser.add_argument("--checks", action="append", default=[], help="a module registering extra exercises")
    parser.add_argument("--hide", action="append", type=Path, default=[], help=argparse.SUPPRESS)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.scratch_mb < 1:
        parser.error(f"--scratch-mb must be a positive number of MiB, got {args.scratch_mb}")
    if not args.submission.exists():
        parser.error(f"submission {args.submission} does not exist")
    for module in args.checks:
        importlib.import_module(module)
    if args.worker:
        return _worker(args)
    isolation = detect(args.isolation)
    print(isolation.summary(), file=sys.stderr)
    refusal = refuse(isolation, args.isolation, tuple(args.checks))
    if refusal:
        parser.exit(2, f"error: refusing to grade: {refusal}\n")
    if args.isolation == "none":
        args.jobs = 1  # nothing keeps two submissions apart: one at a time, every process killed in between
    if args.submission.is_dir():
        if not args.chapter:
            parser.error("grading a folder needs --chapter")
        gradebook = args.gradebook or args.submission / "grades.csv"
        written = args.written or gradebook.parent / "written"
        reports = grade_folder(args.submission, resolve_chapter(args.chapter), args.jobs, args.cell_timeout,
                               args.total_timeout, tuple(args.checks),
                               hide=(written.resolve(), gradebook.resolve()),
                               memory_mb=args.memory_mb, isolation=args.isolation, scratch_mb=args.scratch_mb)
    else:
        try:
            reports = [grade_notebook(args.submission, args.chapter, args.cell_timeout, args.total_timeout,
                                      tuple(args.checks), isolation=isolation, memory_mb=args.memory_mb,
                                      scratch_mb=args.scratch_mb)]
        except ValueError as err:
            parser.exit(2, f"error: {err}\n")
        target = args.report or args.submission.with_suffix(".grade.json")
        target.write_text(reports[0].to_json() + "\n")
        print(reports[0].table())
        print(f"report written to {target}")
    if args.gradebook or args.submission.is_dir():
        gradebook = args.gradebook or args.submission / "grades.csv"
        written = args.written or gradebook.parent / "written"
        if any(e.written for e in exercises_for(reports[0].chapter)):
            for report in reports:
                write_sheet(report, written)
            print(f"written answers in {written}/ (fill in each points: line, then run again)")
        write_gradebook(reports, gradebook, written)
        for report in reports:
            print(f"{visible(report.student):24s} {report.score}/{report.max_score}  ({report.seconds:.0f} s)"
                  + "".join(f"\n    {plain(p)}" for p in report.problems if not p.startswith("not isolated")))
        print(f"gradebook written to {gradebook}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
