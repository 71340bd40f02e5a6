"""The units every data-gate measure counts: words, content tokens, scripts, language labels and n-gram hashes.

Two kinds of word, for two purposes:

* **words** (quality and repetition measures, as Gopher counts them on the text as written): a word is a maximal
  run of characters that are neither whitespace nor of an *unspaced script*, and every character of an unspaced
  script is a word of its own. Unspaced scripts write no space between words: Han ideographs, Hiragana, Katakana,
  Thai, Lao, Khmer and Myanmar. One word per character is BERT's rule for CJK (``_tokenize_chinese_chars`` puts a
  space around every ideograph); for Thai, Lao, Khmer and Myanmar, whose words are several characters long, it
  over-counts words (an upper bound, and mean word length reads about 1 there, so that Gopher rule is skipped for
  them: ``UNSPACED_LANGUAGES``). Hangul is *not* unspaced: Korean puts spaces between its words (eojeol). On text
  without an unspaced character the words are exactly ``text.split()``.
* **content tokens** (unigram drift, MinHash shingles, contamination n-grams, on normalised text): ALBERT's
  ``preprocess_text`` (lower case, accents removed, whitespace collapsed), then runs of word characters
  (``\\w``: letters, digits, underscore), again one token per unspaced-script character. Punctuation is dropped, so
  "Paris," and "paris" are one token; for Chinese and Japanese, n-grams of tokens are character n-grams.

Scripts and language labels: no language-identification model can run on sealed workers (fastText needs a model
file), so a document's ``language`` is a label read from the script of most of its letters: ``zh`` (Han without
kana), ``ja`` (Han and kana, kana at least ``KANA_SHARE_FOR_JA`` of them), ``ko`` (Hangul), ``th``, ``lo``, ``km``,
``my``, ``cyrillic``, ``greek``, ``arabic``, ``hebrew``, ``devanagari``; Latin-script text is ``en`` when it has at
least ``MIN_ENGLISH_STOP_WORDS`` of Gopher's English stop words (Gopher's own rule), else ``latin`` (another
Latin-script language, or no prose); ``other`` (letters of another script) and ``none`` (no letters).

N-gram hashes: each distinct token gets a stable 64-bit hash (BLAKE2b, so equal across processes and runs, unlike
Python's ``hash``); an n-gram's hash is the polynomial ``sum(t[i + j] * BASE ** (n - 1 - j)) mod 2**64`` of its
token hashes, computed for all positions at once with NumPy.
"""
from __future__ import annotations

import functools
import hashlib
import re
import string
import sys
from typing import Dict, Iterable, List, Sequence

import numpy as np

from components.text.normalize import preprocess_text

# Character ranges of the unspaced scripts (see the module docstring).
UNSPACED_CHARS = (
    "\u3040-\u309f"  # Hiragana
    "\u30a0-\u30ff"  # Katakana
    "\u31f0-\u31ff"  # Katakana phonetic extensions
    "\uff66-\uff9f"  # halfwidth Katakana
    "\u3400-\u4dbf"  # CJK unified ideographs, extension A
    "\u4e00-\u9fff"  # CJK unified ideographs
    "\uf900-\ufaff"  # CJK compatibility ideographs
    "\U00020000-\U0003134f"  # CJK extensions B to G and the compatibility supplement
    "\u0e00-\u0e7f"  # Thai
    "\u0e80-\u0eff"  # Lao
    "\u1000-\u109f"  # Myanmar
    "\u1780-\u17ff"  # Khmer
)
_WORD = re.compile(f"[{UNSPACED_CHARS}]|[^\\s{UNSPACED_CHARS}]+")
_TOKEN = re.compile(f"[{UNSPACED_CHARS}]|[^\\W{UNSPACED_CHARS}]+")
_ASCII_RUNS = re.compile(r"[\x00-\x7f]+")
_ASCII_LETTERS = string.ascii_letters.encode("ascii")

