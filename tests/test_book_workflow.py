"""The published book's build: it fetches the real data with the library's own code, caches it by checksum, and
`make book` re-executes the chapters when the data it finds changes."""

from __future__ import annotations

import re
from pathlib import Path

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
