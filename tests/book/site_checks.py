"""The site's checks of touch, layout and load, as scripts run on an open page (``*_JS``) or functions of the
page; each returns a list of problems, empty when the page is fine. ``test_site_checks.py`` shows each failing on
a crafted wrong page; ``test_site.py`` runs them on the built book.

- a touch on an element that blocks the page's scrolling (``touch-action: none``) must be a drag that the element
  handles (a ``touchmove`` or ``pointermove`` listener of its own): an element that only takes taps traps a
  phone reader's scrolling (:func:`touch_traps`);
- nothing of an explorable or viewer extends beyond its box, or beyond an SVG it is drawn in, except inside a box
  that scrolls (:data:`EXPLORABLE_FIT_JS`);
- the theme's floating "Back to top" button never covers an explorable or a viewer, at any scroll position
  (:func:`back_to_top_overlaps`);
- the button that unfolds a chapter's checks counts them in good English (:func:`unfold_label_problems`);
- no request of a visit answers 404 at the server, the browser's own ``/favicon.ico`` included (the server's log,
  :class:`ServedLog`): Chromium does not report that request to the page, only to the console.
"""

from __future__ import annotations

import re
import threading

PANELS = ".attnconv-explorable, .attnconv-viewer"

# ---- touch: only a drag may block scrolling ----

# Every element of the article whose computed touch-action is none gets a probe number; the list names them.
_TOUCH_BLOCKERS_JS = r"""() => {
  const out = [];
  document.querySelectorAll('article *').forEach(el => {
    if (getComputedStyle(el).touchAction !== 'none') return;
    const n = out.length;
    el.setAttribute('data-touch-probe', String(n));
    const box = el.closest('.attnconv-explorable, .attnconv-viewer');
    out.push(`${el.tagName.toLowerCase()}.${Array.from(el.classList).join('.')}`
             + (box ? ` in #${box.id}` : ''));
  });
  return out;
}"""
DRAG_EVENTS = ("touchmove", "pointermove")


def touch_traps(page) -> list[str]:
    """Each element of the article with ``touch-action: none`` and no drag listener (``touchmove`` or
    ``pointermove``) of its own, read through the DevTools protocol (event listeners are not visible to the page's
    own scripts)."""
    names = page.evaluate(_TOUCH_BLOCKERS_JS)
    if not names:
        return []
    cdp = page.context.new_cdp_session(page)
    problems = []
    try:
        for i, name in enumerate(names):
            found = cdp.send("Runtime.evaluate",
                             {"expression": f"document.querySelector('[data-touch-probe=\"{i}\"]')"})
            listeners = cdp.send("DOMDebugger.getEventListeners", {"objectId": found["result"]["objectId"]})
            kinds = {entry["type"] for entry in listeners["listeners"]}
            if not kinds & set(DRAG_EVENTS):
                taps = sorted(kinds) or ["none"]
                problems.append(f"{name} blocks scrolling (touch-action: none) but is not dragged on "
                                f"(its listeners: {', '.join(taps)}); give it touch-action: manipulation")
    finally:
        page.evaluate("() => document.querySelectorAll('[data-touch-probe]')"
                      ".forEach(e => e.removeAttribute('data-touch-probe'))")
        cdp.detach()
    return problems


# ---- explorables: nothing past their box ----

# Each visible element of an explorable or viewer is judged against the nearest box that clips it: an SVG it is
# drawn in, an ancestor with overflow hidden or clip, else the explorable's own box. An element inside a box that
# scrolls is reachable (that box is judged instead).
EXPLORABLE_FIT_JS = r"""() => {
  const out = [];
  document.querySelectorAll('.attnconv-explorable, .attnconv-viewer').forEach(root => {
    const rr = root.getBoundingClientRect();
    if (rr.width === 0 || !root.checkVisibility()) return;
    const worst = new Map();
    root.querySelectorAll('*').forEach(el => {
      const r = el.getBoundingClientRect();
      if (r.width === 0 || r.height === 0 || !el.checkVisibility()) return;
      let box = rr, what = 'its box';
      for (let a = el.parentElement; a && a !== root; a = a.parentElement) {
        if (a instanceof SVGSVGElement) { box = a.getBoundingClientRect(); what = 'its SVG'; break; }
        const st = getComputedStyle(a);
        if (['auto', 'scroll'].includes(st.overflowX)) return;
        if (['hidden', 'clip'].includes(st.overflowX)) {
          const ar = a.getBoundingClientRect();
          box = {left: ar.left + a.clientLeft, right: ar.left + a.clientLeft + a.clientWidth}; what = 'a clipping box';
          break;
        }
      }
      const past = Math.max(r.right - box.right, box.left - r.left);
      if (past > 0.5) {
        const name = `${el.tagName.toLowerCase()}${el.classList.length ? '.' + Array.from(el.classList).join('.') : ''}`;
        const key = `${name} past ${what}`;
        worst.set(key, Math.max(worst.get(key) || 0, past));
      }
    });
    worst.forEach((px, key) => out.push(`#${root.id}: ${key} by ${px.toFixed(1)} px`));
  });
  return out;
}"""


def explorable_button_fits(page) -> list[str]:
    """Press every button of every explorable in turn (k = 1..4, a head, an image) and read
    :data:`EXPLORABLE_FIT_JS` after each; the problems, each with the button that led to it."""
    problems = []
    buttons = page.locator(".attnconv-explorable button")
    for i in range(buttons.count()):
        if i >= buttons.count():  # a press rebuilt the controls with fewer buttons
            break
        button = buttons.nth(i)
        if not button.is_visible():
            continue
        label = button.inner_text().strip()[:30]
        button.scroll_into_view_if_needed()
        button.click()
        page.wait_for_timeout(30)
        problems += [f"after pressing {label!r}: {p}" for p in page.evaluate(EXPLORABLE_FIT_JS)
                     if f"after pressing {label!r}: {p}" not in problems]
    return problems


