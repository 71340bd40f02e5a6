"""Wikipedia ``pages-articles`` dumps and WikiExtractor output → clean prose documents.

Two input formats, one document per article either way (``wiki:<page id>``): the MediaWiki XML export, cleaned
here, and the plain-text ``<doc>`` blocks WikiExtractor writes (the route BERT's and ALBERT's data instructions take;
see "WikiExtractor output" below). :func:`sniff_wikipedia_format` tells them apart from the content.

Why hand-written rather than WikiExtractor/mwparserfromhell: neither is a dependency of this project,
and pretraining only needs readable sentences, not a faithful render. The cleaner removes what
would teach the model markup instead of language (templates, tables, references, file captions,
reference-list sections) and keeps the visible text of links and formatting.

Reading is streaming: the (optionally bz2/gzip-compressed) XML is parsed with ``iterparse`` and each
``<page>`` is released from the tree once read, so memory stays bounded by the largest page whatever
the dump size. Parsing one file is inherently sequential; callers that want parallelism should
parallelise over files and over :func:`page_to_document` (the expensive part), not inside a file.
"""
from __future__ import annotations

import bz2
import gzip
import html
import io
import os
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from typing import BinaryIO, Iterator, List, Optional, Tuple, Union

from components.text.documents import Document, make_document
from components.text.errors import CorruptInputError

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


class _Prepended(io.RawIOBase):
    """A read-only stream that replays ``prefix`` before the rest of ``stream`` (for magic sniffing
    on streams without ``peek``/``seek``)."""

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
        data = self._stream.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)


def _open_source(source: Source, name: Optional[str]) -> Tuple[BinaryIO, str, bool]:
    """(byte stream, display name, whether we own the stream): a path is opened here, a stream is used as given."""
    if isinstance(source, (str, os.PathLike)):
        return open(source, "rb"), name or os.fspath(source), True
    return source, name or str(getattr(source, "name", "<stream>")), False


def _open_xml(source: Source, name: Optional[str]) -> Tuple[BinaryIO, BinaryIO, str, bool]:
    """Return (xml byte stream, underlying raw stream, display name, whether we own the stream).

    Compression is detected from magic bytes, not the file name, so a ``.bz2`` that a filesystem
    layer already decompressed (Beam's AUTO compression) is read correctly too.
    """
    raw, name, owned = _open_source(source, name)
    if hasattr(raw, "peek"):
        magic = raw.peek(3)[:3]
    elif getattr(raw, "seekable", lambda: False)():
        pos = raw.tell()
        magic = raw.read(3)
        raw.seek(pos)
    else:
        magic = raw.read(3)
        raw = io.BufferedReader(_Prepended(magic, raw))
    if magic == b"BZh":
        return bz2.BZ2File(raw), raw, name, owned  # BZ2File also reads multistream dumps
    if magic[:2] == b"\x1f\x8b":
        return gzip.GzipFile(fileobj=raw), raw, name, owned
    return raw, raw, name, owned


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
    stream, raw, name, owned = _open_xml(source, name)
    count, current_title = 0, None

    def where() -> str:
        parts = [f"after {count} pages"]
        if current_title is not None:
            parts.append(f"in page {current_title!r}")
        try:
            parts.append(f"compressed/raw byte offset ~{raw.tell()}")
        except (OSError, ValueError, AttributeError):
            pass
        return ", ".join(parts)

    try:
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
                    raise CorruptInputError(name, f"not a MediaWiki export (root element {tag!r})")
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
    except ET.ParseError as exc:
        line, column = getattr(exc, "position", (None, None))
        raise CorruptInputError(name, f"malformed or truncated XML at line {line}, column {column} ({where()}): {exc}") from exc
    except (EOFError, OSError, gzip.BadGzipFile) as exc:
        raise CorruptInputError(name, f"corrupt or truncated compressed data ({where()}): {exc}") from exc
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


# ----------------------------------------------------------------------------------------------
# Wikitext → text
# ----------------------------------------------------------------------------------------------

