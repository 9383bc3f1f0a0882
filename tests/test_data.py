"""attnconv.data: local CIFAR-10 copies, generated fallbacks, and clear errors on bad data."""

from __future__ import annotations

import io
import zipfile

import numpy as np
import pytest
import torch
from PIL import Image

from attnconv.data import CIFAR10_CLASSES, data_root, example_image


def _jpeg(seed: int) -> bytes:
    pixels = np.random.default_rng(seed).integers(0, 256, (32, 32, 3), dtype=np.uint8)
    buf = io.BytesIO()
    Image.fromarray(pixels).save(buf, format="JPEG", quality=95)
    return buf.getvalue()


@pytest.fixture
def tiny_cifar(tmp_path, monkeypatch):
    """A two-image test.zip in the per-class JPEG layout, under a fresh ATTNCONV_DATA."""
    folder = tmp_path / "cifar10-jpeg"
    folder.mkdir()
    with zipfile.ZipFile(folder / "test.zip", "w") as zf:
        zf.writestr("test/cat/0001.jpg", _jpeg(1))
        zf.writestr("test/airplane/0001.jpg", _jpeg(2))
    monkeypatch.setenv("ATTNCONV_DATA", str(tmp_path))
    return folder


def test_reads_local_zip_in_class_order(tiny_cifar):
    first = example_image(0)
    assert first.label == "airplane" and first.is_real  # sorted paths: airplane before cat
    assert first.pixels.shape == (32, 32, 3) and first.pixels.dtype == torch.uint8
    assert "CIFAR-10 test image 0 in class order (airplane)" in first.source
    assert example_image(1).label == "cat"


def test_index_out_of_range(tiny_cifar):
    with pytest.raises(ValueError, match=r"index must be in \[0, 2\)"):
        example_image(2)


def test_corrupt_zip_is_a_clear_error(tiny_cifar):
    (tiny_cifar / "test.zip").write_bytes(b"not a zip at all")
    with pytest.raises(RuntimeError, match="not a readable zip archive"):
        example_image(0)


def test_wrong_layout_is_a_clear_error(tiny_cifar):
    with zipfile.ZipFile(tiny_cifar / "test.zip", "w") as zf:
        zf.writestr("test/not_a_class/0001.jpg", _jpeg(3))
    with pytest.raises(RuntimeError, match="expected test/<class>/NNNN.jpg"):
        example_image(0)


def test_generated_when_no_data(monkeypatch, tmp_path):
    monkeypatch.delenv("ATTNCONV_DATA", raising=False)
    monkeypatch.setenv("ATTNCONV_CACHE", str(tmp_path / "empty-cache"))
    image = example_image(5)
    assert not image.is_real and "generated" in image.source
    assert image.source.startswith("a generated 32x32 image, as stand-in data:") and "stand-in results" in image.source
    assert image.source.count("CIFAR-10") == 2, "one sentence: what is missing, and that results are not its own"
    assert torch.equal(image.pixels, example_image(5).pixels), "the fallback must be deterministic"
    assert not torch.equal(image.pixels, example_image(6).pixels)


def test_data_root_must_exist(monkeypatch, tmp_path):
    monkeypatch.setenv("ATTNCONV_DATA", str(tmp_path / "missing"))
    with pytest.raises(FileNotFoundError, match="ATTNCONV_DATA"):
        data_root()


def test_bad_split():
    with pytest.raises(ValueError, match="split must be"):
        example_image(0, split="valid")


def test_class_list_is_the_official_order():
    assert CIFAR10_CLASSES == tuple(sorted(CIFAR10_CLASSES)) and len(CIFAR10_CLASSES) == 10


def test_display_path_hides_the_machine_layout(tmp_path, monkeypatch):
    from pathlib import Path

    from attnconv.data.paths import display_path

    data = tmp_path / "somewhere" / "data"
    (data / "cifar10-jpeg").mkdir(parents=True)
    monkeypatch.setenv("ATTNCONV_DATA", str(data))
    monkeypatch.setenv("ATTNCONV_CACHE", str(tmp_path / "cache"))
    assert display_path(data / "cifar10-jpeg") == "$ATTNCONV_DATA/cifar10-jpeg"
    assert display_path(data) == "$ATTNCONV_DATA"
    assert display_path(tmp_path / "cache" / "x.tar.gz") == "<cache>/x.tar.gz"
    assert display_path(Path.home() / "notes") == "~/notes"
    assert str(tmp_path) not in display_path(data / "nltk")


def test_reads_the_official_copy_when_no_jpeg_zip(monkeypatch, tmp_path):
    """An official extracted folder (what the fetch module's archive becomes) gives real images, by class."""
    from tests.cifar_fixtures import tiny_arrays, write_official_folder

    arrays = tiny_arrays(n_train=20, n_test=10)
    arrays["test_labels"] = np.array([3, 0, 3, 1, 0, 2, 2, 1, 9, 9], dtype=np.int64)
    write_official_folder(tmp_path / "data", arrays)
    monkeypatch.setenv("ATTNCONV_DATA", str(tmp_path / "data"))
    monkeypatch.setenv("ATTNCONV_CACHE", str(tmp_path / "cache"))
    first, third = example_image(0), example_image(2)
    assert first.is_real and first.label == CIFAR10_CLASSES[0] and "CIFAR-10 test image 0" in first.source
    assert torch.equal(first.pixels, torch.from_numpy(arrays["test_images"][1]))  # the first image of class 0
    assert third.label == CIFAR10_CLASSES[1] and torch.equal(third.pixels, torch.from_numpy(arrays["test_images"][3]))
    with pytest.raises(ValueError, match=r"index must be in \[0, 10\)"):
        example_image(10)


def test_fetch_key_and_fingerprint(monkeypatch, tmp_path):
    from attnconv.data import fetch

    key = fetch.checksum_key()
    assert len(key) == 20 and key == fetch.checksum_key()
    monkeypatch.setitem(fetch.NLTK_ZIPS, "rte", "0" * 32)
    assert fetch.checksum_key() != key, "a changed checksum must change the cache key"
    monkeypatch.setenv("ATTNCONV_DATA", str(tmp_path / "data"))
    monkeypatch.setenv("ATTNCONV_CACHE", str(tmp_path / "cache"))
    (tmp_path / "data").mkdir()
    assert fetch.data_fingerprint() == "none"
    (tmp_path / "data" / "cifar10-jpeg").mkdir()
    (tmp_path / "data" / "cifar10-jpeg" / "test.zip").write_bytes(b"x" * 7)
    (tmp_path / "data" / "notes.txt").write_text("not data")
    assert fetch.data_fingerprint() == "data/cifar10-jpeg/test.zip 7"
    (tmp_path / "cache" / "nltk" / "corpora").mkdir(parents=True)
    (tmp_path / "cache" / "nltk" / "corpora" / "rte.zip").write_bytes(b"y" * 3)
    assert fetch.data_fingerprint().splitlines() == ["cache/nltk/corpora/rte.zip 3", "data/cifar10-jpeg/test.zip 7"]
