"""The checks of a chapter's shape and of a phone reader's page, as scripts run on an open page (``*_JS``) or
functions of what they return; each returns a list of problems, empty when the page is fine.
``test_page_shape_checks.py`` shows each failing on a crafted wrong page; ``test_page_shape.py`` runs them on the
built book.

- on a phone: no figure scrolls sideways (:data:`FIGURE_FIT_JS`), no display equation scrolls where it could be
  broken into lines (:data:`EQUATION_SCROLL_JS`), no scroll cue left on a box that fits again after a resize
  (:data:`STALE_MARKS_JS`), and a tap on a solution title's link opens the solution (:func:`tap_solution_links`);
- maths written as raw names (``softmax_j``) in a figure's words, caption or alt text (:func:`raw_subscripts`);
- a chapter's shape: visible words, a captioned figure on the first screen, and a short visible ``def`` checked
  against the library (:data:`STRUCTURE_JS`, :func:`visible_defs`).
"""

from __future__ import annotations

import io
import json
import re

from PIL import Image

# ---- on a phone: figures whole, equations broken into lines ----

# A figure shows whole: no image of the article (outside the viewers, which lay out their own panels) sits in a
# box that scrolls sideways, or runs past the window's right edge.
FIGURE_FIT_JS = r"""() => {
  const out = [], vw = document.documentElement.clientWidth;
  const name = (img) => { const f = img.closest('figure'), n = f && f.querySelector('.caption-number');
    return n ? n.innerText.trim() : (img.getAttribute('src') || '').slice(-40); };
  document.querySelectorAll('article img').forEach(img => {
    if (img.closest('.attnconv-viewer')) return;
    const r = img.getBoundingClientRect();
    if (r.width === 0 || r.height === 0 || !img.checkVisibility()) return;  // folded figures are not in view
    for (let a = img.parentElement; a && a.tagName !== 'ARTICLE'; a = a.parentElement) {
      const st = getComputedStyle(a);
      if (['auto', 'scroll'].includes(st.overflowX) && a.scrollWidth > a.clientWidth + 1) {
        out.push(`${name(img)} scrolls sideways: ${a.clientWidth} of its ${a.scrollWidth} px in view`);
        return;
      }
    }
    if (r.right > vw + 1) out.push(`${name(img)} runs ${Math.round(r.right - vw)} px past the window`);
  });
  return out;
}"""

# A display equation wider than its column is broken into lines (aligned, split, multline) instead of scrolling.
# One that cannot be broken (a single wide matrix) says so with the class "unbreakable" ({math} :class:). Folded
# content is not judged: inside a closed <details> a box can keep its size (content-visibility), so each check asks
# checkVisibility() as well.
EQUATION_SCROLL_JS = r"""() => Array.from(document.querySelectorAll('article div.math'))
  .filter(b => !b.classList.contains('unbreakable'))
  .map(b => [b, b.querySelector(':scope > mjx-container') || b])
  .filter(([b, c]) => c.checkVisibility() && c.getBoundingClientRect().width > 0 && c.scrollWidth > c.clientWidth + 1)
  .map(([b, c]) => { const box = b.closest('.proof, .admonition, section');
    const t = box && box.querySelector('.admonition-title, h1, h2, h3');
    return `an equation in "${t ? t.innerText.trim().slice(0, 50) : '?'}" scrolls: ${c.clientWidth} of `
      + `${c.scrollWidth} px in view ("${c.textContent.trim().slice(0, 40)}")`; })"""


# ---- maths written as raw names ----

# "softmax_j(b_(j−i))", "W_h", "X_j W_{Δ}": a letter, an underscore and a subscript, outside maths and code.
RAW_SUBSCRIPT = re.compile(r"(?<![\w/.-])[A-Za-zα-ωΑ-Ωβδκ‖]+_(?:[A-Za-z0-9α-ωΔ]|\(|\{)")
_INLINE_TEX = re.compile(r"\$[^$]*\$")


def raw_subscripts(texts: list[str]) -> list[str]:
    """Each text that writes a subscript with a raw underscore where maths was meant. Matplotlib's maths
    (``$b_{j-i}$``) is typeset, so it is skipped; so are file names and dotted names (``relative_attention.json``,
    ``attnconv.max_distance``), which are code, not maths."""
    out = []
    for text in texts:
        bare = _INLINE_TEX.sub(" ", text)
        words = [w for w in re.split(r"\s+", bare) if not re.search(r"\.\w+$|^\w+\.\w", w.strip("(),:;"))]
        if any(RAW_SUBSCRIPT.search(w) for w in words):
            out.append(text.strip()[:80])
    return out


TEXTS_KEY = "attnconv-texts"


def png_texts(png: bytes) -> list[str]:
    """The texts a figure's PNG declares (``attnconv.figures.legibility``), empty when it declares none."""
    value = Image.open(io.BytesIO(png)).text.get(TEXTS_KEY)
    return [] if value is None else list(json.loads(value))


# Each figure's caption (outside its maths and code) and its images' alt text.
FIGURE_WORDS_JS = r"""() => Array.from(document.querySelectorAll('article figure')).map(f => {
  const cap = f.querySelector('figcaption'), c = cap ? cap.cloneNode(true) : null;
  if (c) c.querySelectorAll('mjx-container, code, .math, script').forEach(e => e.remove());
  const n = f.querySelector('.caption-number');
  return {name: n ? n.innerText.trim() : '?', caption: c ? c.textContent : '',
          alts: Array.from(f.querySelectorAll('img')).map(i => i.getAttribute('alt') || '')
            .filter(a => a && !/^(figure for the chosen setting|input)$/.test(a)),
          srcs: Array.from(f.querySelectorAll('img')).map(i => i.currentSrc || i.src)}; })"""


