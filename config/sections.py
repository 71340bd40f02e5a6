"""The typed sections of the configuration, one per concern, each with its own validation.

A node's TFX parameters are built from the sections that determine its output and nothing else
(``pipeline.configs.PipelineConfig.node_parameters``), so a change reruns only what it affects:

    corpus (minus the input folders, which enter as Importer artifacts) → CorpusGen
    gate (the limits, and accept)                                       → DataGate
    vocab + seed                                                        → VocabGen
    datagen + seed                                                      → PretrainingDataGen
    model + train + seed                                                → Trainer
    that benchmark's own settings + seed                                → each *Benchmark node
    report                                                              → BenchmarkReport
    release criteria / release destination                              → Blesser / Pusher

Facts a node needs from upstream (vocabulary size, ``do_lower_case``, sequence length) are read from
its input artifacts, never copied from another section.
"""
from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from config.references import REFERENCE_ROWS  # report.reference: the published rows, with their numbers
from config.encoder import LAYER_NORM_CHOICES, POSITION_INIT_CHOICES, SHARING_CHOICES, encoder_errors, named_fields
from config.languages import NORMALIZATIONS, SENTENCE_SPLITTERS, VOCAB_KINDS, WORD_STARTS, english_value
from config.schema import ConfigError, Section, check, plain_data
from config.task_spec import CLUE_TASK_SETTINGS, SETTING_PREFIX as TASKS_SETTING, specs_from_config


# What CorpusGen and ``albert-pipeline ingest`` read under the folders unless told otherwise: both Wikipedia formats
# (``pages-articles`` XML dumps and WikiExtractor's ``AA/wiki_NN`` files, each plain or compressed) and plain or
# compressed books. One definition, so the DAG and ``ingest`` accept the same folders.
WIKIPEDIA_GLOBS = ("*pages-articles*.xml*", "**/wiki_*")
BOOKS_GLOBS = ("**/*.txt", "**/*.txt.gz", "**/*.txt.bz2")
# How a Wikipedia file is read: ``auto`` tells each file's format from its first bytes (and logs it).
WIKIPEDIA_FORMATS = ("auto", "xml", "wikiextractor")


@dataclass
class CorpusConfig(Section):
    """Raw corpora → clean documents (node ``CorpusGen``)."""

    wikipedia_dir: Optional[str] = None  # pages-articles*.xml[.bz2|.gz] dumps and/or WikiExtractor AA/wiki_NN files
    wikipedia_glob: List[str] = field(default_factory=lambda: list(WIKIPEDIA_GLOBS))  # patterns under wikipedia_dir
    wikipedia_format: str = "auto"  # one of WIKIPEDIA_FORMATS
    books_dir: Optional[str] = None  # folder tree of books: .txt, .txt.gz, .txt.bz2 (BookCorpus-style)
    books_glob: List[str] = field(default_factory=lambda: list(BOOKS_GLOBS))  # patterns under books_dir
    min_doc_chars: int = 200
    dedupe: bool = True
    book_encoding_fallback: Optional[str] = None  # e.g. "latin-1"; None = non-UTF-8 is an error
    num_shards: int = 4
    # How paragraphs are cut into sentences (config/languages.py): english | multilingual; None: the language's.
    sentence_splitter: Optional[str] = None

    # The folders are the Importers' source URIs (their artifacts are CorpusGen's inputs), not parameters.
    INPUT_FIELDS = ("wikipedia_dir", "books_dir")

    def to_dict(self) -> Dict[str, Any]:
        """Every field, less the language settings at English's values (English keeps its cache keys)."""
        return _without_english(self, "corpus", super().to_dict())

    def params(self) -> Dict[str, Any]:
        return {k: v for k, v in self.to_dict().items() if k not in self.INPUT_FIELDS}

    def validate(self) -> "CorpusConfig":
        check(self.wikipedia_dir or self.books_dir, "corpus", None, "at least one of corpus.wikipedia_dir / corpus.books_dir")
        check(self.min_doc_chars >= 0, "corpus.min_doc_chars", self.min_doc_chars, ">= 0")
        check(self.num_shards >= 1, "corpus.num_shards", self.num_shards, ">= 1")
        check(self.wikipedia_format in WIKIPEDIA_FORMATS, "corpus.wikipedia_format", self.wikipedia_format,
              f"one of {', '.join(WIKIPEDIA_FORMATS)}")
        for name, patterns in (("corpus.wikipedia_glob", self.wikipedia_glob), ("corpus.books_glob", self.books_glob)):
            check(bool(patterns), name, patterns, "at least one pattern")
            for pattern in patterns:
                check(bool(pattern) and not pattern.startswith("/") and "://" not in pattern
                      and ".." not in pattern.split("/"), name, pattern,
                      "a pattern relative to its folder, without '..' (lineage records only the folder)")
        check(self.sentence_splitter in (None,) + SENTENCE_SPLITTERS, "corpus.sentence_splitter",
              self.sentence_splitter, "|".join(SENTENCE_SPLITTERS))
        if self.book_encoding_fallback:
            import codecs

            try:
                codecs.lookup(self.book_encoding_fallback)
            except LookupError:
                check(False, "corpus.book_encoding_fallback", self.book_encoding_fallback, "a Python codec name")
        return self


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

    def to_dict(self) -> Dict[str, Any]:
        """Every field, less the language settings at English's values (English keeps its cache keys), and less
        ``kind`` when a vocabulary is imported (it trains nothing then)."""
        data = _without_english(self, "vocab", super().to_dict())
        return {k: v for k, v in data.items() if k != "kind" or self.import_model is None}

    def validate(self) -> "VocabConfig":
        check(self.kind in (None,) + VOCAB_KINDS, "vocab.kind", self.kind, "|".join(VOCAB_KINDS))
        check(self.normalization in (None,) + NORMALIZATIONS, "vocab.normalization", self.normalization,
              "|".join(NORMALIZATIONS))
        check(self.vocab_size >= 0, "vocab.vocab_size", self.vocab_size, ">= 0 (0: the imported model's size)")
        if self.import_model is None:
            check(self.vocab_size >= 100, "vocab.vocab_size", self.vocab_size, ">= 100")
        check(self.character_coverage is None or 0 < self.character_coverage <= 1, "vocab.character_coverage", self.character_coverage, "in (0, 1]")
        check(self.input_sentence_size >= 1, "vocab.input_sentence_size", self.input_sentence_size, ">= 1")
        return self


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

    def to_dict(self) -> Dict[str, Any]:
        """Every field, less the ``LONG_PHASE_OPTIONS`` at their defaults (off) and the language settings at
        English's values: a datagen node that does not set them keeps its cache key."""
        return _without_english(self, "datagen", _without_defaults(self, super().to_dict(), LONG_PHASE_OPTIONS))

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


