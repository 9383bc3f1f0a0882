"""A figure drawn twice, wide for a desktop and narrow (panels stacked) for a phone, shown as one ``<picture>``.

A figure of four panels in a row is 1,000 px wide; in a phone's 352 px column its text would shrink to a third, so
the book used to keep it wide and let it scroll sideways, with half of it out of sight. Instead, the figure is
drawn a second time with fewer panels a row, and the page shows that one on a narrow screen::

    from attnconv.figures import phone_figure
    phone_figure(lambda ncols: plot_attention(probs, grid, query, ncols=ncols), wide=4, narrow=2)

``make(ncols)`` draws the figure with ``ncols`` panels a row (any figure factory with a layout argument will do).
:class:`PhoneFigure` also takes two ready figures. Both images carry their smallest text size
(:mod:`attnconv.figures.legibility`), and the narrow one has its small text raised for the phone's column, so that
the book's checks judge each at the size it is shown. In Jupyter and Colab the same ``<picture>`` shows the wide
image on a wide screen; the book writes the two images out as files (``book/ext/phone_figures.py``).
"""

from __future__ import annotations

import base64
import html
import io
import warnings
from typing import Callable

import matplotlib.pyplot as plt
from matplotlib.figure import Figure
from PIL import Image

from .legibility import MIN_TEXT_KEY, MIN_TEXT_PX, PHONE_COLUMN_PX, enlarge_small_text, png_bytes

__all__ = ["PHONE_BREAKPOINT_PX", "PhoneFigure", "phone_figure"]

PHONE_BREAKPOINT_PX = 576  # the theme's phone layout: at this window width and below, the narrow image is shown
_GUTTER_PX = 48  # window width minus the text column's width on a narrow screen (400 px window: 352 px column)


def _declared(png: bytes) -> tuple[int, float | None]:
    image = Image.open(io.BytesIO(png))
    size = image.text.get(MIN_TEXT_KEY)
    return image.width, (None if size is None else float(size))


class PhoneFigure:
    """Two renderings of one figure: ``wide`` (shown by default) and ``narrow`` (shown on a narrow window).

    Args:
        wide: the desktop figure.
        narrow: the same figure laid out for a phone, its panels stacked.
        alt: the text a screen reader reads for the figure (and that the book's checks read for raw names).
        dpi: resolution of both PNGs (default: each figure's own).
        close: close both figures once drawn, so that a notebook does not show them a second time.

    The narrow image is shown when the window is at most ``PHONE_BREAKPOINT_PX`` (576 px) wide, or wider if the wide
    image would need more than the column to keep its smallest text at 9 px (``breakpoint_px``).
    """

    def __init__(self, wide: Figure, narrow: Figure, alt: str = "", dpi: float | None = None, close: bool = True):
        for name, fig in (("wide", wide), ("narrow", narrow)):
            if not isinstance(fig, Figure):
                raise TypeError(f"{name} must be a matplotlib Figure, got {type(fig).__name__}")
        if not isinstance(alt, str):
            raise TypeError(f"alt must be a str, got {type(alt).__name__}")
        enlarge_small_text(narrow, column_px=PHONE_COLUMN_PX, dpi=dpi)
        if narrow.get_layout_engine() is None:
            with warnings.catch_warnings():  # an axes tight_layout cannot place keeps its place: no noise
                warnings.filterwarnings("ignore", message=".*not compatible with tight_layout")
                narrow.tight_layout()  # room for the raised text
        self.wide_png = png_bytes(wide, dpi=dpi)
        self.narrow_png = png_bytes(narrow, dpi=dpi)
        self.alt = alt
        if close:
            plt.close(wide)
            plt.close(narrow)

    @property
    def breakpoint_px(self) -> int:
        """The widest window that shows the narrow image."""
        width, text = _declared(self.wide_png)
        need = width * MIN_TEXT_PX / text if text else 0.0  # the width the wide image needs to stay legible
        return int(max(PHONE_BREAKPOINT_PX, min(width, need) + _GUTTER_PX))

    def _repr_html_(self) -> str:
        def uri(png: bytes) -> str:
            return "data:image/png;base64," + base64.b64encode(png).decode("ascii")

        width, _ = _declared(self.wide_png)
        return (f'<picture class="attnconv-phone-figure">'
                f'<source media="(max-width: {self.breakpoint_px}px)" srcset="{uri(self.narrow_png)}">'
                f'<img src="{uri(self.wide_png)}" alt="{html.escape(self.alt)}" width="{width}"></picture>')

    def _repr_png_(self) -> bytes:
        return self.wide_png

    def __repr__(self) -> str:
        return f"PhoneFigure({self.alt!r})" if self.alt else "PhoneFigure()"


def phone_figure(make: Callable[[int], Figure], wide: int, narrow: int = 1, alt: str = "",
                 dpi: float | None = None) -> PhoneFigure:
    """Draw ``make(wide)`` for a desktop and ``make(narrow)`` for a phone, as one :class:`PhoneFigure`.

    Args:
        make: draws the figure with the given number of panels a row and returns it.
        wide: panels a row on a desktop.
        narrow: panels a row on a phone (fewer than ``wide``).
        alt: text for a screen reader.
    """
    if not callable(make):
        raise TypeError(f"make must be a function of the number of panels a row, got {type(make).__name__}")
    for name, value in (("wide", wide), ("narrow", narrow)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"{name} must be a positive int (panels a row), got {value!r}")
    if narrow >= wide:
        raise ValueError(f"narrow ({narrow}) must be fewer panels a row than wide ({wide})")
    return PhoneFigure(make(wide), make(narrow), alt=alt, dpi=dpi)
