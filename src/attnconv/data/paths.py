"""Where local copies of the data sets live."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pooch

ENV_VAR = "ATTNCONV_DATA"
CACHE_ENV_VAR = "ATTNCONV_CACHE"
DRIVE_MOUNT_ENV_VAR = "ATTNCONV_DRIVE_MOUNT"  # where Google Drive is mounted: /content/drive in Colab
DRIVE_CACHE = Path("attnconv") / "cache"  # the download cache inside MyDrive, when Drive is mounted in Colab


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
    """Where downloads and decoded arrays are kept: ``$ATTNCONV_CACHE``; else, in Colab with Google Drive mounted,
    ``MyDrive/attnconv/cache``, so that a later session or another notebook finds the downloads there; else the
    user cache folder."""
    value = os.environ.get(CACHE_ENV_VAR, "").strip()
    if value:
        return Path(value).expanduser()
    drive = mounted_drive()
    return drive / DRIVE_CACHE if drive is not None else Path(pooch.os_cache("attnconv"))


def drive_mount_point() -> Path:
    """Where Google Drive is mounted in Colab: ``$ATTNCONV_DRIVE_MOUNT``, else ``/content/drive``."""
    return Path(os.environ.get(DRIVE_MOUNT_ENV_VAR, "").strip() or "/content/drive")


def mounted_drive() -> Path | None:
    """The reader's ``MyDrive`` folder when this is Colab and Google Drive is mounted, else ``None``."""
    if "google.colab" not in sys.modules:
        return None
    folder = drive_mount_point() / "MyDrive"
    return folder if folder.is_dir() else None


def mount_drive() -> Path | None:
    """In Colab, mount Google Drive (Colab asks the reader once) and return its ``MyDrive`` folder; elsewhere do
    nothing and return ``None``. Once it is mounted, :func:`default_cache_dir` is on Drive: one download per Drive.
    """
    if "google.colab" not in sys.modules:
        return None
    if mounted_drive() is None:  # mount once; a second call finds MyDrive there
        from google.colab import drive  # only importable in Colab

        drive.mount(str(drive_mount_point()))
    return drive_mount_point() / "MyDrive"


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
