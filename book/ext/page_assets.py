"""Sphinx extension: a page loads the theme's optional scripts and stylesheets only when it uses them.

- **Search index.** pydata-sphinx-theme loads ``searchindex.js`` (the whole site's index, about 0.2 MB) with
  ``searchtools.js`` and ``language_data.js`` on every page, for its search-as-you-type box. That option is off
  here (the theme's default), so only the search page needs them: ``templates/layout.html`` drops them elsewhere.
- **sphinx-design.** Jupyter Book always enables it; its stylesheet and tab script go only to pages that use one
  of its components (an ``sd-`` class in the page body). No page does today.
- **8-bit ANSI colours.** MyST-NB's stylesheet ends with 33 kB of rules for the 256 terminal colours an output
  may use. When no built page has such an output, the build cuts them (:func:`strip_ansi_256`).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from sphinx.application import Sphinx
from sphinx.config import Config

TEMPLATES = Path(__file__).parent / "templates"
# asset file name -> the text a page body must contain to need it
OPTIONAL = {"sphinx-design.min.css": "sd-", "design-tabs.js": "sd-"}


def needed(filename: str | None, body: str) -> bool:
    """Whether a page with this ``body`` needs the asset ``filename`` (inline ones, ``None``, and assets not in
    OPTIONAL always are)."""
    if not filename:
        return True
    name = str(filename).rsplit("/", 1)[-1].split("?", 1)[0]
    marker = OPTIONAL.get(name)
    return marker is None or marker in body


ANSI_256 = "/* Font colors for 8-bit ANSI */"
_ANSI_256_RULES = re.compile(r"(\s*div\.highlight \.-Color\[class\*=-B?G?C\d+\] \{[^{}]*\})*\s*")


def strip_ansi_256(css: str) -> str:
    """MyST-NB's stylesheet without its closing block of 8-bit colour rules; unchanged if that block is not
    exactly such rules at the end of the file (another MyST-NB version)."""
    start = css.find(ANSI_256)
    if start < 0 or not _ANSI_256_RULES.fullmatch(css, start + len(ANSI_256)):
        return css
    return css[:start].rstrip() + "\n"


def _add_templates(app: Sphinx, config: Config) -> None:
    if str(TEMPLATES) not in config.templates_path:
        config.templates_path = [str(TEMPLATES), *config.templates_path]


def _prune(app: Sphinx, pagename: str, templatename: str, context: dict[str, Any], doctree: Any) -> None:
    body = context.get("body", "")
    for key in ("css_files", "script_files"):
        assets = context.get(key)
        if assets is not None:  # the builder's list, restored after this page is written
            assets[:] = [a for a in assets if needed(getattr(a, "filename", a), body)]


def _finish(app: Sphinx, exception: Exception | None) -> None:
    if exception is not None or app.builder.format != "html":
        return
    outdir = Path(app.outdir)
    if any("-Color" in p.read_text(encoding="utf-8", errors="replace") for p in outdir.rglob("*.html")):
        return
    for sheet in (outdir / "_static").glob("mystnb.*.css"):
        css = sheet.read_text(encoding="utf-8")
        lighter = strip_ansi_256(css)
        if lighter != css:
            sheet.write_text(lighter, encoding="utf-8")


def setup(app: Sphinx) -> dict:
    app.connect("config-inited", _add_templates)
    app.connect("html-page-context", _prune, priority=900)
    app.connect("build-finished", _finish, priority=900)  # after MyST-NB copies its stylesheet (500)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
