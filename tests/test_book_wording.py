"""Sentences about the book and its main theorem that were once wrong, and must not come back: the introduction's
"a call into attnconv, never a re-implementation" (every chapter builds its idea from scratch), the theorem given
with only "a relative positional encoding of dimension at least 3" (it needs the quadratic encoding, heads as wide
as the taps' rank, zero padding and the limit α → ∞), and Theorem 3.1 without how it differs from the paper's
statement (min(D_h, D_out) output channels)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CH03 = ROOT / "notebooks" / "03_attention_can_express_convolution.md"

WRONG = (
    ("the code is said never to re-implement the idea", r"never\s+a\s+re-?implementation"),
    ("the theorem with only 'an encoding of dimension at least 3'",
     r"relative\s+positional\s+encoding\s+of\s+dimension\s+at\s+least\s+3\s+can\s+express"),
)


def wrong_sentences(text: str) -> list[str]:
    return [what for what, pattern in WRONG if re.search(pattern, text, flags=re.I)]


def states_the_difference_from_the_paper(chapter: str) -> bool:
    """Chapter 03 says, after Theorem 3.1, how it differs from the paper's Theorem 1: the paper's
    min(D_h, D_out) output channels against the rank condition here."""
    after = chapter.split(":label: thm-attention-conv", 1)[-1]
    part = after.split("\n## ", 1)[0]
    return ("differs from the paper's statement" in part and r"\min(D_h, D_{out})" in part
            and r"\operatorname{rank} W_\Delta \le D_h" in part)


def test_the_introduction_says_what_the_chapters_do():
    intro = (ROOT / "book" / "intro.md").read_text(encoding="utf-8")
    assert wrong_sentences(intro) == []
    assert "from scratch" in intro and "thm-attention-conv" in intro


def test_theorem_3_1_says_how_it_differs_from_the_paper():
    assert states_the_difference_from_the_paper(CH03.read_text(encoding="utf-8"))


def test_the_checks_fail_on_the_old_wording():
    old = ("The code shown is a call into `attnconv`, never a re-implementation. A layer with $N_h = K^2$ heads "
           "and a relative positional encoding of dimension at least 3 can express any $K \\times K$ convolution.")
    assert len(wrong_sentences(old)) == 2
    theorem = ":label: thm-attention-conv\n\nA layer with $D_h \\ge \\min(D_{in}, D_{out})$ heads.\n\n## Next\n"
    assert not states_the_difference_from_the_paper(theorem)
