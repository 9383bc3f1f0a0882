"""The checks of a chapter's shape and of a phone reader's page, each failing on a crafted wrong page.

- phone-ready figures: ``<picture>`` shows the narrow image on a phone and the wide one on a desktop, and book.js
  keeps both legible (its legibility box goes round the picture, and follows a resize);
- no figure scrolls sideways (:data:`FIGURE_FIT_JS`), no display equation scrolls (:data:`EQUATION_SCROLL_JS`);
- no raw ``softmax_j`` in a figure's words, caption or alt text (:func:`raw_subscripts`);
- a tap on a solution title's link opens the solution and throws nothing (book.js against togglebutton.js);
- no scroll-shadow mark left on a formula that fits again after a narrow, then wide window
  (:data:`STALE_MARKS_JS`);
- visible words, the first screen's captioned figure, and a short visible ``def`` checked against the library
  (:data:`STRUCTURE_JS`, :func:`visible_defs`).

The built book is read with the same checks in ``test_page_shape.py``.
"""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from .shape_checks import (EQUATION_SCROLL_JS, FIGURE_FIT_JS, FIGURE_WORDS_JS, STALE_MARKS_JS, STRUCTURE_JS,
                            png_texts, raw_subscripts, tap_solution_links, visible_defs)

ROOT = Path(__file__).resolve().parents[2]
STATIC = ROOT / "book" / "js"


def _page(browser, width: int):
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda err: errors.append(str(err)))
    return context, page, errors


def _with_book_js(page, body: str, script: bool = True) -> None:
    page.set_content(f'<html><head></head><body><div class="bd-article"><article>{body}</article></div></body></html>')
    if script:
        page.add_style_tag(content=(STATIC / "book.css").read_text())
        page.add_script_tag(content=(STATIC / "book.js").read_text())


def _png(width_in: float, size: float, title: str = "a title") -> bytes:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from attnconv.figures.legibility import png_bytes

    fig, ax = plt.subplots(figsize=(width_in, 2.5), dpi=100)
    ax.set_title(title, fontsize=size)
    ax.tick_params(labelsize=size)
    data = png_bytes(fig)
    plt.close(fig)
    return data


