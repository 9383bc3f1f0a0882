"""How large a figure's text is, carried in the PNG itself so that a page can be checked at its displayed size.

A PNG keeps no font sizes, and a browser shows it scaled to its column. :func:`png_bytes` writes the figure with
one ``tEXt`` entry, ``attnconv-min-text-px``: the size in image pixels of its smallest text (``fontsize`` in
points times ``dpi / 72``). The page's test multiplies it by the displayed width over the image's own width and
asks for at least 9 px. A second entry, ``attnconv-texts``, lists the figure's words (:func:`figure_texts`), which
no check could read from the pixels. :func:`install` makes every figure a notebook shows go through :func:`png_bytes`.
"""

from __future__ import annotations

import io
import json

from matplotlib.figure import Figure
from matplotlib.text import Text

__all__ = ["BOOK_COLUMN_PX", "MIN_TEXT_KEY", "MIN_TEXT_PX", "PHONE_COLUMN_PX", "TEXTS_KEY", "enlarge_small_text",
           "figure_texts", "install", "overprinted_texts", "png_bytes", "smallest_text_px"]

MIN_TEXT_KEY = "attnconv-min-text-px"
TEXTS_KEY = "attnconv-texts"  # every visible text of the figure (titles, labels, legends), as a JSON list
MIN_TEXT_PX = 9.0  # the smallest text a reader is asked to read, in CSS pixels as shown
BOOK_COLUMN_PX = 768  # the width of the book's text column on a desktop: a wider figure is shown scaled down to it
PHONE_COLUMN_PX = 352  # the same on a 400 px phone, where a viewer is read in place


def _shown_texts(fig: Figure) -> list[Text]:
    """The figure's visible non-empty texts, in drawing order, as its last draw left them."""
    return [t for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip() and t.get_alpha() != 0]


def _visible_texts(fig: Figure) -> list[Text]:
    """:func:`_shown_texts` after a draw (tick labels get their text only when the figure is drawn)."""
    fig.draw_without_rendering()
    return _shown_texts(fig)


def _smallest(texts: list[Text], dpi: float) -> float | None:
    return min(t.get_fontsize() for t in texts) * dpi / 72 if texts else None


def _words(texts: list[Text]) -> list[str]:
    return list(dict.fromkeys(t.get_text().strip() for t in texts))


def smallest_text_px(fig: Figure, dpi: float | None = None) -> float | None:
    """The font size, in pixels of an image saved at ``dpi`` (default the figure's), of the figure's smallest
    visible non-empty text; ``None`` when it has none."""
    return _smallest(_visible_texts(fig), fig.dpi if dpi is None else dpi)


def figure_texts(fig: Figure) -> list[str]:
    """Every visible non-empty text of ``fig`` (titles, axis and tick labels, legends, annotations), in drawing
    order, each once. A PNG cannot be searched for words; these go into it beside the text size, so that a check
    can read a figure's words (a raw ``softmax_j`` where maths was meant, say)."""
    return _words(_visible_texts(fig))


def overprinted_texts(fig: Figure, slack_px: float = 1.0) -> list[str]:
    """Texts drawn over one another (an axis label on a tick label) or over a box of another panel (tick labels
    running into a flow chart beside the plot): one line per clash, empty when every text stands clear.

    Boxes are the patches of axes that are switched off (drawn panels such as a flow chart), so a text over its
    own box, or a label inside a plot's frame, is no clash. ``slack_px``: overlaps this thin are ignored."""
    from matplotlib.patches import FancyBboxPatch

    texts = _visible_texts(fig)
    renderer = fig.canvas.get_renderer()
    boxes = [(ax, p.get_window_extent(renderer)) for ax in fig.axes if not ax.axison
             for p in ax.patches if isinstance(p, FancyBboxPatch)]
    extents = [(t, t.get_window_extent(renderer).expanded(1, 1)) for t in texts]

    def clash(a, b) -> bool:
        return (min(a.x1, b.x1) - max(a.x0, b.x0) > slack_px) and (min(a.y1, b.y1) - max(a.y0, b.y0) > slack_px)

    out = []
    for i, (t, e) in enumerate(extents):
        for u, f in extents[i + 1:]:
            if clash(e, f):
                out.append(f"{t.get_text()!r} over {u.get_text()!r}")
        owner = t.axes
        for ax, box in boxes:
            if ax is not owner and clash(e, box):
                out.append(f"{t.get_text()!r} over a box of another panel")
    return out


