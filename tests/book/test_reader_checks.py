"""Every page of the built book, read at 1400 px and at 400 px as a reader would: no clipped maths, no figure
without a numbered caption, no text under 9 px as shown, no console error, no crosshair that does nothing, and
no prose that promises real data above stand-in output.

``test_*_catches_*`` show each check failing on a crafted wrong page (and passing on a right one), so that a
check that cannot fail is caught too.
"""

from __future__ import annotations

import pytest

from .conftest import HTML
from .reader_checks import (CAPTION_JS, CODE_JS, CURSOR_JS, IMAGES_JS, MATH_JS, MIN_TEXT_PX, SEARCH_JS, TEXT_JS, VIEWER_JS,
                            stand_in_claims, tiny_image_text)
from .test_reader_view import _pieces

PAGES = sorted(str(p.relative_to(HTML)) for p in HTML.rglob("*.html")
               if str(p.relative_to(HTML)).startswith(("notebooks/", "book/")))  # the chapters and every book/ page
WIDTHS = (1400, 400)


def _context(browser, width: int):
    return browser.new_context(viewport={"width": width, "height": 900})


def _collect_errors(page) -> list[str]:
    errors: list[str] = []
    page.on("pageerror", lambda err: errors.append(f"uncaught: {err}"))
    page.on("console", lambda msg: msg.type == "error" and errors.append(f"console: {msg.text}"))
    return errors


def _set(page, body: str) -> None:
    page.set_content(f"<html><body><article>{body}</article></body></html>")


# ---- each check fails on a wrong page ----

def test_math_check_catches_clipped_and_overflowing_maths(browser):
    wide = '<mjx-math style="display:inline-block;width:700px;white-space:nowrap">x</mjx-math>'
    cases = {
        "clipped": (f'<div class="math" style="width:300px;overflow:hidden"><mjx-container display="true" '
                    f'style="display:block">{wide}</mjx-container></div>', 1),
        "off-screen": (f'<div class="math"><mjx-container display="true" style="display:block">{wide}'
                       f'</mjx-container></div>', 1),
        "scrolls": (f'<div class="math" style="width:300px"><mjx-container display="true" '
                    f'style="display:block;overflow-x:auto">{wide}</mjx-container></div>', 0),
        "fits": ('<div class="math"><mjx-container display="true" style="display:block"><mjx-math '
                 'style="display:inline-block;width:100px">x</mjx-math></mjx-container></div>', 0),
        "inline out of its line": (f'<p style="width:250px">text <mjx-container>{wide}</mjx-container></p>', 1),
        "inline scrolling in its line": (f'<p style="width:250px">text <mjx-container style="display:inline-block;'
                                         f'max-width:100%;overflow-x:auto">{wide}</mjx-container></p>', 0),
        "inline in its line": ('<p style="width:250px">text <mjx-container><mjx-math style="display:inline-block;'
                               'width:50px">x</mjx-math></mjx-container></p>', 0),
    }
    context = _context(browser, 400)
    page = context.new_page()
    for name, (body, expected) in cases.items():
        _set(page, body)
        assert len(page.evaluate(MATH_JS)) == expected, (name, page.evaluate(MATH_JS))
    context.close()


def test_caption_check_catches_uncaptioned_figures(browser):
    img = '<img src="data:image/gif;base64,R0lGODlhAQABAAAAACw=" width="10" height="10">'
    context = _context(browser, 1400)
    page = context.new_page()
    _set(page, img + '<div class="attnconv-viewer"><img class="av-frame"></div>')
    assert len(page.evaluate(CAPTION_JS)) == 2, "a bare image and a bare viewer"
    _set(page, f'<figure>{img}<figcaption><p><span class="caption-number">Fig. 2.1 </span>A map.</p></figcaption>'
               '</figure><figure><div class="attnconv-viewer"><img class="av-frame"></div><figcaption><p>'
               '<span class="caption-number">Fig. 2.2 </span>A viewer.</p></figcaption></figure>')
    assert page.evaluate(CAPTION_JS) == []
    _set(page, f'<figure>{img}<figcaption><p>no number</p></figcaption></figure>')
    assert len(page.evaluate(CAPTION_JS)) == 1, "a caption without a number"
    context.close()


