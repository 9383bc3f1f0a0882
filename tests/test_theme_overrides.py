"""The book's override of pydata-sphinx-theme's asset macros works with every theme release the pins can install.

``book/ext/templates/static/webpack-macros.html`` replaces the theme's macros of the same name (to drop the 1.5 MB
icon script). The theme's ``layout.html`` calls each macro through ``_webpack.NAME()``, so the override must define
every macro that any installable release calls: pydata-sphinx-theme 0.15 (the release pip picks on Python 3.10,
where sphinx-book-theme 1.2+ is not available) calls ``head_pre_icons``, which 0.16+ dropped.
"""

from __future__ import annotations

import re
from pathlib import Path

import jinja2
import pytest

ROOT = Path(__file__).resolve().parents[1]
OVERRIDE = ROOT / "book" / "ext" / "templates" / "static" / "webpack-macros.html"
THEME_NAME = "!static/webpack-macros.html"

# Stand-ins for the theme's own macro file, with the macros each release defines (their bodies are markers).
RELEASE_0_15 = """{% macro head_pre_icons() %}ICONS-CSS{% endmacro %}
{% macro head_pre_assets() %}ASSETS{% endmacro %}
{% macro head_js_preload() %}<link preload bootstrap.js>
<script src="_static/vendor/fontawesome/6.5.2/js/all.min.js"></script>{% endmacro %}
{% macro body_post() %}BODY-POST{% endmacro %}"""
RELEASE_0_17 = """{% macro head_pre_assets() %}ASSETS{% endmacro %}
{% macro head_js_preload() %}<link preload bootstrap.js>
<script defer src="_static/scripts/fontawesome.js"></script>{% endmacro %}
{% macro body_post() %}BODY-POST{% endmacro %}"""
CALLS = {"0.15": ("head_pre_icons", "head_pre_assets", "head_js_preload", "body_post"),
         "0.17": ("head_pre_assets", "head_js_preload", "body_post")}


def _render(theme: str, override: str, calls: tuple[str, ...]) -> str:
    page = "{% import 'override' as _webpack with context %}" + "|".join("{{ _webpack.%s() }}" % c for c in calls)
    env = jinja2.Environment(loader=jinja2.DictLoader({THEME_NAME: theme, "override": override, "page": page}),
                             undefined=jinja2.StrictUndefined)
    return env.get_template("page").render()


@pytest.mark.parametrize("release,theme", [("0.15", RELEASE_0_15), ("0.17", RELEASE_0_17)])
def test_the_override_serves_every_macro_a_release_calls(release, theme):
    html = _render(theme, OVERRIDE.read_text(), CALLS[release])
    assert "ASSETS" in html and "BODY-POST" in html and "bootstrap.js" in html
    assert "fontawesome.js" not in html, "the icon script stays out"
    if release == "0.15":
        assert "ICONS-CSS" in html, "0.15's icon stylesheet passes through"


def test_an_override_without_the_old_macro_breaks_the_old_release():
    """The failure this file guards against: the override as it was written for 0.16+ only."""
    without = re.sub(r"\{% macro head_pre_icons\(\) %\}.*?\{% endmacro %\}", "", OVERRIDE.read_text(), flags=re.S)
    assert without != OVERRIDE.read_text()
    with pytest.raises(jinja2.UndefinedError, match="head_pre_icons"):
        _render(RELEASE_0_15, without, CALLS["0.15"])


def test_the_installed_theme_calls_only_macros_the_override_defines():
    pydata = pytest.importorskip("pydata_sphinx_theme")
    layout = Path(pydata.__file__).parent / "theme" / "pydata_sphinx_theme" / "layout.html"
    called = set(re.findall(r"_webpack\.(\w+)\(", layout.read_text()))
    defined = set(re.findall(r"\{% macro (\w+)\(", OVERRIDE.read_text()))
    assert called and called <= defined, sorted(called - defined)
