"""WordPiece tokenization exactly as BERT's ``FullTokenizer``, which the official ALBERT uses for a ``vocab.txt``
(its Chinese models): :class:`WordPieceTokenizer` has :class:`~components.text.tokenization.AlbertTokenizer`'s
interface, so a caller takes either.

BERT's ``BasicTokenizer`` makes words:

1. drop NUL, U+FFFD and every control character (:func:`is_control`); turn whitespace (space, tab, newline,
   carriage return, category Zs) into spaces;
2. put a space on each side of every CJK ideograph (:data:`CJK_RANGES`);
3. split on whitespace (``str.split``);
4. with ``do_lower_case``, in each word: lower-case it, decompose it (NFD) and drop the nonspacing marks (Mn);
5. cut each word around every punctuation character (:func:`is_punctuation`), which becomes a word of its own.

Then BERT's ``WordpieceTokenizer`` splits each word greedily, longest match first: the longest vocabulary token that
starts the word, then the longest ``##`` token that goes on from there, and so on. A word longer than
:data:`MAX_WORD_CHARS` characters, or one with a rest that no token matches, is a single ``[UNK]``.

Made fast without changing a result:

- steps 1-3 are one regular expression over the text (:data:`_WORD`): a word is a CJK ideograph or a run of other
  characters that are not whitespace to ``str.split``. That splits on every whitespace character of step 1 (and on
  U+2028 and U+2029, as BERT's ``str.split`` after step 1 does too), so step 1 only has to drop characters: the
  control characters that ``str.split`` would split on (:data:`SPLITTING_CONTROLS`) from the whole text first, the
  others inside each word, which joins no two words (a control between two CJK ideographs leaves them apart);
- each word's ids are cached (:data:`WORD_CACHE_SIZE` words, least recently used out), so a word seen before (a
  CJK ideograph, most often) costs one lookup;
- the greedy search tries no substring longer than the vocabulary's longest token.
"""
from __future__ import annotations

import functools
import itertools
import re
import unicodedata
from typing import Dict, List, Sequence, Tuple

from components.text.vocab_files import CLS, MASK, PAD, SEP, UNK, read_wordpiece_vocab
from config.errors import MissingInputError

CONTINUATION = "##"  # starts every vocabulary token that goes on from inside a word
MAX_WORD_CHARS = 200  # BERT's max_input_chars_per_word
WORD_CACHE_SIZE = 1 << 16  # words whose ids a tokenizer keeps
# BERT's "Chinese characters": the CJK Unified Ideographs blocks and extensions A-E, and the compatibility ones.
CJK_RANGES = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F), (0x2B740, 0x2B81F),
              (0x2B820, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F))
# The control characters that str.split() splits on (tests/test_wordpiece.py checks the list against Unicode).
SPLITTING_CONTROLS = "\x0b\x0c\x1c\x1d\x1e\x1f\x85"

_CJK_CLASS = "".join(f"{chr(lo)}-{chr(hi)}" for lo, hi in CJK_RANGES)
# A CJK ideograph, or a run of characters that are neither CJK nor whitespace (\s is exactly str.isspace).
_WORD = re.compile(f"[{_CJK_CLASS}]|[^\\s{_CJK_CLASS}]+")
_SPLITTING_CONTROL = re.compile(f"[{SPLITTING_CONTROLS}]")


def is_control(char: str) -> bool:
    """BERT's ``_is_control``: categories Cc and Cf, except tab, newline and carriage return (whitespace)."""
    return char not in "\t\n\r" and unicodedata.category(char) in ("Cc", "Cf")


def is_punctuation(char: str) -> bool:
    """BERT's ``_is_punctuation``: every ASCII character that is neither a letter, a digit, whitespace nor a
    control (``$``, ``+``, ``^`` and the backtick too), and every character of a category P*."""
    cp = ord(char)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(char).startswith("P")


def _drop_invalid(word: str) -> str:
    """``word`` without NUL, U+FFFD and control characters (step 1 inside a word)."""
    if word.isprintable() and "\ufffd" not in word:  # printable: no Cc or Cf character at all
        return word
    return "".join(c for c in word if c != "\ufffd" and not is_control(c))  # NUL is a control (Cc)


def _strip_accents(word: str) -> str:
    """``word`` decomposed (NFD) without its nonspacing marks (Mn)."""
    if word.isascii():
        return word
    return "".join(c for c in unicodedata.normalize("NFD", word) if unicodedata.category(c) != "Mn")


def _split_on_punctuation(word: str) -> List[str]:
    """``word`` cut around each punctuation character, which becomes a part of its own."""
    parts: List[str] = []
    run: List[str] = []
    for char in word:
        if is_punctuation(char):
            if run:
                parts.append("".join(run))
                run = []
            parts.append(char)
        else:
            run.append(char)
    if run:
        parts.append("".join(run))
    return parts


