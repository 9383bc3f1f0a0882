"""Chapter 05's explorable: the page's band and convolutions equal the library's on random bias kernels, and a
reader can draw a kernel by mouse and by touch."""

from __future__ import annotations

import numpy as np
import pytest

from attnconv.explorables import standalone_page
from attnconv.explorables.bias_kernel import bias_explorable, reference

from .conftest import check_layout, open_page, touch_drag, worst_relative_error

ID = "ch05-bias"
TOL = 1.2e-7  # float32 rounding (its machine epsilon), relative to the larger of 1 and the output
KEYS = ("kernel", "attention", "zero_band", "renormalized", "zero_padded")


@pytest.fixture(scope="module")
def html():
    return standalone_page(bias_explorable())


def _compare(got: dict, want: dict) -> float:
    return worst_relative_error(got, want, KEYS, TOL)


def test_compute_equals_the_library_on_random_kernels(browser, html, tmp_path):
    loaded = open_page(browser, html, tmp_path, 1400)
    try:
        rng = np.random.default_rng(5)
        start = loaded.defaults(ID)
        worst = 0.0
        for i in range(24):
            k = int(rng.integers(1, 5))
            x = {"bias": rng.normal(0, 2, 2 * k + 1).tolist(), "features": start["features"]}
            if i % 3 == 2:  # random features on a random length too
                x["features"] = rng.normal(0, 1, (int(rng.integers(k + 1, 30)), 3)).tolist()
            worst = max(worst, _compare(loaded.compute(ID, x), reference(x)))
        print(f"{ID}: largest JS - Python difference {worst:.1e}")
        got = loaded.compute(ID, x)
        got["attention"], got["zero_band"] = got["zero_band"], got["attention"]  # the two boundaries swapped
        with pytest.raises(AssertionError):
            _compare(got, reference(x))
        assert not loaded.requests
    finally:
        loaded.context.close()


@pytest.mark.parametrize("width, touch", [(1400, False), (400, True)])
def test_reader_draws_a_kernel(browser, html, tmp_path, width, touch):
    loaded = open_page(browser, html, tmp_path, width, touch)
    page, root = loaded.page, f"#attnconv-x-{ID}"
    try:
        k3 = page.locator(f"{root} button[data-k='3']")
        k3.tap() if touch else k3.click()
        assert page.locator(f"{root} .ax-bar-box").count() == 7
        bar = page.locator(f"{root} .ax-bar-box").nth(0)  # δ = -3: drag it to the top, b = 4
        bar.scroll_into_view_if_needed()
        b = bar.bounding_box()
        x, top, bottom = b["x"] + b["width"] / 2, b["y"] + 1, b["y"] + b["height"] * 0.5
        if touch:
            touch_drag(page, [(x, bottom), (x, (bottom + top) / 2), (x, top)])
        else:
            page.mouse.move(x, bottom)
            page.mouse.down()
            page.mouse.move(x, top, steps=5)
            page.mouse.up()
        state = loaded.page.evaluate(f"() => document.querySelector('{root} .ax-bval').textContent")
        assert state in ("3.9", "4.0"), state
        mass = page.locator(f"{root} .ax-mass").inner_text()
        kept = float(mass.split("keeps ")[1].split("%")[0])
        assert kept < 60 and "renormalises to 100%" in mass  # δ = -3 reads before the first word: mass lost
        check_layout(loaded, root, width)
        assert not loaded.requests
    finally:
        loaded.context.close()
