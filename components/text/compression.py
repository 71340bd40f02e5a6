"""Compression of raw corpus files, detected from magic bytes rather than file names.

Why magic bytes: a file's name can lie (a ``.txt`` book saved gzip-compressed, WikiExtractor's ``wiki_NN`` files
with or without ``--compress``), and a filesystem layer may already have decompressed a ``.bz2`` (Beam's AUTO
compression). The bz2 check also reads the block (or end-of-stream) magic after ``BZh<level>``, so a plain-text book
that happens to start with "BZh" is not taken for an archive.

Errors are :class:`CorruptInputError` naming the file: a truncated or corrupt archive never yields a silently short
text.
"""
from __future__ import annotations

import bz2
import gzip
import zlib
from typing import BinaryIO, Optional

from components.text.errors import CorruptInputError

_BZ2_BLOCK = b"\x31\x41\x59\x26\x53\x59"  # pi: a compressed block follows
_BZ2_EOS = b"\x17\x72\x45\x38\x50\x90"  # sqrt(pi): end of stream (an archive of nothing)
MAGIC_BYTES = 10  # what :func:`sniff` needs to see


def sniff(prefix: bytes) -> Optional[str]:
    """``"bz2"``, ``"gzip"`` or None (not compressed) from the first :data:`MAGIC_BYTES` bytes of a file."""
    if prefix[:2] == b"\x1f\x8b":
        return "gzip"
    if (prefix[:3] == b"BZh" and prefix[3:4].isdigit() and prefix[3:4] != b"0"
            and prefix[4:10] in (_BZ2_BLOCK, _BZ2_EOS)):
        return "bz2"
    return None


def decompress_bytes(data: bytes, path: str) -> bytes:
    """The file's text bytes: ``data`` itself when not compressed, else decompressed (gzip members and bz2 streams
    concatenated, as ``zcat``/``bzcat`` do). A truncated or corrupt archive raises naming ``path``."""
    kind = sniff(data[:MAGIC_BYTES])
    if kind is None:
        return data
    try:
        return gzip.decompress(data) if kind == "gzip" else bz2.decompress(data)
    except (EOFError, OSError, ValueError, zlib.error) as exc:
        raise CorruptInputError(path, f"corrupt or truncated {kind} data ({len(data)} compressed bytes): "
                                      f"{exc or type(exc).__name__}") from exc


def open_decompressed(raw: BinaryIO) -> BinaryIO:
    """A reader of ``raw``'s text bytes, decompressing bz2/gzip as it streams; ``raw`` itself when not compressed.
    ``raw`` must support ``peek`` or ``seek``. Close the result only when it is not ``raw`` (it never closes ``raw``)."""
    if hasattr(raw, "peek"):
        prefix = raw.peek(MAGIC_BYTES)[:MAGIC_BYTES]
    else:
        pos = raw.tell()
        prefix = raw.read(MAGIC_BYTES)
        raw.seek(pos)
    kind = sniff(prefix)
    if kind == "bz2":
        return bz2.BZ2File(raw)  # reads multistream files too
    if kind == "gzip":
        return gzip.GzipFile(fileobj=raw)
    return raw
