"""The book's chrome as a reader meets it, in headless Chromium at desktop and phone widths.

Each chapter is opened once per width, offline, and read: numbering, headings against the boxes under them,
cross-reference text, the sidebar and contents toggles (clicked), folded solution code (clicked), long display
equations, learning goals and takeaways. A full-page screenshot of each chapter at each width is saved under
``_build/screens/`` for a person to look at (not committed).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from urllib.parse import urlparse

import pytest

from .conftest import HTML, ROOT

CHAPTERS = sorted(p.stem for p in (HTML / "notebooks").glob("[0-9][0-9]_*.html"))
WIDTHS = (1400, 400)
SCREENS = HTML.parent / "screens"
BOX_KINDS = "Lemma|Theorem|Proposition|Definition|Corollary|Remark|Exercise|Example|Figure|Algorithm|Conjecture"

# The numbered boxes of a page, and the headings above them: every box's title, with the heading of the
# innermost section that holds it.
_HEADINGS_JS = """() => Array.from(document.querySelectorAll('article h1, article h2, article h3, article h4'))
  .map(h => h.innerText.replace(/#$/, '').trim())"""
_BOXES_JS = """() => Array.from(document.querySelectorAll('article div.proof, article div.exercise')).map(box => {
  const section = box.closest('section');
  const heading = section && section.querySelector(':scope > h1, :scope > h2, :scope > h3, :scope > h4');
  const title = box.querySelector(':scope > .admonition-title');
  return {heading: heading ? heading.innerText.replace(/#$/, '').trim() : '', title: title ? title.innerText.trim() : ''};
})"""

_SIDEBAR_JS = """() => Array.from(document.querySelectorAll('#pst-primary-sidebar nav.bd-docs-nav a.reference'))
  .map(a => ({text: a.innerText.trim(), href: a.href}))"""

_VISIBLE_LINKS_JS = """(sel) => { const root = document.querySelector(sel); if (!root) return 0;
  return Array.from(root.querySelectorAll('a')).filter(a => { const r = a.getBoundingClientRect();
    return r.width > 0 && r.height > 0 && r.right > 0 && r.left < window.innerWidth
      && getComputedStyle(a).visibility !== 'hidden'; }).length; }"""

_PRIMARY_JS = """() => { const s = document.querySelector('#pst-primary-sidebar');
  const d = document.querySelector('#pst-primary-sidebar-modal');
  const r = s.getBoundingClientRect();
  return {shown: getComputedStyle(s).visibility !== 'hidden' && r.right > 0 && r.width > 0, dialog: !!(d && d.open)}; }"""

_SECONDARY_JS = """() => { const d = document.querySelector('#pst-secondary-sidebar-modal'); return !!(d && d.open); }"""

# Display equations wider than their box: do they scroll, and do they carry a visible cue?
_MATH_JS = """() => Array.from(document.querySelectorAll('article div.math'))
  .map(b => b.querySelector(':scope > mjx-container') || b).filter(b => b.scrollWidth > b.clientWidth + 1)
  .map(b => { const st = getComputedStyle(b); return {overflow: st.overflowX, cue: b.classList.contains('math-scrolls')
    && st.borderBottomStyle !== 'none' && st.boxShadow !== 'none', text: b.textContent.slice(0, 60)}; })"""


@dataclass
class Reading:
    """What a reader of one chapter at one width sees, and what happened when they clicked."""

    chapter: str
    width: int
    text: str = ""
    prose: str = ""  # the text without code cells and their outputs
    headings: list[str] = field(default_factory=list)
    boxes: list[dict] = field(default_factory=list)
    sidebar: list[dict] = field(default_factory=list)
    toggles: dict[str, str] = field(default_factory=dict)  # which toggle -> "" if it worked, else what went wrong
    solutions: list[str] = field(default_factory=list)  # problems with folded solution code
    solution_cells: int = 0
    wide_math: list[dict] = field(default_factory=list)
    page_width: int = 0  # the document's scroll width: wider than the window means the page scrolls sideways
    admonitions: list[str] = field(default_factory=list)
    external: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)


def _open(browser, site: str, chapter: str, width: int, reading: Reading):
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()

    def route(r):
        if r.request.url.startswith(site) or urlparse(r.request.url).hostname is None:
            r.continue_()
        else:
            reading.external.append(r.request.url)
            r.abort()

    page.route("**/*", route)
    page.on("response", lambda resp: resp.status >= 400 and reading.failed.append(f"{resp.status} {resp.url}"))
    page.goto(f"{site}/notebooks/{chapter}.html", wait_until="load")
    page.wait_for_function("() => window.MathJax && MathJax.startup && MathJax.startup.promise", timeout=20_000)
    page.evaluate("() => MathJax.startup.promise")
    page.wait_for_timeout(300)
    return context, page


def _check_toggles(page, width: int) -> dict[str, str]:
    """Click every visible sidebar toggle; report for each whether it opened (or closed and reopened) its panel."""
    out = {}
    primary = [b for b in page.locator(".primary-toggle").all() if b.is_visible()]
    if not primary:
        out["primary"] = "no visible sidebar toggle"
    for i, button in enumerate(primary):
        before = page.evaluate(_PRIMARY_JS)
        button.click()
        page.wait_for_timeout(300)
        after = page.evaluate(_PRIMARY_JS)
        name = f"primary[{i}]"
        if after["dialog"]:
            links = page.evaluate(_VISIBLE_LINKS_JS, "#pst-primary-sidebar-modal")
            out[name] = "" if links >= len(CHAPTERS) else f"the sidebar dialog opened with {links} visible links"
            page.keyboard.press("Escape")
        elif before["shown"] != after["shown"]:
            button.click()  # and back
            page.wait_for_timeout(300)
            back = page.evaluate(_PRIMARY_JS)
            out[name] = "" if back["shown"] == before["shown"] else "the sidebar did not come back on a second click"
        else:
            out[name] = f"clicking did nothing at {width}px (sidebar shown={before['shown']}, no dialog)"
        page.wait_for_timeout(200)
    secondary = [b for b in page.locator(".secondary-toggle").all() if b.is_visible()]
    if not secondary:  # wide screens show the contents beside the page, with no toggle
        links = page.evaluate(_VISIBLE_LINKS_JS, "#pst-secondary-sidebar")
        out["secondary"] = "" if links else "no contents toggle and no visible contents"
    for i, button in enumerate(secondary):
        button.click()
        page.wait_for_timeout(300)
        opened = page.evaluate(_SECONDARY_JS)
        links = page.evaluate(_VISIBLE_LINKS_JS, "#pst-secondary-sidebar-modal") if opened else 0
        out[f"secondary[{i}]"] = "" if opened and links else f"clicking did nothing at {width}px"
        page.keyboard.press("Escape")
        page.wait_for_timeout(200)
    return out


def _check_solutions(page) -> tuple[int, list[str]]:
    """Solution code is hidden until its toggle is clicked, and shown after."""
    problems = []
    cells = page.locator("div.cell").filter(has_text="BEGIN SOLUTION").all()
    for i, cell in enumerate(cells):
        code = cell.locator("pre").filter(has_text="BEGIN SOLUTION").first
        if code.is_visible():
            problems.append(f"solution cell {i} shows its code before any click")
            continue
        summary = cell.locator("summary").first
        if not summary.count():
            problems.append(f"solution cell {i} has no toggle")
            continue
        summary.click()
        page.wait_for_timeout(100)
        if not code.is_visible():
            problems.append(f"solution cell {i} stays hidden after its toggle is clicked")
    return len(cells), problems


def read_chapter(browser, site: str, chapter: str, width: int) -> Reading:
    reading = Reading(chapter, width)
    context, page = _open(browser, site, chapter, width, reading)
    try:
        SCREENS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENS / f"{chapter}-{width}.png"), full_page=True)
        reading.text = page.locator("article").inner_text()
        reading.prose = page.evaluate("""() => { const a = document.querySelector('article').cloneNode(true);
          a.querySelectorAll('div.cell, .highlight, script').forEach(e => e.remove()); document.body.appendChild(a);
          const t = a.innerText; a.remove(); return t; }""")
        reading.boxes = page.evaluate(_BOXES_JS)
        reading.headings = page.evaluate(_HEADINGS_JS)
        reading.sidebar = page.evaluate(_SIDEBAR_JS)
        reading.wide_math = page.evaluate(_MATH_JS)
        reading.page_width = page.evaluate("() => document.documentElement.scrollWidth")
        reading.admonitions = page.eval_on_selector_all(
            "article .admonition > .admonition-title", "els => els.map(e => e.innerText.trim())")
        reading.toggles = _check_toggles(page, width)
        reading.solution_cells, reading.solutions = _check_solutions(page)
    finally:
        context.close()
    return reading


