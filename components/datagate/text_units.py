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
import unicodedata
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

import numpy as np

from components.text import unicode_ranges
from components.text.normalize import _drop_combining, preprocess_text

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
    lists every code point ``str.isalpha`` accepts (the stored ranges of :mod:`components.text.unicode_ranges`)."""
    letters = "".join(re.escape(chr(lo)) + ("" if lo == hi else "-" + re.escape(chr(hi)))
                      for lo, hi in unicode_ranges.ranges("alpha"))
    edge = f"[^\\s{UNSPACED_CHARS}]"
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


def bytes_hash(data: bytes) -> int:
    """Stable 64-bit hash of a token's UTF-8 bytes (BLAKE2b, 8 bytes, little-endian): what :func:`token_hash` is."""
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "little")


@functools.lru_cache(maxsize=TOKEN_HASH_CACHE)
def token_hash(token: str) -> int:
    """Stable 64-bit hash of one token: :func:`bytes_hash` of its UTF-8 encoding."""
    return bytes_hash(token.encode("utf-8"))


def token_hashes(tokens: Sequence[str]) -> np.ndarray:
    """uint64 stable hashes of ``tokens`` (each distinct token hashed once)."""
    index: Dict[str, int] = {}
    ids = [index.setdefault(t, len(index)) for t in tokens]
    table = np.array([token_hash(t) for t in index], dtype=np.uint64)
    return table[np.array(ids, dtype=np.int64)] if ids else np.zeros(0, dtype=np.uint64)


class _TokenHashCache(dict):
    """UTF-8 token bytes → :func:`bytes_hash` (the token's :func:`token_hash`), filled on a miss."""

    def __missing__(self, data: bytes) -> int:
        value = self[data] = bytes_hash(data)
        return value


class _ShortTokenHashCache(dict):
    """A token of at most 8 UTF-8 bytes, none NUL, as the little-endian integer of its bytes → its
    :func:`token_hash`, filled on a miss."""

    def __missing__(self, key: int) -> int:
        value = self[key] = bytes_hash(key.to_bytes(8, "little").rstrip(b"\0"))
        return value


_TOKEN_HASH_BYTES = _TokenHashCache()
_TOKEN_HASH_KEYS = _ShortTokenHashCache()
# Mask of the low ``n`` bytes of a uint64, n = 0..8.
_LENGTH_MASKS = np.array([(1 << (8 * n)) - 1 for n in range(9)], dtype=np.uint64)
# ASCII bytes that are not word characters (all but A-Z, a-z, 0-9 and _) → space; bytes >= 0x80 unchanged.
_ASCII_SEPARATORS = bytes(b if b >= 0x80 or chr(b).isalnum() or b == 0x5F else 0x20 for b in range(256))
# The same, A-Z also made lower case (ASCII text).
_ASCII_LOWER_SEPARATORS = bytes(_ASCII_SEPARATORS).translate(bytes.maketrans(string.ascii_uppercase.encode("ascii"),
                                                                            string.ascii_lowercase.encode("ascii")))
_ASCII_BYTES = bytes(range(0x80))
_UNSPACED = re.compile(f"[{UNSPACED_CHARS}]")


def content_token_hashes(sentences: Iterable[str]) -> np.ndarray:
    """``token_hashes(content_tokens(normalized_text(sentences)))``, equal value for value, at C speed: the path of
    the contamination pass, which reads every document of a span.

    Four differences of method, none of result. Whitespace is not collapsed (it never is, nor becomes after NFKD, a
    word character, so the tokens are the same). ALBERT's normalisation is applied to each distinct non-ASCII
    character of the text alone and to ASCII bytes by a table (:func:`_character_bytes` says why that is exact, and
    when the whole text is normalised instead). The tokens are cut from the text's UTF-8 bytes: every ASCII byte
    that is not a word character, and the bytes of every non-ASCII character that is not one (checked with the
    token pattern itself), become spaces, and the tokens are the runs between spaces; a token's bytes are its UTF-8
    encoding, which is what :func:`token_hash` hashes. Text with a character of an unspaced script (one token per
    character) goes through :func:`content_tokens` instead. The hashes come from dicts kept across documents (at
    most ``TOKEN_HASH_CACHE`` tokens each before a document, then emptied) instead of a per-document index and an
    LRU cache, looked up once per distinct short token of a document (:func:`_separated_token_hashes`). The
    contamination pass itself goes through :meth:`TokenVocabulary.known_token_hashes`, the same tokens.
    """
    data, text = _separated_bytes(sentences)
    return token_hashes(content_tokens(text)) if data is None else _separated_token_hashes(data)


