"""Rule-based sentence splitters: English (the default) and multilingual (``corpus.sentence_splitter``).

Why rules rather than a model: ALBERT only needs sentence boundaries to pack whole sentences into
segments and to build sentence-order pairs, so an occasional wrong split costs little, whereas the
alternatives cost a lot: NLTK's Punkt needs a model download (impossible on sealed workers) and
pysbd/spaCy are heavy dependencies. Rules are deterministic (the same corpus always gives the same
TFRecords), dependency-free and fast enough for a Beam ``Map`` over Wikipedia.

A candidate boundary is a run of terminators (``.``, ``?``, ``!``, ``…``), optionally followed by
closing quotes or brackets, then whitespace. It is rejected when the next word starts in lower case,
after abbreviations that precede names or numbers (``Mr.``, ``Dr.``, ``e.g.``, ``No.``), and after
initials or dotted acronyms (``J. R. R.``, ``U.S.``) unless the next word is a typical sentence
opener ("The", "He", "In", ...). Decimals ("3.14", "$2.5 million") never match because no
whitespace follows the period.

The multilingual splitter (:func:`split_multilingual`) keeps those rules for ``.``/``?``/``!`` before whitespace
and adds the terminators of scripts that put no space after a sentence, split right after them (with the closing
quotes and brackets that follow): Chinese and Japanese 。！？ and their half- and full-width forms (．only outside
numbers), ``!``/``?`` directly before a CJK character, Devanagari । ॥, Arabic ؟, Urdu ۔, Ethiopic ። ፧ ፨, Armenian
։, Myanmar ။ and Tibetan །. A limit, named: Thai, Lao and Khmer mark no sentence end at all (a space separates
phrases and sentences alike), so their paragraphs stay whole.
Rules rather than a library: pysbd has no Korean or Thai and was last released in 2021, ICU's BreakIterator
needs libicu to build on workers, and spaCy's sentencizer is a large dependency for a punctuation list.
"""
from __future__ import annotations

import re
from typing import List

# Abbreviations after which a sentence practically never ends (they introduce a name, number or example).
_NEVER_END = frozenset(
    """
    mr mrs ms messrs dr prof rev hon fr st mt ft gen gov sen rep lt col capt cmdr cdr sgt maj adm brig
    pres supt insp mme mlle mx
    e.g eg i.e ie cf viz vs v ca c esp incl
    no nos vol vols pp p ch chap fig figs eq eqs ed eds op sec art para
    """.split()
)
# Abbreviations that may end a sentence: split after them only if the next word is a typical opener.
_MAY_END = frozenset(
    """
    jr sr inc ltd co corp bros dept univ assn ave blvd rd al etc approx
    jan feb mar apr jun jul aug sep sept oct nov dec mon tue tues wed thu thur thurs fri sat sun
    """.split()
)
# Words that commonly open a sentence; after an ambiguous abbreviation they signal a boundary.
_OPENERS = frozenset(
    """
    a an the this that these those there here it its he she his her they their them we our i you your
    in on at as after before for from when while if although though during since by with without
    but and or so yet however thus then also many some most one two several all both each
    what who which where why how
    """.split()
)
_CLOSERS = "\"'”’»)]}"
_OPENERS_PUNCT = "\"'“‘«([{"
# Terminator run + optional closers, followed by whitespace (the split point is after the closers).
_CANDIDATE = re.compile(r"[.?!…]+[" + re.escape(_CLOSERS) + r"]*(?=\s)")
_WORD = re.compile(r"\S+")
_DOTTED = re.compile(r"^(?:[A-Za-z]{1,2}\.)+[A-Za-z]{1,2}$")  # U.S, e.g, Ph.D, a.m


def _previous_token(text: str, end: int) -> str:
    """The whitespace-delimited token ending at ``end`` (exclusive), minus opening punctuation."""
    start = end
    while start > 0 and not text[start - 1].isspace():
        start -= 1
    return text[start:end].lstrip(_OPENERS_PUNCT)


