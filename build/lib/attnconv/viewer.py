"""Interactive figures that need no kernel and no network: computed now, driven by the page's own JavaScript.

A live ``ipywidgets`` slider redraws its figure by calling back into a Python kernel, so in a static page it moves
and nothing changes. The viewers here compute every state in advance and ship it inside the output, with a few
lines of JavaScript that only choose what to show, like the authors' explorer of trained heads
(epfml.github.io/attention-cnn). They work in the book, offline, and in Jupyter and Colab.

- :class:`FrameViewer`: one PNG frame per setting of its controls (sliders over a figure function).
- :class:`HeatmapViewer`: maps stored as bytes and painted on canvases with a colormap and a colorbar, for
  explorers whose settings are too many for PNG frames (every query pixel of every layer).

Every viewer is a ``<div class="attnconv-viewer">`` whose controls are ``<input type="range">`` or ``<select>``
elements; its image is an ``<img>`` or a row of ``<canvas>`` elements.
"""

from __future__ import annotations

import base64
import hashlib
import html
import io
import itertools
import json
import zlib
from importlib import resources
from typing import Any, Callable, Mapping, Sequence

import numpy as np

__all__ = ["FrameViewer", "HeatmapViewer"]

# Text beside and under the maps (tokens, offsets, a kernel's printed weights), in CSS pixels: it is drawn at this
# size whatever the size of a map's cells, so that it stays legible on a phone and on a wide screen alike.
LABEL_PX = 12
VALUE_CELL_PX = 40  # the narrowest cell of a strip that prints its values ("0.50" at LABEL_PX)


def _asset(name: str) -> str:
    """The text of ``viewer_assets/<name>``, package data shipped beside this module."""
    return resources.files("attnconv").joinpath("viewer_assets", name).read_text(encoding="utf-8")


def _check_controls(controls: Mapping[str, Sequence[Any]]) -> dict[str, list[Any]]:
    if not isinstance(controls, Mapping) or not controls:
        raise ValueError("controls must be a non-empty mapping from a control's name to its list of values")
    out = {}
    for name, values in controls.items():
        values = list(values)
        if not isinstance(name, str) or not values:
            raise ValueError(f"control {name!r}: needs a str name and at least one value")
        out[name] = values
    return out


def _label(value: Any) -> str:
    if isinstance(value, (float, np.floating)):
        return f"{float(value):.3g}"
    if isinstance(value, np.integer):
        return str(int(value))
    return str(value)


class _Viewer:
    kind = ""

    def __init__(self, controls: Mapping[str, Sequence[Any]], title: str = "",
                 defaults: Mapping[str, Any] | None = None, labels: Mapping[str, Sequence[str]] | None = None):
        self.controls = _check_controls(controls)
        self.title = title
        self.defaults = {}
        for name, value in (defaults or {}).items():
            if name not in self.controls:
                raise ValueError(f"defaults: {name!r} is not one of the controls {list(self.controls)}")
            matches = [i for i, v in enumerate(self.controls[name]) if v == value]
            if not matches:
                raise ValueError(f"defaults: {value!r} is not among the values of control {name!r}")
            self.defaults[name] = matches[0]
        self.labels = {name: [_label(v) for v in values] for name, values in self.controls.items()}
        for name, given in (labels or {}).items():
            if name not in self.controls or len(given) != len(self.controls[name]):
                raise ValueError(f"labels[{name!r}] must give one label per value of that control")
            self.labels[name] = [str(x) for x in given]

    @property
    def sizes(self) -> list[int]:
        return [len(v) for v in self.controls.values()]

    def settings(self) -> list[dict[str, Any]]:
        """Every setting of the controls, in frame order (row-major: the last control varies fastest)."""
        names = list(self.controls)
        return [dict(zip(names, combo)) for combo in itertools.product(*self.controls.values())]

    def _controls_html(self) -> str:
        parts = []
        for i, (name, values) in enumerate(self.controls.items()):
            start = self.defaults.get(name, 0)
            if all(isinstance(v, str) for v in values):
                options = "".join(f'<option value="{n}"{" selected" if n == start else ""}>{html.escape(lab)}</option>'
                                  for n, lab in enumerate(self.labels[name]))
                parts.append(f'<label><span class="av-name">{html.escape(name)}</span> '
                             f'<select class="av-control" aria-label="{html.escape(name)}">'
                             f"{options}</select></label>")
            else:
                parts.append(f'<label><span class="av-name">{html.escape(name)}</span> '
                             f'<input class="av-control" type="range" min="0" '
                             f'max="{len(values) - 1}" step="1" value="{start}" aria-label="{html.escape(name)}">'
                             f'<span class="av-value" data-i="{i}">{html.escape(self.labels[name][start])}</span>'
                             "</label>")
        return f'<div class="av-controls">{"".join(parts)}</div>'

    def _spec(self) -> dict[str, Any]:
        raise NotImplementedError

    def _body_html(self) -> str:
        raise NotImplementedError

    def _repr_html_(self) -> str:
        spec = self._spec()
        spec.update(kind=self.kind, sizes=self.sizes, labels=list(self.labels.values()))
        payload = json.dumps(spec, separators=(",", ":")).replace("</", "<\\/")
        root = "attnconv-viewer-" + hashlib.sha1(payload.encode()).hexdigest()[:12]
        title = f'<div class="av-title"><b>{html.escape(self.title)}</b></div>' if self.title else ""
        script = _asset("viewer.js").replace("ROOT_ID", json.dumps(root))
        return (f'<style>{_asset("viewer.css")}</style>'
                f'<div class="attnconv-viewer" id="{root}" data-kind="{self.kind}">{title}'
                f"{self._controls_html()}{self._body_html()}"
                f'<script type="application/json" class="av-spec">{payload}</script></div>'
                f"<script>{script}</script>")

    def __repr__(self) -> str:
        shape = " x ".join(f"{name} ({n})" for name, n in zip(self.controls, self.sizes))
        return f"{type(self).__name__}: {shape}; shown as an interactive figure in HTML outputs"


