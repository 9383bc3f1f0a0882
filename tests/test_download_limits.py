"""A download fails clearly and never hangs: a silent or trickling server is given up on, wrong settings are
named before anything is fetched, and the fetch commands end in one line with exit code 2. Servers run here on
127.0.0.1; nothing reaches the network."""

from __future__ import annotations

import contextlib
import hashlib
import http.server
import socket
import sys
import threading
import time

import pytest

from attnconv.data import download, fetch, nltk_zips
from attnconv.data.cifar10 import download_official

from .local_mirror import build_mirror, serve

SETTINGS = ("ATTNCONV_DATA", "ATTNCONV_DOWNLOAD", "ATTNCONV_CIFAR10_URL", "ATTNCONV_CIFAR10_MD5",
            "ATTNCONV_NLTK_URL", "ATTNCONV_NLTK_MD5", "ATTNCONV_DOWNLOAD_TIMEOUT", "ATTNCONV_DOWNLOAD_MIN_RATE")


@pytest.fixture
def env(monkeypatch, tmp_path):
    for var in SETTINGS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("ATTNCONV_CACHE", str(tmp_path / "cache"))
    monkeypatch.delitem(sys.modules, "google.colab", raising=False)
    return monkeypatch


@pytest.fixture(scope="module")
def mirror(tmp_path_factory):
    folder = tmp_path_factory.mktemp("mirror")
    sums = build_mirror(folder, n_train=20, n_test=10)
    with serve(folder, sums) as variables:
        yield variables


@contextlib.contextmanager
def slow_server(interval: float | None, length: int = 10_000_000):
    """A server that sends its headers (``Content-Length: length``), then one byte every ``interval`` seconds, or
    nothing at all with ``interval=None``; yields its address."""
    stop = threading.Event()

    class Slow(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Length", str(length))
            self.end_headers()
            self.wfile.flush()
            try:
                while not stop.wait(interval if interval is not None else 0.05):
                    if interval is not None:
                        self.wfile.write(b"x")
                        self.wfile.flush()
            except OSError:  # the client gave up
                pass

        def log_message(self, *args):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Slow)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/cifar-10-python.tar.gz"
    finally:
        stop.set()
        httpd.shutdown()
        httpd.server_close()


