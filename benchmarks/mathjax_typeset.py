"""Time to typeset: how long after a chapter's navigation starts the maths of its first screen is drawn, when
MathJax's first pass is done (``MathJax.startup.promise`` resolves), and when every formula of the page is drawn,
in headless Chromium, offline, from a local server.

Each named build (``--site NAME=DIR``) is served on its own loopback port; every round loads every page of every
build once, in an order that rotates from round to round (interleaved, so that a busy machine slows all of them
alike), with a fresh browser context each time (no cache). Per load it records, in ms from the navigation's start:
DOMContentLoaded, load, the first pass, and the first frame in which no formula of the first screen (the window
at the top of the page, 900 px tall) is waiting; and how many formulas were drawn by then, of how many the page
holds; and the first frame in which no formula of the page is waiting. An eager build draws them all in its first
pass. A lazy build (MathJax's ``ui/lazy``) draws only those in or near the window just after its first pass, and
book.js draws the rest in the background, a few at a time. Medians over the rounds are written to ``OUT.json`` and
``OUT.md``.

    python benchmarks/mathjax_typeset.py --site eager=/tmp/old-build/html --site lazy=_build/html \\
        --rounds 9 --out results/benchmarks/mathjax_typeset
"""

from __future__ import annotations

import argparse
import functools
import http.server
import json
import os
import platform
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

DEFAULT_PAGES = ("01_convolution_as_shifts", "02_self_attention", "03_attention_can_express_convolution",
                 "04_positional_encoding_zoo", "05_relative_positions_are_convolutions")
WIDTHS = (1400, 400)

# Set before the page's own scripts: the moment MathJax's startup promise resolves, caught within 2 ms of MathJax
# creating it (long before the typesetting it waits for ends).
# Then, each frame, whether a formula of the first screen (the window, scrolled to the top) is still a lazy
# placeholder (<mjx-lazy>): the first frame with none is when the first screen's maths is all drawn.
_WATCH = """(() => { const t = setInterval(() => {
  const m = window.MathJax; if (!(m && m.startup && m.startup.promise)) return; clearInterval(t);
  m.startup.promise.then(() => {
    window.__typesetAt = performance.now();
    const waiting = () => Array.from(document.querySelectorAll('mjx-lazy')).some(e => {
      const r = e.parentElement.getBoundingClientRect(); return r.top < innerHeight && r.bottom > 0; });
    const check = () => { if (waiting()) return requestAnimationFrame(check);
      window.__firstScreenAt = performance.now();
      window.__drawnCount = document.querySelectorAll('mjx-container').length
        - document.querySelectorAll('mjx-container > mjx-lazy').length; };
    check();
    const all = () => { if (document.querySelector('mjx-lazy')) return requestAnimationFrame(all);
      window.__allAt = performance.now(); };
    all();
  });
}, 2); })();"""
_READ = """() => { const n = performance.getEntriesByType('navigation')[0];
  return {typeset: window.__typesetAt, first_screen: window.__firstScreenAt, drawn: window.__drawnCount,
          all: window.__allAt, mathjax: window.MathJax && MathJax.version,
          loader: (MathJax.config && MathJax.config.loader && MathJax.config.loader.load) || null,
          dom: n.domContentLoadedEventEnd, load: n.loadEventEnd,
          formulas: document.querySelectorAll('mjx-container').length}; }"""


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


def serve(folder: Path) -> tuple[str, http.server.ThreadingHTTPServer]:
    if not (folder / "index.html").is_file():
        raise SystemExit(f"--site: {folder} holds no built book (index.html is missing)")
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(folder)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}", server


def load_once(browser, url: str, width: int, timeout_ms: int = 300_000) -> dict:
    context = browser.new_context(viewport={"width": width, "height": 900})
    try:
        page = context.new_page()
        page.add_init_script(_WATCH)
        page.goto(url, wait_until="load", timeout=timeout_ms)
        page.wait_for_function("() => window.__firstScreenAt !== undefined && window.__allAt !== undefined",
                               timeout=timeout_ms)
        return page.evaluate(_READ)
    finally:
        context.close()


def machine() -> dict:
    from importlib.metadata import version

    return {"python": platform.python_version(), "cpus": os.cpu_count(), "machine": platform.machine(),
            "load_average": os.getloadavg(), "playwright": version("playwright"),
            "date": time.strftime("%Y-%m-%d", time.gmtime())}


def commit() -> str:
    done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False)
    return done.stdout.strip() or "unknown"


