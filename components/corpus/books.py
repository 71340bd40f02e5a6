"""Plain-text books (the BookCorpus stand-in) → documents.

One document per book: ALBERT's sentence-order pairs are drawn from consecutive text within a
document, and a whole book is the natural coherent unit (BookCorpus was used the same way). Books
are read whole (they are megabytes, not gigabytes); the core, :func:`book_document_from_bytes`, takes
bytes so a Beam step can read files through its own filesystem layer.

Books may be gzip- or bz2-compressed (``.txt.gz`` / ``.txt.bz2``, or any name): the compression is detected from
magic bytes, as for Wikipedia dumps (``components/corpus/compression.py``), and a truncated archive is an error naming
the file, never a silently shorter book.

Decoding is strict UTF-8: a wrong guess silently corrupts every accented letter, so non-UTF-8 input
is an error naming the file and byte offset unless a fallback encoding is chosen explicitly.

Project Gutenberg boilerplate is removed: the modern ``*** START/END OF THE PROJECT GUTENBERG
EBOOK ***`` markers, the older "SMALL PRINT!" blocks and "End of Project Gutenberg's ..." lines, and
the ``[Title by Author Year]`` first line of NLTK's copies (used as the title). Hard-wrapped lines
are joined into paragraphs (a blank line is a paragraph break); "CHAPTER IV"-style headings,
all-capitals lines and short unpunctuated lines (titles, dedications) are dropped: not sentences.
"""
from __future__ import annotations

import codecs
import os
import re
from pathlib import Path
from typing import Iterator, List, Optional, Tuple, Union

from components.corpus.compression import MAGIC_BYTES, decompress_bytes, misnamed, sniff
from components.text.documents import Document, make_document
from components.text.corrupt_input import CorruptInputError

PathLike = Union[str, "os.PathLike[str]"]
DEFAULT_MIN_CHARS = 200

_START = re.compile(r"^[ \t]*\*{3}[ \t]*START OF (?:THIS|THE) PROJECT GUTENBERG.*$", re.IGNORECASE | re.MULTILINE)
# Older files end their *header* small print with "*END*THE SMALL PRINT!...*END*".
_OLD_HEADER_END = re.compile(r"^[ \t]*\*END\*[ \t]*THE SMALL PRINT!.*$", re.IGNORECASE | re.MULTILINE)
_END = re.compile(
    r"^[ \t]*(?:\*{3}[ \t]*END OF (?:THIS|THE) PROJECT GUTENBERG"
    r"|End of (?:the |this )?Project Gutenberg"
    r"|\*{3}[ \t]*START\*\*THE SMALL PRINT!"
    r"|\*END\*?[ \t]*THE SMALL PRINT!)",
    re.IGNORECASE | re.MULTILINE,
)
_HEADER_TITLE = re.compile(r"^Title:[ \t]*(.+)$", re.MULTILINE)
# "[Title by Author 1818]": no "]" inside, so a 10 MB first paragraph cannot make the lazy groups backtrack.
_NLTK_TITLE = re.compile(r"^\[([^\]]+?)(?: by ([^\]]+?))?(?: (\d{3,4}))?\][ \t]*$")
_MAX_TITLE_CHARS = 300
_PRODUCED_BY = re.compile(r"^(?:Produced by|This e-?text was prepared by|E-?text prepared by|Typed by"
                          r"|Transcribed (?:from|by))\b", re.IGNORECASE)
# An image placeholder in the first line ("[Picture: Book cover]", "[Illustration]") is not a title.
_PICTURE = re.compile(r"^\[(?:Picture|Illustration)\b", re.IGNORECASE)
_HEADING = re.compile(
    r"^(?:chapter|book|volume|part|act|scene|canto|stave)[ \t]+(?:[ivxlcdm]+|\d+|[a-z]+)\b[.:]?$", re.IGNORECASE
)
_SENTENCE_END = ".!?\"'”’:;,)]" + "。！？｡：；，」』）।॥؟۔።"  # English's, then other scripts' (CJK, Indic, Arabic, ...)
# Scripts that write words without spaces: each such character counts as a word when telling a heading by its length.
_UNSPACED = re.compile("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u0e00-\u0e7f]")
_BOM = codecs.BOM_UTF8


BOOK_SUFFIXES = (".txt", ".txt.gz", ".txt.bz2")


def decode_book(data: bytes, path: str, encoding_fallback: Optional[str] = None, compressed: Optional[str] = None
                ) -> str:
    """Strict UTF-8 (BOM allowed); on failure ``encoding_fallback`` (e.g. "latin-1") if given, else
    :class:`CorruptInputError` with the byte offset and line of the first bad byte (in the decompressed text when
    ``compressed`` names the archive type)."""
    offset = len(_BOM) if data.startswith(_BOM) else 0
    try:
        return data[offset:].decode("utf-8")
    except UnicodeDecodeError as exc:
        if encoding_fallback is None:
            at = offset + exc.start
            bad = data[at : at + 1]
            of = f" of the {compressed}-decompressed text" if compressed else ""
            line = data.count(b"\n", 0, at) + 1
            raise CorruptInputError(
                path,
                f"not valid UTF-8 at byte offset {at}{of} (line {line}, byte 0x{bad.hex()})"
                f"{'' if compressed else misnamed(path)}; "
                "pass --set corpus.book_encoding_fallback=latin-1 to read such files as Latin-1",
            ) from exc
    try:
        return data.decode(encoding_fallback)
    except (UnicodeDecodeError, LookupError) as exc:
        raise CorruptInputError(path, f"cannot decode with corpus.book_encoding_fallback={encoding_fallback}: {exc}") from exc


