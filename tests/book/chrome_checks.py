"""The book's chrome as a reader meets it: numbered boxes under their headings, the sidebar, long display
equations, and what the sidebar toggles and the folded solution code do when clicked (``tests/book/visit.py``
runs these on every chapter; ``test_chrome.py`` asserts on what they return)."""

from __future__ import annotations

BOX_KINDS = "Lemma|Theorem|Proposition|Definition|Corollary|Remark|Exercise|Example|Figure|Algorithm|Conjecture"

# The numbered boxes of a page, and the headings above them: every box's title, with the heading of the
# innermost section that holds it.
HEADINGS_JS = """() => Array.from(document.querySelectorAll('article h1, article h2, article h3, article h4'))
  .map(h => h.innerText.replace(/#$/, '').trim())"""
BOXES_JS = """() => Array.from(document.querySelectorAll('article div.proof, article div.exercise')).map(box => {
  const section = box.closest('section');
  const heading = section && section.querySelector(':scope > h1, :scope > h2, :scope > h3, :scope > h4');
  const title = box.querySelector(':scope > .admonition-title');
  return {heading: heading ? heading.innerText.replace(/#$/, '').trim() : '', title: title ? title.innerText.trim() : ''};
})"""

SIDEBAR_JS = """() => Array.from(document.querySelectorAll('#pst-primary-sidebar nav.bd-docs-nav a.reference'))
  .map(a => ({text: a.innerText.trim(), href: a.href}))"""

_VISIBLE_LINKS_JS = """(sel) => { const root = document.querySelector(sel); if (!root) return 0;
  return Array.from(root.querySelectorAll('a')).filter(a => { const r = a.getBoundingClientRect();
    return r.width > 0 && r.height > 0 && r.right > 0 && r.left < window.innerWidth
      && getComputedStyle(a).visibility !== 'hidden'; }).length; }"""

_PRIMARY_JS = """() => { const s = document.querySelector('#pst-primary-sidebar');
  const d = document.querySelector('#pst-primary-sidebar-modal');
  const r = s.getBoundingClientRect();
  return {shown: getComputedStyle(s).visibility !== 'hidden' && r.right > 0 && r.width > 0, dialog: !!(d && d.open)}; }"""

_SECONDARY_JS = """() => { const d = document.querySelector('#pst-secondary-sidebar-modal'); return !!(d && d.open); }"""

# Display equations wider than their box: do they scroll, and do they carry a visible cue?
MATH_SCROLL_JS = """() => Array.from(document.querySelectorAll('article div.math'))
  .map(b => b.querySelector(':scope > mjx-container') || b).filter(b => b.scrollWidth > b.clientWidth + 1)
  .map(b => { const st = getComputedStyle(b); return {overflow: st.overflowX, cue: b.classList.contains('math-scrolls')
    && st.borderBottomStyle !== 'none' && st.boxShadow !== 'none', text: b.textContent.slice(0, 60)}; })"""


def _until(page, script: str, changed, timeout_ms: int = 1500, *args):
    """Poll ``script`` every 50 ms until ``changed(value)`` holds or the time is up; return the last value. A panel
    that opens at once costs one poll, not a fixed wait."""
    value = page.evaluate(script, *args)
    for _ in range(timeout_ms // 50):
        if changed(value):
            break
        page.wait_for_timeout(50)
        value = page.evaluate(script, *args)
    return value


def check_toggles(page, width: int, min_links: int) -> dict[str, str]:
    """Click every visible sidebar toggle; report for each whether it opened (or closed and reopened) its panel.
    The sidebar dialog must show at least ``min_links`` links (one per chapter)."""
    out = {}
    primary = [b for b in page.locator(".primary-toggle").all() if b.is_visible()]
    if not primary:
        out["primary"] = "no visible sidebar toggle"
    for i, button in enumerate(primary):
        before = page.evaluate(_PRIMARY_JS)
        button.click()
        after = _until(page, _PRIMARY_JS, lambda s: s["dialog"] or s["shown"] != before["shown"])
        name = f"primary[{i}]"
        if after["dialog"]:
            links = _until(page, _VISIBLE_LINKS_JS, lambda n: n >= min_links, 1500, "#pst-primary-sidebar-modal")
            out[name] = "" if links >= min_links else f"the sidebar dialog opened with {links} visible links"
            page.keyboard.press("Escape")
            _until(page, _PRIMARY_JS, lambda s: not s["dialog"])
        elif before["shown"] != after["shown"]:
            page.wait_for_timeout(150)  # let the slide finish before the second click
            button.click()  # and back
            back = _until(page, _PRIMARY_JS, lambda s: s["shown"] == before["shown"])
            out[name] = "" if back["shown"] == before["shown"] else "the sidebar did not come back on a second click"
        else:
            out[name] = f"clicking did nothing at {width}px (sidebar shown={before['shown']}, no dialog)"
        page.wait_for_timeout(100)
    secondary = [b for b in page.locator(".secondary-toggle").all() if b.is_visible()]
    if not secondary:  # wide screens show the contents beside the page, with no toggle
        links = page.evaluate(_VISIBLE_LINKS_JS, "#pst-secondary-sidebar")
        out["secondary"] = "" if links else "no contents toggle and no visible contents"
    for i, button in enumerate(secondary):
        button.click()
        opened = _until(page, _SECONDARY_JS, bool)
        links = _until(page, _VISIBLE_LINKS_JS, bool, 1500, "#pst-secondary-sidebar-modal") if opened else 0
        out[f"secondary[{i}]"] = "" if opened and links else f"clicking did nothing at {width}px"
        page.keyboard.press("Escape")
        _until(page, _SECONDARY_JS, lambda o: not o)
        page.wait_for_timeout(100)
    return out


def check_solutions(page) -> tuple[int, list[str]]:
    """Solution code is hidden until its toggle is clicked, and shown after."""
    problems = []
    cells = page.locator("div.cell").filter(has_text="BEGIN SOLUTION").all()
    for i, cell in enumerate(cells):
        code = cell.locator("pre").filter(has_text="BEGIN SOLUTION").first
        if code.is_visible():
            problems.append(f"solution cell {i} shows its code before any click")
            continue
        summary = cell.locator("summary").first
        if not summary.count():
            problems.append(f"solution cell {i} has no toggle")
            continue
        summary.click()
        try:
            code.wait_for(state="visible", timeout=1500)
        except Exception:  # noqa: BLE001 (Playwright's TimeoutError): it stayed hidden
            pass
        if not code.is_visible():
            problems.append(f"solution cell {i} stays hidden after its toggle is clicked")
    return len(cells), problems
