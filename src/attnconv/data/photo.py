"""A real photograph that needs no download: the portrait of Grace Hopper that matplotlib ships in its wheel.

``matplotlib/mpl-data/sample_data/grace_hopper.jpg`` (512 wide, 600 high) is a U.S. Navy photograph of Commodore
Grace M. Hopper, in the public domain as a work of the U.S. federal government; the file's own JPEG comment names
its source, Wikimedia Commons' ``File:Grace_Hopper.jpg``. Every installation of matplotlib carries it (Colab's
too), so a chapter can show a real photograph offline and without CIFAR-10's 163 MB archive.

The photograph is named from its SHA-256: the file the book was written with is ``PHOTO_SHA256``, and a file of
that name with another checksum is said to be another file.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import torch

from .._checks import int_at_least
from .cifar10 import ExampleImage, generated_image, stand_in_notice

PHOTO_NAME = "grace_hopper.jpg"
PHOTO_SHA256 = "a8ca6d734765703b09728ab47fe59f473d93ae3967fc24c7c0288c3c7adb7130"
PHOTO_SIDE = 512  # the square kept: the top 512 rows of the 512-wide portrait (the face and the uniform)


def photo_path() -> Path | None:
    """Where matplotlib keeps its copy of the photograph, or ``None`` when this matplotlib has none."""
    import matplotlib

    path = Path(matplotlib.get_data_path()) / "sample_data" / PHOTO_NAME
    return path if path.is_file() else None


def example_photo(size: int = 32) -> ExampleImage:
    """The photograph as a ``(size, size, 3)`` uint8 :class:`~attnconv.data.cifar10.ExampleImage`, with where it
    came from.

    The top ``512 x 512`` square of the portrait is averaged over blocks of ``512 // size`` pixels a side (an exact
    box filter in float64, then rounded), so the pixels depend only on the decoded JPEG. ``size=32`` is CIFAR-10's
    size. A matplotlib without the file gives a generated stand-in, and the source sentence says so.

    Raises:
        ValueError: ``size`` is not a power of two from 1 to 512 (it must divide 512).
    """
    from PIL import Image

    int_at_least("size", size, 1)
    if size > PHOTO_SIDE or PHOTO_SIDE % size:
        raise ValueError(f"size must divide {PHOTO_SIDE} (a power of two from 1 to {PHOTO_SIDE}), got {size}")
    path = photo_path()
    if path is None:
        return ExampleImage(generated_image(size), "generated",
                            stand_in_notice(f"a generated {size}x{size} image (this matplotlib has no {PHOTO_NAME})"))
    raw = path.read_bytes()
    digest = hashlib.sha256(raw).hexdigest()
    with Image.open(path) as im:
        pixels = np.asarray(im.convert("RGB"), dtype=np.float64)  # (600, 512, 3)
    if pixels.shape[0] < PHOTO_SIDE or pixels.shape[1] < PHOTO_SIDE:
        raise RuntimeError(f"{path} is {pixels.shape[1]}x{pixels.shape[0]} pixels; expected at least "
                           f"{PHOTO_SIDE}x{PHOTO_SIDE} (reinstall matplotlib)")
    block = PHOTO_SIDE // size
    square = pixels[:PHOTO_SIDE, :PHOTO_SIDE]
    small = square.reshape(size, block, size, block, 3).mean(axis=(1, 3))  # (size, size, 3)
    image = torch.from_numpy(np.round(small).astype(np.uint8))
    which = ("the copy the book was written with" if digest == PHOTO_SHA256
             else f"not the copy the book was written with, sha256 {PHOTO_SHA256[:12]}")
    source = (f"a photograph of Grace Hopper (U.S. Navy, public domain), matplotlib's sample file {PHOTO_NAME} "
              f"(sha256 {digest[:12]}, {which}), reduced to {size}x{size}; no copy of CIFAR-10 was found, so no "
              f"CIFAR-10 photo is shown")
    return ExampleImage(image, "photograph", source)