_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.DOTALL)
_REF_SELF = re.compile(r"<ref\b[^<>]*/\s*>", re.IGNORECASE)
_REF_PAIR = re.compile(r"<ref\b[^<>]*>.*?</ref\s*>", re.IGNORECASE | re.DOTALL)
# Tags whose *content* is not prose (formulas, galleries, code, scores, maps...).
_DROP_CONTENT_TAGS = (
    "math|chem|ce|gallery|timeline|score|syntaxhighlight|source|imagemap|mapframe|maplink|graph|inputbox"
    "|categorytree|templatedata|templatestyles|hiero|includeonly|references|table|noinclude|charinsert"
)
_DROP_SELF = re.compile(rf"<(?:{_DROP_CONTENT_TAGS})\b[^<>]*/\s*>", re.IGNORECASE)
_DROP_PAIR = re.compile(rf"<({_DROP_CONTENT_TAGS})\b[^<>]*>.*?</\1\s*>", re.IGNORECASE | re.DOTALL)
_ANY_TAG = re.compile(r"</?[A-Za-z][A-Za-z0-9]*\b[^<>]*>")
_BR = re.compile(r"<br\s*/?\s*>", re.IGNORECASE)
# Known HTML/extension tags: used after unescaping, when "<" may be a literal character.
_KNOWN_TAG = re.compile(
    r"</?(?:ref|references|br|span|div|small|big|sup|sub|b|i|u|s|em|strong|center|font|code|tt|blockquote|poem"
    r"|nowiki|abbr|cite|del|ins|mark|q|p|hr|li|ul|ol|dl|dt|dd|var|kbd|samp|onlyinclude|section|bdi)\b[^<>]*>",
    re.IGNORECASE,
)
_BRACE_TOKEN = re.compile(r"\{\{|\}\}")
_TABLE_TOKEN = re.compile(r"(?m)^[ \t:]*(\{\||\|\})")
# [http://x label] -> label; [http://x] (rendered as "[1]") -> nothing.
_EXTERNAL_LINK = re.compile(
    r"\[(?:(?:https?|ftp|ftps|irc|news|gopher|mms):)?//[^\s\]]*(?:\s+([^\]\n]*))?\]"
    r"|\[mailto:[^\s\]]*(?:\s+([^\]\n]*))?\]",
    re.IGNORECASE,
)
_BARE_URL = re.compile(r"\b(?:https?|ftp)://[^\s<>\[\]]+", re.IGNORECASE)
_LINK_TOKEN = re.compile(r"\[\[|\]\]")
_MAGIC_WORD = re.compile(r"__[A-Z]+__")
_QUOTES = re.compile(r"'{2,}")
_HEADING = re.compile(r"^(={1,6})\s*(.*?)\s*\1\s*$")
_EMPTY_PARENS = re.compile(r"\(\s*(?:[,;:.]\s*)*\)|\[\s*\]")
_SPACE_BEFORE_PUNCT = re.compile(r"\s+([,.;:!?%)\]])")
_SPACE_AFTER_OPEN = re.compile(r"([(\[])\s+")
_LANGUAGE_PREFIX = re.compile(r"^[a-z]{2,3}(?:-[a-z0-9]{2,8})*$|^simple$")

_DROPPED_LINK_NAMESPACES = frozenset({"file", "image", "category", "media"})
# Interwiki prefixes whose links are visible in the text (unlike interlanguage links).
_VISIBLE_INTERWIKI = frozenset(
    """wikt wiktionary w wikipedia wp s wikisource b wikibooks q wikiquote n wikinews v wikiversity voy wikivoyage
    species wikispecies commons c m meta mw d wikidata foundation wmf iarchive doi""".split()
)
_DROPPED_SECTIONS = frozenset(
    name.strip()
    for name in """references|external links|see also|further reading|notes|bibliography|sources|citations
    |footnotes|notes and references|references and notes|works cited|general references|cited sources
    |notes and sources|explanatory notes|gallery|external sources|related pages|other websites|web links|weblinks
    |reference|general bibliography|primary sources|secondary sources|selected bibliography""".split("|")
)


_INNER_TEMPLATE = re.compile(r"\{\{([^{}]*)\}\}")
_RANGE_WORDS = frozenset({"to", "-", "–", "and", "or", "by", "x", "×", "+"})
_SYMBOL_TEMPLATES = {
    "ndash": "–", "mdash": "—", "snd": " – ", "spaced ndash": " – ", "nbsp": " ", "middot": "·",
}
_TEXT_TEMPLATES = frozenset(
    {"nowrap", "nobr", "small", "smaller", "big", "larger", "sc", "smallcaps", "small caps", "keep together",
     "not a typo", "noitalic", "nowrap begin", "em", "strong", "var", "math", "mvar", "linktext", "w"}
)


