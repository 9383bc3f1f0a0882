"""CIFAR-10 (Krizhevsky 2009): example images for the chapters.

Local copies are read from ``$ATTNCONV_DATA/cifar10-jpeg/{train,test}.zip``: one 32x32 RGB JPEG per image,
stored as ``<split>/<class>/NNNN.jpg``. The sorted class folders give the official label order 0-9.
"""

from __future__ import annotations

import io
import math
import zipfile
from dataclasses import dataclass

import numpy as np
import torch
from PIL import Image

from .paths import data_root

CIFAR10_CLASSES = (
    "airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck",
)


@dataclass(frozen=True)
class ExampleImage:
    """One image for a chapter, with where it came from.

    Attributes:
        pixels: ``(32, 32, 3)`` uint8 tensor, (H, W, C).
        label: class name, or ``"generated"``.
        source: a sentence saying which data this is, for the chapter to print.
    """

    pixels: torch.Tensor
    label: str
    source: str

    @property
    def is_real(self) -> bool:
        return self.label != "generated"


def generated_image(size: int = 32, seed: int = 0) -> torch.Tensor:
    """A deterministic synthetic RGB image ``(size, size, 3)`` uint8: a smooth background, a disc and a bar."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:size, 0:size] / (size - 1)
    img = np.stack([0.3 + 0.5 * xx, 0.4 + 0.3 * yy, 0.6 - 0.4 * xx * yy], axis=-1)
    cy, cx, r = rng.uniform(0.35, 0.65), rng.uniform(0.35, 0.65), 0.22
    disc = (yy - cy) ** 2 + (xx - cx) ** 2 < r**2
    img[disc] = [0.9, 0.3, 0.1]
    angle = rng.uniform(0, math.pi)
    bar = np.abs((yy - 0.5) * math.cos(angle) - (xx - 0.5) * math.sin(angle)) < 0.05
    img[bar] = [0.1, 0.1, 0.5]
    img += rng.normal(0, 0.02, img.shape)
    return torch.from_numpy((np.clip(img, 0, 1) * 255).round().astype(np.uint8))


def example_image(index: int = 0, split: str = "test") -> ExampleImage:
    """Image number ``index`` of a CIFAR-10 split when a local copy exists, else a generated image.

    Images are ordered by class, then by file name, so ``index`` is stable across machines.

    Raises:
        ValueError: ``split`` is not ``"train"`` or ``"test"``, or ``index`` is out of range.
        RuntimeError: the local zip exists but cannot be read as the expected archive.
    """
    if split not in ("train", "test"):
        raise ValueError(f"split must be 'train' or 'test', got {split!r}")
    root = data_root()
    archive = None if root is None else root / "cifar10-jpeg" / f"{split}.zip"
    if archive is None or not archive.is_file():
        return ExampleImage(generated_image(seed=index), "generated",
                            "a generated 32x32 image (no local CIFAR-10 found: set ATTNCONV_DATA to use real data)")
    try:
        with zipfile.ZipFile(archive) as zf:
            names = sorted(n for n in zf.namelist() if n.lower().endswith((".jpg", ".jpeg", ".png")))
            if not 0 <= index < len(names):
                raise ValueError(f"index must be in [0, {len(names)}) for the {split} split, got {index}")
            name = names[index]
            pixels = np.asarray(Image.open(io.BytesIO(zf.read(name))).convert("RGB"))
    except zipfile.BadZipFile as err:
        raise RuntimeError(f"{archive} is not a readable zip archive ({err}); replace it with a fresh copy") from err
    label = name.split("/")[-2]
    if label not in CIFAR10_CLASSES or pixels.shape != (32, 32, 3):
        raise RuntimeError(
            f"{archive}: expected {split}/<class>/NNNN.jpg holding 32x32 RGB images, found {name!r} of shape {pixels.shape}"
        )
    return ExampleImage(torch.from_numpy(pixels.copy()), label, f"CIFAR-10 {split} image {index} ({label}), from {archive.name}")
