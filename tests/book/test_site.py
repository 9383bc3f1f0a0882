"""The built book read with the site checks (``site_checks.py``, each shown failing on a crafted page in
``test_site_checks.py``), in each chapter's one visit per width (``visit.py``):

- at 400 px, no element blocks a phone's scrolling (touch-action: none) unless a finger drags on it;
- at 400 and 1400 px, nothing of an explorable or viewer extends beyond its box, as loaded and after each of its
  buttons is pressed (chapter 05's k = 4 among them);
- at 400 px, the "Back to top" button never covers an explorable or viewer, whatever the scroll position;
- at 320 px, chapter 05's attention matrix scrolls in its own box, with its cue, and the page does not;
- the unfold button counts the folded checks in good English;
- a visit answers no 404 at the server (the browser's own ``/favicon.ico`` included) and logs no console error;
- once the page has settled (MathJax draws lazily, book.js the rest in the background), every formula of every
  page is drawn and carries the MathML a screen reader reads.
"""

from __future__ import annotations

import pytest

from .conftest import HTML
from .site_checks import maths_problems, unfold_label_problems

CHAPTERS = sorted(p.stem for p in (HTML / "notebooks").glob("[0-9][0-9]_*.html"))
PAGES = [f"notebooks/{c}.html" for c in CHAPTERS] + ["book/intro.html", "book/notation.html", "book/api.html",
                                                     "book/references.html", "genindex.html", "search.html"]


def _visit(visits, chapter: str, width: int):
    return visits(f"notebooks/{chapter}.html", width)


@pytest.mark.book
@pytest.mark.parametrize("chapter", CHAPTERS)
def test_only_dragged_elements_block_scrolling_on_a_phone(visits, chapter):
    problems = _visit(visits, chapter, 400).site["touch"]
    assert not problems, f"{chapter} at 400px: {problems}"


@pytest.mark.book
@pytest.mark.parametrize("width", [400, 1400])
@pytest.mark.parametrize("chapter", CHAPTERS)
def test_explorables_stay_inside_their_box(visits, chapter, width):
    problems = _visit(visits, chapter, width).site["explorable_fit"]
    assert not problems, f"{chapter} at {width}px: {problems}"


@pytest.mark.book
def test_chapter_05_matrix_fits_a_320_px_phone(browser, site):
    from .site_checks import EXPLORABLE_FIT_JS
    from .test_site_checks import MATRIX_PANEL_JS
    from .visit import _settle

    [chapter] = [c for c in CHAPTERS if c.startswith("05_")]
    context = browser.new_context(viewport={"width": 320, "height": 700}, has_touch=True, is_mobile=True)
    context.set_default_navigation_timeout(180_000)
    try:
        page = context.new_page()
        page.goto(f"{site}/notebooks/{chapter}.html", wait_until="load")
        _settle(page, site)
        found, problems = page.evaluate(MATRIX_PANEL_JS), page.evaluate(EXPLORABLE_FIT_JS)
    finally:
        context.close()
    assert found["page"] <= 320 and found["past"] <= 0, f"the page scrolls sideways at 320 px: {found}"
    assert found["scrolls"] and "math-scrolls" in found["cls"], f"the matrix's box has no scroll cue: {found}"
    assert not problems, problems


@pytest.mark.book
@pytest.mark.parametrize("chapter", CHAPTERS)
def test_back_to_top_never_covers_an_explorable_on_a_phone(visits, chapter):
    problems = _visit(visits, chapter, 400).site["back_to_top"]
    assert not problems, f"{chapter} at 400px: {problems}"


@pytest.mark.book
@pytest.mark.parametrize("chapter", CHAPTERS)
def test_unfold_button_counts_in_good_english(visits, chapter):
    unfold = _visit(visits, chapter, 1400).site["unfold"]
    if unfold is None:  # a chapter with nothing folded has no button
        return
    problems = unfold_label_problems(unfold["text"], unfold["folds"])
    assert not problems, f"{chapter}: {problems}"


@pytest.mark.book
@pytest.mark.parametrize("page_path", PAGES)
def test_no_console_error_while_loading(visits, page_path):
    errors = visits(page_path).load_errors
    assert not errors, f"{page_path}: {errors}"


MATHS_VISITS = ([(str(p.relative_to(HTML)), 1400) for p in sorted((HTML / "notebooks").glob("*.html"))]
                + [(p, 1400) for p in PAGES if not p.startswith("notebooks/")] + [("book/claims.html", 1400)]
                + [(f"notebooks/{c}.html", 400) for c in CHAPTERS])


@pytest.mark.book
@pytest.mark.parametrize(("page_path", "width"), MATHS_VISITS)
def test_every_formula_is_drawn_with_its_mathml(visits, page_path, width):
    problems = maths_problems(visits(page_path, width).site["maths"])
    assert not problems, f"{page_path} at {width}px: {problems}"


@pytest.mark.book
@pytest.mark.parametrize("page_path", ["", "index.html", "book/intro.html", f"notebooks/{CHAPTERS[0]}.html"])
def test_no_request_fails_at_the_server(full_browser, site, served, page_path):
    """What the server answered, the browser's own request for /favicon.ico included (the page never hears of it:
    the root index.html, a redirect, links no icon)."""
    mark = served.mark()
    context = full_browser.new_context()
    try:
        page = context.new_page()
        page.goto(f"{site}/{page_path}", wait_until="load", timeout=180_000)
        page.wait_for_timeout(1000)  # the icon is asked for after the load
    finally:
        context.close()
    failed = served.since(mark)
    assert not failed, f"/{page_path}: the server answered {failed}"
    assert (HTML / "favicon.ico").is_file(), "favicon.ico is missing from the build (book/ext/favicon.py)"
