"""The ledger as a book page: the book's number of every ``prf:`` box, and the HTML of the ledger."""

from __future__ import annotations

import html
import re
from collections import Counter
from pathlib import Path

from .ledger import CH01, CH03, CH05, CH08, LedgerRow, scope_counts

__all__ = ["book_numbers", "ledger_html"]

_NUMBERED = ("definition", "lemma", "theorem", "proposition", "corollary", "remark", "example", "conjecture",
             "axiom", "criterion", "algorithm", "property", "observation", "assumption", "notation")


def book_numbers(root: Path | str = ".", chapters: tuple[str, ...] = (CH01, CH03, CH05, CH08)) -> dict[str, str]:
    """The book's number of every ``prf:`` box in ``chapters``: ``{"lem-heads-shifts": "Lemma 3.1", ...}``.

    The book numbers each kind of box per chapter (Lemma 3.1, Theorem 3.1), in order of appearance; the chapter
    number is the file's two-digit prefix.
    """
    numbers = {}
    for path in chapters:
        chapter = int(Path(path).name[:2])
        counts: Counter = Counter()
        text = (Path(root) / path).read_text(encoding="utf-8")
        for match in re.finditer(r"^:{3,}\{prf:(\w+)\}[^\n]*\n((?::\w+:[^\n]*\n)*)", text, re.M):
            kind, options = match.group(1), match.group(2)
            if kind not in _NUMBERED:
                continue
            counts[kind] += 1
            label = re.search(r":label:\s*(\S+)", options)
            if label:
                numbers[label.group(1)] = f"{kind.capitalize()} {chapter}.{counts[kind]}"
    return numbers


_WRAP = "overflow-wrap: anywhere"


def _variant_list(items: tuple[tuple[str, bool], ...], good: str, bad: str) -> str:
    return "<ul style=\"margin: 0.2em 0 0.4em 0\">" + "".join(
        f"<li>{'✔ ' + good if ok else '✘ ' + bad}: {html.escape(d)}</li>" for d, ok in items) + "</ul>"


def ledger_html(rows: list[LedgerRow], numbers: dict[str, str] | None = None, link_prefix: str = "../") -> str:
    """The ledger as HTML: a count of claims by scope, then one block per claim, readable without side-scrolling.

    Each block heads with the book's number of the claim's box (a link to it), the status, the scope and the time;
    then the statement, what SymPy keeps symbolic, the false variants (each rejected), the true variants (each
    verified), the chapter's numerical check (a link) and the pytest tests by name.
    """
    numbers = numbers or {}
    counts = scope_counts(rows)
    summary = "".join(f"<tr><td>{scope}</td><td style=\"text-align: right\">{count}</td></tr>"
                      for scope, count in counts.items())
    total = sum(r.seconds for r in rows)
    variants = sum(r.variant_seconds for r in rows)
    parts = [f'<table class="claims-scopes docutils"><thead><tr><th>scope</th><th>claims</th></tr></thead>'
             f"<tbody>{summary}<tr><td><strong>all</strong></td><td style=\"text-align: right\">{len(rows)}</td></tr>"
             f"</tbody></table>",
             f"<p>Proofs: {total:.1f} s in all; their {sum(len(r.false_rejected) for r in rows)} false and "
             f"{sum(len(r.true_verified) for r in rows)} true variants: {variants:.1f} s.</p>"]
    for row in rows:
        c, r = row.claim, row.result
        page = c.numerical.split("#")[0].removesuffix(".md") + ".html"
        name = numbers.get(c.prf_label, c.prf_label)
        box = f'<a href="{link_prefix}{page}#{html.escape(c.prf_label)}">{html.escape(name)}</a>'
        check = f'<a href="{link_prefix}{page}#{html.escape(c.numerical.split("#")[1])}">' \
                f'{html.escape(numbers.get(c.numerical.split("#")[1], c.numerical.split("#")[1]))}</a>'
        scope = r.scope if r.scope != "instance" else f"instance ({r.instance})"
        if r.scope == "definition":
            scope += " (holds by expanding definitions; SymPy checks the bookkeeping, it derives nothing)"
        status = "✔ verified" if r.verified else "✘ NOT verified"
        tests = "".join(f'<li><span style="{_WRAP}; font-family: monospace">{html.escape(t)}</span></li>'
                        for t in c.tests)
        lines = [
            f'<div class="claims-ledger-entry" id="claim-{html.escape(c.label)}" style="border-top: 1px solid '
            f'rgba(128,128,128,0.4); padding: 0.5em 0; {_WRAP}">',
            f"<p style=\"margin: 0\"><strong>{box}</strong> · <span style=\"font-family: monospace\">"
            f"{html.escape(c.label)}</span> · {status} · "
            f"{html.escape(scope)} · {row.seconds:.2f} s</p>",
            f"<p style=\"margin: 0.2em 0\">{html.escape(c.statement)}</p>",
        ]
        if r.variables:
            lines.append(f"<p style=\"margin: 0.2em 0\"><em>Symbolic in:</em> {html.escape(', '.join(r.variables))}</p>")
        lines.append("<p style=\"margin: 0.2em 0\"><em>False variants:</em></p>"
                     + _variant_list(row.false_rejected, "rejected", "NOT rejected"))
        if row.true_verified:
            lines.append("<p style=\"margin: 0.2em 0\"><em>True variants:</em></p>"
                         + _variant_list(row.true_verified, "verified", "NOT verified"))
        lines.append(f"<p style=\"margin: 0.2em 0\"><em>Numerical check:</em> the cells after {check}</p>")
        lines.append(f"<p style=\"margin: 0.2em 0\"><em>pytest:</em></p><ul style=\"margin: 0\">{tests}</ul></div>")
        parts.append("".join(lines))
    return f'<div class="claims-ledger">{"".join(parts)}</div>'
