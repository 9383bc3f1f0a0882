"""The icon subset (book/ext/light_icons.py) keeps every icon the pages and stylesheets use, and only those."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "book" / "ext"))
from light_icons import FACES, icon_codes, subset_font, used_codes  # noqa: E402

CSS = ('.fa-bars:before,.fa-navicon:before{content:"\\f0c9"}.fa-rocket:before{content:"\\f135"}'
       '.fa-github:before{content:"\\f09b"}:root{--pst-icon-info-circle:"\uf05a"}'
       '.admonition-title:after{content:"\\f06a";font-family:var(--pst-font-family-icons)}')


def test_icon_codes_reads_class_rules_and_direct_code_points():
    names, direct = icon_codes(CSS)
    assert names == {"fa-bars": 0xF0C9, "fa-navicon": 0xF0C9, "fa-rocket": 0xF135, "fa-github": 0xF09B}
    assert direct == {0xF05A, 0xF06A}  # the raw character and the escape outside the class rules


def test_used_codes_keeps_only_named_icons():
    names, _ = icon_codes(CSS)
    page = '<i class="fa-solid fa-bars"></i><button class="fa-lg"><i class="fab fa-github"></i></button>'
    assert used_codes([page], names) == {0xF0C9, 0xF09B}  # fa-solid and fa-lg are styles, not icons
    assert used_codes(['el.classList.add("fa-rocket")'], names) == {0xF135}


def _theme_fonts() -> Path:
    import pydata_sphinx_theme

    return (Path(pydata_sphinx_theme.__file__).parent / "theme" / "pydata_sphinx_theme" / "static" / "vendor"
            / "fontawesome" / "webfonts")


@pytest.mark.parametrize("stem", [f[0] for f in FACES])
def test_subset_font_holds_exactly_the_wanted_glyphs(tmp_path, stem):
    from fontTools.ttLib import TTFont

    source = _theme_fonts() / f"{stem}.ttf"
    if not source.is_file():
        pytest.skip("pydata-sphinx-theme's Font Awesome fonts are not installed")
    full = set(TTFont(source).getBestCmap())
    wanted = {0xF0C9, 0xF135, 0xF09B, 0xF05A}
    target = tmp_path / f"{stem}.woff"
    subset_font(source, wanted, target)
    kept = set(TTFont(target).getBestCmap() or {})
    assert kept == wanted & full
    assert target.stat().st_size < source.stat().st_size / 10
