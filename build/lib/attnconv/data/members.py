"""Reading one member of a zip: a corrupt member or text in an unexpected encoding is an error that names it.

- :func:`read_member`: the bytes of a member; a damaged compressed stream (``zlib.error``), a bad CRC or a cut-off
  member becomes a ``RuntimeError`` that names the archive and the member.
- :func:`decode_text`: bytes to text in the first of the given encodings that fits. UTF-16 or UTF-32 text (a
  byte-order mark, or NUL bytes) and bytes that fit none of them are errors naming the member, never decoded as
  something else.
"""

from __future__ import annotations

import zipfile
import zlib
from pathlib import Path

__all__ = ["decode_text", "read_member"]

_WIDE_MARKS = (b"\xff\xfe", b"\xfe\xff")  # UTF-16 (and UTF-32 little-endian) byte-order marks


def read_member(zf: zipfile.ZipFile, name: str, archive: str | Path | None = None) -> bytes:
    """``zf.read(name)``, with a member that cannot be decompressed named in a ``RuntimeError``."""
    where = archive if archive is not None else zf.filename
    try:
        return zf.read(name)
    except (zlib.error, zipfile.BadZipFile, EOFError, NotImplementedError) as err:
        raise RuntimeError(f"{where}: the member {name!r} is corrupt and cannot be read ({type(err).__name__}: "
                           f"{err}); replace the archive with a fresh copy") from err


def decode_text(raw: bytes, name: str, archive: str | Path, encodings: tuple[str, ...] = ("utf-8",)) -> str:
    """``raw`` (the member ``name`` of ``archive``) decoded with the first of ``encodings`` that fits.

    Raises:
        RuntimeError: ``raw`` is UTF-16/UTF-32 or binary (a byte-order mark or a NUL byte), or fits none of
            ``encodings`` (the message gives the first bad byte and its position).
    """
    if raw.startswith(_WIDE_MARKS) or b"\x00" in raw:
        raise RuntimeError(f"{archive}: the member {name!r} is not 8-bit text (it holds a UTF-16 byte-order mark or "
                           f"NUL bytes: UTF-16, UTF-32 or binary); expected {' or '.join(encodings)}. Replace the "
                           "archive with a fresh copy")
    first: UnicodeDecodeError | None = None
    for encoding in encodings:
        try:
            return raw.decode(encoding)
        except UnicodeDecodeError as err:
            first = first or err
    assert first is not None
    raise RuntimeError(f"{archive}: the member {name!r} is not valid {' or '.join(encodings)} (byte "
                       f"0x{raw[first.start]:02x} at position {first.start}); replace the archive with a fresh copy")
