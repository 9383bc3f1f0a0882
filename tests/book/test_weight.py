"""What each page of the built book weighs in a browser, and that its icons and maths still show.

Every page is opened in headless Chromium and every file it fetches is counted at its size on disk (the test
server sends files as they are). A page's own bytes are its HTML and its figures (``_images/``); everything else
it fetches (theme, icons, MathJax and its fonts, a search index) is shared with other pages. The goals: at most
1.5 MB of shared assets on any page, and chapter 06's page itself, its HTML with the explorer's data inline, at
most 1.2 MB (it was 1.98 MB, 1.78 MB of it that data). The numbers are written to ``_build/weights.json``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from .conftest import HTML

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "book" / "ext"))
import light_icons  # noqa: E402  (the book's own Sphinx extension)

MB = 1_000_000
SHARED_LIMIT = 1.5 * MB
CHAPTER06_LIMIT = 1.2 * MB
PAGES = sorted(str(p.relative_to(HTML)) for p in [*(HTML / "notebooks").glob("[0-9][0-9]_*.html"),
                                                 *(HTML / "book").glob("*.html")])  # index.html only redirects
REPORT = HTML.parent / "weights.json"

def weigh(visit) -> dict:
    """A page's one visit at 1400 px (``visit.py``): the bytes of every file it fetched, by kind."""
    files, page_path = visit.files, visit.page
    own = {f: n for f, n in files.items() if f == page_path or f.startswith("_images/")}
    return {"total": sum(files.values()), "own": sum(own.values()), "shared": sum(files.values()) -
            sum(own.values()), "files": files, "icons": visit.icons, "math": visit.math_elements,
            "math_errors": visit.math_errors}


def _shared(w: dict, page_path: str) -> list[tuple[int, str]]:
    return sorted(((n, f) for f, n in w["files"].items() if f != page_path and not f.startswith("_images/")),
                  reverse=True)


@pytest.fixture(scope="module")
def weights(visits) -> dict[str, dict]:
    out = {page: weigh(visits(page)) for page in PAGES}
    site_bytes = sum(p.stat().st_size for p in HTML.rglob("*") if p.is_file())
    summary = {"site": site_bytes, "pages": {p: {k: w[k] for k in ("total", "shared", "own")} for p, w in out.items()},
               "shared_files": sorted({(f, n) for p, w in out.items() for n, f in _shared(w, p)}, key=lambda x: -x[1])}
    REPORT.write_text(json.dumps(summary, indent=1))
    return out


def test_pages_list_is_complete():
    assert len([p for p in PAGES if p.startswith("notebooks/")]) >= 7 and "book/intro.html" in PAGES


@pytest.mark.book
@pytest.mark.parametrize("page_path", PAGES)
def test_shared_assets_at_most_1_5_mb(weights, page_path):
    w = weights[page_path]
    heaviest = _shared(w, page_path)[:5]
    assert 0 < w["shared"] <= SHARED_LIMIT, f"{page_path}: {w['shared'] / MB:.2f} MB shared; heaviest {heaviest}"
    assert not any(f.endswith("fontawesome.js") for f in w["files"]), f"{page_path} loads fontawesome.js"


@pytest.mark.book
def test_chapter06_at_most_1_2_mb(weights):
    [page] = [p for p in PAGES if Path(p).name.startswith("06_")]
    w = weights[page]
    assert 0 < w["files"][page] <= CHAPTER06_LIMIT, f"{page}: {w['files'][page] / MB:.2f} MB of HTML"


@pytest.mark.book
@pytest.mark.parametrize("page_path", PAGES)
def test_icons_draw_from_the_subset_fonts(weights, page_path):
    """Every visible icon has a width and a glyph from a Font Awesome face, and that glyph is in the subset."""
    w = weights[page_path]
    assert w["icons"], f"{page_path}: no visible icon at all (navigation, search, theme switch)"
    css = "\n".join(p.read_text(encoding="utf-8") for p in (HTML / "_static").rglob("*.css"))
    names, _ = light_icons.icon_codes(css)
    from fontTools.ttLib import TTFont

    faces = {stem: set(TTFont(HTML / "_static" / light_icons.FOLDER / f"{stem}.woff").getBestCmap() or {})
             for stem, _, _ in light_icons.FACES}
    problems = []
    for icon in w["icons"]:
        glyphs = [names[c] for c in icon["cls"].split() if c in names]
        if icon["width"] < 4 or "Font Awesome" not in icon["family"]:
            problems.append(icon)
        elif glyphs and not all(g in faces["fa-solid-900"] | faces["fa-brands-400"] for g in glyphs):
            problems.append({**icon, "missing": [hex(g) for g in glyphs]})
    assert not problems, f"{page_path}: icons that would not show: {problems}"
    assert any("_static/icons/" in f for f in w["files"]), f"{page_path}: the subset icon fonts were not loaded"


@pytest.mark.book
@pytest.mark.parametrize("page_path", [p for p in PAGES if "api" not in p and "references" not in p])
def test_math_renders_with_the_lighter_mathjax(weights, page_path):
    w = weights[page_path]
    source = (HTML / page_path).read_text(encoding="utf-8")
    if 'class="math' in source:
        assert w["math"] > 0, f"{page_path}: maths on the page but nothing typeset"
    assert w["math_errors"] == 0, f"{page_path}: {w['math_errors']} TeX errors (an extension that did not load?)"
