"""Beam pipeline: documents → masked SOP instances → shuffled, sharded TFRecords + statistics.

This module is the graph and its generating stage; its pieces live beside it: reading the documents and their
split in ``components/datagen/datagen_beam_input.py``, the random-document pools in ``components/datagen/datagen_beam_pools.py``,
the spill files → TFRecord shards in ``components/datagen/datagen_beam_shards.py``.

Memory stays bounded at any corpus size (the official script holds every instance in RAM):

* file names are the only elements before generation; read → tokenize → instances → serialize is one fused
  stage that streams documents one at a time, so no documents are materialized between stages;
* serialized records never become Beam elements: each bundle appends them, with a deterministic random
  shuffle key, to one spill file per (split, shard) and emits only the file names; the per-shard writer sorts
  them in bounded memory (``datagen_beam_shards``);
* the random-document pools (official SOP negatives, NSP) are deterministic samples of documents, one per
  split, bounded in documents and in characters, whose tokens never pass through Beam
  (``datagen_beam_pools``); each generating worker loads its pool file once (pooled documents are not
  tokenized again).

The eval split is a held-out ``eval_fraction`` of the documents (by hash), or, when ``eval_document_files``
are given (the paper's practice: documents of the SQuAD and RACE dev sets, see
:mod:`components.datagen.dev_documents`), exactly those documents, every corpus document then training.

BERT's two-phase sequence length (``long_params``, off by default): the generating stage also builds each
document's instances at the long length, in the same pass over the same documents, into the ``train_long`` /
``eval_long`` splits (same document split, same random-document pools, seeds of their own); the short splits
are byte for byte what a run without it writes.

Every random choice derives from (seed, document id, pass) and shard files are sorted on a key derived
the same way, so the bytes do not depend on how many workers ran, on bundle boundaries or on order.
"""
from __future__ import annotations

import dataclasses
import json
import posixpath
import uuid
from typing import Dict, List, Optional, Tuple

import apache_beam as beam
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems
from apache_beam.transforms.window import GlobalWindow
from apache_beam.utils.timestamp import MIN_TIMESTAMP
from apache_beam.utils.windowed_value import WindowedValue

from components.datagen.generate import generate_for_document, tokenize_document
from components.datagen.instances import InstanceParams
from components.datagen.language_sampling import SamplingRule
from components.datagen.pool import DocumentPool
from components.datagen.stats import InstanceStats
from components.datagen.datagen_beam_input import SplitRule, _h64, _make_dirs, _Tokenizing, read_documents
from components.datagen.datagen_beam_pools import load_pools, split_document_pools
from components.datagen.datagen_beam_languages import _sum_tuples, language_plan, per_language_block
from components.datagen.datagen_beam_shards import _SPILL_HEADER, _remove_spill_dir, _WriteTFRecordShard
from components.text.documents import file_language
from components.text.tokenizers import TokenizerSpec
from config.errors import InputError
from trainer.files import EVAL_SPLIT, LONG_SUFFIX, TRAIN_SPLIT

SPLITS = (TRAIN_SPLIT, EVAL_SPLIT)
# With BERT's two-phase sequence length (``long_params``): the same documents' instances at the long length, each
# document in its short split's long twin ("train" → "train_long"), from seeds of their own (:func:`long_seed`).
LONG_SPLITS = tuple(s + LONG_SUFFIX for s in SPLITS)


def output_splits(long: bool) -> Tuple[str, ...]:
    """The splits a run writes: ``SPLITS``, plus ``LONG_SPLITS`` when the long phase is on."""
    return SPLITS + (LONG_SPLITS if long else ())
# Other-document pool for the official SOP negatives / NSP: a deterministic sample of documents (the
# ones with the smallest hash keys), at most this many documents and characters (DataGenConfig defaults).
RANDOM_POOL_SIZE = 2000
RANDOM_POOL_MAX_CHARS = 10_000_000


def long_seed(seed: int) -> int:
    """The seed of the long instances (their passes' generators and shuffle keys): derived from the explicit seed,
    and other than it, so the long set is not the short set's random choices at another length."""
    return _h64("long-phase", seed) >> 1  # 63 bits: a non-negative int64


