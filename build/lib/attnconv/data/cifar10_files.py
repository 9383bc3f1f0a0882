"""Readers of the on-disk forms of CIFAR-10 (Krizhevsky 2009): the official python-pickle archive, its extracted
folder, and per-class image files (in zips or folders). Each returns the four arrays and an ``origin``.
"""

from __future__ import annotations

import hashlib
import io
import pickle
import tarfile
import zipfile
import zlib
from pathlib import Path

import numpy as np
from PIL import Image
from tqdm import tqdm

from .members import read_member

__all__ = ["BATCHES", "CIFAR10_CLASSES", "CIFAR10_URL", "FolderFiles", "IMAGE_SUFFIXES", "ZipFiles", "check_arrays",
           "decode_image", "file_md5", "read_image_files", "read_official_archive", "read_official_folder"]

CIFAR10_CLASSES = (
    "airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck",
)
CIFAR10_URL = "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz"
BATCHES = {"train": tuple(f"data_batch_{i}" for i in range(1, 6)), "test": ("test_batch",)}
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png")


# --- The official python-pickle archive ------------------------------------------------------------------------

def file_md5(path: Path) -> str:
    """The md5 hex digest of a file, read in 1 MiB chunks."""
    digest = hashlib.md5()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


class _ArrayUnpickler(pickle.Unpickler):
    """Unpickles the archive's batches (dicts of numpy arrays, lists and bytes) and refuses any other class."""

    _ALLOWED = {("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct"),
                ("numpy", "ndarray"), ("numpy", "dtype"), ("numpy.core.multiarray", "scalar"),
                ("numpy._core.multiarray", "scalar"), ("_codecs", "encode")}  # protocol-2 bytes from Python 3

    def find_class(self, module: str, name: str):
        if (module, name) not in self._ALLOWED:
            raise pickle.UnpicklingError(f"unexpected object {module}.{name} in a CIFAR-10 batch")
        return super().find_class(module, name)


def _unpickle_batch(raw: bytes, name: str) -> tuple[np.ndarray, np.ndarray]:
    """One batch file -> images ``(n, 32, 32, 3)`` uint8 and labels ``(n,)`` int64."""
    try:
        batch = _ArrayUnpickler(io.BytesIO(raw), encoding="bytes").load()
        data = np.asarray(batch[b"data"], dtype=np.uint8)
        labels = np.asarray(batch[b"labels"], dtype=np.int64)
    except (pickle.UnpicklingError, EOFError, KeyError, TypeError, ValueError, IndexError) as err:
        raise RuntimeError(f"{name}: not a CIFAR-10 batch ({type(err).__name__}: {err})") from err
    if data.ndim != 2 or data.shape[1] != 3 * 32 * 32 or len(labels) != len(data):
        raise RuntimeError(f"{name}: expected data of shape (n, 3072) and n labels, got {data.shape} and {len(labels)}")
    # Each row holds the red plane, then green, then blue, each 32 x 32 in row-major order.
    return data.reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1), labels


def _stack(parts: dict[str, list[tuple[np.ndarray, np.ndarray]]]) -> dict[str, np.ndarray | str]:
    out: dict[str, np.ndarray | str] = {"origin": "official"}
    for split, batches in parts.items():
        out[f"{split}_images"] = np.concatenate([b[0] for b in batches])
        out[f"{split}_labels"] = np.concatenate([b[1] for b in batches])
    return out


def read_official_archive(path: Path, md5: str | None) -> dict[str, np.ndarray | str]:
    """Check the archive's md5, then read its six batches straight from the tar stream (nothing is extracted)."""
    if md5 is not None:
        got = file_md5(path)
        if got != md5:
            raise RuntimeError(
                f"{path}: md5 {got} does not match the official CIFAR-10 archive ({md5}); the file is truncated "
                f"or corrupted. Delete it and download {CIFAR10_URL} again"
            )
    wanted = {name: split for split, names in BATCHES.items() for name in names}
    raw: dict[str, bytes] = {}
    try:
        with tarfile.open(path, "r:gz") as tar:
            for member in tar:
                base = member.name.rsplit("/", 1)[-1]
                if member.isfile() and base in wanted:
                    raw[base] = tar.extractfile(member).read()
    except (tarfile.TarError, EOFError, OSError, zlib.error) as err:
        raise RuntimeError(f"{path}: not a readable tar.gz archive ({err}); replace it with a fresh copy") from err
    missing = sorted(set(wanted) - set(raw))
    if missing:
        raise RuntimeError(f"{path}: the archive lacks the batches {missing}")
    return _stack({s: [_unpickle_batch(raw[n], f"{path}:{n}") for n in names] for s, names in BATCHES.items()})


