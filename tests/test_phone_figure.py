"""attnconv.figures.phone: a figure drawn wide and narrow, shown as one <picture>; book/ext/phone_figures.py writes
its two images out as files."""

from __future__ import annotations

import base64
import io
import json
import re
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
from PIL import Image  # noqa: E402

from attnconv.figures.legibility import MIN_TEXT_KEY, MIN_TEXT_PX, PHONE_COLUMN_PX, TEXTS_KEY, png_bytes  # noqa: E402
from attnconv.figures.phone import PHONE_BREAKPOINT_PX, PhoneFigure, phone_figure  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "book" / "ext"))
from phone_figures import externalise  # noqa: E402


def heads(ncols: int, panels: int = 4):
    rows = -(-panels // ncols)
    fig, axes = plt.subplots(rows, ncols, figsize=(2.3 * ncols + 0.8, 2.6 * rows), squeeze=False,
                             layout="constrained")
    for i, ax in enumerate(axes.ravel()):
        ax.imshow([[0, 1], [1, 0]])
        ax.set_title(f"head {i}", fontsize=11)
    return fig


def _info(png: bytes):
    image = Image.open(io.BytesIO(png))
    return image.width, float(image.text[MIN_TEXT_KEY]), json.loads(image.text[TEXTS_KEY])


def test_narrow_image_is_legible_in_a_phone_column_and_both_declare_their_text():
    plt.close("all")  # figures other tests in this process left open are not this one's
    figure = phone_figure(heads, wide=4, narrow=2, alt="four heads")
    wide_w, wide_text, wide_words = _info(figure.wide_png)
    narrow_w, narrow_text, narrow_words = _info(figure.narrow_png)
    assert narrow_w < wide_w
    assert narrow_text * min(1, PHONE_COLUMN_PX / narrow_w) >= MIN_TEXT_PX  # legible as a phone shows it
    assert wide_text * PHONE_COLUMN_PX / wide_w < MIN_TEXT_PX  # the wide one would not have been
    assert "head 3" in wide_words and "head 3" in narrow_words
    assert not plt.get_fignums(), "both figures are closed, so a notebook shows only the picture"


def test_picture_switches_to_the_narrow_image_below_the_breakpoint():
    figure = phone_figure(heads, wide=4, narrow=2, alt='heads "a" & b')
    html = figure._repr_html_()
    media = re.search(r'<source media="\(max-width: (\d+)px\)" srcset="data:image/png;base64,([^"]+)">', html)
    assert media and int(media.group(1)) == figure.breakpoint_px >= PHONE_BREAKPOINT_PX
    assert base64.b64decode(media.group(2)) == figure.narrow_png
    img = re.search(r'<img src="data:image/png;base64,([^"]+)" alt="([^"]*)"', html)
    assert base64.b64decode(img.group(1)) == figure.wide_png and img.group(2) == "heads &quot;a&quot; &amp; b"
    assert figure._repr_png_() == figure.wide_png
    width, text, _ = _info(figure.wide_png)
    assert figure.breakpoint_px >= width * MIN_TEXT_PX / text  # the wide one is shown only where it is legible


def test_bad_arguments_are_refused_with_the_argument_named():
    with pytest.raises(ValueError, match="narrow"):
        phone_figure(heads, wide=2, narrow=2)
    with pytest.raises(ValueError, match="wide"):
        phone_figure(heads, wide=0)
    with pytest.raises(TypeError, match="make"):
        phone_figure("heads", wide=4)
    fig = heads(4)
    with pytest.raises(TypeError, match="narrow"):
        PhoneFigure(fig, "not a figure")
    plt.close("all")


def test_png_lists_the_figure_words_and_skips_hidden_ones():
    fig, ax = plt.subplots(figsize=(3, 2))
    ax.set_title("attention softmax_j(b)")
    ax.text(0, 0, "hidden").set_visible(False)
    words = json.loads(Image.open(io.BytesIO(png_bytes(fig))).text[TEXTS_KEY])
    plt.close(fig)
    assert "attention softmax_j(b)" in words and "hidden" not in words


def test_extension_writes_each_image_once_and_links_it():
    figure = phone_figure(heads, wide=4, narrow=2)
    body = "<p>before</p>" + figure._repr_html_() + '<img src="data:image/png;base64,AAAA">'
    written = {}
    out = externalise(body, written.__setitem__, lambda name: f"../_images/{name}")
    assert "data:image/png;base64" in out.split("</picture>")[1], "images outside a phone figure are left alone"
    assert "data:image" not in out.split("</picture>")[0]
    assert sorted(written.values(), key=len) == sorted([figure.wide_png, figure.narrow_png], key=len)
    for name in written:
        assert f"../_images/{name}" in out and name.endswith(".png")