# Live progress in the Dataflow UI / the runner's metrics (namespace "albert.datagen"): files and documents read,
# sentences, input tokens, instances per split, instance tokens, and documents skipped (empty after tokenizing,
# or too short to give an instance). PretrainingDataGen also records them from the run's metrics.
COUNTERS = {name: beam.metrics.Metrics.counter("albert.datagen", name) for name in (
    "files", "documents", "sentences", "input_tokens", "instances_train", "instances_eval", "instance_tokens",
    "skipped_empty_documents", "skipped_too_short_documents",
    # the long phase's instances (only with ``long_params``; a counter never incremented is not reported)
    "instances_train_long", "instances_eval_long", "instance_tokens_long")}


_EMPTY_POOL = DocumentPool([], [])


class _GenerateInstances(_Tokenizing):
    """Per file, per document: split, tokenize, build the instances of every pass and append each serialized
    example, with its deterministic shuffle key, to this bundle's spill file of its (split, shard).

    Records never become Beam elements: the output is one ``((split, shard), spill path)`` per spill file
    at the end of the bundle (a retried bundle's files are simply never referenced), plus one
    :class:`InstanceStats` per document on the ``stats_<split>`` outputs. So no stage holds the records in
    memory and per-instance Beam overhead (coders, GroupByKey buffers) is gone.
    """

    def __init__(self, vocab_path: str, tokenizer_spec, word_starts: str, params: InstanceParams, seed: int,
                 dupe_factor: int, shards: Dict[str, int], split_rule: SplitRule, spill_dir: str,
                 long_params: Optional[InstanceParams] = None, segmenters: Optional[Dict[str, str]] = None):
        super().__init__(vocab_path, tokenizer_spec, word_starts, segmenters)
        self._params = params
        self._long_params = long_params
        self._seed = seed
        self._dupe_factor = dupe_factor
        self._shards = dict(shards)
        self._split_rule = split_rule
        self._spill_dir = spill_dir

    def setup(self):
        super().setup()
        _make_dirs(self._spill_dir)
        self._pools_file: Optional[str] = None
        self._pools: Dict[str, DocumentPool] = {}

    def start_bundle(self):
        self._spills: Dict[Tuple[str, int], Tuple[str, object]] = {}

    def _spill(self, split: str, shard: int):
        handle = self._spills.get((split, shard))
        if handle is None:
            path = posixpath.join(self._spill_dir, f"{split}-{shard:05d}-{uuid.uuid4().hex}.spill")
            handle = self._spills[(split, shard)] = (
                path, FileSystems.create(path, compression_type=CompressionTypes.UNCOMPRESSED))
        return handle[1]

    def process(self, path: str, pools_file: Optional[str] = None, plan: Optional[Dict] = None):
        # The element is a file, read here: documents never become Beam elements. (As the output of a separate
        # FlatMap they were buffered whole whenever the runner did not fuse it with this side-input ParDo.)
        if pools_file is not None and pools_file != self._pools_file:  # loaded once per worker
            self._pools, self._pools_file = load_pools(pools_file), pools_file
        self.vocab = self.vocab_of(path)  # its language's word starts in a run of several (datagen_beam_input.py)
        language = file_language(path) if plan is not None else None
        passes = plan[language]["passes"] if language in (plan or {}) else None  # language sampling
        segmenter = self.segmenter_for(path)
        for doc_id, sentences in read_documents(path):
            split = self._split_rule(path, doc_id)
            pool = None if pools_file is None else self._pools.get(split, _EMPTY_POOL)
            yield from self._document(doc_id, split, sentences, pool, segmenter, passes, language)
        COUNTERS["files"].inc()

    def _document(self, doc_id: str, split: str, sentences: List[str], pool: Optional[DocumentPool],
                  segmenter=None, passes: Optional[float] = None, language: Optional[str] = None):
        # pooled documents are tokenized already (without a segmenter's word starts)
        ids = pool.get(doc_id) if pool is not None and segmenter is None else None
        if ids is None:
            ids = tokenize_document(self.tokenizer, sentences, self.vocab, segmenter)
        COUNTERS["documents"].inc()
        COUNTERS["sentences"].inc(len(sentences))
        if not ids:
            COUNTERS["skipped_empty_documents"].inc()
            return
        COUNTERS["input_tokens"].inc(ids.num_tokens)  # not len(flat): a pooled document is a view into the pool
        # The split's own pool; a split with a single document draws from that document, as officially.
        random_document = pool.sampler(doc_id, alone=ids) if pool is not None else None
        stats = self._instances(doc_id, ids, split, self._seed, self._params, random_document, passes)
        if language is not None:  # a run of several languages: its counts for the per_language statistics
            padding = stats.instances * self._params.max_seq_length - stats.tokens
            yield beam.pvalue.TaggedOutput("language_counts", (
                (language, split), (1, stats.instances, stats.tokens, stats.masked_tokens, padding)))
        COUNTERS[f"instances_{split}"].inc(stats.instances)
        COUNTERS["instance_tokens"].inc(stats.tokens)
        if not stats.instances:
            COUNTERS["skipped_too_short_documents"].inc()
        yield beam.pvalue.TaggedOutput(f"stats_{split}", stats)
        if self._long_params is not None:  # the same document, its split's long twin, seeds of their own
            long_split = split + LONG_SUFFIX
            stats = self._instances(doc_id, ids, long_split, long_seed(self._seed), self._long_params,
                                    random_document, passes)
            COUNTERS[f"instances_{long_split}"].inc(stats.instances)
            COUNTERS["instance_tokens_long"].inc(stats.tokens)
            yield beam.pvalue.TaggedOutput(f"stats_{long_split}", stats)

    def _instances(self, doc_id: str, ids, split: str, seed: int, params: InstanceParams,
                   random_document, passes: Optional[float] = None) -> InstanceStats:
        """Every pass's instances of one document with ``seed`` and ``params`` (``passes``: its language's, see
        :func:`generate_for_document`), appended to ``split``'s spill files under shuffle keys from (``seed``,
        document, index); their statistics."""
        num_shards = self._shards[split]
        stats = InstanceStats()
        pending: Dict[int, List[bytes]] = {}
        for i, (payload, instance) in enumerate(generate_for_document(
                doc_id, ids, seed, self._dupe_factor, params, self.vocab, random_document, passes)):
            key = _h64("shuffle", seed, doc_id, i)
            stats.add(instance)
            pending.setdefault(key % num_shards, []).extend((_SPILL_HEADER.pack(key, len(payload)), payload))
        for shard, parts in pending.items():
            self._spill(split, shard).write(b"".join(parts))
        return stats

    def finish_bundle(self):
        for (split, shard), (path, handle) in sorted(self._spills.items()):
            handle.close()
            yield WindowedValue(((split, shard), path), MIN_TIMESTAMP, [GlobalWindow()])
        self._spills = {}