# Script name → character class. A letter outside all of them counts for script "other".
SCRIPTS: Dict[str, str] = {
    "latin": "A-Za-z\u00aa\u00ba\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u024f\u1e00-\u1eff",
    "han": "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f",
    "kana": "\u3040-\u309f\u30a0-\u30ff\u31f0-\u31ff\uff66-\uff9f",
    "hangul": "\u1100-\u11ff\u3130-\u318f\uac00-\ud7af",
    "thai": "\u0e00-\u0e7f",
    "lao": "\u0e80-\u0eff",
    "khmer": "\u1780-\u17ff",
    "myanmar": "\u1000-\u109f",
    "cyrillic": "\u0400-\u052f",
    "greek": "\u0370-\u03ff\u1f00-\u1fff",
    "arabic": "\u0600-\u06ff\u0750-\u077f",
    "hebrew": "\u0590-\u05ff",
    "devanagari": "\u0900-\u097f",
}
_SCRIPT_RE = {name: re.compile(f"[{chars}]") for name, chars in SCRIPTS.items()}
# The language label of a document whose letters are mostly of this script (Latin, Han and kana: see language()).
_SCRIPT_LANGUAGE = {"hangul": "ko", "thai": "th", "lao": "lo", "khmer": "km", "myanmar": "my"}
# Labels whose words are mostly one character (unspaced scripts): Gopher's mean-word-length rule does not apply.
UNSPACED_LANGUAGES = frozenset({"zh", "ja", "th", "lo", "km", "my"})
# Japanese mixes Han with kana; Chinese text has none. A Han-script document is "ja" when kana are at least this
# share of its Han + kana letters (Japanese prose runs at 0.4-0.7; 0.1 tolerates kanji-heavy legal or technical
# Japanese and a stray kana quoted in Chinese).
KANA_SHARE_FOR_JA = 0.1
# Gopher's English stop words (Rae et al. 2021, A1.1; datatrove's STOP_WORDS) and its minimum count per document.
ENGLISH_STOP_WORDS = frozenset({"the", "be", "to", "of", "and", "that", "have", "with"})
MIN_ENGLISH_STOP_WORDS = 2

# Token hashes remembered per process: frequent tokens are hashed once (~15 MB at most).
TOKEN_HASH_CACHE = 1 << 17
# Odd 64-bit multiplier of the polynomial n-gram hash (the golden-ratio constant).
NGRAM_HASH_BASE = np.uint64(0x9E3779B97F4A7C15)


def words(text: str) -> List[str]:
    """Words as the quality measures count them (module docstring): ``text.split()`` plus one word per character
    of an unspaced script."""
    return text.split() if text.isascii() else _WORD.findall(text)


def count_letters(text: str) -> int:
    """Letters (``str.isalpha``: Unicode categories L*) in ``text``."""
    if text.isascii():
        data = text.encode("ascii")
        return len(data) - len(data.translate(None, _ASCII_LETTERS))
    return sum(map(str.isalpha, text))


def count_non_space(text: str) -> int:
    """Characters of ``text`` that are not whitespace (the characters of its words)."""
    return sum(map(len, text.split()))


@functools.lru_cache(maxsize=1)
def _no_letter_word() -> re.Pattern:
    """A word (see :func:`words`) without a letter: a run of characters that are neither whitespace, nor of an
    unspaced script, nor letters, between whitespace, unspaced characters or the ends of the text. The letter class
    lists every code point ``str.isalpha`` accepts (648 ranges, built once per process in ~0.2 s)."""
    ranges, start = [], None
    for cp in range(sys.maxunicode + 2):
        alpha = cp <= sys.maxunicode and chr(cp).isalpha()
        if alpha and start is None:
            start = cp
        elif not alpha and start is not None:
            ranges.append(re.escape(chr(start)) + ("" if cp - 1 == start else "-" + re.escape(chr(cp - 1))))
            start = None
    letters, edge = "".join(ranges), f"[^\\s{UNSPACED_CHARS}]"
    return re.compile(f"(?<!{edge})[^\\s{UNSPACED_CHARS}{letters}]+(?!{edge})")


def count_no_letter_words(text: str) -> int:
    """Words of ``text`` (see :func:`words`) without a letter. A character of an unspaced script counts as a word
    with a letter (all are letters but Thai, Lao, Khmer and Myanmar vowel signs, which never stand alone)."""
    return len(_no_letter_word().findall(text))


