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

An address is ``http://``, ``https://`` or ``file:///absolute/path`` (a local mirror); anything else is refused,
naming the setting, before anything is fetched, and so is an md5 that is not 32 hexadecimal digits.

A download never hangs: it gives up when no byte has arrived for ``ATTNCONV_DOWNLOAD_TIMEOUT`` seconds (default
60), when the server's answer (its status line and headers) is not complete within that time, and when the
average rate over a window (30 s, or the timeout when that is shorter) falls below ``ATTNCONV_DOWNLOAD_MIN_RATE``
bytes per second (default 1024; at 1 KiB/s the CIFAR-10 archive would take two days; 0 turns the floor off). Above
the floor, a rate at which the rest of the file would take more than an hour is said once on stderr, with the
time it would take. Progress goes to stderr: a bar in a terminal or a notebook, a short line every 30 s when
``progress=True`` and stderr is a file or a pipe, nothing otherwise (``progress=False``, or the default where
nobody watches). The file is written under a temporary name next to its destination and renamed
only once its md5 has been checked, so a failed or interrupted download leaves nothing behind.
"""

from __future__ import annotations

import hashlib
import http.client
import math
import os
import socket
import string
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

__all__ = ["DOWNLOAD_ENV_VAR", "MIN_RATE_ENV_VAR", "TIMEOUT_ENV_VAR", "check_settings", "check_url",
           "cifar10_md5", "cifar10_url", "download_limits", "fetch_checked", "in_colab", "mirror_in_use",
           "nltk_md5s", "nltk_url", "prepare_data", "reader_may_download", "run_fetch_command"]

DOWNLOAD_ENV_VAR = "ATTNCONV_DOWNLOAD"
CIFAR10_OFFICIAL_URL = "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz"
NLTK_OFFICIAL_URL = "https://raw.githubusercontent.com/nltk/nltk_data/gh-pages/packages/corpora/{name}.zip"
TIMEOUT_ENV_VAR = "ATTNCONV_DOWNLOAD_TIMEOUT"
MIN_RATE_ENV_VAR = "ATTNCONV_DOWNLOAD_MIN_RATE"
DEFAULT_TIMEOUT_S = 60.0
DEFAULT_MIN_RATE = 1024.0  # bytes per second
RATE_WINDOW_S = 30.0
SLOW_NOTE_S = 3600.0  # a download whose rest would take longer than this is said to, once
LINE_EVERY_S = 30.0  # progress lines when stderr is not a terminal
_CHUNK = 1 << 16


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
    """``$ATTNCONV_CIFAR10_URL``, else the official archive's address.

    Raises:
        ValueError: the address is not ``http(s)://host/...`` or ``file:///path``.
    """
    value = os.environ.get("ATTNCONV_CIFAR10_URL", "").strip()
    return check_url(value, "ATTNCONV_CIFAR10_URL") if value else CIFAR10_OFFICIAL_URL


def check_url(url: str, setting: str = "url") -> str:
    """``url`` when it is ``http://host/...``, ``https://host/...`` or ``file:///absolute/path``.

    Raises:
        ValueError: anything else (no scheme, another scheme, no host, a port that is not a number, a relative
            file path, a space or a control character); the message names ``setting``.
    """
    expected = (f"{setting} must be an http://, https:// or file:///absolute/path address "
                f"(e.g. https://example.org/data/...), got {url!r}")
    if any(c.isspace() or ord(c) < 32 or ord(c) == 127 for c in url):
        raise ValueError(f"{expected}: it holds a space or a control character (write a space as %20)")
    try:
        parts = urllib.parse.urlsplit(url)
        parts.port  # a port that is not a number, or out of range, raises here rather than at the first request
    except ValueError as err:  # "Invalid IPv6 URL", "Port could not be cast to integer value", ...
        raise ValueError(f"{expected} ({err})") from None
    if parts.scheme in ("http", "https") and parts.hostname:
        return url
    if parts.scheme == "file" and parts.netloc in ("", "localhost") and parts.path.startswith("/"):
        return url
    raise ValueError(expected)


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
    value = os.environ.get("ATTNCONV_NLTK_URL", "").strip()
    return check_nltk_template(value, "ATTNCONV_NLTK_URL") if value else NLTK_OFFICIAL_URL


def check_nltk_template(template: str, setting: str = "url") -> str:
    """``template`` when its one placeholder is ``{name}`` and it gives a valid address (:func:`check_url`).

    Raises:
        ValueError: no ``{name}``, another placeholder (``{corpus}``, ``{}``), stray braces or a bad address; the
            message names ``setting``.
    """
    expected = f"{setting} must be an address template whose only placeholder is {{name}} (the corpus, e.g. brown)"
    try:
        fields = [(f, conv, spec) for _, f, spec, conv in string.Formatter().parse(template) if f is not None]
    except ValueError as err:  # a lone { or }
        raise ValueError(f"{expected}, got {template!r} ({err})") from None
    others = sorted({"{" + f + (f"!{conv}" if conv else "") + (f":{spec}" if spec else "") + "}"
                     for f, conv, spec in fields if (f, conv, spec) != ("name", None, "")})
    if others or not fields:
        found = f": it has {', '.join(others)}" if others else ": it has no {name}"
        raise ValueError(f"{expected}, got {template!r}{found}")
    check_url(template.format(name="brown"), setting)
    return template


def nltk_md5s(official: dict[str, str]) -> dict[str, str]:
    """``official`` with the pairs of ``$ATTNCONV_NLTK_MD5`` (``brown=abc...,rte=def...``) replacing theirs.

    Raises:
        ValueError: a pair is malformed or names a corpus not in ``official``.
    """
    sums = dict(official)
    for pair in filter(None, (p.strip() for p in os.environ.get("ATTNCONV_NLTK_MD5", "").split(","))):
        name, sep, md5 = pair.partition("=")
        name, md5 = name.strip(), md5.strip().lower()
        if not sep or name not in official or not _is_md5(md5):
            raise ValueError(f"ATTNCONV_NLTK_MD5 must be name=md5 pairs (md5: 32 hexadecimal digits) for names "
                             f"among {tuple(official)}, got {pair!r}")
        sums[name] = md5
    return sums


def _is_md5(value: str) -> bool:
    return len(value) == 32 and all(c in "0123456789abcdef" for c in value)


def download_limits() -> tuple[float, float]:
    """``(timeout, min_rate)``: seconds without a byte before a download gives up (``$ATTNCONV_DOWNLOAD_TIMEOUT``,
    default 60) and the floor on the average rate in bytes per second (``$ATTNCONV_DOWNLOAD_MIN_RATE``, default
    1024; 0 turns it off).

    Raises:
        ValueError: a variable is not a number, or the timeout is not positive, or the rate is negative.
    """
    limits = []
    for var, default, least in ((TIMEOUT_ENV_VAR, DEFAULT_TIMEOUT_S, "a positive number of seconds"),
                                (MIN_RATE_ENV_VAR, DEFAULT_MIN_RATE, "a number of bytes per second, 0 or more")):
        text = os.environ.get(var, "").strip()
        try:
            value = float(text) if text else default
        except ValueError:
            value = math.nan
        if not math.isfinite(value) or value < 0 or (value == 0 and var == TIMEOUT_ENV_VAR):
            raise ValueError(f"{var} must be {least}, got {text!r}")
        limits.append(value)
    return limits[0], limits[1]


def check_settings(*what: str) -> None:
    """Read every setting the downloads of ``what`` (``"cifar10"``, ``"nltk"``; default both) use, so that a wrong
    one is reported before anything is fetched.

    Raises:
        ValueError: an address, a template, an md5 or a limit has the wrong form; the message names the setting.
        NotADirectoryError, OSError: ``ATTNCONV_CACHE`` is not a folder that can be created.
    """
    from .nltk_zips import NLTK_ZIPS
    from .paths import ensure_cache_folder

    names = what or ("cifar10", "nltk")
    download_limits()
    if "cifar10" in names:
        cifar10_url()
        cifar10_md5("0" * 32)
    if "nltk" in names:
        nltk_url()
        nltk_md5s(NLTK_ZIPS)
    ensure_cache_folder()


def _size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"


def _duration(seconds: float) -> str:
    for unit, span in (("days", 86400), ("hours", 3600), ("minutes", 60)):
        if seconds >= span:
            return f"{seconds / span:.1f} {unit}"
    return f"{seconds:.0f} s"


def _reason(err: BaseException, timeout: float) -> str:
    if isinstance(err, urllib.error.HTTPError):
        return f"HTTP {err.code} {err.reason}"
    cause = err.reason if isinstance(err, urllib.error.URLError) else err
    if isinstance(cause, TimeoutError):
        return f"no answer within {timeout:g} s; set {TIMEOUT_ENV_VAR} to wait longer"
    return str(cause) if isinstance(cause, str) else f"{type(cause).__name__}: {cause}"


def _watched(base: type, sockets: list) -> type:
    """``base`` (an ``http.client`` connection class) that appends each socket it opens to ``sockets``."""

    class Watched(base):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)

            def create_connection(*a, **k):
                sock = socket.create_connection(*a, **k)
                sockets.append(sock)
                return sock

            self._create_connection = create_connection

    return Watched


class _WatchedHTTP(urllib.request.HTTPHandler):
    def __init__(self, sockets: list) -> None:
        super().__init__()
        self._sockets = sockets

    def http_open(self, req):
        return self.do_open(_watched(http.client.HTTPConnection, self._sockets), req)


class _WatchedHTTPS(urllib.request.HTTPSHandler):
    def __init__(self, context, sockets: list) -> None:
        super().__init__(context=context)
        self._sockets = sockets

    def https_open(self, req):
        return self.do_open(_watched(http.client.HTTPSConnection, self._sockets), req, context=self._context)


def _opener(sockets: list | None = None) -> urllib.request.OpenerDirector:
    """urllib's opener (proxies from the environment, redirects, ``file:``), with certifi's certificates when
    they are installed (as requests uses them); the sockets it opens are appended to ``sockets``."""
    import ssl
    try:
        import certifi
        context = ssl.create_default_context(cafile=certifi.where())
    except ImportError:  # pragma: no cover - certifi comes with requests
        context = ssl.create_default_context()
    sockets = [] if sockets is None else sockets
    return urllib.request.build_opener(_WatchedHTTP(sockets), _WatchedHTTPS(context, sockets))


def _open_within(request: urllib.request.Request, timeout: float):
    """``urlopen(request)``, given up when the answer's status line and headers are not complete within
    ``timeout`` seconds (a server may trickle them, each byte in time for the socket's own timeout): the sockets
    are shut, and the error says so."""
    sockets: list = []
    lock, state = threading.Lock(), {"done": False, "expired": False}

    def expire() -> None:
        with lock:
            if state["done"]:
                return
            state["expired"] = True
            for sock in sockets:
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    timer = threading.Timer(timeout, expire)
    timer.daemon = True
    timer.start()
    try:
        response = _opener(sockets).open(request, timeout=timeout)
    except Exception as err:
        if state["expired"]:
            raise _HeadersTooSlow(timeout) from err
        raise
    finally:
        timer.cancel()
        with lock:
            state["done"] = True
    if state["expired"]:  # expired between the answer and the lock: its socket is shut
        response.close()
        raise _HeadersTooSlow(timeout)
    return response


class _HeadersTooSlow(Exception):
    def __init__(self, timeout: float) -> None:
        super().__init__(f"the server's answer was not complete within {timeout:g} s (its headers trickled in); "
                         f"set {TIMEOUT_ENV_VAR} to wait longer")


def _interactive() -> bool:
    """True when someone watches stderr: a terminal, or a Jupyter kernel (Colab included)."""
    try:
        if sys.stderr.isatty():
            return True
    except (AttributeError, ValueError):  # no stderr, or a closed one
        return False
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None and hasattr(ipython, "get_ipython") else None
    return getattr(shell, "kernel", None) is not None or in_colab()


class _Lines:
    """Progress as a short line on stderr every ``LINE_EVERY_S`` seconds, for a log file or a pipe."""

    def __init__(self, name: str, total: int | None) -> None:
        self.name, self.total, self.done = name, total, 0
        self.start = self.last = time.monotonic()

    def update(self, n: int) -> None:
        self.done += n
        now = time.monotonic()
        if now - self.last >= LINE_EVERY_S:
            self.last = now
            of = f" of {_size(self.total)} ({100 * self.done / self.total:.0f}%)" if self.total else ""
            print(f"{self.name}: {_size(self.done)}{of}, {_size(self.done / (now - self.start))}/s",
                  file=sys.stderr, flush=True)

    def __enter__(self) -> "_Lines":
        return self

    def __exit__(self, kind, *_) -> None:
        if kind is None and self.done == (self.total or self.done):  # complete: a short read is an error
            print(f"{self.name}: {_size(self.done)} in {_duration(time.monotonic() - self.start)}",
                  file=sys.stderr, flush=True)


def _progress(progress: bool | None, name: str, total: int | None):
    """A bar (tqdm) where someone watches, lines into a file or pipe when asked for, else nothing."""
    from tqdm.auto import tqdm

    watched = _interactive()
    if progress is True and not watched:
        return _Lines(name, total)
    return tqdm(total=total, unit="B", unit_scale=True, unit_divisor=1024, desc=name, file=sys.stderr,
                disable=not (watched if progress is None else progress))


def fetch_checked(url: str, dest: str | os.PathLike, md5: str | None, *, progress: bool | None = None,
                  setting: str = "url", label: str | None = None) -> Path:
    """Download ``url`` to ``dest`` unless a copy with the md5 ``md5`` is there (any copy when ``md5`` is None).

    The bytes go to a temporary file next to ``dest``, renamed to ``dest`` once the md5 matches; any failure
    removes it. The limits of :func:`download_limits` apply. ``progress``: True shows a bar (short lines every
    30 s when stderr is a file or a pipe), False nothing, None (the default) a bar in a terminal or a notebook only.
    ``label`` names the file in messages (default: ``dest``'s name).

    Raises:
        ValueError: ``url`` or ``md5`` has the wrong form (the message names ``setting`` or ``md5``), or a limit.
        RuntimeError: the download failed its md5 check.
        FileNotFoundError: the download failed: offline, refused, an HTTP error, no byte for the timeout, headers
            not complete within the timeout, a rate under the floor, a connection that closed early. The message
            names the address.
        NotADirectoryError, OSError: ``dest``'s folder cannot be created.
    """
    from .paths import ensure_cache_folder

    check_url(url, setting)
    if md5 is not None:
        md5 = md5.strip().lower()
        if not _is_md5(md5):
            raise ValueError(f"md5 must be 32 hexadecimal digits, got {md5!r}")
    timeout, min_rate = download_limits()
    dest = Path(dest).expanduser()
    ensure_cache_folder(dest.parent)
    if dest.is_file() and (md5 is None or _file_md5(dest) == md5):
        return dest
    fd, tmp_name = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".part", dir=dest.parent)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            got = _stream(url, out, label or dest.name, timeout, min_rate, progress)
        if md5 is not None and got != md5:
            raise RuntimeError(f"{label or dest.name} from {url} failed its md5 check (expected {md5}, got {got}); "
                               f"the download was discarded; try again")
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)
    return dest


def _file_md5(path: Path) -> str:
    digest = hashlib.md5()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _stream(url: str, out, name: str, timeout: float, min_rate: float, progress: bool | None) -> str:
    """Copy ``url`` into the open file ``out`` within the limits; returns the md5 of what was written."""
    failed = f"could not download {name} from {url}"
    request = urllib.request.Request(url, headers={"User-Agent": "attnconv (python urllib)"})
    try:
        response = _open_within(request, timeout)
    except _HeadersTooSlow as err:
        raise FileNotFoundError(f"{failed}: {err}") from err
    except Exception as err:  # offline, refused, an HTTP error, a missing file: address or server at fault
        raise FileNotFoundError(f"{failed} ({_reason(err, timeout)})") from err
    digest = hashlib.md5()
    window = min(RATE_WINDOW_S, timeout)
    with response:
        length = response.headers.get("Content-Length")
        total = int(length) if length and length.isdigit() else None
        read = getattr(response, "read1", response.read)  # what has arrived, not a full chunk: the rate is seen
        done = 0
        start, start_done = time.monotonic(), 0
        noted = False
        with _progress(progress, name, total) as bar:
            while True:
                try:
                    chunk = read(_CHUNK)
                except TimeoutError as err:
                    raise FileNotFoundError(f"{failed}: no data for {timeout:g} s after {_size(done)}"
                                            f"{f' of {_size(total)}' if total else ''}; set {TIMEOUT_ENV_VAR} "
                                            f"to wait longer") from err
                except Exception as err:  # a reset connection, a broken chunked encoding
                    raise FileNotFoundError(f"{failed}: the connection broke after {_size(done)} "
                                            f"({type(err).__name__}: {err})") from err
                if not chunk:
                    break
                out.write(chunk)
                digest.update(chunk)
                done += len(chunk)
                bar.update(len(chunk))
                elapsed = time.monotonic() - start
                if elapsed >= window:
                    rate = (done - start_done) / elapsed
                    if rate < min_rate:
                        per_byte = 1 / max(rate, 1e-9)
                        left = (f"the remaining {_size(total - done)} would take {_duration((total - done) * per_byte)}"
                                if total else f"each MiB would take {_duration((1 << 20) * per_byte)}")
                        raise FileNotFoundError(
                            f"{failed}: {_size(rate)}/s over the last {elapsed:.0f} s, below the floor of "
                            f"{_size(min_rate)}/s ({MIN_RATE_ENV_VAR}); at that rate {left}; try again later or "
                            f"another mirror")
                    if not noted and total and (total - done) / rate > SLOW_NOTE_S:
                        noted = True
                        print(f"{name}: {_size(rate)}/s from {url}; at that rate the remaining "
                              f"{_size(total - done)} would take {_duration((total - done) / rate)} (interrupt to "
                              f"stop; {MIN_RATE_ENV_VAR} sets the rate below which a download gives up)",
                              file=sys.stderr, flush=True)
                    start, start_done = time.monotonic(), done
    if total is not None and done != total:
        raise FileNotFoundError(f"{failed}: the connection closed after {_size(done)} of {_size(total)}")
    return digest.hexdigest()


def prepare_data(*what: str, progress: bool | None = None, corpora: tuple[str, ...] | None = None) -> str:
    """Fetch ``what`` (``"cifar10"``, ``"nltk"``; default both) into the cache when the reader allows downloads.

    ``corpora`` names the NLTK zips that ``"nltk"`` fetches (default: all of them); chapter 5 needs ``("brown",)``.
    ``progress`` as in :func:`fetch_checked`: by default a bar in a notebook (Colab) or a terminal, else nothing.

    The chapters call this once; without permission (the book build, the tests) it fetches nothing and the
    chapters read whatever local copy there is, or fall back to stand-in data. A copy already in the cache with the
    right md5 is not fetched again. Returns a sentence saying what happened, for the chapter to print.

    Raises:
        ValueError: an unknown name in ``what``, or a setting of the wrong form (:func:`check_settings`).
        NotADirectoryError: ``ATTNCONV_CACHE`` names a file.
        RuntimeError, FileNotFoundError: a permitted download failed (md5 mismatch; offline, stalled, too slow).
    """
    names = what or ("cifar10", "nltk")
    unknown = [w for w in names if w not in ("cifar10", "nltk")]
    if unknown:
        raise ValueError(f"what must be among ('cifar10', 'nltk'), got {unknown}")
    if not reader_may_download():
        return "Downloads are off (the book build and the tests stay offline): local copies only."
    check_settings(*names)  # a wrong address, md5 or cache folder is reported before anything is fetched
    from .cifar10 import download_official
    from .nltk_zips import download_corpora

    done = []
    if "cifar10" in names:
        done.append(f"CIFAR-10 archive at {download_official(progress=progress)}")
    if "nltk" in names:
        done.append(f"NLTK zips in {download_corpora(corpora, progress=progress)}")
    return "Downloaded or found in the cache (md5-checked): " + "; ".join(done) + "."


def run_fetch_command(prog: str, fetch, what: str) -> int:
    """A download command's ending: print what ``fetch()`` returns, or one line for a setting, a bad folder, an
    md5 mismatch or no network (exit 2), or for an interrupt (exit 130, what was fetched is kept)."""
    import sys

    try:
        print(fetch())
    except (ValueError, RuntimeError, OSError) as err:
        print(f"{prog}: {' '.join(str(err).split()) or type(err).__name__}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{prog}: interrupted; the {what} already fetched are kept, run it again for the rest", file=sys.stderr)
        return 130
    return 0
