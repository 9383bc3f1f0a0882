"""One visit per page and width: the built book is opened once at 1400 px and once at 400 px, and everything the
browser checks need is read in that one load, in an order that leaves the clicks to the end.

Before, each test module opened every page on its own, about eight loads of each chapter in all; most of the
time went to loading and typesetting the same page again. :class:`Visits` keeps each page's reading for the whole
session, so that each module's tests assert on the same load. A visit reads, in order:

1. what the page fetched (failed and external requests, the files and their sizes), once MathJax has typeset
   every formula (it draws them lazily: those near the window first, then book.js the rest in the background, as
   a reader who waits a few seconds sees them), book.js has sized the figures and no file has arrived for half a
   second;
2. what a reader sees, before any click: the reader checks (``reader_checks``), the chrome (numbering, headings,
   the sidebar, long equations, the page's width), the shape checks (``shape_checks``), the site checks
   (``site_checks``: touch, explorables inside their box, the Back to top button, the unfold button), icons, TeX
   errors and formulas without their speech MathML, and a screenshot of each chapter (``_build/screens``: its
   first screen, or with ``BOOK_SCREENS=full`` the whole page);
3. what clicks do: the sidebar toggles, the folded solution code, the links in the solutions' titles (at 400 px),
   every viewer's controls (at 1400 px), and last a resize from 400 to 1400 px, after which no scroll cue may be
   left on a box that fits.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlparse

from .chrome_checks import BOXES_JS, HEADINGS_JS, MATH_SCROLL_JS, SIDEBAR_JS, check_solutions, check_toggles
from .reader_checks import (CAPTION_JS, CODE_JS, CURSOR_JS, IMAGES_JS, MATH_JS, MIN_TEXT_PX, SEARCH_JS, TEXT_JS,
                            VIEWER_JS, image_bytes, tiny_image_text, viewer_problems)
from .shape_checks import (EQUATION_SCROLL_JS, FIGURE_FIT_JS, FIGURE_WORDS_JS, FIRST_SCREEN_PX, STALE_MARKS_JS,
                           STRUCTURE_JS, png_texts, raw_subscripts, tap_solution_links)
from .site_checks import (EXPLORABLE_FIT_JS, MATHS_DRAWN_JS, UNFOLD_JS, back_to_top_overlaps, explorable_button_fits,
                          touch_traps)

WIDE, NARROW = 1400, 400
# The saved screenshot is the first screen a reader sees; BOOK_SCREENS=full saves each chapter's whole page
# instead (about 3 CPU seconds a chapter at 1400 px, 1 s at 400 px, against 0.05 s for the first screen).
FULL_SCREENSHOTS = os.environ.get("BOOK_SCREENS", "") == "full"
MAX_PAGE_PX = 60_000  # at 1400 px: a reference page longer than this is split (the API reference was 217,508 px)

_ICONS_JS = """() => Array.from(document.querySelectorAll('i[class*="fa-"], span[class*="fa-"]'))
  .filter(e => e.getClientRects().length).map(e => ({cls: e.className, width: e.getBoundingClientRect().width,
    family: getComputedStyle(e, '::before').fontFamily, glyph: getComputedStyle(e, '::before').content}))"""
# A TeX error, or a macro that no loaded extension defines (drawn as red "\\name" by noundefined; the assistive
# MathML beside each formula keeps it as an <mtext mathcolor="red">).
_TEX_ERRORS_JS = """() => document.querySelectorAll('mjx-merror').length + Array.from(
    document.querySelectorAll('mjx-assistive-mml mtext[mathcolor=red]'))
    .filter(e => e.textContent.startsWith('\\\\')).length"""
_FETCHED_JS = "() => [location.href, ...performance.getEntriesByType('resource').map(e => e.name)]"
_PROSE_JS = """() => { const a = document.querySelector('article').cloneNode(true);
  a.querySelectorAll('div.cell, .highlight, script').forEach(e => e.remove()); document.body.appendChild(a);
  const t = a.innerText; a.remove(); return t; }"""
_FRAMES_JS = """() => Array.from(document.querySelectorAll('article img.av-frame'))
  .filter(i => i.getBoundingClientRect().width > 0)
  .map(i => ({src: i.src, natural: i.naturalWidth, shown: i.getBoundingClientRect().width}))"""


@dataclass
class Visit:
    """What one page at one width showed, and what happened when it was clicked."""

    page: str
    width: int
    failed: list[str] = field(default_factory=list)  # requests that failed or answered >= 400
    external: list[str] = field(default_factory=list)  # requests that would have left the machine (blocked)
    files: dict[str, int] = field(default_factory=dict)  # every built file the page fetched -> its size
    load_errors: list[str] = field(default_factory=list)  # uncaught errors and console errors while loading
    math_elements: int = 0
    math_errors: int = 0
    colab_links: list[str] = field(default_factory=list)
    widgets: int = 0
    icons: list[dict] = field(default_factory=list)
    reader: dict[str, list[str]] = field(default_factory=dict)  # reader-check name -> problems
    shape: dict = field(default_factory=dict)  # shape-check name -> problems or measures
    site: dict = field(default_factory=dict)  # site-check name (site_checks.py) -> problems, or the unfold button
    chrome: dict = field(default_factory=dict)  # text, prose, boxes, headings, sidebar, wide_math, ...
    screenshot: Path | None = None
    clicks: dict[str, list[str]] = field(default_factory=dict)  # toggles, solutions, links, viewers, resize


def _settle(page, site: str) -> None:
    """Wait for MathJax's typesetting of every formula, book.js's figure sizing, the fonts, and half a second with
    no new file. MathJax draws lazily (ui/lazy): its first pass draws the formulas near the window, and book.js
    then draws the others in the background and marks <html> data-maths-typeset when none is left; that is the
    page a reader sees a few seconds after it opens, and the one every check reads."""
    if page.evaluate("() => !!(window.MathJax && MathJax.startup && MathJax.startup.promise)"):
        page.evaluate("() => MathJax.startup.promise")
        if page.locator("script[src*='book.js']").count():
            page.wait_for_selector("html[data-maths-typeset]", state="attached", timeout=300_000)
            page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
    if page.locator("script[src*='book.js']").count():
        page.wait_for_selector("html[data-figures-legible]", state="attached", timeout=15_000)
    page.evaluate("() => document.fonts.ready.then(() => true)")
    seen, quiet = -1, 0
    for _ in range(40):
        count = page.evaluate("() => performance.getEntriesByType('resource').length")
        quiet = quiet + 1 if count == seen else 0
        if quiet >= 2:
            break
        seen = count
        page.wait_for_timeout(250)


def _local(url: str, html: Path) -> Path:
    path = unquote(urlparse(url).path).lstrip("/")
    local = html / (path or "index.html")
    return local / "index.html" if local.is_dir() else local


def request_failure(url: str, failure: str | None, site: str, html: Path) -> str | None:
    """What to report for a request of the book's own that Chromium says failed, or None if it is no defect.

    A load the page itself cancelled (``net::ERR_ABORTED``, as when a ``<picture>`` figure switches away from its
    phone source mid-load because the viewport changed) is no broken resource when the file is in the build; a
    file that is missing answers 404 and is caught by the response handler, and every other failure is reported."""
    if not url.startswith(site):
        return None
    if failure and "ERR_ABORTED" in failure and _local(url, html).is_file():
        return None
    return f"{failure or 'failed'} {url}"


def _files(urls: list[str], html: Path) -> dict[str, int]:
    files = {}
    for url in urls:
        local = _local(url, html)
        if local.is_file():
            files[str(local.relative_to(html))] = local.stat().st_size
    return files


def _reader_checks(page, site: str, html: Path, width: int) -> dict[str, list[str]]:
    found = {"maths": page.evaluate(MATH_JS), "captions": page.evaluate(CAPTION_JS),
             "text": page.evaluate(TEXT_JS, MIN_TEXT_PX), "cursor": page.evaluate(CURSOR_JS),
             "search": page.evaluate(SEARCH_JS), "code": page.evaluate(CODE_JS), "viewers": page.evaluate(VIEWER_JS)}
    images = page.evaluate(IMAGES_JS)
    frames = page.evaluate(_FRAMES_JS)
    # Figures and a viewer's frames are judged at both widths, as shown: a phone reader reads them in place.
    judged = images + [f for f in frames if f not in images]
    found["image text"] = tiny_image_text(judged, lambda src: image_bytes(src, html, site))
    height = page.evaluate("() => document.documentElement.scrollHeight")
    found["height"] = [f"the page is {height} px tall"] if width == WIDE and height > MAX_PAGE_PX else []
    return found


def _figure_words(page, site: str, html: Path) -> list[str]:
    """Raw subscripts in each figure's caption, alt text and the words its PNGs declare."""
    out = []
    for figure in page.evaluate(FIGURE_WORDS_JS):
        texts = [figure["caption"], *figure["alts"]]
        for src in figure["srcs"]:
            data = image_bytes(src, html, site)
            if data and data.startswith(b"\x89PNG"):
                texts += png_texts(data)
        out += [f"{figure['name']}: {t!r}" for t in raw_subscripts(texts)]
    return out