@pytest.fixture(scope="module")
def readings(browser, site) -> dict[tuple[str, int], Reading]:
    return {(c, w): read_chapter(browser, site, c, w) for c in CHAPTERS for w in WIDTHS}


def chapter_number(chapter: str) -> int:
    return int(chapter[:2])


# ---- pure checks, each with a failing example in test_checks_catch_the_defects below ----

def doubled_words(text: str) -> list[str]:
    """'Lemma Lemma 4': a cross-reference whose text repeats the word before it."""
    return [m.group(0) for m in re.finditer(rf"\b({BOX_KINDS})s? \1 \d+(?:\.\d+)*", text)]


def heading_box_mismatches(boxes: list[dict]) -> list[str]:
    """A heading that names a numbered box ("Lemma 2: ...") over boxes that carry another number."""
    by_heading: dict[str, list[str]] = {}
    for box in boxes:
        by_heading.setdefault(box["heading"], []).append(box["title"])
    out = []
    for heading, titles in by_heading.items():
        for kind, number in re.findall(rf"\b({BOX_KINDS}) (\d+(?:\.\d+)*)\b", heading):
            if not any(re.match(rf"{kind} {re.escape(number)}\b", t) for t in titles):
                out.append(f"heading {heading!r} names {kind} {number}, but the boxes under it are {titles}")
    return out


