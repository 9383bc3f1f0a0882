"""CIFAR-10 (Krizhevsky 2009): the full data set for training, and example images for the chapters.

Local copies are read from ``$ATTNCONV_DATA/cifar10-jpeg/{train,test}.zip``: one 32x32 RGB JPEG per image,
stored as ``<split>/<class>/NNNN.jpg``. The sorted class folders give the official label order 0-9.
:func:`load_cifar10` also reads the official python-pickle archive, downloading it when no copy is found.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import os
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from .._checks import int_at_least
from .cache import load_arrays, save_arrays
from .download import cifar10_md5, cifar10_url, fetch_checked, mirror_in_use
from .cifar10_files import (CIFAR10_CLASSES, CIFAR10_URL, FolderFiles, ZipFiles, check_arrays, decode_image,
                            read_image_files, read_official_archive, read_official_folder)
from .members import read_member
from .paths import CACHE_ENV_VAR, data_root, default_cache_dir, display_path, ensure_cache_folder


@dataclass(frozen=True)
class ExampleImage:
    """One image for a chapter, with where it came from.

    Attributes:
        pixels: ``(32, 32, 3)`` uint8 tensor, (H, W, C).
        label: class name, ``"photograph"`` (:func:`~attnconv.data.photo.example_photo`) or ``"generated"``.
        source: a sentence saying which data this is, for the chapter to print.
        book: the image is one the book's numbers were measured on (the official archive or the JPEG
            re-encoding of the same split); a chapter checks the numbers it quotes only then.
    """

    pixels: torch.Tensor
    label: str
    source: str
    book: bool = False

    @property
    def is_real(self) -> bool:
        return self.label != "generated"


STAND_INS = ("generated", "photograph")  # what example_image shows without CIFAR-10


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


def example_image(index: int = 0, split: str = "test", label: str | None = None, stand_in: str = "generated"
                  ) -> ExampleImage:
    """Image number ``index`` of a CIFAR-10 split when a local copy exists, else a stand-in.

    ``stand_in`` picks the stand-in: ``"generated"`` (a synthetic image, distinct per ``index``) or
    ``"photograph"`` (the real photograph of :func:`~attnconv.data.photo.example_photo`, the same for every
    ``index``, which matplotlib ships: no download).

    With ``label`` (a class name), ``index`` counts within that class only: ``example_image(0, label="cat")`` is
    the first cat of any copy, of whatever size (a mirror's, a test's), where a flat index assumes 1,000 per class.

    The copy is ``$ATTNCONV_DATA/cifar10-jpeg/<split>.zip`` when it exists, else an official archive (or its
    extracted folder) that :func:`load_cifar10` finds without downloading: in ``$ATTNCONV_DATA`` or the cache
    folder, where ``python -m attnconv.data.fetch`` puts it. Images are ordered by class, then by their place in
    the copy, so ``index`` is stable across machines for one kind of copy.

    Raises:
        ValueError: ``split`` is not ``"train"`` or ``"test"``, ``stand_in`` is not ``"generated"`` or
            ``"photograph"``, or ``index`` is out of range.
        RuntimeError: the local zip exists but cannot be read as the expected archive.
    """
    if split not in ("train", "test"):
        raise ValueError(f"split must be 'train' or 'test', got {split!r}")
    if stand_in not in STAND_INS:
        raise ValueError(f"stand_in must be one of {STAND_INS}, got {stand_in!r}")
    if label is not None and label not in CIFAR10_CLASSES:
        raise ValueError(f"label must be one of {CIFAR10_CLASSES} or None, got {label!r}")
    root = data_root()
    archive = None if root is None else root / "cifar10-jpeg" / f"{split}.zip"
    if archive is None or not archive.is_file():
        return _example_from_arrays(index, split, label, stand_in)
    try:
        with zipfile.ZipFile(archive) as zf:
            names = sorted(n for n in zf.namelist() if n.lower().endswith((".jpg", ".jpeg", ".png")))
            if label is not None:
                names = [n for n in names if n.split("/")[-2] == label]
            if not 0 <= index < len(names):
                raise ValueError(f"index must be in [0, {len(names)}) for the {split} split"
                                 f"{'' if label is None else f' of class {label}'}, got {index}")
            name = names[index]
            pixels = decode_image(read_member(zf, name, archive), name, str(archive))
    except zipfile.BadZipFile as err:
        raise RuntimeError(f"{archive} is not a readable zip archive ({err}); replace it with a fresh copy") from err
    found = name.split("/")[-2]
    if found not in CIFAR10_CLASSES or pixels.shape != (32, 32, 3):
        raise RuntimeError(
            f"{archive}: expected {split}/<class>/NNNN.jpg holding 32x32 RGB images, found {name!r} of shape {pixels.shape}"
        )
    return ExampleImage(torch.from_numpy(pixels.copy()), found, f"{_which(split, index, label, found)}, from {archive.name}",
                        book=True)


def test_image(index: int) -> ExampleImage:
    """Test image ``index`` as numbered in the official test split (1,000 per class, in class order), found by its
    class and its place in it, so that any copy that holds it (a mirror's, a smaller one) gives that image, and a
    copy without it says so: :func:`example_image` ``(index % 1000, label=class)``."""
    int_at_least("index", index, 0)
    if index >= 10_000:
        raise ValueError(f"index must be in [0, 10000) (the official test split), got {index}")
    return example_image(index % 1000, "test", label=CIFAR10_CLASSES[index // 1000])


def _which(split: str, index: int, label: str | None, found: str) -> str:
    """How a chapter names the image it shows: by its place in class order, or within its class."""
    if label is None:
        return f"CIFAR-10 {split} image {index} in class order ({found})"
    return f"CIFAR-10 {split} image {index} of class {label}"


def _example_from_arrays(index: int, split: str, label: str | None = None, stand_in: str = "generated"
                         ) -> ExampleImage:
    """:func:`example_image` from an official copy that needs no download, else the stand-in ``stand_in``."""
    try:
        data = load_cifar10(download=False, expected_sizes=None)
    except FileNotFoundError:
        if stand_in == "photograph":
            from .photo import example_photo

            return example_photo()
        seed = index if label is None else 1000 * CIFAR10_CLASSES.index(label) + index  # distinct per class too
        return ExampleImage(generated_image(seed=seed), "generated", stand_in_notice("a generated 32x32 image"))
    images, labels = (data.train_images, data.train_labels) if split == "train" else (data.test_images, data.test_labels)
    order = torch.sort(labels, stable=True).indices  # by class, then by place in the copy
    if label is not None:
        order = order[labels[order] == CIFAR10_CLASSES.index(label)]
    if not 0 <= index < len(order):
        raise ValueError(f"index must be in [0, {len(order)}) for the {split} split"
                         f"{'' if label is None else f' of class {label}'}, got {index}")
    found = CIFAR10_CLASSES[int(labels[order[index]])]
    return ExampleImage(images[order[index]].clone(), found, f"{_which(split, index, label, found)}, from the "
                        f"{data.description}", book=data.origin in ("official", "jpeg"))


def stand_in_notice(what: str) -> str:
    """One sentence for a chapter to print where it falls back to stand-in data: what it uses instead, and how
    to get the real data. Results printed after it are stand-in results, and the sentence says so."""
    return (f"{what}, as stand-in data: no copy of CIFAR-10 was found (set ATTNCONV_DATA, or fetch it with "
            f"python -m attnconv.data.fetch). Results below are stand-in results, not CIFAR-10's.")


# --- The full data set: train and test arrays from whichever copy is found first -------------------------------

CIFAR10_MD5 = "c58f30108f718f92721af3b95e74349a"
ARCHIVE_NAME = "cifar-10-python.tar.gz"
EXTRACTED_NAME = "cifar-10-batches-py"
CIFAR10_SIZES = {"train": 50_000, "test": 10_000}
_ARRAYS = ("train_images", "train_labels", "test_images", "test_labels")


@dataclass(frozen=True)
class CIFAR10:
    """CIFAR-10's train and test sets in memory.

    Attributes:
        train_images: ``(N_train, 32, 32, 3)`` uint8, (N, H, W, C).
        train_labels: ``(N_train,)`` int64 in 0-9, the index into ``CIFAR10_CLASSES``.
        test_images: ``(N_test, 32, 32, 3)`` uint8.
        test_labels: ``(N_test,)`` int64.
        origin: ``"official"`` (the python-pickle archive) or ``"jpeg"`` / ``"png"`` (re-encoded image files).
        source: a sentence naming the copy that was read, for provenance records.
    """

    train_images: torch.Tensor
    train_labels: torch.Tensor
    test_images: torch.Tensor
    test_labels: torch.Tensor
    origin: str
    source: str

    @property
    def description(self) -> str:
        """``"official CIFAR-10"`` (the archive with the official md5) or ``"JPEG re-encoding"``: which pixels a
        result was measured on; an archive in the official format with another md5 is named as a mirror's."""
        names = {"official": "official CIFAR-10", "jpeg": "JPEG re-encoding", "generated": "generated stand-in",
                 "mirror": "CIFAR-10-format archive from a mirror (not the official md5)"}
        return names.get(self.origin, f"{self.origin} files")


@dataclass(frozen=True)
class _Copy:
    """A copy of CIFAR-10 found on disk: its layout, its files, and a sentence for provenance."""

    layout: str  # "official-archive" | "official-folder" | "image-zips" | "image-zip" | "image-folder"
    paths: tuple[Path, ...]
    description: str


def generated_cifar10(n_train: int = 256, n_test: int = 128, seed: int = 0) -> CIFAR10:
    """A stand-in with CIFAR-10's shapes, made of :func:`generated_image` pictures, labels cycling 0-9.

    For checking a pipeline where no copy of the data can be had; nothing meaningful can be learned from it.
    """
    if n_train <= 0 or n_test <= 0:
        raise ValueError(f"n_train and n_test must be positive, got {n_train} and {n_test}")
    images = torch.stack([generated_image(seed=seed * 1_000_003 + i) for i in range(n_train + n_test)])
    labels = torch.arange(n_train + n_test) % 10
    return CIFAR10(images[:n_train], labels[:n_train], images[n_train:], labels[n_train:], "generated",
                   f"{n_train} + {n_test} generated images (no CIFAR-10 copy was available)")


def load_cifar10(
    path: str | os.PathLike | None = None,
    *,
    cache_dir: str | os.PathLike | None = None,
    download: bool = True,
    md5: str | None = CIFAR10_MD5,
    expected_sizes: dict[str, int] | None = CIFAR10_SIZES,
    progress: bool = False,
) -> CIFAR10:
    """CIFAR-10 train and test sets as uint8 ``(N, 32, 32, 3)`` tensors and int64 labels.

    With ``path=None`` the first copy found is read, in this order:

    1. ``$ATTNCONV_DATA/cifar10-jpeg/{train,test}.zip`` (JPEG files under ``train/<class>/``, ``test/<class>/``);
    2. a local official ``cifar-10-python.tar.gz`` or its extracted ``cifar-10-batches-py/`` folder, in
       ``$ATTNCONV_DATA`` or in ``cache_dir``;
    3. a download of the official archive into ``cache_dir`` (md5-checked), when ``download`` is true.

    ``path`` names a copy explicitly: the official archive or its extracted folder, a folder holding
    ``train.zip`` and ``test.zip``, one zip holding ``train/<class>/`` and ``test/<class>/``, or a folder of
    images in that per-class layout. Class folders map to labels through ``CIFAR10_CLASSES``; images are
    ordered by class, then by file name.

    The decoded arrays are cached as ``.npy`` under ``cache_dir`` (written atomically, keyed by the copy's
    files), so later calls skip decoding.

    Args:
        path: an explicit copy to read, or ``None`` to search.
        cache_dir: downloads and decoded arrays; default :func:`~attnconv.data.paths.default_cache_dir`.
        download: allow step 3.
        md5: the hash an official archive must have; ``None`` skips the check (for archives you built).
        expected_sizes: ``{"train": n, "test": m}`` image counts to insist on; ``None`` accepts any.
        progress: show a progress bar while downloading and while decoding image files.

    Raises:
        FileNotFoundError: no copy was found and none could be downloaded; the message says where to put one.
        RuntimeError: a copy is corrupted or truncated (an md5 mismatch, an unreadable archive), or holds the
            wrong number or shape of images. No cache is written then.
        ValueError: ``path`` is not a recognisable copy, or an argument has the wrong form.
    """
    if md5 == CIFAR10_MD5:  # the default: the official hash, or a mirror's (ATTNCONV_CIFAR10_MD5)
        md5 = cifar10_md5(CIFAR10_MD5)
    if expected_sizes is CIFAR10_SIZES and mirror_in_use():  # a mirror (a test archive) may hold any number
        expected_sizes = None
    if expected_sizes is not None and set(expected_sizes) != {"train", "test"}:
        raise ValueError(f"expected_sizes must have keys 'train' and 'test', got {sorted(expected_sizes)}")
    cache = default_cache_dir() if cache_dir is None else Path(cache_dir).expanduser()
    copy = _identify(Path(path).expanduser(), md5) if path is not None else _find(cache, download, md5, progress)
    folder = cache / "cifar10-arrays" / _cache_key(copy)
    cached = load_arrays(folder, _ARRAYS)
    if cached is None:
        arrays = _decode(copy, md5, progress)
        meta = {"origin": arrays.pop("origin"), "source": copy.description}
        check_arrays(arrays, expected_sizes, copy.description)  # before writing: never cache a bad copy
        save_arrays(folder, arrays, meta)
    else:
        arrays, meta = cached
        check_arrays(arrays, expected_sizes, copy.description)
    tensors = {k: torch.from_numpy(v) for k, v in arrays.items()}
    origin = meta["origin"]
    if origin == "official" and md5 != CIFAR10_MD5:  # the official format, but not the official archive's md5
        origin = "mirror"
    return CIFAR10(**tensors, origin=origin, source=copy.description)  # not the cached text: paths move


def _find(cache: Path, download: bool, md5: str | None, progress: bool = False) -> _Copy:
    """Steps 1-3 of :func:`load_cifar10`'s search."""
    root = data_root()
    if root is not None:
        zips = [root / "cifar10-jpeg" / f"{split}.zip" for split in ("train", "test")]
        present = [z.is_file() for z in zips]
        if all(present):
            return _Copy("image-zips", tuple(zips), f"{display_path(zips[0].parent)}/{{train,test}}.zip")
        if any(present):
            missing = zips[present.index(False)]
            raise FileNotFoundError(f"{missing} is missing next to {zips[present.index(True)]}; both are needed")
    for folder in ([root] if root is not None else []) + [cache]:
        if (folder / ARCHIVE_NAME).is_file():
            return _Copy("official-archive", (folder / ARCHIVE_NAME,), f"the official archive {folder / ARCHIVE_NAME}")
        if (folder / EXTRACTED_NAME / "data_batch_1").is_file():
            return _Copy("official-folder", (folder / EXTRACTED_NAME,), f"the extracted archive {folder / EXTRACTED_NAME}")
    where = (f"put {ARCHIVE_NAME} (from {cifar10_url()}) in {cache}, or set ATTNCONV_DATA to a folder holding "
             f"cifar10-jpeg/train.zip and cifar10-jpeg/test.zip")
    if not download:
        raise FileNotFoundError(f"no local copy of CIFAR-10 found and download=False: {where}")
    return _download(cache, md5, where, progress)


def _download(cache: Path, md5: str | None, where: str, progress: bool | None = False) -> _Copy:
    """Fetch the official archive (or the mirror's); it lands in ``cache`` only once its hash has been checked."""
    url = cifar10_url()
    cache = ensure_cache_folder(cache)
    try:  # an md5 mismatch (RuntimeError) is raised as it is: the bad download has been discarded
        fetched = fetch_checked(url, cache / ARCHIVE_NAME, md5, progress=progress, setting="ATTNCONV_CIFAR10_URL",
                                label="CIFAR-10")
    except FileNotFoundError as err:  # offline, refused, an error page, stalled, too slow
        raise FileNotFoundError(f"{err}; {where}") from err
    return _Copy("official-archive", (fetched,), f"the official archive {fetched} (downloaded)")


def download_official(cache_dir: str | os.PathLike | None = None, *, progress: bool | None = None) -> str:
    """Fetch the official archive (or ``$ATTNCONV_CIFAR10_URL``'s) into the cache unless a copy is there; md5-checked.

    Returns the archive's path as a reader may see it. Raises like :func:`load_cifar10`'s download, and
    ``NotADirectoryError`` when the cache folder (``ATTNCONV_CACHE``) is a file."""
    md5 = cifar10_md5(CIFAR10_MD5)
    cifar10_url()  # a wrong address is reported before the cache folder is made
    cache = ensure_cache_folder(cache_dir)
    copy = _download(cache, md5, f"put {ARCHIVE_NAME} in {cache} by hand", progress)
    return display_path(copy.paths[0])


def _identify(path: Path, md5: str | None) -> _Copy:
    """What kind of copy an explicit ``path`` is."""
    if path.is_file():
        if path.name.endswith((".tar.gz", ".tgz")):
            return _Copy("official-archive", (path,), f"the official archive {path}")
        if path.suffix == ".zip":
            return _Copy("image-zip", (path,), f"per-class images in {path}")
    elif path.is_dir():
        if (path / "data_batch_1").is_file():
            return _Copy("official-folder", (path,), f"the extracted archive {path}")
        for inner in (EXTRACTED_NAME, ARCHIVE_NAME, "cifar10-jpeg"):
            if (path / inner).exists():
                return _identify(path / inner, md5)
        if (path / "train.zip").is_file() and (path / "test.zip").is_file():
            return _Copy("image-zips", (path / "train.zip", path / "test.zip"), f"{path}/{{train,test}}.zip")
        if (path / "train").is_dir() and (path / "test").is_dir():
            return _Copy("image-folder", (path,), f"per-class images under {path}")
    else:
        raise FileNotFoundError(f"path {str(path)!r} does not exist")
    raise ValueError(
        f"path must be {ARCHIVE_NAME}, its extracted {EXTRACTED_NAME}/ folder, a folder with train.zip and "
        f"test.zip, a zip or a folder with train/<class>/ and test/<class>/ images; got {str(path)!r}"
    )


def _cache_key(copy: _Copy) -> str:
    """A name for the decoded arrays that changes whenever the copy's files change (path, size, mtime)."""
    digest = hashlib.sha1(copy.layout.encode())
    for p in copy.paths:
        files = sorted(f for f in p.rglob("*") if f.is_file()) if p.is_dir() else [p]
        for f in files:
            st = f.stat()
            digest.update(f"{f.resolve()}|{st.st_size}|{st.st_mtime_ns}\n".encode())
    return f"{copy.layout}-{digest.hexdigest()[:16]}"


def _decode(copy: _Copy, md5: str | None, progress: bool) -> dict[str, np.ndarray | str]:
    """Read every image of ``copy`` into arrays (and its ``origin``)."""
    if copy.layout == "official-archive":
        return read_official_archive(copy.paths[0], md5)
    if copy.layout == "official-folder":
        return read_official_folder(copy.paths[0])
    if copy.layout == "image-folder":
        return read_image_files(FolderFiles(copy.paths[0]), copy.description, progress)
    try:
        with contextlib.ExitStack() as stack:
            zips = [stack.enter_context(zipfile.ZipFile(p)) for p in copy.paths]
            return read_image_files(ZipFiles(zips), copy.description, progress)
    except zipfile.BadZipFile as err:
        raise RuntimeError(f"{copy.description}: not a readable zip archive ({err}); replace it with a fresh copy") from err
