"""A local stand-in for the data sets' download servers: a tiny CIFAR-10 archive in the official python format
and sample NLTK zips, served over HTTP on 127.0.0.1, with the environment variables that point the library at
them. Nothing here reaches the network."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import http.server
import threading
from pathlib import Path

from attnconv.data.nltk_zips import NLTK_ZIPS
from attnconv.data.sample_text import write_sample_corpora

from .cifar_fixtures import tiny_arrays, write_official_archive


def _md5(path: Path) -> str:
    return hashlib.md5(path.read_bytes()).hexdigest()


def build_mirror(folder: Path, n_train: int = 300, n_test: int = 150) -> dict[str, str]:
    """Write the served files into ``folder``; returns the md5 sums (``cifar10`` and one per corpus)."""
    folder.mkdir(parents=True, exist_ok=True)
    arrays = tiny_arrays(n_train, n_test)
    sums = {"cifar10": write_official_archive(folder / "cifar-10-python.tar.gz", arrays)}
    write_sample_corpora(folder, sentences_per_file=20)
    for name in NLTK_ZIPS:
        sums[name] = _md5(folder / f"{name}.zip")
    return sums


@contextlib.contextmanager
def serve(folder: Path, sums: dict[str, str], requests: list[str] | None = None):
    """Serve ``folder`` on 127.0.0.1; yields the environment variables that send every download there.

    ``requests``, when given, receives the path of every request, in order (``/cifar-10-python.tar.gz``)."""

    class Handler(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def send_head(self):
            if requests is not None:
                requests.append(self.path)
            return super().send_head()

    handler = functools.partial(Handler, directory=str(folder))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{httpd.server_address[1]}"
    try:
        yield {"ATTNCONV_CIFAR10_URL": f"{base}/cifar-10-python.tar.gz", "ATTNCONV_CIFAR10_MD5": sums["cifar10"],
               "ATTNCONV_NLTK_URL": f"{base}/{{name}}.zip",
               "ATTNCONV_NLTK_MD5": ",".join(f"{n}={sums[n]}" for n in NLTK_ZIPS)}
    finally:
        httpd.shutdown()
        httpd.server_close()