@contextlib.contextmanager
def raw_server(answer):
    """A server on 127.0.0.1 that reads a request and hands its socket to ``answer(sock, stop)``; yields its
    address."""
    stop = threading.Event()
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.1)

    def accept():
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            conn.recv(65536)
            threading.Thread(target=_answer, args=(answer, conn, stop), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/cifar-10-python.tar.gz"
    finally:
        stop.set()
        listener.close()


def _answer(answer, conn, stop):
    with conn:
        try:
            answer(conn, stop)
        except OSError:  # the client gave up
            pass


def _allow(env, **settings):
    env.setenv("ATTNCONV_DOWNLOAD", "1")
    for key, value in settings.items():
        env.setenv(key, value)


# 1. A stalled or trickling server: a read timeout, a floor on the rate, nothing half-written left behind.

def test_a_trickling_server_is_given_up_on_with_its_rate(env, tmp_path):
    with slow_server(interval=0.25) as url:  # 4 B/s: 10 MB would take about a month
        _allow(env, ATTNCONV_CIFAR10_URL=url, ATTNCONV_CIFAR10_MD5="0" * 32, ATTNCONV_DOWNLOAD_TIMEOUT="1.5")
        start = time.monotonic()
        with pytest.raises(FileNotFoundError) as caught:
            download.prepare_data("cifar10")
        took = time.monotonic() - start
    message = str(caught.value)
    assert url in message and "B/s over the last" in message and "ATTNCONV_DOWNLOAD_MIN_RATE" in message
    assert "days" in message, message  # what the remaining 10 MB would take at that rate
    assert took < 15, took
    assert not any((tmp_path / "cache").iterdir()), "a partial download must not be kept"


def test_a_silent_server_times_out_and_the_timeout_is_a_setting(env, tmp_path):
    with slow_server(interval=None) as url:
        _allow(env, ATTNCONV_CIFAR10_URL=url, ATTNCONV_CIFAR10_MD5="0" * 32, ATTNCONV_DOWNLOAD_TIMEOUT="1")
        start = time.monotonic()
        with pytest.raises(FileNotFoundError, match=r"could not download CIFAR-10 from http://127\.0\.0\.1:\d+/"
                                                    r".*no data for 1 s.*ATTNCONV_DOWNLOAD_TIMEOUT"):
            download.prepare_data("cifar10")
        assert time.monotonic() - start < 15
    assert not any((tmp_path / "cache").iterdir())
    env.setenv("ATTNCONV_DOWNLOAD_TIMEOUT", "soon")
    with pytest.raises(ValueError, match="ATTNCONV_DOWNLOAD_TIMEOUT must be a positive number"):
        download.prepare_data("cifar10")
    env.setenv("ATTNCONV_DOWNLOAD_TIMEOUT", "0")
    with pytest.raises(ValueError, match="ATTNCONV_DOWNLOAD_TIMEOUT"):
        download.prepare_data("cifar10")
    env.delenv("ATTNCONV_DOWNLOAD_TIMEOUT")
    env.setenv("ATTNCONV_DOWNLOAD_MIN_RATE", "-1")
    with pytest.raises(ValueError, match="ATTNCONV_DOWNLOAD_MIN_RATE must be a number of bytes per second"):
        download.prepare_data("cifar10")


def test_a_good_download_shows_progress_and_lands_whole(env, mirror, tmp_path, capsys):
    _allow(env, **mirror)
    download.prepare_data("cifar10", progress=True)
    assert "CIFAR-10" in capsys.readouterr().err  # tqdm's bar, named
    archive = tmp_path / "cache" / "cifar-10-python.tar.gz"
    assert hashlib.md5(archive.read_bytes()).hexdigest() == mirror["ATTNCONV_CIFAR10_MD5"]
    assert [p.name for p in (tmp_path / "cache").iterdir()] == [archive.name]  # no temporary file left


def test_a_server_trickling_its_headers_is_given_up_on(env, tmp_path):
    """Each header line arrives well within the socket's timeout, so only a deadline on the whole answer ends it."""
    def headers_forever(conn, stop):
        conn.sendall(b"HTTP/1.1 200 OK\r\n")
        while not stop.wait(0.2):
            conn.sendall(b"X-Slow: a\r\n")

    with raw_server(headers_forever) as url:
        _allow(env, ATTNCONV_CIFAR10_URL=url, ATTNCONV_CIFAR10_MD5="0" * 32, ATTNCONV_DOWNLOAD_TIMEOUT="1")
        start = time.monotonic()
        with pytest.raises(FileNotFoundError, match=r"could not download CIFAR-10 from http://127\.0\.0\.1:\d+/.*"
                                                    r"answer was not complete within 1 s.*ATTNCONV_DOWNLOAD_TIMEOUT"):
            download.prepare_data("cifar10")
        assert time.monotonic() - start < 10
    assert not any((tmp_path / "cache").iterdir())


def _slow_then_closed(conn, stop):
    """Headers announcing 100 MB, then 100 bytes every 0.1 s (1 KB/s) for 2 s, then the connection closes."""
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100000000\r\n\r\n")
    until = time.monotonic() + 2
    while time.monotonic() < until and not stop.wait(0.1):
        conn.sendall(b"x" * 100)


def test_a_download_above_the_floor_that_would_take_hours_says_so_once(env, tmp_path, capsys):
    with raw_server(_slow_then_closed) as url:
        _allow(env, ATTNCONV_CIFAR10_URL=url, ATTNCONV_CIFAR10_MD5="0" * 32, ATTNCONV_DOWNLOAD_TIMEOUT="0.5",
               ATTNCONV_DOWNLOAD_MIN_RATE="1")
        with pytest.raises(FileNotFoundError, match=r"the connection closed after .* of 95\.4 MiB"):
            download.prepare_data("cifar10", progress=False)
    err = capsys.readouterr().err
    assert err.count("would take") == 1, err  # said once, not every window
    assert "B/s from http://127.0.0.1:" in err and "the remaining 95." in err and "ATTNCONV_DOWNLOAD_MIN_RATE" in err
    assert " hours " in err or " days " in err, err
    assert not any((tmp_path / "cache").iterdir())


def test_progress_by_default_only_where_someone_watches_and_short_in_a_log(env, mirror, tmp_path, capsys, monkeypatch):
    _allow(env, **mirror)
    download.prepare_data("cifar10")  # stderr is captured here: not a terminal, nobody watches
    assert capsys.readouterr().err == ""
    (tmp_path / "cache" / "cifar-10-python.tar.gz").unlink()
    download.prepare_data("cifar10", progress=True)  # asked for, into a file: one short line, no carriage returns
    err = capsys.readouterr().err
    assert "\r" not in err and err.count("\n") == 1 and err.startswith("CIFAR-10: "), repr(err)
    (tmp_path / "cache" / "cifar-10-python.tar.gz").unlink()
    monkeypatch.setattr(download, "_interactive", lambda: True)  # a terminal or a notebook: the bar by default
    download.prepare_data("cifar10")
    err = capsys.readouterr().err
    assert "CIFAR-10" in err and "\r" in err, repr(err)


# 2. Addresses: http(s) and file:///absolute/path; anything else is named before anything is fetched.

@pytest.mark.parametrize("value", ["127.0.0.1:8000/c.tar.gz", "ftp://example.org/c.tar.gz",
                                   "file://relative/c.tar.gz", "http:///c.tar.gz", "http://[::1/c.tar.gz",
                                   "https://example.org:port/c.tar.gz", "https://example.org:99999/c.tar.gz",
                                   "http://example.org/my data/c.tar.gz", "http://example.org/\n/c.tar.gz"])
def test_an_address_without_a_usable_scheme_is_named(env, mirror, tmp_path, value):
    _allow(env, **mirror)
    env.setenv("ATTNCONV_CIFAR10_URL", value)
    with pytest.raises(ValueError, match=r"ATTNCONV_CIFAR10_URL must be an http://, https:// or file:///"):
        download.prepare_data()
    env.setenv("ATTNCONV_CIFAR10_URL", mirror["ATTNCONV_CIFAR10_URL"])
    env.setenv("ATTNCONV_NLTK_URL", value.replace("c.tar.gz", "{name}.zip"))
    with pytest.raises(ValueError, match=r"ATTNCONV_NLTK_URL must be an http://, https:// or file:///"):
        download.prepare_data()  # the CIFAR-10 archive is not fetched first
    assert not (tmp_path / "cache" / "cifar-10-python.tar.gz").exists()


def test_file_addresses_are_read_like_a_mirror(env, tmp_path):
    served = tmp_path / "served"
    sums = build_mirror(served, n_train=20, n_test=10)
    _allow(env, ATTNCONV_CIFAR10_URL=(served / "cifar-10-python.tar.gz").as_uri(),
           ATTNCONV_CIFAR10_MD5=sums["cifar10"], ATTNCONV_NLTK_URL=served.as_uri() + "/{name}.zip",
           ATTNCONV_NLTK_MD5=",".join(f"{n}={sums[n]}" for n in nltk_zips.NLTK_ZIPS))
    assert "CIFAR-10 archive at <cache>/cifar-10-python.tar.gz" in download.prepare_data("cifar10", "nltk",
                                                                                          corpora=("brown",))
    assert (tmp_path / "cache" / "nltk" / "corpora" / "brown.zip").is_file()
    env.setenv("ATTNCONV_CIFAR10_URL", (served / "missing.tar.gz").as_uri())
    (tmp_path / "cache" / "cifar-10-python.tar.gz").unlink()
    with pytest.raises(FileNotFoundError, match="could not download CIFAR-10 from file:///.*missing.tar.gz"):
        download.prepare_data("cifar10")


# 3. ATTNCONV_CACHE naming a file.

def test_a_cache_setting_naming_a_file_is_named(env, mirror, tmp_path):
    _allow(env, **mirror)
    (tmp_path / "a-file").write_text("not a folder")
    env.setenv("ATTNCONV_CACHE", str(tmp_path / "a-file"))
    with pytest.raises(NotADirectoryError, match=r"ATTNCONV_CACHE='.*a-file' must be a folder, but .*a-file is a file"):
        download.prepare_data()
    with pytest.raises(NotADirectoryError, match="ATTNCONV_CACHE="):
        download_official()
    with pytest.raises(NotADirectoryError, match="ATTNCONV_CACHE="):
        nltk_zips.download_corpora(["brown"], url=mirror["ATTNCONV_NLTK_URL"])


# 4. The NLTK template: {name} and nothing else.

@pytest.mark.parametrize("template, found", [("http://127.0.0.1:9/{corpus}.zip", "{corpus}"),
                                             ("http://127.0.0.1:9/{name}/{corpus}.zip", "{corpus}"),
                                             ("http://127.0.0.1:9/{}.zip", "{}"),
                                             ("http://127.0.0.1:9/{name.zip", "unmatched")])
def test_a_template_with_another_placeholder_is_named(env, mirror, tmp_path, template, found):
    _allow(env, **mirror)
    env.setenv("ATTNCONV_NLTK_URL", template)
    with pytest.raises(ValueError, match=r"ATTNCONV_NLTK_URL must be .* only placeholder is \{name\}") as caught:
        download.prepare_data()
    assert found in str(caught.value) or found == "unmatched" and "{" in str(caught.value)
    assert not (tmp_path / "cache" / "cifar-10-python.tar.gz").exists()  # checked before CIFAR-10 is fetched
    with pytest.raises(ValueError, match=r"url must be .* only placeholder is \{name\}"):
        nltk_zips.download_corpora(["brown"], tmp_path / "dest", url=template)


# 5. An md5 that is not 32 hexadecimal digits.

def test_a_non_hex_md5_is_named_before_fetching(env, mirror, tmp_path):
    _allow(env, **mirror)
    env.setenv("ATTNCONV_NLTK_MD5", "brown=" + "z" * 32)
    with pytest.raises(ValueError, match="ATTNCONV_NLTK_MD5 must be name=md5 pairs .*32 hexadecimal digits"):
        download.prepare_data()
    assert not (tmp_path / "cache" / "cifar-10-python.tar.gz").exists()
    env.setenv("ATTNCONV_NLTK_MD5", mirror["ATTNCONV_NLTK_MD5"])
    env.setenv("ATTNCONV_CIFAR10_MD5", "g" * 32)
    with pytest.raises(ValueError, match="ATTNCONV_CIFAR10_MD5 must be 32 hexadecimal digits"):
        download.prepare_data("cifar10")
    with pytest.raises(ValueError, match="md5 must be 32 hexadecimal digits"):
        download.fetch_checked(mirror["ATTNCONV_CIFAR10_URL"], tmp_path / "x.tar.gz", "not-a-hash")
    assert not (tmp_path / "x.tar.gz").exists()


# 6. The commands: one line, exit code 2.

def _one_line_exit_2(main, argv, capsys, *needles):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err, err
    for needle in needles:
        assert needle in err, err
    return err


def test_fetch_command_ends_in_one_line(env, mirror, tmp_path, capsys):
    (tmp_path / "a-file").write_text("")
    for key, value in mirror.items():
        env.setenv(key, value)
    _one_line_exit_2(fetch.main, ["--dest", str(tmp_path / "a-file")], capsys, "--dest", "is a file")
    _one_line_exit_2(fetch.main, ["--dest", str(tmp_path / "a-file" / "sub")], capsys, "--dest", "is a file")
    env.setenv("ATTNCONV_CIFAR10_URL", "http://127.0.0.1:9/cifar-10-python.tar.gz")  # offline: refused
    _one_line_exit_2(fetch.main, ["--dest", str(tmp_path / "data")], capsys, "python -m attnconv.data.fetch:",
                     "could not download", "127.0.0.1:9")
    env.setenv("ATTNCONV_NLTK_URL", "http://127.0.0.1:9/{corpus}.zip")
    _one_line_exit_2(fetch.main, ["--dest", str(tmp_path / "data")], capsys, "ATTNCONV_NLTK_URL")
    _one_line_exit_2(nltk_zips.main, ["brown", "--dest", str(tmp_path / "nltk")], capsys, "ATTNCONV_NLTK_URL")
    env.setenv("ATTNCONV_NLTK_URL", "http://127.0.0.1:9/{name}.zip")
    _one_line_exit_2(nltk_zips.main, ["brown", "--dest", str(tmp_path / "nltk")], capsys,
                     "python -m attnconv.data.nltk_zips:", "could not download brown.zip")
    with pytest.raises(SystemExit) as caught:  # argparse's own usage errors stay exit code 2
        nltk_zips.main(["wikipedia", "--bogus"])
    assert caught.value.code == 2
