"""The document record shared by the corpus readers, and the on-disk pretraining-text format.

A document is a list of sentences because ALBERT's data generator packs *whole sentences* into
segments and draws its sentence-order (SOP) pairs from within a document; document boundaries must
therefore survive every stage. Sentences keep their original case and accents: normalisation
(``preprocess_text``) happens once, at tokenization time, so a vocabulary trained with a different
``do_lower_case`` can reuse the same text.

The on-disk format is the official one: one sentence per line, a blank line after each document. A documents folder
holds shards ``documents-NNNNN-of-NNNNN.txt`` (:func:`shard_file_name`); in a run of several languages each file holds
one language's documents and its name says which, ``documents-<code>-NNNNN-of-NNNNN.txt`` (:func:`file_language`
reads it back), so a reader can treat each document by its own language without any tag inside the text. A
single-language run's files keep the plain names and bytes.
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Iterable, Iterator, List, Optional

from components.text.normalize import preprocess_text
from components.text.sentences import SPLITTERS

# A single "sentence" longer than this (a 10 MB line of a broken dump, a table flattened into one
# line) is cut into chunks of at most this many characters so tokenizers and packers stay bounded.
MAX_SENTENCE_CHARS = 10_000
# Control characters that are not whitespace (DOS EOF ^Z, NUL, escape...); whitespace ones are
# handled by str.split().
_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1b\x7f\ufeff]")
# A documents shard's file name; ``{language}-`` after ``documents-`` in a run of several languages.
SHARD_GLOB = "documents-*-of-*.txt"
_SHARD_NAME = re.compile(r"documents-(?:([a-z]{2})-)?(\d{5})-of-(\d{5})\.txt")


def shard_file_name(shard: int, num_shards: int, language: Optional[str] = None) -> str:
    """The file name of documents shard ``shard`` of ``num_shards``: ``documents-00000-of-00004.txt`` in a
    single-language run (``language`` None), ``documents-zh-00000-of-00004.txt`` for one language's documents of
    a run of several."""
    if not 0 <= shard < num_shards:
        raise ValueError(f"shard {shard} is not in [0, {num_shards})")
    if language is not None and not re.fullmatch(r"[a-z]{2}", language):
        raise ValueError(f"language {language!r} is not a two-letter ISO 639-1 code")
    prefix = f"documents-{language}-" if language is not None else "documents-"
    return f"{prefix}{shard:05d}-of-{num_shards:05d}.txt"


def file_language(path: str) -> Optional[str]:
    """The language a documents file's name says (``…/documents-zh-00000-of-00004.txt`` → ``"zh"``); None for a
    single-language run's shard (``documents-00000-of-00004.txt``) and for any other file name."""
    match = _SHARD_NAME.fullmatch(path.replace("\\", "/").rsplit("/", 1)[-1])
    return match.group(1) if match else None


@dataclass(frozen=True)
class Document:
    """One document. ``doc_id`` is stable across runs ("wiki:<page_id>", "book:<relative path>"; in a run of several
    languages prefixed by the language, "zh:wiki:<page_id>", since two Wikipedias share page ids). ``language``: its
    tag (ISO 639-1) from its source or the language identifier, None where nothing tagged it."""

    doc_id: str
    source: str  # "wikipedia" | "books" | ...
    title: str
    sentences: List[str] = field(default_factory=list)
    language: Optional[str] = None

    @property
    def num_chars(self) -> int:
        return sum(len(s) for s in self.sentences)


def chunk_text(text: str, max_chars: int = MAX_SENTENCE_CHARS) -> List[str]:
    """Cut ``text`` into pieces of at most ``max_chars``, preferring the last space in each window
    (a hard cut when the window has no space in its second half). Linear in ``len(text)``."""
    if max_chars <= 0:
        raise ValueError("max_chars must be positive")
    if len(text) <= max_chars:
        return [text.strip()] if text.strip() else []
    chunks: List[str] = []
    pos, n = 0, len(text)
    while pos < n:
        while pos < n and text[pos].isspace():
            pos += 1
        if n - pos <= max_chars:
            end = n
        else:
            cut = text.rfind(" ", pos + max_chars // 2, pos + max_chars + 1)
            end = cut if cut > pos else pos + max_chars
        piece = text[pos:end].strip()
        if piece:
            chunks.append(piece)
        pos = end
    return chunks


def clean_sentences(sentences: Iterable[str], max_chars: int = MAX_SENTENCE_CHARS) -> List[str]:
    """Remove control characters, collapse all whitespace (line breaks included, so one sentence =
    one line), drop empty sentences and cut over-long ones into bounded chunks."""
    out: List[str] = []
    for sentence in sentences:
        sentence = " ".join(_CONTROL.sub("", sentence).split())
        if sentence:
            out.extend(chunk_text(sentence, max_chars))
    return out


def make_document(
    doc_id: str, source: str, title: str, paragraphs: Iterable[str], max_chars: int = MAX_SENTENCE_CHARS,
    splitter: str = "english",
) -> Document:
    """Sentence-split each paragraph (``splitter``: ``corpus.sentence_splitter``, a name of
    :data:`components.text.sentences.SPLITTERS`) and build a :class:`Document` with clean, bounded sentences.

    Over-long paragraphs are chunked *before* splitting too, so the splitter never sees a 10 MB string.
    """
    split = SPLITTERS[splitter]
    sentences: List[str] = []
    for paragraph in paragraphs:
        for piece in chunk_text(" ".join(paragraph.split()), 10 * max_chars) if paragraph else ():
            sentences.extend(split(piece))
    return Document(doc_id=doc_id, source=source, title=title, sentences=clean_sentences(sentences, max_chars))


def to_text_block(doc: Document) -> str:
    """The document in the official format: its sentences one per line, then a blank line.

    Sentences are re-cleaned here so a hand-built Document with a newline inside a sentence cannot
    corrupt the file; a document with no sentences yields "" (the format has no empty documents).
    """
    sentences = clean_sentences(doc.sentences)
    return "".join(s + "\n" for s in sentences) + "\n" if sentences else ""


def parse_text_blocks(lines: Iterable[str]) -> Iterator[List[str]]:
    """Read the official format back: yield each document's sentences (blank line = boundary).

    Only sentences are returned because the format carries no ids or titles. Whitespace-only lines
    count as blank; runs of blank lines never produce empty documents.
    """
    current: List[str] = []
    for line in lines:
        line = line.strip()
        if line:
            current.append(line)
        elif current:
            yield current
            current = []
    if current:
        yield current


def doc_fingerprint(doc: Document) -> str:
    """SHA-1 (hex) of the normalised sentences: equal for documents differing only in case, accents
    or whitespace, which is what exact-duplicate removal should treat as the same text."""
    h = hashlib.sha1()
    for sentence in doc.sentences:
        normalized = preprocess_text(sentence)
        if normalized:
            h.update(normalized.encode("utf-8"))
            h.update(b"\n")
    return h.hexdigest()
