"""Sphinx extension: the two images of a phone-ready figure (``attnconv.figures.phone``) become files.

A notebook output carries a :class:`~attnconv.figures.phone.PhoneFigure` as a ``<picture>`` whose wide and narrow
PNGs are inline data URIs. Left inline, a page would carry both images in its HTML, and a phone would download
the wide one as well. Each is written once to ``_images/<sha256>.png`` (the name MyST-NB gives its own images)
and the page points at the file, so that a browser fetches only the image its window shows.
"""

from __future__ import annotations

import base64
import hashlib
import re
from pathlib import Path
from typing import Any

from sphinx.application import Sphinx

PICTURE = re.compile(r'<picture class="attnconv-phone-figure">.*?</picture>', re.S)
DATA_URI = re.compile(r'((?:src|srcset)=")data:image/png;base64,([A-Za-z0-9+/=]+)(")')


def externalise(body: str, write, link) -> str:
    """``body`` with each data URI inside a phone figure replaced by ``link(name)``, after ``write(name, bytes)``."""

    def one(match: re.Match) -> str:
        data = base64.b64decode(match.group(2))
        name = f"{hashlib.sha256(data).hexdigest()}.png"
        write(name, data)
        return f"{match.group(1)}{link(name)}{match.group(3)}"

    return PICTURE.sub(lambda pic: DATA_URI.sub(one, pic.group(0)), body)


def _on_page(app: Sphinx, pagename: str, templatename: str, context: dict[str, Any], doctree) -> None:
    body = context.get("body")
    if not body or "attnconv-phone-figure" not in body:
        return
    images = Path(app.outdir) / "_images"

    def write(name: str, data: bytes) -> None:
        images.mkdir(parents=True, exist_ok=True)
        target = images / name
        if not target.is_file():
            tmp = target.with_suffix(".tmp")
            tmp.write_bytes(data)
            tmp.replace(target)  # never a half-written image

    context["body"] = externalise(body, write, lambda name: context["pathto"](f"_images/{name}", 1))


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("html-page-context", _on_page)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
