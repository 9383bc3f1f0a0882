"""What a reader would call broken on a page, as checks a test can run in headless Chromium.

Each check is a script run on an open page (``*_JS``) or a function of the page's HTML, and returns a list of
problems, empty when the page is fine. ``test_reader_checks.py`` shows each one failing on a crafted wrong page
and runs all of them on every page of the built book.

- display maths that is neither contained in the column nor scrollable, and inline maths that leaves its line;
- figures (images, viewers) with no numbered caption;
- text smaller than 9 px as displayed: page text (its font size times the scale a transform, a CSS zoom or an
  SVG's viewBox shows it at), and the text drawn inside figure images (read from the size
  :mod:`attnconv.figures.legibility` writes into each PNG, times the scale the image is shown at);
- viewers whose content starts left of their box (or of the scroller it sits in), where no scrolling reaches,
  or is cut off by a box that does not scroll, and viewers whose maps overlap one another;
- crosshair cursors on maps that do nothing when clicked, and more than one search field in view;
- stand-in data under prose that says the page shows real data;
- viewers whose controls leave their image unchanged, or whose map ignores a click (:func:`viewer_problems`).
"""

from __future__ import annotations

import base64
import io
import re
from pathlib import Path

from PIL import Image

MIN_TEXT_PX = 9.0
MIN_TEXT_KEY = "attnconv-min-text-px"

# Display maths: where it is wider than its room, it must scroll in its own box (and that box must be on screen);
# nothing around it may clip it, and it may not run off the window. Inline maths stays inside its line's block.
MATH_JS = r"""() => {
  const out = [], vw = document.documentElement.clientWidth;
  const label = (c) => { const box = c.closest('.proof, .admonition, section');
    const t = box && box.querySelector('.admonition-title, h1, h2, h3');
    return (t ? t.innerText.trim().slice(0, 50) : '?'); };
  const around = (el, r) => {
    for (let a = el.parentElement; a && a !== document.documentElement; a = a.parentElement) {
      const st = getComputedStyle(a), ar = a.getBoundingClientRect();
      if (['auto', 'scroll'].includes(st.overflowX) && a.scrollWidth > a.clientWidth + 1) return 'scrolls';
      if (st.overflowX !== 'visible' && (r.right > ar.right + 1 || r.left < ar.left - 1)) return 'clipped';
    }
    return (r.right > vw + 1 || r.left < -1) ? 'off-screen' : 'fits';
  };
  document.querySelectorAll('article mjx-container').forEach((c, i) => {
    const math = c.querySelector('mjx-math') || c, r = math.getBoundingClientRect();
    if (r.width === 0 || r.height === 0) return;
    const display = c.getAttribute('display') === 'true';
    if (display) {
      const st = getComputedStyle(c), cr = c.getBoundingClientRect();
      if (['auto', 'scroll'].includes(st.overflowX) && c.scrollWidth > c.clientWidth + 1) {
        if (cr.right > vw + 1 || cr.left < -1) out.push(`display maths ${i} in "${label(c)}": its scroll box is off-screen`);
        return;
      }
      const where = around(c, r);
      if (where !== 'fits' && where !== 'scrolls') out.push(`display maths ${i} in "${label(c)}" is ${where} (${Math.round(r.width)} px wide)`);
    } else {
      const block = c.closest('p, li, td, th, dd, dt, figcaption, .admonition-title, div.math') || c.parentElement;
      const br = block.getBoundingClientRect(), st = getComputedStyle(c), cr = c.getBoundingClientRect();
      if (['auto', 'scroll'].includes(st.overflowX) && c.scrollWidth > c.clientWidth + 1) {  // its own scroller
        if (cr.right > Math.min(br.right, vw) + 2) out.push(`inline maths ${i} in "${label(c)}": its scroll box leaves its line`);
        return;
      }
      if ((r.right > br.right + 2 || r.right > vw + 1) && around(c, r) !== 'scrolls')
        out.push(`inline maths ${i} in "${label(c)}" runs ${Math.round(r.right - Math.min(br.right, vw))} px out of its line`);
    }
  });
  return out;
}"""