def stray_heading_numbers(headings: list[str], boxes: list[dict]) -> list[str]:
    """A heading that names a box ("Theorem 1 as a picture") that the chapter does not have."""
    titles = [b["title"] for b in boxes]
    return [f"heading {h!r} names {kind} {number}, but the chapter's boxes are numbered otherwise"
            for h in headings for kind, number in re.findall(rf"\b({BOX_KINDS}) (\d+(?:\.\d+)*)\b", h)
            if not any(re.match(rf"{kind} {re.escape(number)}\b", t) for t in titles)]


def unnumbered_references(text: str) -> list[str]:
    """'Theorem 1' in a chapter whose boxes read 'Theorem 3.1'; a paper's own numbering must say whose it is."""
    return [m.group(0) for m in re.finditer(rf"\b({BOX_KINDS}) \d+\b(?!\.\d)(?! of )(?! in )", text)]


def numbering_problems(boxes: list[dict], number: int) -> list[str]:
    """Every numbered box of chapter N is numbered N.k, with k counting from 1 per kind."""
    out, seen = [], {}
    for box in boxes:
        m = re.match(rf"(?:Solution to\s*)?({BOX_KINDS}) (\d+)\.(\d+)\b", box["title"])
        if not m:
            if re.match(rf"({BOX_KINDS}) \d", box["title"]):
                out.append(f"{box['title']!r} is not numbered per chapter ({number}.k)")
            continue
        kind, chap, k = m.group(1), int(m.group(2)), int(m.group(3))
        if chap != number:
            out.append(f"{box['title']!r} in chapter {number}")
        if not box["title"].startswith("Solution"):
            if k != seen.get(kind, 0) + 1:
                out.append(f"{box['title']!r} follows {kind} {number}.{seen.get(kind, 0)}")
            seen[kind] = k
    return out


def sidebar_problems(sidebar: list[dict], chapters: list[str]) -> list[str]:
    """Each chapter's sidebar entry starts with its number, the one the chapters use for each other."""
    out = []
    for chapter in chapters:
        entries = [e["text"] for e in sidebar if e["href"] and chapter in e["href"]]
        if not entries:
            out.append(f"{chapter} is missing from the sidebar")
        elif not re.match(rf"{chapter_number(chapter)}\.\s", entries[0]):
            out.append(f"{chapter}'s sidebar entry {entries[0]!r} does not start with '{chapter_number(chapter)}.'")
    return out


