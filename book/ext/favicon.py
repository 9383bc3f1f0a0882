"""Sphinx extension: ``favicon.ico`` at the root of the built site, drawn from the book's own icon.

Every page links ``_static/favicon.svg`` (``html_favicon``), but a browser still asks for ``/favicon.ico`` where a
page carries no link (the root ``index.html`` that redirects to the introduction) and for its own tab and
bookmark icons. Without the file each such request is a 404 and a console error. The ICO is drawn here from the
same shapes as ``book/js/favicon.svg`` (a 16-unit square: a blue tile, three white cells and one yellow), at 16,
32 and 48 px, so no binary file is kept in the repository.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sphinx.application import Sphinx

UNITS = 16
TILE = "#2c6e9b"
# (x, y, colour) of each 4 x 4 cell, in the SVG's units
CELLS = ((3, 3, "#ffffff"), (9, 3, "#ffffff"), (3, 9, "#ffffff"), (9, 9, "#f2b134"))
SIZES = (16, 32, 48)


def draw_icon(px: int = 256):
    """The icon as a ``px`` x ``px`` RGBA image (PIL), drawn at that size (downscaled for the ICO's sizes)."""
    from PIL import Image, ImageDraw

    if px < UNITS:
        raise ValueError(f"px must be at least {UNITS}, got {px}")
    unit = px / UNITS
    image = Image.new("RGBA", (px, px), (0, 0, 0, 0))
    pen = ImageDraw.Draw(image)
    pen.rounded_rectangle((0, 0, px - 1, px - 1), radius=round(3 * unit), fill=TILE)
    for x, y, colour in CELLS:
        pen.rectangle((round(x * unit), round(y * unit), round((x + 4) * unit) - 1, round((y + 4) * unit) - 1),
                      fill=colour)
    return image


def write_ico(path: Path) -> Path:
    """Write the icon to ``path`` as an ICO holding 16, 32 and 48 px images; returns ``path``."""
    draw_icon().save(path, format="ICO", sizes=[(s, s) for s in SIZES])
    return path


def _write(app: Sphinx, exception: Exception | None) -> None:
    if exception is None and app.builder.format == "html":
        write_ico(Path(app.outdir) / "favicon.ico")


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("build-finished", _write)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