# Every image in the article and every viewer sits in a figure with a numbered caption.
CAPTION_JS = r"""() => {
  const items = Array.from(document.querySelectorAll('article img, article .attnconv-viewer'))
    .filter(e => !e.closest('.attnconv-viewer') || e.classList.contains('attnconv-viewer'));
  return items.filter(e => { const f = e.closest('figure');
      return !(f && f.querySelector('figcaption .caption-number')); })
    .map(e => e.classList.contains('attnconv-viewer') ? `a viewer (${(e.querySelector('.av-title') || e).innerText.trim().slice(0, 40)})`
         : `an image ${e.getAttribute('src').slice(0, 60)}`)
    .map(s => `${s} has no numbered caption`);
}"""

# Page text as displayed: every visible element with text of its own, outside maths, in px. The computed font size
# is scaled by what shrinks it on screen: a transform or a CSS zoom (the element's box against its own layout size;
# the larger of the two ratios, so that a rotation does not read as a shrink), or an SVG's viewBox (its screen
# matrix). A viewer that writes its labels in HTML or SVG is judged like any other text.
TEXT_JS = r"""(min) => {
  const out = [];
  document.querySelectorAll('article *').forEach(el => {
    if (el.closest('mjx-container, script, style, .visually-hidden, .sr-only')) return;
    const own = Array.from(el.childNodes).some(n => n.nodeType === 3 && n.textContent.trim());
    if (!own) return;
    const r = el.getBoundingClientRect();
    if (r.width === 0 || r.height === 0) return;
    let scale = 1;
    if (el instanceof SVGElement) {
      const m = el.getScreenCTM && el.getScreenCTM();
      if (m) scale = Math.hypot(m.c, m.d);
    } else if (el.offsetWidth > 0 && el.offsetHeight > 0) {
      scale = Math.max(r.width / el.offsetWidth, r.height / el.offsetHeight);
    }
    const px = parseFloat(getComputedStyle(el).fontSize) * scale;
    if (px < min) out.push(`"${el.textContent.trim().slice(0, 30)}" is ${px.toFixed(1)} px`
                           + (Math.abs(scale - 1) > 0.01 ? ` as shown (${(px / scale).toFixed(1)} px, shown at ${scale.toFixed(2)})` : ''));
  });
  return out;
}"""

# A viewer's content can be reached: nothing starts left of the viewer's box, or of the scroller it sits in
# (a box scrolls only rightwards from its start, so what lies left of it is lost, as a centred map wider than its
# panel was); nothing is cut off by a box that clips without scrolling; and no two of its maps overlap.
VIEWER_JS = r"""() => {
  const out = [];
  document.querySelectorAll('article .attnconv-viewer').forEach(v => {
    const vr = v.getBoundingClientRect();
    if (vr.width === 0) return;
    const name = (v.querySelector('.av-title') || v).innerText.trim().slice(0, 40);
    let left = 0, cut = 0;
    v.querySelectorAll('*').forEach(el => {
      const r = el.getBoundingClientRect();
      if (r.width === 0 || r.height === 0) return;
      let start = vr.left;
      for (let a = el.parentElement; a && a !== v; a = a.parentElement) {
        const st = getComputedStyle(a);
        if (st.overflowX === 'visible') continue;
        const ar = a.getBoundingClientRect();
        start = ar.left + a.clientLeft - a.scrollLeft;  // where its scrollable content begins
        if (['hidden', 'clip'].includes(st.overflowX)) cut = Math.max(cut, r.right - (ar.left + a.clientLeft + a.clientWidth));
        break;
      }
      left = Math.max(left, start - r.left);
    });
    if (left > 1) out.push(`viewer "${name}": content starts ${Math.round(left)} px left of its box, out of reach`);
    if (cut > 1) out.push(`viewer "${name}": content is cut ${Math.round(cut)} px short by a box that does not scroll`);
    const maps = Array.from(v.querySelectorAll('canvas.av-map, img.av-frame, img.av-input'))
      .map(m => m.getBoundingClientRect()).filter(r => r.width > 0 && r.height > 0);
    maps.forEach((a, i) => maps.slice(i + 1).forEach((b, j) => {
      const w = Math.min(a.right, b.right) - Math.max(a.left, b.left), h = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
      if (w > 1 && h > 1) out.push(`viewer "${name}": maps ${i} and ${i + j + 1} overlap (${Math.round(w)} x ${Math.round(h)} px)`);
    }));
  });
  return out;
}"""

