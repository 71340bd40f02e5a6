"""How text becomes pieces: the vocabulary's kind and its text settings, as every stage records and reads them.

A vocabulary folder (the VocabGen artifact, ``<examples>/vocab``, a model's ``albert/`` folder) holds the vocabulary
file (``spm.model`` or ``vocab.txt``) and, unless its settings are English's, this spec as ``tokenizer.json``
(components/text/tokenizers.py reads and applies it; trainer/convert.py writes it for an official Chinese model).
Plain data, so every layer can carry it.
"""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Any, Dict, Optional


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
    def needs_file(self) -> bool:
        """Whether the folder must say this spec in ``tokenizer.json`` (anything but English's SentencePiece)."""
        return dataclasses.replace(self, do_lower_case=True) != TokenizerSpec()