def _render_inline_template(match: "re.Match[str]") -> str:
    """Text of the few inline templates whose output is part of the sentence ({{convert|5|km}},
    {{lang|fr|...}}, {{nowrap|...}}, {{as of|2014}}, dashes); any other template is left for removal."""
    inner = match.group(1)
    name, _, rest = inner.partition("|")
    key = name.strip().lower().replace("_", " ")
    args = [a.strip() for a in rest.split("|")] if rest else []
    positional = [a for a in args if "=" not in a]
    if key in _SYMBOL_TEMPLATES and not args:
        return _SYMBOL_TEMPLATES[key]
    if key.startswith("formatnum:"):
        return name.partition(":")[2].strip()
    if not positional:
        return match.group(0)
    if key in _TEXT_TEMPLATES:
        return positional[0]
    if key in ("lang", "transl", "transliteration") and len(positional) >= 2:
        return positional[-1]
    if key.startswith("lang-") or key in ("abbr", "abbrlink", "sic", "nihongo", "iast"):
        return positional[0]
    if key in ("convert", "cvt"):
        out = [positional[0]]
        i = 1
        while i + 1 < len(positional) and positional[i] in _RANGE_WORDS:
            out += [positional[i], positional[i + 1]]
            i += 2
        if i < len(positional):
            out.append(positional[i])
        return " ".join(out)
    if key in ("as of", "asof"):
        lower = any(a.replace(" ", "") in ("lc=y", "lc=yes") for a in args)
        return ("as of " if lower else "As of ") + " ".join(positional[:1])
    if key in ("circa", "c."):
        return "c. " + positional[0]
    if key == "frac" and len(positional) in (2, 3):
        return " ".join(positional[:-2] + [positional[-2] + "/" + positional[-1]])
    if key in ("us$", "usd"):
        return "US$" + positional[0]
    return match.group(0)


def _strip_templates(text: str) -> str:
    """Remove ``{{...}}`` with nesting (``{{{param}}}`` counts as a template plus a literal brace,
    which only occurs in broken article text). An unclosed template is dropped up to the end of its
    paragraph and scanning restarts there, so one stray ``{{`` cannot swallow the rest of the page."""
    out: List[str] = []
    pos = 0
    while "{{" in text[pos:] or "}}" in text[pos:]:
        depth, last, start = 0, pos, pos
        for match in _BRACE_TOKEN.finditer(text, pos):
            if match.group(0) == "{{":
                if depth == 0:
                    out.append(text[last : match.start()])
                    start = match.start()
                depth += 1
            elif depth:
                depth -= 1
                if depth == 0:
                    last = match.end()
            else:  # stray closer
                out.append(text[last : match.start()])
                last = match.end()
        if not depth:
            pos = last
            break
        end = text.find("\n\n", start)
        pos = len(text) if end < 0 else end
    out.append(text[pos:])
    return "".join(out)


def _strip_tables(text: str) -> str:
    """Remove ``{| ... |}`` tables (line-anchored, nested); an unclosed table runs to the end."""
    if "{|" not in text:
        return text
    out: List[str] = []
    depth = last = 0
    for match in _TABLE_TOKEN.finditer(text):
        if match.group(1) == "{|":
            if depth == 0:
                out.append(text[last : match.start()])
            depth += 1
        elif depth:
            depth -= 1
            if depth == 0:
                eol = text.find("\n", match.end())
                last = len(text) if eol < 0 else eol
    if depth:
        last = len(text)
    out.append(text[last:])
    return "".join(out)


def _external_link(match: "re.Match[str]") -> str:
    return (match.group(1) or match.group(2) or "").strip()