def normalized_text(sentences: Iterable[str]) -> str:
    """The sentences through ALBERT's ``preprocess_text`` (lower case, no accents), one per line."""
    return "\n".join(preprocess_text(s) for s in sentences)


def content_tokens(normalized: str) -> List[str]:
    """Content tokens (module docstring) of text already normalised by :func:`normalized_text`."""
    return _TOKEN.findall(normalized)


def script_counts(text: str) -> Dict[str, int]:
    """Letters of each script in ``text`` (only scripts present), letters of no listed script under "other"."""
    letters = count_letters(text)
    if text.isascii():
        return {"latin": letters} if letters else {}
    rest = _ASCII_RUNS.sub("", text)  # the script classes run on the non-ASCII characters only
    counts = {name: len(pattern.findall(rest)) for name, pattern in _SCRIPT_RE.items()}
    counts["latin"] += letters - count_letters(rest)  # ASCII letters
    counts = {name: c for name, c in counts.items() if c}
    other = letters - sum(counts.values())
    if other > 0:
        counts["other"] = other
    return counts


def language(scripts: Dict[str, int], english_stop_words: int) -> str:
    """The language label (module docstring) of a document with these letter counts per script and this many
    occurrences of English stop words."""
    if not scripts:
        return "none"
    han, kana = scripts.get("han", 0), scripts.get("kana", 0)
    merged = {name: c for name, c in scripts.items() if name not in ("han", "kana")}
    if han + kana:
        merged["cjk"] = han + kana
    top = max(sorted(merged), key=lambda name: merged[name])  # sorted: ties go to the first name, deterministically
    if top == "cjk":
        return "ja" if kana >= KANA_SHARE_FOR_JA * (han + kana) else "zh"
    if top == "latin":
        return "en" if english_stop_words >= MIN_ENGLISH_STOP_WORDS else "latin"
    return _SCRIPT_LANGUAGE.get(top, top)


@functools.lru_cache(maxsize=TOKEN_HASH_CACHE)
def token_hash(token: str) -> int:
    """Stable 64-bit hash of one token (BLAKE2b, 8 bytes, little-endian)."""
    return int.from_bytes(hashlib.blake2b(token.encode("utf-8"), digest_size=8).digest(), "little")


def token_hashes(tokens: Sequence[str]) -> np.ndarray:
    """uint64 stable hashes of ``tokens`` (each distinct token hashed once)."""
    index: Dict[str, int] = {}
    ids = [index.setdefault(t, len(index)) for t in tokens]
    table = np.array([token_hash(t) for t in index], dtype=np.uint64)
    return table[np.array(ids, dtype=np.int64)] if ids else np.zeros(0, dtype=np.uint64)


class _TokenHashCache(dict):
    """UTF-8 token bytes → :func:`token_hash` of the token (the same BLAKE2b of the same bytes), filled on a miss."""

    def __missing__(self, data: bytes) -> int:
        value = self[data] = int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "little")
        return value


class _ShortTokenHashCache(dict):
    """A token of at most 8 UTF-8 bytes, none NUL, as the little-endian integer of its bytes → its
    :func:`token_hash`, filled on a miss."""

    def __missing__(self, key: int) -> int:
        data = key.to_bytes(8, "little").rstrip(b"\0")
        value = self[key] = int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "little")
        return value


_TOKEN_HASH_BYTES = _TokenHashCache()
_TOKEN_HASH_KEYS = _ShortTokenHashCache()
# Mask of the low ``n`` bytes of a uint64, n = 0..8.
_LENGTH_MASKS = np.array([(1 << (8 * n)) - 1 for n in range(9)], dtype=np.uint64)
# ASCII bytes that are not word characters (all but A-Z, a-z, 0-9 and _) → space; bytes >= 0x80 unchanged.
_ASCII_SEPARATORS = bytes(b if b >= 0x80 or chr(b).isalnum() or b == 0x5F else 0x20 for b in range(256))
_ASCII_BYTES = bytes(range(0x80))
_UNSPACED = re.compile(f"[{UNSPACED_CHARS}]")


