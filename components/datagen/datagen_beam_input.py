"""The documents' side of pretraining-data generation (``components/datagen/datagen_beam.py``): reading the document files,
which split each document belongs to, the stable hash every random choice derives from, and the base of the DoFns
that tokenize.

Document ids are ``<shard file name>:<index in file>``: the documents artifact is itself deterministic, so ids are
stable across runs.
"""
from __future__ import annotations

import hashlib
import posixpath
from typing import Dict, Iterable, Iterator, List, Optional, Tuple

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from components.datagen.instances import VocabInfo
from components.text.documents import file_language, parse_text_blocks
from components.text.corrupt_input import CorruptInputError
from components.text.tokenizers import load_tokenizer
from config.languages import profile


def _h64(*parts: object) -> int:
    return int.from_bytes(hashlib.sha1("\x1f".join(map(str, parts)).encode("utf-8")).digest()[:8], "big")


def split_of(doc_id: str, seed: int, eval_fraction: float) -> str:
    """Hold out a stable ``eval_fraction`` of documents (by hash, not by position)."""
    return "eval" if (_h64("split", seed, doc_id) % 1_000_000) < eval_fraction * 1_000_000 else "train"


def read_documents(path: str) -> Iterator[Tuple[str, List[str]]]:
    """(doc_id, sentences) from one file in the official format (one sentence per line, blank line between docs)."""
    name = posixpath.basename(path)
    with FileSystems.open(path) as f:
        for index, sentences in enumerate(parse_text_blocks(_utf8_lines(f, path))):
            yield f"{name}:{index}", sentences


def _utf8_lines(f, path: str) -> Iterator[str]:
    """Decoded lines; invalid UTF-8 is a :class:`CorruptInputError` naming the file, line and byte offset."""
    offset = 0
    for number, line in enumerate(f, 1):
        try:
            yield line.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise CorruptInputError(path, f"not valid UTF-8 at line {number}, byte offset {offset + exc.start} "
                                          f"(byte 0x{line[exc.start]:02x})") from None
        offset += len(line)


class _Tokenizing(beam.DoFn):
    """Base for DoFns that need the tokenizer: loaded once per worker in ``setup`` from the vocabulary file at
    ``vocab_path`` with its :class:`components.text.tokenizers.TokenizerSpec`; ``word_starts`` is
    ``datagen.word_starts``, or None in a run of several languages: each file's language's (:func:`word_starts_of`,
    through :meth:`vocab_of`); ``segmenters`` is ``datagen.segmenters`` (language → segmenter name; None → the name
    for the untagged files of a single-language run), loaded in ``setup`` too when set."""

    def __init__(self, vocab_path: str, tokenizer_spec, word_starts: Optional[str] = "official",
                 segmenters: Optional[Dict[Optional[str], str]] = None):
        self._vocab_path = vocab_path
        self._tokenizer_spec = tokenizer_spec
        self._word_starts = word_starts
        self._segmenter_names = dict(segmenters or {})

    def setup(self):
        with FileSystems.open(self._vocab_path) as f:
            self.tokenizer = load_tokenizer(f.read(), self._tokenizer_spec, self._vocab_path)
        self._vocabs: Dict[str, VocabInfo] = {}
        self.vocab = self.vocab_of("")
        self.segmenters = {}
        if self._segmenter_names:
            from components.text.segmenters import PieceSegmenter  # lazy: numpy only; kept off runs without one

            sp = getattr(self.tokenizer, "sp", None)  # SentencePiece's offsets place its unknown pieces
            self.segmenters = {lang: PieceSegmenter(name, self.tokenizer.pieces, self.tokenizer.kind, sp)
                               for lang, name in self._segmenter_names.items()}

    def segmenter_for(self, path: str):
        """The segmenter of ``path``'s documents: its language's (``file_language``; the key None stands for the
        untagged files of a single-language run). None: the vocabulary's rule."""
        return self.segmenters.get(file_language(path)) if self.segmenters else None

    def vocab_of(self, path: str) -> VocabInfo:
        """The :class:`VocabInfo` (its word starts) for the documents of the file at ``path``."""
        rule = word_starts_of(path, self._word_starts)
        if rule not in self._vocabs:
            self._vocabs[rule] = VocabInfo.from_tokenizer(self.tokenizer, rule)
        return self._vocabs[rule]


# -- a run of several languages ------------------------------------------------------------------------------------
def word_starts_of(path: str, word_starts: Optional[str]) -> str:
    """The whole-word rule of the documents in ``path``: ``datagen.word_starts`` when set; else the profile's of the
    language its name says (``documents-zh-…``: ``boundary``; components/text/documents.py ``file_language``),
    and ``official`` for a file without one."""
    if word_starts:
        return word_starts
    language = file_language(path)
    return profile(language).word_starts if language else "official"


class SplitRule:
    """Which split a document belongs to: every document of an ``eval_files`` file is "eval"; otherwise the
    held-out ``eval_fraction`` by hash (none when eval files are given or the fraction is 0).

    ``first_trains`` (a run of several languages): the first document of each language-tagged documents file
    (``file_language``; id ``<name>:0``) always trains, so a language of one or a few documents cannot lose all of
    them to the eval split. A single-language run's files are untagged: its split is unchanged."""

    def __init__(self, seed: int, eval_fraction: float, eval_files: Iterable[str] = (), first_trains: bool = False):
        self.seed = seed
        self.eval_files = frozenset(eval_files)
        self.eval_fraction = 0.0 if self.eval_files else float(eval_fraction)
        self.first_trains = bool(first_trains)

    def __call__(self, path: str, doc_id: str) -> str:
        if path in self.eval_files:
            return "eval"
        if self.first_trains and doc_id.endswith(":0") and file_language(path) is not None:
            return "train"
        return split_of(doc_id, self.seed, self.eval_fraction) if self.eval_fraction > 0 else "train"


def _make_dirs(path: str) -> None:
    try:
        FileSystems.mkdirs(path)
    except Exception:  # exists (another worker made it) or the filesystem has no folders (gs://)
        pass
