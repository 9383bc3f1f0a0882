"""The book's chrome as a reader meets it, in headless Chromium at desktop and phone widths.

Each chapter is opened once per width, offline (the session's shared visit, ``visit.py``), and read: numbering, headings against the boxes under them,
cross-reference text, the sidebar and contents toggles (clicked), folded solution code (clicked), long display
equations, learning goals and takeaways. A screenshot of each chapter at each width is saved under
``_build/screens/`` (JPEG) for a person to look at (not committed): its first screen, or the whole page with
``BOOK_SCREENS=full``.
"""

from __future__ import annotations

import re

import pytest

from .chrome_checks import BOX_KINDS
from .conftest import HTML, ROOT

CHAPTERS = sorted(p.stem for p in (HTML / "notebooks").glob("[0-9][0-9]_*.html"))
WIDTHS = (1400, 400)
SCREENS = HTML.parent / "screens"


def reading(visits, chapter: str, width: int):
    """The chapter's one visit at ``width`` (``visit.py``)."""
    return visits(f"notebooks/{chapter}.html", width)


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
def test_numbering_headings_and_cross_references(visits, chapter):
    seen = reading(visits, chapter, WIDTHS[0]).chrome
    boxes, text, prose, headings = seen["boxes"], seen["text"], seen["prose"], seen["headings"]
    assert boxes, f"{chapter}: no numbered boxes found"
    assert not doubled_words(text), f"{chapter}: {doubled_words(text)}"
    assert not heading_box_mismatches(boxes), heading_box_mismatches(boxes)
    assert not stray_heading_numbers(headings, boxes), stray_heading_numbers(headings, boxes)
    assert not numbering_problems(boxes, chapter_number(chapter)), numbering_problems(boxes, chapter_number(chapter))
    assert not chapter_reference_problems(prose, len(CHAPTERS)), chapter_reference_problems(prose, len(CHAPTERS))
    assert not unnumbered_references(prose), f"{chapter}: {unnumbered_references(prose)}"
    assert not sidebar_problems(seen["sidebar"], CHAPTERS), sidebar_problems(seen["sidebar"], CHAPTERS)


@pytest.mark.book
@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("chapter", CHAPTERS)
def test_sidebar_and_contents_toggles_open(visits, chapter, width):
    toggles = reading(visits, chapter, width).clicks["toggles"]
    assert toggles and not any(toggles.values()), f"{chapter} at {width}px: {toggles}"


@pytest.mark.book
@pytest.mark.parametrize("chapter", CHAPTERS)
def test_solution_code_hidden_until_clicked(visits, chapter):
    clicks = reading(visits, chapter, WIDTHS[0]).clicks
    expected = (ROOT / "notebooks" / f"{chapter}.md").read_text().count("### BEGIN SOLUTION")
    assert clicks["solution cells"] == expected > 0, f"{chapter}: {clicks['solution cells']} of {expected} solution cells"
    assert not clicks["solutions"], f"{chapter}: {clicks['solutions']}"


@pytest.mark.book
@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("chapter", CHAPTERS)
def test_long_equations_scroll_with_a_cue(visits, chapter, width):
    for box in reading(visits, chapter, width).chrome["wide_math"]:
        assert box["overflow"] in ("auto", "scroll") and box["cue"], f"{chapter} at {width}px: {box}"


@pytest.mark.book
@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("chapter", CHAPTERS)
def test_page_does_not_scroll_sideways(visits, chapter, width):
    """Wide content (equations, tables, code, long literals) scrolls in its own box; the page keeps its width."""
    page_width = reading(visits, chapter, width).chrome["page_width"]
    assert page_width <= width, f"{chapter} at {width}px is {page_width}px wide"


@pytest.mark.book
def test_some_equation_is_wider_than_a_phone(visits):
    """The scroll check above is not vacuous: at 400px some display equation does overflow."""
    assert any(reading(visits, c, 400).chrome["wide_math"] for c in CHAPTERS)


@pytest.mark.book
@pytest.mark.parametrize("chapter", CHAPTERS)
def test_goals_first_and_takeaways_before_the_exercises(visits, chapter):
    titles = reading(visits, chapter, WIDTHS[0]).chrome["admonitions"]
    assert titles and titles[0] == "Learning goals", f"{chapter}: the first box is {titles[:1]}"
    assert "Takeaways" in titles, f"{chapter}: no takeaways box"
    exercises = [i for i, t in enumerate(titles) if t.startswith("Exercise")]
    assert not exercises or titles.index("Takeaways") < exercises[0], f"{chapter}: takeaways after the exercises"


@pytest.mark.book
@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("chapter", CHAPTERS)
def test_no_external_request_and_screenshot_saved(visits, chapter, width):
    seen = reading(visits, chapter, width)
    assert not seen.external, f"{chapter} at {width}px: requests left the machine: {seen.external}"
    assert not seen.failed, f"{chapter} at {width}px: {seen.failed}"
    assert seen.screenshot is not None and seen.screenshot.stat().st_size > 10_000


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
def test_reference_pages_do_not_scroll_sideways(visits, page_path, width):
    """The intro and reference pages (long API signatures, dotted type names) keep the window's width too."""
    assert visits(page_path, width).chrome["page_width"] <= width, f"{page_path} at {width}px"
