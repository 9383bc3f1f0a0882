#!/usr/bin/env bash
# The waits of a new contributor, measured on a fresh clone: `make book` from nothing (the environment installed
# from pip's cache or the registries, MathJax copied, every page executed), a rebuild after an edit to one
# chapter's code (only that chapter may execute again), then `make test` with the environment already installed.
#
#   ATTNCONV_DATA=/path/to/data benchmarks/fresh_clone_times.sh [CLONE_DIR]
#
# CLONE_DIR (default: a new folder under /tmp) must not exist. Writes results/benchmarks/fresh_clone_times.{json,md}
# in this checkout; the clone's logs stay in CLONE_DIR.logs/. The machine's busy share comes from /proc/stat.
set -euo pipefail
cd "$(dirname "$0")/.."
HERE="$(pwd)"
CLONE=${1:-$(mktemp -u /tmp/attnconv-fresh-XXXXXX)}
[[ -e $CLONE ]] && { echo "CLONE_DIR $CLONE exists: name a new folder" >&2; exit 2; }
LOGS="$CLONE.logs"
mkdir -p "$LOGS"
git clone -q "$HERE" "$CLONE"
commit=$(git -C "$CLONE" rev-parse --short HEAD)
cd "$CLONE"

cpu() { awk '/^cpu /{print $2+$3+$4+$7+$8, $5+$6}' /proc/stat; }
load_before=$(cut -d' ' -f1-3 /proc/loadavg)  # the 1, 5 and 15 minute load averages before the first step
rows=()
step() {  # name, command...: time it, with the machine's busy share over it
  local name=$1; shift
  local t0 b0 i0 b1 i1 rc=0
  t0=$(date +%s%N); read -r b0 i0 < <(cpu)
  "$@" > "$LOGS/$name.log" 2>&1 || rc=$?
  read -r b1 i1 < <(cpu)
  rows+=("$(python3 -c "import json,sys; print(json.dumps({'step': sys.argv[1], 'seconds': round(float(sys.argv[2]), 1),
    'busy': round(100 * int(sys.argv[3]) / max(1, int(sys.argv[3]) + int(sys.argv[4]))), 'exit': int(sys.argv[5])}))" \
    "$name" "$(( ($(date +%s%N) - t0) / 1000000 ))e-3" "$((b1 - b0))" "$((i1 - i0))" "$rc")")
  echo "$name: exit $rc, $(tail -c 200 "$LOGS/$name.log" | tail -1)"
}

step book-from-nothing make book
# one chapter's code changes: a comment in the first code cell after its first section heading
python3 - <<'PY'
from pathlib import Path
p = Path("notebooks/02_self_attention.md"); t = p.read_text()
i = t.index("```{code-cell} ipython3\n", t.index("\n## ")); j = t.index("\n", i) + 1
p.write_text(t[:j] + "# an edit to this chapter's code\n" + t[j:])
PY
step book-after-one-chapter-edit make book
# Pages executed, by book/ext/preexecute.py ("preexecute: PAGE N s") or by the build itself ("Executing notebook").
executed=$(grep -cE "Executing notebook|^preexecute: [^ ]+\.md [0-9.]+ s$" "$LOGS/book-after-one-chapter-edit.log" || true)
git checkout -q notebooks/02_self_attention.md
step make-test make test
stages=$(grep '^== stage' "$LOGS/make-test.log" | sed 's/^== stage //' | tr '\n' ';' || true)

cd "$HERE"
LOAD_BEFORE="$load_before" python3 - "$commit" "$executed" "$stages" "${rows[@]}" <<'PY'
import json, os, platform, subprocess, sys
from pathlib import Path
commit, executed, stages, rows = sys.argv[1], int(sys.argv[2]), sys.argv[3], [json.loads(r) for r in sys.argv[4:]]
stage_rows = [dict(zip(("stage", "seconds"), s.replace(" s", "").split(": "))) for s in stages.split(";") if s]
meta = {"commit": commit, "cores": os.cpu_count(), "machine": platform.machine(), "python": platform.python_version(),
        "date": subprocess.run(["date", "-u", "+%Y-%m-%d %H:%M UTC"], capture_output=True, text=True).stdout.strip(),
        "data": "ATTNCONV_DATA set" if os.environ.get("ATTNCONV_DATA") else "no ATTNCONV_DATA",
        "load_before": [float(x) for x in os.environ["LOAD_BEFORE"].split()], "load_after": os.getloadavg()}
out = Path("results/benchmarks/fresh_clone_times")
out.parent.mkdir(parents=True, exist_ok=True)
out.with_suffix(".json").write_text(json.dumps({"meta": meta, "steps": rows, "stages": stage_rows,
                                                "executed_after_one_chapter_edit": executed}, indent=1) + "\n")
lines = [f"# A fresh clone's waits: make book, a one-chapter rebuild, make test",
         "", f"`benchmarks/fresh_clone_times.sh` on a clone of commit {commit}, {meta['date']}, {meta['cores']} cores "
         f"({meta['machine']}), Python {meta['python']}, {meta['data']}. Busy: the machine's share of CPU time that was "
         "not idle over the step (/proc/stat). Load average (1, 5, 15 min) before the first step: "
         f"{', '.join(f'{x:.2f}' for x in meta['load_before'])}.", "",
         "| step | seconds | busy (%) | exit |", "|---|---|---|---|"]
lines += [f"| {r['step']} | {r['seconds']:.0f} | {r['busy']} | {r['exit']} |" for r in rows]
lines += ["", f"Notebooks executed by the rebuild after the one-chapter edit: {executed}.", "",
          "`make test`'s stages (two at a time):", "", "| stage | seconds |", "|---|---|"]
lines += [f"| {s['stage']} | {s['seconds']} |" for s in stage_rows]
out.with_suffix(".md").write_text("\n".join(lines) + "\n")
print(out.with_suffix(".md").read_text())
PY
