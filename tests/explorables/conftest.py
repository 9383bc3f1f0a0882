"""Explorables in a real, offline, headless Chromium: one standalone page per explorable, built by the test."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest


def worst_relative_error(got: dict, want: dict, keys, tol: float) -> float:
    """The largest |page - library| over ``keys``, relative to the larger of 1 and the library's output; each
    key's shape must agree and its error stay below ``tol``."""
    worst = 0.0
    for key in keys:
        g, w = np.asarray(got[key]), want[key]
        assert g.shape == w.shape, key
        err = float(np.abs(g - w).max()) / max(1.0, float(np.abs(w).max()))
        assert err < tol, f"{key}: {err}"
        worst = max(worst, err)
    return worst


# Playwright converts what goes into and out of the page number by number: for a 32 x 32 x 3 image and the maps that
# come back, JSON text costs a fraction of that. A typed array becomes a list, as Playwright gives it, and a number
# that JSON has no word for (NaN, an infinity) comes back as that float.
COMPUTE_JS = """([id, text]) => JSON.stringify(window.attnconvExplorables[id].compute(JSON.parse(text)),
  (key, v) => ArrayBuffer.isView(v) ? Array.from(v)
    : typeof v === 'number' && !Number.isFinite(v) ? {__non_finite__: String(v)} : v)"""


def _non_finite(obj: dict):
    return float(obj["__non_finite__"]) if obj.keys() == {"__non_finite__"} else obj


class Loaded:
    """A page holding one explorable, with every request it made (the page's own file excepted)."""

    def __init__(self, context, page, requests: list[str], errors: list[str]) -> None:
        self.context, self.page, self.requests, self.errors = context, page, requests, errors

    def compute(self, ident: str, inputs: dict) -> dict:
        """The page's ``compute(inputs)``, the inputs and outputs carried as JSON text (:data:`COMPUTE_JS`). Inputs
        that JSON cannot hold (NaN, an infinity, an object of Python's) go through Playwright's own conversion."""
        try:
            text = json.dumps(inputs, allow_nan=False)
        except (TypeError, ValueError):
            return self.page.evaluate("([id, x]) => window.attnconvExplorables[id].compute(x)", [ident, inputs])
        return json.loads(self.page.evaluate(COMPUTE_JS, [ident, text]), object_hook=_non_finite)

    def defaults(self, ident: str) -> dict:
        return self.page.evaluate("(id) => window.attnconvExplorables[id].defaults()", ident)


def open_page(browser, html: str, tmp_path: Path, width: int, touch: bool = False) -> Loaded:
    """Write ``html`` to a file and open it at ``width`` CSS pixels (a phone with touch when ``touch``)."""
    path = tmp_path / f"page-{width}.html"
    path.write_text(html, encoding="utf-8")
    context = browser.new_context(viewport={"width": width, "height": 900}, has_touch=touch, is_mobile=touch,
                                  device_scale_factor=1)
    page = context.new_page()
    requests: list[str] = []
    own = path.as_uri()
    page.on("request", lambda r: None if r.url == own else requests.append(r.url))
    page.route("**/*", lambda r: r.continue_() if r.request.url == own else r.abort())
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: m.type == "error" and errors.append(m.text))
    page.goto(own, wait_until="load")
    assert not errors, f"script errors: {errors}"
    return Loaded(context, page, requests, errors)


LAYOUT_JS = """(root) => {
  const box = document.querySelector(root);
  const out = {width: box.getBoundingClientRect().width, right: 0, small: [],
               page: document.documentElement.scrollWidth};
  for (const el of box.querySelectorAll('*')) {
    const r = el.getBoundingClientRect();
    if (!r.width) continue;
    out.right = Math.max(out.right, r.right);
    const own = Array.from(el.childNodes).some(n => n.nodeType === 3 && n.textContent.trim());
    const size = parseFloat(getComputedStyle(el).fontSize);
    if (own && size < 10) out.small.push([el.tagName, el.textContent.slice(0, 30), size]);
  }
  out.crosshair = Array.from(box.querySelectorAll('canvas')).filter(c => getComputedStyle(c).cursor === 'crosshair'
    && !c.classList.contains('av-clickable')).map(c => c.className);
  return out;
}"""


