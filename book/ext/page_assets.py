"""Each page loads every script once.

sphinx-thebe registers its inline configuration script (``const THEBE_JS_URL = ...``) once per read of the sources,
so a page can carry it twice; the second copy then throws "Identifier 'THEBE_JS_URL' has already been declared"
in the console of every page. Repeated script and stylesheet entries are dropped here, first copy kept.
"""

from __future__ import annotations

from sphinx.application import Sphinx


def _key(asset) -> tuple:
    attributes = getattr(asset, "attributes", {}) or {}
    # An inline script is registered with filename None by one path and "" by another: the same script either way.
    return (getattr(asset, "filename", str(asset)) or None, tuple(sorted((k, str(v)) for k, v in attributes.items())))


def _dedupe(assets: list) -> list:
    seen, kept = set(), []
    for asset in assets:
        key = _key(asset)
        if key not in seen:
            seen.add(key)
            kept.append(asset)
    return kept


def _page_context(app: Sphinx, pagename: str, templatename: str, context: dict, doctree) -> None:
    for name in ("script_files", "css_files"):
        if isinstance(context.get(name), list):
            context[name][:] = _dedupe(context[name])


def setup(app: Sphinx) -> dict:
    # Early: html-page-context stops at the first listener that returns a template, so a late one may never run.
    app.connect("html-page-context", _page_context, priority=100)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
