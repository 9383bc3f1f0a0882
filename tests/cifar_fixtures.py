"""Tiny CIFAR-10 copies in each on-disk format, built on the fly for the data and training tests."""

from __future__ import annotations

import hashlib
import io
import pickle
import tarfile
import zipfile
from pathlib import Path

import numpy as np
from PIL import Image

from attnconv.data import CIFAR10_CLASSES


def tiny_arrays(n_train: int = 20, n_test: int = 10, seed: int = 0) -> dict[str, np.ndarray]:
    """Random uint8 images ``(N, 32, 32, 3)`` and labels cycling through the 10 classes."""
    rng = np.random.default_rng(seed)
    return {
        "train_images": rng.integers(0, 256, (n_train, 32, 32, 3), dtype=np.uint8),
        "train_labels": np.arange(n_train, dtype=np.int64) % 10,
        "test_images": rng.integers(0, 256, (n_test, 32, 32, 3), dtype=np.uint8),
        "test_labels": np.arange(n_test, dtype=np.int64) % 10,
    }


def _batch_pickle(images: np.ndarray, labels: np.ndarray, row_width: int = 3072) -> bytes:
    """One batch in the official layout: a dict with bytes keys; rows hold the R, G, B planes in turn."""
    data = images.transpose(0, 3, 1, 2).reshape(len(images), -1)[:, :row_width]
    batch = {b"batch_label": b"tiny", b"labels": [int(v) for v in labels], b"data": np.ascontiguousarray(data),
             b"filenames": [f"img_{i}.png".encode() for i in range(len(images))]}
    return pickle.dumps(batch, protocol=2)


def write_official_folder(folder: Path, arrays: dict[str, np.ndarray], row_width: int = 3072) -> Path:
    """``folder/cifar-10-batches-py/`` with five train batches, a test batch and ``batches.meta``."""
    root = folder / "cifar-10-batches-py"
    root.mkdir(parents=True, exist_ok=True)
    parts = np.array_split(np.arange(len(arrays["train_images"])), 5)
    for i, idx in enumerate(parts, start=1):
        (root / f"data_batch_{i}").write_bytes(
            _batch_pickle(arrays["train_images"][idx], arrays["train_labels"][idx], row_width))
    (root / "test_batch").write_bytes(_batch_pickle(arrays["test_images"], arrays["test_labels"], row_width))
    (root / "batches.meta").write_bytes(pickle.dumps({b"label_names": [c.encode() for c in CIFAR10_CLASSES]}))
    return root


def write_official_archive(path: Path, arrays: dict[str, np.ndarray], row_width: int = 3072) -> str:
    """``cifar-10-python.tar.gz`` in the official format at ``path``; returns its md5."""
    staging = path.parent / "staging"
    root = write_official_folder(staging, arrays, row_width)
    with tarfile.open(path, "w:gz") as tar:
        tar.add(root, arcname="cifar-10-batches-py")
    return hashlib.md5(path.read_bytes()).hexdigest()


def _encode(pixels: np.ndarray, fmt: str) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(pixels).save(buf, format=fmt, **({"quality": 95} if fmt == "JPEG" else {}))
    return buf.getvalue()


def jpeg_bytes(pixels: np.ndarray) -> bytes:
    """The JPEG file (quality 95) the per-class fixtures store for ``pixels``."""
    return _encode(pixels, "JPEG")


def _entries(arrays: dict[str, np.ndarray], fmt: str, splits=("train", "test")):
    suffix = "jpg" if fmt == "JPEG" else "png"
    for split in splits:
        for i, (img, label) in enumerate(zip(arrays[f"{split}_images"], arrays[f"{split}_labels"])):
            yield f"{split}/{CIFAR10_CLASSES[label]}/{i:04d}.{suffix}", _encode(img, fmt)


def write_class_zip(path: Path, arrays: dict[str, np.ndarray], fmt: str = "JPEG", splits=("train", "test")) -> Path:
    """A zip of ``<split>/<class>/NNNN.jpg`` entries for the given splits."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as zf:
        for name, blob in _entries(arrays, fmt, splits):
            zf.writestr(name, blob)
    return path


def write_class_folder(folder: Path, arrays: dict[str, np.ndarray], fmt: str = "PNG") -> Path:
    """``folder/<split>/<class>/NNNN.png`` image files."""
    for name, blob in _entries(arrays, fmt):
        target = folder / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(blob)
    return folder


def class_sorted(arrays: dict[str, np.ndarray], split: str) -> tuple[np.ndarray, np.ndarray]:
    """The order a per-class copy is read in: by class, then by file name (here, original index)."""
    labels = arrays[f"{split}_labels"]
    order = np.lexsort((np.arange(len(labels)), labels))
    return arrays[f"{split}_images"][order], labels[order]
