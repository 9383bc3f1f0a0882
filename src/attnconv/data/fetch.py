"""Fetching every data set the book reads into one folder, and naming what is present.

``python -m attnconv.data.fetch --dest DIR`` downloads the official CIFAR-10 archive (md5-checked) to
``DIR/cifar-10-python.tar.gz`` and the NLTK corpus zips (each md5-checked) to ``DIR/nltk/corpora/``; with
``ATTNCONV_DATA=DIR`` the chapters then read them. A file already there with the right hash is not fetched again.

Two more things a build needs, printed without fetching anything:

- ``--key``: one name for the published checksums of every file, for a CI cache that must change when they do;
- ``--fingerprint``: which data a build would read here (file names and sizes), so that a build whose data
  appeared or changed can throw away notebook outputs that were computed without it.

A wrong setting (an address, an md5, ``--dest`` naming a file), a failed download (offline, stalled, too slow,
an md5 mismatch) ends the command in one line with exit code 2, like the training command's mistakes.
"""

from __future__ import annotations

import argparse
import hashlib
import os
from pathlib import Path

from .cifar10 import ARCHIVE_NAME, CIFAR10_MD5, EXTRACTED_NAME
from .download import (cifar10_md5, cifar10_url, download_limits, fetch_checked, nltk_md5s, nltk_url,
                       run_fetch_command)
from .nltk_zips import NLTK_ZIPS, download_corpora
from .paths import data_root, default_cache_dir, ensure_folder

__all__ = ["checksum_key", "data_fingerprint", "fetch_all"]


def checksum_key() -> str:
    """A short hash of the md5 sums every fetched file must have (CIFAR-10's archive and each NLTK zip)."""
    sums = [f"{ARCHIVE_NAME}:{CIFAR10_MD5}"] + [f"{name}.zip:{md5}" for name, md5 in sorted(NLTK_ZIPS.items())]
    return hashlib.sha256("\n".join(sums).encode()).hexdigest()[:20]


def fetch_all(dest: str | os.PathLike, *, progress: bool | None = None) -> Path:
    """Download CIFAR-10's official archive and every NLTK zip into ``dest``, skipping good copies.

    Returns:
        ``dest``, ready to be ``ATTNCONV_DATA``.

    Raises:
        ValueError: a setting of the wrong form (an address, an md5, a limit); nothing has been fetched.
        NotADirectoryError, OSError: ``dest`` cannot be a folder.
        RuntimeError: a download failed its md5 check (the file is discarded).
        FileNotFoundError: a download failed (offline, refused, stalled, too slow).
    """
    md5 = cifar10_md5(CIFAR10_MD5)  # every setting is checked before anything is fetched
    url = cifar10_url()
    nltk_url()
    nltk_md5s(NLTK_ZIPS)
    download_limits()
    folder = ensure_folder(dest, f"--dest {str(dest)!r}")
    try:  # an md5 mismatch (RuntimeError) is raised as it is: the bad download has been discarded
        fetch_checked(url, folder / ARCHIVE_NAME, md5, progress=progress, setting="ATTNCONV_CIFAR10_URL")
    except FileNotFoundError as err:  # offline, refused, an error page, stalled, too slow
        raise FileNotFoundError(f"{err}; put {ARCHIVE_NAME} in {folder} by hand") from err
    download_corpora(dest=folder / "nltk" / "corpora", progress=progress)
    return folder


def _files(folder: Path, patterns: tuple[str, ...]) -> list[Path]:
    return sorted(p for pattern in patterns for p in folder.glob(pattern) if p.is_file())


def data_fingerprint() -> str:
    """Which data files a build here would find: ``name size`` lines under ``$ATTNCONV_DATA`` and the cache.

    ``"none"`` when there is none. Sizes, not contents: it is computed on every build."""
    lines = []
    try:
        root = data_root()
    except FileNotFoundError:
        root = None
    places = [("data", root)] if root is not None else []
    places.append(("cache", default_cache_dir()))  # cached_corpora_dir() is its nltk/corpora
    patterns = ("cifar10-jpeg/*.zip", ARCHIVE_NAME, f"{EXTRACTED_NAME}/*_batch*", "nltk/corpora/*.zip")
    for name, folder in places:
        if not folder.is_dir():
            continue
        for path in _files(folder, patterns):
            lines.append(f"{name}/{path.relative_to(folder).as_posix()} {path.stat().st_size}")
    return "\n".join(sorted(set(lines))) or "none"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m attnconv.data.fetch", description=__doc__.splitlines()[0])
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--dest", help="folder to download into (then set ATTNCONV_DATA to it)")
    group.add_argument("--key", action="store_true", help="print a hash of the published checksums and exit")
    group.add_argument("--fingerprint", action="store_true", help="print which data files a build would read")
    args = parser.parse_args(argv)
    if args.key:
        print(checksum_key())
    elif args.fingerprint:
        print(data_fingerprint())
    else:
        return run_fetch_command(parser.prog, lambda: fetch_all(args.dest, progress=True), "files")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