# Images as shown: where each comes from, its own width and the width it is shown at.
IMAGES_JS = r"""() => Array.from(document.querySelectorAll('article img'))
  .filter(i => i.complete && i.naturalWidth > 0 && i.getBoundingClientRect().width > 0)
  .map(i => ({src: i.currentSrc || i.src, natural: i.naturalWidth, shown: i.getBoundingClientRect().width}))"""

# One search field in view: a second one is clutter that makes a reader wonder which to use.
SEARCH_JS = r"""() => { const shown = Array.from(document.querySelectorAll('.search-button-field, .bd-search input'))
    .filter(e => { const r = e.getBoundingClientRect(); return r.width > 0 && r.height > 0
      && getComputedStyle(e).visibility !== 'hidden'; });
  return shown.length > 1 ? [`${shown.length} search fields in view`] : []; }"""

# A code listing or printed output wider than its box either wraps or scrolls with a visible cue (book.js marks
# it math-scrolls and draws a shadow at the edge that has more); a silent scroller looks like clipped text.
# Tables wider than their column (the theme's wrapper and attnconv.display's) and wide figures scroll the same way.
CODE_JS = r"""() => Array.from(document.querySelectorAll(
    'article pre, article div.pst-scrollable-table-container, article div.attnconv-table-wrap, article div.figure-scroll'))
  .filter(p => p.getBoundingClientRect().width > 0 && p.scrollWidth > p.clientWidth + 1)
  .filter(p => !p.classList.contains('math-scrolls'))
  .map(p => `"${p.textContent.trim().slice(0, 40)}" runs ${p.scrollWidth - p.clientWidth} px past its box with no cue`)"""

# A crosshair says "click here"; only a map that does something on a click may show one.
CURSOR_JS = r"""() => Array.from(document.querySelectorAll('article canvas, article img'))
  .filter(e => getComputedStyle(e).cursor === 'crosshair' && !e.classList.contains('av-clickable'))
  .map(e => `${e.tagName.toLowerCase()}.${e.className} shows a crosshair but does nothing when clicked`)"""


def png_min_text_px(png: bytes) -> float | None:
    """The smallest text size a PNG declares (image pixels), or ``None`` when it declares none."""
    value = Image.open(io.BytesIO(png)).text.get(MIN_TEXT_KEY)
    return None if value is None else float(value)


def image_bytes(src: str, html_root: Path, site: str) -> bytes | None:
    """The bytes of an image shown on a page: a data URI, or a file of the built site."""
    if src.startswith("data:image/png;base64,"):
        return base64.b64decode(src.split(",", 1)[1])
    if src.startswith(site):
        path = html_root / src[len(site):].lstrip("/").split("?")[0]
        return path.read_bytes() if path.is_file() else None
    return None


def tiny_image_text(images: list[dict], read) -> list[str]:
    """Images whose smallest declared text, scaled to the width they are shown at, is under 9 px.

    ``images`` are :data:`IMAGES_JS` records; ``read(src)`` returns the image's bytes. PNGs that declare no size
    (photos, logos) are not judged."""
    out = []
    for image in images:
        data = read(image["src"])
        if not data or not data.startswith(b"\x89PNG"):
            continue
        size = png_min_text_px(data)
        if size is None:
            continue
        shown = size * image["shown"] / image["natural"]
        if shown < MIN_TEXT_PX:
            out.append(f"{image['src'][-50:]}: its smallest text is {shown:.1f} px as shown ({size:.1f} px in the "
                       f"image, shown at {image['shown']:.0f} of {image['natural']} px)")
    return out


