"""The vocabulary folder and the tokenizer it makes: a SentencePiece model or a WordPiece ``vocab.txt``.

A vocabulary folder (the VocabGen artifact, ``<examples>/vocab``, a model's ``albert/`` folder) holds the
vocabulary file, ``spm.model`` or ``vocab.txt``, and, when its text settings are not English's defaults,
``tokenizer.json``: the :class:`TokenizerSpec` that every stage tokenizes with, so a piece means the same thing
when the vocabulary is trained, when pretraining data is built and when a model is fine-tuned. A folder without
that file is English's SentencePiece vocabulary, as every folder written before it existed, with
``do_lower_case`` from where it was recorded (the artifact's property, ``dataset_info.json``).
"""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Any, Dict, Optional

from components.text.tokenization import AlbertTokenizer
from trainer.files import SPM_FILE

WORDPIECE_FILE = "vocab.txt"
SPEC_FILE = "tokenizer.json"
VOCAB_FILES = {"sentencepiece": SPM_FILE, "wordpiece": WORDPIECE_FILE}


@dataclass(frozen=True)
class TokenizerSpec:
    """How text becomes pieces: the vocabulary's ``kind`` and its text settings (``vocab.*``; config/languages.py).

    ``normalization`` and ``strip_accents`` act on SentencePiece vocabularies; a WordPiece one is read as BERT's
    ``BasicTokenizer`` reads it (accents stripped under ``do_lower_case``), so they are ``none`` / False there.
    """

    kind: str = "sentencepiece"
    do_lower_case: bool = True
    normalization: str = "albert"
    strip_accents: bool = False

    @classmethod
    def for_vocab(cls, kind: str, vocab_cfg) -> "TokenizerSpec":
        """The spec a vocabulary of ``kind`` gets from the resolved ``vocab`` section."""
        if kind == "wordpiece":
            return cls(kind=kind, do_lower_case=bool(vocab_cfg.do_lower_case), normalization="none")
        return cls(kind=kind, do_lower_case=bool(vocab_cfg.do_lower_case),
                   normalization=vocab_cfg.normalization or "albert",
                   strip_accents=bool(vocab_cfg.strip_accents) and vocab_cfg.normalization != "albert")

    @classmethod
    def from_json(cls, text: Optional[str], do_lower_case: bool = True) -> "TokenizerSpec":
        """A ``tokenizer.json``'s spec; ``None`` (no file): English's SentencePiece with ``do_lower_case``."""
        if text is None:
            return cls(do_lower_case=bool(do_lower_case))
        data: Dict[str, Any] = json.loads(text)
        fields = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in fields})

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), sort_keys=True)

    @property
    def vocab_file(self) -> str:
        """The vocabulary's file name in a vocabulary folder."""
        return VOCAB_FILES[self.kind]

    @property
    def needs_file(self) -> bool:
        """Whether the folder must say this spec in ``tokenizer.json`` (anything but English's SentencePiece)."""
        return dataclasses.replace(self, do_lower_case=True) != TokenizerSpec()


def load_tokenizer(data: bytes, spec: TokenizerSpec, path: str = "<serialized>"):
    """The tokenizer of a vocabulary file's bytes: an :class:`AlbertTokenizer` or a :class:`WordPieceTokenizer`
    (the same interface); the file's kind must be ``spec.kind`` (a VocabularyError naming ``path`` otherwise)."""
    from components.text.vocab_files import VocabularyError, vocabulary_kind
    from components.text.wordpiece import WordPieceTokenizer

    kind = vocabulary_kind(data, path)
    if kind != spec.kind:
        raise VocabularyError(f"{path} is a {kind} vocabulary, but its folder says {spec.kind}")
    if kind == "wordpiece":
        return WordPieceTokenizer.from_serialized(data, do_lower_case=spec.do_lower_case, path=path)
    return AlbertTokenizer.from_serialized(data, do_lower_case=spec.do_lower_case, normalization=spec.normalization,
                                           strip_accents=spec.strip_accents, path=path)