class FrameViewer(_Viewer):
    """Sliders over a figure: one PNG frame per setting of the controls, drawn now by ``draw``.

    Args:
        draw: ``draw(**setting) -> matplotlib Figure``; called once per setting, the figure is closed after.
        controls: name -> the values that control takes (numbers give a slider, strings a drop-down list).
        title: optional text above the controls.
        defaults: optional name -> the value shown first (default: each control's first value).
        labels: optional name -> the text shown for each value.
        dpi: resolution of the frames. Frames are PNG, so keep ``dpi`` and the number of settings modest.

    Example:
        ``FrameViewer(lambda alpha: plot_head(alpha), {"α": [0.5, 1, 2]})``
    """

    kind = "frames"

    def __init__(self, draw: Callable[..., Any], controls: Mapping[str, Sequence[Any]], title: str = "",
                 defaults: Mapping[str, Any] | None = None, labels: Mapping[str, Sequence[str]] | None = None,
                 dpi: int = 72):
        super().__init__(controls, title, defaults, labels)
        if not callable(draw):
            raise TypeError(f"draw must be callable, got {type(draw).__name__}")
        if not isinstance(dpi, int) or dpi < 10:
            raise ValueError(f"dpi must be an int of at least 10, got {dpi!r}")
        import matplotlib.pyplot as plt

        from .figures.legibility import png_bytes  # each frame says how large its smallest text is

        self.frames = []
        for setting in self.settings():
            fig = draw(**setting)
            png = png_bytes(fig, dpi=dpi)
            plt.close(fig)
            self.frames.append(base64.b64encode(png).decode("ascii"))

    def _spec(self) -> dict[str, Any]:
        return {"frames": self.frames}

    def _body_html(self) -> str:
        return '<img class="av-frame" alt="figure for the chosen setting">'


