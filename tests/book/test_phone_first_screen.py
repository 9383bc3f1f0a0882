"""On a phone, the first screen of every chapter holds a picture (``phone_first_screen.py``): the check on crafted
pages, where it must fail for a chapter that opens with its learning goals and no picture, and on every chapter of
the built book (``_build/html``, or the folder ``$ATTNCONV_BOOK_HTML`` names, such as a build's --path-output)."""

from __future__ import annotations

import base64

import pytest

from .conftest import HTML
from .phone_first_screen import PHONE, first_pictures

BOOK = HTML
CHAPTERS = sorted(p.stem for p in (BOOK / "notebooks").glob("[0-9][0-9]_*.html"))

_PNG = base64.b64encode(bytes.fromhex(  # a 1 x 1 grey PNG, stretched by its width and height
    "89504e470d0a1a0a0000000d4948445200000001000000010800000000"
    "3a7e9b550000000a4944415478da63680000000201815a1b0f6c0000000049454e44ae426082")).decode()
GOALS = ('<div class="admonition tip"><p class="admonition-title">Learning goals</p><ul>'
         + "<li>" + "a goal of the chapter, written out at length " * 3 + "</li>" * 1
         + "</ul></div>")
TITLE = "<h1>A chapter</h1><p>" + "A sentence that opens the chapter. " * 4 + "</p>"


def _crafted(browser, body: str) -> list[dict]:
    context = browser.new_context(viewport=PHONE)
    page = context.new_page()
    page.set_content(f'<html><head><meta name="viewport" content="width=device-width"></head>'
                     f'<body><article>{body}</article></body></html>')
    found = first_pictures(page)
    context.close()
    return found


def _img(height: int = 220) -> str:
    return f'<figure><img src="data:image/png;base64,{_PNG}" style="width: 360px; height: {height}px"></figure>'


def test_the_check_fails_on_a_first_screen_of_goals_without_a_picture(browser):
    assert _crafted(browser, TITLE + GOALS * 6 + _img()) == []  # the picture only below the first screen
    assert _crafted(browser, TITLE + GOALS * 6) == []
    icons = '<svg width="16" height="16"></svg><button><img src="x" style="width:200px;height:100px"></button>'
    assert _crafted(browser, TITLE + icons + GOALS * 6) == []  # icons and a button's image are not pictures
    math = '<mjx-container><svg width="300" height="100"></svg></mjx-container>'
    assert _crafted(browser, TITLE + math + GOALS * 6) == []  # nor is typeset maths
    peek = TITLE + '<div style="height: 700px"></div>' + _img()  # only 100 px of it above the edge
    assert _crafted(browser, peek) == []


def test_the_check_passes_a_picture_above_the_goals(browser):
    for picture in (_img(), '<canvas width="300" height="200" style="width:300px;height:200px"></canvas>',
                    '<svg width="320" height="200"><rect width="320" height="200"/></svg>'):
        found = _crafted(browser, TITLE + picture + GOALS * 6)
        assert len(found) == 1 and found[0]["top"] < PHONE["height"], found


@pytest.mark.book
@pytest.mark.parametrize("chapter", CHAPTERS)
def test_every_chapter_opens_with_a_picture_on_a_phone(browser, chapter):
    context = browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True)
    page = context.new_page()
    page.route("**/*", lambda r: r.continue_() if r.request.url.startswith("file:") else r.abort())
    page.goto((BOOK / "notebooks" / f"{chapter}.html").as_uri(), wait_until="load",
              timeout=180_000)  # a busy machine loads a long chapter slowly
    page.wait_for_timeout(500)  # book.js sizes the figures
    found = first_pictures(page)
    context.close()
    assert found, f"{chapter}: no picture on the first {PHONE['height']} px at {PHONE['width']} px"
