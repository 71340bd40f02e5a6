"""Word segmenters for whole-word masking in languages written without spaces (``datagen.segmenters``).

A segmenter only decides which pieces are masked together (as Chinese-BERT-wwm and brightmart/albert_zh use jieba):
the text, the vocabulary and the ids do not change. :func:`word_starts` aligns a sentence's pieces to the segmenter's
words by their visible characters (whitespace aside) and marks the pieces at which a word begins.

| name | language | package | dictionary |
|---|---|---|---|
| ``jieba`` | zh | jieba (pure Python), ``jieba.cut`` with its HMM for unknown words | jieba's ``dict.txt`` (SHA-256 recorded) |
| ``rjieba`` | zh | rjieba (Rust, jieba-rs), ``rjieba.cut(text, hmm=True)`` | jieba-rs's built-in copy of jieba's dictionary |
| ``mecab`` | ja | fugashi (MeCab) | unidic-lite (UniDic 2.1.2 in the wheel) |

rjieba and jieba cut the same words wherever a boundary touches a Chinese character (measured on the bundled Chinese
text: the two differ only inside runs of Latin letters, URLs for instance, which rjieba keeps whole); without the HMM
they agree on every line. Korean needs none: it is written with spaces between eojeol, which SentencePiece's ``▁``
already marks.
"""
from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import logging
import importlib.util
import os
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from config.errors import UserError

# name → (languages it segments, the distribution it needs, the dictionary's distribution or None)
SEGMENTERS = {"jieba": (("zh",), "jieba", None), "rjieba": (("zh",), "rjieba", None),
              "mecab": (("ja",), "fugashi", "unidic-lite")}


class SegmenterError(UserError):
    """A segmenter setting names an unknown segmenter, one for another language, or one that is not installed."""


def _version(dist: str) -> Optional[str]:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def check_segmenters(segmenters: Optional[Dict[str, str]], setting: str = "datagen.segmenters") -> None:
    """Refuse (one line naming ``setting``) an unknown segmenter, a language it does not segment, or a package that
    is not installed."""
    for language, name in sorted((segmenters or {}).items()):
        where = f"config {setting}.{language}={name!r} is invalid"
        if name not in SEGMENTERS:
            raise SegmenterError(f"{where}: expected one of {', '.join(sorted(SEGMENTERS))}")
        languages, dist, dictionary = SEGMENTERS[name]
        if language not in languages:
            raise SegmenterError(f"{where}: {name} segments {', '.join(languages)} only")
        for package in (dist, dictionary):
            if package and _version(package) is None:
                raise SegmenterError(f"{where}: the package {package} is not installed (pip install {package}, or "
                                     f"leave {setting}.{language} unset)")


@functools.lru_cache(maxsize=None)
def _identity(name: str) -> Tuple[Tuple[str, str], ...]:
    return tuple(identity_uncached(name).items())


def identity(name: str) -> Dict[str, str]:
    """:func:`identity_uncached`, read once per process (jieba's dictionary is hashed)."""
    return dict(_identity(name))


def identity_uncached(name: str) -> Dict[str, str]:
    """What makes a segmenter's words: its name, package version and dictionary (name and version, or hash), the
    datagen node's parameters when set."""
    _, dist, dictionary = SEGMENTERS[name]
    out = {"name": name, "package": f"{dist} {_version(dist)}"}
    if dictionary:
        out["dictionary"] = f"{dictionary} {_version(dictionary)}"
    elif name == "jieba":
        spec = importlib.util.find_spec("jieba")
        path = os.path.join(list(spec.submodule_search_locations)[0], "dict.txt")
        with open(path, "rb") as f:
            out["dictionary"] = "jieba dict.txt sha256:" + hashlib.sha256(f.read()).hexdigest()[:16]
    else:
        out["dictionary"] = f"jieba-rs built in (rjieba {_version(dist)})"
    return out


def load_segmenter(name: str) -> Callable[[str], List[str]]:
    """``text → words`` (whitespace may come as words of its own)."""
    if name == "jieba":
        import jieba  # lazy: jieba (1 s to build its prefix dictionary; only when a segmenter is set)

        jieba.setLogLevel(logging.WARNING)
        tokenizer = jieba.Tokenizer()
        return lambda text: list(tokenizer.cut(text, HMM=True))
    if name == "rjieba":
        import rjieba  # lazy: rjieba (only when a segmenter is set)

        return lambda text: rjieba.cut(text, True)
    if name == "mecab":
        import fugashi  # lazy: fugashi and unidic-lite's dictionary (only when a segmenter is set)
        import unidic_lite  # lazy: see above

        tagger = fugashi.Tagger(f'-d "{unidic_lite.DICDIR}" -r /dev/null')  # no mecabrc needed
        return lambda text: [word.surface for word in tagger(text)]
    raise SegmenterError(f"unknown segmenter {name!r} in datagen.segmenters: expected one of "
                         f"{', '.join(sorted(SEGMENTERS))}")


