"""Where the book's committed records live: the ``results/`` folder, found the same way wherever a chapter runs.

The chapters read measured figures (benchmarks, training runs) from ``results/``. A chapter can run in three
places, and :func:`results_dir` finds the records in each:

1. ``$ATTNCONV_RESULTS``, when set: a folder chosen by hand, and what the course's grader hands the sandboxed
   kernel (so an exercise reads the grader's records, wherever the notebook sits);
2. the checkout's ``results/`` folder, when ``attnconv`` is imported from a checkout (``src/attnconv`` beside
   ``pyproject.toml``): the book's build and the tests read the live records, never a stale copy;
3. the copy installed with the package (``attnconv/_records``, written by the wheel's build from ``results/``):
   what a Colab reader has after the first cell's ``pip install``, with no repository around the notebook.

Only the record files travel with the package (``.json``, ``.jsonl``, ``.md``, ``.npz``, 6 MB in all); no
checkpoint does.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["RECORD_SUFFIXES", "RESULTS_ENV_VAR", "results_dir", "checkout_results", "packaged_results"]

RESULTS_ENV_VAR = "ATTNCONV_RESULTS"
RECORD_SUFFIXES = (".json", ".jsonl", ".md", ".npz")
_PACKAGE = Path(__file__).resolve().parent


def checkout_results() -> Path | None:
    """``results/`` of the checkout this package is imported from, or ``None`` (an installed copy)."""
    top = _PACKAGE.parents[1]
    if _PACKAGE.parent.name == "src" and (top / "pyproject.toml").is_file() and (top / "results").is_dir():
        return top / "results"
    return None


def packaged_results() -> Path | None:
    """The records installed with the package (``attnconv/_records``), or ``None`` when there are none."""
    folder = _PACKAGE / "_records"
    return folder if folder.is_dir() else None


def results_dir() -> Path:
    """The folder of committed records: ``$ATTNCONV_RESULTS``, else the checkout's, else the installed copy.

    Raises:
        FileNotFoundError: ``$ATTNCONV_RESULTS`` names no folder, or no records are reachable at all (an
            installation built without them); the message says how to get them.
    """
    value = os.environ.get(RESULTS_ENV_VAR, "").strip()
    if value:
        folder = Path(value).expanduser()
        if not folder.is_dir():
            raise FileNotFoundError(f"{RESULTS_ENV_VAR}={value!r} is set but is not a folder; unset it or point it "
                                    "at a copy of the book's results/ folder")
        return folder
    for folder in (checkout_results(), packaged_results()):
        if folder is not None:
            return folder
    raise FileNotFoundError("this installation of attnconv holds no committed records: install it from the "
                            "repository (pip install 'attnconv @ git+https://github.com/attnconv/attnconv') or set "
                            f"{RESULTS_ENV_VAR} to a copy of its results/ folder")
