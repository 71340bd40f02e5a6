"""Damaged gzip and bz2 files, every class of damage, in every reader (components/corpus/compression.py).

Each of the three file kinds (WikiExtractor output, a MediaWiki XML dump, a book) is compressed both ways and damaged
one way at a time: a corrupt header (the first deflate byte; the first bz2 block-header byte after its CRC), a
corrupt byte in the middle, a truncated stream, a bad CRC, trailing garbage, a second member / stream with a damaged
header, and a damaged magic byte (the file is then read as not compressed). Each ends as :class:`CorruptInputError`
naming the file, read directly by the reader and through the Beam job's per-file reader (``corpus_beam``, what
CorpusGen and ``ingest`` run); the exact messages are built from the files' sizes below. ``ingest`` end to end (exit 2,
one line, nothing under the output) is in tests/test_ingest.py."""
import bz2
import gzip
import io
from pathlib import Path

import pytest

from components.corpus import corpus_beam
from components.corpus.books import read_book
from components.corpus.compression import decompress_bytes, open_decompressed
from components.text.corrupt_input import CorruptInputError
from components.corpus.wiki import iter_pages
from components.corpus.wikiextractor_output import iter_extracted
from tests.conftest import REPO
from tests.test_text_wiki import _page, _xml

FIXTURES = Path(REPO) / "tests" / "fixtures" / "corpus"
TEXT = (FIXTURES / "wikiextractor" / "AA" / "wiki_00").read_bytes()  # 3 <doc>s, 31 lines
BOOK = gzip.decompress((FIXTURES / "books" / "pg924_dickens-charles__to-be-read-at-dusk-cut.txt.gz").read_bytes())
BODY = "Paris is the capital of France. It is large and old, with many museums and famous old bridges. "
XML = _xml(_page("Paris", 5, BODY * 3) + _page("Lyon", 6, BODY * 3) + _page("Nice", 7, BODY * 3)).encode("utf-8")

KINDS = {  # kind: (text, file name before the compression suffix, the reader)
    "wikiextractor": (TEXT, "wiki_01", lambda path: list(iter_extracted(path))),
    "xml": (XML, "enwiki-pages-articles.xml", lambda path: list(iter_pages(path))),
    "book": (BOOK, "book.txt", lambda path: read_book(path, path.parent)),
}
SUFFIX = {"gzip": ".gz", "bz2": ".bz2"}
UNIT = {"gzip": "member", "bz2": "stream"}


def _compress(fmt, text):
    return gzip.compress(text, mtime=0) if fmt == "gzip" else bz2.compress(text)


def _flip(data, at, mask=0xFF):
    data = bytearray(data)
    data[at] ^= mask
    return bytes(data)


def _header(fmt, data):
    return _flip(data, 10 if fmt == "gzip" else 14)


