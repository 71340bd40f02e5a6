"""The data gate's second stage (issue 63): statistics of the pretraining examples per language, checked after
``PretrainingDataGen`` and before the ``Trainer`` (node ``ExamplesGate``), so a vocabulary that cannot write one of
the run's languages stops the run instead of training on ``[UNK]``.

Per language, on a seeded sample of its sentences tokenized with the run's vocabulary (the tokenizer datagen used,
:func:`components.text.tokenizers.load_tokenizer`):

* ``unk_rate``: the share of the pieces that are the vocabulary's ``[UNK]`` (``<unk>``, id 1);
* ``pieces_per_character``: pieces per character of the sentences (normalised text is what the tokenizer reads;
  the characters are the corpus's);
* ``vocabulary_coverage``: the share of the vocabulary's pieces the sample uses (a language the vocabulary serves
  uses hundreds of pieces; one it cannot write uses a handful besides ``[UNK]``);

and, from datagen's statistics (``stats.json``: its ``per_language`` block when the run has several languages, else
the train split), the padding share of the sequences (``1 - tokens / (instances * max_seq_length)``) and the masked
share of the tokens.

The sample: a sentence (one line of CorpusGen's format) is measured when its key (the CRC-32 of its UTF-8 bytes mixed
with the seed) is below ``rate * 2**64``, the rate being :data:`SAMPLE_CHARACTERS` over the bytes of the language's
files (1 for a small language): the same sentences every run, about that many characters whatever the corpus.

Plain Python (the tokenizer is the one that needs SentencePiece); the node's shell reads the files and raises.
"""
from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, Iterator, List, Mapping, Optional, Set

from components.datagate.near_duplicates import mix64
from config.errors import UserError

# Characters measured per language: 200 k characters are about 50 k English pieces, so an [UNK] rate is known to
# well under a tenth of a percentage point, for about a second of tokenizing.
SAMPLE_CHARACTERS = 200_000
_SALT = 0x3C6E_F372_FE94_F82B  # keeps the sentences' keys independent of the statistics' other keys


def sentence_key(sentence: str, seed: int) -> int:
    """A sentence's 64-bit sample key (module docstring)."""
    return mix64(zlib.crc32(sentence.encode("utf-8", "surrogatepass")) ^ mix64(seed ^ _SALT))


def sample_rate(language_bytes: int, budget: int = SAMPLE_CHARACTERS) -> float:
    """The share of a language's sentences measured: 1 up to the budget, then the budget over its size."""
    return 1.0 if language_bytes <= budget else budget / language_bytes


def sampled(sentences: Iterable[str], rate: float, seed: int) -> Iterator[str]:
    """The sentences whose key is below ``rate * 2**64`` (all of them at rate 1)."""
    threshold = int(rate * 2**64)
    for sentence in sentences:
        if rate >= 1.0 or sentence_key(sentence, seed) < threshold:
            yield sentence


@dataclass
class LanguageExamples:
    """What :func:`measure_language` counts for one language."""

    language: str
    vocab_size: int
    sentences: int = 0
    characters: int = 0
    pieces: int = 0
    unk_pieces: int = 0
    used: Set[int] = field(default_factory=set)

    @property
    def unk_rate(self) -> float:
        return self.unk_pieces / self.pieces if self.pieces else 0.0

    @property
    def pieces_per_character(self) -> float:
        return self.pieces / self.characters if self.characters else 0.0

    @property
    def vocabulary_coverage(self) -> float:
        return len(self.used) / self.vocab_size if self.vocab_size else 0.0

    def to_dict(self) -> Dict[str, Any]:
        return {"sentences": self.sentences, "characters": self.characters, "pieces": self.pieces,
                "unk_pieces": self.unk_pieces, "unk_rate": self.unk_rate,
                "pieces_per_character": self.pieces_per_character, "vocabulary_coverage": self.vocabulary_coverage}


def measure_language(language: str, sentences: Iterable[str], tokenizer) -> LanguageExamples:
    """Tokenize ``sentences`` (already sampled) with ``tokenizer`` (``encode``, ``unk_id``, ``vocab_size``)."""
    out = LanguageExamples(language, int(tokenizer.vocab_size))
    unk = tokenizer.unk_id
    for sentence in sentences:
        ids = tokenizer.encode(sentence)
        out.sentences += 1
        out.characters += len(sentence)
        out.pieces += len(ids)
        out.unk_pieces += sum(1 for i in ids if i == unk)
        out.used.update(ids)
    return out


def instance_shares(stats: Mapping[str, Any], language: Optional[str] = None) -> Dict[str, float]:
    """``padding_share`` and ``masked_share`` from datagen's ``stats.json``: of ``language``'s train instances when
    its ``per_language`` block (a run of several languages: ``{"languages": {code: counts}}``) names it, else of the
    train split. ``{}`` when it holds no instance."""
    languages = (stats.get("per_language") or {}).get("languages") or {}
    counts = (languages.get(language) if language is not None else None) or stats.get("splits", {}).get("train") or {}
    length = (stats.get("params") or {}).get("max_seq_length")
    instances, tokens = counts.get("instances", 0), counts.get("tokens", 0)
    if not instances or not length:
        return {}
    padding = counts.get("padding_tokens", instances * length - tokens)
    return {"padding_share": padding / (instances * length),
            "masked_share": counts.get("masked_tokens", 0) / tokens if tokens else 0.0}


def summary_line(measure: LanguageExamples, shares: Mapping[str, float]) -> str:
    """The terminal's line of one language's measures (and its :func:`instance_shares`)."""
    line = (f"{measure.language}: {measure.sentences:,} sentences sampled, [UNK] rate {measure.unk_rate:.4f}, "
            f"{measure.pieces_per_character:.3f} pieces per character, {100 * measure.vocabulary_coverage:.1f}% of "
            f"the vocabulary used")
    if shares:
        line += (f"; training instances: {100 * shares['padding_share']:.1f}% padding, "
                 f"{100 * shares['masked_share']:.1f}% of their tokens masked")
    return line


class ExamplesGateError(UserError):
    """The run's vocabulary cannot write one of its languages: a first line saying the run stopped before the
    Trainer, then one line per language (:func:`check_examples`); the CLI prints every line, exit 2."""

    all_lines = True


def check_examples(measures: Mapping[str, LanguageExamples], max_unk_rate: float) -> List[str]:
    """One line per language whose ``[UNK]`` rate is above the limit (none: the examples pass)."""
    return [f"language {m.language}: [UNK] rate {m.unk_rate:.4g} ({m.unk_pieces:,} of {m.pieces:,} pieces in a "
            f"sample of {m.characters:,} characters), limit <= {max_unk_rate:g} (gate.max_unk_rate): the vocabulary "
            f"cannot write {m.language}"
            for _, m in sorted(measures.items()) if m.pieces and m.unk_rate > max_unk_rate]


def check_instances(stats: Mapping[str, Any], run_languages: List[str]) -> List[str]:
    """One line per language of a run of several (``run_languages``) that has no training instance in datagen's
    ``stats.json`` (its ``per_language`` block; a language it does not name has none): its documents are all in the
    eval split, too short for the sequence length, or missing. A single-language run: none (datagen itself stops a
    run without training instances)."""
    if len(run_languages) < 2:
        return []
    rows = (stats.get("per_language") or {}).get("languages") or {}
    return [f"language {language}: no training instance ({int((rows.get(language) or {}).get('documents', 0))} "
            f"training documents): its documents are in the eval split (datagen.eval_fraction), too short for "
            f"datagen.max_seq_length, or missing from the corpus"
            for language in run_languages if not (rows.get(language) or {}).get("instances")]

