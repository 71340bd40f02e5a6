"""Wikipedia ``pages-articles`` dumps → clean prose documents, and which of the two input formats a file holds.

Two input formats, one document per article either way (``wiki:<page id>``): the MediaWiki XML export, read here
and cleaned by ``components/corpus/wikitext.py``, and the plain-text ``<doc>`` blocks WikiExtractor writes (the route
BERT's and ALBERT's data instructions take), read by ``components/corpus/wikiextractor_output.py``.
:func:`sniff_wikipedia_format` tells them apart from the content.

Reading is streaming: the (optionally bz2/gzip-compressed) XML is parsed with ``iterparse`` and each
``<page>`` is released from the tree once read, so memory stays bounded by the largest page whatever
the dump size. Parsing one file is inherently sequential; callers that want parallelism should
parallelise over files and over :func:`page_to_document` (the expensive part), not inside a file.

Any language: the dump's header, read on the way to its first page, says which wiki it is (:class:`SiteInfo`): the
language (``<mediawiki xml:lang>``) and the local name of each namespace (``<siteinfo><namespaces>``), so that
``[[Kategorie:…]]`` or ``[[ファイル:…]]`` links are dropped as ``[[Category:…]]`` and ``[[File:…]]`` are.
"""
from __future__ import annotations

import os
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from typing import BinaryIO, Dict, FrozenSet, Iterable, Iterator, List, Mapping, Optional, Pattern, Tuple, Union

from components.corpus.compression import check_archive, misnamed, open_decompressed
from components.text.documents import Document, make_document
from components.text.corrupt_input import CorruptInputError
from components.corpus.wikitext import (CANONICAL_DROPPED_LINK_NAMES, DROPPED_LINK_NAMESPACES, clean_wikitext,
                                      namespace_name)

Source = Union[str, "os.PathLike[str]", BinaryIO]

DEFAULT_MIN_CHARS = 200  # stubs shorter than this give almost no sentence pairs


# Well-known localized forms, by the dump's language (``<mediawiki xml:lang>``). A table, kept small: the English forms
# work on every wiki and are always recognised, so a language not listed here reads with those alone.
# - redirect words: the ``#REDIRECT`` magic word of MediaWiki's languages/messages/Messages<Lang>.php, only the
#   fallback for a page without the <redirect> element that dumps carry;
# - disambiguation templates: the name (lower case) of the wiki's own disambiguation template and its usual redirects;
# - namespace aliases: other names the wiki accepts for File (6), Category (14) and Media (-2), which <siteinfo> does
#   not list (it gives one name per namespace; zhwiki's is "Category", while its pages also write 分类 or 分類).
LOCAL_REDIRECT_WORDS: Mapping[str, Tuple[str, ...]] = {
    "ar": ("#تحويل",), "de": ("#WEITERLEITUNG",), "es": ("#REDIRECCIÓN", "#REDIRECCION"), "fr": ("#REDIRECTION",),
    "it": ("#RINVIA", "#RINVIO"), "ja": ("#転送", "#リダイレクト", "＃転送", "＃リダイレクト"), "ko": ("#넘겨주기",),
    "nl": ("#DOORVERWIJZING",), "pt": ("#REDIRECIONAMENTO",), "ru": ("#ПЕРЕНАПРАВЛЕНИЕ", "#ПЕРЕНАПР"),
    "zh": ("#重定向", "#重新導向"),
}
LOCAL_DISAMBIGUATION_TEMPLATES: Mapping[str, FrozenSet[str]] = {
    "ar": frozenset({"توضيح"}), "de": frozenset({"begriffsklärung"}), "es": frozenset({"desambiguación"}),
    "fr": frozenset({"homonymie"}), "it": frozenset({"disambigua"}), "ja": frozenset({"曖昧さ回避", "aimai"}),
    "ko": frozenset({"동음이의"}), "nl": frozenset({"dp"}), "pt": frozenset({"desambiguação"}),
    "ru": frozenset({"неоднозначность"}), "zh": frozenset({"消歧义", "消歧義"}),
}
LOCAL_NAMESPACE_ALIASES: Mapping[str, Mapping[str, int]] = {
    "de": {"Bild": 6},
    "ja": {"画像": 6},
    "zh": {"文件": 6, "檔案": 6, "档案": 6, "图像": 6, "圖像": 6, "分类": 14, "分類": 14, "媒体": -2, "媒體": -2},
}


