"""The chapters keep the notation page's symbols: in Parts I and II, q is a query pixel and k only the clipping
distance (never a key vector, never k* for a nearest key), and p everywhere the padding (never a position, as in
s ⊙ p). Part III's query and key vectors q_i, k_j are defined on the notation page."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PARTS_I_II = ("01_convolution_as_shifts", "02_self_attention", "03_attention_can_express_convolution",
              "04_positional_encoding_zoo")
PART_III = ("05_relative_positions_are_convolutions",)

_NOT_A_NAME = r"(?<![A-Za-z\\])"  # k, not the end of \kappa or of a longer name
PARTS_I_II_CLASHES = (
    ("a key vector k_j: k is only the clipping distance", _NOT_A_NAME + r"k_(?:[A-Za-z0-9]|\{)"),
    ("k* for a nearest key: k is only the clipping distance", _NOT_A_NAME + r"k\s*(?:\^\s*\{?\s*\*|\*)"),
    ("a dot product with k: k is only the clipping distance", r"\\cdot\s*k(?![A-Za-z_])"),
    ("q as a vector (q · ..., q_i, qᵀk, q - k): q is a query pixel",
     _NOT_A_NAME + r"q\s*(?:\\cdot|_[A-Za-z]\s*k|\^\s*\\top\s*k|-\s*k(?![A-Za-z_]))"),
)
EVERYWHERE_CLASHES = (
    ("⊙ p: p is the padding", r"\\odot\s*p(?![A-Za-z_])"),
)


def prose(markdown: str) -> str:
    """The text a reader reads: the chapter without its front matter, its code (a code cell's YAML header, which
    holds the figure captions, is kept) and its inline code."""
    text = re.sub(r"\A---\n.*?\n---\n", "", markdown, flags=re.S)
    def cell(match: re.Match) -> str:
        header = re.match(r"\n?---\n(.*?)\n---\n", match.group(2), flags=re.S)
        return header.group(1) if header else ""
    text = re.sub(r"^(`{3,})[^\n]*\n(.*?)^\1\s*$", cell, text, flags=re.S | re.M)
    return re.sub(r"`[^`\n]*`", "", text)


def maths(text: str) -> list[str]:
    """Every $...$ and $$...$$ span of ``text``."""
    return [m.group(0) for m in re.finditer(r"\$\$.*?\$\$|\$[^$\n]+\$", text, flags=re.S)]


def notation_clashes(markdown: str, part: str) -> list[str]:
    """The spans of the chapter's maths that break the notation page's rules for ``part`` ("I-II" or "III")."""
    rules = EVERYWHERE_CLASHES + (PARTS_I_II_CLASHES if part == "I-II" else ())
    found = []
    for span in maths(prose(markdown)):
        for what, pattern in rules:
            if re.search(pattern, span):
                found.append(f"{what}: {span[:80]}")
    return found


def undefined_vectors(markdown: str, notation: str) -> list[str]:
    """Part III's query and key vectors (q_i = X_i W_qry, k_j = X_j W_key) used in ``markdown`` but not defined
    on the notation page."""
    used = {m for span in maths(prose(markdown)) for m in re.findall(_NOT_A_NAME + r"([qk])_[ij]\b", span)}
    defined = {"q": "q_i = X_i W_{qry}" in notation, "k": "k_j = X_j W_{key}" in notation}
    return sorted(v for v in used if not defined[v])


@pytest.mark.parametrize("name", PARTS_I_II + PART_III)
def test_chapters_keep_the_notation_pages_symbols(name):
    text = (ROOT / "notebooks" / f"{name}.md").read_text(encoding="utf-8")
    assert notation_clashes(text, "I-II" if name in PARTS_I_II else "III") == []


@pytest.mark.parametrize("name", PART_III)
def test_part_iii_vectors_are_on_the_notation_page(name):
    text = (ROOT / "notebooks" / f"{name}.md").read_text(encoding="utf-8")
    assert undefined_vectors(text, (ROOT / "book" / "notation.md").read_text(encoding="utf-8")) == []


CRAFTED = """---
jupytext: {}
---

Each key gets a logit $e_j = q \\cdot k_j / \\sqrt{D_h}$, and each product $q_i k_i$ has variance 1, so
$u \\cdot k / \\sqrt{D_h}$ has variance 1, and $-\\tfrac12\\lVert q - k\\rVert^2 = q^\\top k - c$.
The nearest key $k^*$ wins by $g = 1 - 2|\\Delta - k^*|$. Strided outputs are read at $s \\odot p$.

```{code-cell} ipython3
---
mystnb:
  figure:
    caption: |
      A caption with a key vector $k_j$.
---
k_j = q @ k  # code is not prose: $q \\cdot k$ here is not flagged
```
"""


def test_each_class_is_caught_in_a_crafted_text():
    found = notation_clashes(CRAFTED, "I-II")
    for what in ("a key vector k_j", "k* for a nearest key", "a dot product with k", "q as a vector", "⊙ p"):
        assert any(f.startswith(what) for f in found), (what, found)
    assert not any("not flagged" in f for f in found)  # code is not prose
    assert any(f.startswith("q as a vector") and "q^\\top k" in f for f in found)  # d2l's q and k, written bare
    assert len([f for f in found if f.startswith("a key vector")]) == 3  # k_j, k_i in the prose; the caption's k_j
    assert notation_clashes(CRAFTED, "III") == ["⊙ p: p is the padding: $s \\odot p$"]
    good = ("$e_j = X_i W_{qry} \\cdot X_j W_{key} / \\sqrt{D_h}$, $2k + 1$ taps, $\\kappa_i[\\delta]$, "
            "$s \\odot q$, $\\delta^*$, $p = 1$")
    assert notation_clashes(good, "I-II") == []
    assert undefined_vectors("$q_i^\\top R_\\delta k_j$", "") == ["k", "q"]
    assert undefined_vectors("$q_i^\\top R_\\delta k_j$", "$q_i = X_i W_{qry}$, $k_j = X_j W_{key}$") == []
