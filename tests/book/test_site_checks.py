"""The site checks (``site_checks.py``), each failing on a crafted wrong page and passing on the fixed one:

- touch-action none only where a finger drags (:func:`touch_traps`), on a crafted canvas and on the book's own
  explorables, with and without the fix in explorable.css;
- nothing of an explorable past its box (:data:`EXPLORABLE_FIT_JS`), on crafted boxes and on chapter 05's bias
  explorable with k = 4 in a phone's column, with the bars' old fixed width and with the fix;
- the "Back to top" button never over an explorable (:func:`back_to_top_overlaps`), without and with book.js;
- the unfold button's count in good English (:func:`unfold_label_problems`), on words and on book.js's button;
- no 404 at the server, the browser's own ``/favicon.ico`` included (:class:`ServedLog`), without and with the
  icon that book/ext/favicon.py writes;
- every formula drawn, each with its MathML for a screen reader (:data:`MATHS_DRAWN_JS`), on a page of formulas
  far below its first screen typeset by the book's own MathJax with ui/lazy: with book.js, which draws the rest in
  the background, and without it (a reader who never scrolls there gets placeholders).
"""

from __future__ import annotations

import functools
import http.server
import importlib.util
import threading
from pathlib import Path

import pytest

from .site_checks import (EXPLORABLE_FIT_JS, MATHS_DRAWN_JS, UNFOLD_JS, ServedLog, back_to_top_overlaps,
                          logging_handler, maths_problems, touch_traps, unfold_label_problems)

ROOT = Path(__file__).resolve().parents[2]
STATIC = ROOT / "book" / "js"
COLUMN_400 = 352  # the article's width in a 400 px window (sphinx-book-theme's margins)


def _open(browser, html: str, width: int = 400, touch: bool = False):
    context = browser.new_context(viewport={"width": width, "height": 900}, has_touch=touch, is_mobile=touch,
                                  device_scale_factor=1)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda err: errors.append(str(err)))
    page.set_content(html)
    return context, page, errors


def _article(body: str, head: str = "", column: int | None = None) -> str:
    width = f' style="width: {column}px; margin: 0 24px"' if column else ""
    return (f'<!DOCTYPE html><html><head><meta name="viewport" content="width=device-width, initial-scale=1">{head}'
            f'</head><body style="margin: 0"><div class="bd-article"><article{width}>{body}</article></div></body></html>')


def _explorables(*explorables, column: int | None = None, head: str = "") -> str:
    return _article("".join(e._repr_html_() for e in explorables), head, column)


# ---- touch ----

def test_touch_trap_is_a_blocking_element_without_a_drag(browser):
    page_html = _article(
        '<canvas id="tap" style="touch-action: none" width="40" height="40"></canvas>'
        '<canvas id="drag" style="touch-action: none" width="40" height="40"></canvas>'
        '<canvas id="free" width="40" height="40"></canvas>'
        '<div id="bars" style="touch-action: none"><div>bar</div></div>')
    context, page, _ = _open(browser, page_html)
    try:
        page.evaluate("""() => {
          document.getElementById('tap').addEventListener('click', () => {});
          document.getElementById('drag').addEventListener('touchmove', () => {}, {passive: false});
          document.getElementById('free').addEventListener('click', () => {});
          document.getElementById('bars').addEventListener('pointermove', () => {}); }""")
        problems = touch_traps(page)
        assert len(problems) == 1 and problems[0].startswith("canvas.") and "click" in problems[0], problems
        assert not page.locator("[data-touch-probe]").count(), "the probe marks are taken off again"
    finally:
        context.close()


def test_explorables_block_scrolling_only_where_a_finger_drags(browser):
    from attnconv.explorables.attention_map import attention_explorable
    from attnconv.explorables.bias_kernel import bias_explorable

    shown = (attention_explorable(), bias_explorable())
    context, page, errors = _open(browser, _explorables(*shown), touch=True)
    try:
        assert not errors, errors
        assert not touch_traps(page)
        # what explorable.css said before: every clickable canvas, the head thumbnails that only take taps too
        page.add_style_tag(content=".attnconv-explorable canvas.av-clickable {touch-action: none !important;}")
        problems = touch_traps(page)
        assert problems and all("ax-small" in p for p in problems), problems
        assert len(problems) == 4, problems  # one per head thumbnail
    finally:
        context.close()


# ---- explorables inside their box ----

