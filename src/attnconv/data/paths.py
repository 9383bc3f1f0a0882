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


def ensure_folder(path: str | os.PathLike, named: str | None = None) -> Path:
    """Create the folder ``path`` (and its parents) unless it exists; returns it.

    ``named`` says where the path came from (``"ATTNCONV_CACHE='/x'"``, ``"--dest '/x'"``), for the message.

    Raises:
        NotADirectoryError: ``path`` or one of its parents is a file.
        PermissionError, OSError: the folder cannot be created; the message names it.
    """
    path = Path(path).expanduser()
    what = named or f"the folder {str(path)!r}"
    try:
        path.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError) as err:
        blocker = next((p for p in (path, *path.parents) if p.exists() and not p.is_dir()), path)
        raise NotADirectoryError(f"{what} must be a folder, but {blocker} is a file; point it at a folder"
                                 + (" (or unset it)" if named and not named.startswith("-") else "")) from err
    except PermissionError as err:
        raise PermissionError(f"cannot create {what}: permission denied ({err.filename or path})") from err
    except OSError as err:
        raise OSError(f"cannot create {what}: {err.strerror or err}") from err
    return path


def ensure_cache_folder(path: str | os.PathLike | None = None) -> Path:
    """Create ``path`` (default: :func:`default_cache_dir`) like :func:`ensure_folder`; a failure inside the cache
    folder names ``ATTNCONV_CACHE`` when that variable chose it (``ATTNCONV_CACHE`` naming a file, say)."""
    cache = default_cache_dir()
    path = cache if path is None else Path(path).expanduser()
    value = os.environ.get(CACHE_ENV_VAR, "").strip()
    named = None
    if value and (path == cache or cache in path.parents):
        named = f"{CACHE_ENV_VAR}={value!r}"
    return ensure_folder(path, named)
