"""attnconv.data.photo: the photograph matplotlib ships, the chapters' example image when CIFAR-10 is absent."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
import torch
from PIL import Image

from attnconv.data import example_image, example_photo, photo
from attnconv.data.photo import PHOTO_SHA256, photo_path


@pytest.fixture
def no_cifar(monkeypatch, tmp_path):
    monkeypatch.delenv("ATTNCONV_DATA", raising=False)
    monkeypatch.setenv("ATTNCONV_CACHE", str(tmp_path / "empty-cache"))


def test_matplotlib_ships_the_photograph_the_book_names():
    path = photo_path()
    assert path is not None and path.name == "grace_hopper.jpg"
    assert hashlib.sha256(path.read_bytes()).hexdigest() == PHOTO_SHA256
    assert b"commons.wikimedia.org/wiki/File:Grace_Hopper.jpg" in path.read_bytes()[:2000]  # its stated source


def test_photo_is_a_box_filtered_square_of_the_portrait():
    shot = example_photo()
    assert shot.pixels.shape == (32, 32, 3) and shot.pixels.dtype == torch.uint8
    assert shot.label == "photograph" and shot.is_real and not shot.book
    assert f"sha256 {PHOTO_SHA256[:12]}, the copy the book was written with" in shot.source
    assert "Grace Hopper" in shot.source and "no copy of CIFAR-10 was found" in shot.source
    full = np.asarray(Image.open(photo_path()).convert("RGB"), dtype=np.float64)
    block = full[:16, :16].mean(axis=(0, 1))  # the top-left output pixel is the mean of the top-left 16x16 block
    assert torch.equal(shot.pixels[0, 0], torch.from_numpy(np.round(block).astype(np.uint8)))
    subsampled = torch.from_numpy(full[:512:16, :512:16].astype(np.uint8))  # a plausible wrong reduction
    assert not torch.equal(shot.pixels, subsampled)
    centred = full[44:556].reshape(32, 16, 32, 16, 3).mean(axis=(1, 3))  # another square of the portrait
    assert not torch.equal(shot.pixels, torch.from_numpy(np.round(centred).astype(np.uint8)))
    assert torch.equal(shot.pixels, example_photo().pixels), "deterministic"


def test_photo_sizes_and_a_clear_error():
    assert example_photo(64).pixels.shape == (64, 64, 3)
    assert example_photo(512).pixels.shape == (512, 512, 3)
    for bad in (0, 3, 48, 1024):
        with pytest.raises(ValueError, match="size"):
            example_photo(bad)
    with pytest.raises((TypeError, ValueError), match="size"):
        example_photo(32.0)


def test_another_file_is_named_by_its_checksum(monkeypatch, tmp_path):
    other = tmp_path / "grace_hopper.jpg"
    Image.open(photo_path()).save(other, quality=80)  # the same picture, other bytes
    monkeypatch.setattr(photo, "photo_path", lambda: other)
    shot = example_photo()
    digest = hashlib.sha256(other.read_bytes()).hexdigest()
    assert f"sha256 {digest[:12]}, not the copy the book was written with" in shot.source


def test_a_matplotlib_without_the_file_gives_the_generated_stand_in(monkeypatch):
    monkeypatch.setattr(photo, "photo_path", lambda: None)
    shot = example_photo()
    assert shot.label == "generated" and not shot.is_real and "has no grace_hopper.jpg" in shot.source


def test_a_too_small_file_is_a_clear_error(monkeypatch, tmp_path):
    small = tmp_path / "grace_hopper.jpg"
    Image.open(photo_path()).resize((100, 100)).save(small)
    monkeypatch.setattr(photo, "photo_path", lambda: small)
    with pytest.raises(RuntimeError, match="expected at least 512x512"):
        example_photo()


def test_example_image_takes_the_photograph_only_when_asked_and_without_cifar(no_cifar):
    shot = example_image(3, stand_in="photograph")
    assert shot.label == "photograph" and torch.equal(shot.pixels, example_photo().pixels)
    assert example_image(3).label == "generated", "the default stand-in stays the generated image"
    with pytest.raises(ValueError, match="stand_in must be one of"):
        example_image(3, stand_in="photo")


def test_cifar_wins_over_the_photograph(monkeypatch, tmp_path):
    import zipfile

    folder = tmp_path / "cifar10-jpeg"
    folder.mkdir()
    buf = tmp_path / "x.jpg"
    Image.fromarray(np.zeros((32, 32, 3), np.uint8)).save(buf)
    with zipfile.ZipFile(folder / "test.zip", "w") as zf:
        zf.write(buf, "test/airplane/0001.jpg")
    monkeypatch.setenv("ATTNCONV_DATA", str(tmp_path))
    image = example_image(0, stand_in="photograph")
    assert image.label == "airplane" and image.source.startswith("CIFAR-10 test image 0")

