"""Where local copies of the data sets live."""

from __future__ import annotations

import os
from pathlib import Path

import pooch

ENV_VAR = "ATTNCONV_DATA"
CACHE_ENV_VAR = "ATTNCONV_CACHE"


def data_root() -> Path | None:
    """The folder named by the ``ATTNCONV_DATA`` environment variable, or ``None`` when it is unset.

    Raises:
        FileNotFoundError: the variable is set but names no existing folder.
    """
    value = os.environ.get(ENV_VAR, "").strip()
    if not value:
        return None
    root = Path(value).expanduser()
    if not root.is_dir():
        raise FileNotFoundError(f"{ENV_VAR}={value!r} is set but is not a folder; unset it or point it at the data")
    return root


def display_path(path: str | os.PathLike) -> str:
    """``path`` as a reader may see it: under ``$ATTNCONV_DATA`` or the cache folder it is written relative to
    that folder (``$ATTNCONV_DATA/cifar10-jpeg``), under the home folder as ``~/...``; no machine's layout leaks
    into a printed description or a committed record."""
    path = Path(path).expanduser()
    roots = []
    try:
        root = data_root()
    except FileNotFoundError:
        root = None
    if root is not None:
        roots.append((root, f"${ENV_VAR}"))
    roots += [(default_cache_dir(), "<cache>"), (Path.home(), "~")]
    for base, name in roots:
        try:
            rel = path.resolve().relative_to(base.resolve())
        except (ValueError, OSError):
            continue
        return name if str(rel) == "." else f"{name}/{rel.as_posix()}"
    return str(path)


def default_cache_dir() -> Path:
    """Where downloads and decoded arrays are kept: ``$ATTNCONV_CACHE``, else the user cache folder."""
    value = os.environ.get(CACHE_ENV_VAR, "").strip()
    return Path(value).expanduser() if value else Path(pooch.os_cache("attnconv"))