class HeatmapViewer(_Viewer):
    """Explorer of many small maps: for each setting of the controls, one map per panel, painted on a canvas.

    The maps travel as bytes (each setting scaled so that its largest value is 255), deflated (zlib) and
    base64-encoded, so thousands of settings cost kilobytes where PNG frames would cost megabytes: attention maps
    are mostly zeros. The page inflates them with the browser's own ``DecompressionStream``. A colorbar gives the
    scale: 0 to the setting's maximum.

    Args:
        maps: ``(n_1, ..., n_C, P, H, W)`` non-negative values, one ``(P, H, W)`` stack of P panels for each
            setting of the C controls (in the controls' order); or a list of P arrays ``(n_1, ..., n_C, H_p, W_p)``
            when the panels differ in shape (a kernel beside the attention matrix it gives).
        controls: name -> values, ``len`` equal to ``n_1 .. n_C``.
        panels: the P panel titles.
        mark: optional names of two numeric controls giving a ``(row, col)`` marked in red on every panel
            (a query pixel). Clicking a panel then moves those two controls to the clicked pixel.
        image: optional ``(H', W', 3)`` RGB image in [0, 1] shown, unchanging, before the panels (the input).
        cmap: a matplotlib colormap name.
        cell: size of one map cell in CSS pixels (default: the longer side of a map spans 120 pixels). Rows with
            labels are at least ``LABEL_PX + 2`` tall, and a strip that prints its values at least
            ``VALUE_CELL_PX`` wide per cell, so that their text keeps its size.
        row_labels, col_labels: optional text beside each row and under each column of every map (tokens,
            offsets); each must have one entry per row (column) of every panel. ``col_labels`` may instead give
            one sequence (or ``None``) per panel, for panels of different widths.
        show_values: indices of one-row panels (a kernel strip) whose values are printed under their cells.
    """

    kind = "heatmap"

    def __init__(self, maps: Any, controls: Mapping[str, Sequence[Any]], panels: Sequence[str], title: str = "",
                 defaults: Mapping[str, Any] | None = None, labels: Mapping[str, Sequence[str]] | None = None,
                 mark: Sequence[str] | None = None, image: Any = None, cmap: str = "viridis",
                 cell: float | None = None, row_labels: Sequence[str] | None = None,
                 col_labels: Sequence[Any] | None = None, show_values: Sequence[int] = ()):
        super().__init__(controls, title, defaults, labels)
        if cell is not None and not (isinstance(cell, (int, float)) and 1 <= cell <= 64):
            raise ValueError(f"cell must be a size in CSS pixels between 1 and 64, got {cell!r}")
        self.cell = cell
        self.row_labels = None if row_labels is None else [str(x) for x in row_labels]
        if col_labels is not None and len(col_labels) == len(panels) \
                and all(c is None or isinstance(c, (list, tuple)) for c in col_labels):
            self.col_labels = [None if c is None else [str(x) for x in c] for c in col_labels]  # one per panel
        else:
            self.col_labels = None if col_labels is None else [[str(x) for x in col_labels]] * len(panels)
        sizes = tuple(self.sizes)
        if isinstance(maps, (list, tuple)):
            if len(maps) != len(panels):
                raise ValueError(f"maps: got {len(maps)} arrays for {len(panels)} panels")
            arrays = [np.asarray(m, dtype=np.float64) for m in maps]
        else:
            stacked = np.asarray(maps, dtype=np.float64)
            expected = sizes + (len(panels),)
            if stacked.ndim != len(expected) + 2 or stacked.shape[:-2] != expected:
                raise ValueError(f"maps must have shape {expected} + (H, W) (controls, then panels), "
                                 f"got {stacked.shape}")
            arrays = [stacked[..., p, :, :] for p in range(len(panels))]
        for p, a in enumerate(arrays):
            if a.ndim != len(sizes) + 2 or a.shape[:-2] != sizes:
                raise ValueError(f"maps[{p}] must have shape {sizes} + (H, W), got {a.shape}")
            if not np.isfinite(a).all() or (a < 0).any():
                raise ValueError(f"maps[{p}] must be finite and non-negative (probabilities, kernel weights)")
        if mark is not None:
            mark = list(mark)
            if len(mark) != 2 or any(m not in self.controls for m in mark):
                raise ValueError(f"mark must name two controls (row, col), got {mark!r}")
            for m in mark:
                if not all(isinstance(v, (int, np.integer)) for v in self.controls[m]):
                    raise ValueError(f"mark: control {m!r} must take integer pixel positions")
        self.mark = mark
        self.panels = [str(p) for p in panels]
        self.shapes = [a.shape[-2:] for a in arrays]
        if self.row_labels is not None and any(len(self.row_labels) != shape[0] for shape in self.shapes):
            raise ValueError("row_labels must give one label per row of every map")
        if self.col_labels is not None and any(c is not None and len(c) != shape[1]
                                               for c, shape in zip(self.col_labels, self.shapes)):
            raise ValueError("col_labels must give one label per column of every map (or of its own panel)")
        self.show_values = [int(p) for p in show_values]
        if any(not 0 <= p < len(self.shapes) or self.shapes[p][0] != 1 for p in self.show_values):
            raise ValueError(f"show_values must name one-row panels among 0..{len(self.shapes) - 1}, "
                             f"got {list(show_values)}")
        n = int(np.prod(sizes))
        flat = np.concatenate([a.reshape(n, -1) for a in arrays], axis=1)  # (settings, Σ_p H_p W_p)
        top = flat.max(axis=1)
        scale = np.where(top > 0, 255 / np.where(top > 0, top, 1), 0)
        self.data = np.round(flat * scale[:, None]).astype(np.uint8)
        self.vmax = [f"{t:.3g}" for t in top]
        self.image = None
        if image is not None:
            import matplotlib.pyplot as plt

            buf = io.BytesIO()
            plt.imsave(buf, np.clip(np.asarray(image, dtype=np.float64), 0, 1), format="png")
            self.image = base64.b64encode(buf.getvalue()).decode("ascii")
        import matplotlib

        self.lut = (np.asarray(matplotlib.colormaps[cmap](np.linspace(0, 1, 256)))[:, :3] * 255).round().astype(np.uint8)

    def _spec(self) -> dict[str, Any]:
        names = list(self.controls)
        packed = zlib.compress(self.data.tobytes(), 9)
        return {"data": base64.b64encode(packed).decode("ascii"), "encoding": "deflate",
                "lut": base64.b64encode(self.lut.tobytes()).decode("ascii"),
                "shapes": [list(map(int, s)) for s in self.shapes], "panels": self.panels, "vmax": self.vmax,
                "mark": [names.index(m) for m in self.mark] if self.mark else None,
                "values": [[int(v) if isinstance(v, (int, np.integer)) else None for v in vals]
                           for vals in self.controls.values()]}

    def _body_html(self) -> str:
        parts = []
        if self.image:
            parts.append('<div class="av-panel"><img class="av-input" style="width: 120px; image-rendering: '
                         f'pixelated" src="data:image/png;base64,{self.image}" alt="input"><div>input</div></div>')
        for p, ((h, w), title) in enumerate(zip(self.shapes, self.panels)):
            cell = self.cell or 120 / max(h, w)
            col_labels = self.col_labels[p] if self.col_labels else None
            # Labels are drawn at 10-12 px whatever the cell: a strip that prints its values gets cells wide enough
            # for "0.50" at 12 px, and row labels set the rows' height when the cells are smaller than a line.
            cell_w = max(cell, VALUE_CELL_PX) if p in self.show_values else cell
            cell_h = max(cell, LABEL_PX + 2) if self.row_labels else cell
            style = f"width: {max(w * cell_w, 24):.0f}px; height: {max(h * cell_h, 24):.0f}px"
            mark = '<div class="av-mark"></div>' if self.mark else ""
            box = (f'<div class="av-frame-box"><canvas class="av-map" width="{w}" height="{h}" style="{style}">'
                   f"</canvas>{mark}</div>")
            labelled = bool(self.row_labels or col_labels or p in self.show_values)
            if self.row_labels:
                row_h = max(h * cell_h, 24) / h
                rows = "".join(f'<div style="height: {row_h:.2f}px; line-height: {row_h:.2f}px">{html.escape(t)}</div>'
                               for t in self.row_labels)
                box = f'<div class="av-rows" style="font-size: {LABEL_PX}px">{rows}</div>{box}'
            if col_labels or p in self.show_values:
                width = max(w * cell_w, 24) / w  # the map is at least 24 px wide
                under = ""
                if p in self.show_values:  # filled in by the page's script for the current setting
                    under += (f'<div class="av-cols av-vals" data-panel="{p}" style="font-size: {LABEL_PX}px">'
                              + f'<span style="width: {width:.2f}px"></span>' * w + "</div>")
                if col_labels:
                    under += (f'<div class="av-cols" style="font-size: {LABEL_PX}px">'
                              + "".join(f'<span style="width: {width:.2f}px">{html.escape(t)}</span>'
                                        for t in col_labels) + "</div>")
                box = f'<div class="av-grid">{box}<div></div><div>{under}</div></div>'
            elif self.row_labels:
                box = f'<div class="av-grid">{box}</div>'
            # A labelled panel keeps its full size on a phone (its labels need it): it wraps onto its own line, and
            # scrolls within the viewer when it is wider than the screen.
            parts.append(f'<div class="av-panel{" av-labelled" if labelled else ""}">{box}'
                         f'<div class="av-panel-title">{html.escape(title)}</div></div>')
        return (f'<div class="av-scroll-hint" hidden>wider than the screen: scroll the maps sideways</div>'
                f'<div class="av-panels">{"".join(parts)}</div><div class="av-colorbar">0 '
                '<canvas class="av-cbar" width="256" height="1"></canvas><span class="av-vmax"></span></div>')
