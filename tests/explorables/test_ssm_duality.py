"""Chapter 08's explorable: the page's kernel, mask, masked attention and three outputs equal the library's for
any decay, a wrong face is caught, odd input is refused, and the reader can move the decay by slider and by
typing, at desktop and phone width."""

from __future__ import annotations

import numpy as np
import pytest
from playwright.sync_api import expect

from attnconv.explorables import standalone_page
from attnconv.explorables.ssm_duality import reference, ssm_explorable

from .conftest import check_layout, check_not_computed, open_page, worst_relative_error

ID = "ch08-ssm"
TOL = 1e-12  # the page computes in float64, as the library does here
KEYS = ("kernel", "mask", "attention", "recurrence", "convolution", "masked")


@pytest.fixture(scope="module")
def html():
    return standalone_page(ssm_explorable())


def test_compute_equals_the_library_for_any_decay(browser, html, tmp_path):
    loaded = open_page(browser, html, tmp_path, 1400)
    try:
        rng = np.random.default_rng(8)
        start = loaded.defaults(ID)
        worst = 0.0
        for i in range(20):
            x = {"a": float(rng.uniform(-1, 1)), "b": float(rng.normal()), "c": float(rng.normal()),
                 "x": start["x"] if i % 2 else rng.normal(0, 1, int(rng.integers(1, 40))).tolist()}
            got, want = loaded.compute(ID, x), reference(x)
            worst = max(worst, worst_relative_error(got, want, KEYS, TOL))
            np.testing.assert_allclose(want["recurrence"], want["masked"], atol=1e-12)  # the three faces agree
            np.testing.assert_allclose(want["recurrence"], want["convolution"], atol=1e-12)
        print(f"{ID}: largest JS - Python difference {worst:.1e}")
        got = loaded.compute(ID, x)
        got["mask"] = (np.asarray(got["mask"]) * x["a"]).tolist()  # a^(t-s+1): the wrong mask is caught
        with pytest.raises(AssertionError):
            worst_relative_error(got, reference(x), KEYS, TOL)
        for bad, message in (({"a": 1.5}, "a must be"), ({"b": float("nan")}, "b must be"), ({"x": []}, "x must hold"),
                             ({"x": [0.0, float("inf")]}, "x must hold finite")):
            error = loaded.page.evaluate("([id, x]) => { try { window.attnconvExplorables[id].compute(x); return ''; }"
                                         " catch (e) { return e.name + ': ' + e.message; } }", [ID, {**start, **bad}])
            assert error.startswith("RangeError") and message in error, (bad, error)
        assert not loaded.requests
    finally:
        loaded.context.close()


@pytest.mark.parametrize("width, touch", [(1400, False), (400, True)])
def test_reader_moves_the_decay(browser, html, tmp_path, width, touch):
    loaded = open_page(browser, html, tmp_path, width, touch)
    page, root = loaded.page, f"#attnconv-x-{ID}"
    try:
        expect(page.locator(f"{root} .ax-a-val")).to_have_text("a = 0.80")  # drawn, so its controls are wired
        page.locator(f"{root} .ax-a").fill("0.3")
        expect(page.locator(f"{root} .ax-a-val")).to_have_text("a = 0.30")
        assert "e-1" in page.locator(f"{root} .ax-diff").inner_text()  # rounding only: 1e-16 or so
        typed = page.locator(f"{root} .ax-a-in")
        check_not_computed(loaded, f"{root} .ax-a-in", f"{root} .ax-a-msg", "0.3",
                           ["2", "-1.5", "NaN", "", "abc", "1e200", "1e400"], "from −1 to 1", f"{root} .ax-diff")
        typed.fill("-0.5")
        assert page.locator(f"{root} .ax-a-val").inner_text() == "a = −0.50"
        typed.fill("7")  # the slider replaces a refused a, and computes again
        assert "not computed" in page.locator(f"{root} .ax-diff").inner_text()
        page.locator(f"{root} .ax-a").fill("0.5")
        expect(page.locator(f"{root} .ax-a-val")).to_have_text("a = 0.50")
        assert "not computed" not in page.locator(f"{root} .ax-diff").inner_text()
        assert not page.locator(f"{root} .ax-a-msg").is_visible()
        check_layout(loaded, root, width)
        assert not loaded.errors and not loaded.requests
    finally:
        loaded.context.close()


def test_builder_refuses_bad_arguments_by_name():
    with pytest.raises(ValueError, match="a must be from -1 to 1"):
        ssm_explorable(a=1.2)
    with pytest.raises(ValueError, match="length"):
        ssm_explorable(length=1)
    with pytest.raises(ValueError, match="c must be a finite number"):
        ssm_explorable(c=float("nan"))
