"""Sphinx extension: the theme's icons without the 1.5 MB icon script.

pydata-sphinx-theme puts ``fontawesome.js`` (1.49 MB) on every page. That script swaps each ``<i class="fa-...">``
for an inline SVG. The theme's CSS already draws the same icons from the Font Awesome webfonts, so the script is
not needed for them to show. This extension

- drops the script from every page (``templates/static/webpack-macros.html`` overrides the theme's asset macro
  of the same name, without the script line);
- after the build, subsets the theme's Font Awesome fonts to the glyphs the book uses: the icon classes that the
  pages and the theme's scripts name (``fa-bars``, ``fa-rocket``, ``fa-github`` ...) and the icon code points that
  the stylesheets use directly (admonition and dropdown icons). The subsets are WOFF files of a few kilobytes in
  ``_static/icons/``, declared by ``icons.css`` after the theme's stylesheet, so they replace the full fonts;
- removes the unused script and full fonts from the output, and the theme's CSS rules for icons never used.

A page that names an icon the book has never used before gets it on the next build, because the subset is made
from the built pages themselves.
"""

from __future__ import annotations

import re
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.config import Config
from sphinx.util import logging

logger = logging.getLogger(__name__)

TEMPLATES = Path(__file__).parent / "templates"
FOLDER = "icons"  # under _static
THEME_FONTS = Path("vendor") / "fontawesome" / "webfonts"  # under _static, as pydata-sphinx-theme ships them
FACES = (  # file stem, CSS family, weight
    ("fa-solid-900", "Font Awesome 6 Free", 900),
    ("fa-regular-400", "Font Awesome 6 Free", 400),
    ("fa-brands-400", "Font Awesome 6 Brands", 400),
)

_ICON_RULE = re.compile(r"((?:\.fa-[\w-]+:{1,2}(?:before|after),?)+)\{content:\"\\([0-9a-f]{4})\"\}")
_PRIVATE_USE = re.compile(r"\\([ef][0-9a-f]{3})\b", re.IGNORECASE)  # a CSS escape, \f05a
_PRIVATE_USE_CHAR = re.compile("[\ue000-\uf8ff]")  # the character itself, as minified stylesheets write it
_ICON_NAME = re.compile(r"\bfa-[a-z0-9-]+")


def icon_codes(css: str) -> tuple[dict[str, int], set[int]]:
    """From a Font Awesome stylesheet: class name -> code point, and the code points used outside those rules.

    ``.fa-home:before,.fa-house:before{content:"\\f015"}`` gives ``{"fa-home": 0xf015, "fa-house": 0xf015}``;
    any other private-use code point in the text, escaped or not (``--pst-icon-info-circle: "\\f05a"``), lands
    in the second set.
    """
    names: dict[str, int] = {}
    for selectors, code in _ICON_RULE.findall(css):
        for name in re.findall(r"\.(fa-[\w-]+):", selectors):
            names[name] = int(code, 16)
    rest = _ICON_RULE.sub("", css)
    direct = {int(code, 16) for code in _PRIVATE_USE.findall(rest)}
    direct |= {ord(c) for c in _PRIVATE_USE_CHAR.findall(rest)}
    return names, direct


def used_names(texts: list[str], names: dict[str, int]) -> set[str]:
    """Every icon class of ``names`` that ``texts`` (pages, scripts) name."""
    return {n for text in texts for n in _ICON_NAME.findall(text) if n in names}


def used_codes(texts: list[str], names: dict[str, int]) -> set[int]:
    """The code points of every icon class named in ``texts`` (pages, scripts)."""
    return {names[n] for n in used_names(texts, names)}


def strip_unused_rules(css: str, keep: set[str]) -> str:
    """``css`` without the icon class rules (``.fa-x:before{content:...}``) that name none of ``keep``."""
    def rule(match: re.Match) -> str:
        return match.group(0) if set(re.findall(r"\.(fa-[\w-]+):", match.group(1))) & keep else ""

    return _ICON_RULE.sub(rule, css)


