"""The built book, opened offline in headless Chromium: math typesets, nothing fails to load, Colab links resolve."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from urllib.parse import urlparse

import pytest

from .conftest import HTML, ROOT

CHAPTERS = sorted(str(p.relative_to(HTML)) for p in (HTML / "notebooks").glob("*.html"))
PAGES_WITH_MATH = CHAPTERS + ["book/intro.html", "book/notation.html"]
PAGES = PAGES_WITH_MATH + ["book/api.html", "book/references.html", "genindex.html", "search.html"]


def tracked_files() -> set[str]:
    out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return set(out.split())


@pytest.mark.book
@pytest.mark.parametrize("page_path", PAGES)
def test_page_renders_offline(visits, page_path):
    """Opened with every non-loopback request blocked (``visit.py``): nothing fails to load, nothing leaves the
    machine, and the maths typesets."""
    result = visits(page_path)
    assert not result.failed, f"{page_path}: resources failed to load: {result.failed}"
    assert not result.external, f"{page_path}: requests left the machine: {result.external}"
    if page_path in PAGES_WITH_MATH:
        assert result.math_elements > 0, f"{page_path}: no MathJax-typeset math found"


@pytest.mark.book
@pytest.mark.parametrize("page_path", CHAPTERS)
def test_colab_link_opens_committed_notebook(visits, page_path):
    result = visits(page_path)
    assert result.colab_links, f"{page_path}: no Colab launch link"
    files = tracked_files()
    for link in result.colab_links:
        path = urlparse(link).path
        assert "/blob/main/" in path, f"{link}: expected a link into the main branch"
        rel = path.split("/blob/main/", 1)[1]
        assert rel.endswith(".ipynb"), f"{link}: Colab must open an .ipynb"
        assert rel == page_path.replace(".html", ".ipynb"), f"{link}: points at {rel}, not this chapter"
        assert (ROOT / rel).is_file() and rel in files, f"{link}: {rel} is not a committed file"


@pytest.mark.book
@pytest.mark.parametrize("page_path", PAGES)
def test_no_widget_manager_or_npm_asset_is_loaded(page_path):
    """The static pages need no require.js or ipywidgets manager: their viewers run on the page's own script."""
    text = (HTML / page_path).read_text(encoding="utf-8")
    loaded = re.findall(r"<(?:script|link)\b[^>]*?\b(?:src|href)=[\"']([^\"']+)", text)
    for asset in ("require.js", "html-manager", "embed-amd.js", "jupyter-widgets"):
        assert not [url for url in loaded if asset in url], f"{page_path} still loads {asset}"


@pytest.mark.book
def test_no_page_launches_colab_on_a_file_colab_cannot_open():
    """Every launch link of every built page (prose pages that run code included) names a committed notebook."""
    files = tracked_files()
    for page in sorted(HTML.rglob("*.html")):
        if "_static" in page.parts or "_sources" in page.parts:
            continue
        for link in re.findall(r'href="(https://colab\.research\.google\.com/[^"]+)"', page.read_text(encoding="utf-8")):
            rel = urlparse(link).path.split("/blob/main/", 1)[-1]
            assert rel.endswith(".ipynb") and rel in files, f"{page.relative_to(HTML)}: Colab link to {rel}"


@pytest.mark.book
def test_no_page_repeats_an_html_id():
    """An id twice on a page (a viewer shown in a cell's output and again in its numbered figure) leaves one copy
    dead: its script finds the other one."""
    for page in sorted(HTML.rglob("*.html")):
        if "_static" in page.parts or "_sources" in page.parts:
            continue
        # the book's own viewers and figures (the theme repeats ids such as "exercise-content" in every exercise)
        ids = [i for i in re.findall(r'\sid="([^"]+)"', page.read_text(encoding="utf-8"))
               if i.startswith(("attnconv-", "explorable-", "viewer-", "fig-"))]
        repeated = sorted({i for i in ids if ids.count(i) > 1})
        assert not repeated, f"{page.relative_to(HTML)}: ids used more than once: {repeated[:10]}"


def test_pages_list_is_complete():
    assert len(CHAPTERS) >= 2 and all((HTML / p).is_file() for p in PAGES)


def test_request_failure_keeps_real_failures_and_drops_cancelled_loads_of_built_files(tmp_path):
    """A cancelled load of a file that is in the build is no defect; a cancelled load of a file that is not, a
    refused connection, or any other failure is reported with its reason; other sites' requests are not judged."""
    from .visit import request_failure

    (tmp_path / "_images").mkdir()
    (tmp_path / "_images" / "a.png").write_bytes(b"\x89PNG")
    site = "http://127.0.0.1:8000"
    assert request_failure(f"{site}/_images/a.png", "net::ERR_ABORTED", site, tmp_path) is None
    assert request_failure(f"{site}/_images/gone.png", "net::ERR_ABORTED", site, tmp_path) == (
        f"net::ERR_ABORTED {site}/_images/gone.png")
    assert request_failure(f"{site}/_images/a.png", "net::ERR_CONNECTION_REFUSED", site, tmp_path) == (
        f"net::ERR_CONNECTION_REFUSED {site}/_images/a.png")
    assert request_failure(f"{site}/_images/a.png", None, site, tmp_path) == f"failed {site}/_images/a.png"
    assert request_failure("https://example.org/x.png", "net::ERR_ABORTED", site, tmp_path) is None