def _render_link(inner: str) -> str:
    """Visible text of one ``[[...]]`` whose nested links are already rendered."""
    target, pipe, label = inner.partition("|")
    target = target.strip()
    if target.startswith(":"):  # [[:Category:X]] is a visible link to the category page
        target = target[1:].strip()
    else:
        prefix, colon, rest = target.partition(":")
        if colon:
            p = prefix.strip().lower()
            if p in _DROPPED_LINK_NAMESPACES:
                return ""  # images (with their captions) and categories
            if p in _VISIBLE_INTERWIKI:
                target = rest.strip()
            elif not pipe and _LANGUAGE_PREFIX.match(p):
                return ""  # interlanguage link: not displayed
    if not pipe:
        return target
    label = label.strip()
    if label:
        return label
    # Pipe trick: [[Paris, Texas|]] -> "Paris", [[Foo (bar)|]] -> "Foo".
    shown = target.partition(":")[2] or target
    return re.sub(r"\s*\(.*\)$", "", shown).split(",")[0].strip()


def _strip_wikilinks(text: str) -> str:
    """Render ``[[...]]`` links with a stack, so links nested in file captions and single brackets
    inside captions ("Bicyclo[1.1.0]butane") are handled. Unclosed links are kept as plain text."""
    if "[[" not in text:
        return text.replace("]]", "")
    stack: List[List[str]] = [[]]
    pos = 0
    for match in _LINK_TOKEN.finditer(text):
        stack[-1].append(text[pos : match.start()])
        pos = match.end()
        if match.group(0) == "[[":
            stack.append([])
        elif len(stack) > 1:
            inner = "".join(stack.pop())
            stack[-1].append(_render_link(inner))
    stack[-1].append(text[pos:])
    while len(stack) > 1:
        inner = "".join(stack.pop())
        stack[-1].append(inner)
    return "".join(stack[0])


def _finish_paragraph(paragraph: str) -> str:
    paragraph = html.unescape(html.unescape(paragraph))  # dumps contain double-escaped "&amp;nbsp;"
    paragraph = _KNOWN_TAG.sub("", paragraph)
    paragraph = _EMPTY_PARENS.sub("", paragraph)
    paragraph = " ".join(paragraph.split())  # also turns NBSP and thin spaces into plain spaces
    paragraph = _SPACE_BEFORE_PUNCT.sub(r"\1", paragraph)
    paragraph = _SPACE_AFTER_OPEN.sub(r"\1", paragraph)
    return paragraph.strip()


def _paragraphs(text: str, keep_lists: bool) -> List[str]:
    """Split into paragraphs: blank lines and list items break paragraphs; headings are dropped,
    and so is the whole body of reference-like sections (up to the next heading of the same level).
    ``:``-indented lines are prose (quotes, indented replies) and always kept."""
    paragraphs: List[str] = []
    current: List[str] = []
    skip_level = 0

    def flush() -> None:
        if current:
            paragraphs.append(" ".join(current))
            current.clear()

    for line in text.split("\n"):
        stripped = line.strip()
        heading = _HEADING.match(stripped)
        if heading:
            flush()
            level = len(heading.group(1))
            if skip_level and level > skip_level:
                continue
            title = " ".join(_finish_paragraph(heading.group(2)).lower().split())
            skip_level = level if title in _DROPPED_SECTIONS else 0
            continue
        if skip_level:
            continue
        if not stripped:
            flush()
            continue
        first = stripped[0]
        if first in "*#:;":
            flush()
            item = stripped.lstrip("*#:; \t")
            if item and (keep_lists or first == ":"):
                paragraphs.append(item)
            continue
        if first in "|!" or stripped.startswith("----"):  # table residue, horizontal rule
            flush()
            continue
        current.append(stripped)
    flush()
    out = []
    for paragraph in paragraphs:
        paragraph = _finish_paragraph(paragraph)
        if any(c.isalnum() for c in paragraph):
            out.append(paragraph)
    return out


def clean_wikitext(text: str, keep_lists: bool = False) -> str:
    """Wikitext → plain prose, one paragraph per line (see the module docstring for what is kept).

    List items (``*``, ``#``, ``;``) are dropped unless ``keep_lists``: BERT, whose data recipe ALBERT
    reuses, kept "only the text passages and ignore[d] lists, tables, and headers"; list items are
    mostly fragments that make poor sentence pairs.
    """
    text = _COMMENT.sub("", text)
    text = _REF_SELF.sub("", text)
    text = _REF_PAIR.sub("", text)
    text = _DROP_SELF.sub("", text)
    text = _DROP_PAIR.sub("", text)
    text = _INNER_TEMPLATE.sub(_render_inline_template, text)
    text = _strip_templates(text)
    text = _strip_tables(text)
    text = _MAGIC_WORD.sub("", text)
    text = _EXTERNAL_LINK.sub(_external_link, text)
    text = _strip_wikilinks(text)
    text = _BARE_URL.sub("", text)
    text = _BR.sub(" ", text)
    text = _ANY_TAG.sub("", text)
    text = _QUOTES.sub("", text)
    return "\n".join(_paragraphs(text, keep_lists))


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


