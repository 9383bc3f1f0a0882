"""Text from a submission, made safe for whoever reads the grader's outputs.

A submission controls more of the grader's output than its points: the message of an exception its cell raised,
what a sandbox run on hidden inputs replied, its file name, the ``grade_id`` of its cells. Each output escapes
that text for its reader:

- :func:`visible` writes control characters (ANSI escapes, carriage returns, backspaces, newlines, C1 controls)
  and invisible formatting characters (bidirectional overrides, zero-width characters, line separators) as
  visible escapes (``\\x1b``, ``\\r``, ``\\n``, ``\\u202e``), so a message printed in a terminal can neither forge
  a row of the table nor hide one;
- :func:`quote` repeats at most :data:`ECHO_LIMIT` characters of a student's text, quoted as Python's ``repr``
  quotes it, and says how many characters it cut: a check message is not a channel for the hidden inputs a
  sandboxed cell could read;
- :func:`check_message` finalizes a check's message: the student's text in the messages the grader builds
  around it (``your cell raised ValueError: ...``) is quoted, any message is capped at :data:`MESSAGE_LIMIT`,
  and an exit status that is a signal is named (``killed by signal 9 (SIGKILL)``, never ``exit status -9``);
- :func:`csv_cell` neutralizes a gradebook cell a spreadsheet would read as a formula;
- :func:`html_text` escapes text for Gradescope, which renders its ``output`` fields as HTML.
"""

from __future__ import annotations

import html
import re
import signal
import unicodedata

__all__ = ["ECHO_LIMIT", "MESSAGE_LIMIT", "TEXT_LIMIT", "cap", "check_message", "csv_cell", "exit_status",
           "html_text", "plain", "quote", "settled", "visible"]

ECHO_LIMIT = 200  # characters of a student's text that a message repeats
MESSAGE_LIMIT = 400  # a message in which the grader cannot tell its own words from the student's
TEXT_LIMIT = 1000  # any message, whatever it quotes

_HIDDEN = {"Cc", "Cf", "Cs", "Zl", "Zp"}  # controls, invisible formatting, lone surrogates, line separators
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
_ERROR_NAME = re.compile(r"([A-Za-z_][\w.]{0,99}): (.*)", re.S)
_NEGATIVE_STATUS = re.compile(r"\bexit (?:status|code) -(\d+)\b")

# Messages the grader builds around a student's text: (its own words)(the student's text)(its own words).
_ECHOES = tuple(re.compile(p, re.S) for p in (
    r"(your cell raised )(.*)()",  # the cell's own exception (grade.py)
    r"(on hidden inputs,? (?:your cell|using your answer) raised )(.*)()",  # the sandbox's reply (sandbox.py)
    r"(calling your answer raised )(.*)()",  # verify's probe (exercises/core.py)
    r"(the grader could not run your cell on hidden inputs \()(.*)(\))",  # the sandbox's stderr
    r"(your answer could not be checked \()(.*)(\); received .*)",  # the check raised (exercises/core.py)
    r"(your answers could not be read as data \()(.*)(\))",  # the checker's decoding (checker.py)
))


def _escape(char: str) -> str:
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def visible(text: str) -> str:
    """``text`` with every control and invisible formatting character written as a visible escape."""
    text = str(text)
    if text.isprintable():
        return text
    return "".join(_escape(c) if unicodedata.category(c) in _HIDDEN else c for c in text)


def cap(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters, saying how many were cut; a capped text is not cut again."""
    if len(text) <= limit:
        return text
    keep = max(0, limit - 32)  # room for the note, however many characters were cut
    return f"{text[:keep]}… ({len(text) - keep} characters cut)"


def quote(text: str, limit: int = ECHO_LIMIT) -> str:
    """At most ``limit`` characters of a student's ``text``, quoted (``repr``: escapes visible), and how many
    characters were cut."""
    text = str(text)
    if len(text) <= limit:
        return repr(text)
    return f"{text[:limit]!r}… ({len(text) - limit} characters cut)"


def exit_status(code: int) -> str:
    """How a child process ended: ``exit status 1``, or ``killed by signal 9 (SIGKILL)`` for a negative code."""
    if code >= 0:
        return f"exit status {code}"
    try:
        name = signal.Signals(-code).name
    except ValueError:
        return f"killed by signal {-code}"
    return f"killed by signal {-code} ({name})"


def plain(text: str) -> str:
    """The grader's own words, made visible, with a negative exit status named as the signal it is."""
    return visible(_NEGATIVE_STATUS.sub(lambda m: exit_status(-int(m.group(1))), str(text)))


def _quote_error(text: str) -> str:
    match = _ERROR_NAME.fullmatch(text)
    return f"{match.group(1)}: {quote(match.group(2))}" if match else quote(text)


def check_message(text: str) -> str:
    """A check's message as the reports show it: the student's text quoted and capped where the grader's message
    wraps it, every other message made visible and capped at :data:`MESSAGE_LIMIT`."""
    text = str(text)
    for pattern in _ECHOES:
        match = pattern.fullmatch(text)
        if match:
            head, echo, tail = match.groups()
            return cap(plain(head) + _quote_error(echo) + plain(tail), TEXT_LIMIT)
    return cap(plain(text), MESSAGE_LIMIT)


def settled(text: str) -> str:
    """A message :func:`check_message` already finalized (read back from the grader's own report): made visible
    and capped again, never quoted twice."""
    return cap(visible(text), TEXT_LIMIT)


_FORMULA = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(text: str) -> str:
    """A text cell of the CSV gradebook that no spreadsheet reads as a formula and that cannot start a row: line
    breaks and other controls become visible escapes, and a cell starting with ``= + - @`` (or a tab or carriage
    return) gets a leading ``'``."""
    text = str(text)
    if text.startswith(_FORMULA):
        text = "'" + text
    return visible(text)


def html_text(text: str) -> str:
    """``text`` for an output Gradescope renders as HTML: escaped, line breaks kept as ``<br>``."""
    return html.escape(str(text), quote=True).replace("\n", "<br>\n")