def test_fit_check_finds_what_sticks_out_and_leaves_scrollers_alone(browser):
    page_html = _article(
        '<div class="attnconv-explorable" id="x-wide" style="width: 300px"><div style="width: 306px">wide</div></div>'
        '<div class="attnconv-explorable" id="x-scroll" style="width: 300px"><div style="overflow-x: auto">'
        '<div style="width: 600px">scrolls</div></div></div>'
        '<div class="attnconv-explorable" id="x-svg" style="width: 300px"><svg width="100" height="20">'
        '<rect x="90" y="0" width="30" height="10"/></svg></div>'
        '<div class="attnconv-explorable" id="x-fine" style="width: 300px"><div style="width: 300px">ok</div></div>')
    context, page, _ = _open(browser, page_html)
    try:
        problems = page.evaluate(EXPLORABLE_FIT_JS)
        assert any(p.startswith("#x-wide: div past its box by 6.0 px") for p in problems), problems
        assert any(p.startswith("#x-svg: rect past its SVG by 20.0 px") for p in problems), problems
        assert not [p for p in problems if p.startswith(("#x-scroll", "#x-fine"))], problems
    finally:
        context.close()


@pytest.mark.parametrize("column, width", [(COLUMN_400, 400), (736, 1400)])
def test_bias_explorable_bars_fit_the_column_for_every_k(browser, column, width):
    from attnconv.explorables.bias_kernel import bias_explorable

    context, page, errors = _open(browser, _explorables(bias_explorable(), column=column), width, touch=width < 500)
    root = "#attnconv-x-ch05-bias"
    try:
        for k in (1, 2, 3, 4):
            page.locator(f"{root} button[data-k='{k}']").click()
            assert page.locator(f"{root} .ax-bar-box").count() == 2 * k + 1
            assert not page.evaluate(EXPLORABLE_FIT_JS), (k, page.evaluate(EXPLORABLE_FIT_JS))
        # the bars' old fixed 38 px columns: with k = 4 the last one ran 6 px past a phone's column
        page.add_style_tag(content=f"{root} .ax-bars > .ax-panel {{flex: none !important; width: 38px !important}}")
        problems = page.evaluate(EXPLORABLE_FIT_JS)
        if column == COLUMN_400:
            assert any("div.ax-panel past its box by 6.0 px" in p for p in problems), problems
        assert not errors, errors
    finally:
        context.close()


COLUMN_320 = 272  # the article's width in a 320 px window, the narrowest phone the book is read on

# Chapter 05's attention matrix (13 px a token, beside the tokens) is wider than a 320 px phone's column: its panel
# ran 38 px past the column and the whole page scrolled sideways. With book.css it scrolls in its own box, and
# book.js gives that box the edge shadow and the dashed rule of a wide equation.
MATRIX_PANEL_JS = r"""() => { const c = document.querySelector('canvas.ax-matrix'); const p = c.closest('.ax-panel');
  return {page: document.documentElement.scrollWidth, scrolls: p.scrollWidth > p.clientWidth + 1,
          cls: p.className, past: Math.round(p.getBoundingClientRect().right
                                             - p.closest('article').getBoundingClientRect().right)}; }"""


@pytest.mark.parametrize("with_book", [False, True])
def test_bias_explorable_matrix_fits_a_320_px_phone(browser, with_book):
    from attnconv.explorables.bias_kernel import bias_explorable

    head = f"<style>{(STATIC / 'book.css').read_text()}</style>" if with_book else ""
    context, page, errors = _open(browser, _explorables(bias_explorable(), column=COLUMN_320, head=head), 320,
                                  touch=True)
    try:
        if with_book:
            page.add_script_tag(content=(STATIC / "book.js").read_text())
            page.wait_for_timeout(100)
        found, problems = page.evaluate(MATRIX_PANEL_JS), page.evaluate(EXPLORABLE_FIT_JS)
        if with_book:
            assert found["page"] <= 320 and found["past"] <= 0, found
            assert found["scrolls"] and "math-scrolls" in found["cls"] and "math-more-right" in found["cls"], found
            assert not problems, problems
        else:
            assert found["page"] > 320 and found["past"] > 0, found
            assert any("past its box" in p for p in problems), problems
        assert not errors, errors
    finally:
        context.close()


# ---- the Back to top button ----

# The theme's button as pydata-sphinx-theme styles and shows it: fixed at 90% of the window's height, centred,
# shown on an upward scroll below the header.
_THEME_BUTTON = """<style>#pst-back-to-top {display: none; position: fixed; top: 90vh; left: 50vw;
  transform: translate(-50%); z-index: 1080; height: 38px; width: 130px}</style>"""