@dataclass
class ModelConfig(Section):
    """A named ALBERT/BERT size plus overrides; vocab_size always comes from the SentencePiece model."""

    size: str = "albert-base"
    embedding_size: Optional[int] = None
    hidden_size: Optional[int] = None
    num_hidden_layers: Optional[int] = None
    num_attention_heads: Optional[int] = None
    intermediate_size: Optional[int] = None
    # "none" is a strategy (the paper's not-shared ablation), not null: see ``field_choices``.
    sharing: Optional[str] = field(default=None, metadata={"choices": SHARING_CHOICES})
    num_hidden_groups: Optional[int] = None
    inner_group_num: Optional[int] = None
    dropout: Optional[float] = None  # hidden and attention dropout (v1 models: 0.1, v2 release: 0)
    # Named deviations (docs/fidelity.md "Encoder settings beyond the official model"), left out of the section's JSON at
    # their official values, so a model that does not set them keeps its cache key and its checkpoint folder.
    layer_norm_position: str = field(default="post", metadata={"choices": LAYER_NORM_CHOICES})
    position_embedding_init: str = field(default="normal", metadata={"choices": POSITION_INIT_CHOICES})

    def to_dict(self) -> Dict[str, Any]:
        return _without_defaults(self, super().to_dict(), ("layer_norm_position", "position_embedding_init"))

    def overrides(self) -> Dict[str, Any]:
        """The AlbertConfig fields this section sets (None = the named size's value)."""
        keys = ("embedding_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
                "sharing", "num_hidden_groups", "inner_group_num", "layer_norm_position",
                "position_embedding_init")
        out = {k: getattr(self, k) for k in keys if getattr(self, k) is not None}
        if self.dropout is not None:
            out["hidden_dropout_prob"] = self.dropout
            out["attention_probs_dropout_prob"] = self.dropout
        return out

    def encoder_fields(self, vocab_size: int = 30000) -> Dict[str, Any]:
        """The encoder's fields: the named size's (``config/encoder.py``), these overrides and ``vocab_size``;
        ``trainer.modeling_albert.AlbertConfig(**fields)`` is the model."""
        return {**named_fields(self.size), **self.overrides(), "vocab_size": vocab_size}

    def validate(self) -> "ModelConfig":
        """Checks the size name and the encoder it gives, so a bad model fails before any node runs."""
        check(self.sharing is None or self.sharing in SHARING_CHOICES, "model.sharing", self.sharing,
              "|".join(SHARING_CHOICES))
        check(self.layer_norm_position in LAYER_NORM_CHOICES,
              "model.layer_norm_position", self.layer_norm_position, "|".join(LAYER_NORM_CHOICES))
        check(self.position_embedding_init in POSITION_INIT_CHOICES,
              "model.position_embedding_init", self.position_embedding_init, "|".join(POSITION_INIT_CHOICES))
        check(self.dropout is None or 0 <= self.dropout < 1, "model.dropout", self.dropout, "in [0, 1)")
        try:
            errors = encoder_errors(self.encoder_fields())
        except ValueError as exc:  # an unknown size name
            errors = [exc.args[0]]
        else:
            errors = ["the model.* settings conflict: " + "; ".join(errors)] if errors else []
        if errors:
            raise ConfigError(f"config model.size={self.size!r} is invalid: {errors[0]}")
        return self


# The settings a language profile fills (config/languages.py), by section; left out of a section's JSON while unset
# or at English's value.
LANGUAGE_FIELDS = {"corpus": ("sentence_splitter",), "vocab": ("kind", "normalization", "strip_accents"),
                   "datagen": ("word_starts",)}

# Fields of ``train`` left out of a pretraining run's identity (checkpoint folder key), so changing them resumes the
# same run. All but ``num_train_steps`` leave the trained weights' trajectory as it is; the step count ends the
# learning-rate decay, so raising it continues the run with the schedule changed at the resume point (said in the
# log), and a count below the run's newest checkpoint is a run of its own (trainer/task.run_folder).
TRAIN_SCHEDULE_ONLY = ("num_train_steps", "checkpoint_every", "eval_every", "eval_steps", "eval_batch_size",
                       "log_every", "strategy", "jit_compile", "cpu_replicas", "steps_per_loop", "peer_timeout_s")
# Optimizer deviations from the official recipe (docs/fidelity.md "Optimizer settings beyond the official recipe"), named as
# ``trainer.optimization.create_optimizer``'s keywords. Left out of the section's JSON while at their official
# defaults, so a Trainer that does not set them keeps its cache key and its checkpoint folder.
OPTIMIZER_OPTIONS = ("bias_correction", "no_decay_lr_multiplier", "end_learning_rate_fraction", "beta_1")
# BERT's two-phase sequence length (docs/fidelity.md "Two-phase sequence length"), off at the defaults and then left out of
# the sections' JSON the same way: datagen's ``long_*`` fields and the Trainer's switch step.
LONG_PHASE_OPTIONS = ("long_max_seq_length", "long_max_predictions_per_seq")
TRAIN_LONG_PHASE_OPTIONS = ("long_seq_from_step",)
# Continued pretraining (docs/model.md "Continue from a model"): off ("scratch") at the default and then left out of
# the section's JSON the same way.
WARM_START_OPTIONS = ("init_from", "init_restore")
INIT_FROM_SCRATCH = "scratch"
INIT_RESTORE_CHOICES = ("weights", "all")


def _without_english(section, name: str, data: Dict[str, Any]) -> Dict[str, Any]:
    """``data`` less the language settings (``LANGUAGE_FIELDS[name]``) that are unset or at English's value."""
    return {k: v for k, v in data.items()
            if k not in LANGUAGE_FIELDS[name] or v not in (None, english_value(name, k))}


def _without_defaults(section, data: Dict[str, Any], names) -> Dict[str, Any]:
    """``data`` (the section's fields) less the ``names`` still at their defaults."""
    defaults = {f.name: f.default for f in dataclasses.fields(section)}
    return {k: v for k, v in data.items() if k not in names or v != defaults[k]}