@dataclass(frozen=True)
class SiteInfo:
    """The wiki a dump comes from, as far as the reader needs it; :func:`site_info` builds one."""

    language: str
    namespaces: Mapping[str, int]  # each name (:func:`namespace_name`) <siteinfo> declares, and its aliases → key
    dropped_link_names: FrozenSet[str]  # names whose links are dropped: the canonical English ones and the local ones
    redirect_text: Pattern[str]  # the start of a redirect page's text: #REDIRECT or the language's own word

    def namespace_of(self, title: str) -> int:
        """The namespace a title's prefix names (0 when none), for a page without ``<ns>``."""
        prefix, colon, _ = title.partition(":")
        return self.namespaces.get(namespace_name(prefix), 0) if colon else 0


def site_info(language: str = "en", declared: Iterable[Tuple[int, str]] = ()) -> SiteInfo:
    """A :class:`SiteInfo` from the dump's language and its ``<siteinfo>`` namespaces as (key, name) pairs."""
    names: Dict[str, int] = {}
    aliases = [(key, alias) for alias, key in LOCAL_NAMESPACE_ALIASES.get(language, {}).items()]
    for key, name in list(declared) + aliases:
        if name.strip() and key != 0:
            names[namespace_name(name)] = key
    dropped = CANONICAL_DROPPED_LINK_NAMES | {name for name, key in names.items() if key in DROPPED_LINK_NAMESPACES}
    words = ("#REDIRECT",) + LOCAL_REDIRECT_WORDS.get(language, ())
    redirect = re.compile(rf"\s*(?:{'|'.join(map(re.escape, words))})\b", re.IGNORECASE)
    return SiteInfo(language, names, frozenset(dropped), redirect)


ENGLISH = site_info()  # what a page read without a dump's header (or built by hand) belongs to


@dataclass(frozen=True)
class WikiPage:
    page_id: int
    title: str
    ns: int
    redirect: bool
    text: str
    site: SiteInfo = field(default=ENGLISH, repr=False, compare=False)


# ----------------------------------------------------------------------------------------------
# Streaming XML reader
# ----------------------------------------------------------------------------------------------


def _open_source(source: Source, name: Optional[str]) -> Tuple[BinaryIO, str, bool]:
    """(byte stream, display name, whether we own the stream): a path is opened here, a stream is used as given."""
    if isinstance(source, (str, os.PathLike)):
        return open(source, "rb"), name or os.fspath(source), True
    return source, name or str(getattr(source, "name", "<stream>")), False


_TEMPLATE_NAME = re.compile(r"\{\{\s*([^{}|\n]{1,80}?)\s*(?=\||\}\})")
_DISAMBIG_NAMES = frozenset(
    name.strip()
    for name in """disambiguation|disambig|disamb|dab|dbig|sia|geodis|hndis|numberdis|mil-unit-dis|ship index
    |surname|given name|set index|set index article|letter-numbercombdisambig|disambiguation cleanup""".split("|")
)


def is_disambiguation(title: str, text: str, language: str = "en") -> bool:
    """Disambiguation and set-index pages are link lists, not prose: an English "(disambiguation)" title, the
    ``__DISAMBIG__`` magic word, or an English disambiguation-family template or the ``language``'s own
    (:data:`LOCAL_DISAMBIGUATION_TEMPLATES`)."""
    if title.endswith("(disambiguation)") or "__DISAMBIG__" in text:
        return True
    local = LOCAL_DISAMBIGUATION_TEMPLATES.get(language, frozenset())
    low = text.lower()
    if not local and "dis" not in low and "dab" not in low and "index" not in low and "sia" not in low \
            and "name" not in low:
        return False
    for match in _TEMPLATE_NAME.finditer(low):
        name = match.group(1).replace("_", " ").strip()
        if (name in _DISAMBIG_NAMES or name in local or name.endswith(" disambiguation")
                or name.startswith("set index")):
            return True
    return False


def is_article(page: WikiPage) -> bool:
    """Main-namespace, non-redirect, non-disambiguation page."""
    return page.ns == 0 and not page.redirect and not is_disambiguation(page.title, page.text, page.site.language)