def _separated_bytes(sentences: Iterable[str]) -> Tuple[Optional[bytes], str]:
    """(the normalised text's UTF-8 bytes with every byte outside a token made a space, the normalised text or ""
    when ASCII), or (None, the normalised text) where the per-token path must cut the tokens
    (:func:`content_token_hashes`)."""
    sentences = list(sentences)
    text = "\n".join(sentences)
    if text.isascii():  # ALBERT's normalisation of ASCII text, lower case, in the one translate
        return text.encode("ascii").translate(_ASCII_LOWER_SEPARATORS), ""
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate (never from a UTF-8 file): the per-token path, which skips it
        return None, "\n".join(preprocess_text(s, remove_space=False) for s in sentences)
    # Character by character (_CHARACTER_BYTES): each distinct non-ASCII character's bytes replaced by those of
    # what it becomes, then the ASCII bytes lower-cased and separated in one translate.
    if len(_CHARACTER_BYTES) > TOKEN_HASH_CACHE:
        _CHARACTER_BYTES.clear()
    chars = [(char, _CHARACTER_BYTES[char]) for char in set(data.translate(None, _ASCII_BYTES).decode("utf-8"))]
    if all(replacement is not None for _, replacement in chars):
        for char, replacement in chars:
            if replacement != char.encode("utf-8"):
                data = data.replace(char.encode("utf-8"), replacement)
        return data.translate(_ASCII_LOWER_SEPARATORS), ""
    # A character of an unspaced script, or one of the few that _character_bytes leaves to the whole text:
    # preprocess_text on the whole text at once, NFKD, the combining marks dropped, lower case. The same as per
    # sentence: NFKD reorders marks only between starters ("\n" is one), and lower() reads the context of a capital
    # sigma only across case-ignorable characters, which "\n" is not.
    text = unicodedata.normalize("NFKD", text).translate(_drop_combining()).lower()
    data = text.encode("utf-8")
    # The distinct non-ASCII characters: the UTF-8 bytes without the ASCII ones are whole characters.
    chars = set(data.translate(None, _ASCII_BYTES).decode("utf-8"))
    if any(_UNSPACED.match(char) for char in chars):
        return None, text
    for char in chars:
        if not _TOKEN.fullmatch(char):
            data = data.replace(char.encode("utf-8"), b" ")
    return data.translate(_ASCII_SEPARATORS), text


def content_token_bytes(sentences: Iterable[str]) -> List[bytes]:
    """The UTF-8 bytes of each of ``content_tokens(normalized_text(sentences))``, cut as
    :func:`content_token_hashes` cuts them."""
    data, text = _separated_bytes(sentences)
    return data.split() if data is not None else [t.encode("utf-8") for t in content_tokens(text)]


def _character_bytes(char: str) -> Optional[bytes]:
    """What one non-ASCII character becomes in :func:`_separated_bytes`'s bytes: ``preprocess_text(char)`` (NFKD,
    combining marks dropped, lower case), its non-ASCII characters that are not word characters made spaces; None
    where that is not exact character by character, and the whole text must be normalised at once.

    ALBERT's normalisation of a text is that of its characters one by one, joined: NFKD decomposes each character
    alone and then only reorders combining marks among themselves, all of which are dropped; ``str.lower`` maps
    each character alone but the capital sigma (final or not by its neighbours), so a character that becomes one is
    None. So is a character whose result holds one that normalises to something else (a character met again in the
    text would be replaced twice) or one of an unspaced script (the per-token path)."""
    out = preprocess_text(char, remove_space=False)
    middle = unicodedata.normalize("NFKD", char).translate(_drop_combining())
    if "\u03a3" in middle or any(_UNSPACED.match(c) or (not c.isascii() and preprocess_text(c, remove_space=False) != c)
                                  for c in out):
        return None
    return b"".join(c.encode("utf-8") if c.isascii() or _TOKEN.fullmatch(c) else b" " for c in out)


class _CharacterBytes(dict):
    """A non-ASCII character → :func:`_character_bytes`, filled on a miss."""

    def __missing__(self, char: str) -> Optional[bytes]:
        value = self[char] = _character_bytes(char)
        return value


_CHARACTER_BYTES = _CharacterBytes()