@dataclass
class TrainConfig(Section):
    """Pretraining (TFX ``Trainer`` with ``trainer.task.run_fn``)."""

    train_batch_size: int = 4096
    eval_batch_size: int = 64
    num_train_steps: int = 125_000
    num_warmup_steps: int = 3125
    learning_rate: float = 0.00176
    optimizer: str = "lamb"  # lamb | adamw
    weight_decay: float = 0.01
    clip_norm: float = 1.0
    grad_accum_steps: int = 1  # micro-batches per optimizer step (global batch = train_batch_size)
    # global_batch: losses normalised over the global batch, the summed gradient clipped once (after the cross-replica
    # sum and accumulation; 1 x B equals k x B/k). per_replica: the official per-shard clipping, then averaging.
    gradient_semantics: str = "global_batch"
    sentence_task: str = "sop"  # sop | nsp (the paper's ablation)
    checkpoint_every: int = 5000
    eval_every: int = 10_000
    eval_steps: int = 100
    log_every: int = 100
    shuffle_buffer: int = 10_000
    strategy: str = "auto"  # auto | cpu | mirrored | multi_worker | tpu (trainer/distribute.py)
    cpu_replicas: int = 1  # mirrored on a CPU host: split the CPU into this many replicas (the multi-GPU twin)
    steps_per_loop: int = 1  # optimizer steps per call into the device (TPU: >1 keeps the host out of the loop)
    peer_timeout_s: float = 600.0  # multi_worker: give up (exit 2, naming the address) if peers do not join
    mixed_precision: str = "auto"  # auto | float32 | mixed_bfloat16 (auto: the faster, measured; trainer/precision.py)
    jit_compile: bool = False  # XLA for forward/backward; off: slower on the measured CPU (benchmarks/pretrain_step.py)
    bias_correction: bool = False  # LAMB/AdamW with Adam's m/(1-b1^t), v/(1-b2^t) (official: none)
    no_decay_lr_multiplier: float = 1.0  # lr multiplier of the variables excluded from weight decay (LayerNorm, biases)
    end_learning_rate_fraction: float = 0.0  # the linear decay ends at this fraction of the peak (official: 0)
    beta_1: float = 0.9  # Adam's first-moment decay (official 0.9); higher averages batch-32 gradient noise longer
    # BERT's two-phase sequence length: 0 = one phase (ALBERT). N > 0: steps [N, num_train_steps) read the long
    # examples (``datagen.long_max_seq_length``), step s at records [(s - N) * B, (s - N + 1) * B) of their stream.
    long_seq_from_step: int = 0
    # Where the weights start: "scratch" (random, the default), or a model location: a pushed version folder or a
    # folder `convert tf1-to-albert` / `convert hf-to-albert` wrote, local or gs://. The official
    # --init_checkpoint semantics: the encoder's and pretraining heads' weights restored; the step, the warm-up and
    # decay schedule and the optimizer's moments start fresh (trainer/base_model.py).
    init_from: str = INIT_FROM_SCRATCH
    # What of the base a run restores: "weights" (official) or "all": the base's last training checkpoint, with its
    # optimizer moments, step and loss window, so the run continues the base's run as a resume would (the base must
    # be this project's Trainer output whose training checkpoints are still where its export_info.json says).
    init_restore: str = "weights"

    def to_dict(self) -> Dict[str, Any]:
        """Every field, less the ``OPTIMIZER_OPTIONS``, ``TRAIN_LONG_PHASE_OPTIONS`` and ``WARM_START_OPTIONS`` at
        their defaults."""
        return _without_defaults(self, super().to_dict(),
                                 OPTIMIZER_OPTIONS + TRAIN_LONG_PHASE_OPTIONS + WARM_START_OPTIONS)

    def optimizer_options(self) -> Dict[str, Any]:
        """The ``OPTIMIZER_OPTIONS`` as keywords of ``create_optimizer``."""
        return {k: getattr(self, k) for k in OPTIMIZER_OPTIONS}

    def identity(self) -> Dict[str, Any]:
        """The run's identity: the fields that define the optimisation trajectory, the step count aside (see
        ``TRAIN_SCHEDULE_ONLY``)."""
        return {k: v for k, v in self.to_dict().items() if k not in TRAIN_SCHEDULE_ONLY}

    def validate(self) -> "TrainConfig":
        t = self
        check(t.optimizer in ("lamb", "adamw"), "train.optimizer", t.optimizer, "lamb|adamw")
        check(t.sentence_task in ("sop", "nsp"), "train.sentence_task", t.sentence_task, "sop|nsp")
        check(t.gradient_semantics in ("global_batch", "per_replica"), "train.gradient_semantics",
              t.gradient_semantics, "global_batch|per_replica")
        check(t.strategy in ("auto", "cpu", "mirrored", "multi_worker", "tpu"), "train.strategy", t.strategy,
              "auto|cpu|mirrored|multi_worker|tpu")
        check(t.cpu_replicas >= 1, "train.cpu_replicas", t.cpu_replicas, ">= 1")
        check(t.cpu_replicas == 1 or t.strategy == "mirrored", "train.cpu_replicas", t.cpu_replicas,
              "1 unless train.strategy=mirrored")
        check(t.steps_per_loop >= 1, "train.steps_per_loop", t.steps_per_loop, ">= 1")
        check(t.peer_timeout_s > 0, "train.peer_timeout_s", t.peer_timeout_s, "> 0")
        check(t.mixed_precision in ("auto", "float32", "mixed_bfloat16"), "train.mixed_precision",
              t.mixed_precision, "auto|float32|mixed_bfloat16")
        check(t.train_batch_size >= 1, "train.train_batch_size", t.train_batch_size, ">= 1")
        check(t.eval_batch_size >= 1, "train.eval_batch_size", t.eval_batch_size, ">= 1")
        check(t.num_train_steps >= 1, "train.num_train_steps", t.num_train_steps, ">= 1")
        check(0 <= t.num_warmup_steps <= t.num_train_steps, "train.num_warmup_steps", t.num_warmup_steps,
              "in [0, train.num_train_steps]")
        check(t.learning_rate > 0, "train.learning_rate", t.learning_rate, "> 0")
        check(t.weight_decay >= 0, "train.weight_decay", t.weight_decay, ">= 0")
        check(t.clip_norm > 0, "train.clip_norm", t.clip_norm, "> 0")
        check(t.no_decay_lr_multiplier > 0, "train.no_decay_lr_multiplier", t.no_decay_lr_multiplier, "> 0")
        check(0 <= t.beta_1 < 1, "train.beta_1", t.beta_1, "in [0, 1)")
        check(0 <= t.end_learning_rate_fraction <= 1, "train.end_learning_rate_fraction",
              t.end_learning_rate_fraction, "in [0, 1]")
        check(t.grad_accum_steps >= 1 and t.train_batch_size % t.grad_accum_steps == 0, "train.grad_accum_steps",
              t.grad_accum_steps, f">= 1 and dividing train.train_batch_size={t.train_batch_size}")
        for name in ("checkpoint_every", "eval_every"):  # 0: only at the end
            check(getattr(t, name) >= 0, f"train.{name}", getattr(t, name), ">= 0 (0: only at the end)")
        check(t.log_every >= 1, "train.log_every", t.log_every, ">= 1")
        check(t.eval_steps >= 0, "train.eval_steps", t.eval_steps, ">= 0")
        check(t.shuffle_buffer >= 1, "train.shuffle_buffer", t.shuffle_buffer, ">= 1")
        check(t.long_seq_from_step == 0 or 0 < t.long_seq_from_step < t.num_train_steps, "train.long_seq_from_step",
              t.long_seq_from_step, f"0 (one phase) or a step in (0, train.num_train_steps={t.num_train_steps})")
        check(isinstance(t.init_from, str) and t.init_from.strip() != "", "train.init_from", t.init_from,
              f"{INIT_FROM_SCRATCH} or a model folder (a pushed version, or what `convert` wrote)")
        check(t.init_restore in INIT_RESTORE_CHOICES, "train.init_restore", t.init_restore,
              "|".join(INIT_RESTORE_CHOICES))
        check(t.init_restore == "weights" or t.init_from != INIT_FROM_SCRATCH, "train.init_restore", t.init_restore,
              f"weights unless train.init_from names a model (it is {INIT_FROM_SCRATCH})")
        return self


