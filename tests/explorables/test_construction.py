"""Chapter 03's explorable: the page's convolution, MHSA layer and attention equal the library's on random inputs,
and a reader can drive it by mouse and by touch."""

from __future__ import annotations

import numpy as np
import pytest

from attnconv.explorables import standalone_page
from attnconv.explorables.construction import PRESETS, construction_explorable, grey_images, reference

from .conftest import check_layout, open_page, refusal, touch_drag, worst_relative_error

ID = "ch03-construction"
TOL = 1.2e-7  # float32 rounding (its epsilon), relative to the larger of 1 and the output; both sides are float64


@pytest.fixture(scope="module")
def html():
    return standalone_page(construction_explorable())


def _random_inputs(rng: np.random.Generator, image) -> dict:
    centers = [[a - 1.0, b - 1.0] for a in range(3) for b in range(3)]
    if rng.random() < 0.5:  # a head dragged off its tap
        centers[rng.integers(9)] = list(rng.uniform(-3, 3, 2))
    return {"image": image, "kernel": rng.normal(0, 1, (3, 3)).tolist(), "alpha": float(10 ** rng.uniform(-1, 2)),
            "centers": centers, "query": [int(rng.integers(32)), int(rng.integers(32))]}


def _compare(got: dict, want: dict) -> float:
    worst = worst_relative_error(got, want, ("conv", "mhsa", "difference", "attention"), TOL)
    assert abs(got["max_difference"] - want["max_difference"]) < TOL * max(1.0, want["max_difference"])
    assert abs(got["relative_difference"] - want["relative_difference"]) < TOL * max(1.0, want["relative_difference"])
    return worst


def test_compute_equals_the_library_on_random_inputs(browser, html, tmp_path):
    loaded = open_page(browser, html, tmp_path, 1400)
    try:
        rng = np.random.default_rng(3)
        image = loaded.defaults(ID)["image"]
        worst = max(_compare(loaded.compute(ID, x), reference(x))
                    for x in (_random_inputs(rng, image) for _ in range(20)))
        random_image = rng.uniform(0, 1, (12, 9)).tolist()  # another size, and no image of the page
        x = _random_inputs(rng, random_image)
        x["query"] = [5, 7]
        worst = max(worst, _compare(loaded.compute(ID, x), reference(x)))
        print(f"{ID}: largest JS - Python difference {worst:.1e}")
        assert not loaded.requests
    finally:
        loaded.context.close()


def test_a_wrong_library_setting_is_caught(browser, html, tmp_path):
    """The comparison can fail: the page at α against the library at 2α differs, as does a moved head."""
    loaded = open_page(browser, html, tmp_path, 1400)
    try:
        x = loaded.defaults(ID)
        got = loaded.compute(ID, x)
        with pytest.raises(AssertionError):
            _compare(got, reference({**x, "alpha": 2 * x["alpha"]}))
        moved = [list(c) for c in x["centers"]]
        moved[4] = [0.5, 0.0]
        with pytest.raises(AssertionError):
            _compare(got, reference({**x, "centers": moved}))
    finally:
        loaded.context.close()


def _number(page) -> float:
    return float(page.locator(f"#attnconv-x-{ID} .ax-max").inner_text())


def _drive(loaded, tap) -> None:
    page, root = loaded.page, f"#attnconv-x-{ID}"
    page.locator(f"{root} button[data-preset='0']").click() if not tap else page.locator(
        f"{root} button[data-preset='0']").tap()
    page.locator(f"{root} .ax-alpha").fill("2")  # α = 100: the heads are sharp, the layer is the convolution
    assert _number(page) < 1e-6
    head = page.locator(f"{root} canvas.ax-head").nth(4)
    head.scroll_into_view_if_needed()
    box = head.bounding_box()
    x, y = box["x"] + box["width"] * 0.5, box["y"] + box["height"] * 0.5  # the query cell: Δ = 0
    if tap:
        touch_drag(page, [(x, y), (x + box["width"] / 14, y), (x + box["width"] / 7, y)])  # one cell right
    else:
        page.mouse.move(x, y)
        page.mouse.down()
        page.mouse.move(x + box["width"] / 7, y, steps=4)
        page.mouse.up()
    broken = _number(page)
    assert broken > 0.05, "moving the identity's only head off its tap must break the output"
    label = page.locator(f"{root} .ax-head-label").nth(4).inner_text()
    assert "moved" in label and "1.00" in label, label
    page.locator(f"{root} .ax-reset").click() if not tap else page.locator(f"{root} .ax-reset").tap()
    assert _number(page) < 1e-6
    cell = page.locator(f"{root} .ax-kernel input").nth(0)  # type a value into a cell
    cell.fill("0.5")
    assert _number(page) < 1e-6 and "ax-on" not in (page.locator(f"{root} button[data-preset='0']")
                                                   .get_attribute("class") or "")
    img = page.locator(f"{root} canvas.ax-input")
    img.scroll_into_view_if_needed()
    b = img.bounding_box()
    (page.touchscreen.tap if tap else page.mouse.click)(b["x"] + 2, b["y"] + 2)  # the corner pixel: zero padding
    assert "peak" in page.locator(f"{root} .ax-head-label").nth(0).inner_text()


