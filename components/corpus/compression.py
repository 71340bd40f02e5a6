"""Compression of raw corpus files: detected from magic bytes rather than file names, and the one place where a
damaged archive becomes an error naming the file.

Why magic bytes: a file's name can lie (a ``.txt`` book saved gzip-compressed, WikiExtractor's ``wiki_NN`` files
with or without ``--compress``), and a filesystem layer may already have decompressed a ``.bz2`` (Beam's AUTO
compression). The bz2 check also reads the block (or end-of-stream) magic after ``BZh<level>``, so a plain-text book
that happens to start with "BZh" is not taken for an archive. A file that is not compressed is read as it is, whatever
its name (:func:`misnamed` gives the hint a reader's error adds when such a file then fails to parse).

Every reader (Wikipedia XML dumps, WikiExtractor output, books; in the TFX CorpusGen and in ``ingest``) decompresses
through :class:`_Decompressing`, which raises :class:`CorruptInputError` naming the file, the gzip member or bz2
stream and the compressed bytes for every kind of damage: a corrupt header or block (``zlib.error``, bz2's
``OSError``), a bad CRC or length, a truncated stream, and bytes after the last stream that are not another stream
(trailing garbage, or a later member whose header is damaged: the standard library's ``bz2`` silently stops there).
Trailing NUL padding is allowed, as ``gzip`` allows it. A damaged archive never yields a silently short text.
"""
from __future__ import annotations

import bz2
import io
import zlib
from typing import BinaryIO, Callable, List, Optional, Tuple

from components.text.corrupt_input import CorruptInputError

_BZ2_BLOCK = b"\x31\x41\x59\x26\x53\x59"  # pi: a compressed block follows
_BZ2_EOS = b"\x17\x72\x45\x38\x50\x90"  # sqrt(pi): end of stream (an archive of nothing)
MAGIC_BYTES = 10  # what :func:`sniff` needs to see
_MAGIC = {"gzip": b"\x1f\x8b", "bz2": b"BZh"}
_UNIT = {"gzip": "member", "bz2": "stream"}  # what one concatenated piece of the archive is called
_SUFFIXES = {".gz": "gzip", ".gzip": "gzip", ".bz2": "bz2"}
_CHUNK = 1 << 16  # compressed bytes read at a time
Context = Optional[Callable[[], str]]


def sniff(prefix: bytes) -> Optional[str]:
    """``"bz2"``, ``"gzip"`` or None (not compressed) from the first :data:`MAGIC_BYTES` bytes of a file."""
    if prefix[:2] == _MAGIC["gzip"]:
        return "gzip"
    if (prefix[:3] == _MAGIC["bz2"] and prefix[3:4].isdigit() and prefix[3:4] != b"0"
            and prefix[4:10] in (_BZ2_BLOCK, _BZ2_EOS)):
        return "bz2"
    return None


def misnamed(name: str) -> str:
    """For a file read as not compressed: ``" (named .gz, but not gzip data: a damaged header?)"`` when its name says
    otherwise, else ``""``; appended to a reader's error about the file's content."""
    for suffix, kind in _SUFFIXES.items():
        if str(name).lower().endswith(suffix):
            return f" (named {suffix}, but not {kind} data: a damaged header?)"
    return ""


