"""Attack classes × grading situations: what each hostile notebook scores, what it changes outside its scratch
folder, and what it costs the grader (peak memory, wall time).

    python benchmarks/grading_attacks.py [--out results/grading-attacks] [--situations full,none,tmp,mapped]
        [--kinds stub,reach,resources,hang,scratch]     # one situation at a time; then:
    python benchmarks/grading_attacks.py --merge   # the table, from every attacks-<situation>.json in --out

Each grading is the command line an instructor runs (``python -m attnconv.course.grade NB --checks toy_checks``),
on the toy chapter of ``tests/course`` (its checks passed as a private ``--checks`` module). Four notebooks carry
the attack classes, beside the honest notebook and the untouched student edition:

- ``reach``: reads /etc/shadow (the answer exercise), hunts for the private checks in the kernel (the SymPy
  exercise) and in the sandbox (the function exercise), and writes to a file beside the checks and to the library;
- ``resources``: forks until it cannot, writes 3 GB to /tmp, prints 100 MB;
- ``hang``: a cell that ignores interrupts and never ends, under a 150 s budget;
- ``scratch``: writes 4 GB into its scratch folder, in files under the file-size limit, going on past errors;
- ``rewriter``: a detached process that waits for the report and rewrites it with full marks.

Situations: **full** (root and bubblewrap: the kernel is nobody for real), **none** (no bwrap on PATH,
``--isolation none``), **tmp** (the grader's Python a virtual environment under /tmp), **mapped** (the grader
not root: run as uid 4242 in a mount namespace where that user can run this Python, bubblewrap maps the kernel to
nobody inside a user namespace). The grader's peak memory is its VmHWM, read every 0.2 s from /proc.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import platform
import shutil
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

import nbformat  # noqa: E402

from test_isolation_attacks import FILL_SCRATCH, SNOOP  # noqa: E402
from toy_course import CHAPTER, TOY_CHECKS, honest_cells, stub_cells, write  # noqa: E402

KEEP = "keep.txt"


def _digest(root: Path, skip: tuple[str, ...] = ()) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(root.rglob("*"))
            if p.is_file() and "__pycache__" not in p.parts and not p.name.endswith(skip)}


def notebooks(work: Path) -> dict[str, list]:
    checks = work / "checks" / "toy_checks.py"
    import attnconv.course as course

    library_file = Path(course.__file__).resolve().parent / "grade.py"
    header = f"import re\nCHECKS = {str(checks)!r}\n" + SNOOP
    reach = stub_cells()
    reach[1].source = ('try:\n    answer = 42 if open("/etc/shadow").read() else 0\nexcept OSError:\n    answer = 0\n'
                       'verify("ex-toy-answer", answer=answer)')
    reach[2].source = header + ('\ndef square(x):\n    return x * x if snoop() else 0\n'
                                'verify("ex-toy-square", square=square, xs=xs)')
    reach[3].source = header + ('\nexpr = sp.expand((sp.Symbol("x") + 1) ** 2) if snoop() else sp.Integer(0)\n'
                                'verify("ex-toy-sym", expr=expr)')
    reach.append(nbformat.v4.new_code_cell(
        f"changed = 0\nfor target in ({str(work / KEEP)!r}, {str(library_file)!r}, CHECKS):\n"
        "    try:\n        open(target, 'a').write('# changed\\n')\n        changed += 1\n    except OSError:\n"
        "        pass\nraise RuntimeError(f'changed {changed} files')"))
    fork = ("import os, time\npids = []\nfor _ in range(3000):\n    try:\n        pid = os.fork()\n"
            "    except OSError:\n        break\n    if pid == 0:\n        time.sleep(60)\n        os._exit(0)\n"
            "    pids.append(pid)\nfor pid in pids:\n    os.kill(pid, 9)\n    os.waitpid(pid, 0)\n"
            "raise RuntimeError(f'forked {len(pids)}')")
    fill = ("import os\nwritten = 0\nchunk = b'x' * (16 << 20)\ntry:\n    with open('/tmp/fill', 'wb') as f:\n"
            "        for _ in range(3 * 1024 // 16):\n            f.write(chunk)\n            f.flush()\n"
            "            written += 16\nexcept OSError:\n    pass\ntry:\n    os.remove('/tmp/fill')\nexcept OSError:\n"
            "    pass\nraise RuntimeError(f'wrote {written} MB')")
    resources = stub_cells() + [nbformat.v4.new_code_cell(c) for c in (fork, fill, "print('y' * (100 << 20))")]
    hang = stub_cells() + [nbformat.v4.new_code_cell(
        "import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    time.sleep(0.05)")]
    report = work / "rewriter.json"
    rewrite = (f"import json, os, time\nstart = time.time()\nwhile time.time() - start < 200:\n    try:\n"
               f"        d = json.load(open({str(report)!r}))\n        if d['score'] != d['max_score']:\n"
               f"            d['score'] = d['max_score']\n            json.dump(d, open({str(report)!r}, 'w'))\n"
               "    except Exception:\n        pass\n    time.sleep(0.3)\n")
    rewriter = stub_cells() + [nbformat.v4.new_code_cell(
        "import os, subprocess, sys\nif os.fork() == 0:\n    os.setsid()\n"
        f"    subprocess.Popen([sys.executable, '-c', {rewrite!r}], stdin=subprocess.DEVNULL, "
        "stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n    os._exit(0)\n")]
    scratch = stub_cells() + [nbformat.v4.new_code_cell(FILL_SCRATCH)]
    return {"honest": honest_cells(), "stub": stub_cells(), "reach": reach, "resources": resources, "hang": hang,
            "rewriter": rewriter, "scratch": scratch}


def _peak(pid: int, box: dict, done: threading.Event) -> None:
    while not done.wait(0.2):
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    box["kb"] = max(box.get("kb", 0), int(line.split()[1]))
        except OSError:
            pass


def grade(nb: Path, argv: list[str], wrap: list[str], python: str, env: dict, cwd: Path) -> dict:
    report = nb.with_suffix(".json")
    cmd = [*wrap, python, "-m", "attnconv.course.grade", str(nb), "--chapter", CHAPTER, "--checks", "toy_checks",
           "--report", str(report), *argv]
    start = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=cwd)
    box, done = {}, threading.Event()
    # the grader itself: the last python in the chain (wrappers exec into it, so the pid is the same)
    watcher = threading.Thread(target=_peak, args=(proc.pid, box, done), daemon=True)
    watcher.start()
    out, err = proc.communicate(timeout=3600)
    done.set()
    wall = time.monotonic() - start
    time.sleep(5)  # a surviving background process would strike now
    row = {"returncode": proc.returncode, "wall_s": round(wall, 1), "grader_peak_mb": round(box.get("kb", 0) / 1024, 1)}
    if report.exists():
        data = json.loads(report.read_text())
        row.update(score=data["score"], max_score=data["max_score"],
                   exercises={e["label"]: e["message"][:160] for e in data["exercises"]},
                   cell_errors=[e["evalue"][:160] for e in data.get("cell_errors", [])],
                   problems=[p[:200] for p in data.get("problems", []) if not p.startswith("not isolated:")],
                   missing=[p[:120] for p in data.get("problems", []) if p.startswith("not isolated:")])
    else:
        row["stderr"] = err[-600:]
    return row


def situation_setup(name: str, work: Path) -> tuple[list[str], str, dict, list[str]] | str:
    """(wrap, python, env changes, extra grader arguments) for a situation, or why it cannot be arranged."""
    if name == "full":
        return [], sys.executable, {}, []
    if name == "none":
        bin_dir = work / "bin-without-bwrap"
        bin_dir.mkdir(exist_ok=True)
        for tool in ("setpriv", "unshare", "sh", "env"):
            if shutil.which(tool) and not (bin_dir / tool).exists():
                (bin_dir / tool).symlink_to(shutil.which(tool))
        return [], sys.executable, {"PATH": str(bin_dir)}, ["--isolation", "none"]
    if name == "tmp":
        venv = Path(tempfile.mkdtemp(prefix="grader-venv-", dir="/tmp"))
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", "--clear", str(venv)], check=True, timeout=300)
        purelib = Path(sysconfig.get_path("purelib", vars={"base": str(venv), "platbase": str(venv)}))
        dirs = [p for p in site.getsitepackages() if Path(p).is_dir()]
        (purelib / "zz_grader.pth").write_text("".join(f"import site; site.addsitedir({d!r})\n" for d in dirs))
        return [], str(venv / "bin" / "python"), {}, []
    if name == "mapped":
        if os.geteuid() != 0:
            return [], sys.executable, {}, []
        from test_situations import _closed_folders, _opened_namespace

        needed = [Path(sys.executable), Path(sys.prefix), Path(sys.base_prefix), work, ROOT]
        needed += [Path(p) for p in sys.path if p and Path(p).is_dir()]
        wrap = _opened_namespace(_closed_folders(needed)) + ["setpriv", "--reuid=4242", "--regid=4242",
                                                             "--clear-groups", "--"]
        probe = subprocess.run([*wrap, sys.executable, "-c", "import torch, attnconv"], capture_output=True,
                               text=True, timeout=300)
        if probe.returncode:
            return f"cannot arrange a non-root grader here: {probe.stderr.strip()[-200:]}"
        return wrap, sys.executable, {"HOME": str(work)}, []
    raise ValueError(f"unknown situation {name!r}")


def _grading_folders() -> set[str]:
    """The grader's folders under /tmp and the scratch tmpfs mounts: what a grading must leave as it found."""
    mounts = [line.split()[1] for line in Path("/proc/mounts").read_text().splitlines()
              if line.startswith("attnconv-scratch ")]
    return {str(p) for p in Path("/tmp").glob("attnconv-grade-*")} | set(mounts)