def strip_gutenberg(text: str) -> Tuple[str, Optional[str]]:
    """Remove Project Gutenberg boilerplate; return (body, title found in the header or None)."""
    title = None
    start = 0
    match = _START.search(text)
    if match is None:
        old = _OLD_HEADER_END.search(text)
        # The same wording also closes small print placed at the *end* of a file: only a marker in
        # the first half counts as the end of a header.
        if old is not None and old.start() < len(text) // 2:
            match = old
    if match is not None:
        header = _HEADER_TITLE.search(text, 0, match.start())
        if header:
            title = header.group(1).strip()
        start = match.end()
    end_match = _END.search(text, start)
    body = text[start : end_match.start() if end_match else len(text)]
    return body, title


def _paragraphs(body: str) -> List[str]:
    paragraphs: List[str] = []
    current: List[str] = []

    def flush() -> None:
        if current:
            paragraphs.append(" ".join(current))
            current.clear()

    for line in body.split("\n"):
        line = line.strip()
        if not line:
            flush()
        elif current and current[-1].endswith("-") and not current[-1].endswith("--") and current[-1][-2:-1].isalpha():
            current[-1] = current[-1] + line  # "well-" + "known" → "well-known"
        else:
            current.append(line)
    flush()
    return paragraphs


def _is_heading(paragraph: str) -> bool:
    """Chapter headings, all-capitals lines and short unpunctuated lines (titles, dedications). Words of scripts
    without spaces count one a character; caseless letters (CJK, Arabic, Devanagari, ...) make no all-capitals line."""
    if _HEADING.match(paragraph):
        return True
    words = len(paragraph.split()) + len(_UNSPACED.findall(paragraph))
    if words <= 8 and paragraph[-1] not in _SENTENCE_END:
        return True
    letters = [c for c in paragraph if c.isalpha()]
    cased = [c for c in letters if c.isupper() or c.islower()]
    return bool(cased) and len(cased) * 2 > len(letters) and not any(c.islower() for c in cased) and words <= 12


def book_document_from_bytes(
    data: bytes, rel_path: str, encoding_fallback: Optional[str] = None, min_chars: int = DEFAULT_MIN_CHARS,
    compressed: Optional[str] = None, splitter: str = "english",
) -> Optional[Document]:
    """Bytes of one book (plain, gzip or bz2) → ``book:<rel_path>`` document, or None for empty/too-short text.

    ``compressed``: None to detect and decompress here; otherwise ``data`` is already the text, decompressed by the
    caller from that archive type ("" for none), which error messages name. ``splitter``:
    ``corpus.sentence_splitter``."""
    if compressed is None:
        compressed = sniff(data[:MAGIC_BYTES]) or ""
        data = decompress_bytes(data, rel_path)
    text = decode_book(data, rel_path, encoding_fallback, compressed or None).replace("\r\n", "\n").replace("\r", "\n")
    body, title = strip_gutenberg(text)
    paragraphs = _paragraphs(body)
    if paragraphs:
        nltk_title = _NLTK_TITLE.match(paragraphs[0]) if len(paragraphs[0]) <= _MAX_TITLE_CHARS else None
        if nltk_title:
            if not _PICTURE.match(paragraphs[0]):
                title = title or nltk_title.group(1).strip()
            paragraphs = paragraphs[1:]
    if paragraphs and _PRODUCED_BY.match(paragraphs[0]):
        paragraphs = paragraphs[1:]
    paragraphs = [p for p in paragraphs if not _is_heading(p)]
    title = title or book_stem(rel_path)
    doc = make_document(f"book:{rel_path}", "books", title, paragraphs, splitter=splitter)
    return doc if doc.sentences and doc.num_chars >= min_chars else None


def book_stem(rel_path: str) -> str:
    """The file name without ``.txt`` and a compression suffix: the title of a book that states none."""
    name = Path(rel_path).name
    for suffix in sorted(BOOK_SUFFIXES, key=len, reverse=True):
        if name.lower().endswith(suffix):
            return name[: -len(suffix)]
    return Path(name).stem


def iter_book_files(root: PathLike) -> List[Path]:
    """Book files under ``root`` (recursively: ``.txt``, ``.txt.gz``, ``.txt.bz2``), sorted by relative path."""
    root = Path(root)
    files = [p for p in root.rglob("*") if p.is_file() and p.name.lower().endswith(BOOK_SUFFIXES)]
    return sorted(files, key=lambda p: p.relative_to(root).as_posix())


def read_book(
    path: PathLike,
    root: Optional[PathLike] = None,
    encoding_fallback: Optional[str] = None,
    min_chars: int = DEFAULT_MIN_CHARS,
) -> Optional[Document]:
    """One book file → document (id relative to ``root`` if given, else the file name)."""
    path = Path(path)
    rel = path.relative_to(root).as_posix() if root is not None else path.name
    data = path.read_bytes()
    try:
        return book_document_from_bytes(data, rel, encoding_fallback, min_chars)
    except CorruptInputError as exc:
        raise CorruptInputError(str(path), exc.detail) from exc.__cause__


def book_documents(
    root: PathLike, encoding_fallback: Optional[str] = None, min_chars: int = DEFAULT_MIN_CHARS
) -> Iterator[Document]:
    """All books under ``root``, one document each, in sorted path order; empty books are skipped."""
    for path in iter_book_files(root):
        doc = read_book(path, root, encoding_fallback, min_chars)
        if doc is not None:
            yield doc
