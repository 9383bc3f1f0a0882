"""What the chapters show a reader inside the page: viewers that respond with no kernel, quiet outputs, no raw
markup.

- Every kernel-free viewer (``.attnconv-viewer``) changes its image when any of its controls moves, in headless
  Chromium, offline; the chapters that promise one have one.
- No cell output shows a ``UserWarning``, a ``<torch._C.Generator at 0x...>``, an object repr with ``np.int64``,
  or a path of the machine that built the book.
- No pipe-table text (``|---|``) and no raw LaTeX (``$\\``, ``\\begin{matrix}``) is left outside code and math.

The two text checks read the built HTML; ``test_checks_catch_the_defects`` shows that each of them fails on a
page with that defect.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest

from .conftest import HTML
from .reader_checks import viewer_problems

CHAPTERS = sorted(str(p.relative_to(HTML)) for p in (HTML / "notebooks").glob("[0-9][0-9]_*.html"))
PAGES = CHAPTERS + sorted(str(p.relative_to(HTML)) for p in (HTML / "book").rglob("*.html"))
# The chapters whose dead widgets became viewers, and the one that explores the committed vision runs.
VIEWER_CHAPTERS = ("07_",)  # chapters 02, 03, 05 and 06 compute their explorables in the page (tests/explorables)

_VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
_SKIP_ALWAYS = {"script", "style", "template", "textarea"}
_CODE = {"pre", "code", "kbd", "samp"}


class _Text(HTMLParser):
    """The page's text in pieces, each with whether it sits in a cell output, in code, or in math."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[tuple[str, bool, bool, bool, bool]] = []  # tag, output, code, math, skip
        self.pieces: list[tuple[str, bool, bool, bool]] = []  # text, in_output, in_code, in_math

    def handle_starttag(self, tag, attrs):
        if tag in _VOID:
            return
        classes = (dict(attrs).get("class") or "").split()
        top = self.stack[-1] if self.stack else (None, False, False, False, False)
        self.stack.append((tag, top[1] or "cell_output" in classes, top[2] or tag in _CODE,
                           top[3] or "math" in classes, top[4] or tag in _SKIP_ALWAYS))

    def handle_endtag(self, tag):
        for i in range(len(self.stack) - 1, -1, -1):
            if self.stack[i][0] == tag:
                del self.stack[i:]
                return

    def handle_data(self, data):
        if not data.strip():
            return
        _, output, code, math, skip = self.stack[-1] if self.stack else (None, False, False, False, False)
        if not skip:
            self.pieces.append((data, output, code, math))


def _pieces(page_html: str) -> list[tuple[str, bool, bool, bool]]:
    parser = _Text()
    parser.feed(page_html)
    return parser.pieces


NOISE = {
    "a warning": re.compile(r"\b\w*Warning: "),
    "a generator repr": re.compile(r"Generator at 0x[0-9a-f]+"),
    "an object address": re.compile(r"<[\w.]+ (object )?at 0x[0-9a-f]+>"),
    "a numpy scalar repr": re.compile(r"np\.(int|float)\d*\("),
    "an absolute path": re.compile(r"(?<![\w:/.~-])/(home|work|tmp|root|Users|usr|opt|var|mnt|srv)/[\w.-]+"
                                   r"|\b[A-Z]:\\[\w]"),
}
RAW = {
    "a markdown table rule": re.compile(r"\|\s*:?-{3,}:?\s*\|"),
    "markdown table rows": re.compile(r"^\s*\|(?:[^|\n]*\|){2,}\s*$(?:\n\s*\|(?:[^|\n]*\|){2,}\s*$)+", re.M),
    "a literal display-math delimiter": re.compile(r"\$\$"),
    "raw LaTeX math": re.compile(r"\$\\[a-zA-Z]"),
    "a raw LaTeX environment": re.compile(r"\\begin\{(matrix|pmatrix|bmatrix|array|aligned)\}"),
}


def output_noise(page_html: str) -> list[str]:
    """Each piece of cell-output text (printed streams included) that shows build noise, named."""
    found = []
    for text, output, _, math in _pieces(page_html):
        if output and not math:
            found += [f"{name}: {text.strip()[:160]!r}" for name, rx in NOISE.items() if rx.search(text)]
    return found


def raw_markup(page_html: str) -> list[str]:
    """Each piece of text outside code and math that is unrendered markdown or LaTeX, named. Text printed by an
    output counts even in a ``<pre>``: a reader sees it raw all the same."""
    found = []
    for text, output, code, math in _pieces(page_html):
        if math or (code and not output):
            continue
        found += [f"{name}: {text.strip()[:160]!r}" for name, rx in RAW.items() if rx.search(text)]
    return found


