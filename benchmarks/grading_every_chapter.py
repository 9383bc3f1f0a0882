"""Every chapter's worked edition, graded in the three situations the grader meets, two ways each, with the
grader's Python a virtual environment under /tmp.

    python benchmarks/grading_every_chapter.py [--chapters 01,02] [--situations full,mapped,none]
        [--ways zip,folder] [--out results/grading-situations]
    python benchmarks/grading_every_chapter.py --table [--note TEXT]   # README.md again from grading.json

Run it as root (the zip's ``run_autograder`` runs as root on Gradescope, and arranging the situations needs
``unshare`` and ``setpriv``), one grading at a time, under ``nice``. Each grading measured is written into
``grading.json`` at once, replacing the row of the same chapter, situation and way (so one cell of the table can be
measured again on its own), and ``README.md`` is rewritten from it.

**The ways.**

- **zip**: the chapter's Gradescope zip (:func:`attnconv.course.gradescope.build_autograder`, default limits) is
  unpacked into a folder laid out as Gradescope's (``source``, ``submission``, ``results``; the helpers of
  ``tests/course/test_gradescope_situations.py``), the worked edition goes into ``submission``, and
  ``source/run_autograder`` runs as root with the zip's own copy of the library (no ``PYTHONPATH`` of ours, no
  data set: the zip's setup installs none). The score is ``results.json``'s.
- **folder**: ``python -m attnconv.course.grade NN.ipynb --report ...``, the command line an instructor runs, on a
  copy of the worked edition in a folder of its own outside the repository, with the CLI's default limits. As the
  course grades it (``tests/course/test_editions.py``), chapter 07 is graded with its corpora when
  ``ATTNCONV_DATA`` is set, the other chapters without data.

**The situations** (as ``tests/course/test_situations.py`` and ``test_gradescope_situations.py`` arrange them):

- **full**: a Python that the user ``nobody`` can run (Gradescope's image), arranged in a private mount namespace
  (``unshare -m``) in which every folder on the way to it that ``nobody`` could not enter is an open copy of
  itself; the kernel runs as ``nobody`` for real ("student code runs isolated");
- **mapped**: a Python that only root can run (a script of mode 700 in the environment): bubblewrap alone maps the
  kernel to ``nobody`` inside its user namespace;
- **none**: a ``PATH`` without ``bwrap`` and ``--isolation none`` (for the zip: built with ``--isolation none``).

**The grader's Python under /tmp.** ``python -m venv --without-pip`` of this Python in a fresh folder under
``/tmp``, with a ``.pth`` file that adds this environment's ``site-packages``. It runs the same interpreter
binary and standard library, and imports the very same packages (the environment's own ``site-packages``, not the
base Python's, which ``--system-site-packages`` would give); only ``sys.prefix`` is under ``/tmp``, which is what
the sandbox, whose ``/tmp`` is private and empty, must bind back. In **mapped** its ``python`` is the mode-700
script. Each row records which situation the grader itself reported (``isolation_seen``), so a situation that was
not really arranged shows.

**What is measured**, per grading: score and maximum, wall time, and memory: ``peak_mb``, the most resident memory
the grading's whole process tree held at once (the grader, its kernels, sandboxes and checker; the sum of
``VmRSS`` over the tree, read from ``/proc`` every 0.5 s, so pages shared between processes count once per
process), and ``maxrss_mb``, the largest resident set of any one process of the tree (``getrusage`` of the
grader, reaped with ``wait4``: Linux gives the maximum over the process and its reaped descendants, not a sum).
The load average at the start and end of each grading is kept: a starved kernel hits the cell time limits.
"""

from __future__ import annotations

import argparse
import datetime
import html
import json
import os
import platform
import re
import shutil
import signal
import site
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "course"))

from attnconv.course.execute import descendants  # noqa: E402
from attnconv.course.exercises import EXERCISES  # noqa: E402
from test_gradescope_situations import _env, _python_only_root_runs, _unpack  # noqa: E402
from test_situations import _closed_folders, _opened_namespace  # noqa: E402

SITUATIONS = ("full", "mapped", "none")
WAYS = ("zip", "folder")
NOBODY = 65534
GRADING_TIMEOUT = 3600  # seconds; the grader's own budget (1800 s by default) ends every grading well before


