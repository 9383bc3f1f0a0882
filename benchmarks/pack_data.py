"""Pack the data a GPU campaign needs into one tar.gz, to carry to a machine without the network.

Usage: python benchmarks/pack_data.py --out campaign-data.tar.gz [--data DIR]

``DIR`` (default ``$ATTNCONV_DATA``) must hold ``cifar10-jpeg/{train,test}.zip`` (the CIFAR-10 images, about
20 MB) and ``nltk/corpora/*.zip``. The archive holds them under the same names, plus ``MANIFEST.json`` with each
file's size and md5, which ``benchmarks/gpu_campaign.sh`` checks after unpacking. The archive is written to a
temporary name and moved into place, so an interrupted run leaves no half-written archive.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import tarfile
from pathlib import Path

REQUIRED = ("cifar10-jpeg/train.zip", "cifar10-jpeg/test.zip")


def pack(data: Path, out: Path) -> dict[str, dict[str, int | str]]:
    """Write ``out`` from the files under ``data``; returns the manifest (relative path -> size and md5).

    Raises:
        FileNotFoundError: a required file is missing.
    """
    missing = [name for name in REQUIRED if not (data / name).is_file()]
    if missing:
        raise FileNotFoundError(f"--data {data} lacks {', '.join(missing)}")
    files = list(REQUIRED) + sorted(p.relative_to(data).as_posix() for p in (data / "nltk" / "corpora").glob("*.zip"))
    manifest = {}
    for name in files:
        blob = (data / name).read_bytes()
        manifest[name] = {"size": len(blob), "md5": hashlib.md5(blob).hexdigest()}
    tmp = out.with_name(out.name + ".tmp")
    with tarfile.open(tmp, "w:gz") as tar:
        for name in files:
            tar.add(data / name, arcname=name)
        text = json.dumps(manifest, indent=1, sort_keys=True).encode()
        info = tarfile.TarInfo("MANIFEST.json")
        info.size = len(text)
        tar.addfile(info, io.BytesIO(text))
    os.replace(tmp, out)
    return manifest


def check(folder: Path) -> None:
    """Check an unpacked folder against its ``MANIFEST.json``.

    Raises:
        RuntimeError: a file is missing or has another size or md5.
    """
    manifest = json.loads((folder / "MANIFEST.json").read_text())
    for name, want in manifest.items():
        path = folder / name
        if not path.is_file() or hashlib.md5(path.read_bytes()).hexdigest() != want["md5"]:
            raise RuntimeError(f"{path} is missing or differs from the packed copy (md5 {want['md5']})")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="the archive to write")
    parser.add_argument("--data", default=os.environ.get("ATTNCONV_DATA"), help="the data folder")
    parser.add_argument("--check", help="check an unpacked folder against its MANIFEST.json instead")
    args = parser.parse_args(argv)
    if args.check:
        check(Path(args.check))
        print(f"{args.check}: every packed file is present and unchanged")
        return 0
    if not args.out or not args.data:
        parser.error("--out and --data (or ATTNCONV_DATA) are needed")
    manifest = pack(Path(args.data), Path(args.out))
    print(f"{args.out}: {len(manifest)} files, {sum(v['size'] for v in manifest.values()) / 2**20:.1f} MB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