def iter_pages(source: Source, *, articles_only: bool = True, name: Optional[str] = None) -> Iterator[WikiPage]:
    """Stream the pages of a MediaWiki export (any ``export-0.x`` namespace; bz2, gzip or plain).

    ``articles_only`` (default) keeps :func:`is_article` pages. For a full-history export the last
    revision's text is used. Each page carries the dump's :class:`SiteInfo`, read from its header as the stream
    passes (a page without ``<ns>`` takes its namespace from its title's prefix). Raises :class:`CorruptInputError`
    naming the file, the page being read and the position for truncated/corrupt compressed data and malformed or
    non-MediaWiki XML (also a non-numeric namespace key or ``<ns>``); pages before the damage have already been
    yielded by then.
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
        page_tag = title_tag = namespace_tag = siteinfo_tag = ""
        language, declared, site, undeclared = "en", [], ENGLISH, False
        for event, elem in context:
            if root is None:
                root = elem
                tag = elem.tag
                prefix = tag[: tag.index("}") + 1] if tag.startswith("{") else ""
                if tag[len(prefix) :] != "mediawiki":
                    raise CorruptInputError(name, f"not a MediaWiki export (root element {tag!r})"
                                                  f"{'' if compressed else misnamed(name)}")
                page_tag, title_tag = prefix + "page", prefix + "title"
                namespace_tag, siteinfo_tag = prefix + "namespace", prefix + "siteinfo"
                language = elem.get(_XML_LANG) or "en"
                undeclared = not elem.get(_XML_LANG)
                site = site_info(language)
                continue
            if event != "end":
                continue
            if elem.tag == title_tag:
                current_title = elem.text or ""
            elif undeclared and elem.tag == prefix + "dbname":  # no xml:lang: the wiki's database name (zhwiki)
                language = language_of_dbname(elem.text or "") or language
            elif elem.tag == namespace_tag:
                declared.append(_namespace_from_element(elem, name))
            elif elem.tag == siteinfo_tag:
                site = site_info(language, declared)
            elif elem.tag == page_tag:
                page = _page_from_element(elem, prefix, name, site)
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


_XML_LANG = "{http://www.w3.org/XML/1998/namespace}lang"


def language_of_dbname(dbname: str) -> Optional[str]:
    """The ISO 639-1 code of a Wikipedia's database name (``zhwiki`` → ``zh``), None for any other name
    (``simplewiki``, ``zh_yuewiki``, ``enwiktionary``)."""
    match = re.fullmatch(r"([a-z]{2})wiki", dbname.strip())
    return match.group(1) if match else None


def _namespace_from_element(elem: ET.Element, name: str) -> Tuple[int, str]:
    """(key, name) of one ``<siteinfo>`` ``<namespace key="14" case="first-letter">Category</namespace>``."""
    key = (elem.get("key") or "").strip()
    if not key.lstrip("-").isdigit():
        raise CorruptInputError(name, f"<namespace key={elem.get('key')!r}> in <siteinfo> without a numeric key "
                                      f"(named {elem.text!r})")
    return int(key), elem.text or ""


def _page_from_element(page: ET.Element, prefix: str, name: str, site: SiteInfo) -> WikiPage:
    title, ns, page_id, redirect, text = None, None, None, False, ""
    for child in page:
        tag = child.tag[len(prefix) :]
        if tag == "title":
            title = child.text or ""
        elif tag == "ns":
            value = (child.text or "").strip() or "0"
            if not value.lstrip("-").isdigit():
                raise CorruptInputError(name, f"<page> {title!r} with a non-numeric <ns> {child.text!r}")
            ns = int(value)
        elif tag == "id" and page_id is None:
            page_id = (child.text or "").strip()
        elif tag == "redirect":
            redirect = True
        elif tag == "revision":
            for sub in child:
                if sub.tag[len(prefix) :] == "text":
                    text = sub.text or ""
    if title is None or not page_id or not page_id.isdigit():
        raise CorruptInputError(name, f"<page> without a title or numeric id (<title> {title!r}, <id> {page_id!r})")
    if ns is None:
        ns = site.namespace_of(title)
    redirect = redirect or bool(site.redirect_text.match(text))
    return WikiPage(page_id=int(page_id), title=title, ns=ns, redirect=redirect, text=text, site=site)


def page_paragraphs(page: WikiPage, keep_lists: bool = False) -> List[str]:
    """The page's prose, one string per paragraph (:func:`clean_wikitext` with the links its wiki drops)."""
    return clean_wikitext(page.text, keep_lists, page.site.dropped_link_names).split("\n")


def page_to_document(
    page: WikiPage, min_chars: int = DEFAULT_MIN_CHARS, keep_lists: bool = False, splitter: str = "english"
) -> Optional[Document]:
    """Clean one page into a ``wiki:<page_id>`` document (sentences by ``splitter``, ``corpus.sentence_splitter``),
    or None when shorter than ``min_chars``."""
    doc = make_document(f"wiki:{page.page_id}", "wikipedia", page.title, page_paragraphs(page, keep_lists),
                        splitter=splitter)
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