# Vertex AI CustomJob machine shapes (https://cloud.google.com/vertex-ai/docs/training/configure-compute):
# TPU v2/v3 are requested as machine type ``cloud-tpu`` + accelerator TPU_V2/TPU_V3 x 8 (one host, 8 cores);
# TPU v4/v5e as a ``ct4p-*``/``ct5lp-*`` machine type with a slice ``tpu_topology`` (e.g. 2x2x1, 4x4).
TPU_ACCELERATORS = ("TPU_V2", "TPU_V3", "TPU_V4_POD", "TPU_V5_LITEPOD")
TPU_MACHINE_PREFIXES = ("cloud-tpu", "ct4p-", "ct5lp-", "ct5p-", "ct6e-")


# Kubernetes quantities as Kubeflow Pipelines accepts them for a task's limits (kfp's set_cpu_limit /
# set_memory_limit): CPUs as a number or millicores ("500m"); memory as a number of bytes with an optional suffix,
# each suffix's bytes here (pipeline/spec.py converts with them).
MEMORY_UNITS = {"E": 10**18, "Ei": 1 << 60, "P": 10**15, "Pi": 1 << 50, "T": 10**12, "Ti": 1 << 40, "G": 10**9,
                "Gi": 1 << 30, "M": 10**6, "Mi": 1 << 20, "K": 10**3, "Ki": 1 << 10, "": 1}
_CPU_QUANTITY = re.compile(r"^(\d+(\.\d+)?|\d+m)$")
_MEMORY_QUANTITY = re.compile(r"^\d+(\.\d+)?(" + "|".join(unit for unit in MEMORY_UNITS if unit) + ")?$")


@dataclass
class TaskResources(Section):
    """CPU and memory limits of one task of the compiled spec (``task_resources.<node id>``), for the nodes that run
    in their task's own container: Vertex AI Pipelines picks a machine that has them (without limits, an
    e2-standard-4: 4 CPUs, 16 GB), Kubeflow Pipelines sets them as the pod's limits. Deployment only: no node's
    output depends on them, so they are no node parameter and move no cache key, and the local runners ignore them.
    """

    cpu_limit: Optional[str] = None  # e.g. "8" or "500m"
    memory_limit: Optional[str] = None  # e.g. "48G" or "64Gi"

    def validate(self, name: str = "task_resources.NODE") -> "TaskResources":
        check(self.cpu_limit is None or bool(_CPU_QUANTITY.match(str(self.cpu_limit))), f"{name}.cpu_limit",
              self.cpu_limit, "a number of CPUs or millicores, e.g. 8 or 500m")
        check(self.memory_limit is None or bool(_MEMORY_QUANTITY.match(str(self.memory_limit))),
              f"{name}.memory_limit", self.memory_limit, "a quantity such as 48G or 64Gi")
        return self


@dataclass
class VertexTrainingConfig(Section):
    """Run the Trainer's ``run_fn`` as a Vertex AI Training CustomJob (``google_cloud_ai_platform.Trainer``).

    Off by default (the Trainer then runs where the orchestrator runs it). Enabled, the job runs the
    pipeline's container image (or ``image``) with one worker pool built from these fields by
    :func:`pipeline.vertex_training.worker_pool_specs`: a TPU (``machine_type`` ``cloud-tpu`` with
    ``accelerator_type`` TPU_V2/TPU_V3 and ``accelerator_count`` 8, or a ``ct4p-``/``ct5lp-`` machine
    with ``tpu_topology``) or a GPU machine (``accelerator_type`` NVIDIA_*, ``accelerator_count`` GPUs).
    """

    enabled: bool = False
    project: Optional[str] = None  # GCP project of the CustomJob (required when enabled)
    region: str = "us-central1"
    machine_type: str = "n1-standard-8"
    accelerator_type: Optional[str] = None  # TPU_V3 | TPU_V4_POD | TPU_V5_LITEPOD | NVIDIA_TESLA_V100 | ...; None: CPU
    accelerator_count: int = 0  # TPU_V2/V3: 8 (cores of one host); GPUs per replica; 0 with tpu_topology
    tpu_topology: Optional[str] = None  # TPU v4/v5e slice shape, e.g. "2x2x1" (v4) or "2x2", "4x4" (v5e)
    replica_count: int = 1  # machines: 1 chief (pool 0) + replica_count - 1 workers (pool 1); >1: multi_worker
    image: Optional[str] = None  # None: the pipeline's container image
    service_account: Optional[str] = None
    boot_disk_size_gb: int = 100

    def is_tpu(self) -> bool:
        return (self.accelerator_type or "").upper() in TPU_ACCELERATORS or \
            self.machine_type.startswith(TPU_MACHINE_PREFIXES)

    def validate(self) -> "VertexTrainingConfig":
        if not self.enabled:
            return self
        check(bool(self.project), "vertex_training.project", self.project, "a GCP project id when enabled")
        check(bool(self.region), "vertex_training.region", self.region, "a Vertex AI region, e.g. us-central1")
        check(bool(self.machine_type), "vertex_training.machine_type", self.machine_type, "a machine type")
        check(self.replica_count >= 1, "vertex_training.replica_count", self.replica_count, ">= 1")
        check(self.replica_count == 1 or not self.is_tpu(), "vertex_training.replica_count", self.replica_count,
              "1 with a TPU machine (a slice's hosts come with vertex_training.tpu_topology)")
        check(self.boot_disk_size_gb >= 10, "vertex_training.boot_disk_size_gb", self.boot_disk_size_gb, ">= 10")
        check(self.accelerator_count >= 0, "vertex_training.accelerator_count", self.accelerator_count, ">= 0")
        acc = (self.accelerator_type or "").upper()
        if self.tpu_topology is not None:
            check(all(p.isdigit() and int(p) > 0 for p in self.tpu_topology.split("x")) and "x" in self.tpu_topology,
                  "vertex_training.tpu_topology", self.tpu_topology, "chips per dimension like 2x2 or 2x2x1")
        if self.machine_type == "cloud-tpu":
            check(acc in ("TPU_V2", "TPU_V3"), "vertex_training.accelerator_type", self.accelerator_type,
                  "TPU_V2 or TPU_V3 with vertex_training.machine_type=cloud-tpu")
            check(self.accelerator_count == 8, "vertex_training.accelerator_count", self.accelerator_count,
                  "8 (the cores of one TPU v2/v3 host) with vertex_training.machine_type=cloud-tpu")
            check(self.tpu_topology is None, "vertex_training.tpu_topology", self.tpu_topology,
                  "unset with vertex_training.machine_type=cloud-tpu (v2/v3 are sized by vertex_training.accelerator_count)")
        elif self.machine_type.startswith(TPU_MACHINE_PREFIXES):
            check(bool(self.tpu_topology), "vertex_training.tpu_topology", self.tpu_topology,
                  f"a slice shape (e.g. 2x2) with the TPU vertex_training.machine_type={self.machine_type}")
            check(acc in ("", "TPU_V4_POD", "TPU_V5_LITEPOD", "TPU_V5P", "TPU_V6E"), "vertex_training.accelerator_type",
                  self.accelerator_type, "unset or the TPU type of the machine (TPU_V4_POD, TPU_V5_LITEPOD)")
        else:
            check(not acc.startswith("TPU"), "vertex_training.accelerator_type", self.accelerator_type,
                  "TPU types only with a TPU vertex_training.machine_type (cloud-tpu, ct4p-*, ct5lp-*)")
            check(self.tpu_topology is None, "vertex_training.tpu_topology", self.tpu_topology,
                  "unset for a non-TPU vertex_training.machine_type")
            if acc:
                check(self.accelerator_count >= 1, "vertex_training.accelerator_count", self.accelerator_count,
                      f">= 1 with vertex_training.accelerator_type={self.accelerator_type}")
            else:
                check(self.accelerator_count == 0, "vertex_training.accelerator_count", self.accelerator_count,
                      "0 without vertex_training.accelerator_type")
        return self


