"""Chapter 02's explorable: the page's attention maps equal MultiHeadSelfAttention's on random inputs, and a reader
can drive it by mouse and by touch."""

from __future__ import annotations

import numpy as np
import pytest

from attnconv.explorables import standalone_page
from attnconv.explorables.attention_map import attention_explorable, reference

from .conftest import check_layout, check_not_computed, open_page, refusal, touch_drag, worst_relative_error

ID = "ch02-attention"
TOL = 1.2e-7  # float32 rounding (its machine epsilon), relative to the larger of 1 and the output


@pytest.fixture(scope="module")
def html():
    return standalone_page(attention_explorable())


def _compare(got: dict, want: dict) -> float:
    return worst_relative_error(got, want, ("attention", "heads", "tokens"), TOL)


def test_compute_equals_the_library_on_random_inputs(browser, html, tmp_path):
    loaded = open_page(browser, html, tmp_path, 1400)
    try:
        rng = np.random.default_rng(2)
        start = loaded.defaults(ID)
        worst = 0.0
        for i in range(20):
            x = {**start, "head": int(rng.integers(4)), "temperature": float(10 ** rng.uniform(-1, 1)),
                 "query": [int(rng.integers(16)), int(rng.integers(16))]}
            if i % 2:  # random projections and a random image too
                x.update(wq=rng.normal(0, 2, (12, 12)).tolist(), bq=rng.normal(0, 1, 12).tolist(),
                         wk=rng.normal(0, 1, (12, 12)).tolist(), bk=rng.normal(0, 1, 12).tolist(),
                         image=rng.uniform(0, 1, (32, 32, 3)).tolist())
            worst = max(worst, _compare(loaded.compute(ID, x), reference(x)))
        print(f"{ID}: largest JS - Python difference {worst:.1e}")
        with pytest.raises(AssertionError):  # the comparison fails for a wrong temperature
            _compare(loaded.compute(ID, x), reference({**x, "temperature": 1.1 * x["temperature"]}))
        assert not loaded.requests
    finally:
        loaded.context.close()


@pytest.mark.parametrize("width, touch", [(1400, False), (400, True)])
def test_reader_drives_it(browser, html, tmp_path, width, touch):
    loaded = open_page(browser, html, tmp_path, width, touch)
    page, root = loaded.page, f"#attnconv-x-{ID}"
    try:
        summary = lambda: page.locator(f"{root} .ax-summary").inner_text()  # noqa: E731
        first = summary()
        img = page.locator(f"{root} canvas.ax-input")
        img.scroll_into_view_if_needed()
        b = img.bounding_box()
        corner = (b["x"] + 3, b["y"] + 3)
        if touch:
            touch_drag(page, [corner, (corner[0] + 1, corner[1] + 1)])
        else:
            page.mouse.click(*corner)
        moved = summary()
        assert moved != first
        head = page.locator(f"{root} button[data-head='2']")
        head.tap() if touch else head.click()
        assert "ax-on" in head.get_attribute("class") and summary() != moved
        before = summary()
        page.locator(f"{root} .ax-temp").fill("-1")  # τ = 0.1: ten times sharper
        sharp = summary()
        peak = lambda text: float(text.split("= ")[1].split("×")[0])  # noqa: E731  ("peak 0.0049 = 1.3× ...")
        assert sharp != before and peak(sharp) > peak(before)
        check_layout(loaded, root, width)
        assert not loaded.requests
    finally:
        loaded.context.close()


COPY = "x.image = JSON.parse(JSON.stringify(x.image)); "  # the page's own image stays as it is


@pytest.mark.parametrize("change, expect", [
    ("x.temperature = 0", "temperature must be a finite number above 0"),
    ("x.temperature = NaN", "temperature must be a finite number above 0"),
    ("x.temperature = -1", "temperature must be a finite number above 0"),
    ("x.temperature = Infinity", "temperature must be a finite number above 0"),
    ("x.temperature = 1e-320", "too small for these inputs"),
    ("x.query = [16, 0]", "query must be [row, col]"),
    ("x.query = [-1, 3]", "query must be [row, col]"),
    ("x.query = [2.5, 1]", "query must be [row, col]"),
    (COPY + "x.image[0][0][0] = 1e200", "image must hold finite numbers from 0 to 1"),
    (COPY + "x.image[3][1][2] = NaN", "image must hold finite numbers"),
    ("x.head = 7", "head must be a whole number"),
    ("x.wq = x.wq.map(r => r.map(v => v * 1e400))", "wq must hold finite numbers"),
])
def test_compute_refuses_odd_input_with_a_message(browser, html, tmp_path, change, expect):
    loaded = open_page(browser, html, tmp_path, 1400)
    try:
        assert expect in refusal(loaded, ID, change)
        assert refusal(loaded, ID, "x.temperature = 0.5") == "no message"
    finally:
        loaded.context.close()


@pytest.mark.parametrize("width, touch", [(1400, False), (400, True)])
def test_typed_controls_refuse_odd_values_next_to_them_and_compute_nothing(browser, html, tmp_path, width, touch):
    """τ of 0, -1, NaN, 1e200, ... or a query off the grid: a message next to the field, and nothing computed with the
    old value while the field shows the new one, not even when the query or the slider moves meanwhile."""
    loaded = open_page(browser, html, tmp_path, width, touch)
    page, root = loaded.page, f"#attnconv-x-{ID}"
    try:
        summary = f"{root} .ax-summary"

        def tap_a_token():
            img = page.locator(f"{root} canvas.ax-input")
            img.scroll_into_view_if_needed()
            b = img.bounding_box()
            at = (b["x"] + 0.8 * b["width"], b["y"] + 0.2 * b["height"])
            page.touchscreen.tap(*at) if touch else page.mouse.click(*at)

        check_not_computed(loaded, f"{root} .ax-temp-in", f"{root} .ax-temp-msg", "0.5",
                           ["0", "-1", "NaN", "", "abc", "1e200", "1e-9"], "τ must be a number", summary,
                           meanwhile=tap_a_token)
        check_not_computed(loaded, f"{root} .ax-qrow", f"{root} .ax-query-msg", "3",
                           ["16", "-1", "2.5", "NaN", "1e200", ""], "whole numbers from 0 to 15", summary,
                           meanwhile=lambda: page.locator(f"{root} .ax-temp").fill("0.5"))
        page.locator(f"{root} .ax-temp-in").fill("0")  # the slider replaces a refused τ, and computes again
        assert "not computed" in page.locator(summary).inner_text()
        page.locator(f"{root} .ax-temp").fill("1")
        assert "not computed" not in page.locator(summary).inner_text()
        assert not page.locator(f"{root} .ax-temp-msg").is_visible()
        check_layout(loaded, root, width)
    finally:
        loaded.context.close()
