"""CPU per page opened: Chromium against its headless shell, as the built-book and explorable checks drive them.

Both browsers are launched once, with the checks' flags (``tests/book/conftest.py``); every round runs each
measure on each browser in turn (interleaved, the order alternating from round to round):

- ``new page``: ten fresh contexts, each with one page given a one-line document, left 0.3 s (as an explorable
  test opens its page and waits for it), then closed;
- ``chapter visit``: ``tests/book/visit.py``'s whole visit of one chapter of the built book at 1400 and at 400 px
  (load, typesetting, every read and every click), from a loopback server.

CPU is the machine's busy time over the measure (``/proc/stat``: the browser's processes, Playwright's driver and
this process together), so run it on an otherwise idle machine. Medians over the rounds go to ``OUT.json`` and
``OUT.md``.

    python benchmarks/headless_shell.py --rounds 5 --out results/benchmarks/headless_shell
"""

from __future__ import annotations

import argparse
import functools
import http.server
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

from _measure import cpu_model, machine, write_record  # noqa: E402

BROWSERS = {"chromium": "chromium", "headless shell": "chromium-headless-shell"}
CHAPTER = "notebooks/05_relative_positions_are_convolutions.html"


def busy_seconds() -> float:
    """The machine's busy CPU time so far (user, nice, system, irq, softirq), in seconds."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return (v[0] + v[1] + v[2] + v[5] + v[6]) / os.sysconf("SC_CLK_TCK")


def new_pages(browser, count: int = 10) -> None:
    for _ in range(count):
        context = browser.new_context()
        page = context.new_page()
        page.set_content("<p>one line</p>")
        page.wait_for_timeout(300)
        context.close()


def chapter_visit(browser, site: str, html: Path) -> None:
    from tests.book.visit import visit

    for width in (1400, 400):
        visit(browser, site, html, CHAPTER, width, None, 10)


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--html", type=Path, default=ROOT / "_build" / "html", help="the built book")
    parser.add_argument("--out", default="results/benchmarks/headless_shell")
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error(f"--rounds must be at least 1, got {args.rounds}")
    if not (args.html / CHAPTER).is_file():
        parser.error(f"--html: {args.html / CHAPTER} is missing; build the book first (make book)")
    from playwright.sync_api import sync_playwright

    from tests.book.conftest import CHROMIUM_FLAGS

    paths = {name: subprocess.run(["which", exe], capture_output=True, text=True).stdout.strip()
             for name, exe in BROWSERS.items()}
    missing = [BROWSERS[name] for name, path in paths.items() if not path]
    if missing:
        parser.error(f"{', '.join(missing)} not on PATH (Debian: apt-get install chromium chromium-headless-shell)")
    versions = {name: subprocess.run([path, "--version"], capture_output=True, text=True).stdout.strip()
                for name, path in paths.items()}
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(args.html)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    site = f"http://127.0.0.1:{server.server_address[1]}"
    measures = {"new page (x10)": new_pages, "chapter visit (05, 1400 + 400 px)":
                lambda b: chapter_visit(b, site, args.html)}
    samples = {(m, b): [] for m in measures for b in BROWSERS}
    load_before = os.getloadavg()
    with sync_playwright() as p:
        launched = {name: p.chromium.launch(executable_path=path, args=CHROMIUM_FLAGS, headless=True)
                    for name, path in paths.items()}
        for measure, run in measures.items():  # one untimed warm-up each
            for browser in launched.values():
                run(browser)
        for r in range(args.rounds):
            order = list(launched.items())[:: 1 if r % 2 == 0 else -1]
            for measure, run in measures.items():
                for name, browser in order:
                    cpu, wall = busy_seconds(), time.perf_counter()
                    run(browser)
                    samples[(measure, name)].append((busy_seconds() - cpu, time.perf_counter() - wall))
                    print(f"round {r}: {measure}, {name}: {samples[(measure, name)][-1][0]:.2f} CPU s", flush=True)
        for browser in launched.values():
            browser.close()
    server.shutdown()
    rows = []
    for (measure, name), got in samples.items():
        rows.append({"measure": measure, "browser": name, "cpu_s": statistics.median(c for c, _ in got),
                     "wall_s": statistics.median(w for _, w in got), "samples": got})
    for row in rows:
        full = next(r for r in rows if r["measure"] == row["measure"] and r["browser"] == "chromium")
        row["cpu_ratio"] = row["cpu_s"] / full["cpu_s"]
    meta = machine() | {"browsers": versions, "rounds": args.rounds, "load_average_before": list(load_before),
                        "cpu_model": cpu_model(), "chapter": CHAPTER}
    text = write_record(
        args.out, {"meta": meta, "rows": rows}, title="CPU per page opened: Chromium and its headless shell",
        note=(f"Median over {args.rounds} interleaved rounds of the machine's busy CPU seconds (/proc/stat) per "
              f"measure, both browsers launched once with the checks' flags. {versions['chromium']}; "
              f"{versions['headless shell']}. CPU: {meta['cpu_model']}; load average before "
              f"{load_before[0]:.2f}."),
        columns=[("measure", "{measure}"), ("browser", "{browser}"), ("CPU (s)", "{cpu_s:.2f}"),
                 ("wall (s)", "{wall_s:.2f}"), ("CPU / chromium's", "{cpu_ratio:.2f}")],
        rows=rows)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
