"""A folder of ``.npy`` arrays written atomically: decode a data set once, reload it in a fraction of a second."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np

__all__ = ["load_arrays", "save_arrays"]

_META = "meta.json"


def save_arrays(folder: Path, arrays: dict[str, np.ndarray], meta: dict) -> None:
    """Write ``arrays`` as ``<name>.npy`` plus ``meta.json`` into ``folder``, all or nothing.

    The files are written into a temporary sibling folder that is renamed to ``folder`` at the end, so a
    crash or an exception leaves either the complete folder or no folder at all.
    """
    folder = Path(folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", suffix=".tmp", dir=folder.parent))
    try:
        for name, array in arrays.items():
            np.save(tmp / f"{name}.npy", np.ascontiguousarray(array), allow_pickle=False)
        (tmp / _META).write_text(json.dumps(meta, indent=1))
        try:
            os.rename(tmp, folder)
        except OSError:
            if not (folder / _META).is_file():  # not a concurrent writer finishing first: a real failure
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def load_arrays(folder: Path, names: tuple[str, ...]) -> tuple[dict[str, np.ndarray], dict] | None:
    """The arrays and metadata saved by :func:`save_arrays`, or ``None`` when ``folder`` holds no complete copy."""
    folder = Path(folder)
    if not (folder / _META).is_file() or not all((folder / f"{n}.npy").is_file() for n in names):
        return None
    meta = json.loads((folder / _META).read_text())
    return {n: np.load(folder / f"{n}.npy", allow_pickle=False) for n in names}, meta
