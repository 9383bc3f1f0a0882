"""One download per Drive: in Colab with Google Drive mounted, the download cache is on Drive."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest

from attnconv.data import default_cache_dir, mount_drive, paths


@pytest.fixture
def bare(monkeypatch, tmp_path):
    """No Colab, no ATTNCONV_CACHE, the user cache folder under tmp_path."""
    monkeypatch.delitem(sys.modules, "google.colab", raising=False)
    monkeypatch.delenv("ATTNCONV_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "user-cache"))
    monkeypatch.setenv("ATTNCONV_DRIVE_MOUNT", str(tmp_path / "drive"))
    return monkeypatch


def _colab(monkeypatch) -> list[str]:
    """A stand-in ``google.colab`` whose drive.mount makes MyDrive, as Colab's does; returns the mounts made."""
    colab, drive = types.ModuleType("google.colab"), types.ModuleType("google.colab.drive")
    mounts: list[str] = []

    def mount(where):
        mounts.append(where)
        (Path(where) / "MyDrive").mkdir(parents=True, exist_ok=True)

    drive.mount, colab.drive = mount, drive
    monkeypatch.setitem(sys.modules, "google.colab", colab)
    monkeypatch.setitem(sys.modules, "google.colab.drive", drive)
    return mounts


def test_outside_colab_nothing_is_mounted_and_the_cache_is_local(bare, tmp_path):
    (tmp_path / "drive" / "MyDrive").mkdir(parents=True)  # a folder of that name alone is not Colab's Drive
    assert mount_drive() is None and paths.mounted_drive() is None
    assert tmp_path / "user-cache" in default_cache_dir().parents


def test_in_colab_the_cache_moves_to_drive_once_it_is_mounted(bare, tmp_path):
    mounts = _colab(bare)
    assert paths.mounted_drive() is None
    assert tmp_path / "user-cache" in default_cache_dir().parents, "before the mount: the runtime's own cache"
    assert mount_drive() == tmp_path / "drive" / "MyDrive"
    assert default_cache_dir() == tmp_path / "drive" / "MyDrive" / "attnconv" / "cache"
    assert mount_drive() == tmp_path / "drive" / "MyDrive" and mounts == [str(tmp_path / "drive")], "mounted once"
    bare.setenv("ATTNCONV_CACHE", str(tmp_path / "chosen"))
    assert default_cache_dir() == tmp_path / "chosen", "ATTNCONV_CACHE still wins"


def test_a_download_lands_on_drive_and_a_fresh_runtime_finds_it(bare, tmp_path):
    """What the chapters do: mount_drive(), then the cache; a new runtime (another user cache) sees the same file."""
    _colab(bare)
    mount_drive()
    first = paths.ensure_cache_folder() / "cifar-10-python.tar.gz"
    first.write_bytes(b"archive")
    bare.setenv("XDG_CACHE_HOME", str(tmp_path / "another-runtime"))
    assert (default_cache_dir() / "cifar-10-python.tar.gz").read_bytes() == b"archive"


def test_runs_home_shares_the_mount(bare, tmp_path):
    from attnconv.train.yourself import runs_home

    bare.delenv("ATTNCONV_RUNS", raising=False)
    mounts = _colab(bare)
    assert runs_home() == tmp_path / "drive" / "MyDrive" / "attnconv-runs"
    assert default_cache_dir().parent == runs_home().parent / "attnconv" and len(mounts) == 1