# ---- stand-in data under prose that claims real data ----

STAND_IN_OUTPUT = re.compile(r"as stand-in data|stand-in results|generated stand-in", re.I)
REAL_CLAIM = re.compile(
    r"\breal (image|images|data|photos?|pictures?)\b"
    r"|\b(?:is|are|was|were) (?:trained|tested|evaluated|compared|measured|run) on (?:the )?CIFAR-10\b"
    r"|\bHere\b[^.]*\bCIFAR-10\b", re.I)
CONDITIONAL = re.compile(r"\b(when|whenever|if|where|without|unless|otherwise|else|stand-ins?)\b", re.I)


def stand_in_claims(page_html: str, pieces) -> list[str]:
    """On a page whose outputs show stand-in data, each sentence of prose (not code, not output) that says the
    page shows real data and does not say when. ``pieces(html)`` gives (text, in_output, in_code, in_math) as
    ``test_reader_view._pieces`` does; headings, paragraphs and list items end sentences."""
    marked = re.sub(r"(</(?:h[1-6]|p|li|td|th|dt|dd|figcaption)>)", r"<span>. </span>\1", page_html)
    parts = pieces(marked)
    if not any(output and STAND_IN_OUTPUT.search(text) for text, output, _, _ in parts):
        return []
    prose = re.sub(r"\s+", " ", " ".join(t for t, output, code, math in parts if not output and not code and not math))
    sentences = re.split(r"(?<=[.!?])\s+", prose)
    return [f"claims real data beside stand-in output: {s.strip()[:120]!r}" for s in sentences
            if REAL_CLAIM.search(s) and not CONDITIONAL.search(s)]


# ---- viewers that respond ----

# The viewer's image: the frame's data URI, or every canvas's pixels.
_SIGNATURE_JS = """root => Array.from(root.querySelectorAll('img.av-frame, canvas.av-map'))
  .map(e => e.tagName === 'IMG' ? e.src : e.toDataURL()).join('|')"""
# Move one control to another value the way a reader's drag or pick ends: set it, then fire input and change.
_MOVE_JS = """el => {
  if (el.tagName === 'SELECT') { el.selectedIndex = (el.selectedIndex + 1) % el.options.length; }
  else { el.value = String(Number(el.value) === Number(el.max) ? el.min : el.max); }
  el.dispatchEvent(new Event('input', {bubbles: true}));
  el.dispatchEvent(new Event('change', {bubbles: true}));
  return el.value; }"""
_VALUES_JS = "root => Array.from(root.querySelectorAll('.av-control')).map(e => e.value)"


def viewer_problems(page) -> list[str]:
    """Move every control of every viewer on an open page; name each viewer that drew nothing, each control that
    left its viewer's image unchanged, and each map whose click did not move the query pixel."""
    problems = []
    for n, viewer in enumerate(page.query_selector_all(".attnconv-viewer")):
        viewer.scroll_into_view_if_needed()
        controls = viewer.query_selector_all(".av-control")
        before = viewer.evaluate(_SIGNATURE_JS)
        if not controls or "base64," not in before:
            problems.append(f"viewer {n} has no control or drew nothing")
            continue
        for control in controls:
            control.evaluate(_MOVE_JS)
            after = viewer.evaluate(_SIGNATURE_JS)
            if after == before:
                problems.append(f"viewer {n}: moving {control.get_attribute('aria-label')!r} left the image unchanged")
            before = after
        blank = viewer.evaluate("root => Array.from(root.querySelectorAll('.av-vals span')).filter(s => !s.textContent).length")
        if blank:
            problems.append(f"viewer {n}: {blank} values of its kernel strip are blank")
        canvas = viewer.query_selector("canvas.av-map")
        if canvas is not None and viewer.query_selector("[aria-label='query row']"):
            values = viewer.evaluate(_VALUES_JS)
            canvas.click(position={"x": 2, "y": 2})  # the top-left pixel
            if viewer.evaluate(_VALUES_JS) == values:
                problems.append(f"viewer {n}: a click on a map did not move the query pixel")
    return problems
