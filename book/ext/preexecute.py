"""Execute the book's pages on every core before ``jupyter-book build``, into the build's execution cache.

Jupyter Book executes one page at a time, so on a machine with two cores one of them waits through the build. This
script runs the pages that are not in the cache yet in parallel (the longest first, from the last build's times),
each in a fresh kernel in its own folder as the build would, and stores each executed page in the build's
jupyter-cache, keyed the way MyST-NB keys it (the code of the page read with MyST-NB's own reader). The build then
finds every page it needs in the cache and executes none.

A page whose execution fails is not stored: the build executes it again itself and reports the failure as it always
does (``-W`` fails the build), so this script only ever saves time.

    python book/ext/preexecute.py [--jobs N] [--cache _build/.jupyter_cache]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
TIMES = "execution-times.json"  # beside the cache: the seconds each page took last time, to start the longest first


def pages(root: Path = ROOT) -> list[Path]:
    """The sources the build executes: the table of contents' MyST notebooks (a ``kernelspec`` in the front matter)."""
    toc = yaml.safe_load((root / "_toc.yml").read_text())
    files = [toc["root"]]

    def walk(entries):
        for entry in entries or ():
            if "file" in entry:
                files.append(entry["file"])
            walk(entry.get("sections"))
            walk(entry.get("chapters"))

    walk(toc.get("parts"))
    found = []
    for name in files:
        path = root / f"{name}.md"
        if path.is_file() and "\nkernelspec:" in path.read_text().split("\n---", 1)[0]:
            found.append(path)
    return found


def read(path: Path, root: Path = ROOT):
    """The page as the notebook MyST-NB makes of it (same reader, same Markdown extensions), so that its cache key
    is the one the build looks up."""
    from myst_nb.core.config import NbParserConfig
    from myst_nb.core.read import create_nb_reader
    from myst_parser.config.main import MdParserConfig

    config = yaml.safe_load((root / "_config.yml").read_text())
    extensions = config.get("parse", {}).get("myst_enable_extensions", [])
    reader = create_nb_reader(str(path), MdParserConfig(enable_extensions=set(extensions)), NbParserConfig(),
                              path.read_text())
    return reader.read(path.read_text()), config.get("execute", {}).get("timeout", 30)


def _execute(path: str, timeout: int) -> tuple[str, dict | None, float, str]:
    """Run one page in a fresh kernel in its own folder; (path, executed notebook or None, seconds, error)."""
    from nbclient import NotebookClient

    nb, _ = read(Path(path))
    start = time.monotonic()
    try:
        NotebookClient(nb, timeout=timeout, kernel_name=nb.metadata.get("kernelspec", {}).get("name", "python3"),
                       resources={"metadata": {"path": str(Path(path).parent)}}).execute()
    except Exception as err:  # noqa: BLE001  (the build runs it again and reports it)
        return path, None, time.monotonic() - start, f"{type(err).__name__}: {str(err)[-600:]}"
    return path, nb, time.monotonic() - start, ""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="pages executed at once (default: "
                                                                               "the CPU cores)")
    parser.add_argument("--cache", type=Path, default=ROOT / "_build" / ".jupyter_cache",
                        help="the build's execution cache (default _build/.jupyter_cache)")
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error(f"--jobs must be at least 1, got {args.jobs}")
    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn

    cache = get_cache(str(args.cache))
    times_file = args.cache.parent / TIMES
    try:
        times = json.loads(times_file.read_text())
    except (OSError, ValueError):
        times = {}
    todo = []
    for path in pages():
        nb, timeout = read(path)
        try:
            cache.match_cache_notebook(nb)
        except KeyError:
            todo.append((path, timeout))
    if not todo:
        print("preexecute: every page is in the execution cache")
        return 0
    todo.sort(key=lambda item: -times.get(str(item[0].relative_to(ROOT)), item[0].stat().st_size / 1000))
    print(f"preexecute: {len(todo)} pages, {args.jobs} at a time", flush=True)
    start = time.monotonic()
    failed = []
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        for future in as_completed([pool.submit(_execute, str(p), t) for p, t in todo]):
            path, nb, seconds, error = future.result()
            name = str(Path(path).relative_to(ROOT))
            times[name] = round(seconds, 1)
            if nb is None:
                failed.append(name)
                print(f"preexecute: {name} failed after {seconds:.0f} s (the build runs it again and reports it): "
                      f"{error}", flush=True)
                continue
            record = cache.add_nb_to_project(path, read_data={"name": "myst_nb.core.read:read_myst_markdown_notebook",
                                                              "type": "plugin"})
            cache.cache_notebook_bundle(CacheBundleIn(nb, record.uri, data={"execution_seconds": seconds}),
                                        check_validity=False, overwrite=True)
            print(f"preexecute: {name} {seconds:.1f} s", flush=True)
    times_file.parent.mkdir(parents=True, exist_ok=True)
    times_file.write_text(json.dumps(times, indent=1, sort_keys=True) + "\n")
    print(f"preexecute: {len(todo) - len(failed)} of {len(todo)} pages in {time.monotonic() - start:.0f} s",
          flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
