"""Which Chromium the built-book check drives, found in a fixed order, and fetched only as a last resort.

1. ``$CHROMIUM``, when set (it must then name a browser that exists);
2. Chromium's headless shell on ``PATH`` (Debian: ``apt-get install chromium-headless-shell``);
3. a system Chromium or Chrome on ``PATH``;
4. Playwright's own Chromium, which ``python -m tests.book.browser --install`` downloads when none of the
   others exists (``make test`` runs that step).

With none of them, the check stops with a message that says how to get one.

The headless shell is the same Blink as the full browser, without the browser's window around each page: a new
page costs it about an eighth of the CPU (``results/benchmarks/headless_shell.md``). It never asks for
``/favicon.ico``, as a reader's browser does, so the checks of that request take a full browser
(``find_browser(shell=False)``: steps 1, 3 and 4).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass

SHELL_NAMES = ("chromium-headless-shell", "chrome-headless-shell")
SYSTEM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
MISSING = ("no Chromium found: install it (Debian: apt-get install chromium), set CHROMIUM=/path/to/it, "
           "or run `python -m playwright install chromium` on a machine with network access")


class BrowserNotFound(RuntimeError):
    """No browser in any of the three places."""


@dataclass(frozen=True)
class Browser:
    """Where the browser came from (``"env"``, ``"shell"``, ``"system"`` or ``"playwright"``) and its executable."""

    source: str
    path: str

    @property
    def headless_shell(self) -> bool:
        """Whether this is Chromium's headless shell, which asks for no ``/favicon.ico``."""
        return is_headless_shell(self.path)


def is_headless_shell(path: str) -> bool:
    """Whether ``path`` names Chromium's headless shell (Debian's, Chrome's or Playwright's), by its file name."""
    return "headless-shell" in os.path.basename(path) or "headless_shell" in os.path.basename(path)


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


def find_browser(environ: dict[str, str] | None = None, shell: bool = True) -> Browser:
    """The first browser in the documented order; raises :class:`BrowserNotFound` when there is none.

    ``shell=False`` skips the headless shell on ``PATH``, for the checks that need a full browser."""
    environ = os.environ if environ is None else environ
    wanted = environ.get("CHROMIUM")
    if wanted:
        path = shutil.which(wanted, path=environ.get("PATH"))
        if path is None:
            raise BrowserNotFound(f"CHROMIUM={wanted!r} is not an executable browser; unset it or fix the path")
        return Browser("env", path)
    for name in (SHELL_NAMES if shell else ()) + SYSTEM_NAMES:
        path = shutil.which(name, path=environ.get("PATH"))
        if path:
            return Browser("shell" if name in SHELL_NAMES else "system", path)
    path = playwright_chromium()
    if path:
        return Browser("playwright", path)
    raise BrowserNotFound(MISSING)


def install_playwright_chromium() -> bool:
    """Download Playwright's Chromium; ``False`` when that fails (no network, say)."""
    done = subprocess.run([sys.executable, "-m", "playwright", "install", "chromium"], check=False)
    return done.returncode == 0


def _both() -> tuple[Browser, Browser]:
    """The browser of most checks, and the full one of the ``/favicon.ico`` checks (the same one where no headless
    shell comes first)."""
    return find_browser(), find_browser(shell=False)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--install", action="store_true",
                        help="download Playwright's Chromium when no other browser is found")
    args = parser.parse_args(argv)
    try:
        found, full = _both()
    except BrowserNotFound as err:
        if not args.install or os.environ.get("CHROMIUM"):
            print(err, file=sys.stderr)
            return 1
        print("no system Chromium: fetching Playwright's Chromium", file=sys.stderr)
        if not install_playwright_chromium():
            print(MISSING, file=sys.stderr)
            return 1
        try:
            found, full = _both()
        except BrowserNotFound as again:
            print(again, file=sys.stderr)
            return 1
    print(f"browser ({found.source}): {found.path}")
    if full != found:
        print(f"full browser, for the /favicon.ico checks ({full.source}): {full.path}")
    if full.headless_shell:
        print("the /favicon.ico checks will fail: they need a full browser, and CHROMIUM names a headless shell",
              file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