@dataclass
class FinetuneHParams(Section):
    """One row of the paper's Table 14."""

    learning_rate: float
    batch_size: int
    albert_dropout: float
    classifier_dropout: float
    train_steps: int
    warmup_steps: int
    max_seq_length: int = 512


# Paper Table 14 (max_seq_length 512 except SQuAD v1.1 at 384).
PAPER_FINETUNE: Dict[str, FinetuneHParams] = {
    "CoLA": FinetuneHParams(1e-5, 16, 0.0, 0.1, 5336, 320),
    "STS-B": FinetuneHParams(2e-5, 16, 0.0, 0.1, 3598, 214),
    "SST-2": FinetuneHParams(1e-5, 32, 0.0, 0.1, 20935, 1256),
    "MNLI": FinetuneHParams(3e-5, 128, 0.0, 0.1, 10000, 1000),
    "QNLI": FinetuneHParams(1e-5, 32, 0.0, 0.1, 33112, 1986),
    "QQP": FinetuneHParams(5e-5, 128, 0.1, 0.1, 14000, 1000),
    "RTE": FinetuneHParams(3e-5, 32, 0.1, 0.1, 800, 200),
    "MRPC": FinetuneHParams(2e-5, 32, 0.0, 0.1, 800, 200),
    "WNLI": FinetuneHParams(2e-5, 16, 0.1, 0.1, 2000, 250),
    "SQuAD1.1": FinetuneHParams(5e-5, 48, 0.0, 0.1, 3649, 365, 384),
    "SQuAD2.0": FinetuneHParams(3e-5, 48, 0.0, 0.1, 8144, 814, 512),
    "RACE": FinetuneHParams(2e-5, 32, 0.1, 0.1, 12000, 1000),
}
# v2 models: the official release README runs RACE at 1e-5 with ALBERT dropout 0 (the v1 setting diverges).
RELEASE_V2_RACE = FinetuneHParams(1e-5, 32, 0.0, 0.1, 12000, 1000)
GLUE_TASKS = ("CoLA", "SST-2", "MRPC", "STS-B", "MNLI", "QQP", "QNLI", "RTE", "WNLI")
SQUAD_TASKS = {"1.1": "SQuAD1.1", "2.0": "SQuAD2.0"}
# Beyond English (docs/languages.md, "Benchmarks beyond English"): CLUE's classification tasks run by the GLUE node
# (config/task_spec.py), C3 by the RACE node (benchmarks.race_format=c3), CMRC2018 by the SQuAD node
# (benchmarks.squad_metric=cmrc2018); each task's hparams row is under its name.
CLUE_TASKS = tuple(CLUE_TASK_SETTINGS)
RACE_FORMATS = {"race": "RACE", "c3": "C3"}          # benchmarks.race_format → the RACE node's task
SQUAD_METRICS = {"official": None, "cmrc2018": "CMRC2018"}  # benchmarks.squad_metric → the SQuAD node's task
# Result names a task of benchmarks.tasks may not take: every other node's tasks, and GLUE's split names.
_RESERVED_TASK_NAMES = GLUE_TASKS + tuple(SQUAD_TASKS.values()) + ("RACE", "C3", "CMRC2018", "MNLI-m", "MNLI-mm")

# Which fields of ``benchmarks`` each benchmark node reads (besides its hparams rows and the seed).
_COMMON = ("checkpoint_selection", "eval_every", "max_eval_examples", "baselines")
BASELINES = ("random_init",)  # components/evaluation/init_check.py: the arms besides "pretrained"
_NODE_FIELDS = {
    "glue": _COMMON + ("glue_tasks", "export_serving_model", "tfma"),
    "squad": _COMMON + ("squad_version", "squad_train_file", "squad_dev_file", "doc_stride", "max_query_length",
                        "max_answer_length", "n_best_size"),
    "race": _COMMON,
}