DAMAGE = {
    "corrupt-header": _header,
    "corrupt-middle": lambda fmt, data: _flip(data, len(data) // 2, 0x55),
    "truncated": lambda fmt, data: data[: len(data) * 2 // 3],
    "bad-crc": lambda fmt, data: _flip(data, -8 if fmt == "gzip" else -2, 0x01),  # gzip: CRC32; bz2: the stream CRC
    "trailing-garbage": lambda fmt, data: data + b"not an archive\n",
    "damaged-second-member": lambda fmt, data: data + _header(fmt, data),
    "wrong-magic": lambda fmt, data: _flip(data, 0),
}
REASON = {  # what zlib / libbzip2 say about the damage
    ("gzip", "corrupt-header"): "Error -3 while decompressing data: invalid distance too far back",
    ("gzip", "corrupt-middle"): "Error -3 while decompressing data: incorrect data check",
    ("gzip", "bad-crc"): "Error -3 while decompressing data: incorrect data check",
}
# Where the reader was when the damage showed ("" for books: read whole). The default is the first read; the Beam
# reader then is still telling the file's format from its first bytes.
FIRST = {"wikiextractor": " (after 0 documents, at line 0)", "xml": " (after 0 pages)", "book": ""}
BEAM_FIRST = " (reading its first bytes to tell its format)"
AFTER_ALL = {"wikiextractor": " (after 3 documents, at line 31)", "xml": " (after 0 pages)", "book": ""}
CONTEXT = {  # (kind, fmt, damage): (the reader's, the Beam reader's) where not the first read
    ("wikiextractor", "gzip", "truncated"): (
        " (after 1 documents, at line 17, in <doc id=6563 title='Conjunction introduction'>)",) * 2,
    ("xml", "gzip", "truncated"): (" (after 0 pages)",) * 2,
    **{(kind, fmt, damage): (AFTER_ALL[kind],) * 2 for kind in KINDS for fmt in SUFFIX
       for damage in ("trailing-garbage", "damaged-second-member")},
}


def _expected(kind, fmt, damage, data, damaged, path, beam):
    """The exact message: ``<path>: <what is wrong with the archive> (<where the reader was>)``."""
    n, unit = len(data), UNIT[fmt]
    if damage == "wrong-magic":  # not sniffed as compressed: read as plain text, which is not what it must be
        hint = f" (named {SUFFIX[fmt]}, but not {fmt} data: a damaged header?)"
        if kind == "book":
            return (f"{path}: not valid UTF-8 at byte offset 0 (line 1, byte 0x{damaged[0]:02x}){hint}; pass "
                    "--set corpus.book_encoding_fallback=latin-1 to read such files as Latin-1")
        if beam:
            return (f"{path}: neither a MediaWiki XML export nor WikiExtractor output (starts with "
                    f"{damaged[:40].decode('utf-8', 'replace')!r}){hint}")
        if kind == "xml":
            return (f"{path}: malformed or truncated XML at line 1, column 0 (after 0 pages, compressed/raw byte offset "
                    f"~{n}): not well-formed (invalid token): line 1, column 0{hint}")
        return f"{path}: not valid UTF-8 at line 1 (byte offset 0 of the text){hint}"
    reason = REASON.get((fmt, damage), "Invalid data stream")
    detail = {
        "truncated": f"truncated {fmt} data: the file ends at compressed byte {len(damaged)}, inside {unit} 1 (no "
                     "end-of-stream marker)",
        "trailing-garbage": f"the bytes after {fmt} {unit} 1 are not another {unit} (compressed byte {n}, starting "
                            f"b'not an a'): trailing garbage or a damaged {unit} header",
        "damaged-second-member": f"corrupt {fmt} data in {unit} 2 (detected at compressed bytes {n}-{2 * n}): "
                                 f"{REASON.get((fmt, 'corrupt-header'), reason)}",
    }.get(damage, f"corrupt {fmt} data in {unit} 1 (detected at compressed bytes 0-{n}): {reason}")
    first = BEAM_FIRST if beam and kind != "book" else FIRST[kind]
    where = CONTEXT.get((kind, fmt, damage), (first, first))[beam]
    return f"{path}: {detail}{where}"


@pytest.mark.parametrize("damage", sorted(DAMAGE))
@pytest.mark.parametrize("fmt", sorted(SUFFIX))
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_damage_to_every_compressed_kind_is_corrupt_input_naming_the_file(tmp_path, kind, fmt, damage):
    text, name, read = KINDS[kind]
    data = _compress(fmt, text)
    damaged = DAMAGE[damage](fmt, data)
    path = tmp_path / (name + SUFFIX[fmt])
    path.write_bytes(damaged)
    with pytest.raises(CorruptInputError) as info:
        read(path)
    assert info.value.path == str(path)
    assert str(info.value) == _expected(kind, fmt, damage, data, damaged, path, beam=False)
    # The Beam job's reader (CorpusGen's and ingest's): the same error, or the format check's where it stops first.
    item = ("books" if kind == "book" else "wikipedia", str(path), str(tmp_path))
    with pytest.raises(CorruptInputError) as info:
        list(corpus_beam.read_input_file(item, 200, None))
    assert str(info.value) == _expected(kind, fmt, damage, data, damaged, path, beam=True)


@pytest.mark.parametrize("fmt", sorted(SUFFIX))
def test_whole_archives_read_whole(tmp_path, fmt):
    """Members / streams concatenated (zcat, bzcat, Wikipedia's multistream dumps) and trailing NUL padding (as gzip
    allows) are read as one text; a file named .gz/.bz2 that is not compressed is read as it is."""
    data = _compress(fmt, TEXT)
    for name, content in (("two", data + data), ("padded", data + b"\0" * 700), ("plain", TEXT)):
        path = tmp_path / f"{name}{SUFFIX[fmt]}"
        path.write_bytes(content)
        expected = 6 if name == "two" else 3
        assert [d.page_id for d in iter_extracted(path)] == [7498, 6563, 1194] * (expected // 3)
        assert decompress_bytes(content, str(path)) == TEXT * (expected // 3)
    stream, compressed = open_decompressed(io.BufferedReader(io.BytesIO(data + data)), "x")
    assert compressed == fmt and stream.read() == TEXT + TEXT


def test_a_garbled_bz2_block_is_reported_as_the_archive_not_as_its_text(tmp_path):
    """libbzip2 hands out a block's text before it checks the block's CRC: the reader first sees text that is not
    WikiExtractor output, then reads on and reports the archive, the garbled text as its context."""
    data = bz2.compress(TEXT * 40)
    path = tmp_path / "wiki_01.bz2"
    path.write_bytes(_flip(data, len(data) // 2, 0x55))
    with pytest.raises(CorruptInputError) as info:
        list(iter_extracted(path))
    assert str(info.value) == (f"{path}: corrupt bz2 data in stream 1 (detected at compressed bytes 0-{len(data)}): "
                               "Invalid data stream (after 0 documents, at line 1)")
    seen_first = info.value.__cause__.__context__  # libbzip2's OSError came while handling the content error
    assert str(seen_first).startswith(f"{path}: text outside <doc> ... </doc> at line 1: ")
