"""load_cifar10: every source in its order, the .npy cache, and a clear error for every kind of bad data."""

from __future__ import annotations

import functools
import io
import http.server
import threading
import time
import zipfile

import numpy as np
import pytest
import torch
from PIL import Image

import attnconv.data.cifar10 as cifar10
from attnconv.data import example_image, load_cifar10

from .cifar_fixtures import (class_sorted, jpeg_bytes, tiny_arrays, write_class_folder, write_class_zip, write_official_archive,
                             write_official_folder)

ANY = None  # expected_sizes=None: accept the tiny copies' image counts


@pytest.fixture
def arrays():
    return tiny_arrays()


@pytest.fixture(autouse=True)
def isolated(monkeypatch, tmp_path):
    """No ATTNCONV_DATA, a private cache, and no way to reach the real download address."""
    monkeypatch.delenv("ATTNCONV_DATA", raising=False)
    monkeypatch.setenv("ATTNCONV_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("ATTNCONV_CIFAR10_URL", "http://127.0.0.1:9/cifar-10-python.tar.gz")  # never the network


def _cache_files(tmp_path):
    root = tmp_path / "cache" / "cifar10-arrays"
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*")) if root.exists() else []


def _assert_equal(data, arrays, exact=True):
    for split in ("train", "test"):
        images, labels = getattr(data, f"{split}_images"), getattr(data, f"{split}_labels")
        assert images.dtype == torch.uint8 and images.shape == arrays[f"{split}_images"].shape
        assert labels.dtype == torch.int64
        np.testing.assert_array_equal(labels.numpy(), arrays[f"{split}_labels"])
        if exact:
            np.testing.assert_array_equal(images.numpy(), arrays[f"{split}_images"])


def test_official_archive_is_read_exactly_and_cached(tmp_path, arrays, monkeypatch):
    md5 = write_official_archive(tmp_path / "cifar-10-python.tar.gz", arrays)
    data = load_cifar10(tmp_path / "cifar-10-python.tar.gz", md5=md5, expected_sizes=ANY)
    _assert_equal(data, arrays)  # the channel-major pickle rows come back as (H, W, C) pixels
    # the official format, checked against this archive's own md5, not the official one: named as a mirror's
    assert data.origin == "mirror" and data.description.startswith("CIFAR-10-format archive from a mirror")
    assert any(name.endswith("train_images.npy") for name in _cache_files(tmp_path))

    monkeypatch.setattr(cifar10, "_decode", lambda *a: pytest.fail("a cached copy must not be decoded again"))
    start = time.perf_counter()
    again = load_cifar10(tmp_path / "cifar-10-python.tar.gz", md5=md5, expected_sizes=ANY)
    assert time.perf_counter() - start < 1.0
    _assert_equal(again, arrays)
    assert again.origin == "mirror" and again.source == data.source


def test_extracted_folder_matches_the_archive(tmp_path, arrays):
    write_official_folder(tmp_path, arrays)
    _assert_equal(load_cifar10(tmp_path, expected_sizes=ANY), arrays)  # the parent folder is recognised too


def test_truncated_archive_is_a_hash_error_and_caches_nothing(tmp_path, arrays):
    archive = tmp_path / "cifar-10-python.tar.gz"
    md5 = write_official_archive(archive, arrays)
    archive.write_bytes(archive.read_bytes()[: archive.stat().st_size // 2])
    with pytest.raises(RuntimeError, match=f"does not match the official CIFAR-10 archive \\({md5}\\)"):
        load_cifar10(archive, md5=md5, expected_sizes=ANY)
    assert _cache_files(tmp_path) == []
    with pytest.raises(RuntimeError, match="not a readable tar.gz"):  # without a hash to compare against
        load_cifar10(archive, md5=None, expected_sizes=ANY)
    assert _cache_files(tmp_path) == []


def test_default_md5_is_the_official_one(tmp_path, arrays):
    assert cifar10.CIFAR10_MD5 == "c58f30108f718f92721af3b95e74349a"
    write_official_archive(tmp_path / "cifar-10-python.tar.gz", arrays)
    with pytest.raises(RuntimeError, match="md5"):
        load_cifar10(tmp_path / "cifar-10-python.tar.gz", expected_sizes=ANY)


def test_wrong_counts_and_shapes_are_clear_errors(tmp_path, arrays):
    write_official_folder(tmp_path / "a", arrays)
    with pytest.raises(RuntimeError, match="expected 50000 train images, found 20"):
        load_cifar10(tmp_path / "a")  # the default insists on the full data set
    assert _cache_files(tmp_path) == []
    write_official_folder(tmp_path / "b", arrays, row_width=1000)
    with pytest.raises(RuntimeError, match=r"expected data of shape \(n, 3072\)"):
        load_cifar10(tmp_path / "b", expected_sizes=ANY)
    (tmp_path / "a" / "cifar-10-batches-py" / "test_batch").write_bytes(b"garbage")
    with pytest.raises(RuntimeError, match="test_batch: not a CIFAR-10 batch"):
        load_cifar10(tmp_path / "a", expected_sizes=ANY)
    (tmp_path / "a" / "cifar-10-batches-py" / "test_batch").unlink()
    with pytest.raises(RuntimeError, match=r"lacks the batches \['test_batch'\]"):
        load_cifar10(tmp_path / "a", expected_sizes=ANY)


def test_per_class_zip_and_folder(tmp_path, arrays):
    data = load_cifar10(write_class_zip(tmp_path / "both.zip", arrays), expected_sizes=ANY)
    assert data.origin == "jpeg" and data.description == "JPEG re-encoding"
    for split in ("train", "test"):
        images, labels = class_sorted(arrays, split)
        np.testing.assert_array_equal(getattr(data, f"{split}_labels").numpy(), labels)
        decoded = np.stack([np.asarray(Image.open(io.BytesIO(jpeg_bytes(img)))) for img in images])
        np.testing.assert_array_equal(getattr(data, f"{split}_images").numpy(), decoded)
    lossless = load_cifar10(write_class_folder(tmp_path / "png", arrays), expected_sizes=ANY)
    assert lossless.origin == "png"
    for split in ("train", "test"):
        np.testing.assert_array_equal(getattr(lossless, f"{split}_images").numpy(), class_sorted(arrays, split)[0])


def test_attnconv_data_zips_come_first(tmp_path, arrays, monkeypatch):
    root = tmp_path / "data"
    write_class_zip(root / "cifar10-jpeg" / "train.zip", arrays, splits=("train",))
    write_class_zip(root / "cifar10-jpeg" / "test.zip", arrays, splits=("test",))
    md5 = write_official_archive(root / "cifar-10-python.tar.gz", arrays)  # present, but second in the order
    monkeypatch.setenv("ATTNCONV_DATA", str(root))
    data = load_cifar10(md5=md5, expected_sizes=ANY)
    assert data.origin == "jpeg" and "ATTNCONV_DATA" in data.source
    assert example_image(0).label == "airplane"  # the chapters' example images read the same zips

    (root / "cifar10-jpeg" / "test.zip").unlink()
    with pytest.raises(FileNotFoundError, match="test.zip is missing"):
        load_cifar10(md5=md5, expected_sizes=ANY)
    (root / "cifar10-jpeg" / "train.zip").unlink()
    assert load_cifar10(md5=md5, expected_sizes=ANY).origin == "mirror"  # step 2: the local archive (a test's)


def test_archive_in_the_cache_folder_is_found(tmp_path, arrays):
    md5 = write_official_archive(tmp_path / "cache" / "cifar-10-python.tar.gz", arrays)
    assert load_cifar10(md5=md5, expected_sizes=ANY).origin == "mirror"  # not the official md5


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture
def server(tmp_path):
    """A loopback HTTP server for tmp_path/www (no network needed)."""
    (tmp_path / "www").mkdir()
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=tmp_path / "www"))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


def test_download_is_hash_checked(tmp_path, arrays, monkeypatch, server):
    md5 = write_official_archive(tmp_path / "www" / "cifar-10-python.tar.gz", arrays)
    monkeypatch.setenv("ATTNCONV_CIFAR10_URL", f"{server}/cifar-10-python.tar.gz")  # the mirror variable
    with pytest.raises(RuntimeError, match="failed its md5 check"):
        load_cifar10(md5="0" * 32, expected_sizes=ANY)
    assert not (tmp_path / "cache" / "cifar-10-python.tar.gz").exists(), "a bad download must not be kept"
    data = load_cifar10(md5=md5, expected_sizes=ANY)
    assert "downloaded" in data.source and (tmp_path / "cache" / "cifar-10-python.tar.gz").is_file()
    _assert_equal(data, arrays)


def test_offline_without_data_says_where_to_put_it(tmp_path):
    with pytest.raises(FileNotFoundError, match="could not download CIFAR-10.*put cifar-10-python.tar.gz"):
        load_cifar10()
    with pytest.raises(FileNotFoundError, match="download=False.*ATTNCONV_DATA"):
        load_cifar10(download=False)


def test_bad_layouts_and_arguments(tmp_path, arrays):
    with zipfile.ZipFile(tmp_path / "odd.zip", "w") as zf:
        zf.writestr("train/unicorn/0001.png", b"")
    with pytest.raises(RuntimeError, match="not a CIFAR-10 class"):
        load_cifar10(tmp_path / "odd.zip", expected_sizes=ANY)
    only_train = write_class_zip(tmp_path / "train_only.zip", arrays, fmt="PNG", splits=("train",))
    with pytest.raises(RuntimeError, match="no images under test/<class>/"):
        load_cifar10(only_train, expected_sizes=ANY)
    (tmp_path / "broken.zip").write_bytes(b"PK not really")
    with pytest.raises(RuntimeError, match="not a readable zip"):
        load_cifar10(tmp_path / "broken.zip", expected_sizes=ANY)
    small = {k: v for k, v in arrays.items()}
    small["train_images"] = np.zeros((20, 16, 16, 3), np.uint8)
    with pytest.raises(RuntimeError, match="expected 32x32"):
        load_cifar10(write_class_folder(tmp_path / "small", small), expected_sizes=ANY)
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="path must be"):
        load_cifar10(tmp_path / "empty")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_cifar10(tmp_path / "nowhere")
    with pytest.raises(ValueError, match="expected_sizes must have keys"):
        load_cifar10(tmp_path / "empty", expected_sizes={"train": 1})


def test_the_official_name_comes_from_the_official_md5(tmp_path, arrays, monkeypatch):
    """An archive is called official CIFAR-10 when its md5 is the official archive's, whatever its format."""
    md5 = write_official_archive(tmp_path / "cifar-10-python.tar.gz", arrays)
    monkeypatch.setattr(cifar10, "CIFAR10_MD5", md5)  # as if this archive were the official one
    data = load_cifar10(tmp_path / "cifar-10-python.tar.gz", md5=md5, expected_sizes=ANY, cache_dir=tmp_path / "c")
    assert data.origin == "official" and data.description == "official CIFAR-10"