@pytest.mark.parametrize("width, touch", [(1400, False), (400, True)])
def test_reader_drives_it(browser, html, tmp_path, width, touch):
    loaded = open_page(browser, html, tmp_path, width, touch)
    try:
        _drive(loaded, touch)
        check_layout(loaded, f"#attnconv-x-{ID}", width)
        assert not loaded.requests
    finally:
        loaded.context.close()


COPY = "x.image = JSON.parse(JSON.stringify(x.image)); "  # the page's own image stays as it is


@pytest.mark.parametrize("change, expect", [
    ("x.alpha = 0", "alpha must be a finite number above 0"),
    ("x.alpha = -1", "alpha must be a finite number above 0"),
    ("x.alpha = NaN", "alpha must be a finite number above 0"),
    ("x.kernel = [[Infinity, 0, 0], [0, 1, 0], [0, 0, 0]]", "kernel must hold finite numbers"),
    ("x.kernel = [[1, 2], [3, 4]]", "kernel must be 3 x 3"),
    (COPY + "x.image[4][5] = 1e200", "image must hold finite numbers from 0 to 1"),
    (COPY + "x.image[0][0] = NaN", "image must hold finite numbers"),
    ("x.query = [32, 0]", "query must be [row, col]"),
    ("x.query = [0, -1]", "query must be [row, col]"),
    ("x.centers[2] = [NaN, 0]", "centers must hold finite numbers"),
])
def test_compute_refuses_odd_input_with_a_message(browser, html, tmp_path, change, expect):
    loaded = open_page(browser, html, tmp_path, 1400)
    try:
        assert expect in refusal(loaded, ID, change)
        assert refusal(loaded, ID, "x.alpha = 3") == "no message"
    finally:
        loaded.context.close()


def _shown(page) -> tuple[str, str, str]:
    root = f"#attnconv-x-{ID}"
    return tuple(page.locator(f"{root} {s}").inner_text() for s in (".ax-max", ".ax-rel", ".ax-verdict"))


def check_refused_and_not_computed(loaded, field: str, message: str, good: str, bad, expect: str) -> None:
    """Each of ``bad`` typed into ``field`` is refused next to it (``message`` says ``expect``), and the page then
    computes nothing: its numbers read "not computed" and the verdict says so, also after α moves (no stale value
    is used). ``good`` again computes the numbers it gave before."""
    page, root = loaded.page, f"#attnconv-x-{ID}"
    box, msg = page.locator(field), page.locator(message)
    box.fill(good)
    assert not msg.is_visible(), msg.inner_text()
    computed = _shown(page)
    assert "not computed" not in computed[0]
    for value in bad:
        box.fill(value)
        assert msg.is_visible() and expect in msg.inner_text(), (value, msg.inner_text())
        assert "ax-bad" in (box.get_attribute("class") or "") and box.get_attribute("aria-invalid") == "true", value
        shown = _shown(page)
        assert shown[0] == "not computed" and shown[1] == "—" and "not computed" in shown[2], (value, shown)
    if "alpha" not in field:  # α moves while the field is still wrong: nothing computed with its old value
        page.locator(f"{root} .ax-alpha").fill("1.5")
        assert _shown(page)[0] == "not computed"
        page.locator(f"{root} .ax-alpha").fill("2")
    box.fill(good)
    assert not msg.is_visible() and _shown(page) == computed
    assert not loaded.errors, loaded.errors


@pytest.mark.parametrize("width, touch", [(1400, False), (400, True)])
def test_typed_controls_refuse_odd_values_next_to_them(browser, html, tmp_path, width, touch):
    loaded = open_page(browser, html, tmp_path, width, touch)
    root = f"#attnconv-x-{ID}"
    try:
        loaded.page.locator(f"{root} .ax-alpha").fill("2")
        check_refused_and_not_computed(loaded, f"{root} .ax-alpha-in", f"{root} .ax-alpha-msg", "100",
                                       ["0", "-1", "NaN", "", "abc", "1e200", "1e400", "100.5"], "α must be a number")
        check_refused_and_not_computed(loaded, f"{root} .ax-kernel input >> nth=4", f"{root} .ax-kernel-msg", "0.5",
                                       ["1e200", "1e400", "NaN", "abc", "", "-2000"], "kernel weight must be a number")
        check_refused_and_not_computed(loaded, f"{root} .ax-qcol", f"{root} .ax-query-msg", "0",
                                       ["32", "-1", "2.5", "NaN", ""], "whole numbers from 0 to 31")
        check_layout(loaded, root, width)
    finally:
        loaded.context.close()