def subset_font(source: Path, codes: set[int], target: Path) -> None:
    """Write ``source`` (a TrueType font) cut down to ``codes`` as a WOFF file at ``target``."""
    from fontTools import subset

    options = subset.Options()
    options.flavor = "woff"
    options.layout_features = []
    options.name_IDs = [0, 1, 2, 3, 4, 5, 6]
    options.notdef_outline = True
    font = subset.load_font(str(source), options)
    subsetter = subset.Subsetter(options)
    subsetter.populate(unicodes=sorted(codes))
    subsetter.subset(font)
    subset.save_font(font, str(target), options)


def _add_templates(app: Sphinx, config: Config) -> None:
    if str(TEMPLATES) not in config.templates_path:
        config.templates_path = [str(TEMPLATES), *config.templates_path]


def _add_css(app: Sphinx) -> None:
    if app.builder.format == "html":
        app.add_css_file(f"{FOLDER}/icons.css")


def _finish(app: Sphinx, exception: Exception | None) -> None:
    if exception is not None or app.builder.format != "html":
        return
    static = Path(app.outdir) / "_static"
    fonts = static / THEME_FONTS
    if not (fonts / "fa-solid-900.ttf").exists():  # a partial rebuild after this ran: the subsets are in place
        if not (static / FOLDER / "icons.css").exists():
            logger.warning("light_icons: the theme's Font Awesome fonts are missing from %s", fonts)
        return
    sheets = {p: p.read_text(encoding="utf-8") for p in static.rglob("*.css") if FOLDER not in p.parts}
    names, direct = icon_codes("\n".join(sheets.values()))
    scripts = [p for p in static.rglob("*.js") if p.name != "fontawesome.js" and "mathjax" not in p.parts]
    texts = [p.read_text(encoding="utf-8", errors="replace") for p in Path(app.outdir).rglob("*.html")]
    texts += [p.read_text(encoding="utf-8", errors="replace") for p in scripts]
    keep = used_names(texts, names)
    codes = {names[n] for n in keep} | direct
    for path, css in sheets.items():  # the theme's rules for the other ~2400 icons: 85 kB of every page
        lighter = strip_unused_rules(css, keep)
        if lighter != css:
            path.write_text(lighter, encoding="utf-8")
    out = static / FOLDER
    out.mkdir(exist_ok=True)
    rules = []
    for stem, family, weight in FACES:
        subset_font(fonts / f"{stem}.ttf", codes, out / f"{stem}.woff")
        rules.append(f'@font-face {{font-family: "{family}"; font-style: normal; font-weight: {weight}; '
                     f'font-display: block; src: url({stem}.woff) format("woff");}}')
    header = (f"/* Font Awesome Free (fontawesome.com; fonts: SIL OFL 1.1, icons: CC BY 4.0), cut down to the "
              f"{len(codes)} icons this book uses. These faces are declared after the theme's, so they replace "
              f"its full fonts. */")
    (out / "icons.css").write_text(header + "\n" + "\n".join(rules) + "\n", encoding="utf-8")
    for path in fonts.iterdir():
        path.unlink()
    for path in (static / "scripts").glob("fontawesome.js*"):
        path.unlink()
    logger.info("light_icons: %d icons kept in %s", len(codes), out)


def _theme_loads_icons_by_script() -> bool:
    """Whether the installed pydata-sphinx-theme draws its icons with ``fontawesome.js`` (0.16 and later).

    Older releases (0.15, the one pip picks for Python 3.10, where sphinx-book-theme 1.2+ is not available) load a
    Font Awesome stylesheet from another folder through a macro this extension does not override, so the extension
    stays out of their way and the pages keep the theme's own icons.
    """
    import pydata_sphinx_theme

    macros = Path(pydata_sphinx_theme.__file__).parent / "theme" / "pydata_sphinx_theme" / "static" / "webpack-macros.html"
    text = macros.read_text(encoding="utf-8") if macros.is_file() else ""
    return "fontawesome.js" in text and "head_pre_icons" not in text


def setup(app: Sphinx) -> dict:
    if not _theme_loads_icons_by_script():
        logger.info("light_icons: this pydata-sphinx-theme loads its icons by stylesheet; its icons are kept as they are")
        return {"parallel_read_safe": True, "parallel_write_safe": True}
    app.connect("config-inited", _add_templates)
    app.connect("builder-inited", _add_css)
    app.connect("build-finished", _finish, priority=900)  # after the theme and other extensions wrote theirs
    return {"parallel_read_safe": True, "parallel_write_safe": True}
