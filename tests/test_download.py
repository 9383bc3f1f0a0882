"""Downloads only when the reader allows them, from addresses the environment can replace (served here on
127.0.0.1), md5-checked and cached; the chapters then read real data."""

from __future__ import annotations

import sys
import types

import pytest

from attnconv.data import download, example_image, load_cifar10
from attnconv.data.corpus import load_corpus

from .local_mirror import build_mirror, serve


@pytest.fixture
def offline_env(monkeypatch, tmp_path):
    for var in ("ATTNCONV_DATA", "ATTNCONV_DOWNLOAD", "ATTNCONV_CIFAR10_URL", "ATTNCONV_CIFAR10_MD5",
                "ATTNCONV_NLTK_URL", "ATTNCONV_NLTK_MD5"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("ATTNCONV_CACHE", str(tmp_path / "cache"))
    monkeypatch.delitem(sys.modules, "google.colab", raising=False)
    return monkeypatch


@pytest.fixture(scope="module")
def mirror(tmp_path_factory):
    folder = tmp_path_factory.mktemp("mirror")
    sums = build_mirror(folder, n_train=40, n_test=20)
    with serve(folder, sums) as env:
        yield env


def test_downloads_are_off_by_default_and_on_in_colab(offline_env):
    assert download.reader_may_download() is False
    offline_env.setitem(sys.modules, "google.colab", types.ModuleType("google.colab"))
    assert download.reader_may_download() is True
    offline_env.setenv("ATTNCONV_DOWNLOAD", "0")
    assert download.reader_may_download() is False  # the reader's no wins even in Colab
    offline_env.delitem(sys.modules, "google.colab")
    offline_env.setenv("ATTNCONV_DOWNLOAD", "1")
    assert download.reader_may_download() is True
    offline_env.setenv("ATTNCONV_DOWNLOAD", "yes")
    with pytest.raises(ValueError, match="ATTNCONV_DOWNLOAD must be 0 or 1"):
        download.reader_may_download()


def test_without_permission_nothing_is_fetched(offline_env, mirror, tmp_path):
    for key, value in mirror.items():
        offline_env.setenv(key, value)
    assert "offline" in download.prepare_data()
    assert not (tmp_path / "cache").exists()
    assert not example_image(3).is_real


def test_addresses_follow_the_environment(offline_env):
    assert download.cifar10_url() == download.CIFAR10_OFFICIAL_URL and not download.mirror_in_use()
    offline_env.setenv("ATTNCONV_CIFAR10_URL", "http://127.0.0.1:9/c.tar.gz")
    assert download.cifar10_url() == "http://127.0.0.1:9/c.tar.gz"
    assert download.cifar10_md5("f" * 32) == "f" * 32 and not download.mirror_in_use()  # a mirror: same hash
    offline_env.setenv("ATTNCONV_CIFAR10_MD5", "not-a-hash")
    with pytest.raises(ValueError, match="ATTNCONV_CIFAR10_MD5 must be 32"):
        download.cifar10_md5("f" * 32)
    offline_env.setenv("ATTNCONV_NLTK_URL", "http://127.0.0.1:9/corpora")
    with pytest.raises(ValueError, match=r"\{name\}"):
        download.nltk_url()
    offline_env.setenv("ATTNCONV_NLTK_MD5", "brown=short")
    with pytest.raises(ValueError, match="name=md5 pairs"):
        download.nltk_md5s({"brown": "0" * 32})


def test_permitted_download_gives_real_images_and_corpora(offline_env, mirror, tmp_path):
    for key, value in mirror.items():
        offline_env.setenv(key, value)
    offline_env.setenv("ATTNCONV_DOWNLOAD", "1")
    message = download.prepare_data()
    assert "CIFAR-10 archive at <cache>/cifar-10-python.tar.gz" in message
    assert (tmp_path / "cache" / "cifar-10-python.tar.gz").is_file()
    assert (tmp_path / "cache" / "nltk" / "corpora" / "brown.zip").is_file()
    image = example_image(3)  # 20 test images, labels cycling: in class order, two of each class
    assert image.is_real and image.label == "automobile" and "from a mirror" in image.source  # not the official md5
    data = load_cifar10(download=False)
    assert data.origin == "mirror" and len(data.train_images) == 40 and len(data.test_images) == 20
    assert load_corpus(validation_fraction=0.2).train  # found in the cache without ATTNCONV_DATA
    assert download.prepare_data() == message  # cached: found again, not fetched again


def test_a_corrupted_download_is_refused_and_not_kept(offline_env, mirror, tmp_path):
    for key, value in mirror.items():
        offline_env.setenv(key, value)
    offline_env.setenv("ATTNCONV_CIFAR10_MD5", "0" * 32)
    offline_env.setenv("ATTNCONV_DOWNLOAD", "1")
    with pytest.raises(RuntimeError, match="md5"):
        download.prepare_data("cifar10")
    assert not (tmp_path / "cache" / "cifar-10-python.tar.gz").exists()
    with pytest.raises(ValueError, match="what must be among"):
        download.prepare_data("imagenet")
