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
    is the one the build looks up; the execution timeout of ``_config.yml``; and the reader's description, which the
    cache records."""
    from myst_nb.core.config import NbParserConfig
    from myst_nb.core.read import create_nb_reader
    from myst_parser.config.main import MdParserConfig

    config = yaml.safe_load((root / "_config.yml").read_text())
    extensions = config.get("parse", {}).get("myst_enable_extensions", [])
    reader = create_nb_reader(str(path), MdParserConfig(enable_extensions=set(extensions)), NbParserConfig(),
                              path.read_text())
    return reader.read(path.read_text()), config.get("execute", {}).get("timeout", 30), reader.read_fmt


def _start_worker(threads: int) -> None:
    """In each worker: kernels with ``threads`` PyTorch threads (the cores shared among the pages running at once,
    unless ``OMP_NUM_THREADS`` is set), talking over encrypted sockets as the build's kernels do (``quiet_build``)."""
    os.environ.setdefault("OMP_NUM_THREADS", str(threads))
    sys.path.insert(0, str(Path(__file__).parent))
    from quiet_build import encrypt_kernels

    encrypt_kernels()


def _execute(path: str, timeout: int) -> tuple[str, dict | None, float, str]:
    """Run one page in a fresh kernel in its own folder, as MyST-NB's cache mode does (jupyter-cache's executor,
    without per-cell timing, which would change the cache key); (path, executed notebook or None, seconds, error)."""
    from jupyter_cache.executors.utils import single_nb_execution

    nb = read(Path(path))[0]
    try:
        result = single_nb_execution(nb, cwd=str(Path(path).parent), timeout=timeout, allow_errors=False,
                                     meta_override=True)
    except Exception as err:  # noqa: BLE001  (a kernel that died: the build runs the page again and reports it)
        return path, None, 0.0, f"{type(err).__name__}: {str(err)[-600:]}"
    if result.err is not None:
        return path, None, result.time, f"{type(result.err).__name__}: {str(result.err)[-600:]}"
    return path, nb, result.time, ""


def store(cache, path: str, nb, seconds: float, read_fmt: dict | None) -> None:
    """Put an executed page into the cache as MyST-NB does (``NotebookClientCache``), where the build finds it."""
    from jupyter_cache.base import CacheBundleIn

    record = cache.add_nb_to_project(path, **({"read_data": read_fmt} if read_fmt else {}))
    cache.cache_notebook_bundle(CacheBundleIn(nb, record.uri, data={"execution_seconds": seconds}),
                                check_validity=False, overwrite=True)


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

    cache = get_cache(str(args.cache))
    times_file = args.cache.parent / TIMES
    try:
        times = json.loads(times_file.read_text())
    except (OSError, ValueError):
        times = {}
    todo = []
    formats = {}
    for path in pages():
        nb, timeout, formats[str(path)] = read(path)
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
    threads = max(1, (os.cpu_count() or 1) // min(args.jobs, len(todo)))
    with ProcessPoolExecutor(max_workers=args.jobs, initializer=_start_worker, initargs=(threads,)) as pool:
        for future in as_completed([pool.submit(_execute, str(p), t) for p, t in todo]):
            path, nb, seconds, error = future.result()
            name = str(Path(path).relative_to(ROOT))
            times[name] = round(seconds, 1)
            if nb is None:
                failed.append(name)
                print(f"preexecute: {name} failed after {seconds:.0f} s (the build runs it again and reports it): "
                      f"{error}", flush=True)
                continue
            store(cache, path, nb, seconds, formats[path])
            print(f"preexecute: {name} {seconds:.1f} s", flush=True)
    times_file.parent.mkdir(parents=True, exist_ok=True)
    times_file.write_text(json.dumps(times, indent=1, sort_keys=True) + "\n")
    print(f"preexecute: {len(todo) - len(failed)} of {len(todo)} pages in {time.monotonic() - start:.0f} s",
          flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