def test_text_check_catches_tiny_text(browser):
    context = _context(browser, 400)
    page = context.new_page()
    _set(page, '<p>body text</p><div style="font-size:6px"><span>5</span></div>')
    assert len(page.evaluate(TEXT_JS, MIN_TEXT_PX)) == 1
    _set(page, '<p>body text</p><div style="font-size:12px"><span>5</span></div>')
    assert page.evaluate(TEXT_JS, MIN_TEXT_PX) == []
    context.close()


def test_text_check_judges_text_as_shown_after_transforms_zoom_and_svg_scaling(browser):
    """12 px labels shown at half size (a scaled viewer, a zoomed box, an SVG drawn at half its viewBox) read as
    6 px; the same labels at full size, or turned on their side, pass."""
    label = '<span style="font-size:12px">token</span>'
    wrong = [f'<div style="transform:scale(0.5);transform-origin:0 0">{label}</div>',
             f'<div style="zoom:0.5">{label}</div>',
             '<svg width="100" height="50" viewBox="0 0 200 100"><text x="0" y="20" font-size="12">δ</text></svg>']
    right = [f'<div style="transform:scale(1)">{label}</div>',
             f'<div style="transform:rotate(90deg);width:60px">{label}</div>',
             '<svg width="200" height="100" viewBox="0 0 200 100"><text x="0" y="20" font-size="12">δ</text></svg>']
    context = _context(browser, 400)
    page = context.new_page()
    for body in wrong:
        _set(page, f"<p>body text</p>{body}")
        found = page.evaluate(TEXT_JS, MIN_TEXT_PX)
        assert len(found) == 1 and "6.0 px as shown" in found[0], (body, found)
    for body in right:
        _set(page, f"<p>body text</p>{body}")
        assert page.evaluate(TEXT_JS, MIN_TEXT_PX) == [], body
    context.close()


def test_viewer_check_catches_maps_out_of_reach_and_overlapping(browser):
    """A map wider than its panel, centred in it, starts left of the scroller (the row of panels) and cannot be
    scrolled to; so can a map pushed left by a negative margin. Two maps drawn over each other, and a map cut by a
    box that clips, are caught too. The same maps starting at their box's edge, scrolling, pass."""
    def viewer(body):
        return (f'<div class="attnconv-viewer" style="width:352px"><div class="av-title">t</div>'
                f'<div class="av-panels" style="display:flex;overflow-x:auto">{body}</div></div>')

    canvas = '<canvas class="av-map" width="33" height="26" style="width:396px;height:312px"></canvas>'
    small = '<canvas class="av-map" width="5" height="1" style="width:120px;height:24px"></canvas>'
    grid = '<div style="display:grid;grid-template-columns:auto;justify-content:{}">' + canvas + '</div>'
    wrong = {"centred in a narrow panel": viewer(f'<div style="max-width:100px">{grid.format("center")}</div>'),
             "negative margin": viewer(f'<div style="margin-left:-40px">{small}</div>'),
             "overlapping": viewer(f'<div style="width:100px">{small}</div><div>{small}</div>'),
             "clipped": viewer(f'<div style="width:200px;overflow:hidden">{canvas}</div>')}
    expected = {"centred in a narrow panel": "left of its box", "negative margin": "left of its box",
                "overlapping": "overlap", "clipped": "cut"}
    right = {"safe centre": viewer(f'<div style="max-width:100px">{grid.format("safe center")}</div>'),
             "scrolls from its start": viewer(f'<div style="flex:none">{canvas}</div>'),
             "side by side": viewer(f'<div>{small}</div><div>{small}</div>')}
    context = _context(browser, 400)
    page = context.new_page()
    for name, body in wrong.items():
        _set(page, body)
        found = page.evaluate(VIEWER_JS)
        assert len(found) == 1 and expected[name] in found[0], (name, found)
    for name, body in right.items():
        _set(page, body)
        assert page.evaluate(VIEWER_JS) == [], (name, page.evaluate(VIEWER_JS))
    _set(page, right["scrolls from its start"])
    assert page.evaluate("() => { const r = document.querySelector('.av-panels'); return r.scrollWidth > r.clientWidth; }")
    context.close()


