"""Outputs a static page can show as they are meant: tables as HTML tables, SymPy expressions as typeset math.

A notebook output is rendered by whatever reads it: Jupyter, Colab, or the book's static HTML. Markdown printed
with ``display(Markdown(...))`` only becomes a table where the reader has a table extension, and ``print`` of a
SymPy matrix shows its LaTeX source. The objects here carry an HTML or LaTeX representation that every one of
them renders, and a plain-text one for a terminal.
"""

from __future__ import annotations

import html
import re
from typing import Any, Sequence

__all__ = ["Table", "Math", "numbered_figure"]

_CODE = re.compile(r"`([^`]+)`")


def _cell_html(value: Any) -> str:
    """Escape a cell and turn markdown inline code (`x`) into ``<code>``."""
    return _CODE.sub(r"<code>\1</code>", html.escape(str(value)))


class Table:
    """A table with a header row, shown as an HTML ``<table>`` in notebooks and in the book.

    Args:
        headers: the column names.
        rows: one sequence of cells per row, each as long as ``headers``. Cells are shown with ``str``; text in
            backticks is shown as code.
        caption: optional text above the table.
        align: optional ``"left"``/``"right"``/``"center"`` per column (default: numbers right, text left).
    """

    def __init__(self, headers: Sequence[Any], rows: Sequence[Sequence[Any]], caption: str | None = None,
                 align: Sequence[str] | None = None):
        if isinstance(headers, str) or not len(headers):
            raise ValueError(f"headers must be a non-empty sequence of column names, got {headers!r}")
        self.headers = [str(h) for h in headers]
        self.rows = [list(r) for r in rows]
        for i, row in enumerate(self.rows):
            if len(row) != len(self.headers):
                raise ValueError(f"rows[{i}] has {len(row)} cells; every row needs one per header "
                                 f"({len(self.headers)})")
        if align is not None:
            align = list(align)
            if len(align) != len(self.headers) or any(a not in ("left", "right", "center") for a in align):
                raise ValueError(f"align must give 'left', 'right' or 'center' for each of the "
                                 f"{len(self.headers)} columns, got {align!r}")
        self.align = align
        self.caption = caption

    @classmethod
    def from_markdown(cls, text: str, caption: str | None = None) -> "Table":
        """Read a pipe table (``| a | b |`` rows, a ``|---|`` rule under the header).

        Raises:
            ValueError: if ``text`` holds no pipe table with a rule line.
        """
        lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip().startswith("|")]
        if len(lines) < 2 or not re.fullmatch(r"\|(\s*:?-{3,}:?\s*\|)+", lines[1].replace(" ", "")):
            raise ValueError("text must hold a markdown pipe table: a header row, then a |---| rule")

        def cells(line: str) -> list[str]:
            return [c.strip() for c in line.strip().strip("|").split("|")]

        rule = cells(lines[1])
        align = ["center" if r.startswith(":") and r.endswith(":") else "right" if r.endswith(":") else "left"
                 for r in rule]
        explicit = any(":" in r for r in rule)
        return cls(cells(lines[0]), [cells(ln) for ln in lines[2:]], caption=caption,
                   align=align if explicit else None)

    def _column_align(self) -> list[str]:
        if self.align is not None:
            return self.align
        number = re.compile(r"^[-+−]?[\d.,]+(e[-+]?\d+)?\s*(%|[kMG]|min|s)?(\s.*)?$")
        out = []
        for j in range(len(self.headers)):
            column = [str(r[j]) for r in self.rows if str(r[j]) not in ("", "—", "-")]
            out.append("right" if column and all(number.match(c) for c in column) else "left")
        return out

    def _repr_html_(self) -> str:
        align = self._column_align()

        def style(text: Any, a: str) -> str:  # short cells never break ("cpu-quick", "5,315,136")
            return f"text-align: {a}" + ("; white-space: nowrap" if len(str(text)) <= 12 else "")

        head = "".join(f'<th style="{style(h, a)}">{_cell_html(h)}</th>' for h, a in zip(self.headers, align))
        body = "".join("<tr>" + "".join(f'<td style="{style(c, a)}">{_cell_html(c)}</td>'
                                        for c, a in zip(row, align)) + "</tr>" for row in self.rows)
        caption = f"<caption>{html.escape(self.caption)}</caption>" if self.caption else ""
        # The wrapper scrolls sideways on a narrow screen instead of cutting the last columns off.
        return (f'<div class="attnconv-table-wrap" style="overflow-x: auto; max-width: 100%">'
                f'<table class="attnconv-table docutils align-default" style="font-size: 0.9em">{caption}'
                f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>")

    def __repr__(self) -> str:
        widths = [max(len(str(x)) for x in [h] + [r[j] for r in self.rows]) for j, h in enumerate(self.headers)]
        lines = ["  ".join(str(h).ljust(w) for h, w in zip(self.headers, widths)),
                 "  ".join("-" * w for w in widths)]
        lines += ["  ".join(str(c).ljust(w) for c, w in zip(row, widths)) for row in self.rows]
        return "\n".join(([self.caption] if self.caption else []) + lines)


class Math:
    """A SymPy expression (or any LaTeX string) shown as display math, with an optional text label before it.

    ``Math(residual, "residual")`` renders as typeset math in Jupyter, Colab and the book, where ``print`` would
    show ``\\left[\\begin{matrix}...``. Its plain-text form is SymPy's own ``str``.

    Args:
        expr: a SymPy object, or a LaTeX string (without dollar signs).
        label: optional text shown before the expression, e.g. ``"residual ="``.
    """

    def __init__(self, expr: Any, label: str = ""):
        if not isinstance(label, str):
            raise TypeError(f"label must be a str, got {type(label).__name__}")
        self.expr = expr
        self.label = label

    def latex(self) -> str:
        """The expression's LaTeX source, without dollar signs."""
        if isinstance(self.expr, str):
            return self.expr
        import sympy

        return sympy.latex(self.expr)

    def _repr_latex_(self) -> str:
        label = f"\\text{{{self.label}}}\\quad " if self.label else ""
        return f"$$\n{label}{self.latex()}\n$$"

    def __repr__(self) -> str:
        return f"{self.label} {self.expr}".strip()


def numbered_figure(key: str, obj: Any) -> None:
    """Show ``obj`` (a kernel-free viewer, any object with an HTML representation) so that the book can give it a
    number and a caption like any figure.

    In a Jupyter Book build, ``obj`` is glued under ``key`` for a ``{glue:figure}`` directive that carries the
    caption (tag the cell ``remove-output`` so that it is not shown twice); it is displayed in the cell as well, so
    Jupyter and Colab show it where it was made. Where ``myst_nb`` is not installed it is only displayed.
    """
    if not isinstance(key, str) or not key:
        raise ValueError(f"key must be a non-empty string, got {key!r}")
    try:
        from myst_nb import glue
    except ImportError:
        from IPython.display import display

        display(obj)
        return
    glue(key, obj, display=True)