def test_checks_catch_the_defects():
    clean = ('<div class="cell_input"><pre>torch.manual_seed(0)  # /work/x |---|</pre></div>'
             '<div class="cell_output"><pre>accuracy 0.91</pre><div class="math">\\begin{matrix}0\\end{matrix}</div>'
             '</div><p>See <code>$\\alpha</code> and <span class="math">\\(\\alpha\\)</span>.</p>')
    assert output_noise(clean) == [] and raw_markup(clean) == []
    noisy = ['<div class="cell_output"><pre>&lt;torch._C.Generator at 0x7f3a&gt;</pre></div>',
             '<div class="cell_output"><pre>/x/y.py:3: UserWarning: Converting a tensor</pre></div>',
             '<div class="cell_output"><div><p>data (/work/shared/data/cifar.zip)</p></div></div>',
             '<div class="cell_output"><pre>query (np.int64(8), np.int64(8))</pre></div>']
    for page in noisy:
        assert output_noise(page), page
    raw = ['<div class="cell_output"><p>| a | b |\n|---|---|\n| 1 | 2 |</p></div>',
           '<div class="cell_output"><p>residual: $\\left[\\begin{matrix}0 &amp; 0\\0\\end{matrix}\\right]$</p></div>',
           '<ul><li><p>\\alpha \\begin{matrix}x\\end{matrix}</p></li></ul>',
           '<div class="cell_output"><pre>residual: $$ 0 $$</pre></div>',
           '<p>| chapter | exercise |\n| 01 | shifts |\n| 02 | scale |</p>']
    for page in raw:
        assert raw_markup(page), page


@pytest.mark.book
@pytest.mark.parametrize("page_path", PAGES)
def test_outputs_are_quiet_and_rendered(page_path):
    page_html = (HTML / page_path).read_text(encoding="utf-8")
    noise = output_noise(page_html)
    assert not noise, f"{page_path}: outputs show build noise: {noise}"
    raw = raw_markup(page_html)
    assert not raw, f"{page_path}: unrendered markup outside code: {raw}"
    assert "widget-state+json" not in page_html, f"{page_path}: carries ipywidgets state, which no kernel will drive"


def test_viewer_check_catches_dead_viewers(browser, tmp_path):
    """A viewer whose frames are all alike, and one whose script never ran, both fail the check; a live one passes."""
    import matplotlib.pyplot as plt
    import numpy as np

    from attnconv.viewer import FrameViewer, HeatmapViewer

    def draw(a):
        fig, ax = plt.subplots(figsize=(1, 1))
        ax.set_title(str(a))
        return fig

    live = FrameViewer(draw, {"a": [1, 2]}, dpi=20)._repr_html_()
    maps = np.random.default_rng(0).random((3, 3, 1, 3, 3))
    explorer = HeatmapViewer(maps, {"query row": [0, 1, 2], "query col": [0, 1, 2]}, ["h"],
                             mark=("query row", "query col"))._repr_html_()
    dead = FrameViewer(lambda a: draw(0), {"a": [1, 2]}, dpi=20)._repr_html_()
    scriptless = re.sub(r"<script>.*?</script>", "", FrameViewer(draw, {"a": [1, 2]}, dpi=20)._repr_html_(), flags=re.S)
    context = browser.new_context()
    page = context.new_page()
    for html, expect in ((live, 0), (explorer, 0), (dead, 1), (scriptless, 1)):
        (tmp_path / "v.html").write_text(f"<html><body>{html}</body></html>", encoding="utf-8")
        page.goto((tmp_path / "v.html").as_uri())
        assert len(viewer_problems(page)) == expect, viewer_problems(page)
    context.close()


@pytest.mark.book
@pytest.mark.parametrize("page_path", CHAPTERS)
def test_every_viewer_responds_to_its_controls(visits, page_path):
    """Every control of every viewer, moved in the chapter's one visit at 1400 px (``visit.py``)."""
    v = visits(page_path)
    if page_path.split("/")[-1].startswith(VIEWER_CHAPTERS):
        assert v.chrome["viewers"], f"{page_path}: no kernel-free viewer on the page"
    assert not v.clicks["viewers"], f"{page_path}: {v.clicks['viewers']}"
    assert not v.clicks["leftover widgets"], (f"{page_path}: {v.clicks['leftover widgets']} ipywidgets remain, which "
                                              "do nothing without a kernel")
    assert not v.clicks["viewer errors"], f"{page_path}: script errors while the controls moved: {v.clicks['viewer errors']}"


EXPLORABLE_CHAPTERS = ("02_", "03_", "05_", "06_", "08_")


@pytest.mark.book
@pytest.mark.parametrize("page_path", [c for c in CHAPTERS if c.split("/")[-1].startswith(EXPLORABLE_CHAPTERS)])
def test_explorable_chapters_carry_their_explorable(page_path):
    """Chapters 02, 03, 05, 06 and 08 teach with an explorable that computes in the page (its numerics are checked
    against the library in tests/explorables); a page that lost it fails here."""
    text = (HTML / page_path).read_text(encoding="utf-8")
    assert "window.attnconvExplorables" in text and "attnconv-explorable" in text, f"{page_path}: no explorable"