# ---- the shape of a chapter: what a reader meets ----

MAX_VISIBLE_WORDS = 4000
FIRST_SCREEN_PX = 1000
MAX_DEF_LINES = 20

# The words a reader sees without unfolding anything, as the book's length limit counts them: the article's rendered text
# (innerText leaves out closed <details>, folded dropdowns and anything hidden) with its prose, captions, tables and
# printed outputs, but without code (the cells' inputs and code listings in the prose), maths and buttons. The first
# screen at 1400 px: a figure with a numbered caption whose image starts in the first 1,000 px, with at least 200 px
# of it (or all of it, if shorter) above that line. Visible code cells: their source, when not folded.
STRUCTURE_JS = r"""(firstScreen) => {
  const article = document.querySelector('article');
  const skip = 'div.cell_input, mjx-container, .math, script, style, nav, .headerlink, button';
  const output = 'div.cell_output, div.output';
  let words = 0;
  const walker = document.createTreeWalker(article, NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const el = n.parentElement;
    if (!el || el.closest(skip)) continue;
    // a code listing in the prose is code; the same markup inside a cell's output is a printed output
    if (el.closest('div.highlight') && !el.closest(output)) continue;
    if (!el.checkVisibility({visibilityProperty: true, opacityProperty: false})) continue;
    const found = n.textContent.match(/[\p{L}\p{N}][\p{L}\p{N}'’.,\-]*/gu);
    if (found) words += found.length;
  }
  const top = (el) => el.getBoundingClientRect().top + window.scrollY;
  const first = Array.from(article.querySelectorAll('figure')).filter(f => f.querySelector('figcaption .caption-number'))
    .map(f => { const m = f.querySelector('img, canvas, svg, .attnconv-viewer'); if (!m) return null;
      const r = m.getBoundingClientRect(); if (r.width === 0 || r.height === 0 || !m.checkVisibility()) return null;
      return {name: f.querySelector('.caption-number').innerText.trim(), top: Math.round(top(m)),
              height: Math.round(r.height)}; })
    .filter(x => x && x.top < firstScreen && x.top + Math.min(200, x.height) <= firstScreen);
  const code = Array.from(article.querySelectorAll('div.cell div.cell_input'))
    .filter(c => c.checkVisibility() && !c.closest('details:not([open])'))
    .map(c => (c.querySelector('pre') || c).innerText);
  return {words, first, code};
}"""


def visible_defs(sources: list[str], max_lines: int = MAX_DEF_LINES) -> list[str]:
    """The names of the functions defined in visible code cells whose ``def`` (signature, docstring and body, with
    blank lines) is at most ``max_lines`` lines, defined in a cell that also asserts or checks something, or
    followed by one that does (``assert``, ``assert_close``, ``verify``)."""
    checks = re.compile(r"\bassert\b|assert_close|\bverify\(")
    found = []
    for i, src in enumerate(sources):
        lines = src.splitlines()
        for at, line in enumerate(lines):
            m = re.match(r"(\s*)def (\w+)\(", line)
            if not m:
                continue
            end = at + 1
            while end < len(lines) and (not lines[end].strip() or len(lines[end]) - len(lines[end].lstrip())
                                        > len(m.group(1))):
                end += 1
            while end > at + 1 and not lines[end - 1].strip():
                end -= 1
            rest = "\n".join(lines[end:])
            later = sources[i + 1] if i + 1 < len(sources) else ""
            if end - at <= max_lines and (checks.search(rest) or checks.search(later)):
                found.append(m.group(2))
    return found


# A scroll cue (book.js's edge shadow and dashed rule) on a box that no longer scrolls: after a narrow, then a wide
# window, a formula that fits again must lose its marks.
STALE_MARKS_JS = r"""() => Array.from(document.querySelectorAll(
    'article .math-scrolls, article .math-more-right, article .math-more-left'))
  .filter(b => b.checkVisibility() && b.getBoundingClientRect().width > 0 && b.scrollWidth <= b.clientWidth + 1)
  .map(b => `"${b.textContent.trim().slice(0, 40)}" keeps a scroll cue (${b.className.trim()}) but fits its box`)"""


def tap_solution_links(page) -> list[str]:
    """Tap the link in each solution's title: it must open the solution, stay on the page and throw nothing."""
    problems = []
    titles = page.locator(".admonition.dropdown > .admonition-title:has(a)")
    for i in range(titles.count()):
        box = titles.nth(i).locator("xpath=..")
        link = titles.nth(i).locator("a").first
        link.scroll_into_view_if_needed()
        where = page.evaluate("() => [location.hash, Math.round(window.scrollY)]")
        link.click()
        page.wait_for_timeout(100)
        after = page.evaluate("() => [location.hash, Math.round(window.scrollY)]")
        label = link.inner_text().strip()
        if "toggle-hidden" in (box.get_attribute("class") or ""):
            problems.append(f"tapping {label!r} in a solution title did not open the solution")
        if after[0] != where[0] or abs(after[1] - where[1]) > 300:
            problems.append(f"tapping {label!r} in a solution title jumped away ({where} -> {after})")
        link.click()  # and fold it again
        page.wait_for_timeout(50)
    return problems