def check_layout(loaded: Loaded, selector: str, width: int) -> None:
    """The explorable fits ``width`` (nothing sticks out, the page does not scroll sideways); text is >= 10 px."""
    assert not loaded.errors, f"script errors: {loaded.errors}"
    got = loaded.page.evaluate(LAYOUT_JS, selector)
    assert got["right"] <= width + 0.5 and got["page"] <= width, f"wider than {width} px: {got}"
    assert not got["small"], f"labels under 10 px: {got['small']}"
    assert not got["crosshair"], f"canvases that show a crosshair but do nothing when tapped: {got['crosshair']}"


def touch_drag(page, points: list[tuple[float, float]]) -> None:
    """A finger pressed at the first point, moved through the others and lifted (real touch events, by CDP)."""
    cdp = page.context.new_cdp_session(page)
    kinds = ["touchStart"] + ["touchMove"] * (len(points) - 1)
    for kind, (x, y) in zip(kinds, points):
        cdp.send("Input.dispatchTouchEvent", {"type": kind, "touchPoints": [{"x": x, "y": y}]})
    cdp.send("Input.dispatchTouchEvent", {"type": "touchEnd", "touchPoints": []})
    cdp.detach()


REFUSAL_JS = """([id, change]) => {
  const x = window.attnconvExplorables[id].defaults();
  (new Function('x', change))(x);
  try { window.attnconvExplorables[id].compute(x); return 'no message'; }
  catch (e) { return e instanceof RangeError ? e.message : 'not a RangeError: ' + e; }
}"""


def refusal(loaded: Loaded, ident: str, change: str) -> str:
    """The message ``compute`` answers for the defaults changed by the JavaScript statements ``change`` (on ``x``),
    or "no message" when it computes them."""
    return loaded.page.evaluate(REFUSAL_JS, [ident, change])


def check_not_computed(loaded: Loaded, field: str, message: str, good: str, bad, expect: str, numbers: str,
                       meanwhile=None, settle=lambda: None) -> None:
    """Each of ``bad`` typed into ``field`` shows ``message`` (a selector) next to it, saying ``expect``, marks the
    field, and the explorable computes nothing: ``numbers`` (a selector of what it shows) reads "not computed" and
    its root's ``data-stale`` names the field, rather than going on with a value the field no longer shows. Then
    ``meanwhile()`` (another control moved while the field is still wrong) computes nothing either. ``good`` again
    hides the message and computes (what it computed before, when nothing else moved)."""
    page = loaded.page
    box, msg, shown = page.locator(field), page.locator(message), page.locator(numbers)
    root = page.locator(field).locator("xpath=ancestor::div[contains(@class, 'attnconv-explorable')]")
    box.fill(good)
    settle()
    assert not msg.is_visible(), msg.inner_text()
    computed = shown.inner_text()
    assert "not computed" not in computed, computed
    for value in bad:
        box.fill(value)
        settle()
        assert msg.is_visible() and expect in msg.inner_text(), (value, msg.inner_text())
        assert "ax-bad" in (box.get_attribute("class") or "") and box.get_attribute("aria-invalid") == "true", value
        assert "not computed" in shown.inner_text(), (value, shown.inner_text())
        assert root.get_attribute("data-stale"), value
    if meanwhile is not None:
        meanwhile()
        settle()
        assert "not computed" in shown.inner_text() and box.input_value() == bad[-1], shown.inner_text()
    box.fill(good)
    settle()
    assert not msg.is_visible() and "not computed" not in shown.inner_text(), shown.inner_text()
    assert root.get_attribute("data-stale") is None
    if meanwhile is None:
        assert shown.inner_text() == computed
    assert not loaded.errors, loaded.errors