class _StatsCombine(beam.CombineFn):
    def create_accumulator(self):
        return InstanceStats()

    def add_input(self, acc, doc_stats):
        return acc.merge(doc_stats)

    def merge_accumulators(self, accs):
        accs = list(accs)
        out = accs[0]
        for other in accs[1:]:
            out = out.merge(other)
        return out

    def extract_output(self, acc):
        return acc.to_dict()


def build_pretraining_data(pipeline: beam.Pipeline, document_files: List[str], vocab_path: str,
                           output_dirs: Dict[str, str], stats_path: str, *, params: InstanceParams,
                           seed: int, dupe_factor: int, num_shards: int, eval_fraction: float,
                           compression: str = "GZIP", compression_level: int = 6,
                           tokenizer_spec: Optional[TokenizerSpec] = None, word_starts: Optional[str] = "official",
                           spill_dir: Optional[str] = None, random_pool_size: int = RANDOM_POOL_SIZE,
                           random_pool_max_chars: int = RANDOM_POOL_MAX_CHARS,
                           eval_document_files: Optional[List[str]] = None,
                           long_params: Optional[InstanceParams] = None,
                           language_sampling: Optional[SamplingRule] = None,
                           segmenters: Optional[Dict[str, str]] = None) -> None:
    """Add the data-generation stages to ``pipeline``.

    ``vocab_path``: the vocabulary file (``spm.model`` or ``vocab.txt``), read with ``tokenizer_spec`` (default:
    English's SentencePiece, lower-cased); ``word_starts``: ``datagen.word_starts`` (whole-word masking), None: each
    file's language's (a run of several languages; ``official`` for a file whose name says none).

    ``output_dirs`` maps split name ("train"/"eval", and "train_long"/"eval_long" with ``long_params``) to its
    folder; ``stats_path`` receives the JSON statistics of every split. ``eval_fraction`` 0 puts every document
    in "train"; in a run of several languages each tagged file's first document trains
    (``SplitRule.first_trains``). ``spill_dir``: where unsorted records wait for their shard's sort, and the
    random-document pool for the generators (default ``.datagen-spill`` next to the train folder; removed at the
    end). ``random_pool_size`` /
    ``random_pool_max_chars``: at most this many documents and characters in each split's random-document pool
    (official/nsp modes). ``eval_document_files``: documents (same format) that form the eval split instead of
    the held-out ``eval_fraction`` (which is then ignored: every corpus document trains), e.g. the SQuAD/RACE
    dev documents of :mod:`components.datagen.dev_documents`. ``long_params`` (BERT's two-phase sequence length):
    each document also gives instances with these parameters into its split's long twin ("train_long",
    "eval_long"), in the same generating pass over the documents (the same document split and random-document
    pools), with seeds of their own (:func:`long_seed`); the short splits' bytes are what they are without it.
    ``language_sampling`` (``datagen.language_sampling``, default the exponent 0.7): when the files hold two or more
    languages (``file_language``), each language's passes follow the rule (``datagen_beam_languages``) and
    ``stats.json`` gets a ``per_language`` block; a single-language run is untouched. ``segmenters``
    (``datagen.segmenters``): language → segmenter deciding the masking units (``components/text/segmenters.py``).

    Stages: file names → read + tokenize + instances + serialize (one fused stage; its only side input is
    the path of the random-document pool file, chosen from per-document keys and then tokenized by two
    separate reads of the files, so documents are never materialized between stages) → spill files →
    per-shard sort and TFRecord write.
    """
    if not document_files:
        raise FileNotFoundError("no document files given to pretraining-data generation")
    tokenizer_spec = tokenizer_spec or TokenizerSpec()
    eval_document_files = list(eval_document_files or [])
    by_name: Dict[str, str] = {}
    for path in list(document_files) + eval_document_files:
        name = posixpath.basename(path)
        if name in by_name:  # document ids are "<file name>:<index>": they would collide
            raise InputError(f"two inputs have the same name, {by_name[name]} and {path} (the same file given twice, "
                             f"or two files named alike): document ids (file name:index) must be unique")
        by_name[name] = path
    if spill_dir is None:
        spill_dir = posixpath.join(posixpath.dirname(output_dirs["train"].rstrip("/")), ".datagen-spill")
    languages = {file_language(path) for path in document_files} - {None}
    # a run of several languages: each tagged file's first document trains (no language all in the eval split)
    split_rule = SplitRule(seed, eval_fraction, eval_document_files, first_trains=len(languages) >= 2)
    splits = [s for s in SPLITS if s == "train" or eval_fraction > 0 or eval_document_files]
    shards = {"train": num_shards, "eval": max(1, min(num_shards, 4))}
    if long_params is not None:
        splits += [s + LONG_SUFFIX for s in splits]
        shards.update({s + LONG_SUFFIX: n for s, n in list(shards.items())})
    missing = [s for s in splits if s not in output_dirs]
    if missing:
        raise ValueError(f"no output folder for split(s) {', '.join(missing)}")
    files = (
        pipeline
        | "ListDocumentFiles" >> beam.Create(sorted(document_files) + sorted(eval_document_files))
        | "SpreadFiles" >> beam.Reshuffle()
    )
    side = {}
    if params.sop_mode in ("official", "nsp"):
        pools_file = split_document_pools(files, vocab_path, tokenizer_spec, word_starts, seed, random_pool_size,
                                          random_pool_max_chars, split_rule, spill_dir)
        side["pools_file"] = beam.pvalue.AsSingleton(pools_file)
    if segmenters and not languages:  # a single-language run: untagged files, the run's language's segmenter
        segmenters = {None: name for name in segmenters.values()} if len(segmenters) == 1 else None
    plan = None
    if len(languages) >= 2:  # a run of several languages: sampled by the rule, counted per language
        rule = language_sampling or SamplingRule()
        plan = language_plan(files, vocab_path, tokenizer_spec, word_starts, segmenters, params, seed, dupe_factor,
                             rule, split_rule, side.get("pools_file"))
        side["plan"] = beam.pvalue.AsSingleton(plan)
    outputs = [f"stats_{s}" for s in splits] + (["language_counts"] if plan is not None else [])
    generated = (
        files
        | "Generate" >> beam.ParDo(
            _GenerateInstances(vocab_path, tokenizer_spec, word_starts, params, seed, dupe_factor, shards, split_rule,
                               spill_dir, long_params, segmenters), **side).with_outputs(*outputs, main="spills")
    )
    written = (
        generated.spills
        | "GroupShards" >> beam.GroupByKey()
        | "WriteShards" >> beam.ParDo(_WriteTFRecordShard(output_dirs, shards, compression, compression_level))
    )
    _ = (
        written
        | "CountShards" >> beam.combiners.Count.Globally()
        | "RemoveSpill" >> beam.Map(_remove_spill_dir, spill_dir)
    )
    stats_parts = [
        generated[f"stats_{split}"]
        | f"Stats{split}" >> beam.CombineGlobally(_StatsCombine())
        | f"Tag{split}" >> beam.Map(lambda s, name=split: (name, s))
        for split in splits
    ]
    language_side = {}
    if plan is not None:
        counts = (generated.language_counts
                  | "SumLanguageCounts" >> beam.CombinePerKey(_sum_tuples)
                  | "LanguageCountsDict" >> beam.combiners.ToDict())
        language_side = {"language_counts": beam.pvalue.AsSingleton(counts), "plan": beam.pvalue.AsSingleton(plan),
                         "rule": rule}
    _ = (
        stats_parts
        | "FlattenStats" >> beam.Flatten()
        | "CollectStats" >> beam.combiners.ToDict()
        | "WriteStats" >> beam.Map(_write_stats, stats_path, params, seed, dupe_factor, long_params, **language_side)
    )


