"""``Loaded.compute`` carries inputs and outputs as JSON text: it must give what Playwright's own conversion gives."""

from __future__ import annotations

import math

import pytest

from attnconv.explorables import standalone_page
from attnconv.explorables.attention_map import attention_explorable

from .conftest import open_page

ID = "ch02-attention"
# An explorable of the test's own, whose output holds what JSON text has no plain word for.
ODD_JS = """() => { window.attnconvExplorables.odd = {compute: x => ({
  taps: new Float64Array([0.25, -1.5]), low: -Infinity, high: Infinity, none: NaN, n: [x.n, -x.n]})}; }"""


@pytest.fixture(scope="module")
def html():
    return standalone_page(attention_explorable())


def test_json_text_gives_what_playwright_gives(browser, html, tmp_path):
    loaded = open_page(browser, html, tmp_path, 1400)
    try:
        x = loaded.defaults(ID)
        direct = loaded.page.evaluate("([id, x]) => window.attnconvExplorables[id].compute(x)", [ID, x])
        assert loaded.compute(ID, x) == direct  # every number exactly, every key, every nesting
        loaded.page.evaluate(ODD_JS)
        odd = loaded.compute("odd", {"n": 3})
        assert odd["taps"] == [0.25, -1.5] and odd["n"] == [3, -3]  # a typed array comes back as a list
        assert odd["low"] == -math.inf and odd["high"] == math.inf and math.isnan(odd["none"])
        # inputs JSON cannot hold go through Playwright: NaN arrives as NaN
        assert math.isnan(loaded.compute("odd", {"n": float("nan")})["n"][0])
    finally:
        loaded.context.close()