def content_token_hashes(sentences: Iterable[str]) -> np.ndarray:
    """``token_hashes(content_tokens(normalized_text(sentences)))``, equal value for value, at C speed: the path of
    the contamination pass, which reads every document of a span.

    Three differences of method, none of result. Whitespace is not collapsed (it never is, nor becomes after NFKD, a
    word character, so the tokens are the same). The tokens are cut from the text's UTF-8 bytes: every ASCII byte
    that is not a word character, and the bytes of every non-ASCII character in the text that is not one (checked
    with the token pattern itself), become spaces, and the tokens are the runs between spaces; a token's bytes are
    its UTF-8 encoding, which is what :func:`token_hash` hashes. Text with a character of an unspaced script (one
    token per character) goes through :func:`content_tokens` instead. The hashes come from dicts kept across documents (at most
    ``TOKEN_HASH_CACHE`` tokens each before a document, then emptied) instead of a per-document index and an LRU
    cache, looked up once per distinct short token of a document (:func:`_separated_token_hashes`).
    """
    text = "\n".join(preprocess_text(s, remove_space=False) for s in sentences)
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate (never from a UTF-8 file): the per-token path, which skips it
        return token_hashes(content_tokens(text))
    if not text.isascii():
        # The distinct non-ASCII characters: the UTF-8 bytes without the ASCII ones are whole characters.
        chars = set(data.translate(None, _ASCII_BYTES).decode("utf-8"))
        if any(_UNSPACED.match(char) for char in chars):
            return token_hashes(content_tokens(text))
        for char in chars:
            if not _TOKEN.fullmatch(char):
                data = data.replace(char.encode("utf-8"), b" ")
    return _separated_token_hashes(data.translate(_ASCII_SEPARATORS))


def _separated_token_hashes(data: bytes) -> np.ndarray:
    """:func:`token_hash` of each token of ``data.split()``, for ``data`` whose only separator is the space and whose
    tokens hold no NUL byte. A token of at most 8 bytes is keyed by its bytes read as one little-endian integer
    (exact: no NUL, so the zero padding tells the length), so a document's tokens are made unique in NumPy and only
    its distinct keys are looked up in Python; a longer token is looked up by its bytes."""
    for cache in (_TOKEN_HASH_BYTES, _TOKEN_HASH_KEYS):
        if len(cache) > TOKEN_HASH_CACHE:
            cache.clear()
    size = len(data)
    word = np.frombuffer(data, dtype=np.uint8) != 0x20
    edges = np.flatnonzero(np.diff(word, prepend=False, append=False))
    starts, ends = edges[0::2], edges[1::2]
    lengths = ends - starts
    # Eight bytes from every offset (unaligned reads of a zero-padded copy), masked to each token's length.
    eight = np.ndarray((size,), dtype="<u8", buffer=data + bytes(8), strides=(1,))
    short = lengths <= 8
    keys = eight[starts[short]] & _LENGTH_MASKS[lengths[short]]
    out = np.empty(len(starts), dtype=np.uint64)
    distinct, inverse = np.unique(keys, return_inverse=True)
    out[short] = np.fromiter(map(_TOKEN_HASH_KEYS.__getitem__, distinct.tolist()), dtype=np.uint64,
                             count=len(distinct))[inverse]
    long = np.flatnonzero(~short)
    if len(long):
        tokens = map(data.__getitem__, map(slice, starts[long].tolist(), ends[long].tolist()))
        out[long] = np.fromiter(map(_TOKEN_HASH_BYTES.__getitem__, tokens), dtype=np.uint64, count=len(long))
    return out


def ngram_hashes(values: np.ndarray, n: int) -> np.ndarray:
    """uint64 hash of every n-gram of ``values`` (uint64), in position order: ``len(values) - n + 1`` of them
    (none when shorter than ``n``). Wrapping arithmetic modulo 2**64."""
    count = len(values) - n + 1
    if count <= 0:
        return np.zeros(0, dtype=np.uint64)
    values = values.astype(np.uint64, copy=False)
    out = values[:count].copy()
    with np.errstate(over="ignore"):
        for j in range(1, n):
            out *= NGRAM_HASH_BASE
            out += values[j:j + count]
    return out
