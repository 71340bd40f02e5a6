"""WikiExtractor output (the official BERT / ALBERT data route) → clean prose documents.

The plain-text ``<doc>`` blocks WikiExtractor writes from a ``pages-articles`` dump, one document per article
(``wiki:<page id>``, the id the XML reader of ``components/corpus/wiki.py`` gives the same page). Which format a file
holds is told from its content by :func:`components.corpus.wiki.sniff_wikipedia_format`.
"""
from __future__ import annotations

import html
import re
from dataclasses import dataclass
from typing import Iterator, List, Optional, Tuple

from components.corpus.compression import check_archive, misnamed, open_decompressed
from components.text.documents import Document, make_document
from components.text.corrupt_input import CorruptInputError
from components.corpus.wiki import DEFAULT_MIN_CHARS, Source, _open_source, is_disambiguation
from components.corpus.wikitext import _EMPTY_PARENS, _KNOWN_TAG, _SPACE_AFTER_OPEN, _SPACE_BEFORE_PUNCT

# BERT's README (which ALBERT's data instructions follow) starts from a pages-articles dump run through WikiExtractor:
# files ``AA/wiki_00`` ... (bz2-compressed with ``--compress``), each a sequence of
#
#     <doc id="841" url="http://en.wikipedia.org/wiki?curid=841" title="Attila">
#     Attila                       <- the title, repeated as the first line of the body
#
#     Attila ( or ; fl. 434–453), frequently referred to as ...   <- one paragraph per line
#     Appearance and character.    <- a section heading, with the "." WikiExtractor appends
#     ...
#     </doc>
#
# Google published no cleanup script after WikiExtractor ("apply any necessary cleanup to convert it into plain
# text"); the paper says BERT kept "only the text passages and ignore[d] lists, tables, and headers". So the defaults
# here give the same text as the XML route's cleaner (components/corpus/wikitext.py): the title line is the title,
# headings are dropped, and WikiExtractor's ``formula_N`` placeholders (where the XML path drops <math> content)
# are removed. Each is a named setting of :func:`extracted_to_document` (``keep_headings``, ``keep_formulas``).

_DOC_OPEN = re.compile(r"^<doc(?:\s+(?P<attrs>.*?))?>\s*$")
_DOC_ID = re.compile(r'\bid="(\d+)"')
_DOC_TITLE = re.compile(r'\btitle="(.*)"')  # greedy: WikiExtractor does not escape quotes inside the title
_FORMULA = re.compile(r'"formula_\d+"|\bformula_\d+\b')  # with the quotes WikiExtractor sometimes leaves around it
# A heading is a line of at most this many words ending in the "." WikiExtractor appends, with no other sentence end
# inside (the book reader's bound for short title lines). Such lines are nearly all headings: in a sample of 40
# lines of 4 to 7 words from AA/wiki_10..19 of the large corpus, 3 were one-sentence paragraphs ("The single failed
# to chart."), which are lost with the headings; a paragraph of one short sentence gives little for sentence pairs.
HEADING_MAX_WORDS = 8
_INNER_SENTENCE_END = re.compile(r"[.!?](?=\s+[A-Z])")


@dataclass(frozen=True)
class ExtractedDoc:
    """One ``<doc>`` of WikiExtractor output: its id, title and body lines (the title line still first)."""

    page_id: int
    title: str
    lines: Tuple[str, ...]
    line: int  # where its <doc> line is in the file (1-based)