def chapter_reference_problems(text: str, count: int) -> list[str]:
    """'Chapter 01' where the sidebar says '1.', or a reference to a chapter that does not exist."""
    out = [f"{m.group(0)!r}: the sidebar numbers chapters without a leading zero"
           for m in re.finditer(r"\b[Cc]hapters? 0\d\b", text)]
    out += [f"{m.group(0)!r}: no such chapter" for m in re.finditer(r"\b[Cc]hapter (\d+)\b", text)
            if not 1 <= int(m.group(1)) <= count]
    return out


def test_checks_catch_the_defects():
    assert doubled_words("by Lemma Lemma 4 and Theorem 3.1") == ["Lemma Lemma 4"]
    assert doubled_words("class Exercise Exercise.label") == []  # an API page, not a reference
    assert doubled_words("by Lemma 3.2 and Theorem 3.1") == []
    old = [{"heading": "Lemma 2: the quadratic encoding", "title": "Lemma 4 (Quadratic encoding)"}]
    assert heading_box_mismatches(old)
    assert not heading_box_mismatches([{"heading": "Lemma 3.3: quadratic", "title": "Lemma 3.3 (Quadratic)"}])
    assert not heading_box_mismatches([{"heading": "The quadratic encoding", "title": "Lemma 3.3 (Quadratic)"}])
    boxes = [{"heading": "The theorem", "title": "Theorem 3.1 (Attention can express convolution)"}]
    assert stray_heading_numbers(["Theorem 1 as a picture"], boxes)
    assert not stray_heading_numbers(["Theorem 3.1 as a picture", "The theorem"], boxes)
    assert unnumbered_references("and Theorem 1 (`conv_to_mhsa`) turns") == ["Theorem 1"]
    assert not unnumbered_references("Theorem 3.1 and Theorem 1 of the paper; Lemma 3.2.")
    assert numbering_problems([{"heading": "", "title": "Exercise 19"}], 6)
    assert numbering_problems([{"heading": "", "title": "Exercise 6.2"}], 6)  # 6.1 skipped
    assert numbering_problems([{"heading": "", "title": "Exercise 5.1"}], 6)
    assert not numbering_problems([{"heading": "", "title": "Exercise 6.1"},
                                   {"heading": "", "title": "Solution to Exercise 6.1"},
                                   {"heading": "", "title": "Lemma 6.1 (x)"}], 6)
    chapters = ["01_a", "02_b"]
    assert sidebar_problems([{"text": "A", "href": "01_a.html"}, {"text": "2. B", "href": "02_b.html"}], chapters)
    assert not sidebar_problems([{"text": "1. A", "href": "01_a.html"}, {"text": "2. B", "href": "02_b.html"}],
                                chapters)
    assert chapter_reference_problems("Chapter 01 wrote", 7) and chapter_reference_problems("Chapter 9", 7)
    assert not chapter_reference_problems("Chapter 1 wrote; chapter 7 trains", 7)


# ---- the built book ----

@pytest.mark.book
@pytest.mark.parametrize("chapter", CHAPTERS)
def test_numbering_headings_and_cross_references(readings, chapter):
    reading = readings[(chapter, WIDTHS[0])]
    assert reading.boxes, f"{chapter}: no numbered boxes found"
    assert not doubled_words(reading.text), f"{chapter}: {doubled_words(reading.text)}"
    assert not heading_box_mismatches(reading.boxes), heading_box_mismatches(reading.boxes)
    assert not stray_heading_numbers(reading.headings, reading.boxes), stray_heading_numbers(
        reading.headings, reading.boxes)
    assert not numbering_problems(reading.boxes, chapter_number(chapter)), numbering_problems(
        reading.boxes, chapter_number(chapter))
    assert not chapter_reference_problems(reading.prose, len(CHAPTERS)), chapter_reference_problems(
        reading.prose, len(CHAPTERS))
    assert not unnumbered_references(reading.prose), f"{chapter}: {unnumbered_references(reading.prose)}"
    assert not sidebar_problems(reading.sidebar, CHAPTERS), sidebar_problems(reading.sidebar, CHAPTERS)