def word_boundaries(words: Sequence[str]) -> np.ndarray:
    """The visible-character positions (whitespace not counted) at which the words begin, ascending; the position
    after the last word is one too."""
    visible = [len("".join(w.split())) for w in words]
    ends = np.cumsum([v for v in visible if v], dtype=np.int64)
    return np.concatenate([[0], ends]) if ends.shape[0] else np.zeros(1, np.int64)


def piece_lengths(pieces: Sequence[str], kind: str) -> np.ndarray:
    """Visible characters of each vocabulary piece (SentencePiece's ``▁`` and WordPiece's ``##`` not counted); -1 for
    a piece whose characters are unknown (``<unk>``, ``[UNK]``, byte pieces, control pieces)."""
    out = np.empty(len(pieces), dtype=np.int64)
    for i, p in enumerate(pieces):
        if (p.startswith("<") and p.endswith(">")) or (p.startswith("[") and p.endswith("]")):
            out[i] = -1
        elif kind == "wordpiece":
            out[i] = len(p[2:]) if p.startswith("##") else len(p)
        else:
            out[i] = len(p.replace("\u2581", ""))
    return out


def continuations(pieces: Sequence[str], kind: str) -> np.ndarray:
    """True for a WordPiece ``##`` piece (never a word start: the tokenizer cut inside one of its words there)."""
    return np.asarray([kind == "wordpiece" and p.startswith("##") for p in pieces], dtype=bool)


def word_starts(lengths: np.ndarray, continuation: np.ndarray, boundaries: np.ndarray,
                visible: int) -> Optional[np.ndarray]:
    """For one sentence's pieces (their visible ``lengths`` from :func:`piece_lengths`, and ``continuation`` from
    :func:`continuations`), True where a piece begins at one of the segmenter's word ``boundaries`` (from
    :func:`word_boundaries`), is the first piece there and not a continuation. None when the pieces do not cover the
    ``visible`` characters the segmenter saw (an unknown piece, or a normalisation that changed the count): the caller
    keeps the vocabulary's rule for that sentence."""
    if (lengths < 0).any() or int(lengths.sum()) != visible:
        return None
    pos = np.zeros(lengths.shape[0], dtype=np.int64)
    np.cumsum(lengths[:-1], out=pos[1:])
    first = np.ones(lengths.shape[0], dtype=bool)
    first[1:] = pos[1:] != pos[:-1]
    at_boundary = np.zeros(visible + 1, dtype=bool)
    at_boundary[boundaries[boundaries <= visible]] = True
    return at_boundary[pos] & first & ~continuation


class PieceSegmenter:
    """A segmenter bound to a vocabulary: :meth:`starts` gives one sentence's masking-unit starts for its ids. ``sp``
    (a SentencePiece vocabulary's processor) places unknown pieces by SentencePiece's own offsets when a sentence
    has several of them; one unknown piece simply takes the characters the others leave."""

    def __init__(self, name: str, pieces: Sequence[str], kind: str, sp=None):
        self.name = name
        self._cut = load_segmenter(name)
        self._lengths = piece_lengths(pieces, kind)
        self._continuation = continuations(pieces, kind)
        self._sp = sp

    def starts(self, text: str, ids: np.ndarray) -> Optional[np.ndarray]:
        """Word starts of the pieces ``ids`` of ``text`` (the text as the tokenizer saw it), or None when they cannot
        be aligned to the segmenter's words (see :func:`word_starts`)."""
        visible = len("".join(text.split()))
        lengths = self._lengths[ids]
        unknown = lengths < 0
        if unknown.any():
            if int(unknown.sum()) == 1:
                lengths = lengths.copy()
                lengths[unknown] = visible - int(lengths[~unknown].sum())
            elif self._sp is not None:
                lengths = self._offset_lengths(text, ids)
            if lengths is None or (lengths < 0).any():
                return None
        return word_starts(lengths, self._continuation[ids], word_boundaries(self._cut(text)), visible)

    def _offset_lengths(self, text: str, ids: np.ndarray) -> Optional[np.ndarray]:
        """Visible characters of each piece from SentencePiece's byte offsets (None if its pieces are not ``ids``)."""
        try:
            proto = self._sp.encode(text, return_type="proto")  # sentencepiece >= 0.2.1
        except (TypeError, ValueError):
            try:
                proto = self._sp.encode(text, out_type="immutable_proto")  # 0.1.99, 0.2.0
            except (TypeError, ValueError):
                return None
        if [p.id for p in proto.pieces] != ids.tolist():
            return None
        data = text.encode("utf-8")
        return np.asarray([len("".join(data[p.begin:p.end].decode("utf-8", "replace").split()))
                           for p in proto.pieces], dtype=np.int64)
