"""Fixtures for checking the built HTML book in a real, offline, headless Chromium."""

from __future__ import annotations

import functools
import http.server
import os
import threading
from pathlib import Path

import pytest

from .browser import BrowserNotFound, find_browser
from .site_checks import ServedLog, logging_handler

ROOT = Path(__file__).resolve().parents[2]
# The built book: _build/html, or the folder $ATTNCONV_BOOK_HTML names (a build's --path-output, then /_build/html).
HTML = Path(os.environ["ATTNCONV_BOOK_HTML"]) if os.environ.get("ATTNCONV_BOOK_HTML") else ROOT / "_build" / "html"
CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium_path(shell: bool = True) -> str:
    """The browser :func:`tests.book.browser.find_browser` picks, or a test failure that says how to get one."""
    try:
        return find_browser(shell=shell).path
    except BrowserNotFound as err:
        pytest.fail(str(err))


SERVED = ServedLog()  # every error the book's server answered, in order (site_checks.ServedLog)


@pytest.fixture(scope="session")
def served() -> ServedLog:
    """The errors the server of :func:`site` answered, requests the page never hears of (``/favicon.ico``) too."""
    return SERVED


@pytest.fixture(scope="session")
def site() -> str:
    """Serve the built book on a loopback port; yields its base URL."""
    if not (HTML / "index.html").is_file():
        pytest.fail(f"{HTML / 'index.html'} is missing: build the book first (make book)")
    handler = functools.partial(logging_handler(_QuietHandler, SERVED), directory=str(HTML))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


@pytest.fixture(scope="session")
def visits(browser, site):
    """Every (page, width) of the built book opened once per session and read by every check (``visit.py``)."""
    from .visit import Visits

    return Visits(browser, site, HTML, HTML.parent / "screens")