_THEME_SCRIPT = """(() => { const b = document.getElementById('pst-back-to-top'); let old = 0;
  window.addEventListener('scroll', () => { b.style.display = old > scrollY && scrollY > 60 ? 'block' : 'none';
    old = scrollY; }); })()"""


@pytest.mark.parametrize("with_book_js", [False, True])
def test_back_to_top_never_covers_an_explorable(browser, with_book_js):
    body = ('<div style="height: 1500px">text</div>'
            '<div class="attnconv-explorable" id="x-panel" style="height: 700px; background: #eee">controls</div>'
            '<div style="height: 2500px">more text</div>'
            '<button type="button" id="pst-back-to-top">Back to top</button>')
    context, page, errors = _open(browser, _article(body, _THEME_BUTTON))
    try:
        page.add_script_tag(content=_THEME_SCRIPT)
        if with_book_js:
            page.add_style_tag(content=(STATIC / "book.css").read_text())
            page.add_script_tag(content=(STATIC / "book.js").read_text())
        problems = back_to_top_overlaps(page)
        if with_book_js:
            assert not problems, problems
            # it still shows where no explorable is
            page.evaluate("() => { scrollTo({top: 3600, behavior: 'instant'}); }")
            page.wait_for_timeout(60)
            page.evaluate("() => { scrollTo({top: 3400, behavior: 'instant'}); }")
            page.wait_for_timeout(60)
            assert page.locator("#pst-back-to-top").is_visible()
        else:
            assert problems and "#x-panel" in problems[0], problems
        assert not errors, errors
    finally:
        context.close()


# ---- the unfold button ----

def test_unfold_label_words():
    assert not unfold_label_problems("Show the 1 folded check and its provenance", 1)
    assert not unfold_label_problems("Show all 3 folded checks and provenance", 3)
    assert unfold_label_problems("Show all 1 folded checks and provenance", 1)
    assert unfold_label_problems("Show the 1 folded checks and provenance", 1)
    assert unfold_label_problems("Show all 3 folded check and provenance", 3)
    assert unfold_label_problems("Show all 3 folded checks and provenance", 4)
    assert unfold_label_problems("Unfold", 2)


@pytest.mark.parametrize("count, words", [(1, "Show the 1 folded check and its provenance"),
                                          (3, "Show all 3 folded checks and provenance")])
def test_book_js_counts_the_folded_checks_in_good_english(browser, count, words):
    folds = "".join('<div class="cell"><details class="hide"><summary>Show code</summary><pre>assert True</pre>'
                    '</details></div>' for _ in range(count))
    solution = ('<div class="cell"><details class="hide"><summary>Show code</summary><pre># BEGIN SOLUTION</pre>'
                '</details></div>')
    context, page, errors = _open(browser, _article(f"<h1>A chapter</h1>{folds}{solution}"), 1400)
    try:
        page.add_script_tag(content=(STATIC / "book.js").read_text())
        got = page.evaluate(UNFOLD_JS)
        assert got == {"text": words, "folds": count}, got
        assert not unfold_label_problems(got["text"], got["folds"])
        page.locator("button.unfold-checks").click()
        assert page.locator("button.unfold-checks").inner_text() == "Fold the checks and provenance again"
        assert not errors, errors
    finally:
        context.close()


# ---- no 404 at the server ----

