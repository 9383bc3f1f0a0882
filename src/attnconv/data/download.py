"""Whether a chapter may download its data, and from where.

The book build and the tests stay offline: nothing is fetched unless the reader allows it. A reader allows it by
running in Google Colab (which has the network and no local copy), or anywhere with ``ATTNCONV_DOWNLOAD=1``;
``ATTNCONV_DOWNLOAD=0`` forbids it even in Colab.

Every address can be replaced by an environment variable, for a mirror or a local test server:

- ``ATTNCONV_CIFAR10_URL``: the official python-format archive (a mirror of it has the official md5);
  ``ATTNCONV_CIFAR10_MD5`` names another archive in the same format, which may then hold any number of images
  (a test archive does);
- ``ATTNCONV_NLTK_URL``: a template with ``{name}`` for the NLTK corpus zips (their md5 sums stay NLTK's
  unless ``ATTNCONV_NLTK_MD5`` gives ``name=md5`` pairs separated by commas).
"""

from __future__ import annotations

import os
import sys

__all__ = ["DOWNLOAD_ENV_VAR", "cifar10_md5", "cifar10_url", "in_colab", "mirror_in_use", "nltk_md5s",
           "nltk_url", "prepare_data", "reader_may_download"]

DOWNLOAD_ENV_VAR = "ATTNCONV_DOWNLOAD"
CIFAR10_OFFICIAL_URL = "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz"
NLTK_OFFICIAL_URL = "https://raw.githubusercontent.com/nltk/nltk_data/gh-pages/packages/corpora/{name}.zip"


def in_colab() -> bool:
    """True inside Google Colab (its ``google.colab`` module is imported by every Colab kernel)."""
    return "google.colab" in sys.modules


def reader_may_download() -> bool:
    """True when the chapters may fetch data: ``ATTNCONV_DOWNLOAD=1``, or Colab unless ``ATTNCONV_DOWNLOAD=0``.

    Raises:
        ValueError: ``ATTNCONV_DOWNLOAD`` is set to something other than ``0`` or ``1``.
    """
    value = os.environ.get(DOWNLOAD_ENV_VAR, "").strip()
    if value not in ("", "0", "1"):
        raise ValueError(f"{DOWNLOAD_ENV_VAR} must be 0 or 1 (or unset), got {value!r}")
    return value == "1" or (value == "" and in_colab())


def cifar10_url() -> str:
    """``$ATTNCONV_CIFAR10_URL``, else the official archive's address."""
    return os.environ.get("ATTNCONV_CIFAR10_URL", "").strip() or CIFAR10_OFFICIAL_URL


def mirror_in_use() -> bool:
    """True when ``ATTNCONV_CIFAR10_MD5`` names another archive than the official one."""
    return bool(os.environ.get("ATTNCONV_CIFAR10_MD5", "").strip())


def cifar10_md5(official: str) -> str:
    """The md5 the archive must have: ``$ATTNCONV_CIFAR10_MD5``, else ``official``.

    Raises:
        ValueError: ``ATTNCONV_CIFAR10_MD5`` is not 32 hexadecimal digits.
    """
    value = os.environ.get("ATTNCONV_CIFAR10_MD5", "").strip().lower()
    if value and (len(value) != 32 or any(c not in "0123456789abcdef" for c in value)):
        raise ValueError(f"ATTNCONV_CIFAR10_MD5 must be 32 hexadecimal digits, got {value!r}")
    return value or official


def nltk_url() -> str:
    """``$ATTNCONV_NLTK_URL`` (a template with ``{name}``), else NLTK's own address.

    Raises:
        ValueError: the template has no ``{name}``.
    """
    value = os.environ.get("ATTNCONV_NLTK_URL", "").strip() or NLTK_OFFICIAL_URL
    if "{name}" not in value:
        raise ValueError(f"ATTNCONV_NLTK_URL must contain {{name}}, got {value!r}")
    return value


def nltk_md5s(official: dict[str, str]) -> dict[str, str]:
    """``official`` with the pairs of ``$ATTNCONV_NLTK_MD5`` (``brown=abc...,rte=def...``) replacing theirs.

    Raises:
        ValueError: a pair is malformed or names a corpus not in ``official``.
    """
    sums = dict(official)
    for pair in filter(None, (p.strip() for p in os.environ.get("ATTNCONV_NLTK_MD5", "").split(","))):
        name, sep, md5 = pair.partition("=")
        if not sep or name not in official or len(md5) != 32:
            raise ValueError(f"ATTNCONV_NLTK_MD5 must be name=md5 pairs for names among {tuple(official)}, "
                             f"got {pair!r}")
        sums[name] = md5
    return sums


def prepare_data(*what: str, progress: bool = False, corpora: tuple[str, ...] | None = None) -> str:
    """Fetch ``what`` (``"cifar10"``, ``"nltk"``; default both) into the cache when the reader allows downloads.

    ``corpora`` names the NLTK zips that ``"nltk"`` fetches (default: all of them); chapter 5 needs ``("brown",)``.

    The chapters call this once; without permission (the book build, the tests) it fetches nothing and the
    chapters read whatever local copy there is, or fall back to stand-in data. A copy already in the cache with the
    right md5 is not fetched again. Returns a sentence saying what happened, for the chapter to print.

    Raises:
        ValueError: an unknown name in ``what``.
        RuntimeError, FileNotFoundError: a permitted download failed (md5 mismatch, offline).
    """
    names = what or ("cifar10", "nltk")
    unknown = [w for w in names if w not in ("cifar10", "nltk")]
    if unknown:
        raise ValueError(f"what must be among ('cifar10', 'nltk'), got {unknown}")
    if not reader_may_download():
        return "Downloads are off (the book build and the tests stay offline): local copies only."
    from .cifar10 import download_official
    from .nltk_zips import download_corpora

    done = []
    if "cifar10" in names:
        done.append(f"CIFAR-10 archive at {download_official(progress=progress)}")
    if "nltk" in names:
        done.append(f"NLTK zips in {download_corpora(corpora, progress=progress)}")
    return "Downloaded or found in the cache (md5-checked): " + "; ".join(done) + "."
