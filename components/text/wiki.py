"""Wikipedia ``pages-articles`` dumps → clean prose documents, and which of the two input formats a file holds.

Two input formats, one document per article either way (``wiki:<page id>``): the MediaWiki XML export, read here
and cleaned by ``components/text/wikitext.py``, and the plain-text ``<doc>`` blocks WikiExtractor writes (the route
BERT's and ALBERT's data instructions take), read by ``components/text/wikiextractor_output.py``.
:func:`sniff_wikipedia_format` tells them apart from the content.

Reading is streaming: the (optionally bz2/gzip-compressed) XML is parsed with ``iterparse`` and each
``<page>`` is released from the tree once read, so memory stays bounded by the largest page whatever
the dump size. Parsing one file is inherently sequential; callers that want parallelism should
parallelise over files and over :func:`page_to_document` (the expensive part), not inside a file.
"""
from __future__ import annotations

import os
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from typing import BinaryIO, Iterator, Optional, Tuple, Union

from components.text.compression import check_archive, misnamed, open_decompressed
from components.text.documents import Document, make_document
from components.text.errors import CorruptInputError
from components.text.wikitext import clean_wikitext

Source = Union[str, "os.PathLike[str]", BinaryIO]

DEFAULT_MIN_CHARS = 200  # stubs shorter than this give almost no sentence pairs


@dataclass(frozen=True)
class WikiPage:
    page_id: int
    title: str
    ns: int
    redirect: bool
    text: str


# ----------------------------------------------------------------------------------------------
# Streaming XML reader
# ----------------------------------------------------------------------------------------------


def _open_source(source: Source, name: Optional[str]) -> Tuple[BinaryIO, str, bool]:
    """(byte stream, display name, whether we own the stream): a path is opened here, a stream is used as given."""
    if isinstance(source, (str, os.PathLike)):
        return open(source, "rb"), name or os.fspath(source), True
    return source, name or str(getattr(source, "name", "<stream>")), False


_REDIRECT_TEXT = re.compile(r"\s*#REDIRECT\b", re.IGNORECASE)
_TEMPLATE_NAME = re.compile(r"\{\{\s*([^{}|\n]{1,80}?)\s*(?=\||\}\})")
_DISAMBIG_NAMES = frozenset(
    name.strip()
    for name in """disambiguation|disambig|disamb|dab|dbig|sia|geodis|hndis|numberdis|mil-unit-dis|ship index
    |surname|given name|set index|set index article|letter-numbercombdisambig|disambiguation cleanup""".split("|")
)


def is_disambiguation(title: str, text: str) -> bool:
    """Disambiguation and set-index pages are link lists, not prose."""
    if title.endswith("(disambiguation)"):
        return True
    low = text.lower()
    if "dis" not in low and "dab" not in low and "index" not in low and "sia" not in low and "name" not in low:
        return False
    for match in _TEMPLATE_NAME.finditer(low):
        name = match.group(1).replace("_", " ").strip()
        if name in _DISAMBIG_NAMES or name.endswith(" disambiguation") or name.startswith("set index"):
            return True
    return False


def is_article(page: WikiPage) -> bool:
    """Main-namespace, non-redirect, non-disambiguation page."""
    return page.ns == 0 and not page.redirect and not is_disambiguation(page.title, page.text)