def visit(browser, site: str, html: Path, page_path: str, width: int, screens: Path | None = None,
          chapters: int = 1) -> Visit:
    """Open ``page_path`` at ``width`` once and read everything (see the module's docstring). ``chapters``: how many
    links the sidebar must show (one per chapter)."""
    result = Visit(page_path, width)
    chapter = page_path.startswith("notebooks/")
    context = browser.new_context(viewport={"width": width, "height": 900})
    context.set_default_navigation_timeout(180_000)  # a chapter on a busy two-core machine
    page = context.new_page()
    page.add_init_script("performance.setResourceTimingBufferSize(5000)")
    errors: list[str] = []
    page.on("pageerror", lambda err: errors.append(f"uncaught: {err}"))
    page.on("console", lambda msg: msg.type == "error" and errors.append(f"console: {msg.text}"))
    def failed(req):
        problem = request_failure(req.url, req.failure, site, html)
        if problem:
            result.failed.append(problem)

    page.on("requestfailed", failed)
    page.on("response", lambda resp: resp.status >= 400 and result.failed.append(f"{resp.status} {resp.url}"))

    def block(route):  # only requests that would leave the machine come here; the book's own go straight through
        result.external.append(route.request.url)
        route.abort()

    page.route(re.compile(rf"^(?!{re.escape(site)}/|data:|blob:|about:)"), block)
    try:
        page.goto(f"{site}/{page_path}", wait_until="load")
        _settle(page, site)
        result.load_errors = list(errors)
        result.files = _files(page.evaluate(_FETCHED_JS), html)
        result.math_elements = page.evaluate("() => document.querySelectorAll('mjx-container').length")
        result.math_errors = page.evaluate(_TEX_ERRORS_JS)
        result.site["maths"] = page.evaluate(MATHS_DRAWN_JS)
        result.colab_links = page.eval_on_selector_all("a[href*='colab.research.google.com']",
                                                       "els => els.map(e => e.href)")
        result.widgets = page.evaluate("() => document.querySelectorAll('.jupyter-widgets, .widget-slider').length")
        result.icons = page.evaluate(_ICONS_JS) if width == WIDE else []
        result.chrome["page_width"] = page.evaluate("() => document.documentElement.scrollWidth")
        if page.locator("article").count():
            result.reader = _reader_checks(page, site, html, width)
        if chapter:
            _read_chapter(page, site, html, width, result, screens)
            _click_chapter(page, width, result, errors, chapters)
    finally:
        context.close()
    return result