def read_official_folder(folder: Path) -> dict[str, np.ndarray | str]:
    parts = {}
    for split, names in BATCHES.items():
        missing = [n for n in names if not (folder / n).is_file()]
        if missing:
            raise RuntimeError(f"{folder}: the extracted archive lacks the batches {missing}")
        parts[split] = [_unpickle_batch((folder / n).read_bytes(), str(folder / n)) for n in names]
    return _stack(parts)


# --- Per-class image files, in zips or folders ------------------------------------------------------------------

class ZipFiles:
    """The image entries of one or more zips, as (name, reader) pairs."""

    def __init__(self, zips: list[zipfile.ZipFile]) -> None:
        self.entries = {n: zf for zf in zips for n in zf.namelist() if n.lower().endswith(IMAGE_SUFFIXES)}

    def read(self, name: str) -> bytes:
        return read_member(self.entries[name], name)


class FolderFiles:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.entries = {p.relative_to(root).as_posix(): None for p in root.rglob("*")
                        if p.is_file() and p.suffix.lower() in IMAGE_SUFFIXES}

    def read(self, name: str) -> bytes:
        return (self.root / name).read_bytes()


def decode_image(raw: bytes, name: str, where: str) -> np.ndarray:
    """The RGB pixels ``(H, W, 3)`` of the image file ``name``; a file that is not an image is named."""
    try:
        return np.asarray(Image.open(io.BytesIO(raw)).convert("RGB"))
    except (OSError, SyntaxError, ValueError) as err:  # PIL's UnidentifiedImageError is an OSError
        raise RuntimeError(f"{where}: {name!r} is not a readable image ({type(err).__name__}: {err}); replace it "
                           "or the archive with a fresh copy") from err


def read_image_files(files: ZipFiles | FolderFiles, where: str, progress: bool) -> dict[str, np.ndarray | str]:
    """Decode ``.../<split>/<class>/<file>`` images into arrays, sorted by class, then file name."""
    by_split: dict[str, list[tuple[int, str]]] = {"train": [], "test": []}
    for name in files.entries:
        parts = name.split("/")
        if len(parts) < 3 or parts[-3] not in by_split:
            continue
        if parts[-2] not in CIFAR10_CLASSES:
            raise RuntimeError(f"{where}: {name!r} is in the folder {parts[-2]!r}, which is not a CIFAR-10 class "
                               f"(expected <split>/<class>/<file> with a class from {CIFAR10_CLASSES})")
        by_split[parts[-3]].append((CIFAR10_CLASSES.index(parts[-2]), name))
    for split, items in by_split.items():
        if not items:
            raise RuntimeError(f"{where}: no images under {split}/<class>/")
    suffixes = {n.rsplit(".", 1)[-1].lower() for items in by_split.values() for _, n in items}
    out: dict[str, np.ndarray | str] = {"origin": "jpeg" if suffixes <= {"jpg", "jpeg"} else "png" if suffixes == {"png"} else "images"}
    total = sum(len(v) for v in by_split.values())
    with tqdm(total=total, desc="decoding CIFAR-10", unit="img", disable=not progress) as bar:
        for split, items in by_split.items():
            items.sort(key=lambda item: (item[0], item[1].rsplit("/", 1)[-1]))
            images = np.empty((len(items), 32, 32, 3), dtype=np.uint8)
            for i, (_, name) in enumerate(items):
                pixels = decode_image(files.read(name), name, where)
                if pixels.shape != (32, 32, 3):
                    raise RuntimeError(f"{where}: {name!r} is {pixels.shape[1]}x{pixels.shape[0]}, expected 32x32")
                images[i] = pixels
                bar.update(1)
            out[f"{split}_images"] = images
            out[f"{split}_labels"] = np.array([label for label, _ in items], dtype=np.int64)
    return out


def check_arrays(arrays: dict[str, np.ndarray], expected: dict[str, int] | None, where: str) -> None:
    """Shapes, dtypes, label range and (when ``expected``) the number of images of each split."""
    for split in ("train", "test"):
        images, labels = arrays[f"{split}_images"], arrays[f"{split}_labels"]
        if images.dtype != np.uint8 or images.ndim != 4 or images.shape[1:] != (32, 32, 3):
            raise RuntimeError(f"{where}: {split} images must be uint8 (N, 32, 32, 3), got {images.dtype} {images.shape}")
        if labels.shape != (len(images),) or (len(labels) and not 0 <= labels.min() <= labels.max() <= 9):
            raise RuntimeError(f"{where}: {split} labels must be {len(images)} integers in 0-9")
        if expected is not None and len(images) != expected[split]:
            raise RuntimeError(f"{where}: expected {expected[split]} {split} images, found {len(images)} "
                               f"(an incomplete copy? pass expected_sizes=None to accept it)")