@dataclass
class BenchmarkConfig(Section):
    """Downstream evaluation (the GLUE / SQuAD / RACE benchmark nodes) and its protocol.

    One node per benchmark; each receives only its own fields (:meth:`node_settings`), so changing an
    RTE learning rate reruns the GLUE node and the report, nothing else.
    """

    glue_dir: Optional[str] = None  # glue_data/<TASK>/{train,dev,test}.tsv
    glue_tasks: List[str] = field(default_factory=lambda: list(GLUE_TASKS))
    squad_dir: Optional[str] = None  # holds train/dev JSON files, see squad_*_file
    squad_train_file: str = "train-v1.1.json"
    squad_dev_file: str = "dev-v1.1.json"
    squad_version: str = "1.1"  # the SQuAD version of the files in squad_dir: 1.1 | 2.0
    squad_v2_dir: Optional[str] = None  # a second SQuAD node, version 2.0, on these files
    squad_v2_train_file: str = "train-v2.0.json"
    squad_v2_dev_file: str = "dev-v2.0.json"
    race_dir: Optional[str] = None  # RACE/{train,dev,test}/{middle,high}
    hparams: Dict[str, FinetuneHParams] = field(default_factory=lambda: dict(PAPER_FINETUNE))
    seed: Optional[int] = None  # first fine-tuning seed (None: the pipeline seed); run i uses seed + i
    seeds: int = 1  # >1: report the median over this many fine-tuning seeds
    checkpoint_selection: str = "best"  # best (on dev, the paper's practice) | last
    eval_every: int = 0  # 0: evaluate once at the end; else every N steps (needed for 'best')
    max_eval_examples: int = 0  # 0: all dev examples
    doc_stride: int = 128
    max_query_length: int = 64
    max_answer_length: int = 30
    n_best_size: int = 20
    export_serving_model: bool = True  # GLUE: <TASK>/serving_model = tf.Transform graph + classifier (raw text in)
    tfma: bool = True  # GLUE classification: TFMA metrics on the exported model, under "tfma" in metrics.json
    # Extra arms fine-tuned with the same hparams, seeds and protocol: "random_init" = the same architecture
    # without pretraining, so the report can show what pretraining gained (every benchmark node runs them).
    baselines: List[str] = field(default_factory=list)
    # Fine-tuning precision: float32 | mixed_bfloat16 | auto (the faster, measured; trainer/precision.py). A node
    # receives it only when not float32, so nodes that do not set it keep their cache keys.
    mixed_precision: str = "float32"
    # Beyond GLUE / SQuAD / RACE (docs/languages.md, "Benchmarks beyond English"); each left out of the section's
    # JSON and every node's parameters at its default, so English keeps its cache keys.
    # NAME → the spec of a classification task (config/task_spec.py: format, files, text_a, text_b, label, labels,
    # metrics, ...) that glue_tasks may name, read from glue_dir/NAME/; CLUE's classification tasks are built in.
    tasks: Dict[str, Dict[str, Any]] = field(default_factory=dict)
    race_format: str = "race"  # the RACE node's data in race_dir: race (RACE's folders) | c3 (CLUE's C3 files)
    squad_metric: str = "official"  # the SQuAD node (squad_dir): official (SQuAD's) | cmrc2018 (character level)

    INPUT_FIELDS = ("glue_dir", "squad_dir", "squad_v2_dir", "race_dir")
    BEYOND_ENGLISH = ("tasks", "race_format", "squad_metric")

    def to_dict(self) -> Dict[str, Any]:
        """Every field, less ``BEYOND_ENGLISH`` at their defaults (English keeps its JSON and cache keys)."""
        data = _without_defaults(self, super().to_dict(), ("race_format", "squad_metric"))
        return {k: v for k, v in data.items() if k != "tasks" or v}

    def nodes(self) -> Dict[str, str]:
        """Benchmark node key → data folder, for the data sets this config names.

        ``glue``; ``squad`` (``squad_dir``, SQuAD ``squad_version``); ``squad2`` (``squad_v2_dir``, SQuAD 2.0:
        with both folders given, one run produces both SQuAD columns of Table 2); ``race``.
        """
        out = {"glue": self.glue_dir, "squad": self.squad_dir, "squad2": self.squad_v2_dir, "race": self.race_dir}
        return {k: v for k, v in out.items() if v}

    def node_tasks(self, node: str):
        """The tasks (``hparams`` rows) a benchmark node fine-tunes."""
        if node == "glue":
            return list(self.glue_tasks)
        if node == "race":
            return [RACE_FORMATS.get(self.race_format, "RACE")]
        if node == "squad" and SQUAD_METRICS.get(self.squad_metric):
            return [SQUAD_METRICS[self.squad_metric]]
        return [SQUAD_TASKS["2.0" if node == "squad2" else self.squad_version]]

    def node_settings(self, node: str, pipeline_seed: int) -> Dict[str, Any]:
        """The parameters of one benchmark node: its fields, its hparams rows and the resolved seed.

        ``seeds`` travels as a separate node parameter (a pipeline runtime parameter when compiled).
        """
        kind = "squad" if node.startswith("squad") else node
        out = {k: getattr(self, k) for k in _NODE_FIELDS[kind]}
        if kind == "squad":
            out["squad_version"] = "2.0" if node == "squad2" else self.squad_version
            if node == "squad2":
                out["squad_train_file"], out["squad_dev_file"] = self.squad_v2_train_file, self.squad_v2_dev_file
        # Beyond English, only where set: a node that does not use them keeps its parameters and cache key.
        specs = {t: plain_data(self.tasks[t]) for t in self.glue_tasks if t in self.tasks} if node == "glue" else {}
        if specs:
            out["tasks"] = specs
        if node == "race" and self.race_format != "race":
            out["race_format"] = self.race_format
        if node == "squad" and self.squad_metric != "official":
            out["squad_metric"] = self.squad_metric
        out["hparams"] = {t: self.hparams[t].to_dict() for t in self.node_tasks(node) if t in self.hparams}
        out["seed"] = pipeline_seed if self.seed is None else self.seed
        if self.mixed_precision != "float32":
            out["mixed_precision"] = self.mixed_precision
        return out

    @classmethod
    def from_node_settings(cls, settings: Dict[str, Any], seeds: int) -> "BenchmarkConfig":
        """Rebuild the section inside a benchmark node (fields it does not receive keep their defaults)."""
        data = dict(settings)
        hparams = data.pop("hparams", {})
        cfg = cls.from_dict({**data, "seeds": seeds, "hparams": {}}, "benchmarks.")
        cfg.hparams = {k: FinetuneHParams.from_dict(v, f"benchmarks.hparams.{k}.") for k, v in hparams.items()}
        return cfg

    def validate(self) -> "BenchmarkConfig":
        b = self
        check(b.squad_version in ("1.1", "2.0"), "benchmarks.squad_version", b.squad_version, "1.1|2.0")
        check(b.checkpoint_selection in ("best", "last"), "benchmarks.checkpoint_selection", b.checkpoint_selection,
              "best|last")
        check(b.seeds >= 1, "benchmarks.seeds", b.seeds, ">= 1")
        check(b.mixed_precision in ("auto", "float32", "mixed_bfloat16"), "benchmarks.mixed_precision",
              b.mixed_precision, "auto|float32|mixed_bfloat16")
        for name in b.baselines:
            check(name in BASELINES, "benchmarks.baselines", name, "|".join(BASELINES))
        check(len(set(b.baselines)) == len(b.baselines), "benchmarks.baselines", b.baselines, "no repeats")
        check(b.eval_every >= 0, "benchmarks.eval_every", b.eval_every, ">= 0")
        check(b.max_eval_examples >= 0, "benchmarks.max_eval_examples", b.max_eval_examples, ">= 0")
        for name in ("doc_stride", "max_query_length", "max_answer_length", "n_best_size"):
            check(getattr(b, name) >= 1, f"benchmarks.{name}", getattr(b, name), ">= 1")
        check(b.race_format in RACE_FORMATS, "benchmarks.race_format", b.race_format, "|".join(RACE_FORMATS))
        check(b.squad_metric in SQUAD_METRICS, "benchmarks.squad_metric", b.squad_metric, "|".join(SQUAD_METRICS))
        if b.squad_metric == "cmrc2018":
            check(b.squad_version == "1.1", "benchmarks.squad_version", b.squad_version,
                  "1.1 with benchmarks.squad_metric=cmrc2018 (CMRC2018's files are SQuAD v1.1's format)")
        specs = specs_from_config(b.tasks)  # a ConfigError naming benchmarks.tasks.<NAME>.<field>
        for name in specs:
            check(name.upper() not in {n.upper() for n in _RESERVED_TASK_NAMES}, f"{TASKS_SETTING}.{name}", name,
                  "a name that no built-in task has (" + ", ".join(_RESERVED_TASK_NAMES) + ")")
        for task in b.glue_tasks:
            check(task in GLUE_TASKS or task in CLUE_TASKS or task in specs, "benchmarks.glue_tasks", task,
                  "GLUE task names: " + ", ".join(GLUE_TASKS) + "; CLUE's: " + ", ".join(CLUE_TASKS)
                  + f"; or a task of {TASKS_SETTING}")
            if task in specs:
                files = specs[task].files
                check("train" in files and any(split.startswith("dev") for split in files),
                      f"{TASKS_SETTING}.{task}.files", dict(files), "a train and a dev split (fine-tuned on train, "
                      "scored on dev)")
        for node in b.nodes():
            for task in b.node_tasks(node):
                check(task in b.hparams, f"benchmarks.hparams.{task}", None, "a hyper-parameter row for this task")
        for task, hp in b.hparams.items():
            p = f"benchmarks.hparams.{task}"
            check(hp.learning_rate > 0, f"{p}.learning_rate", hp.learning_rate, "> 0")
            check(hp.batch_size >= 1, f"{p}.batch_size", hp.batch_size, ">= 1")
            check(hp.train_steps >= 1, f"{p}.train_steps", hp.train_steps, ">= 1")
            check(0 <= hp.warmup_steps <= hp.train_steps, f"{p}.warmup_steps", hp.warmup_steps,
                  f"in [0, {p}.train_steps]")
            check(8 <= hp.max_seq_length <= 512, f"{p}.max_seq_length", hp.max_seq_length, "in [8, 512]")
            for name in ("albert_dropout", "classifier_dropout"):
                check(0 <= getattr(hp, name) < 1, f"{p}.{name}", getattr(hp, name), "in [0, 1)")
        return self