def _read_chapter(page, site: str, html: Path, width: int, result: Visit, screens: Path | None) -> None:
    result.chrome.update(
        text=page.locator("article").inner_text(), prose=page.evaluate(_PROSE_JS), boxes=page.evaluate(BOXES_JS),
        headings=page.evaluate(HEADINGS_JS), sidebar=page.evaluate(SIDEBAR_JS),
        wide_math=page.evaluate(MATH_SCROLL_JS), viewers=page.locator(".attnconv-viewer").count(),
        admonitions=page.eval_on_selector_all("article .admonition > .admonition-title",
                                              "els => els.map(e => e.innerText.trim())"))
    result.site.update(explorable_fit=page.evaluate(EXPLORABLE_FIT_JS), unfold=page.evaluate(UNFOLD_JS))
    if width == NARROW:
        result.shape.update(figure_fit=page.evaluate(FIGURE_FIT_JS), equations=page.evaluate(EQUATION_SCROLL_JS))
        result.site.update(touch=touch_traps(page), back_to_top=back_to_top_overlaps(page))
    else:
        result.shape.update(structure=page.evaluate(STRUCTURE_JS, FIRST_SCREEN_PX),
                            figure_words=_figure_words(page, site, html))
    if screens is not None:
        screens.mkdir(parents=True, exist_ok=True)
        result.screenshot = screens / f"{Path(result.page).stem}-{width}.jpg"
        page.screenshot(path=str(result.screenshot), full_page=FULL_SCREENSHOTS, type="jpeg", quality=70)
    # last, as it changes the explorables' state: every button of an explorable pressed, the fit read after each
    result.site["explorable_fit"] += explorable_button_fits(page)


def _click_chapter(page, width: int, result: Visit, errors: list[str], chapters: int) -> None:
    result.clicks["toggles"] = check_toggles(page, width, chapters)
    cells, problems = check_solutions(page)
    result.clicks["solution cells"], result.clicks["solutions"] = cells, problems
    if width == NARROW:
        errors.clear()
        result.clicks["solution links"] = tap_solution_links(page) + [f"page error: {e}" for e in errors
                                                                      if e.startswith("uncaught")]
        errors.clear()
        page.set_viewport_size({"width": WIDE, "height": 900})  # a phone turned into a desktop window
        page.wait_for_timeout(400)
        result.clicks["resize"] = page.evaluate(STALE_MARKS_JS)
    else:
        errors.clear()  # from here on only the viewers' own errors
        result.clicks["viewers"] = viewer_problems(page)
        result.clicks["viewer errors"] = [e for e in errors if e.startswith("uncaught")]
        result.clicks["leftover widgets"] = page.locator(".widget-slider, .jupyter-widgets").count()


class Visits:
    """Each (page, width) visited once per session, on first use."""

    def __init__(self, browser, site: str, html: Path, screens: Path):
        self.browser, self.site, self.html, self.screens = browser, site, html, screens
        self.chapters = len(list((html / "notebooks").glob("[0-9][0-9]_*.html")))
        self._done: dict[tuple[str, int], Visit] = {}

    def __call__(self, page_path: str, width: int = WIDE) -> Visit:
        key = (page_path, width)
        if key not in self._done:
            self._done[key] = visit(self.browser, self.site, self.html, page_path, width, self.screens,
                                    self.chapters)
        return self._done[key]