def run(sites: dict[str, Path], pages: list[str], rounds: int, widths: tuple[int, ...], chromium: str) -> dict:
    from playwright.sync_api import sync_playwright

    served = {name: serve(folder) for name, folder in sites.items()}
    jobs = [(name, page, width) for width in widths for page in pages for name in sites]
    samples: dict[tuple[str, str, int], list[dict]] = {job: [] for job in jobs}
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, headless=True,
                                        args=["--no-sandbox", "--disable-gpu", "--no-first-run",
                                              "--disable-background-networking", "--disable-component-update"])
            version = browser.version
            for name, page, width in jobs[:len(sites)]:  # one warm-up load per build, not recorded
                load_once(browser, f"{served[name][0]}/notebooks/{page}.html", width)
            for r in range(rounds):
                shift = r % len(jobs)
                for name, page, width in jobs[shift:] + jobs[:shift]:
                    samples[(name, page, width)].append(
                        load_once(browser, f"{served[name][0]}/notebooks/{page}.html", width))
                print(f"round {r + 1}/{rounds} done", file=sys.stderr)
            browser.close()
    finally:
        for _, server in served.values():
            server.shutdown()
    rows = []
    for (name, page, width), got in samples.items():
        med = lambda key: statistics.median(s[key] for s in got)
        rows.append({"build": name, "page": page, "width": width, "loads": len(got),
                     "first_screen_ms": round(med("first_screen"), 1), "typeset_ms": round(med("typeset"), 1),
                     "all_drawn_ms": round(med("all"), 1),
                     "dom_ms": round(med("dom"), 1), "load_ms": round(med("load"), 1),
                     "formulas": got[-1]["formulas"], "drawn_by_first_screen": int(med("drawn")),
                     "mathjax": got[-1]["mathjax"], "loader": got[-1]["loader"],
                     "first_screen_ms_all": [round(s["first_screen"], 1) for s in got]})
    return {"chromium": version, "rows": rows, "load_average_at_end": os.getloadavg()}


def write(record: dict, out: Path) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(record, indent=1) + "\n")
    m = record["machine"]
    lines = ["# Time to typeset a chapter's maths (MathJax 3.2.2, headless Chromium)", "",
             f"Median of {record['rounds']} interleaved loads per row, each in a fresh context, from a loopback "
             f"server; ms from the navigation's start. Chromium {record['chromium']}, Python {m['python']}, "
             f"{m['cpus']} CPUs ({m['machine']}), load average {m['load_average'][0]:.1f} at the start and "
             f"{record['load_average_at_end'][0]:.1f} at the end, "
             f"{m['date']}, commit {record['commit']}.", ""]
    for name, folder in record["sites"].items():
        row = next(r for r in record["rows"] if r["build"] == name)
        lines.append(f"- `{name}`: {folder} (MathJax {row['mathjax']}, loader: {', '.join(row['loader'] or [])})")
    lines += ["", "| page | width | build | formulas | drawn by then | first screen's maths drawn (ms) | "
              "MathJax's first pass (ms) | every formula drawn (ms) | DOMContentLoaded (ms) | load (ms) |",
              "|---|---|---|---|---|---|---|---|---|---|"]
    for row in sorted(record["rows"], key=lambda r: (-r["width"], r["page"], r["build"])):
        lines.append(f"| {row['page'][:2]} | {row['width']} | {row['build']} | {row['formulas']} | "
                     f"{row['drawn_by_first_screen']} | {row['first_screen_ms']:.0f} | {row['typeset_ms']:.0f} | "
                     f"{row['all_drawn_ms']:.0f} | "
                     f"{row['dom_ms']:.0f} | {row['load_ms']:.0f} |")
    if record.get("note"):
        lines += ["", record["note"]]
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--site", action="append", required=True, metavar="NAME=DIR",
                        help="a built book's HTML folder, named (repeat to compare builds)")
    parser.add_argument("--pages", nargs="+", default=list(DEFAULT_PAGES), help="chapter names under notebooks/")
    parser.add_argument("--rounds", type=int, default=9, help="loads of each page per build (default 9)")
    parser.add_argument("--widths", type=int, nargs="+", default=list(WIDTHS), help="window widths in px")
    parser.add_argument("--note", default="", help="a line for the Markdown record")
    parser.add_argument("--out", type=Path, required=True, help="OUT.json and OUT.md are written")
    args = parser.parse_args(argv)
    sites = {}
    for item in args.site:
        name, sep, folder = item.partition("=")
        if not sep or not name or not folder:
            parser.error(f"--site must be NAME=DIR, got {item!r}")
        sites[name] = Path(folder)
    if args.rounds < 1:
        parser.error(f"--rounds must be at least 1, got {args.rounds}")
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.book.browser import find_browser

    record = {"sites": {k: str(v) for k, v in sites.items()}, "rounds": args.rounds, "machine": machine(),
              "commit": commit(), "note": args.note}
    record.update(run(sites, args.pages, args.rounds, tuple(args.widths), find_browser().path))
    write(record, args.out)
    print(args.out.with_suffix(".md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
