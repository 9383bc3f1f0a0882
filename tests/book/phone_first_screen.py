"""The first screen of a chapter on a phone (400 x 800 CSS px) holds a picture: an image, an SVG drawing or a canvas
of at least 120 x 80 px, outside the maths and the page's chrome, with at least 150 px of it (or all of it, if
shorter) above the screen's lower edge. A chapter that opens with a box of learning goals and no picture fails.

Used by ``test_phone_first_screen.py`` on crafted pages and on every chapter of a built book.
"""

from __future__ import annotations

PHONE = {"width": 400, "height": 800}
MIN_WIDTH, MIN_HEIGHT, MIN_SHOWN = 120, 80, 150

FIRST_PICTURES_JS = r"""([screen, minW, minH, minShown]) => {
  const article = document.querySelector('article') || document.body;
  const chrome = 'mjx-container, .MathJax, button, a.headerlink, nav, header, .admonition-title, .prev-next-area';
  const found = [];
  for (const el of article.querySelectorAll('img, svg, canvas')) {
    if (el.closest(chrome) || !el.checkVisibility({visibilityProperty: true})) continue;
    if (el.tagName.toLowerCase() === 'svg' && el.parentElement && el.parentElement.closest('svg')) continue;
    const r = el.getBoundingClientRect();
    if (r.width < minW || r.height < minH) continue;  // an icon, not a picture
    const top = r.top + window.scrollY;
    const shown = Math.min(screen, top + r.height) - Math.max(0, top);
    if (shown >= Math.min(minShown, r.height))
      found.push({tag: el.tagName.toLowerCase(), top: Math.round(top), shown: Math.round(shown)});
  }
  return found;
}"""


def first_pictures(page) -> list[dict]:
    """The pictures on the first screen of ``page`` (opened at :data:`PHONE`, not scrolled)."""
    return page.evaluate(FIRST_PICTURES_JS, [PHONE["height"], MIN_WIDTH, MIN_HEIGHT, MIN_SHOWN])