def _favicon_module():
    spec = importlib.util.spec_from_file_location("book_favicon", ROOT / "book" / "ext" / "favicon.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


def _served_visit(browser, folder: Path, page: str = "index.html") -> list[str]:
    log = ServedLog()
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(logging_handler(_Quiet, log), directory=str(folder)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    context = browser.new_context()
    try:
        tab = context.new_page()
        tab.goto(f"http://127.0.0.1:{server.server_address[1]}/{page}", wait_until="load")
        tab.wait_for_timeout(1000)  # the browser asks for the icon after the load
    finally:
        context.close()
        server.shutdown()
    return log.since(0)


def test_a_site_without_favicon_ico_answers_404_and_the_drawn_icon_fixes_it(full_browser, tmp_path):
    (tmp_path / "index.html").write_text("<!DOCTYPE html><html><head><title>t</title></head><body>a page</body></html>")
    assert "404 /favicon.ico" in _served_visit(full_browser, tmp_path)
    favicon = _favicon_module()
    favicon.write_ico(tmp_path / "favicon.ico")
    assert not _served_visit(full_browser, tmp_path)


def test_the_drawn_icon_is_the_svg_icon(tmp_path):
    from PIL import Image

    favicon = _favicon_module()
    image = favicon.draw_icon(64)
    pixel = lambda x, y: image.getpixel((x * 4 + 2, y * 4 + 2))  # the centre of SVG unit (x, y)
    assert pixel(8, 8)[:3] == (0x2C, 0x6E, 0x9B)  # the blue tile between the cells
    assert pixel(4, 4)[:3] == (255, 255, 255) and pixel(10, 4)[:3] == (255, 255, 255)
    assert pixel(4, 10)[:3] == (255, 255, 255) and pixel(10, 10)[:3] == (0xF2, 0xB1, 0x34)
    assert pixel(0, 0)[3] == 0  # the rounded corner is transparent
    svg = (STATIC / "favicon.svg").read_text()
    for colour in ("#2c6e9b", "#fff", "#f2b134"):
        assert colour in svg, colour
    with pytest.raises(ValueError, match="px"):
        favicon.draw_icon(8)
    path = favicon.write_ico(tmp_path / "favicon.ico")
    assert Image.open(path).info["sizes"] >= {(16, 16), (32, 32), (48, 48)}


# ---- maths typeset lazily, the rest in the background ----

VENDOR = ROOT / "book" / "vendor" / "mathjax"
_LAZY_CONFIG = ('<script>window.MathJax = {"loader": {"load": ["input/tex", "output/chtml", "a11y/assistive-mml", '
                '"ui/lazy"]}, "options": {"processHtmlClass": "tex2jax_process|mathjax_process|math|output_area"}};'
                '</script><script defer src="mathjax/startup.js"></script>')


def _maths_page(folder: Path, book_js: bool) -> None:
    """A page with one formula on its first screen and 60 more below a 6,000 px gap, MathJax and ui/lazy from
    book/vendor (as the build serves them), with or without book.js."""
    if not (VENDOR / "startup.js").is_file() or not (VENDOR / "ui" / "lazy.js").is_file():
        pytest.fail(f"{VENDOR} lacks startup.js or ui/lazy.js: run `make assets` first")
    (folder / "mathjax").symlink_to(VENDOR, target_is_directory=True)
    below = "".join(f'<p>Term {i}: <span class="math">\\(x_{{{i}}}^2 + \\alpha_{i}\\)</span>.</p>'
                    f'<div class="math">\\[\\sum_{{j=1}}^{{{i}}} \\beta_j x_j\\]</div>' for i in range(30))
    script = '<script defer src="book.js"></script>' if book_js else ""
    if book_js:
        (folder / "book.js").write_text((STATIC / "book.js").read_text())
    (folder / "index.html").write_text(
        f'<!DOCTYPE html><html><head>{_LAZY_CONFIG}{script}</head><body><div class="bd-article"><article>'
        f'<p>First: <span class="math">\\(a^2 + b^2\\)</span></p><div style="height: 6000px"></div>{below}'
        f'</article></div></body></html>')


@pytest.mark.parametrize("book_js", [True, False])
def test_maths_far_below_the_first_screen_is_drawn_with_its_mathml(browser, tmp_path, book_js):
    _maths_page(tmp_path, book_js)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(tmp_path)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    context = browser.new_context(viewport={"width": 400, "height": 900})
    try:
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda err: errors.append(str(err)))
        page.goto(f"http://127.0.0.1:{server.server_address[1]}/index.html", wait_until="load", timeout=120_000)
        page.wait_for_function("() => window.MathJax && MathJax.startup && MathJax.startup.promise", timeout=60_000)
        page.evaluate("() => MathJax.startup.promise")
        if book_js:
            page.wait_for_selector("html[data-maths-typeset]", state="attached", timeout=120_000)
        else:
            page.wait_for_timeout(3000)
        found = page.evaluate(MATHS_DRAWN_JS)
        assert found["formulas"] == 61, found
        first = page.evaluate("() => !document.querySelector('article > p:first-child mjx-container > mjx-lazy')")
        assert first, "the first screen's formula is drawn"
        if book_js:
            assert maths_problems(found) == [], found
        else:
            problems = maths_problems(found)
            assert found["waiting"] == 60 and any("not drawn yet" in p for p in problems), found
        assert not errors, errors
    finally:
        context.close()
        server.shutdown()
