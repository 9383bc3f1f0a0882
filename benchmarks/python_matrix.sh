#!/usr/bin/env bash
# The library tests under one Python and one torch, installed the way a user installs the package: a fresh virtual
# environment, torch first, then `pip install CLONE[test]` (not editable) from a clone of the commit, and the tests
# run in that clone, so that they import the installed package and not src/ (the record says which file they
# imported). Writes results/python-matrix/python-X.Y.json; results/python-matrix/README.md is the table.
#
#   bash benchmarks/python_matrix.sh PYTHON TORCH_VERSION [PYTEST_ARG...]
#   bash benchmarks/python_matrix.sh ~/.pyenv/versions/3.13.0/bin/python3 2.11.0
#
# Environment:
#   TORCH_INDEX  the index torch alone comes from (pip --index-url), e.g. https://download.pytorch.org/whl/cpu for
#                the CPU-only wheel; empty (the default): pip's own configuration, i.e. PyPI's build, which on
#                Linux is the CUDA one (several GB; it runs on a CPU all the same) unless a find-links folder holds
#                a CPU wheel of that version
#   XDIST        pytest-xdist's workers (default "-n 2"; empty: one process)
#   TIMEOUT      seconds the test run may take (default 14400)
#   WORK         folder for the clone and the environment (default: a new temporary folder, removed at the end
#                unless KEEP=1)
#   OUT          folder the JSON is written to (default: results/python-matrix of this checkout)
#   COMMIT       the commit to test (default HEAD), so that every interpreter tests the same one
# The tests are those of the library: tests/ without tests/book, tests/course (the book build and the grader, which
# need the full requirements.txt), tests/colab and tests/explorables (a browser).
set -u -o pipefail
[ $# -ge 2 ] || { echo "usage: bash benchmarks/python_matrix.sh PYTHON TORCH_VERSION [PYTEST_ARG...]" >&2; exit 2; }
python="$1" torch_version="$2"; shift 2
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"
out="${OUT:-$root/results/python-matrix}"
xdist="${XDIST--n 2}"
work="${WORK:-}"
if [ -z "$work" ]; then
  work="$(mktemp -d)"
  [ "${KEEP:-0}" = 1 ] || trap 'rm -rf "$work"' EXIT
fi
mkdir -p "$work" "$out" && work="$(cd "$work" && pwd)" && out="$(cd "$out" && pwd)"
say() { echo "+ $*" >&2; }

commit="$(git -C "$root" rev-parse --verify "${COMMIT:-HEAD}^{commit}")" || exit 1
rm -rf "$work/clone" "$work/venv" "$work/where" "$work/plugin"
say "git clone $root \$WORK/clone  (commit $commit)"
git clone -q "$root" "$work/clone" && git -C "$work/clone" checkout -q "$commit" || exit 1

install_start=$(date +%s)
say "$python -m venv \$WORK/venv"
"$python" -m venv "$work/venv" || exit 1
py="$work/venv/bin/python"
pip=("$py" -m pip install --disable-pip-version-check -q)
torch_cmd=(torch=="$torch_version" ${TORCH_INDEX:+--index-url "$TORCH_INDEX"})
say "pip install ${torch_cmd[*]}"
"${pip[@]}" "${torch_cmd[@]}" || exit 1
say "pip install \$WORK/clone[test] pytest-xdist"
"${pip[@]}" "$work/clone[test]" pytest-xdist || exit 1
install_s=$(( $(date +%s) - install_start ))

# A plugin that writes, in every pytest process (the xdist workers included), the file `import attnconv` found.
mkdir -p "$work/plugin" "$work/where"
cat > "$work/plugin/matrix_where.py" <<'EOF'
import os


def pytest_sessionfinish(session):
    import attnconv

    with open(os.path.join(os.environ["MATRIX_WHERE"], str(os.getpid())), "w") as f:
        f.write(attnconv.__file__)
EOF

pytest_args=(tests -q -p no:cacheprovider --ignore=tests/book --ignore=tests/course --ignore=tests/colab
             --ignore=tests/explorables $xdist -p matrix_where --junitxml="$work/junit.xml" "$@")
say "cd \$WORK/clone && python -m pytest ${pytest_args[*]}"
test_start=$(date +%s)
(cd "$work/clone" && PYTHONPATH="$work/plugin" MATRIX_WHERE="$work/where" \
  timeout "${TIMEOUT:-14400}" nice -n 10 "$py" -m pytest "${pytest_args[@]}") 2>&1 | tee "$work/pytest.log"
rc=${PIPESTATUS[0]}
test_s=$(( $(date +%s) - test_start ))

"$py" - "$python" "$torch_version" "${TORCH_INDEX:-}" "$xdist" "$commit" "$rc" "$install_s" "$test_s" "$work" \
  "$out" "$*" <<'EOF'
import datetime, importlib.metadata as md, json, os, platform, re, sys, xml.etree.ElementTree as ET
from pathlib import Path

python, torch_version, index, xdist, commit, rc, install_s, test_s, work, out, extra = sys.argv[1:]
home = str(Path.home())


def public(text):
    """A path as a reader can read it: the temporary folder as $WORK, the home folder as ~."""
    return text.replace(work, "$WORK").replace(home, "~")


suite = ET.parse(Path(work) / "junit.xml").getroot()
suite = suite if suite.tag == "testsuite" else suite.find("testsuite")
total, failures, errors, skipped = (int(suite.get(k, 0)) for k in ("tests", "failures", "errors", "skipped"))
failed = sorted(f"{case.get('classname')}::{case.get('name')}" for case in suite.iter("testcase")
                if case.find("failure") is not None or case.find("error") is not None)
where = sorted({public(p.read_text()) for p in (Path(work) / "where").iterdir()})
log = (Path(work) / "pytest.log").read_text(errors="replace").strip().splitlines()
summary = next((line.strip("= ") for line in reversed(log) if re.search(r"\d+ (passed|failed)", line)), "")
versions = {d.metadata["Name"].lower(): d.version for d in md.distributions()}
import torch  # noqa: E402  (after the run: what the venv holds)

tag = f"python-{sys.version_info.major}.{sys.version_info.minor}"
ignore = "--ignore=tests/book --ignore=tests/course --ignore=tests/colab --ignore=tests/explorables"
record = {
    "python": platform.python_version(),
    "torch": torch.__version__,
    "torch_cuda_build": torch.version.cuda,
    "numpy": versions.get("numpy"),
    "versions": {k: versions[k] for k in sorted(versions)},
    "commit": commit,
    "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
    "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "processor": platform.machine()},
    "commands": [
        f"git clone <checkout> $WORK/clone && git -C $WORK/clone checkout {commit}",
        f"{public(python)} -m venv $WORK/venv",
        f"$WORK/venv/bin/pip install torch=={torch_version}" + (f" --index-url {index}" if index else ""),
        "$WORK/venv/bin/pip install $WORK/clone[test] pytest-xdist",
        f"cd $WORK/clone && nice -n 10 $WORK/venv/bin/python -m pytest tests -q -p no:cacheprovider {ignore}"
        + (f" {xdist}" if xdist else "") + (f" {extra}" if extra else ""),
    ],
    "reproduce": f"COMMIT={commit} " + (f"TORCH_INDEX={index} " if index else "")
                 + f"bash benchmarks/python_matrix.sh {public(python)} {torch_version}" + (f" {extra}" if extra else ""),
    "attnconv_imported_from": where,
    "installed_not_src": bool(where) and all("site-packages" in w for w in where),
    "tests": {"collected": total, "passed": total - failures - errors - skipped, "failed": failures,
              "errors": errors, "skipped": skipped, "exit_status": int(rc), "summary": summary},
    "failed": failed,
    "install_s": int(install_s),
    "tests_wall_s": int(test_s),
}
path = Path(out) / f"{tag}.json"
path.write_text(json.dumps(record, indent=1) + "\n")
print(f"{tag}: {record['tests']['passed']} passed, {failures + errors} failed, {skipped} skipped in {test_s} s "
      f"(torch {record['torch']}, numpy {record['numpy']}) -> {path}", file=sys.stderr)
EOF
exit "$rc"
