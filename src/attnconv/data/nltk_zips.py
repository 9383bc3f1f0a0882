"""Downloading the NLTK corpus zips that Part V reads, each checked against its published md5.

The zips are the ones NLTK's downloader fetches from the ``nltk_data`` repository; their md5 sums are those of
NLTK's package index. :func:`download_corpora` puts them in ``<cache>/nltk/corpora/`` (or any folder), where
:func:`attnconv.data.corpus.corpora_dir` finds them when ``ATTNCONV_DATA`` is unset. From a shell::

    python -m attnconv.data.nltk_zips            # all of them, into the cache folder
    python -m attnconv.data.nltk_zips --dest DIR brown rte

A zip lands in the folder only after its hash has been checked (it is written to a temporary file first), so an
interrupted or corrupted download leaves nothing behind; a stalled or very slow server is given up on
(``attnconv.data.download`` says when). A command-line mistake or a failed download ends the command in one
line with exit code 2.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from .download import (NLTK_OFFICIAL_URL, check_nltk_template, download_limits, fetch_checked, nltk_md5s,
                       nltk_url, run_fetch_command)
from .paths import default_cache_dir, ensure_cache_folder

__all__ = ["NLTK_URL", "NLTK_ZIPS", "cached_corpora_dir", "download_corpora"]

#: Where NLTK's downloader fetches corpus ``<name>.zip`` from.
NLTK_URL = NLTK_OFFICIAL_URL

#: The zips of the pretraining text and the downstream tasks, with their md5 sums.
NLTK_ZIPS: dict[str, str] = {
    "abc": "ffb36b67ff24cbf7daaf171c897eb904",
    "brown": "a0a8630959d3d937873b1265b0a05497",
    "inaugural": "4e01cc9505ed7f9d04a330e67fb45509",
    "movie_reviews": "155de2b77c6834dd8eea7cbe88e93acb",
    "state_union": "044f2d20c592b17a26ac0102111833c9",
    "webtext": "6c7680030aae5c997b1370f832545c6a",
    "sentence_polarity": "5cdc0cae7f558040d050c90eb2b72e97",
    "subjectivity": "a81a44513903ba6bb86f85aeff149561",
    "rte": "ca21663daa326a3bb53001c3d82e62d6",
}


def cached_corpora_dir() -> Path:
    """``<cache>/nltk/corpora``: where :func:`download_corpora` puts the zips by default."""
    return default_cache_dir() / "nltk" / "corpora"


def download_corpora(names: tuple[str, ...] | list[str] | None = None, dest: str | os.PathLike | None = None,
                     *, url: str | None = None, progress: bool | None = None) -> Path:
    """Fetch the NLTK zips ``names`` (default: all of :data:`NLTK_ZIPS`) into ``dest``, skipping good copies.

    Args:
        names: keys of :data:`NLTK_ZIPS`.
        dest: the folder (default :func:`cached_corpora_dir`); created if missing.
        url: a template with ``{name}`` (for a mirror); default ``$ATTNCONV_NLTK_URL``, else NLTK's address.
        progress: a download bar (default: in a terminal or a notebook only; see ``fetch_checked``).

    Returns:
        The folder, ready to pass as ``root`` (or found by default when it is the cache folder).

    Raises:
        ValueError: an unknown name.
        ValueError: a setting or ``url`` of the wrong form (a template without ``{name}``, a bad md5).
        RuntimeError: a download failed its md5 check (the file is discarded).
        FileNotFoundError: a download failed (offline, refused, stalled, too slow); the message says how to get
            the zips by hand.
        NotADirectoryError: the folder (or ``ATTNCONV_CACHE``) is a file.
    """
    names = tuple(NLTK_ZIPS) if names is None else tuple(names)
    unknown = [n for n in names if n not in NLTK_ZIPS]
    if unknown:
        raise ValueError(f"names must be among {tuple(NLTK_ZIPS)}, got {unknown}")
    url = nltk_url() if url is None else check_nltk_template(url, "url")
    sums = nltk_md5s(NLTK_ZIPS)
    download_limits()  # every setting is checked before the first zip is fetched
    folder = ensure_cache_folder(cached_corpora_dir() if dest is None else dest)
    for name in names:
        address = url.format(name=name)
        try:  # an md5 mismatch (RuntimeError) is raised as it is: the bad download has been discarded
            fetch_checked(address, folder / f"{name}.zip", sums[name], progress=progress)
        except FileNotFoundError as err:  # offline, refused, an error page, stalled, too slow
            raise FileNotFoundError(f"{err}; put the NLTK zips in {folder} by hand "
                                    f"(python -m nltk.downloader -d DIR {name}) or set ATTNCONV_DATA") from err
    return folder


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m attnconv.data.nltk_zips", description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help=f"zips to fetch (default: all of {', '.join(NLTK_ZIPS)})")
    parser.add_argument("--dest", default=None, help=f"folder (default: {cached_corpora_dir()})")
    args = parser.parse_args(argv)
    return run_fetch_command(parser.prog, lambda: download_corpora(args.names or None, args.dest, progress=True),
                             "zips")


if __name__ == "__main__":
    raise SystemExit(main())
