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
    assert "CIFAR-10 test image 0 (airplane)" in first.source
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


def test_generated_when_no_data(monkeypatch):
    monkeypatch.delenv("ATTNCONV_DATA", raising=False)
    image = example_image(5)
    assert not image.is_real and "generated" in image.source
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