@dataclass
class DataConfig(Section):
    """Which spans of the data locations a run reads, where a location has TFX's span pattern (``{SPAN}``,
    ``{VERSION}``, ``{YYYY}{MM}{DD}``; ``pipeline/spans.py``). Resolved when a run starts, by the Importers."""

    span: int = 0  # 0: the latest span; N: span N (a backfill)
    span_window: int = 1  # the corpus reads this many spans, up to the chosen one (benchmarks read one)

    def validate(self) -> "DataConfig":
        check(self.span >= 0, "data.span", self.span, ">= 0 (0: the latest span)")
        check(self.span_window >= 1, "data.span_window", self.span_window, ">= 1")
        return self


@dataclass
class GateConfig(Section):
    """The data gate (node ``DataGate``, issue 55): every span the corpus reads is measured, compared with the last
    span that went through the gate and stopped before the expensive nodes when a check fails (docs/data.md, "Data
    gate"). The limits are defined here, each with the measured value its default leaves room above (data/sample,
    the two disjoint halves of ../shared/data/large, ../shared/data/multilingual; components/datagate/checks.py),
    and ``components.datagate.checks.GateLimits`` is made of them. ``accept``: a span a person lets through
    knowingly (``--set gate.accept=N``); the result records it. ``enabled``: whether the DAG has the gate at all (off: the DAG and every cache key as before the gate)."""

    enabled: bool = True
    accept: Optional[int] = None
    # --- absolute: every span ---
    min_documents: int = 1  # an empty span (a failed upstream export, a wrong path) never trains
    # data/large, measured on its two disjoint halves (119 M characters each; "halves" below): the share of
    # characters each rule flags. 0.05 everywhere Gopher's rules flag almost nothing in books and Wikipedia.
    max_short_share: float = 0.05  # halves: <= 0.0001 (Wikipedia stubs)
    max_word_length_share: float = 0.05  # halves: 0 (document means 4.3-8.7 characters in slices)
    max_symbols_share: float = 0.05  # halves: <= 0.0001 (Wikipedia lists)
    max_no_letter_words_share: float = 0.05  # halves: <= 0.0001 (tables of numbers)
    max_few_letters_share: float = 0.05  # halves: <= 0.00001; data/multilingual: 0
    # halves: 0.010 and 0.005; their books alone up to 0.017: plays (a speaker's name on its own line) break
    # Gopher's 0.3 duplicate-line share, 7 of 282 books (Shakespeare, Ibsen, Joyce's Exiles): a tenth may be plays.
    max_duplicate_lines_share: float = 0.10
    max_top_ngrams_share: float = 0.05  # halves: <= 0.00003
    max_duplicate_ngrams_share: float = 0.05  # halves: 0.001 (Wikipedia lists with repeated phrases)
    # Share of the span's documents repeating another of its documents (exact, sampled): halves 0.
    max_duplicate_document_share: float = 0.05

    # --- drift: against the last span that passed ---
    # Characters of this span / characters of the baseline: a tick that brings a fifth or five times the text is
    # a broken export or a changed source, not a new slice of the same data.
    min_volume_ratio: float = 0.2
    max_volume_ratio: float = 5.0
    # Jensen-Shannon divergence (base 2) of content-token unigram counts over the unigram_top_tokens most frequent
    # tokens of either span (drift.unigram_tables). Measured: disjoint halves of data/large 0.0008, of its books
    # 0.003, of data/sample (50 k tokens each) 0.155; data/large's Wikipedia vs its books 0.14; data/sample vs
    # data/large 0.07; Japanese vs Chinese 0.70; Chinese vs English 0.97. 0.3: twice the small sample halves.
    max_unigram_jsd: float = 0.3
    # 1,000 tokens carry 68% of data/large's tokens. Over all 50 k kept tokens the rare ones, absent from the other
    # span by chance, make the divergence grow as spans shrink: halves of data/sample read 0.26, of data/large 0.02.
    unigram_top_tokens: int = 1000
    # Total variation distance of the characters' language mix: halves 0.00001; a span of another language 1.0.
    # 0.25: a quarter of the text may move to another language before it is a different corpus.
    max_language_mix_distance: float = 0.25
    # Within-span duplicate-document share, this span minus the baseline (halves: 0).
    max_duplicate_share_increase: float = 0.05
    # Shares of this span's documents duplicating a document of the baseline span (sampled, near_duplicates):
    # halves 0 exact, 0 near; a re-sent span reads 1.0, one with a sentence dropped per document 0 exact, 1.0 near.
    max_previous_exact_duplicate_share: float = 0.05
    max_previous_near_duplicate_share: float = 0.10
    # Estimated Jaccard similarity of 5-shingle sets from which two documents are near duplicates. A copy with one
    # word in 200 changed scores 0.95, distinct documents of one corpus near 0 (no pair of the halves' samples
    # reaches 0.8); 0.8 also sets the recall of the sampled search (near_duplicates: about J or better).
    near_duplicate_jaccard: float = 0.8

    # --- contamination: benchmark dev passages with a 13-gram in the span (GPT-3's measure) ---
    # SQuAD's passages are Wikipedia's, and ALBERT pretrains on Wikipedia: data/large's Wikipedia holds a 13-gram of
    # 23.6% of the SQuAD v1.1 dev passages (488 of 2,067), its books 0.1% (2), data/sample none. The paper's setting
    # accepts that, so the default only measures and reports (1.0); set it lower for a benchmark that is not drawn
    # from the corpus's sources.
    max_contaminated_share: float = 1.0

    NOT_LIMITS = ("enabled", "accept")

    def limits(self) -> Dict[str, Any]:
        """The limits, as ``GateLimits(**limits())`` takes them."""
        return {k: v for k, v in self.to_dict().items() if k not in self.NOT_LIMITS}

    def params(self) -> Dict[str, Any]:
        """Node ``DataGate``'s ``config``: the limits, and ``accept`` when set (``enabled`` decides whether the node
        exists, so it is no parameter)."""
        return {**self.limits(), **({"accept": self.accept} if self.accept is not None else {})}

    def validate(self) -> "GateConfig":
        check(self.accept is None or self.accept >= 0, "gate.accept", self.accept,
              "a span number >= 0 (0: a corpus without span patterns), or null")
        check(self.min_documents >= 0, "gate.min_documents", self.min_documents, ">= 0")
        for name, value in self.limits().items():
            if name.endswith("_share") and name != "max_duplicate_share_increase":
                check(0 <= value <= 1, f"gate.{name}", value, "in [0, 1]")
        check(-1 <= self.max_duplicate_share_increase <= 1, "gate.max_duplicate_share_increase",
              self.max_duplicate_share_increase, "in [-1, 1]")
        check(self.min_volume_ratio >= 0, "gate.min_volume_ratio", self.min_volume_ratio, ">= 0")
        check(self.max_volume_ratio >= self.min_volume_ratio, "gate.max_volume_ratio", self.max_volume_ratio,
              f">= gate.min_volume_ratio={self.min_volume_ratio}")
        check(0 <= self.max_unigram_jsd <= 1, "gate.max_unigram_jsd", self.max_unigram_jsd, "in [0, 1]")
        check(self.unigram_top_tokens >= 1, "gate.unigram_top_tokens", self.unigram_top_tokens, ">= 1")
        check(0 <= self.max_language_mix_distance <= 1, "gate.max_language_mix_distance",
              self.max_language_mix_distance, "in [0, 1]")
        check(0 < self.near_duplicate_jaccard <= 1, "gate.near_duplicate_jaccard", self.near_duplicate_jaccard,
              "in (0, 1]")
        return self


