"""Chapter 05's explorable: the page's band and convolutions equal the library's on random bias kernels, and a
reader can draw a kernel by mouse and by touch."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from attnconv.explorables import standalone_page
from attnconv.explorables.bias_kernel import MAX_TOKENS, bias_explorable, reference

from .conftest import check_layout, open_page, touch_drag, worst_relative_error

ID = "ch05-bias"
TOL = 1.2e-7  # float32 rounding (its machine epsilon), relative to the larger of 1 and the output
KEYS = ("kernel", "attention", "zero_band", "attention_taps", "zero_taps", "renormalized", "zero_padded")


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


TIMED_JS = """([id, text]) => {
  const x = JSON.parse(text);
  const t0 = performance.now(), out = window.attnconvExplorables[id].compute(x);
  return JSON.stringify({ms: performance.now() - t0, out: out});
}"""
# Too many tokens, built in the page: the refusal must come before any work on them.
TOO_LONG_JS = """([id, n]) => {
  try { window.attnconvExplorables[id].compute({bias: [0, 1, 0], features: Array.from({length: n}, () => [1])});
        return 'no message'; }
  catch (e) { return e.message; }
}"""


def test_long_sequences_cost_linear_time_and_too_many_tokens_get_a_message(browser, html, tmp_path):
    """3,000 and 10,000 tokens compute in well under a second (banded, never N x N) and equal the library; more
    than MAX_TOKENS are refused with a message."""
    loaded = open_page(browser, html, tmp_path, 1400)
    try:
        rng = np.random.default_rng(9)
        for n in (3000, 10000):
            x = {"bias": rng.normal(0, 2, 9).tolist(), "features": rng.normal(0, 1, (n, 2)).tolist()}
            got = json.loads(loaded.page.evaluate(TIMED_JS, [ID, json.dumps(x)]))
            print(f"{ID}: {n} tokens in {got['ms']:.0f} ms")
            assert got["ms"] < 1000, got["ms"]
            out = got["out"]
            assert "attention" not in out and np.asarray(out["attention_taps"]).shape == (n, 9)
            worst_relative_error(out, reference(x), ("kernel", "renormalized", "zero_padded"), TOL)
            rows = np.asarray(out["attention_taps"]).sum(axis=1)  # attention rows sum to 1, however long
            assert np.abs(rows - 1).max() < 1e-12
        assert f"at most {MAX_TOKENS} tokens" in loaded.page.evaluate(TOO_LONG_JS, [ID, MAX_TOKENS + 1])
        assert "at most" not in loaded.page.evaluate(TOO_LONG_JS, [ID, MAX_TOKENS])  # the limit itself computes
    finally:
        loaded.context.close()


# The inputs go in and the outputs come back as JSON text: Playwright's own conversion of 200,000 numbers, one by
# one, took about 10 CPU seconds, the page's compute about 2 s. (JSON has no NaN: here every number is finite.)
LONGEST_JS = """([id, text]) => {
  const x = JSON.parse(text);
  const t0 = performance.now(), out = window.attnconvExplorables[id].compute(x), ms = performance.now() - t0;
  const rows = out.attention_taps.map(r => r.reduce((a, b) => a + b, 0));
  return JSON.stringify({ms: ms, kernel: out.kernel, renormalized: out.renormalized, zero_padded: out.zero_padded,
          dense: 'attention' in out, rows: out.attention_taps.length,
          row_error: Math.max(...rows.map(v => Math.abs(v - 1)))});
}"""


def test_the_longest_sequence_compute_takes_is_fast_and_right(browser, html, tmp_path):
    """MAX_TOKENS tokens (the most compute takes; one more is refused above) at the widest kernel, k = 4: in
    well under the 8.9 s that 3,000 tokens took when the band was an N x N matrix, and equal to the library."""
    loaded = open_page(browser, html, tmp_path, 1400)
    try:
        rng = np.random.default_rng(11)
        x = {"bias": rng.normal(0, 2, 9).tolist(), "features": rng.normal(0, 1, (MAX_TOKENS, 2)).tolist()}
        got = json.loads(loaded.page.evaluate(LONGEST_JS, [ID, json.dumps(x)]))
        print(f"{ID}: {MAX_TOKENS} tokens, k = 4, in {got['ms']:.0f} ms")
        assert got["ms"] < 5000, got["ms"]  # about 2 s on two cores shared with a load of 17
        assert not got["dense"] and got["rows"] == MAX_TOKENS and got["row_error"] < 1e-12
        worst_relative_error(got, reference(x), ("kernel", "renormalized", "zero_padded"), TOL)
    finally:
        loaded.context.close()


@pytest.mark.parametrize("bias, features, message", [
    ([0.0, float("nan"), 0.0], None, "bias must hold finite numbers"),
    ([0.0, 1e400, 0.0], None, "bias must hold finite numbers"),
    ([0.0, 1.0], None, "2k \\+ 1 numbers"),
    (None, [[1.0, 2.0], [1.0]], "every token must have 2 features"),
    (None, [[1.0, 2.0], [1e400, 0.0]], "features must be finite"),
    (None, [], "at least one token"),
])
def test_compute_refuses_odd_input_with_a_message(browser, html, tmp_path, bias, features, message):
    loaded = open_page(browser, html, tmp_path, 1400)
    try:
        start = loaded.defaults(ID)
        x = {"bias": start["bias"] if bias is None else bias,
             "features": start["features"] if features is None else features}
        # JSON has no NaN or infinity: the page reads them from text
        got = loaded.page.evaluate("""([id, text]) => {
            const odd = (k, v) => v === 'NaN' ? NaN : v === 'Inf' ? Infinity : v;
            try { window.attnconvExplorables[id].compute(JSON.parse(text, odd)); return 'no message'; }
            catch (e) { return e.message; } }""",
            [ID, json.dumps(x).replace("NaN", '"NaN"').replace("Infinity", '"Inf"')])
        assert re.search(message, got), got
    finally:
        loaded.context.close()


def test_a_typed_bias_out_of_range_is_refused_next_to_it_and_nothing_is_computed(browser, html, tmp_path):
    """NaN, -7, 1e200, an empty field: a message next to the biases, and nothing computed with the old bias while
    the field shows the new one, not even when another bias is typed meanwhile; dragging the bar, a k button or
    the flat kernel replace the refused value and compute again."""
    from .conftest import check_not_computed

    loaded = open_page(browser, html, tmp_path, 400, True)
    page, root = loaded.page, f"#attnconv-x-{ID}"
    try:
        cell, mass = page.locator(f"{root} .ax-bin").nth(1), page.locator(f"{root} .ax-mass")
        check_not_computed(loaded, f"{root} .ax-bin >> nth=1", f"{root} .ax-bias-msg", "2.5",
                           ["NaN", "-7", "1e200", "", "abc", "1e400"], "from −4 to 4", f"{root} .ax-mass",
                           meanwhile=lambda: page.locator(f"{root} .ax-bin").nth(3).fill("0.5"))
        assert page.locator(f"{root} .ax-bval").nth(1).inner_text() == "2.5"
        for replace in (lambda: page.locator(f"{root} button[data-k='3']").tap(),
                        lambda: page.locator(f"{root} .ax-flat").tap()):
            page.locator(f"{root} .ax-bin").nth(1).fill("9")
            assert "not computed" in mass.inner_text()
            replace()
            assert "not computed" not in mass.inner_text() and not page.locator(f"{root} .ax-bias-msg").is_visible()
            assert "ax-bad" not in (page.locator(f"{root} .ax-bin").nth(1).get_attribute("class") or "")
        cell.fill("-1")
        assert page.locator(f"{root} .ax-bval").nth(1).inner_text() == "−1.0"
        check_layout(loaded, root, 400)
        assert not loaded.errors, loaded.errors
    finally:
        loaded.context.close()
