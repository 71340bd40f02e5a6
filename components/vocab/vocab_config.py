"""The vocabulary node's settings (``vocab.*``, node ``VocabGen``)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Optional

from config.languages import NORMALIZATIONS, VOCAB_KINDS, without_english
from config.schema import Section, check

@dataclass
class VocabConfig(Section):
    """The vocabulary (node ``VocabGen``): a SentencePiece model trained with ALBERT's recipe, or an imported
    SentencePiece model or WordPiece ``vocab.txt``; and how text is normalised before it is tokenized."""

    # path of an existing vocabulary: a SentencePiece model (e.g. the official 30k-clean.model) or a WordPiece
    # vocab.txt (the official Chinese models'); its kind is read from its content and must be ``kind``
    import_model: Optional[str] = None
    vocab_size: int = 30000  # trained size; with import_model, the expected size (0: whatever it has)
    character_coverage: Optional[float] = None  # SentencePiece training; None: the language's (en 0.99995)
    input_sentence_size: int = 10_000_000
    do_lower_case: bool = True
    # What VocabGen trains (config/languages.py; None: the language's): sentencepiece (ALBERT's recipe) | wordpiece
    # (a BERT vocab.txt, the official Chinese models' kind). No part of an import: its kind is its file's.
    kind: Optional[str] = None
    # The language settings (config/languages.py), None: the language's. How a SentencePiece vocabulary's text is
    # normalised: albert (the official preprocess_text) | nfkc | nfc | none; strip_accents: after a Unicode form,
    # drop combining marks (NFD, then recomposed). A WordPiece vocab.txt is read as BERT's BasicTokenizer reads it
    # (accents stripped under do_lower_case) whatever these say: the kind is the file's (components/text/vocab_files.py).
    normalization: Optional[str] = None
    strip_accents: Optional[bool] = None
    # A run of several languages: the rule VocabGen samples its sentences by, ``datagen.language_sampling``'s (the
    # configuration fills it from the datagen settings; components/datagen/language_sampling.py). None: the raw mix.
    language_sampling: Optional[Dict[str, Any]] = None

    def to_dict(self) -> Dict[str, Any]:
        """Every field, less the language settings at English's values (English keeps its cache keys), and less
        ``kind`` when a vocabulary is imported (it trains nothing then)."""
        data = without_english(self, "vocab", super().to_dict())
        return {k: v for k, v in data.items() if (k != "kind" or self.import_model is None)
                and (k != "language_sampling" or v is not None)}

    def validate(self) -> "VocabConfig":
        if self.language_sampling is not None:
            from components.datagen.language_sampling import SamplingRule  # lazy: plain Python; multilingual runs only

            problem = SamplingRule.from_description(self.language_sampling).problems()
            check(problem is None, "vocab.language_sampling", self.language_sampling,
                  problem[2] if problem else "")
        check(self.kind in (None,) + VOCAB_KINDS, "vocab.kind", self.kind, "|".join(VOCAB_KINDS))
        check(self.normalization in (None,) + NORMALIZATIONS, "vocab.normalization", self.normalization,
              "|".join(NORMALIZATIONS))
        check(self.vocab_size >= 0, "vocab.vocab_size", self.vocab_size, ">= 0 (0: the imported model's size)")
        if self.import_model is None:
            check(self.vocab_size >= 100, "vocab.vocab_size", self.vocab_size, ">= 100")
        check(self.character_coverage is None or 0 < self.character_coverage <= 1, "vocab.character_coverage", self.character_coverage, "in (0, 1]")
        check(self.input_sentence_size >= 1, "vocab.input_sentence_size", self.input_sentence_size, ">= 1")
        return self