def chapters() -> list[str]:
    """The course's chapters: every chapter with graded exercises."""
    return sorted({e.chapter for e in EXERCISES.values()})


# ----- the situations ------------------------------------------------------------------------------------------

def grader_venv(folder: Path) -> str:
    """A virtual environment under ``folder`` that runs this Python with this environment's packages; its python."""
    venv = folder / "grader-venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=300)
    purelib = Path(sysconfig.get_path("purelib", vars={"base": str(venv), "platbase": str(venv)}))
    dirs = [p for p in site.getsitepackages() if Path(p).is_dir()]
    (purelib / "zz_grader_packages.pth").write_text("".join(f"import site; site.addsitedir({d!r})\n" for d in dirs))
    return str(venv / "bin" / "python")


def path_without_bwrap(folder: Path) -> str:
    """A folder of the tools the grader and ``run_autograder`` use, without ``bwrap``: a ``PATH`` of its own."""
    bin_dir = folder / "bin-without-bwrap"
    bin_dir.mkdir(exist_ok=True)
    for tool in ("setpriv", "unshare", "sh", "env", "bash", "id", "mount", "umount"):
        if shutil.which(tool) and not (bin_dir / tool).exists():
            (bin_dir / tool).symlink_to(shutil.which(tool))
    return str(bin_dir)


def arrange(situation: str, base: Path) -> dict | str:
    """``{"python", "wrap", "env"}`` for a situation, or why it cannot be arranged on this machine."""
    if os.geteuid() != 0 or not shutil.which("unshare") or not shutil.which("setpriv"):
        return "needs root, unshare and setpriv"
    folder = base / situation
    folder.mkdir()
    if situation == "full":
        if not shutil.which("bwrap"):
            return "needs bubblewrap"
        python = grader_venv(folder)
        needed = [Path(python), Path(python).parent.parent, Path(sys.executable), Path(sys.prefix),
                  Path(sys.base_prefix), base, ROOT]
        needed += [Path(p) for p in sys.path if p and Path(p).is_dir()]
        wrap = _opened_namespace(_closed_folders(needed))
        probe = subprocess.run([*wrap, "setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", python,
                                "-c", "import torch, attnconv"], capture_output=True, text=True, timeout=300)
        if probe.returncode:
            return f"cannot arrange a Python that nobody can run: {probe.stderr.strip()[-300:]}"
        return {"python": python, "wrap": wrap, "env": {}}
    if situation == "mapped":
        if not shutil.which("bwrap"):
            return "needs bubblewrap"
        python = _python_only_root_runs(folder)
        nobody = subprocess.run(["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", python, "-c",
                                 "pass"], capture_output=True, timeout=120)
        if nobody.returncode == 0:
            return "the root-only Python ran as nobody"
        return {"python": python, "wrap": [], "env": {}}
    if situation == "none":
        return {"python": grader_venv(folder), "wrap": [], "env": {"PATH": path_without_bwrap(folder)}}
    raise ValueError(f"situation must be one of {', '.join(SITUATIONS)}, got {situation!r}")


def isolation_seen(text: str) -> str:
    """The situation the grader reported, from its report or its output."""
    if "it appears as nobody" in text:
        return "mapped"
    if "not isolated: the filesystem" in text:
        return "none"
    if "not isolated: runs as an unprivileged user" in text:
        return "other"
    return "full"  # the kernel is nobody for real (a missing cgroup is a limit of its own, not the situation)


# ----- one grading, measured -----------------------------------------------------------------------------------