def run_situation(name: str, keep_dir: Path, kinds: list[str], at: str = "") -> dict:
    # outside /tmp (which the sandbox replaces), and closed to others: the situations measured at the same time
    # hold their own copies of the checks, which are not this grading's to hide
    work = Path(tempfile.mkdtemp(prefix=f"attacks-{name}-", dir="/var/tmp"))
    work.chmod(0o700)
    (work / "checks").mkdir()
    (work / "checks" / "toy_checks.py").write_text(TOY_CHECKS)
    (work / KEEP).write_text("the instructor's file\n")
    setup = situation_setup(name, work)
    if isinstance(setup, str):
        return {"not_run": setup}
    wrap, python, env_extra, argv = setup
    if name == "mapped":
        for path in [work, *work.rglob("*")]:
            os.chown(path, 4242, 4242)
    import attnconv

    library = Path(attnconv.__file__).resolve().parent / "course"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(work / "checks"), str(ROOT / "src")]), **env_extra)
    rows = {}
    for kind, cells in notebooks(work).items():
        if kind not in kinds:
            continue
        nb = write(work / f"{kind}.ipynb", *cells)
        if name == "mapped":
            os.chown(nb, 4242, 4242)
        before = {**_digest(work, (".json",)), **{f"library/{k}": v for k, v in _digest(library).items()}}
        budget = ["--total-timeout", "150", "--cell-timeout", "60"] if kind == "hang" else \
            ["--total-timeout", "900", "--cell-timeout", "300"]
        left_before = _grading_folders()
        row = grade(nb, argv + budget, wrap, python, env, work)
        # named from $TMPDIR, so that the record names no folder of the machine that made it
        row["left_behind"] = sorted(f.replace("/tmp/", "$TMPDIR/", 1) for f in _grading_folders() - left_before)
        row["at"] = at
        after = {**_digest(work, (".json",)), **{f"library/{k}": v for k, v in _digest(library).items()}}
        row["files_changed"] = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k)
                                      and not k.endswith(".ipynb"))
        if kind == "rewriter" and (work / "rewriter.json").exists():
            row["score_after_5s"] = json.loads((work / "rewriter.json").read_text())["score"]
        rows[kind] = row
        print(name, kind, {k: row.get(k) for k in ("score", "files_changed", "grader_peak_mb", "wall_s")},
              flush=True)
    shutil.rmtree(work, ignore_errors=True)
    return rows