# ---- maths: every formula drawn, each with the MathML a screen reader reads ----

# MathJax draws lazily (ui/lazy): a formula not drawn yet is an <mjx-lazy> placeholder in its container, with no
# size in its line and nothing for a screen reader. Once the page has settled, none may be left, and every
# formula carries its assistive MathML (a11y/assistive-mml).
MATHS_DRAWN_JS = r"""() => {
  const all = Array.from(document.querySelectorAll('mjx-container'));
  const waiting = all.filter(c => c.querySelector(':scope > mjx-lazy')).length;
  const unspoken = all.filter(c => !c.querySelector(':scope > mjx-lazy') && !c.querySelector('mjx-assistive-mml math'))
    .length;
  return {formulas: all.length, waiting, unspoken,
          done: document.documentElement.hasAttribute('data-maths-typeset')};
}"""


def maths_problems(found: dict) -> list[str]:
    """What :data:`MATHS_DRAWN_JS` found wrong: formulas still waiting to be drawn, or drawn without MathML."""
    problems = []
    if found["waiting"]:
        problems.append(f"{found['waiting']} of {found['formulas']} formulas are not drawn yet (lazy placeholders)")
    if found["unspoken"]:
        problems.append(f"{found['unspoken']} of {found['formulas']} formulas have no MathML for a screen reader")
    if found["formulas"] and not found["done"]:
        problems.append("book.js never marked the page's maths as all typeset (data-maths-typeset)")
    return problems


# ---- the floating "Back to top" button ----

_BACK_TO_TOP_JS = r"""(panels) => {
  const b = document.getElementById('pst-back-to-top');
  if (!b || !b.checkVisibility()) return null;
  const r = b.getBoundingClientRect();
  for (const p of document.querySelectorAll(panels)) {
    const q = p.getBoundingClientRect();
    const w = Math.min(r.right, q.right) - Math.max(r.left, q.left), h = Math.min(r.bottom, q.bottom) - Math.max(r.top, q.top);
    if (w > 0 && h > 0) return `#${p.id} at scroll ${Math.round(scrollY)}: ${Math.round(w)} x ${Math.round(h)} px`;
  }
  return null;
}"""
_PANEL_SPANS_JS = r"""(panels) => Array.from(document.querySelectorAll(panels)).filter(p => p.checkVisibility())
  .map(p => { const r = p.getBoundingClientRect(); return [r.top + scrollY, r.bottom + scrollY]; })"""


def back_to_top_overlaps(page, step: int = 150, settle_ms: int = 60) -> list[str]:
    """Scroll each explorable and viewer through the window in ``step`` px steps, each reached by scrolling up (the
    theme shows its button on an upward scroll), and report where the visible button covers one of them."""
    height = page.evaluate("() => window.innerHeight")
    problems = []
    for top, bottom in page.evaluate(_PANEL_SPANS_JS, PANELS):
        for y in range(max(0, int(top - height)), int(bottom) + step, step):
            page.evaluate("(y) => window.scrollTo({top: y + 120, behavior: 'instant'})", y)
            page.wait_for_timeout(settle_ms)
            page.evaluate("(y) => window.scrollTo({top: y, behavior: 'instant'})", y)
            page.wait_for_timeout(settle_ms)
            hit = page.evaluate(_BACK_TO_TOP_JS, PANELS)
            if hit and hit not in problems:
                problems.append(f"the Back to top button covers {hit}")
    page.evaluate("() => window.scrollTo({top: 0, behavior: 'instant'})")
    return problems


# ---- the unfold button's words ----

UNFOLD_JS = r"""() => { const b = document.querySelector('article button.unfold-checks');
  const folds = Array.from(document.querySelectorAll('article div.cell details.hide'))
    .filter(d => !d.textContent.includes('BEGIN SOLUTION')).length;
  return b ? {text: b.textContent.trim(), folds} : null; }"""


def unfold_label_problems(text: str, count: int) -> list[str]:
    """The unfold button must give the number of folded checks, with "check" singular for one and plural else
    ("Show the 1 folded check ...", "Show all 3 folded checks ...")."""
    m = re.match(r"Show (?:the|all) (\d+) folded (checks?)\b", text)
    if not m:
        return [f"the unfold button says {text!r}, not how many checks it unfolds"]
    number, noun = int(m.group(1)), m.group(2)
    problems = []
    if number != count:
        problems.append(f"the unfold button says {number}, the page folds {count}")
    if (noun == "check") != (number == 1) or (number == 1) != text.startswith("Show the "):
        problems.append(f"the unfold button's words do not agree with its count: {text!r}")
    return problems


# ---- what the server answered ----

class ServedLog:
    """The requests a test server answered with an error, kept whatever the browser tells the page: Chromium asks
    for ``/favicon.ico`` on its own and reports a 404 for it only in the console."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.errors: list[tuple[int, str]] = []

    def add(self, code: int, path: str) -> None:
        with self._lock:
            self.errors.append((int(code), path))

    def since(self, mark: int) -> list[str]:
        """The errors logged after ``mark`` (a length of :attr:`errors` taken earlier), as ``"404 /path"``."""
        with self._lock:
            return [f"{code} {path}" for code, path in self.errors[mark:]]

    def mark(self) -> int:
        with self._lock:
            return len(self.errors)


def logging_handler(base, log: ServedLog):
    """A subclass of the ``http.server`` handler ``base`` that records each error it sends in ``log``."""

    class Handler(base):
        def send_error(self, code, message=None, explain=None):
            log.add(code, self.path)
            super().send_error(code, message, explain)

    return Handler
