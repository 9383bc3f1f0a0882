"""book/ext/preexecute.py: the pages it executes before the build, and cache entries the build finds."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import yaml

from tests.test_quiet_build import PAGE as QUIET_PAGE

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("preexecute", ROOT / "book" / "ext" / "preexecute.py")
preexecute = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(preexecute)

# A one-page chapter whose cell has a tag: its cell metadata is part of the cache key too
PAGE = QUIET_PAGE.replace("```{code-cell} ipython3\n", "```{code-cell} ipython3\n:tags: [remove-input]\n\n")
assert ":tags:" in PAGE


def test_it_executes_every_page_of_the_contents_that_runs_code():
    listed = set(preexecute.pages())
    toc = (ROOT / "_toc.yml").read_text()
    runs_code = {p for p in [*ROOT.glob("notebooks/*.md"), *ROOT.glob("book/**/*.md")]
                 if "\nkernelspec:" in p.read_text().split("\n---", 1)[0]
                 and f"file: {p.relative_to(ROOT).with_suffix('').as_posix()}\n" in toc}
    assert listed == runs_code and len(listed) >= 10, sorted(map(str, listed ^ runs_code))
    assert ROOT / "book" / "claims.md" in listed and ROOT / "book" / "intro.md" not in listed


def test_a_page_it_executed_is_found_in_the_cache_as_the_build_reads_the_page(tmp_path):
    from jupyter_cache import get_cache

    page = tmp_path / "page.md"
    page.write_text(PAGE)
    cache = get_cache(str(tmp_path / "cache"))
    path, nb, seconds, error = preexecute._execute(str(page), 60)
    assert not error and "42" in nb.cells[-1].outputs[0]["text"]
    unexecuted, timeout, read_fmt = preexecute.read(page)
    assert timeout == yaml.safe_load((ROOT / "_config.yml").read_text())["execute"]["timeout"]
    preexecute.store(cache, path, nb, seconds, read_fmt)
    record = cache.match_cache_notebook(unexecuted)  # the lookup MyST-NB's cache mode makes: KeyError on a miss
    assert "42" in cache.get_cache_bundle(record.pk).nb.cells[-1].outputs[0]["text"]


def test_per_cell_timing_would_hide_the_page_from_the_build(tmp_path):
    """The wrong variant: nbclient's default per-cell timing writes into each cell's metadata, which is part of the
    cache key, so the build would miss the page and execute it again."""
    import pytest
    from jupyter_cache import get_cache
    from nbclient import NotebookClient

    page = tmp_path / "page.md"
    page.write_text(PAGE)
    cache = get_cache(str(tmp_path / "cache"))
    nb, _, read_fmt = preexecute.read(page)
    NotebookClient(nb, timeout=60, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    preexecute.store(cache, str(page), nb, 1.0, read_fmt)
    with pytest.raises(KeyError):
        cache.match_cache_notebook(preexecute.read(page)[0])