def table(results: dict) -> str:
    def cell(row: dict, kind: str) -> str:
        if "score" not in row:
            return f"no report (exit {row.get('returncode')})"
        extra = ""
        errors = " ".join(row.get("cell_errors", []))
        if kind == "reach":
            extra = "; " + next((e for e in row.get("cell_errors", []) if e.startswith("changed")), "")
        if kind == "resources":
            import re

            forked = re.search(r"forked (\d+)", errors)
            wrote = re.search(r"wrote (\d+) MB", errors)
            extra = f"; forked {forked.group(1) if forked else '?'}, /tmp {wrote.group(1) if wrote else '?'} MB"
        if kind == "rewriter" and "score_after_5s" in row:
            extra = f"; report 5 s later: {row['score_after_5s']}"
        if kind == "scratch":
            stopped = any("scratch folder's" in p for p in row.get("problems", []))
            wrote = next((e for e in row.get("cell_errors", []) if e.startswith("wrote")), "")
            extra = "; stopped at the quota" if stopped else f"; not stopped ({wrote or 'no count'})"
            extra += f", {len(row.get('left_behind', []))} folders or mounts left"
        files = len(row.get("files_changed", []))
        return (f"{row['score']}/{row['max_score']}{extra}; files changed {files}; "
                f"{row['grader_peak_mb']:.0f} MB; {row['wall_s']:.0f} s; at {row.get('at', '?')}")

    names = list(results["situations"])
    kinds = [k for k in ["honest", "stub", "reach", "resources", "hang", "rewriter", "scratch"]
             if any(k in rows for rows in results["situations"].values())]
    lines = ["| attack | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]
    for kind in kinds:
        cells = []
        for name in names:
            rows = results["situations"][name]
            cells.append(rows["not_run"] if "not_run" in rows else cell(rows.get(kind, {}), kind))
        lines.append(f"| {kind} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "grading-attacks")
    parser.add_argument("--situations", default="full,none,tmp,mapped")
    parser.add_argument("--kinds", default="honest,stub,reach,resources,hang,rewriter,scratch")
    parser.add_argument("--merge", action="store_true", help="write the table from the situations measured")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    if args.merge:
        parts = [json.loads(p.read_text()) for p in sorted(args.out.glob("attacks-*.json"))]
        order = {name: i for i, name in enumerate(["full", "mapped", "none", "tmp"])}
        parts.sort(key=lambda part: order.get(next(iter(part["situations"])), 9))
        results = {"meta": [part["meta"] for part in parts],
                   "situations": {k: v for part in parts for k, v in part["situations"].items()}}
        metas = "\n".join(f"- **{next(iter(part['situations']))}**: {m['date']}, commit {m['commit']}; {m['machine']}; "
                          f"Python {m['python']}, torch {m['torch']}, {m['bubblewrap']}; load {m['load']:.1f} at the "
                          f"start; grader {'root' if m['root'] else 'not root'}" for part in parts
                          for m in [part["meta"]])
        text = ("# Attack classes × grading situations\n\n" + metas + "\n\nEach cell: the score (the untouched "
                "student edition scores 0/4, the honest notebook 4/4), what the attack measured from inside, files "
                "changed outside the scratch folder (the working folder with the checks and an instructor's file, "
                "and the course library), the grader's peak memory (VmHWM, the grading process alone) and its wall "
                "time. `python benchmarks/grading_attacks.py` repeats it (see its docstring).\n\n"
                + table(results) + "\n")
        (args.out / "attacks.json").write_text(json.dumps(results, indent=1) + "\n")
        (args.out / "README.md").write_text(text)
        print(text)
        return 0
    import torch

    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip()
    bwrap = subprocess.run(["bwrap", "--version"], capture_output=True, text=True).stdout.strip() \
        if shutil.which("bwrap") else "none"
    meta = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), "commit": commit,
            "machine": f"{platform.machine()}, {os.cpu_count()} cores, Linux {platform.release()}",
            "python": platform.python_version(), "torch": torch.__version__, "bubblewrap": bwrap,
            "load": os.getloadavg()[0], "root": os.geteuid() == 0}
    for name in args.situations.split(","):
        rows = run_situation(name, args.out, args.kinds.split(","), commit)
        target = args.out / f"attacks-{name}.json"
        if target.exists():  # a kind measured again replaces its row and keeps the others, marked with their run
            old = json.loads(target.read_text())
            kept = old["situations"][name]
            for row in kept.values():
                if isinstance(row, dict) and not row.get("at"):
                    row["at"] = old["meta"]["commit"]
            rows = {**kept, **rows}
        target.write_text(json.dumps({"meta": meta, "situations": {name: rows}}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