def basic_words(text: str, do_lower_case: bool = True) -> List[str]:
    """BERT's ``BasicTokenizer`` words of ``text`` (steps 1-5 of the module docstring): what a WordPiece vocabulary
    is learned from (components/vocab/vocab_lib.py) and what :class:`WordPieceTokenizer` splits into pieces."""
    if _SPLITTING_CONTROL.search(text):
        text = _SPLITTING_CONTROL.sub("", text)
    words: List[str] = []
    for word in _WORD.findall(text):
        word = _drop_invalid(word)
        if do_lower_case:
            word = _strip_accents(word.lower())
        for part in word.split():
            words.extend(_split_on_punctuation(part))
    return words


class WordPieceTokenizer:
    """Text → WordPiece pieces → ids, exactly as BERT's ``FullTokenizer`` with a ``vocab.txt`` (see the module)."""

    kind = "wordpiece"

    def __init__(self, vocab_path: str, do_lower_case: bool = True):
        try:
            with open(vocab_path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            raise MissingInputError(f"WordPiece vocabulary {vocab_path} does not exist") from None
        self._load(data, do_lower_case, vocab_path)

    @classmethod
    def from_serialized(cls, data: bytes, do_lower_case: bool = True, path: str = "<serialized>"
                        ) -> "WordPieceTokenizer":
        """The tokenizer of a ``vocab.txt``'s bytes; ``path`` names them in errors."""
        self = cls.__new__(cls)
        self._load(data, do_lower_case, path)
        return self

    def _load(self, data: bytes, do_lower_case: bool, path: str) -> None:
        self.vocab_path = path
        self.do_lower_case = do_lower_case
        self.pieces: List[str] = read_wordpiece_vocab(data, path)
        self._ids: Dict[str, int] = {piece: i for i, piece in enumerate(self.pieces)}
        self.vocab_size = len(self.pieces)
        self.pad_id, self.unk_id, self.cls_id, self.sep_id, self.mask_id = (
            self._ids[t] for t in (PAD, UNK, CLS, SEP, MASK))
        self._longest = max(map(len, self.pieces))
        self._word_ids = functools.lru_cache(maxsize=WORD_CACHE_SIZE)(self._ids_of_word)

    def encode(self, text: str) -> List[int]:
        """The ids of ``text``'s pieces."""
        if _SPLITTING_CONTROL.search(text):
            text = _SPLITTING_CONTROL.sub("", text)
        return list(itertools.chain.from_iterable(map(self._word_ids, _WORD.findall(text))))

    def tokenize(self, text: str) -> List[str]:
        """``text``'s pieces, as the official ``FullTokenizer.tokenize`` gives them."""
        return [self.pieces[i] for i in self.encode(text)]

    def encode_batch(self, texts: Sequence[str]) -> List[List[int]]:
        return [self.encode(t) for t in texts]

    def convert_ids_to_pieces(self, ids: Sequence[int]) -> List[str]:
        return [self.pieces[int(i)] for i in ids]

    def piece_to_id(self, piece: str) -> int:
        """The id of one piece (``tokenize``'s output, a vocabulary token): what ``encode`` gives for it."""
        return self._ids[piece]

    def is_word_start(self, token_id: int) -> bool:
        """Every piece but a ``##`` continuation starts a word (used by whole-word n-gram masking)."""
        return not self.pieces[int(token_id)].startswith(CONTINUATION)

    def _ids_of_word(self, word: str) -> Tuple[int, ...]:
        """The ids of one word of :data:`_WORD` (the rest of step 1, steps 4-5, then WordPiece)."""
        word = _drop_invalid(word)
        if self.do_lower_case:
            word = _strip_accents(word.lower())
        ids: List[int] = []
        for part in word.split():  # BERT splits on whitespace after step 5 too (none unless lower-casing made some)
            for subword in _split_on_punctuation(part):
                ids.extend(self._wordpiece(subword))
        return tuple(ids)

    def _wordpiece(self, word: str) -> List[int]:
        """BERT's greedy longest-match-first split of one word into vocabulary ids; ``[UNK]`` when it fails."""
        if len(word) > MAX_WORD_CHARS:
            return [self.unk_id]
        ids: List[int] = []
        start = 0
        while start < len(word):
            prefix = CONTINUATION if start else ""
            for end in range(min(len(word), start + self._longest), start, -1):
                token_id = self._ids.get(prefix + word[start:end])
                if token_id is not None:
                    break
            else:
                return [self.unk_id]
            ids.append(token_id)
            start = end
        return ids