def _uri(png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode()


def _figure(inner: str, number: str = "Fig. 5.1") -> str:
    return (f'<figure>{inner}<figcaption><p><span class="caption-number">{number} </span>A caption.</p>'
            f'</figcaption></figure>')


def test_phone_figure_shows_its_narrow_image_on_a_phone_and_follows_a_resize(browser):
    from attnconv.figures.phone import PhoneFigure
    import matplotlib.pyplot as plt

    def fig(width_in):
        f, ax = plt.subplots(figsize=(width_in, 2.5), dpi=100)
        ax.set_title("a title", fontsize=12)
        ax.tick_params(labelsize=12)
        return f

    figure = PhoneFigure(fig(12), fig(3.4))
    context, page, errors = _page(browser, 400)
    _with_book_js(page, _figure(figure._repr_html_()))
    page.wait_for_selector("html[data-figures-legible]", state="attached", timeout=5000)
    page.wait_for_timeout(300)
    shown = page.evaluate("() => { const i = document.querySelector('picture img'); return {src: i.currentSrc,"
                          " width: i.getBoundingClientRect().width}; }")
    assert shown["src"] == _uri(figure.narrow_png) and shown["width"] <= 352
    assert page.evaluate(FIGURE_FIT_JS) == [], "the narrow image fits the phone's column"
    page.set_viewport_size({"width": 1400, "height": 900})
    page.wait_for_timeout(500)
    assert page.evaluate("() => document.querySelector('picture img').currentSrc") == _uri(figure.wide_png)
    assert page.evaluate(FIGURE_FIT_JS) == []
    page.set_viewport_size({"width": 400, "height": 900})
    page.wait_for_timeout(500)
    assert page.evaluate(FIGURE_FIT_JS) == [], "back on a phone, the legible width follows the narrow image"
    assert page.evaluate("() => document.querySelectorAll('div.figure-scroll > picture').length") == 1
    assert not errors, errors
    context.close()


def test_figure_fit_check_catches_a_figure_that_scrolls_sideways(browser):
    wide = _uri(_png(12, 12))
    context, page, _ = _page(browser, 400)
    _with_book_js(page, _figure(f'<img src="{wide}">'))  # book.js keeps it 720 px wide and lets it scroll
    page.wait_for_selector("html[data-figures-legible]", state="attached", timeout=5000)
    found = page.evaluate(FIGURE_FIT_JS)
    assert len(found) == 1 and "Fig. 5.1 scrolls sideways" in found[0], found
    _with_book_js(page, _figure(f'<img src="{wide}" style="width:700px">'), script=False)
    assert "past the window" in page.evaluate(FIGURE_FIT_JS)[0]
    _with_book_js(page, _figure(f'<img src="{_uri(_png(3.4, 12))}">'))
    page.wait_for_selector("html[data-figures-legible]", state="attached", timeout=5000)
    assert page.evaluate(FIGURE_FIT_JS) == []
    context.close()


def test_equation_check_catches_a_display_equation_that_scrolls(browser):
    wide = '<mjx-math style="display:inline-block;width:700px;white-space:nowrap">x</mjx-math>'
    narrow = '<mjx-math style="display:inline-block;width:200px">x</mjx-math>'

    def eq(math, cls="math"):
        return (f'<section><h2>Composite attention</h2><div class="{cls}"><mjx-container display="true" '
                f'style="display:block;overflow-x:auto">{math}</mjx-container></div></section>')

    context, page, _ = _page(browser, 400)
    _with_book_js(page, eq(wide), script=False)
    found = page.evaluate(EQUATION_SCROLL_JS)
    assert len(found) == 1 and "Composite attention" in found[0], found
    _with_book_js(page, eq(narrow) + eq(narrow), script=False)  # broken into two lines that fit
    assert page.evaluate(EQUATION_SCROLL_JS) == []
    _with_book_js(page, eq(wide, "math unbreakable"), script=False)
    assert page.evaluate(EQUATION_SCROLL_JS) == [], "an equation marked unbreakable may scroll"
    _with_book_js(page, f"<details><summary>Show the proof</summary>{eq(wide)}</details>", script=False)
    assert page.evaluate(EQUATION_SCROLL_JS) == [], "a folded equation is not in view"
    page.evaluate("() => { document.querySelector('details').open = true; }")
    assert len(page.evaluate(EQUATION_SCROLL_JS)) == 1, "unfolded, it is"
    context.close()


def test_raw_subscript_check_catches_names_where_maths_was_meant():
    wrong = ["attention softmax_j(b_(j−i))", "max_k ‖X_k W_h‖", "head 0: kernel β_i predicted by token i",
             "key-dynamic k_j c_δ"]
    right = [r"attention $\mathrm{softmax}_j(b_{j-i})$", "offset δ = j − i", "relative_attention.json",
             "attnconv.positional.max_distance", r"kernel $\beta_i$ of token i", "head 0"]
    assert raw_subscripts(wrong) == wrong
    assert raw_subscripts(right) == []
    assert "softmax_j(b)" in png_texts(_png(3, 12, title="softmax_j(b)"))
    assert raw_subscripts(png_texts(_png(3, 12, title="softmax_j(b)"))) == ["softmax_j(b)"]


def test_figure_words_are_read_from_captions_and_alt_text(browser):
    context, page, _ = _page(browser, 1400)
    _with_book_js(page, '<figure><img src="x.png" alt="the band b_(j-i)"><figcaption><p><span class="caption-number">'
                        'Fig. 5.2 </span>The kernel softmax_j and <code>max_distance</code> with '
                        '<span class="math">$b_j$</span>.</p></figcaption></figure>', script=False)
    [words] = page.evaluate(FIGURE_WORDS_JS)
    assert words["name"] == "Fig. 5.2" and words["alts"] == ["the band b_(j-i)"]
    assert raw_subscripts([words["caption"]]) and "max_distance" not in words["caption"]
    assert raw_subscripts(words["alts"])
    context.close()


TOGGLE_GLOBALS = ("<script>var togglebuttonSelector = '.toggle, .admonition.dropdown'; let toggleHintShow = 'Click"
                  " to show'; let toggleHintHide = 'Click to hide'; let toggleOpenOnPrint = 'true';</script>")


def _solution_page(page, with_book_js: bool) -> None:
    import sphinx_togglebutton

    toggle = (Path(sphinx_togglebutton.__file__).parent / "_static" / "togglebutton.js").read_text()
    body = ('<div class="exercise admonition" id="ex-1"><p class="admonition-title">Exercise 5.1</p><p>Do it.</p>'
            '</div>' + "<p>filler</p>" * 80 +
            '<div class="solution dropdown admonition" id="sol-1"><p class="admonition-title">Solution to'
            '<a class="reference internal" href="#ex-1"><span>Exercise 5.1</span></a></p><p>The answer.</p></div>')
    page.set_content(f"<html><head>{TOGGLE_GLOBALS}</head><body><article>{body}</article></body></html>")
    page.add_script_tag(content=toggle)
    if with_book_js:
        page.add_script_tag(content=(STATIC / "book.js").read_text())


def test_solution_link_check_catches_the_togglebutton_error(browser):
    context, page, errors = _page(browser, 400)
    _solution_page(page, with_book_js=False)
    problems = tap_solution_links(page)
    assert any("button is not defined" in e for e in errors), errors
    assert any("did not open" in p for p in problems) and any("jumped" in p for p in problems), problems
    context.close()
    context, page, errors = _page(browser, 400)  # a fresh window: the scripts declare globals with let
    _solution_page(page, with_book_js=True)
    assert page.locator(".solution.toggle-hidden").count() == 1, "the solution starts folded"
    assert tap_solution_links(page) == [] and errors == [], errors
    context.close()


def test_stale_mark_check_catches_shadows_left_after_a_resize(browser):
    inline = ('<p>text <mjx-container class="MathJax"><mjx-math style="display:inline-block;width:600px;'
              'white-space:nowrap">x</mjx-math></mjx-container> more</p>')
    context, page, errors = _page(browser, 1400)
    _with_book_js(page, '<p><mjx-container class="math-scrolls math-more-right">x</mjx-container></p>', script=False)
    assert len(page.evaluate(STALE_MARKS_JS)) == 1, "a mark on a formula that fits"
    page.set_viewport_size({"width": 400, "height": 900})
    _with_book_js(page, inline)
    page.wait_for_timeout(200)
    assert page.evaluate("() => document.querySelector('mjx-container').classList.contains('math-scrolls')")
    assert page.evaluate(STALE_MARKS_JS) == [], "it does scroll at 400 px"
    page.set_viewport_size({"width": 1400, "height": 900})
    page.wait_for_timeout(300)
    assert page.evaluate(STALE_MARKS_JS) == [], "book.js takes its marks back when the formula fits again"
    assert page.evaluate("() => document.querySelector('mjx-container').hasAttribute('tabindex')") is False
    assert not errors, errors
    context.close()


def test_stale_mark_check_catches_a_display_equation_marked_before_it_was_typeset(browser):
    """Before MathJax runs, a long display equation is raw TeX in its div, and book.js marks the div; once MathJax's
    container stands in the div and fits, no mark may stay on the div (it drew a shadow over the last glyph)."""
    raw = '<div class="math" style="overflow-x:auto;white-space:nowrap">' + r"\[ x + " * 60 + "\\]</div>"
    typeset = ('<mjx-container class="MathJax" display="true" style="display:block;overflow-x:auto">'
               '<mjx-math style="display:inline-block;width:200px">x</mjx-math></mjx-container>')
    context, page, errors = _page(browser, 400)
    _with_book_js(page, raw)
    page.wait_for_timeout(200)
    assert page.evaluate("() => document.querySelector('div.math').classList.contains('math-scrolls')")
    page.evaluate(f"() => {{ document.querySelector('div.math').innerHTML = {typeset!r}; }}")  # MathJax has typeset
    assert len(page.evaluate(STALE_MARKS_JS)) == 1, "the check sees the mark left on the div"
    page.set_viewport_size({"width": 1400, "height": 900})
    page.wait_for_timeout(300)
    assert page.evaluate(STALE_MARKS_JS) == [], "book.js takes the div's marks back once MathJax's container is in it"
    assert not errors, errors
    context.close()


def test_structure_check_counts_visible_words_first_figure_and_visible_code(browser):
    img = f'<img src="{_uri(_png(4, 12))}">'
    cell = ('<div class="cell"><div class="cell_input"><pre>def shift(x, d):\n    return x.roll(d)\n\n'
            'assert shift(t, 1).equal(library.shift(t, 1))</pre></div></div>')
    folded = '<details class="hide"><summary>Show</summary><p>' + "hidden " * 50 + "</p></details>"
    printed = ('<div class="cell_output"><div class="output stream highlight-myst-ansi"><div class="highlight"><pre>'
               + "printed " * 40 + "</pre></div></div></div>")
    table = "<table><tr><th>model</th><th>accuracy</th></tr><tr><td>ResNet</td><td>81.7%</td></tr></table>"
    listing = '<div class="highlight-python"><div class="highlight"><pre>' + "listing " * 20 + "</pre></div></div>"
    folded_output = ('<details class="hide"><summary>Show</summary><div class="cell_output"><pre>' + "hidden " * 50
                     + "</pre></div></details>")
    body = ("<p>" + "word " * 30 + "</p>" + folded + _figure(img) + cell + printed + table + listing
            + folded_output)
    context, page, _ = _page(browser, 1400)
    _with_book_js(page, body, script=False)
    page.wait_for_timeout(100)
    found = page.evaluate(STRUCTURE_JS, 1000)
    # the paragraph, the two folds' labels, the caption, the printed output and the table; not the folded text,
    # the code cell or the code listing in the prose
    assert found["words"] == 30 + 2 + 4 + 40 + 4, found["words"]
    assert [f["name"] for f in found["first"]] == ["Fig. 5.1"]
    assert visible_defs(found["code"]) == ["shift"]
    _with_book_js(page, "<p>" + "word " * 30 + '</p><div style="height:1200px"></div>' + _figure(img), script=False)
    assert page.evaluate(STRUCTURE_JS, 1000)["first"] == [], "the figure starts below the first screen"
    context.close()


def test_visible_defs_wants_a_short_function_checked_against_the_library():
    short = "def f(x):\n    y = x + 1\n\n    return y\n\nassert f(1) == library.f(1)"
    long = "def f(x):\n" + "    x = x + 1\n" * 25 + "    return x\nassert f(1)"
    unchecked = "def f(x):\n    return x\n\nprint(f(1))"
    assert visible_defs([short]) == ["f"]
    assert visible_defs([long]) == []
    assert visible_defs([unchecked]) == []
    assert visible_defs([unchecked, "torch.testing.assert_close(f(t), lib(t))"]) == ["f"]


@pytest.mark.parametrize("text", ["def f(x):\n  return x", ""])
def test_visible_defs_never_fails_on_odd_sources(text):
    assert isinstance(visible_defs([text]), list)
