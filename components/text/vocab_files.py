"""Vocabulary files: which kind a file is (a SentencePiece model or a WordPiece ``vocab.txt``) and how a
``vocab.txt`` is read.

A ``vocab.txt`` (BERT's, and the official ALBERT Chinese models') is UTF-8 text with one token a line; a token's id
is its line number counted from 0. Each line is read as the official ``load_vocab`` reads it: its first
whitespace-separated field, or ``" "`` for a blank line (a token no text produces, which still takes its id). The
official loader skips a repeated token without giving it an id, which shifts every later id; this reader refuses
the file instead, so ids are always line numbers.

Plain Python: ``sentencepiece`` is imported only to recognise a model.
"""
from __future__ import annotations

from typing import List

from config.errors import UserError

# BERT's special tokens; every WordPiece vocabulary must hold all of them.
PAD, UNK, CLS, SEP, MASK = "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"
WORDPIECE_SPECIAL_TOKENS = (PAD, UNK, CLS, SEP, MASK)


class VocabularyError(UserError, ValueError):
    """A vocabulary file is not a usable SentencePiece model or WordPiece ``vocab.txt``; the message names the
    file (and the line, where there is one)."""


def _decode(data: bytes, path: str) -> str:
    """``data`` as UTF-8 text; a VocabularyError naming the line of the first bad byte otherwise."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise VocabularyError(f"{path} line {line}: not UTF-8 ({exc.reason} at byte {exc.start})") from None


def _tokens(text: str) -> List[str]:
    """The token of each line of ``text``, in order (lines end at ``\\n`` only, as the official reader's do)."""
    lines = text.split("\n")
    if lines[-1] == "":  # the rest after the final newline is no line
        lines.pop()
    return [fields[0] if fields else " " for fields in map(str.split, lines)]


def read_wordpiece_vocab(data: bytes, path: str = "<serialized>") -> List[str]:
    """The tokens of a ``vocab.txt``'s bytes, in id order.

    Raises VocabularyError (naming ``path``) for a file that is not UTF-8 or repeats a token (with the line
    numbers), or that lacks any of BERT's special tokens.
    """
    tokens = _tokens(_decode(data, path))
    first_line = {}
    for line, token in enumerate(tokens, 1):
        if token in first_line:
            raise VocabularyError(f"{path} line {line}: token {token!r} repeats line {first_line[token]}")
        first_line[token] = line
    missing = [t for t in WORDPIECE_SPECIAL_TOKENS if t not in first_line]
    if missing:
        raise VocabularyError(f"{path} lacks {', '.join(missing)}: a WordPiece vocab.txt needs "
                              f"{', '.join(WORDPIECE_SPECIAL_TOKENS)}")
    return tokens


def vocabulary_kind(data: bytes, path: str = "<serialized>") -> str:
    """``"sentencepiece"`` when ``data`` is a serialized SentencePiece model, ``"wordpiece"`` when it is UTF-8 text
    with a ``[CLS]`` line; a VocabularyError naming ``path`` and what the bytes are not otherwise.

    Only the kind is decided here: a ``vocab.txt`` is checked in full when it is read (:func:`read_wordpiece_vocab`).
    """
    import sentencepiece as spm  # lazy: sentencepiece (0.01 s)

    try:
        spm.SentencePieceProcessor().load_from_serialized_proto(data)
        return "sentencepiece"
    except (RuntimeError, OSError):  # what sentencepiece raises for bytes that are no model
        pass
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise VocabularyError(f"{path} is neither a SentencePiece model nor a WordPiece vocab.txt (not UTF-8 text)") \
            from None
    if CLS not in _tokens(text):
        raise VocabularyError(f"{path} is neither a SentencePiece model nor a WordPiece vocab.txt (UTF-8 text "
                              f"without a {CLS} line)")
    return "wordpiece"