def test_image_text_check_scales_each_figure_to_its_displayed_width():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from attnconv.figures.legibility import png_bytes

    def figure(size):
        fig, ax = plt.subplots(figsize=(4, 3), dpi=100)
        ax.set_title("title", fontsize=size)
        ax.tick_params(labelsize=size)
        data = png_bytes(fig)
        plt.close(fig)
        return data

    small, large = figure(6), figure(12)  # 8.3 and 16.7 px in the image
    read = {"s": small, "l": large}.get
    assert len(tiny_image_text([{"src": "s", "natural": 400, "shown": 400}], read)) == 1
    assert tiny_image_text([{"src": "l", "natural": 400, "shown": 400}], read) == []
    assert len(tiny_image_text([{"src": "l", "natural": 800, "shown": 400}], read)) == 1, "shown at half size"


def test_book_js_keeps_figure_text_legible_on_a_phone(browser):
    """A wide figure shown in a 400 px column: without book.js its text shrinks under 9 px and the check says so;
    with it, the figure keeps the width its declared text size needs and scrolls in a box with an edge cue. A
    figure whose text is large enough just fits the column."""
    import base64
    from pathlib import Path

    import matplotlib.pyplot as plt

    from attnconv.figures.legibility import png_bytes

    def figure(width_in, size):
        fig, ax = plt.subplots(figsize=(width_in, 3), dpi=100)
        ax.set_title("a title", fontsize=size)
        ax.tick_params(labelsize=size)
        data = png_bytes(fig)
        plt.close(fig)
        return data

    wide, narrow = figure(12, 12), figure(3.5, 12)  # 16.7 px text in 1,200 and 350 px wide images
    uri = {name: "data:image/png;base64," + base64.b64encode(d).decode() for name, d in
           (("wide", wide), ("narrow", narrow))}
    static = Path(__file__).resolve().parents[2] / "book" / "js"
    body = (f'<div class="bd-article"><article><p>text</p><img id="wide" src="{uri["wide"]}">'
            f'<img id="narrow" src="{uri["narrow"]}"></article></div>')
    read = {uri["wide"]: wide, uri["narrow"]: narrow}.get
    context = _context(browser, 400)
    page = context.new_page()
    for with_script in (False, True):
        page.set_content(f"<html><head><style>img {{max-width: 100%; height: auto}}</style></head><body>{body}"
                         f"</body></html>")
        if with_script:
            page.add_style_tag(content=(static / "book.css").read_text())
            page.add_script_tag(content=(static / "book.js").read_text())
            page.wait_for_selector("html[data-figures-legible]", state="attached", timeout=5000)
        images = page.evaluate(IMAGES_JS)
        problems = tiny_image_text(images, read)
        shown = {i["src"]: i["shown"] for i in images}
        natural = {i["src"]: i["natural"] for i in images}
        if not with_script:
            assert len(problems) == 1 and problems[0].startswith(uri["wide"][-50:]), problems
            assert shown[uri["wide"]] < 400
        else:
            assert problems == [], problems
            assert shown[uri["wide"]] > 400, "wider than the column: it scrolls"
            assert shown[uri["narrow"]] == natural[uri["narrow"]] < 400, "a legible figure stays as it is"
            box = page.evaluate("""() => { const b = document.getElementById('wide').parentElement;
              return {cls: b.className, overflow: getComputedStyle(b).overflowX, width: b.clientWidth,
                      scroll: b.scrollWidth}; }""")
            assert "figure-scroll" in box["cls"] and "math-scrolls" in box["cls"] and "math-more-right" in box["cls"]
            assert box["overflow"] == "auto" and box["width"] <= 400 < box["scroll"]
    context.close()


def test_cursor_check_catches_dead_crosshairs(browser):
    context = _context(browser, 1400)
    page = context.new_page()
    _set(page, '<canvas class="av-map" style="cursor:crosshair"></canvas>')
    assert len(page.evaluate(CURSOR_JS)) == 1
    _set(page, '<canvas class="av-map av-clickable" style="cursor:crosshair"></canvas><canvas class="av-map">'
               '</canvas>')
    assert page.evaluate(CURSOR_JS) == []
    context.close()