@dataclass
class ReportConfig(Section):
    """The report (node ``BenchmarkReport``): presentation only; scores and facts come from its inputs."""

    title: Optional[str] = None  # None: "ALBERT-TFX report — <pipeline name> (<preset> preset)"
    # The published row shown beside this run: albert-base-v1 (paper Table 2) | albert-base-v2 (release README).
    reference: str = "albert-base-v1"

    def validate(self) -> "ReportConfig":
        check(self.reference in REFERENCE_ROWS, "report.reference", self.reference, "|".join(REFERENCE_ROWS))
        return self


@dataclass
class ReleaseConfig(Section):
    """The release (nodes ``Blesser`` and ``Pusher``): whether this run's model replaces the last blessed one, and
    where a blessed model is pushed. Every criterion is off by default: with none set, the decision is a recorded
    "blessed: no criteria" (never a missing blessing). Scores are the report's task scores (0-100).

    ``Blesser`` receives the criteria and ``force_bless``; ``Pusher`` the destination and the registry settings, so
    moving the destination re-pushes without re-deciding.
    """

    # Per-task floors: {task: minimum score}, e.g. {RTE: 55, SST-2: 80}; a task without a score fails its floor.
    min_scores: Dict[str, float] = field(default_factory=dict)
    # At least this many tasks beat ``baseline_arm`` beyond the seed spread (worst seed above the arm's best;
    # needs benchmarks.seeds >= 2 and the arm in benchmarks.baselines). 0: off.
    min_tasks_beating_arm: int = 0
    baseline_arm: str = "random_init"
    # Against the latest blessed model of this pipeline: no task lower by more than this many points, and the task
    # average not lower. None: off. The first run (no blessed model yet) skips it, and the decision says so.
    max_regression: Optional[float] = None
    force_bless: bool = False  # bless whatever the criteria say; the decision and the model card say it was forced
    push_destination: Optional[str] = None  # a folder or gs:// URI; None: <pipeline_root>/releases
    # Also upload each pushed version to the Vertex AI Model Registry, as a new version of this parent model
    # (projects/P/locations/R/models/M; the model is created on the first upload). None: no upload.
    vertex_model: Optional[str] = None
    vertex_version_aliases: List[str] = field(default_factory=list)  # besides "v<N>", which every version gets
    license: str = "apache-2.0"  # the model card's license (the official ALBERT release's)
    # The serving container Vertex AI runs the SavedModel in (a prebuilt TensorFlow CPU image).
    vertex_serving_image: str = "us-docker.pkg.dev/vertex-ai/prediction/tf2-cpu.2-15:latest"

    BLESSER_FIELDS = ("min_scores", "min_tasks_beating_arm", "baseline_arm", "max_regression", "force_bless")

    def blesser_settings(self, destination: str) -> Dict[str, Any]:
        """What decides the blessing (node ``Blesser``'s ``config``), with the push destination, whose version
        records hold the baseline model's scores."""
        return {**{name: getattr(self, name) for name in self.BLESSER_FIELDS}, "push_destination": destination}

    def pusher_settings(self, destination: str, model_name: str) -> Dict[str, Any]:
        """Where a blessed model goes (node ``Pusher``'s ``config``), with the destination resolved, and the name
        its card and registry entry carry (the pipeline's)."""
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name not in self.BLESSER_FIELDS}
        out.update(push_destination=destination, model_name=model_name)
        return out

    def validate(self) -> "ReleaseConfig":
        check(self.baseline_arm in BASELINES, "release.baseline_arm", self.baseline_arm, "|".join(BASELINES))
        check(self.min_tasks_beating_arm >= 0, "release.min_tasks_beating_arm", self.min_tasks_beating_arm, ">= 0")
        check(self.max_regression is None or self.max_regression >= 0, "release.max_regression",
              self.max_regression, ">= 0 or null")
        dest = self.push_destination
        check(dest is None or (bool(dest) and ("://" not in dest or dest.startswith("gs://"))),
              "release.push_destination", dest, "a folder or a gs:// URI")
        model = self.vertex_model
        check(model is None or _VERTEX_MODEL.fullmatch(model) is not None, "release.vertex_model", model,
              "projects/PROJECT/locations/REGION/models/MODEL_ID")
        for alias in self.vertex_version_aliases:
            check(_VERTEX_ALIAS.fullmatch(alias) is not None and not _VERSION_ALIAS.fullmatch(alias),
                  "release.vertex_version_aliases", alias,
                  "Vertex AI aliases ([a-z][a-zA-Z0-9-]{0,126}[a-z0-9]), none of the form v<N> (kept for versions)")
        return self


_VERTEX_MODEL = re.compile(r"projects/[^/]+/locations/[a-z0-9-]+/models/[A-Za-z0-9_-]+")
_VERTEX_ALIAS = re.compile(r"[a-z][a-zA-Z0-9-]{0,126}[a-z0-9]")
_VERSION_ALIAS = re.compile(r"v[0-9]+")


def replace(section, **changes):
    """``dataclasses.replace`` for sections (kept here so callers need not import dataclasses)."""
    return dataclasses.replace(section, **changes)


__all__ = ["ConfigError", "CorpusConfig", "DataConfig", "VocabConfig", "DataGenConfig", "ModelConfig", "TrainConfig",
           "VertexTrainingConfig", "TaskResources", "FinetuneHParams", "PAPER_FINETUNE", "RELEASE_V2_RACE", "BenchmarkConfig", "ReportConfig", "ReleaseConfig",
           "GateConfig",
           "GLUE_TASKS", "SQUAD_TASKS", "CLUE_TASKS", "RACE_FORMATS", "SQUAD_METRICS", "BASELINES", "TRAIN_SCHEDULE_ONLY", "TPU_ACCELERATORS", "TPU_MACHINE_PREFIXES",
           "SHARING_CHOICES", "LONG_PHASE_OPTIONS", "TRAIN_LONG_PHASE_OPTIONS",
           "WIKIPEDIA_GLOBS", "BOOKS_GLOBS", "WIKIPEDIA_FORMATS", "MEMORY_UNITS"]