def enlarge_small_text(fig: Figure, column_px: float = BOOK_COLUMN_PX, min_px: float = MIN_TEXT_PX,
                       dpi: float | None = None) -> Figure:
    """Raise every text of ``fig`` smaller than ``min_px`` as shown in a column ``column_px`` wide to that size.

    A figure ``W`` inches wide is saved ``W * dpi`` pixels wide and shown at ``min(1, column_px / (W * dpi))`` of
    that, so its text must be at least ``min_px * 72 / dpi / scale`` points. Call it before ``tight_layout``, so
    that the layout makes room for the larger text. ``dpi`` is the resolution it will be saved at (default the
    figure's). Returns ``fig``.
    """
    dpi = fig.dpi if dpi is None else dpi
    width = fig.get_size_inches()[0] * dpi
    scale = min(1.0, column_px / width)
    floor = 1.05 * min_px / scale * 72 / dpi  # 5% to spare: a tight bounding box can be a little wider
    fig.draw_without_rendering()  # create the tick labels, so that they are raised too
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            labels = [t for t in axis.get_ticklabels(which="both") if t.get_text()]
            if labels and min(t.get_fontsize() for t in labels) < floor:
                ax.tick_params(axis="x" if axis is ax.xaxis else "y", which="both", labelsize=floor)
    for text in fig.findobj(Text):
        if text.get_text().strip() and text.get_fontsize() < floor:
            text.set_fontsize(floor)
    return fig


def png_bytes(fig: Figure, dpi: float | None = None, **savefig_kwargs) -> bytes:
    """``fig`` as PNG (``bbox_inches="tight"`` unless given), with its smallest text size and its words in
    ``tEXt`` entries.

    The entries are read from the figure as ``savefig`` draws it (its ``draw_event``), not from a draw of their own:
    matplotlib writes the metadata only after that draw, and the draw is what creates the tick labels."""
    dpi = fig.dpi if dpi is None else dpi
    metadata = dict(savefig_kwargs.pop("metadata", {}) or {})
    drawn: list[list[Text]] = []

    def read_entries(_event) -> None:
        texts = _shown_texts(fig)
        drawn.append(texts)
        size = _smallest(texts, dpi)
        metadata.pop(MIN_TEXT_KEY, None)
        if size is not None:
            metadata[MIN_TEXT_KEY] = f"{size:.2f}"
        metadata[TEXTS_KEY] = json.dumps(_words(texts))  # ASCII (escaped), so a plain tEXt entry

    savefig_kwargs.setdefault("bbox_inches", "tight")
    buf = io.BytesIO()
    listening = fig.canvas.mpl_connect("draw_event", read_entries)
    try:
        fig.savefig(buf, format="png", dpi=dpi, metadata=metadata, **savefig_kwargs)
    finally:
        fig.canvas.mpl_disconnect(listening)
    if not drawn:
        raise RuntimeError("savefig drew the figure without a draw_event: its text entries could not be read")
    return buf.getvalue()


def install() -> bool:
    """In an IPython kernel, show every matplotlib figure through :func:`png_bytes`. Returns whether it did.

    matplotlib's inline backend registers its own PNG formatter when the backend module is first loaded, so that
    module is loaded first and this one registered after it."""
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    if shell is None or not hasattr(shell, "display_formatter"):
        return False
    import matplotlib
    import matplotlib.pyplot as plt

    plt.switch_backend(matplotlib.get_backend())  # loads the inline backend now, so it cannot override us later
    shell.display_formatter.formatters["image/png"].for_type(Figure, png_bytes)
    return True