def iter_extracted(source: Source, *, articles_only: bool = True, name: Optional[str] = None
                   ) -> Iterator[ExtractedDoc]:
    """Stream the ``<doc>`` blocks of one WikiExtractor file (plain, bz2 or gzip, detected from magic bytes).
    ``articles_only`` (default) skips disambiguation pages by title, as :func:`iter_pages` does (WikiExtractor has
    already dropped redirects and other namespaces; the templates that mark other disambiguation pages are gone).

    Raises :class:`CorruptInputError` naming the file and line for: a truncated or corrupt archive, invalid UTF-8,
    a ``<doc>`` without ``</doc>`` (also a nested ``<doc>``), a ``</doc>`` without ``<doc>``, a ``<doc>`` line
    without a numeric id or a title, text outside the blocks, and a file with no ``<doc>`` at all. Documents before
    the damage have been yielded by then (callers publish nothing of a failed run).
    """
    raw, name, owned = _open_source(source, name)
    number, offset, count = 0, 0, 0
    open_doc: Optional[Tuple[int, str, int]] = None  # (id, title, line)
    body: List[str] = []

    def where() -> str:
        at = f"after {count} documents, at line {number}"
        return at + (f", in <doc id={open_doc[0]} title={open_doc[1]!r}>" if open_doc is not None else "")

    stream, compressed = raw, None
    try:
        stream, compressed = open_decompressed(raw, name, where)  # a damaged archive raises there, naming the file
        for data in stream:
            number += 1
            try:
                line = data.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise CorruptInputError(name, f"not valid UTF-8 at line {number} (byte offset {offset + exc.start} "
                                              f"of the {'decompressed ' if compressed else ''}text)"
                                              f"{'' if compressed else misnamed(name)}") from None
            offset += len(data)
            stripped = line.strip()
            header = _DOC_OPEN.match(stripped) if stripped.startswith("<doc") else None
            if header is not None:
                if open_doc is not None:
                    raise CorruptInputError(name, f"<doc> at line {number} inside <doc id={open_doc[0]}> opened at "
                                                  f"line {open_doc[2]}, which has no </doc>")
                attrs = header.group("attrs") or ""
                page_id, title = _DOC_ID.search(attrs), _DOC_TITLE.search(attrs)
                if page_id is None or title is None:
                    raise CorruptInputError(name, f"<doc> at line {number} without a numeric id or a title: "
                                                  f"{stripped[:120]!r}")
                open_doc, body = (int(page_id.group(1)), html.unescape(title.group(1)), number), []
            elif stripped == "</doc>":
                if open_doc is None:
                    raise CorruptInputError(name, f"</doc> at line {number} without an open <doc>")
                count += 1
                if not articles_only or not is_disambiguation(open_doc[1], ""):
                    yield ExtractedDoc(open_doc[0], open_doc[1], tuple(body), open_doc[2])
                open_doc = None
            elif open_doc is not None:
                body.append(line.rstrip("\r\n"))
            elif stripped:
                raise CorruptInputError(name, f"text outside <doc> ... </doc> at line {number}: {stripped[:80]!r} "
                                              f"(not WikiExtractor output?){'' if compressed else misnamed(name)}")
        if open_doc is not None:
            raise CorruptInputError(name, f"<doc id={open_doc[0]} title={open_doc[1]!r}> opened at line "
                                          f"{open_doc[2]} has no </doc> (the file ends at line {number}: truncated?)")
        if count == 0:
            raise CorruptInputError(name, "empty input: no <doc> in this WikiExtractor file")
    except CorruptInputError:
        check_archive(stream, compressed)  # a damaged bz2 block shows as bad content before its CRC is checked
        raise
    finally:
        if stream is not raw:
            stream.close()  # the decompressor only
        if owned:
            raw.close()


def _same_title(line: str, title: str) -> bool:
    return " ".join(line.split()).casefold() == " ".join(title.split()).casefold()


def _is_extracted_heading(line: str) -> bool:
    words = line.split()
    return (0 < len(words) <= HEADING_MAX_WORDS and line.endswith(".") and not line.endswith("..")
            and not _INNER_SENTENCE_END.search(line[:-1]))


def _finish_extracted_line(line: str, keep_formulas: bool) -> str:
    if not keep_formulas:
        line = _FORMULA.sub("", line)
    line = _KNOWN_TAG.sub("", line)  # <br>, <poem> residue WikiExtractor leaves in some quotes
    line = _EMPTY_PARENS.sub("", line)
    line = " ".join(line.split())
    line = _SPACE_BEFORE_PUNCT.sub(r"\1", line)
    return _SPACE_AFTER_OPEN.sub(r"\1", line).strip()


def extracted_paragraphs(doc: ExtractedDoc, keep_headings: bool = False, keep_formulas: bool = False) -> List[str]:
    """The body's paragraphs (one per line): the first line is dropped when it repeats the title; headings are
    dropped unless ``keep_headings`` (then only those of empty sections are), ``formula_N`` placeholders removed
    unless ``keep_formulas``; template/table residue lines (starting ``{{``, ``{|``, ``|`` or ``!``, as the XML
    cleaner drops) and lines without a letter or digit are dropped."""
    lines = [line.strip() for line in doc.lines]
    lines = [line for line in lines if line]
    if lines and _same_title(lines[0], doc.title):
        lines = lines[1:]
    kept: List[Tuple[str, bool]] = []
    for line in lines:
        if line.startswith(("{{", "{|", "|", "!")):
            continue
        line = _finish_extracted_line(line, keep_formulas)
        if any(c.isalnum() for c in line):
            kept.append((line, _is_extracted_heading(line)))
    out = []
    for i, (line, heading) in enumerate(kept):
        if heading and (not keep_headings or i + 1 == len(kept) or kept[i + 1][1]):
            continue  # a heading; with keep_headings, one of an empty section (the next line is a heading too)
        out.append(line)
    return out


def extracted_to_document(doc: ExtractedDoc, min_chars: int = DEFAULT_MIN_CHARS, keep_headings: bool = False,
                          keep_formulas: bool = False, splitter: str = "english") -> Optional[Document]:
    """One ``<doc>`` → a ``wiki:<id>`` document (the id the XML reader gives the same page, so deduplication sees
    both routes alike; sentences by ``splitter``, ``corpus.sentence_splitter``), or None when it is shorter than
    ``min_chars`` after cleaning."""
    result = make_document(f"wiki:{doc.page_id}", "wikipedia", doc.title,
                           extracted_paragraphs(doc, keep_headings, keep_formulas), splitter=splitter)
    return result if result.sentences and result.num_chars >= min_chars else None


def extracted_documents(source: Source, min_chars: int = DEFAULT_MIN_CHARS, keep_headings: bool = False,
                        keep_formulas: bool = False, name: Optional[str] = None) -> Iterator[Document]:
    """The articles of one WikiExtractor file as documents, in file order; short ones are dropped."""
    for doc in iter_extracted(source, name=name):
        result = extracted_to_document(doc, min_chars, keep_headings, keep_formulas)
        if result is not None:
            yield result
