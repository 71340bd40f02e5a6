"""The pretraining data node's settings (``datagen.*``, node ``PretrainingDataGen`` and
``albert-pipeline make-pretraining-data``)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Optional

from components.datagen.language_sampling import DEFAULT_ALPHA, DEFAULT_MAX_EPOCHS, DEFAULT_METHOD, SamplingRule
from components.text.segmenters import check_segmenters, identity
from config.languages import WORD_STARTS, without_english
from config.schema import Section, check, without_defaults

# BERT's two-phase sequence length (docs/fidelity.md "Two-phase sequence length"), off at the defaults and then left out of
# the sections' JSON the same way: datagen's ``long_*`` fields and the Trainer's switch step.
LONG_PHASE_OPTIONS = ("long_max_seq_length", "long_max_predictions_per_seq")
# A run of several languages (docs/languages.md "Languages sampled", "Segmenters"): left out of the JSON at defaults.
LANGUAGE_OPTIONS = ("language_sampling", "language_alpha", "language_max_epochs", "segmenters", "segmenter_identity")


@dataclass
class DataGenConfig(Section):
    """Pretraining instances (node ``PretrainingDataGen``), §4.1 of the paper."""

    max_seq_length: int = 512
    max_predictions_per_seq: int = 20
    masked_lm_prob: float = 0.15
    short_seq_prob: float = 0.1
    dupe_factor: int = 40
    max_ngram: int = 3
    sop_mode: str = "official"  # official | pure | nsp
    eval_fraction: float = 0.01  # share of documents held out for pretraining eval (eval_source=corpus)
    # Pretraining eval split: "corpus" (a held-out share of the documents) or "benchmark_dev" (the paper's
    # practice: instances from the SQuAD and RACE dev articles of the benchmark data; all corpus documents train).
    eval_source: str = "corpus"
    num_shards: int = 8
    compression: str = "GZIP"  # GZIP | "" (none)
    compression_level: int = 6  # zlib level for GZIP (6 = zlib's and TensorFlow's default; 1 is ~2x faster, ~7% larger)
    # Random-document pool (official SOP's one-sentence chunks, NSP): the documents with the smallest hash keys,
    # up to this many documents and this many characters (whole books are ~500k characters), so worker memory
    # stays bounded on any corpus.
    random_pool_documents: int = 2000
    random_pool_max_chars: int = 10_000_000
    # BERT's two-phase sequence length (docs/fidelity.md "Two-phase sequence length"), off by default: ALBERT trains at one
    # length throughout. > 0: from the same documents and the same train/eval document split, datagen also writes
    # instances of this length (with seeds of their own) into the ``train_long`` / ``eval_long`` splits, which the
    # Trainer reads from ``train.long_seq_from_step`` on. Must exceed ``max_seq_length``.
    long_max_seq_length: int = 0
    # Predictions per long sequence; 0: round(max_predictions_per_seq * long / short) (BERT: 20 at 128, 80 at 512).
    long_max_predictions_per_seq: int = 0
    # Which pieces start a word for whole-word n-gram masking (config/languages.py): official (the release's
    # _is_start_piece_sp: any piece with a character outside a-z starts one) | boundary (SentencePiece's "▁" or,
    # with a WordPiece vocabulary, every piece but "##" ones, in every script); None: the language's.
    word_starts: Optional[str] = None
    # A run of several languages: each language's share of the instances (components/datagen/language_sampling.py):
    # exponent (q ∝ n^alpha; mBERT and IndicBERT 0.7, XLM-R and mT5 0.3) | unimax (uniform, each language at most
    # language_max_epochs times its unsampled amount) | none (as the corpus has them). Single-language runs: no effect.
    language_sampling: str = DEFAULT_METHOD
    language_alpha: float = DEFAULT_ALPHA
    language_max_epochs: float = DEFAULT_MAX_EPOCHS
    # Whole-word masking by a segmenter, per language ({zh: jieba} or rjieba, {ja: mecab}): the segmenter's words
    # decide which pieces are masked together; the vocabulary and ids do not change (components/text/segmenters.py).
    segmenters: Optional[Dict[str, str]] = None
    # What the segmenters are (name, package version, dictionary): filled into the JSON from the installed packages,
    # so the node's parameters change with them; a worker whose packages differ refuses the run.
    segmenter_identity: Optional[Dict[str, Dict[str, str]]] = None

    def to_dict(self) -> Dict[str, Any]:
        """Every field, less the ``LONG_PHASE_OPTIONS`` and ``LANGUAGE_OPTIONS`` at their defaults and the language
        settings at English's values: a datagen node that does not set them keeps its cache key."""
        data = super().to_dict()
        if self.segmenters:
            data["segmenter_identity"] = self.installed_segmenters()
        return without_english(self, "datagen", without_defaults(self, data, LONG_PHASE_OPTIONS + LANGUAGE_OPTIONS))

    def sampling_rule(self) -> SamplingRule:
        return SamplingRule(self.language_sampling, self.language_alpha, self.language_max_epochs)

    def installed_segmenters(self) -> Dict[str, Dict[str, str]]:
        """Each configured segmenter's identity as installed here."""
        return {lang: identity(name) for lang, name in sorted((self.segmenters or {}).items())}

    def long_predictions(self) -> int:
        """Predictions per long sequence (0 when the long phase is off): the explicit value, else derived."""
        if not self.long_max_seq_length:
            return 0
        if self.long_max_predictions_per_seq:
            return int(self.long_max_predictions_per_seq)
        derived = round(self.max_predictions_per_seq * self.long_max_seq_length / self.max_seq_length)
        return max(1, min(int(derived), int(self.long_max_seq_length)))

    def validate(self) -> "DataGenConfig":
        d = self
        problem = d.sampling_rule().problems()
        check(problem is None, *(problem or ("", None, "")))
        check_segmenters(d.segmenters)
        if d.segmenters and d.segmenter_identity is not None:
            installed = d.installed_segmenters()
            check(d.segmenter_identity == installed, "datagen.segmenter_identity", d.segmenter_identity,
                  f"the installed segmenters {installed} (the packages changed since the run was configured)")
        check(d.word_starts in (None,) + WORD_STARTS, "datagen.word_starts", d.word_starts, "|".join(WORD_STARTS))
        check(d.sop_mode in ("official", "pure", "nsp"), "datagen.sop_mode", d.sop_mode, "official|pure|nsp")
        check(d.max_seq_length >= 8, "datagen.max_seq_length", d.max_seq_length, ">= 8")
        check(1 <= d.max_predictions_per_seq <= d.max_seq_length, "datagen.max_predictions_per_seq",
              d.max_predictions_per_seq, f"in [1, datagen.max_seq_length={d.max_seq_length}]")
        check(0 < d.masked_lm_prob < 1, "datagen.masked_lm_prob", d.masked_lm_prob, "in (0, 1)")
        check(0 <= d.short_seq_prob <= 1, "datagen.short_seq_prob", d.short_seq_prob, "in [0, 1]")
        check(d.dupe_factor >= 1, "datagen.dupe_factor", d.dupe_factor, ">= 1")
        check(1 <= d.max_ngram <= 5, "datagen.max_ngram", d.max_ngram, "in [1, 5]")
        check(0 < d.eval_fraction < 0.5, "datagen.eval_fraction", d.eval_fraction, "in (0, 0.5)")
        check(d.eval_source in ("corpus", "benchmark_dev"), "datagen.eval_source", d.eval_source,
              "corpus|benchmark_dev")
        check(d.num_shards >= 1, "datagen.num_shards", d.num_shards, ">= 1")
        check(d.compression in ("", "GZIP"), "datagen.compression", d.compression, "'' or GZIP")
        check(0 <= d.compression_level <= 9, "datagen.compression_level", d.compression_level, "in [0, 9]")
        check(d.random_pool_documents >= 2, "datagen.random_pool_documents", d.random_pool_documents, ">= 2")
        check(d.random_pool_max_chars >= 1, "datagen.random_pool_max_chars", d.random_pool_max_chars, ">= 1")
        check(d.long_max_seq_length == 0 or d.long_max_seq_length > d.max_seq_length, "datagen.long_max_seq_length",
              d.long_max_seq_length, f"0 (one phase) or more than datagen.max_seq_length={d.max_seq_length}")
        check(d.long_max_predictions_per_seq >= 0, "datagen.long_max_predictions_per_seq",
              d.long_max_predictions_per_seq, ">= 0 (0: derived from datagen.max_predictions_per_seq)")
        if d.long_max_predictions_per_seq:
            check(d.long_max_seq_length > 0, "datagen.long_max_predictions_per_seq", d.long_max_predictions_per_seq,
                  "0 unless datagen.long_max_seq_length is set")
            check(d.long_max_predictions_per_seq <= d.long_max_seq_length, "datagen.long_max_predictions_per_seq",
                  d.long_max_predictions_per_seq, f"in [1, datagen.long_max_seq_length={d.long_max_seq_length}]")
        return self