def _next_word(text: str, start: int) -> str:
    """The next whitespace-delimited word after ``start``, minus opening punctuation."""
    match = _WORD.search(text, start)
    return match.group(0).lstrip(_OPENERS_PUNCT) if match else ""


def _is_boundary(text: str, term_start: int, term: str, after: int) -> bool:
    nxt = _next_word(text, after)
    if not nxt:
        return False
    first = nxt[0]
    if first.islower():
        return False  # "e.g. the", '"Why?" he asked', "Wait... what"
    opener = nxt.rstrip(".,;:!?\"'”’)").lower() in _OPENERS
    punct = term.rstrip(_CLOSERS)
    if punct != ".":
        return True  # ?, !, ?!, ellipsis followed by a capital/digit/quote
    token = _previous_token(text, term_start)
    if not token:
        return True
    low = token.lower()
    if low in _NEVER_END:
        return False
    if low in _MAY_END:
        return opener
    if len(token) == 1 and token.isalpha() and token.isupper():
        return opener  # an initial: "J. R. R. Tolkien", but "World War I. The war"
    if _DOTTED.match(token):
        return opener  # "U.S. Army" vs "in the U.S. The"
    return True


def split_sentences(paragraph: str) -> List[str]:
    """Split one paragraph into sentences (stripped, non-empty, original text otherwise unchanged)."""
    text = paragraph.strip()
    if not text:
        return []
    sentences: List[str] = []
    start = 0
    for match in _CANDIDATE.finditer(text):
        if _is_boundary(text, match.start(), match.group(0), match.end()):
            sentence = text[start : match.end()].strip()
            if sentence:
                sentences.append(sentence)
            start = match.end()
    tail = text[start:].strip()
    if tail:
        sentences.append(tail)
    return sentences


# Terminators after which a sentence ends whether or not whitespace follows.
_WIDE_TERMINATORS = "。！？｡।॥؟۔።፧፨։။།"
# Closing quotes and brackets that stay with the sentence they end (CJK corner brackets and full-width forms too).
_WIDE_CLOSERS = _CLOSERS + "」』）》〉】〕〗〙〛＂＇｣"
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff66-\uff9f"
_WIDE_CANDIDATE = re.compile(
    "(?:[" + _WIDE_TERMINATORS + "]+|(?<![0-9０-９])．|[!?]+(?=[" + _CJK + "]))[" + re.escape(_WIDE_CLOSERS) + "]*")
# A space between two CJK characters (or CJK punctuation): what joining hard-wrapped lines of Chinese or Japanese
# text with spaces leaves behind; Hangul is left alone (Korean separates words with spaces).
_CJK_SPACE = re.compile("(?<=[" + _CJK + "\u3000-\u303f\uff01-\uff0f\uff1a-\uff20]) (?=[" + _CJK
                        + "\u3000-\u303f\uff01-\uff0f\uff1a-\uff20])")


def join_cjk_spaces(text: str) -> str:
    """``text`` without the single spaces that stand between two CJK characters."""
    return _CJK_SPACE.sub("", text) if not text.isascii() else text


def split_multilingual(paragraph: str) -> List[str]:
    """Split one paragraph of any script into sentences: :func:`split_sentences`' rules, then each piece cut
    after the terminators of scripts that need no following space (module docstring)."""
    out: List[str] = []
    for piece in split_sentences(join_cjk_spaces(paragraph)):
        if piece.isascii():
            out.append(piece)
            continue
        start = 0
        for match in _WIDE_CANDIDATE.finditer(piece):
            if match.end() < len(piece):
                sentence = piece[start:match.end()].strip()
                if sentence:
                    out.append(sentence)
                start = match.end()
        tail = piece[start:].strip()
        if tail:
            out.append(tail)
    return out


SPLITTERS = {"english": split_sentences, "multilingual": split_multilingual}