def _rss_kb(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def measured(cmd: list[str], env: dict, cwd: Path, timeout: float = GRADING_TIMEOUT) -> dict:
    """Run ``cmd``; its exit status, output, wall time and memory (see the module's docstring)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.monotonic()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, env=env, cwd=cwd, start_new_session=True)
        peak_kb, status, usage = 0, None, None
        while status is None:
            pid, code, rusage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                status, usage = code, rusage
                break
            tree = [proc.pid, *descendants(proc.pid)]
            peak_kb = max(peak_kb, sum(_rss_kb(p) for p in tree))
            if time.monotonic() - start > timeout:
                for p in reversed(tree):  # the kernels run in sessions of their own
                    try:
                        os.kill(p, signal.SIGKILL)
                    except OSError:
                        pass
            time.sleep(0.5)
        wall = time.monotonic() - start
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait for it again
        out.seek(0)
        err.seek(0)
        return {"returncode": proc.returncode, "stdout": out.read().decode(errors="replace"),
                "stderr": err.read().decode(errors="replace"), "wall_s": round(wall, 1),
                "peak_mb": round(peak_kb / 1024), "maxrss_mb": round(usage.ru_maxrss / 1024)}


def grade_zip(chapter: str, arranged: dict, where: Path, zips: dict) -> dict:
    mode = "none" if arranged["env"].get("PATH") else "auto"
    root = _unpack(zips[mode], where, ROOT / "notebooks" / f"{chapter}.ipynb")
    env = _env(AUTOGRADER_ROOT=str(root), AUTOGRADER_PYTHON=arranged["python"], **arranged["env"])
    run = measured([*arranged["wrap"], str(root / "source" / "run_autograder")], env, root)
    results = root / "results" / "results.json"
    row = {k: run[k] for k in ("returncode", "wall_s", "peak_mb", "maxrss_mb")} | {"data": False}
    row["isolation_seen"] = isolation_seen(run["stdout"] + run["stderr"])
    row["isolation_lines"] = [line[len("problem: "):][:300] for line in run["stdout"].splitlines()
                              if line.startswith("problem: not isolated")]
    if results.exists():
        data = json.loads(results.read_text())
        row |= {"score": data["score"], "max_score": sum(t["max_score"] for t in data["tests"]),
                "lost": [{"exercise": t["name"], "message": t["output"][:300]} for t in data["tests"]
                         if t["score"] < t["max_score"]]}
        raised = data.get("output", "").split("Cells that raised:", 1)[1:]
        row["cell_errors"] = [html.unescape(line.strip())[:240] for line in
                              (raised[0].split("Problems:", 1)[0] if raised else "").splitlines() if line.strip()]
        if row["score"] < row["max_score"] or not data["tests"]:
            row["output"] = data.get("output", "")[:600]
    else:
        row["stderr"] = run["stderr"][-600:]
    return row


def grade_folder(chapter: str, arranged: dict, where: Path, data: str | None) -> dict:
    submissions = where / "submissions"
    submissions.mkdir(parents=True)
    notebook = submissions / f"{chapter}.ipynb"
    shutil.copyfile(ROOT / "notebooks" / notebook.name, notebook)
    report = where / f"{chapter}.grade.json"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "ATTNCONV_DATA", "ATTNCONV_RESULTS")}
    env |= {"PYTHONPATH": str(ROOT / "src"), "PYTHONDONTWRITEBYTECODE": "1", **arranged["env"]}
    if data and chapter.startswith("07_"):
        env["ATTNCONV_DATA"] = data
    isolation = ["--isolation", "none"] if arranged["env"].get("PATH") else []
    run = measured([*arranged["wrap"], arranged["python"], "-m", "attnconv.course.grade", str(notebook), "--report",
                    str(report), *isolation], env, where)
    row = {k: run[k] for k in ("returncode", "wall_s", "peak_mb", "maxrss_mb")}
    row["data"] = "ATTNCONV_DATA" in env
    if report.exists():
        data_ = json.loads(report.read_text())
        said = [p for p in data_.get("problems", []) if p.startswith("not isolated")] or [data_.get("isolation", "")]
        row["isolation_seen"] = isolation_seen(" ".join(said))
        row["isolation_lines"] = [line[:300] for line in said]
        row |= {"score": data_["score"], "max_score": data_["max_score"],
                "lost": [{"exercise": e["label"], "message": e["message"][:300]} for e in data_["exercises"]
                         if e["points"] < e["max_points"]],
                "cell_errors": [f"cell {e['cell']}: {e['ename']}: {e['evalue'][:200]}" for e in data_["cell_errors"]]}
    else:
        row["isolation_seen"] = isolation_seen(run["stderr"])
        row["stderr"] = run["stderr"][-600:]
    return row


# ----- the record ----------------------------------------------------------------------------------------------

_ABSOLUTE = re.compile(r"(?<![\w$~.<>])/(?:home|root|work|tmp|Users|mnt|srv|data|opt|var)/[^\s'\",;)]*")


def scrubbed(value, names: dict[str, str]):
    """``value`` with every folder of this machine replaced by a name a reader can read."""
    if isinstance(value, str):
        for path, name in sorted(names.items(), key=lambda item: -len(item[0])):
            value = value.replace(path, name)
        return _ABSOLUTE.sub("<path>", value)
    if isinstance(value, dict):
        return {k: scrubbed(v, names) for k, v in value.items()}
    if isinstance(value, list):
        return [scrubbed(v, names) for v in value]
    return value


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True).stdout.strip()


def machine() -> dict:
    import torch

    bwrap = subprocess.run(["bwrap", "--version"], capture_output=True, text=True).stdout.strip() \
        if shutil.which("bwrap") else "none"
    return {"machine": f"{platform.machine()}, {os.cpu_count()} cores, Linux {platform.release()}",
            "python": platform.python_version(), "torch": torch.__version__, "bubblewrap": bwrap,
            "root": os.geteuid() == 0, "niceness": os.nice(0)}


def cell(row: dict | None) -> str:
    if row is None:
        return "not run"
    if "not_run" in row:
        return f"not run: {row['not_run']}"
    if "score" not in row:
        return f"no score (exit {row['returncode']}); {row['wall_s']:.0f} s"
    seen = "" if row["isolation_seen"] == row["situation"] else f" (seen: {row['isolation_seen']})"
    errors = f"; {len(row['cell_errors'])} cells raised" if row.get("cell_errors") else ""
    return f"{row['score']}/{row['max_score']}; {row['wall_s']:.0f} s; {row['peak_mb']} MB{seen}{errors}"


def write_readme(out: Path, record: dict) -> str:
    rows = {(r["chapter"], r["situation"], r["way"]): r for r in record["rows"]}
    names = [c for c in chapters() if any(k[0] == c for k in rows)]
    columns = [(s, w) for s in SITUATIONS for w in WAYS]
    table = ["| chapter | " + " | ".join(f"{s}, {w}" for s, w in columns) + " |", "|---" * (len(columns) + 1) + "|"]
    for name in names:
        table.append(f"| {name} | " + " | ".join(cell(rows.get((name, s, w))) for s, w in columns) + " |")
    full = [r for r in record["rows"] if "score" in r]
    lost = [r for r in full if r["score"] < r["max_score"]]
    runs = sorted({(r["commit"], r["date"][:10]) for r in record["rows"] if "commit" in r})
    meta = record["meta"]
    lines = [
        "# Every chapter's worked edition, graded in each situation, from a folder and through the Gradescope zip",
        "",
        f"- Machine: {meta['machine']}; Python {meta['python']}, torch {meta['torch']}, {meta['bubblewrap']}; grader "
        f"{'root' if meta['root'] else 'not root'}, niceness {meta['niceness']}.",
        f"- Commits measured: {', '.join(c for c, _ in runs)} (each row of `grading.json` names its own, with its "
        "date and the load average at its start and end).",
        "- The grader's Python: a virtual environment under /tmp (`venv --without-pip` of the repository's Python, "
        "with a `.pth` that adds the repository environment's `site-packages`: the same interpreter, standard "
        "library and packages; in **mapped** its `python` is a script only root may run).",
        "- Limits: the defaults an instructor gets (120 s per cell, 1,800 s per notebook, the zip's and the "
        "command line's). Chapter 07 from a folder is graded with its corpora when `ATTNCONV_DATA` is set (as the "
        "course grades it); every other grading has no data set, as on Gradescope.",
        "",
        "Each cell: score; wall time; peak memory of the grading's process tree (the sum of resident memory over "
        "the grader, its kernels, sandboxes and checker, read every 0.5 s). `grading.json` also keeps the largest "
        "single process (`maxrss_mb`), what each exercise that lost marks said, and which situation the grader "
        "itself reported (shown in a cell only where it differs). `python benchmarks/grading_every_chapter.py` "
        "repeats it (see its docstring).",
        "",
        *table,
        "",
        f"{len(full) - len(lost)} of {len(full)} gradings earned full marks; in "
        f"{sum(1 for r in full if r.get('cell_errors'))} a cell of the worked edition raised "
        "(`cell_errors` in `grading.json`)."
        + (" Lost marks: " + "; ".join(f"{r['chapter']} {r['situation']} {r['way']}: "
                                       + ", ".join(f"{x['exercise']} ({x['message'][:120]})" for x in r['lost'])
                                       for r in lost) if lost else ""),
    ]
    if record.get("notes"):
        lines += ["", "Notes:", *[f"- {note}" for note in record["notes"]]]
    text = "\n".join(lines) + "\n"
    (out / "README.md").write_text(text)
    return text


def save(out: Path, record: dict, row: dict) -> None:
    key = (row["chapter"], row["situation"], row["way"])
    record["rows"] = [r for r in record["rows"] if (r["chapter"], r["situation"], r["way"]) != key] + [row]
    order = {c: i for i, c in enumerate(chapters())}
    record["rows"].sort(key=lambda r: (order.get(r["chapter"], 99), SITUATIONS.index(r["situation"]),
                                       WAYS.index(r["way"])))
    tmp = out / ".grading.json.tmp"
    tmp.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n")
    tmp.replace(out / "grading.json")
    write_readme(out, record)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chapters", help="NN,NN,... (default: every chapter of the course)")
    parser.add_argument("--situations", default=",".join(SITUATIONS))
    parser.add_argument("--ways", default=",".join(WAYS))
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "grading-situations")
    parser.add_argument("--table", action="store_true", help="only write README.md from grading.json")
    parser.add_argument("--note", action="append", default=[],
                        help="with --table: a sentence kept in grading.json and listed under the table")
    args = parser.parse_args(argv)
    from attnconv.course.gradescope import build_autograder
    from attnconv.course.report import resolve_chapter

    try:
        names = [resolve_chapter(c) for c in args.chapters.split(",")] if args.chapters else chapters()
    except ValueError as err:
        parser.error(f"--chapters: {err}")
    situations, ways = args.situations.split(","), args.ways.split(",")
    for given, allowed, flag in ((situations, SITUATIONS, "--situations"), (ways, WAYS, "--ways")):
        if not set(given) <= set(allowed):
            parser.error(f"{flag} takes {', '.join(allowed)}, got {','.join(given)}")
    args.out.mkdir(parents=True, exist_ok=True)
    target = args.out / "grading.json"
    record = json.loads(target.read_text()) if target.exists() else {"meta": {}, "rows": []}
    if args.table:
        record["notes"] = record.get("notes", []) + [scrubbed(note, {str(ROOT): "<repo>"}) for note in args.note]
        if args.note:
            (args.out / "grading.json").write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n")
        print(write_readme(args.out, record))
        return 0
    record["meta"] = machine()
    data = os.environ.get("ATTNCONV_DATA") or None
    base = Path(tempfile.mkdtemp(prefix="attnconv-every-chapter-", dir="/tmp"))
    base.chmod(0o755)  # the folders of the full situation are opened to nobody; nothing secret is in them
    names_of = {str(base): "$TMPDIR/grading", str(ROOT): "<repo>", str(Path(sys.base_prefix)): "<python>",
                **({data: "$ATTNCONV_DATA"} if data else {})}
    commit = _git("rev-parse", "--short", "HEAD")
    dirty = _git("status", "--porcelain", "--", "src/attnconv")
    try:
        arranged = {s: arrange(s, base) for s in situations}
        for name in names:
            zips = {}
            if "zip" in ways:
                for mode in ("auto", "none"):
                    zips[mode] = build_autograder(name, base / "zips" / f"{name}-{mode}.zip", isolation=mode)
            for situation in situations:
                for way in ways:
                    row = {"chapter": name, "situation": situation, "way": way, "commit": commit,
                           "library_changes_uncommitted": bool(dirty),
                           "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
                           "load_start": round(os.getloadavg()[0], 1)}
                    setup = arranged[situation]
                    if isinstance(setup, str):
                        row["not_run"] = setup
                    else:
                        where = base / f"{way}-{situation}-{name}"
                        row |= grade_zip(name, setup, where, zips) if way == "zip" else \
                            grade_folder(name, setup, where, data)
                        shutil.rmtree(where, ignore_errors=True)
                    row["load_end"] = round(os.getloadavg()[0], 1)
                    row = scrubbed(row, names_of)
                    save(args.out, record, row)
                    print(f"{name} {situation:6s} {way:6s} {cell(row)}  (load {row['load_start']} -> "
                          f"{row['load_end']})", flush=True)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
