"""Explorables: figures that compute in the page, in plain JavaScript, from a few numbers the build embeds.

The flipbooks of :mod:`attnconv.viewer` compute every frame when the book is built and only choose one in the
page. An explorable ships its inputs (a few small images, a kernel, a model's weights) and the numerics
(``viewer_assets/numerics.js``: softmax, the quadratic logit, convolution with zero padding, attention over a grid,
the vision model's forward pass), and the page computes what the reader asks for: a kernel they typed, an α
they chose, a head they dragged. No framework, no network, nothing from a CDN.

Every explorable registers ``window.attnconvExplorables[<id>]`` with

- ``defaults()``: the inputs it starts with, as plain numbers and arrays;
- ``compute(inputs)``: the outputs for any such inputs, as plain arrays,

so that a test can feed it inputs no build could have precomputed and compare with the library (the
``reference`` function of each module computes the same outputs with ``attnconv``). Each module's docstring
lists the inputs and outputs of its ``compute``.

Odd input never turns into NaN or a silent 0: ``compute`` throws a ``RangeError`` that says which input is wrong
and what it may be, and a control the reader types into (a temperature, α, a kernel weight, a bias, a decay, a
query) refuses a value it cannot take (empty, not a number, out of range, too large for a float64) with a message
next to it; the explorable then computes nothing, its numbers reading "not computed", until the field holds a
value it can take or another control replaces it, so it never goes on with a value the field no longer shows. A
drag renders at most once per animation frame; chapter 06's network runs in slices of one animation frame, so the
page answers a stroke of any length while it computes.

- :func:`~attnconv.explorables.construction.construction_explorable` (chapter 03, ``ch03-construction``)
- :func:`~attnconv.explorables.attention_map.attention_explorable` (chapter 02, ``ch02-attention``)
- :func:`~attnconv.explorables.bias_kernel.bias_explorable` (chapter 05, ``ch05-bias``)
- :func:`~attnconv.explorables.vision_model.vision_explorable` (chapter 06, ``ch06-model``)
- :func:`~attnconv.explorables.ssm_duality.ssm_explorable` (chapter 08, ``ch08-ssm``)
"""

from __future__ import annotations

import base64
import html
import json
from typing import Any

import numpy as np

from ..viewer import _asset

__all__ = ["Explorable", "b64", "standalone_page"]

LABEL_PX = 12  # the text of every explorable, in CSS pixels: legible on a phone


def b64(array: Any, dtype: str) -> str:
    """``array`` as little-endian bytes of ``dtype`` (``"uint8"``, ``"int8"``, ``"float32"``), base64-encoded."""
    return base64.b64encode(np.ascontiguousarray(np.asarray(array), dtype=np.dtype(dtype).newbyteorder("<"))
                            .tobytes()).decode("ascii")


class Explorable:
    """One explorable's HTML: its data (JSON), its markup and its script, after the shared numerics.

    Args:
        ident: the key of ``window.attnconvExplorables`` (``"ch03-construction"``).
        script: the name of its page script in ``viewer_assets``.
        data: JSON-able inputs the script reads (``spec`` in the script).
        title: text above it.
        note: one line under the title (where the data comes from).
    """

    def __init__(self, ident: str, script: str, data: dict[str, Any], title: str, note: str = "") -> None:
        if not isinstance(ident, str) or not ident.replace("-", "").isalnum():
            raise ValueError(f"ident must be letters, digits and dashes, got {ident!r}")
        self.ident, self.script, self.data, self.title, self.note = ident, script, data, title, note

    def _repr_html_(self) -> str:
        payload = json.dumps(self.data, separators=(",", ":")).replace("</", "<\\/")
        root = f"attnconv-x-{self.ident}"
        note = f'<div class="ax-note">{html.escape(self.note)}</div>' if self.note else ""
        script = _asset(self.script).replace("ROOT_ID", json.dumps(root))
        return (f'<style>{_asset("explorable.css")}</style>'
                f'<div class="attnconv-explorable" id="{root}" data-explorable="{self.ident}">'
                f'<div class="ax-title"><b>{html.escape(self.title)}</b></div>{note}'
                f'<div class="ax-body"></div>'
                f'<script type="application/json" class="ax-spec">{payload}</script></div>'
                f'<script>{_asset("numerics.js")}</script><script>{script}</script>')

    def __repr__(self) -> str:
        return f"{type(self).__name__} {self.ident!r}: computed in the page in HTML outputs"


def standalone_page(*explorables: Explorable, title: str = "attnconv explorables") -> str:
    """A complete HTML page holding the explorables (for tests, or to open one outside the book)."""
    body = "".join(e._repr_html_() for e in explorables)
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{html.escape(title)}</title></head><body>{body}</body></html>")
