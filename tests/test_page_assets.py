"""Pages load the optional assets only when they use them (book/ext/page_assets.py)."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "book" / "ext"))
from page_assets import ANSI_256, needed, strip_ansi_256  # noqa: E402

RULES = "".join(f"\n\ndiv.highlight .-Color[class*=-{k}C{i}] {{\n  color: #000000\n}}" for i in range(3) for k in ("BG", ""))


def test_sphinx_design_only_where_a_page_uses_it():
    assert not needed("sphinx-design.min.css?v=6a604523", "<p>no components</p>")
    assert needed("sphinx-design.min.css?v=6a604523", '<div class="sd-card">')
    assert not needed("_static/design-tabs.js", "<p></p>") and needed("book.js", "") and needed(None, "")


def test_ansi_256_block_is_cut_only_when_it_is_the_whole_tail():
    head = ".cell {margin: 0}\n\n"
    assert strip_ansi_256(head + ANSI_256 + RULES + "\n") == head.rstrip() + "\n"
    changed = head + ANSI_256 + RULES + "\n\n.later {color: red}\n"  # another version: rules after the block
    assert strip_ansi_256(changed) == changed
    assert strip_ansi_256(head) == head
