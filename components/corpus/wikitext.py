"""MediaWiki markup (wikitext) → clean prose, for the ``pages-articles`` XML reader of ``components/corpus/wiki.py``.

Why hand-written rather than WikiExtractor/mwparserfromhell: neither is a dependency of this project,
and pretraining only needs readable sentences, not a faithful render. The cleaner removes what
would teach the model markup instead of language (templates, tables, references, file captions,
reference-list sections) and keeps the visible text of links and formatting. The WikiExtractor reader
(``components/corpus/wikiextractor_output.py``) finishes its lines with the same tag, bracket and spacing rules.
"""
from __future__ import annotations

import html
import re
from typing import AbstractSet, List

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

# Links into these namespaces are not shown as text: Media (-2) and File (6) embed a file, its caption with it, and
# Category (14) files the page. Every wiki accepts the canonical English names (and "Image", File's old name) besides
# its own; components/corpus/wiki.py adds a dump's local names from its <siteinfo>.
DROPPED_LINK_NAMESPACES = frozenset({-2, 6, 14})
CANONICAL_DROPPED_LINK_NAMES = frozenset({"media", "file", "image", "category"})
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


def namespace_name(name: str) -> str:
    """A namespace name as links and titles compare it: underscores are spaces, runs of spaces one, case ignored."""
    return " ".join(name.replace("_", " ").split()).lower()


def _render_link(inner: str, dropped_link_names: AbstractSet[str]) -> str:
    """Visible text of one ``[[...]]`` whose nested links are already rendered."""
    target, pipe, label = inner.partition("|")
    target = target.strip()
    if target.startswith(":"):  # [[:Category:X]] is a visible link to the category page
        target = target[1:].strip()
    else:
        prefix, colon, rest = target.partition(":")
        if colon:
            p = prefix.strip().lower()
            if namespace_name(prefix) in dropped_link_names:
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


def _strip_wikilinks(text: str, dropped_link_names: AbstractSet[str]) -> str:
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
            stack[-1].append(_render_link(inner, dropped_link_names))
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


def clean_wikitext(text: str, keep_lists: bool = False,
                   dropped_link_names: AbstractSet[str] = CANONICAL_DROPPED_LINK_NAMES) -> str:
    """Wikitext → plain prose, one paragraph per line (see the module docstring for what is kept).

    ``dropped_link_names``: the namespace names (as :func:`namespace_name` writes them) whose links are dropped, by
    default the canonical English ones; the XML reader passes those of the dump's wiki.

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
    text = _strip_wikilinks(text, dropped_link_names)
    text = _BARE_URL.sub("", text)
    text = _BR.sub(" ", text)
    text = _ANY_TAG.sub("", text)
    text = _QUOTES.sub("", text)
    return "\n".join(_paragraphs(text, keep_lists))
