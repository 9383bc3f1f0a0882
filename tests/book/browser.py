"""Which Chromium the built-book check drives, found in a fixed order, and fetched only as a last resort.

1. ``$CHROMIUM``, when set (it must then name a browser that exists);
2. a system Chromium or Chrome on ``PATH``;
3. Playwright's own Chromium, which ``python -m tests.book.browser --install`` downloads when neither of the
   others exists (``make test`` runs that step).

With none of the three, the check stops with a message that says how to get one.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass

SYSTEM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
MISSING = ("no Chromium found: install it (Debian: apt-get install chromium), set CHROMIUM=/path/to/it, "
           "or run `python -m playwright install chromium` on a machine with network access")


class BrowserNotFound(RuntimeError):
    """No browser in any of the three places."""


@dataclass(frozen=True)
class Browser:
    """Where the browser came from (``"env"``, ``"system"`` or ``"playwright"``) and its executable."""

    source: str
    path: str


def playwright_chromium() -> str | None:
    """The executable of Playwright's own Chromium, if it has been downloaded; else ``None``."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return None
    try:
        with sync_playwright() as p:
            path = p.chromium.executable_path
    except Exception:  # the driver could not start: treat as "not there"
        return None
    return path if path and os.path.isfile(path) and os.access(path, os.X_OK) else None


def find_browser(environ: dict[str, str] | None = None) -> Browser:
    """The first browser in the documented order; raises :class:`BrowserNotFound` when there is none."""
    environ = os.environ if environ is None else environ
    wanted = environ.get("CHROMIUM")
    if wanted:
        path = shutil.which(wanted, path=environ.get("PATH"))
        if path is None:
            raise BrowserNotFound(f"CHROMIUM={wanted!r} is not an executable browser; unset it or fix the path")
        return Browser("env", path)
    for name in SYSTEM_NAMES:
        path = shutil.which(name, path=environ.get("PATH"))
        if path:
            return Browser("system", path)
    path = playwright_chromium()
    if path:
        return Browser("playwright", path)
    raise BrowserNotFound(MISSING)


def install_playwright_chromium() -> bool:
    """Download Playwright's Chromium; ``False`` when that fails (no network, say)."""
    done = subprocess.run([sys.executable, "-m", "playwright", "install", "chromium"], check=False)
    return done.returncode == 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--install", action="store_true",
                        help="download Playwright's Chromium when no other browser is found")
    args = parser.parse_args(argv)
    try:
        found = find_browser()
    except BrowserNotFound as err:
        if not args.install or os.environ.get("CHROMIUM"):
            print(err, file=sys.stderr)
            return 1
        print("no system Chromium: fetching Playwright's Chromium", file=sys.stderr)
        if not install_playwright_chromium():
            print(MISSING, file=sys.stderr)
            return 1
        try:
            found = find_browser()
        except BrowserNotFound as again:
            print(again, file=sys.stderr)
            return 1
    print(f"browser ({found.source}): {found.path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
