"""Beam pipeline: documents → masked SOP instances → shuffled, sharded TFRecords + statistics.

Memory stays bounded at any corpus size: documents stream through a ``DoFn`` one at a time
(the official script holds every instance in RAM), and the global shuffle is a random-key shard
assignment followed by a per-shard sort on that key, so one worker holds at most one shard.
Every random choice derives from (seed, document id, pass); shard files are sorted on a key
derived the same way, so the bytes do not depend on how many workers ran or in what order.

Document ids are ``<shard file name>:<index in file>``: the documents artifact is itself
deterministic, so ids are stable across runs.
"""
from __future__ import annotations

import hashlib
import json
import posixpath
from typing import Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

import apache_beam as beam
import numpy as np
from apache_beam.io.filesystems import FileSystems

from components.datagen.generate import generate_for_document, tokenize_document
from components.datagen.instances import InstanceParams, VocabInfo
from components.datagen.stats import InstanceStats
from components.text.documents import parse_text_blocks

SPLITS = ("train", "eval")
STATS_FILE = "stats.json"
# Other-document pool for the official SOP negatives / NSP: a deterministic sample of documents.
RANDOM_POOL_SIZE = 2000


def _h64(*parts: object) -> int:
    return int.from_bytes(hashlib.sha1("\x1f".join(map(str, parts)).encode("utf-8")).digest()[:8], "big")


def split_of(doc_id: str, seed: int, eval_fraction: float) -> str:
    """Hold out a stable ``eval_fraction`` of documents (by hash, not by position)."""
    return "eval" if (_h64("split", seed, doc_id) % 1_000_000) < eval_fraction * 1_000_000 else "train"


def read_documents(path: str) -> Iterator[Tuple[str, List[str]]]:
    """(doc_id, sentences) from one file in the official format (one sentence per line, blank line between docs)."""
    name = posixpath.basename(path)
    with FileSystems.open(path) as f:
        lines = (line.decode("utf-8") for line in f)
        for index, sentences in enumerate(parse_text_blocks(lines)):
            yield f"{name}:{index}", sentences


class _Tokenizing(beam.DoFn):
    """Base for DoFns that need the tokenizer: loaded once per worker in ``setup``."""

    def __init__(self, spm_model_path: str, do_lower_case: bool):
        self._spm_model_path = spm_model_path
        self._do_lower_case = do_lower_case

    def setup(self):
        from components.text.tokenization import AlbertTokenizer

        with FileSystems.open(self._spm_model_path) as f:
            self.tokenizer = AlbertTokenizer.from_serialized(f.read(), self._do_lower_case)
        self.vocab = VocabInfo.from_tokenizer(self.tokenizer)


class _TokenizeForPool(_Tokenizing):
    def process(self, element: Tuple[str, List[str]]):
        doc_id, sentences = element
        ids = tokenize_document(self.tokenizer, sentences, self.vocab)
        if ids:
            yield doc_id, [a.tolist() for a in ids]


class _GenerateInstances(_Tokenizing):
    """Per document: tokenize, build instances for every pass, key each by a deterministic random shard key."""

    def __init__(self, spm_model_path: str, do_lower_case: bool, params: InstanceParams, seed: int,
                 dupe_factor: int, num_shards: int):
        super().__init__(spm_model_path, do_lower_case)
        self._params = params
        self._seed = seed
        self._dupe_factor = dupe_factor
        self._num_shards = num_shards

    def process(self, element: Tuple[str, List[str]], pool: Sequence[Tuple[str, List[List[int]]]]):
        doc_id, sentences = element
        ids = tokenize_document(self.tokenizer, sentences, self.vocab)
        if not ids:
            return
        others = [p for p in pool if p[0] != doc_id]

        def random_document(rng: np.random.Generator) -> List[np.ndarray]:
            if not others:
                raise ValueError("the corpus has a single document: no other document to draw a random segment from "
                                 "(use sop_mode=pure)")
            return [np.asarray(s, dtype=np.int32) for s in others[int(rng.integers(len(others)))][1]]

        stats = InstanceStats()
        for i, (payload, instance) in enumerate(generate_for_document(
                doc_id, ids, self._seed, self._dupe_factor, self._params, self.vocab, random_document)):
            key = _h64("shuffle", self._seed, doc_id, i)
            stats.add(instance)
            yield key % self._num_shards, (key, payload)
        yield beam.pvalue.TaggedOutput("stats", stats)


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