def _write_stats(per_split: Dict[str, Dict], stats_path: str, params: InstanceParams, seed: int,
                 dupe_factor: int, long_params: Optional[InstanceParams] = None, language_counts=None, plan=None,
                 rule: Optional[SamplingRule] = None) -> None:
    if not per_split.get("train", {}).get("instances"):
        raise InputError("pretraining-data generation produced no training instances: the documents are empty or "
                         "too short for datagen.max_seq_length")
    summary = {"splits": per_split, "seed": seed, "dupe_factor": dupe_factor,
               "params": {k: getattr(params, k) for k in params.__dataclass_fields__}}
    if long_params is not None:  # the long splits' own parameters and seed (their statistics are in "splits")
        summary["long_params"] = {k: getattr(long_params, k) for k in long_params.__dataclass_fields__}
        summary["long_seed"] = long_seed(seed)
    if plan is not None:  # a run of several languages
        summary["per_language"] = per_language_block(language_counts, plan, rule)
    with FileSystems.create(stats_path) as f:
        f.write(json.dumps(summary, indent=2, sort_keys=True).encode("utf-8"))


def instance_params(datagen_config) -> InstanceParams:
    """``InstanceParams`` from the pipeline's :class:`DataGenConfig`."""
    return InstanceParams(
        max_seq_length=datagen_config.max_seq_length,
        max_predictions_per_seq=datagen_config.max_predictions_per_seq,
        masked_lm_prob=datagen_config.masked_lm_prob,
        short_seq_prob=datagen_config.short_seq_prob,
        max_ngram=datagen_config.max_ngram,
        sop_mode=datagen_config.sop_mode,
    )


def long_instance_params(datagen_config) -> Optional[InstanceParams]:
    """The long phase's ``InstanceParams`` (``datagen.long_max_seq_length`` and its predictions per sequence, the
    rest as :func:`instance_params`), or None when the two-phase sequence length is off."""
    if not getattr(datagen_config, "long_max_seq_length", 0):
        return None
    return dataclasses.replace(instance_params(datagen_config), max_seq_length=datagen_config.long_max_seq_length,
                               max_predictions_per_seq=datagen_config.long_predictions())