def test_a_weight_typed_key_by_key_is_never_computed_half_typed(browser, html, tmp_path):
    """Typing 1e400 passes through 1, 1e, 1e4 and 1e40: the page must end refusing it, not computing with 1e40 or
    with the 1 it saw first; and a cleared cell computes nothing, rather than keep its old weight."""
    loaded = open_page(browser, html, tmp_path, 1400)
    page, root = loaded.page, f"#attnconv-x-{ID}"
    try:
        cell = page.locator(f"{root} .ax-kernel input").nth(4)
        cell.fill("")
        cell.press_sequentially("1e400")
        assert cell.input_value() == "1e400"
        assert _shown(page)[0] == "not computed" and "kernel weight 5" in _shown(page)[2]
        assert "kernel weight must be a number" in page.locator(f"{root} .ax-kernel-msg").inner_text()
        cell.fill("3")
        three = _shown(page)
        assert three[0] != "not computed"
        cell.fill("")  # cleared: not the old 3
        assert _shown(page)[0] == "not computed"
        assert "empty" in page.locator(f"{root} .ax-kernel-msg").inner_text()
        page.locator(f"{root} button[data-preset='1']").click()  # a preset replaces every cell: computed again
        assert _shown(page)[0] != "not computed" and _shown(page) != three
        assert not page.locator(f"{root} .ax-kernel-msg").is_visible()
        assert not loaded.errors, loaded.errors
    finally:
        loaded.context.close()


def _range(out: dict) -> float:
    return float(out["conv"].max() - out["conv"].min())


def test_the_verdict_shows_the_relative_difference_it_reads(browser, html, tmp_path):
    """Large outputs: the page shows the absolute and the relative difference, and the verdict follows the relative
    one, as the library's numbers say it should."""
    loaded = open_page(browser, html, tmp_path, 1400)
    page, root = loaded.page, f"#attnconv-x-{ID}"
    try:
        weights = [[-1000.0] * 3, [-1000.0, 1000.0, -1000.0], [-1000.0] * 3]
        for t in range(9):
            page.locator(f"{root} .ax-kernel input").nth(t).fill(str(weights[t // 3][t % 3]))
        for slider, alpha in (("0", 1.0), ("1", 10.0), ("2", 100.0)):
            page.locator(f"{root} .ax-alpha").fill(slider)
            absolute, relative, verdict = _shown(page)
            want = reference({**loaded.defaults(ID), "alpha": alpha, "kernel": weights})
            # Where the difference is rounding (at α = 100 about 1e-16 of the range: the library gives 1.8e-12 and
            # a browser's Math.exp may give exactly 0), the two agree to within the rounding, not digit for digit.
            rounding = 1e-12
            assert float(absolute) == pytest.approx(want["max_difference"], rel=1e-2, abs=rounding * _range(want))
            assert float(relative) == pytest.approx(want["relative_difference"], rel=1e-2, abs=rounding)
            assert float(relative) == pytest.approx(float(absolute) / _range(want), rel=1e-2, abs=1e-300)
            rel = want["relative_difference"]
            expected = ("build the convolution" if rel < 1e-3 else "close" if rel < 0.05 else "not this convolution")
            assert expected in verdict, (alpha, verdict)
        assert "relative to the convolution" in page.locator(f"{root} div.ax-number").inner_text()
    finally:
        loaded.context.close()


def test_exact_zero_is_rounding_not_underflow():
    """From α = 50 the page's difference is exactly 0 with the edge kernel, yet no weight has underflowed: every
    head still puts about e^-50 on its neighbours, a normal float64 number, and that leak is rounded away against
    outputs of order 1. A head whose weights had underflowed would put exactly 0 there."""
    plane = grey_images()[0]
    taps = [[a - 1.0, b - 1.0] for a in range(3) for b in range(3)]
    x = {"image": (plane["pixels"] / 255).tolist(), "kernel": PRESETS["edge"], "alpha": 50.0, "centers": taps,
         "query": [16, 16]}
    out = reference(x)
    assert out["max_difference"] == 0.0 and out["relative_difference"] == 0.0
    leak = out["attention"][4][17, 18]  # the centre head's weight on the query's right-hand neighbour
    assert leak > 0 and np.isclose(leak, np.exp(-50.0), rtol=1e-5)  # e^-50 ≈ 1.9e-22: not underflowed
    assert leak > 1e250 * np.finfo(np.float64).tiny  # far above float64's smallest normal number, 2.2e-308
    assert 1.0 + leak == 1.0  # but below half the spacing of float64 numbers near 1: rounded away
    assert 1.0 + 1e-15 != 1.0  # the check can fail: a leak of 1e-15 would show
    assert reference({**x, "alpha": 20.0})["max_difference"] > 0  # and at α = 20 it does show