@pytest.mark.book
@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("chapter", CHAPTERS)
def test_sidebar_and_contents_toggles_open(readings, chapter, width):
    toggles = readings[(chapter, width)].toggles
    assert toggles and not any(toggles.values()), f"{chapter} at {width}px: {toggles}"


@pytest.mark.book
@pytest.mark.parametrize("chapter", CHAPTERS)
def test_solution_code_hidden_until_clicked(readings, chapter):
    reading = readings[(chapter, WIDTHS[0])]
    expected = (ROOT / "notebooks" / f"{chapter}.md").read_text().count("### BEGIN SOLUTION")
    assert reading.solution_cells == expected > 0, f"{chapter}: {reading.solution_cells} of {expected} solution cells"
    assert not reading.solutions, f"{chapter}: {reading.solutions}"


@pytest.mark.book
@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("chapter", CHAPTERS)
def test_long_equations_scroll_with_a_cue(readings, chapter, width):
    for box in readings[(chapter, width)].wide_math:
        assert box["overflow"] in ("auto", "scroll") and box["cue"], f"{chapter} at {width}px: {box}"


@pytest.mark.book
@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("chapter", CHAPTERS)
def test_page_does_not_scroll_sideways(readings, chapter, width):
    """Wide content (equations, tables, code, long literals) scrolls in its own box; the page keeps its width."""
    assert readings[(chapter, width)].page_width <= width, (
        f"{chapter} at {width}px is {readings[(chapter, width)].page_width}px wide")


@pytest.mark.book
def test_some_equation_is_wider_than_a_phone(readings):
    """The scroll check above is not vacuous: at 400px some display equation does overflow."""
    assert any(readings[(c, 400)].wide_math for c in CHAPTERS)


@pytest.mark.book
@pytest.mark.parametrize("chapter", CHAPTERS)
def test_goals_first_and_takeaways_before_the_exercises(readings, chapter):
    titles = readings[(chapter, WIDTHS[0])].admonitions
    assert titles and titles[0] == "Learning goals", f"{chapter}: the first box is {titles[:1]}"
    assert "Takeaways" in titles, f"{chapter}: no takeaways box"
    exercises = [i for i, t in enumerate(titles) if t.startswith("Exercise")]
    assert not exercises or titles.index("Takeaways") < exercises[0], f"{chapter}: takeaways after the exercises"


@pytest.mark.book
@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("chapter", CHAPTERS)
def test_no_external_request_and_screenshot_saved(readings, chapter, width):
    reading = readings[(chapter, width)]
    assert not reading.external, f"{chapter} at {width}px: requests left the machine: {reading.external}"
    assert not reading.failed, f"{chapter} at {width}px: {reading.failed}"
    assert (SCREENS / f"{chapter}-{width}.png").stat().st_size > 10_000


@pytest.mark.book
def test_no_doubled_reference_words_on_any_page():
    """Every built page, chapters or not: no 'Lemma Lemma' in the text a reader sees."""
    pages = sorted(HTML.rglob("*.html"))
    assert len(pages) > len(CHAPTERS)
    found = {}
    for page in pages:
        text = re.sub(r"<script.*?</script>|<style.*?</style>", " ", page.read_text(), flags=re.S)
        text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", text))
        if doubled_words(text):
            found[str(page.relative_to(HTML))] = doubled_words(text)
    assert not found, found


BOOK_PAGES = sorted(str(p.relative_to(HTML)) for p in (HTML / "book").rglob("*.html"))


@pytest.mark.book
@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("page_path", BOOK_PAGES)
def test_reference_pages_do_not_scroll_sideways(browser, site, page_path, width):
    """The intro and reference pages (long API signatures, dotted type names) keep the window's width too."""
    context = browser.new_context(viewport={"width": width, "height": 900})
    try:
        page = context.new_page()
        page.route("**/*", lambda r: r.continue_() if r.request.url.startswith(site) else r.abort())
        page.goto(f"{site}/{page_path}", wait_until="load")
        page.wait_for_timeout(500)
        assert page.evaluate("() => document.documentElement.scrollWidth") <= width, f"{page_path} at {width}px"
    finally:
        context.close()