# ----------------------------------------------------------------------------------------------
# WikiExtractor output (the official BERT / ALBERT data route)
# ----------------------------------------------------------------------------------------------
#
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
# here give the same text as this module's XML cleaner: the title line is the title, headings are dropped, and
# WikiExtractor's ``formula_N`` placeholders (where the XML path drops <math> content) are removed. Each is a named
# setting of :func:`extracted_to_document` (``keep_headings``, ``keep_formulas``).

WIKIPEDIA_FORMATS = ("auto", "xml", "wikiextractor")
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


def sniff_wikipedia_format(prefix: bytes, name: str) -> str:
    """``"xml"`` (a MediaWiki export) or ``"wikiextractor"`` from the first bytes of the *decompressed* text;
    :class:`CorruptInputError` for an empty file or anything else."""
    head = prefix.lstrip(b"\xef\xbb\xbf").lstrip()
    if not head:
        raise CorruptInputError(name, "empty input (neither a MediaWiki export nor WikiExtractor output)")
    if head.startswith(b"<doc ") or head.startswith(b"<doc>"):
        return "wikiextractor"
    if head.startswith(b"<?xml") or head.startswith(b"<mediawiki"):
        return "xml"
    shown = head[:40].decode("utf-8", "replace")
    raise CorruptInputError(name, f"neither a MediaWiki XML export nor WikiExtractor output (starts with {shown!r})")


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
    from components.text.compression import open_decompressed

    raw, name, owned = _open_source(source, name)
    if not owned and not hasattr(raw, "peek") and not getattr(raw, "seekable", lambda: False)():
        raw = io.BufferedReader(raw)
    stream = open_decompressed(raw)
    number, offset, count = 0, 0, 0
    open_doc: Optional[Tuple[int, str, int]] = None  # (id, title, line)
    body: List[str] = []
    try:
        for data in stream:
            number += 1
            try:
                line = data.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise CorruptInputError(name, f"not valid UTF-8 at line {number} (byte offset {offset + exc.start} "
                                              f"of the {'decompressed ' if stream is not raw else ''}text)") from None
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
                                              "(not WikiExtractor output?)")
        if open_doc is not None:
            raise CorruptInputError(name, f"<doc id={open_doc[0]} title={open_doc[1]!r}> opened at line "
                                          f"{open_doc[2]} has no </doc> (the file ends at line {number}: truncated?)")
        if count == 0:
            raise CorruptInputError(name, "empty input: no <doc> in this WikiExtractor file")
    except (EOFError, OSError, gzip.BadGzipFile) as exc:
        where = f"after {count} documents, at line {number}"
        if open_doc is not None:
            where += f", in <doc id={open_doc[0]} title={open_doc[1]!r}>"
        raise CorruptInputError(name, f"corrupt or truncated compressed data ({where}): {exc}") from exc
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
                          keep_formulas: bool = False) -> Optional[Document]:
    """One ``<doc>`` → a ``wiki:<id>`` document (the id the XML reader gives the same page, so deduplication sees
    both routes alike), or None when it is shorter than ``min_chars`` after cleaning."""
    result = make_document(f"wiki:{doc.page_id}", "wikipedia", doc.title,
                           extracted_paragraphs(doc, keep_headings, keep_formulas))
    return result if result.sentences and result.num_chars >= min_chars else None


def extracted_documents(source: Source, min_chars: int = DEFAULT_MIN_CHARS, keep_headings: bool = False,
                        keep_formulas: bool = False, name: Optional[str] = None) -> Iterator[Document]:
    """The articles of one WikiExtractor file as documents, in file order; short ones are dropped."""
    for doc in iter_extracted(source, name=name):
        result = extracted_to_document(doc, min_chars, keep_headings, keep_formulas)
        if result is not None:
            yield result