def test_code_check_catches_silent_scrollers(browser):
    line = "x = " + "1 + " * 80
    context = _context(browser, 400)
    page = context.new_page()
    _set(page, f'<pre style="overflow-x:auto">{line}</pre>')
    assert len(page.evaluate(CODE_JS)) == 1, "scrolls with no cue"
    _set(page, f'<pre class="math-scrolls" style="overflow-x:auto">{line}</pre>')
    assert page.evaluate(CODE_JS) == []
    _set(page, f'<pre style="white-space:pre-wrap">{line}</pre>')
    assert page.evaluate(CODE_JS) == [], "wraps"
    table = f'<table><tr><td style="white-space:nowrap">{line}</td><td>result</td></tr></table>'
    for wrapper in ("pst-scrollable-table-container", "attnconv-table-wrap"):
        _set(page, f'<div class="{wrapper}" style="overflow-x:auto">{table}</div>')
        assert len(page.evaluate(CODE_JS)) == 1, f"a table that scrolls in a {wrapper} with no cue"
        _set(page, f'<div class="{wrapper} math-scrolls" style="overflow-x:auto">{table}</div>')
        assert page.evaluate(CODE_JS) == []
    context.close()


def test_search_check_catches_two_search_fields(browser):
    field = '<button class="search-button-field">Search</button>'
    context = _context(browser, 1400)
    page = context.new_page()
    page.set_content(field + field)
    assert page.evaluate(SEARCH_JS)
    page.set_content(field + f'<div style="display:none">{field}</div>')
    assert page.evaluate(SEARCH_JS) == []
    context.close()


def test_console_check_catches_a_script_declared_twice(browser):
    context = _context(browser, 1400)
    page = context.new_page()
    errors = _collect_errors(page)
    page.set_content("<script>const THEBE_JS_URL = 1;</script><script>const THEBE_JS_URL = 2;</script>")
    page.wait_for_timeout(100)
    assert any("already been declared" in e for e in errors), errors
    errors.clear()
    page.set_content("<script>const A = 1;</script>")
    page.wait_for_timeout(100)
    assert errors == []
    context.close()


def test_stand_in_check_catches_claims_of_real_data():
    stand_in = '<div class="cell_output"><pre>a generated 32x32 image, as stand-in data: no copy was found</pre></div>'
    real = '<div class="cell_output"><pre>CIFAR-10 test image 3 (cat), from test.zip</pre></div>'
    wrong = [f"<h2>On a real image</h2>{stand_in}",
             f"<p>Here a small CNN is trained on CIFAR-10 for a few seconds.</p>{stand_in}",
             f"<p>The sweep runs on the real images.</p>{stand_in}"]
    for page in wrong:
        assert stand_in_claims(page, _pieces), page
    right = [f"<h2>On an image</h2><p>It is CIFAR-10's image 3 when a copy is present, else a stand-in.</p>{stand_in}",
             f"<h2>On a real image</h2>{real}",
             f"<p>The paper tests this on CIFAR-10.</p>{stand_in}"]
    for page in right:
        assert not stand_in_claims(page, _pieces), page


# ---- the built book ----

@pytest.mark.book
@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("page_path", PAGES)
def test_page_reads_cleanly(visits, page_path, width):
    """The reader checks, run on the page's one visit at this width (``visit.py``) before anything is clicked."""
    seen = visits(page_path, width)
    found = {**seen.reader, "console": seen.load_errors}
    problems = {k: v for k, v in found.items() if v}
    assert not problems, f"{page_path} at {width}px: {problems}"


@pytest.mark.book
@pytest.mark.parametrize("page_path", PAGES)
def test_no_stand_in_output_under_claims_of_real_data(page_path):
    claims = stand_in_claims((HTML / page_path).read_text(encoding="utf-8"), _pieces)
    assert not claims, f"{page_path}: {claims}"


def test_pages_list_covers_the_reference_pages():
    if (HTML / "index.html").is_file():
        assert any(p.startswith("book/") for p in PAGES) and any(p.startswith("notebooks/") for p in PAGES)