def _token_spans(data: bytes) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(starts, ends, eight) of the tokens of ``data.split()`` (``data``'s only separator the space): ``eight[i]`` is
    the 8 bytes from offset ``i`` as a little-endian integer (zero past the end)."""
    word = np.frombuffer(data, dtype=np.uint8) != 0x20
    edges = np.flatnonzero(np.diff(word, prepend=False, append=False))
    eight = np.ndarray((len(data),), dtype="<u8", buffer=data + bytes(8), strides=(1,))
    return edges[0::2], edges[1::2], eight


def _separated_token_hashes(data: bytes) -> np.ndarray:
    """:func:`token_hash` of each token of ``data.split()``, for ``data`` whose only separator is the space and whose
    tokens hold no NUL byte. A token of at most 8 bytes is keyed by its bytes read as one little-endian integer
    (exact: no NUL, so the zero padding tells the length), so a document's tokens are made unique in NumPy and only
    its distinct keys are looked up in Python; a longer token is looked up by its bytes."""
    for cache in (_TOKEN_HASH_BYTES, _TOKEN_HASH_KEYS):
        if len(cache) > TOKEN_HASH_CACHE:
            cache.clear()
    starts, ends, eight = _token_spans(data)
    lengths = ends - starts
    # Eight bytes from every offset (unaligned reads of a zero-padded copy), masked to each token's length.
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


# Odd multiplier folding a 9-16-byte token's two 8-byte keys into one (TokenVocabulary; checked for collisions).
_PAIR_MIX = np.uint64(0xBF58476D1CE4E5B9)


def _pair_key(low: np.ndarray, high: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        return low * _PAIR_MIX + high


# Odd multiplier of _KeyIndex's slot hash (Fibonacci hashing: the top bits of key * it).
_SLOT_MIX = np.uint64(0x9E3779B97F4A7C15)


class _KeyIndex:
    """Distinct uint64 keys → their position in the given order, looked up for a whole array at once in NumPy: an
    open-addressing table (linear probing) of at least four times as many slots as keys, so a lookup is a gather and
    a compare per probe (keys nonzero: 0 marks an empty slot), where ``np.searchsorted`` of unsorted keys costs a
    cache-missing binary search each."""

    def __init__(self, keys: np.ndarray) -> None:
        if not bool(np.all(keys)):
            raise ValueError("key 0 marks an empty slot")
        bits = max(4, (4 * len(keys)).bit_length())
        self.shift, self.mask = np.uint64(64 - bits), (1 << bits) - 1
        self.keys = np.zeros(1 << bits, dtype=np.uint64)
        self.index = np.full(1 << bits, -1, dtype=np.int32)
        self.depth = 0
        for i, (key, slot) in enumerate(zip(keys.tolist(), self._slots(keys).tolist())):
            probe = 0
            while self.index[(slot + probe) & self.mask] >= 0:
                probe += 1
            self.keys[(slot + probe) & self.mask], self.index[(slot + probe) & self.mask] = key, i
            self.depth = max(self.depth, probe + 1)

    def _slots(self, keys: np.ndarray) -> np.ndarray:
        with np.errstate(over="ignore"):
            return ((keys * _SLOT_MIX) >> self.shift).view(np.int64)  # below 2**bits

    def lookup(self, keys: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        """(position of each key, whether it is one of the keys; position -1 where not)."""
        slots = self._slots(keys)
        index = self.index[slots]
        hit = self.keys[slots] == keys
        out = np.where(hit, index, -1)  # an empty slot holds key 0 and index -1
        pending = np.flatnonzero((index >= 0) & ~hit)  # an occupied slot of another key: probe on
        slots, keys = slots[pending], keys[pending]
        for probe in range(1, self.depth):
            if not len(pending):
                break
            at = (slots + probe) & self.mask
            index = self.index[at]
            hit = (index >= 0) & (self.keys[at] == keys)
            out[pending[hit]] = index[hit]
            more = (index >= 0) & ~hit  # an occupied slot of another key: probe on; an empty one: not there
            pending, slots, keys = pending[more], slots[more], keys[more]
        return out, out >= 0


class TokenVocabulary:
    """A fixed set of content tokens (the dev passages', for the contamination pass) and their :func:`token_hash`.

    :meth:`known_token_hashes` reads a text's tokens as :func:`content_token_hashes` does and tells which are in the
    set, with their hashes, without hashing or looking up the others in Python: a token of at most 8 UTF-8 bytes is
    found by its integer key (as in :func:`_separated_token_hashes`) in a :class:`_KeyIndex`, one of 9-16 bytes by its
    two keys folded into one in a second one, both keys then compared (exact), a longer one by its bytes in a dict.
    An n-gram with a token outside the set is no n-gram of the set's texts (but for a 64-bit collision of the n-gram
    hashes), which is what lets the contamination pass drop it before hashing."""

    def __init__(self, tokens: Iterable[bytes]) -> None:
        """``tokens``: the UTF-8 bytes of content tokens (:func:`content_token_bytes`), repeats allowed."""
        distinct = sorted(set(tokens))
        self.token_hash = hash_of = {b: bytes_hash(b) for b in distinct}  # token bytes → token_hash
        short = sorted((int.from_bytes(b, "little"), hash_of[b]) for b in distinct if len(b) <= 8)
        self.short_keys = np.array([k for k, _ in short], dtype=np.uint64)
        self.short_hashes = np.array([h for _, h in short], dtype=np.uint64)
        self.short_index = _KeyIndex(self.short_keys)
        middle = [b for b in distinct if 8 < len(b) <= 16]
        low = np.array([int.from_bytes(b[:8], "little") for b in middle], dtype=np.uint64)
        high = np.array([int.from_bytes(b[8:], "little") for b in middle], dtype=np.uint64)
        pair = _pair_key(low, high)
        order = np.argsort(pair, kind="stable")
        self.pair_keys, self.pair_low, self.pair_high = pair[order], low[order], high[order]
        self.pair_hashes = np.array([hash_of[middle[i]] for i in order.tolist()], dtype=np.uint64)
        self.long: Dict[bytes, int] = {b: hash_of[b] for b in distinct if len(b) > 16}
        if not bool(np.all(self.pair_keys)) or bool(np.any(self.pair_keys[1:] == self.pair_keys[:-1])):
            # A folded key 0 or two tokens with one (a 2**-64 chance): every 9-16-byte token goes by its bytes.
            self.long.update((b, hash_of[b]) for b in middle)
            self.pair_keys = self.pair_low = self.pair_high = self.pair_hashes = np.zeros(0, dtype=np.uint64)
        self.pair_index = _KeyIndex(self.pair_keys)
        self.long_limit = 16 if len(self.pair_keys) or not middle else 8
        self.hashes = frozenset(hash_of.values())

    def known_token_hashes(self, sentences: Iterable[str]) -> Tuple[np.ndarray, np.ndarray]:
        """(``content_token_hashes(sentences)`` where ``known``, 0 elsewhere; ``known``: whether each token is in the
        set), both of the text's token count. Text that takes the per-token path is hashed whole, each token known
        when its hash is one of the set's."""
        data, text = _separated_bytes(sentences)
        if data is None:
            hashes = token_hashes(content_tokens(text))
            return hashes, np.fromiter(map(self.hashes.__contains__, hashes.tolist()), dtype=bool, count=len(hashes))
        starts, ends, eight = _token_spans(data)
        lengths = ends - starts
        if len(self.short_keys):
            # Every token keyed by its first 8 bytes or fewer; a longer token's key is no short token's (found reset).
            keys = eight[starts] & _LENGTH_MASKS[np.minimum(lengths, 8)]
            at, known = self.short_index.lookup(keys)
            known &= lengths <= 8
            out = np.where(known, self.short_hashes[at], np.uint64(0))  # at -1 where not found: masked
        else:
            out, known = np.zeros(len(starts), dtype=np.uint64), np.zeros(len(starts), dtype=bool)
        if len(self.pair_keys):
            middle = np.flatnonzero((lengths > 8) & (lengths <= 16))
            if len(middle):
                low = eight[starts[middle]]
                high = eight[starts[middle] + 8] & _LENGTH_MASKS[lengths[middle] - 8]
                at, found = self.pair_index.lookup(_pair_key(low, high))
                found &= (self.pair_low[at] == low) & (self.pair_high[at] == high)  # at -1 where not found: no matter
                out[middle[found]] = self.pair_hashes[at[found]]
                known[middle[found]] = True
        if self.long:
            long = np.flatnonzero(lengths > self.long_limit)
            if len(long):
                tokens = map(data.__getitem__, map(slice, starts[long].tolist(), ends[long].tolist()))
                values = [self.long.get(t) for t in tokens]
                hit = np.array([v is not None for v in values], dtype=bool)
                out[long[hit]] = np.array([v for v in values if v is not None], dtype=np.uint64)
                known[long] = hit
        return out, known


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