class _Decompressing(io.RawIOBase):
    """The decompressed bytes of a gzip or bz2 file (members / streams concatenated, as ``zcat``/``bzcat`` read them).

    Any damage raises :class:`CorruptInputError` naming ``name``, the member or stream and the compressed bytes, with
    ``context()`` (the reader's position: page, document, line) appended in parentheses. Never closes ``raw``."""

    def __init__(self, raw: BinaryIO, kind: str, name: str, context: Context = None):
        self._raw, self._kind, self._name, self._context = raw, kind, str(name), context
        self._unit = _UNIT[kind]
        self._number = 0  # the member / stream being read, 1-based
        self._read = 0  # compressed bytes read from raw so far
        self._fed_from = 0  # where the compressed bytes last given to the decompressor start
        self._input = b""  # compressed bytes read but not yet taken by the decompressor
        self._done = False
        self._failed: Optional[CorruptInputError] = None
        self._start(b"")

    def readable(self) -> bool:
        return True

    def _start(self, data: bytes) -> None:
        self._d = bz2.BZ2Decompressor() if self._kind == "bz2" else zlib.decompressobj(16 + zlib.MAX_WBITS)
        self._number += 1
        self._input = data

    def _fail(self, detail: str, cause: Optional[BaseException] = None):
        where = self._context() if self._context else ""
        self._failed = CorruptInputError(self._name, f"{detail} ({where})" if where else detail)
        raise self._failed from cause

    def _more(self) -> bytes:
        chunk = self._raw.read(_CHUNK) or b""
        self._read += len(chunk)
        return chunk

    def _call(self, data: bytes, size: int) -> bytes:
        if data:
            self._fed_from = self._read - len(data)
        try:
            out = self._d.decompress(data, size)
        except (OSError, zlib.error) as exc:  # bz2: "Invalid data stream"; zlib: bad header, block, CRC, length
            self._fail(f"corrupt {self._kind} data in {self._unit} {self._number} (detected at compressed bytes "
                       f"{self._fed_from}-{self._read}): {exc}", exc)
        if self._kind == "gzip":
            self._input = self._d.unconsumed_tail
        return out

    def _produce(self, size: int) -> bytes:
        """Up to ``size`` decompressed bytes; b"" only at the end of the whole file."""
        if self._failed is not None:
            raise self._failed  # once damaged, always: a reader that reads on after the error gets it again
        while not self._done:
            d = self._d
            if d.eof:
                self._next()
                continue
            if self._input or (self._kind == "bz2" and not d.needs_input):
                data, self._input = self._input, b""
                out = self._call(data, size)
            else:
                data = self._more()
                out = self._call(data, size)
                if not data and not out and not self._d.eof:
                    self._fail(f"truncated {self._kind} data: the file ends at compressed byte {self._read}, inside "
                               f"{self._unit} {self._number} (no end-of-stream marker)")
            if out:
                return out
        return b""

    def _next(self) -> None:
        """After one member / stream: the end of the file, NUL padding, or the next one; anything else is damage."""
        rest = self._d.unused_data + self._input
        while True:
            stripped = rest.lstrip(b"\0")
            if len(stripped) >= len(_MAGIC[self._kind]):
                break
            chunk = self._more()
            if not chunk:
                break
            rest = stripped + chunk
        rest = stripped
        if not rest:
            self._done = True
            return
        if not rest.startswith(_MAGIC[self._kind]):
            self._fail(f"the bytes after {self._kind} {self._unit} {self._number} are not another {self._unit} "
                       f"(compressed byte {self._read - len(rest)}, starting {rest[:8]!r}): trailing garbage or a "
                       f"damaged {self._unit} header")
        self._start(rest)

    def readinto(self, buffer) -> int:
        out = self._produce(len(buffer)) if len(buffer) else b""
        buffer[: len(out)] = out
        return len(out)

    def read(self, size: int = -1) -> bytes:
        if size is None or size < 0:
            return self.readall()
        return self._produce(size) if size else b""

    def readall(self) -> bytes:
        parts: List[bytes] = []
        while True:
            out = self._produce(1 << 20)
            if not out:
                return b"".join(parts)
            parts.append(out)


class _Prepended(io.RawIOBase):
    """A read-only stream that replays ``prefix`` before the rest of ``stream`` (for magic sniffing on streams without
    ``peek``/``seek``). Never closes ``stream``."""

    def __init__(self, prefix: bytes, stream: BinaryIO):
        self._prefix, self._stream = prefix, stream

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        if self._prefix:
            n = min(len(buffer), len(self._prefix))
            buffer[:n] = self._prefix[:n]
            self._prefix = self._prefix[n:]
            return n
        data = self._stream.read(len(buffer)) or b""
        buffer[: len(data)] = data
        return len(data)


def open_decompressed(raw: BinaryIO, name: str, context: Context = None) -> Tuple[BinaryIO, Optional[str]]:
    """``(reader of raw's text bytes, "gzip" | "bz2" | None)``: bz2/gzip decompressed as it streams, raising
    :class:`CorruptInputError` naming ``name`` (with ``context()`` appended) for any damage; ``raw`` itself when not
    compressed and it can peek or seek. Close the reader only when it is not ``raw`` (that never closes ``raw``)."""
    if hasattr(raw, "peek"):
        prefix = raw.peek(MAGIC_BYTES)[:MAGIC_BYTES]
    elif getattr(raw, "seekable", lambda: False)():
        pos = raw.tell()
        prefix = raw.read(MAGIC_BYTES)
        raw.seek(pos)
    else:
        prefix = raw.read(MAGIC_BYTES) or b""
        raw = io.BufferedReader(_Prepended(prefix, raw))
    kind = sniff(prefix)
    if kind is None:
        return raw, None
    return io.BufferedReader(_Decompressing(raw, kind, name, context), buffer_size=_CHUNK), kind


# How far :func:`check_archive` reads on: more than one bz2 block decompresses to (at most ~46 MB after its run-length
# expansion, usually the 900 kB of its level), so the block whose text was garbled is checked in nearly every case.
CHECK_BYTES = 8 << 20


def check_archive(stream: BinaryIO, compressed: Optional[str]) -> None:
    """Call while handling an error about a compressed file's *content*: reads on (at most :data:`CHECK_BYTES`), so
    that damage to the archive itself is the error reported. A bz2 block hands out its text before its CRC is checked
    at the block's end, so a damaged block first looks like malformed XML or a broken ``<doc>``; the archive's error
    names the real cause."""
    if compressed:
        stream.read(CHECK_BYTES)


def decompress_bytes(data: bytes, path: str) -> bytes:
    """The file's text bytes: ``data`` itself when not compressed, else decompressed (gzip members and bz2 streams
    concatenated); any damage raises :class:`CorruptInputError` naming ``path``."""
    kind = sniff(data[:MAGIC_BYTES])
    return data if kind is None else _Decompressing(io.BytesIO(data), kind, path).readall()
