"""Downloading the NLTK zips: md5-checked, served here by a local HTTP server (no network is used)."""

from __future__ import annotations

import functools
import hashlib
import http.server
import threading

import pytest

from attnconv.data import nltk_zips
from attnconv.data.corpus import corpora_dir, read_documents
from attnconv.data.sample_text import write_sample_corpora


@pytest.fixture
def server(tmp_path):
    """Serve a folder of sample zips over HTTP on localhost; yields (folder, url template)."""
    served = write_sample_corpora(tmp_path / "served", sentences_per_file=20)
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(served))
    handler.log_message = lambda *a: None
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield served, f"http://127.0.0.1:{httpd.server_address[1]}/{{name}}.zip"
    httpd.shutdown()


def _md5(path):
    return hashlib.md5(path.read_bytes()).hexdigest()


def test_download_checks_md5_and_lands_where_corpora_dir_looks(server, tmp_path, monkeypatch):
    served, url = server
    monkeypatch.setattr(nltk_zips, "NLTK_ZIPS", {"brown": _md5(served / "brown.zip"), "abc": _md5(served / "abc.zip")})
    monkeypatch.delenv("ATTNCONV_DATA", raising=False)
    monkeypatch.setenv("ATTNCONV_CACHE", str(tmp_path / "cache"))
    folder = nltk_zips.download_corpora(url=url)
    assert folder == tmp_path / "cache" / "nltk" / "corpora" == corpora_dir()
    assert sorted(p.name for p in folder.iterdir()) == ["abc.zip", "brown.zip"]
    assert read_documents("brown") == read_documents("brown", served)
    # A good copy is kept: a second call downloads nothing even with the server gone.
    assert nltk_zips.download_corpora(["brown"], url="http://127.0.0.1:9/{name}.zip") == folder


def test_a_corrupted_download_is_refused_and_nothing_is_left(server, tmp_path, monkeypatch):
    served, url = server
    monkeypatch.setattr(nltk_zips, "NLTK_ZIPS", {"brown": "0" * 32})
    with pytest.raises(RuntimeError, match="brown.zip .* failed its md5 check"):
        nltk_zips.download_corpora(["brown"], tmp_path / "dest", url=url)
    assert not any((tmp_path / "dest").iterdir())


def test_offline_and_bad_names_give_clear_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="could not download brown.zip .* by hand"):
        nltk_zips.download_corpora(["brown"], tmp_path, url="http://127.0.0.1:9/{name}.zip")
    assert not any(tmp_path.iterdir())
    with pytest.raises(ValueError, match="names must be among"):
        nltk_zips.download_corpora(["wikipedia"], tmp_path)


def test_known_hashes_cover_every_zip_the_book_reads():
    from attnconv.data.corpus import PRETRAIN_CORPORA
    from attnconv.data.tasks import TASKS
    assert set(PRETRAIN_CORPORA) | {"sentence_polarity", "subjectivity", "rte"} == set(nltk_zips.NLTK_ZIPS)
    assert len(TASKS) == 3 and all(len(h) == 32 for h in nltk_zips.NLTK_ZIPS.values())


def test_known_hashes_match_the_real_zips():
    """With the real zips at hand (``ATTNCONV_DATA``), each one has the md5 the downloader expects."""
    try:
        folder = corpora_dir()
    except FileNotFoundError:
        pytest.skip("no local NLTK zips")
    present = {name: folder / f"{name}.zip" for name in nltk_zips.NLTK_ZIPS if (folder / f"{name}.zip").is_file()}
    if not present:
        pytest.skip("no local NLTK zips")
    assert {name: _md5(path) for name, path in present.items()} == {n: nltk_zips.NLTK_ZIPS[n] for n in present}
