"""attnconv.figures.legibility: every figure's PNG says how large its smallest text is."""

from __future__ import annotations

import io

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from PIL import Image  # noqa: E402

from attnconv.figures.legibility import (MIN_TEXT_KEY, TEXTS_KEY, figure_texts, install, png_bytes,  # noqa: E402
                                        smallest_text_px)


def test_smallest_text_is_the_smallest_visible_label_in_image_pixels():
    fig, ax = plt.subplots(figsize=(3, 2), dpi=100)
    ax.set_title("title", fontsize=14)
    ax.tick_params(labelsize=12)
    ax.set_xlabel("x", fontsize=7)
    hidden = ax.text(0.5, 0.5, "hidden", fontsize=3)
    hidden.set_visible(False)
    assert abs(smallest_text_px(fig) - 7 * 100 / 72) < 1e-9
    assert abs(smallest_text_px(fig, dpi=200) - 7 * 200 / 72) < 1e-9
    ax.set_xlabel("")  # an empty label is no text
    assert abs(smallest_text_px(fig) - 12 * 100 / 72) < 1e-9
    plt.close(fig)


def test_png_carries_the_size_and_figures_without_text_carry_none():
    fig, ax = plt.subplots(figsize=(3, 2), dpi=100)
    ax.set_title("t", fontsize=6)
    data = png_bytes(fig, dpi=50)
    assert float(Image.open(io.BytesIO(data)).text[MIN_TEXT_KEY]) == round(min(6, 10) * 50 / 72, 2)
    plt.close(fig)
    blank = plt.figure(figsize=(1, 1))
    assert MIN_TEXT_KEY not in Image.open(io.BytesIO(png_bytes(blank))).text
    plt.close(blank)


def test_the_entries_are_those_of_the_figure_as_drawn_with_its_tick_labels():
    """png_bytes reads its entries during savefig's own draw. A figure never drawn before has no tick labels yet;
    its smallest text is one of them (6 pt), and its words include them, as the figure's own draw gives them. A
    changed figure saved again carries its new entries, not the first ones."""
    import json

    fig, ax = plt.subplots(figsize=(3, 2), dpi=100)
    ax.plot([0, 1, 2], [3, 1, 2])
    ax.tick_params(labelsize=6)
    ax.set_title("curve", fontsize=14)
    text = Image.open(io.BytesIO(png_bytes(fig, dpi=72))).text
    assert float(text[MIN_TEXT_KEY]) == 6.0 and float(text[MIN_TEXT_KEY]) == round(smallest_text_px(fig, 72), 2)
    assert json.loads(text[TEXTS_KEY]) == figure_texts(fig) and {"curve", "0.00", "2.00"} <= set(figure_texts(fig))
    ax.tick_params(labelsize=12)
    ax.set_title("")
    again = Image.open(io.BytesIO(png_bytes(fig, dpi=72))).text
    assert float(again[MIN_TEXT_KEY]) == 12.0 and "curve" not in json.loads(again[TEXTS_KEY])
    plt.close(fig)


def test_install_registers_the_png_formatter_only_in_a_shell(monkeypatch):
    import IPython

    from matplotlib.figure import Figure

    monkeypatch.setattr(IPython, "get_ipython", lambda: None)
    assert install() is False  # no shell: nothing to install into

    class Formatter:
        def __init__(self):
            self.types = {}

        def for_type(self, cls, func):
            self.types[cls] = func

    class Shell:
        def __init__(self):
            self.display_formatter = type("D", (), {"formatters": {"image/png": Formatter()}})()

    shell = Shell()
    monkeypatch.setattr(IPython, "get_ipython", lambda: shell)
    monkeypatch.setattr(plt, "switch_backend", lambda name: None)  # this stand-in shell has no inline backend
    assert install() is True
    assert shell.display_formatter.formatters["image/png"].types[Figure] is png_bytes


def test_enlarge_small_text_makes_a_wide_figure_legible_in_the_column():
    from attnconv.figures.legibility import enlarge_small_text

    fig, ax = plt.subplots(figsize=(12, 3), dpi=100)
    ax.plot([0, 1], [0, 1], label="line")
    ax.legend(fontsize=7)
    ax.set_title("title", fontsize=8)
    shown = lambda f: smallest_text_px(f) * min(1, 768 / (f.get_size_inches()[0] * f.dpi))  # noqa: E731
    assert shown(fig) < 9
    enlarge_small_text(fig)
    assert shown(fig) >= 9
    assert ax.title.get_fontsize() > 8 and ax.get_legend().get_texts()[0].get_fontsize() > 7
    plt.close(fig)