def iter_pages(source: Source, *, articles_only: bool = True, name: Optional[str] = None) -> Iterator[WikiPage]:
    """Stream the pages of a MediaWiki export (any ``export-0.x`` namespace; bz2, gzip or plain).

    ``articles_only`` (default) keeps :func:`is_article` pages. For a full-history export the last
    revision's text is used. Raises :class:`CorruptInputError` naming the file, the page being read
    and the position for truncated/corrupt compressed data and malformed or non-MediaWiki XML; pages
    before the damage have already been yielded by then.
    """
    raw, name, owned = _open_source(source, name)
    count, current_title = 0, None

    def where(offset: bool = True) -> str:
        parts = [f"after {count} pages"]
        if current_title is not None:
            parts.append(f"in page {current_title!r}")
        try:
            if offset:
                parts.append(f"compressed/raw byte offset ~{raw.tell()}")
        except (OSError, ValueError, AttributeError):
            pass
        return ", ".join(parts)

    # Compression from magic bytes, not the file name, so a .bz2 that a filesystem layer already decompressed (Beam's
    # AUTO compression) reads too; a damaged archive raises there, naming the file and the page being read.
    stream, compressed = raw, None
    try:
        stream, compressed = open_decompressed(raw, name, lambda: where(offset=False))
        context = ET.iterparse(stream, events=("start", "end"))
        root = None
        prefix = ""
        page_tag = title_tag = ""
        for event, elem in context:
            if root is None:
                root = elem
                tag = elem.tag
                prefix = tag[: tag.index("}") + 1] if tag.startswith("{") else ""
                if tag[len(prefix) :] != "mediawiki":
                    raise CorruptInputError(name, f"not a MediaWiki export (root element {tag!r})"
                                                  f"{'' if compressed else misnamed(name)}")
                page_tag, title_tag = prefix + "page", prefix + "title"
                continue
            if event != "end":
                continue
            if elem.tag == title_tag:
                current_title = elem.text or ""
            elif elem.tag == page_tag:
                page = _page_from_element(elem, prefix, name)
                root.clear()  # drop the finished page (and siteinfo) so memory stays bounded
                count += 1
                current_title = None
                if not articles_only or is_article(page):
                    yield page
        if root is None:
            raise CorruptInputError(name, "empty input")
    except CorruptInputError:
        check_archive(stream, compressed)  # a damaged bz2 block shows as bad content before its CRC is checked
        raise
    except ET.ParseError as exc:
        check_archive(stream, compressed)
        line, column = getattr(exc, "position", (None, None))
        raise CorruptInputError(name, f"malformed or truncated XML at line {line}, column {column} ({where()}): {exc}"
                                      f"{'' if compressed else misnamed(name)}") from exc
    finally:
        if stream is not raw:
            stream.close()  # the decompressor only; it never closes the caller's stream
        if owned:
            raw.close()


def _page_from_element(page: ET.Element, prefix: str, name: str) -> WikiPage:
    title, ns, page_id, redirect, text = None, 0, None, False, ""
    for child in page:
        tag = child.tag[len(prefix) :]
        if tag == "title":
            title = child.text or ""
        elif tag == "ns":
            ns = int((child.text or "0").strip() or 0)
        elif tag == "id" and page_id is None:
            page_id = (child.text or "").strip()
        elif tag == "redirect":
            redirect = True
        elif tag == "revision":
            for sub in child:
                if sub.tag[len(prefix) :] == "text":
                    text = sub.text or ""
    if title is None or not page_id or not page_id.isdigit():
        raise CorruptInputError(name, f"<page> without a title or numeric id (title={title!r}, id={page_id!r})")
    redirect = redirect or bool(_REDIRECT_TEXT.match(text))
    return WikiPage(page_id=int(page_id), title=title, ns=ns, redirect=redirect, text=text)


def page_to_document(
    page: WikiPage, min_chars: int = DEFAULT_MIN_CHARS, keep_lists: bool = False
) -> Optional[Document]:
    """Clean one page into a ``wiki:<page_id>`` document, or None when shorter than ``min_chars``."""
    paragraphs = clean_wikitext(page.text, keep_lists).split("\n")
    doc = make_document(f"wiki:{page.page_id}", "wikipedia", page.title, paragraphs)
    return doc if doc.sentences and doc.num_chars >= min_chars else None


def wiki_documents(
    source: Source, min_chars: int = DEFAULT_MIN_CHARS, keep_lists: bool = False, name: Optional[str] = None
) -> Iterator[Document]:
    """Articles of one dump file as documents, in file order; empty or short ones are dropped."""
    for page in iter_pages(source, name=name):
        doc = page_to_document(page, min_chars, keep_lists)
        if doc is not None:
            yield doc


def sniff_wikipedia_format(prefix: bytes, name: str, compressed: Optional[str] = None) -> str:
    """``"xml"`` (a MediaWiki export) or ``"wikiextractor"`` from the first bytes of the *decompressed* text
    (``compressed``: the archive type it came from, None for a plain file); :class:`CorruptInputError` for an empty file
    or anything else."""
    head = prefix.lstrip(b"\xef\xbb\xbf").lstrip()
    if not head:
        raise CorruptInputError(name, "empty input (neither a MediaWiki export nor WikiExtractor output)")
    if head.startswith(b"<doc ") or head.startswith(b"<doc>"):
        return "wikiextractor"
    if head.startswith(b"<?xml") or head.startswith(b"<mediawiki"):
        return "xml"
    shown = head[:40].decode("utf-8", "replace")
    raise CorruptInputError(name, f"neither a MediaWiki XML export nor WikiExtractor output (starts with {shown!r})"
                                  f"{misnamed(name) if compressed is None else ''}")