class _WriteTFRecordShard(beam.DoFn):
    def __init__(self, split_dir: str, num_shards: int, compression: str):
        self._split_dir = split_dir
        self._num_shards = num_shards
        self._compression = compression

    def process(self, element: Tuple[int, Iterable[Tuple[int, bytes]]]):
        import tensorflow as tf

        shard, records = element
        records = sorted(records, key=lambda kv: (kv[0], kv[1]))
        suffix = ".gz" if self._compression == "GZIP" else ""
        path = posixpath.join(self._split_dir, f"data_tfrecord-{shard:05d}-of-{self._num_shards:05d}{suffix}")
        with tf.io.TFRecordWriter(path, options=self._compression or None) as writer:
            for _, payload in records:
                writer.write(payload)
        yield shard


def shard_path_glob(split_dir: str, compression: str) -> str:
    return posixpath.join(split_dir, "data_tfrecord-*" + (".gz" if compression == "GZIP" else ""))


def build_pretraining_data(pipeline: beam.Pipeline, document_files: List[str], spm_model_path: str,
                           output_dirs: Dict[str, str], stats_path: str, *, params: InstanceParams,
                           seed: int, dupe_factor: int, num_shards: int, eval_fraction: float,
                           compression: str = "GZIP", do_lower_case: bool = True) -> None:
    """Add the data-generation stages to ``pipeline``.

    ``output_dirs`` maps split name ("train"/"eval") to its folder; ``stats_path`` receives the JSON
    statistics of both splits. ``eval_fraction`` 0 puts every document in "train".
    """
    if not document_files:
        raise FileNotFoundError("no document files given to pretraining-data generation")
    docs = (
        pipeline
        | "ListDocumentFiles" >> beam.Create(sorted(document_files))
        | "SpreadFiles" >> beam.Reshuffle()
        | "ReadDocuments" >> beam.FlatMap(read_documents)
    )
    pool = None
    if params.sop_mode in ("official", "nsp"):
        pool = (
            docs
            | "PoolCandidates" >> beam.Map(lambda kv: (_h64("pool", seed, kv[0]), kv))
            | "SmallestKeys" >> beam.combiners.Top.Smallest(RANDOM_POOL_SIZE, key=lambda kv: kv[0])
            | "Unkey" >> beam.FlatMap(lambda top: [kv for _, kv in top])
            | "TokenizePool" >> beam.ParDo(_TokenizeForPool(spm_model_path, do_lower_case))
        )
    stats_parts = []
    for split in SPLITS:
        if split == "eval" and eval_fraction <= 0:
            continue
        split_docs = docs | f"Filter{split}" >> beam.Filter(
            lambda kv, s=split: split_of(kv[0], seed, eval_fraction) == s)
        pool_side = beam.pvalue.AsList(pool) if pool is not None else beam.pvalue.AsList(
            pipeline | f"EmptyPool{split}" >> beam.Create([]))
        split_shards = num_shards if split == "train" else max(1, min(num_shards, 4))
        generated = split_docs | f"Generate{split}" >> beam.ParDo(
            _GenerateInstances(spm_model_path, do_lower_case, params, seed, dupe_factor, split_shards),
            pool_side).with_outputs("stats", main="records")
        _ = (
            generated.records
            | f"GroupShards{split}" >> beam.GroupByKey()
            | f"Write{split}" >> beam.ParDo(_WriteTFRecordShard(output_dirs[split], split_shards, compression))
        )
        stats_parts.append(
            generated.stats
            | f"Stats{split}" >> beam.CombineGlobally(_StatsCombine())
            | f"Tag{split}" >> beam.Map(lambda s, name=split: (name, s))
        )
    _ = (
        stats_parts
        | "FlattenStats" >> beam.Flatten()
        | "CollectStats" >> beam.combiners.ToDict()
        | "WriteStats" >> beam.Map(_write_stats, stats_path, params, seed, dupe_factor)
    )


def _write_stats(per_split: Dict[str, Dict], stats_path: str, params: InstanceParams, seed: int,
                 dupe_factor: int) -> None:
    if not per_split.get("train", {}).get("instances"):
        raise ValueError("pretraining-data generation produced no training instances: the documents are empty or "
                         "too short for max_seq_length")
    summary = {"splits": per_split, "seed": seed, "dupe_factor": dupe_factor,
               "params": {k: getattr(params, k) for k in params.__dataclass_fields__}}
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
