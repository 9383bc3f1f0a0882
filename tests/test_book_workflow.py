"""The published book's build: it fetches the real data with the library's own code, caches it by checksum, and
`make book` re-executes the chapters when the data it finds changes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _steps(text: str) -> list[str]:
    return re.split(r"\n\s+- ", text)


def test_pages_workflow_builds_on_fetched_and_cached_data():
    text = (ROOT / ".github" / "workflows" / "book.yml").read_text()
    steps = _steps(text)
    order = [next(i for i, s in enumerate(steps) if needle in s)
             for needle in ("attnconv.data.fetch --key", "actions/cache", "attnconv.data.fetch --dest", "make book")]
    assert order == sorted(order), "key, cache, fetch, then build"
    cache = steps[order[1]]
    assert "steps.data-key.outputs.key" in cache, "the cache must be keyed on the data checksums"
    dest = re.search(r"fetch --dest (\S+)", text).group(1)
    assert cache.count(dest) == 1, f"the cache must hold the fetched folder {dest}"
    assert re.search(r'ATTNCONV_DATA="?\$HOME/attnconv-data"? make book', steps[order[3]]), \
        "make book must run with ATTNCONV_DATA naming the fetched folder"


def test_make_book_drops_the_execution_cache_when_the_data_changes():
    text = (ROOT / "Makefile").read_text()
    recipe = text.split("\nbook:", 1)[1].split("\n\n", 1)[0]
    lines = [line.strip() for line in recipe.splitlines()]
    fingerprint = next(i for i, line in enumerate(lines) if "attnconv.data.fetch --fingerprint" in line)
    dropped = next(i for i, line in enumerate(lines) if "rm -rf _build/.jupyter_cache" in line)
    build = next(i for i, line in enumerate(lines) if "jupyter-book build" in line)
    assert fingerprint < dropped < build


def test_make_test_runs_one_thread_per_process_and_still_counts_every_core_for_the_book(tmp_path):
    """`make test` exports OMP_NUM_THREADS=1 to everything it starts, and the book's pre-execution still runs a page
    per core: GNU nproc answers OMP_NUM_THREADS when it is set, so BOOK_JOBS must count the cores without it."""
    import os
    import shutil
    import subprocess

    if shutil.which("make") is None or shutil.which("nproc") is None:
        pytest.skip("needs GNU make and nproc")
    # a prerequisite of the book stage, which `make test` runs in a make of its own (MAKEFILES: every make reads
    # it); `+` runs its line under make -n, which runs nothing else
    probe = tmp_path / "probe.mk"
    probe.write_text('book: omp-probe\nomp-probe:\n\t+@echo "probe $$OMP_NUM_THREADS $$MKL_NUM_THREADS $(BOOK_JOBS)"\n')
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "BOOK_JOBS",
                                                            "MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    done = subprocess.run(["make", "-n", "-o", ".venv/.installed", "test"], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, env={**env, "MAKEFILES": str(probe)})  # every make reads it
    seen = [line.split() for line in done.stdout.splitlines() if line.startswith("probe ")]
    cores = subprocess.run(["nproc"], env=env, capture_output=True, text=True).stdout.strip()
    assert seen == [["probe", "1", "1", cores]], (done.stdout[-2000:], done.stderr[-2000:])
