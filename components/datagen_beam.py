"""Beam pipeline: documents → masked SOP instances → shuffled, sharded TFRecords + statistics.

Memory stays bounded at any corpus size (the official script holds every instance in RAM):

* file names are the only elements before generation; read → tokenize → instances → serialize is one fused
  stage that streams documents one at a time, so no documents are materialized between stages;
* serialized records never become Beam elements: each bundle appends them, with a deterministic random
  shuffle key, to one spill file per (split, shard) and emits only the file names. The per-shard writer
  reads the keys and offsets of its spill files (24 bytes a record), sorts them and copies the payloads
  in key order into the TFRecord file: a global shuffle in bounded memory, with no per-record Beam cost;
* the random-document pools (official SOP negatives, NSP) are deterministic samples of documents, one per
  split and drawn from that split's documents only (so no eval text enters a training instance, nor the
  reverse), each bounded in documents and in characters: a first read emits only (split, key, id, file,
  characters) per document, the samples are chosen from those, and a second read tokenizes just the chosen
  documents, in parallel, into part files that one step joins into a pool file of compact
  :class:`DocumentPool` s; each generating worker loads it once (pooled documents are not tokenized again).
  The tokens never pass through Beam: as elements and a side input, Beam's encoded buffers, state copies and
  cache held about ten times the pool (measured: +80 to +230 MiB of peak RSS, growing with the corpus).

The eval split is a held-out ``eval_fraction`` of the documents (by hash), or, when ``eval_document_files``
are given (the paper's practice: documents of the SQuAD and RACE dev sets, see
:mod:`components.datagen.dev_documents`), exactly those documents, every corpus document then training.

BERT's two-phase sequence length (``long_params``, off by default): the generating stage also builds each
document's instances at the long length, in the same pass over the same documents, into the ``train_long`` /
``eval_long`` splits (same document split, same random-document pools, seeds of their own); the short splits
are byte for byte what a run without it writes.

Every random choice derives from (seed, document id, pass) and shard files are sorted on a key derived
the same way, so the bytes do not depend on how many workers ran, on bundle boundaries or on order.
TFRecords are framed here (CRC-32C from ``google_crc32c``, GZIP via zlib) so workers need no TensorFlow.

Document ids are ``<shard file name>:<index in file>``: the documents artifact is itself
deterministic, so ids are stable across runs.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import pickle
import posixpath
import struct
import uuid
import zlib
from array import array
from collections import OrderedDict
from typing import Dict, Iterable, Iterator, List, Optional, Tuple

import apache_beam as beam
import google_crc32c
import numpy as np
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems
from apache_beam.transforms.window import GlobalWindow
from apache_beam.utils.timestamp import MIN_TIMESTAMP
from apache_beam.utils.windowed_value import WindowedValue

from components.datagen.generate import generate_for_document, tokenize_document
from components.datagen.instances import InstanceParams, VocabInfo
from components.datagen.pool import DocumentPool
from components.datagen.stats import InstanceStats
from components.text.documents import parse_text_blocks
from components.text.errors import CorruptInputError
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


def _h64(*parts: object) -> int:
    return int.from_bytes(hashlib.sha1("\x1f".join(map(str, parts)).encode("utf-8")).digest()[:8], "big")


def long_seed(seed: int) -> int:
    """The seed of the long instances (their passes' generators and shuffle keys): derived from the explicit seed,
    and other than it, so the long set is not the short set's random choices at another length."""
    return _h64("long-phase", seed) >> 1  # 63 bits: a non-negative int64


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


# Live progress in the Dataflow UI / the runner's metrics (namespace "albert.datagen"): files and documents read,
# sentences, input tokens, instances per split, instance tokens, and documents skipped (empty after tokenizing,
# or too short to give an instance). PretrainingDataGen also records them from the run's metrics.
COUNTERS = {name: beam.metrics.Metrics.counter("albert.datagen", name) for name in (
    "files", "documents", "sentences", "input_tokens", "instances_train", "instances_eval", "instance_tokens",
    "skipped_empty_documents", "skipped_too_short_documents",
    # the long phase's instances (only with ``long_params``; a counter never incremented is not reported)
    "instances_train_long", "instances_eval_long", "instance_tokens_long")}


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


class SplitRule:
    """Which split a document belongs to: every document of an ``eval_files`` file is "eval"; otherwise the
    held-out ``eval_fraction`` by hash (none when eval files are given or the fraction is 0)."""

    def __init__(self, seed: int, eval_fraction: float, eval_files: Iterable[str] = ()):
        self.seed = seed
        self.eval_files = frozenset(eval_files)
        self.eval_fraction = 0.0 if self.eval_files else float(eval_fraction)

    def __call__(self, path: str, doc_id: str) -> str:
        if path in self.eval_files:
            return "eval"
        return split_of(doc_id, self.seed, self.eval_fraction) if self.eval_fraction > 0 else "train"


def _pool_keys(path: str, seed: int, split_rule: SplitRule) -> Iterator[Tuple[str, Tuple[int, str, str, int]]]:
    """``(split, (pool key, doc_id, file, characters))`` per document: small elements, whatever the document
    size, keyed for one pool per split."""
    for doc_id, sentences in read_documents(path):
        yield split_rule(path, doc_id), (_h64("pool", seed, doc_id), doc_id, path, sum(map(len, sentences)))


def select_pool(candidates: List[Tuple[int, str, str, int]], max_chars: int) -> Dict[str, int]:
    """The pool: candidates in ascending (key, doc_id) order while their characters fit in ``max_chars``,
    but at least two (a document never draws itself, so one pooled document could serve no one). Returns
    {doc_id: key}."""
    chosen: Dict[str, int] = {}
    chars = 0
    for key, doc_id, _, n_chars in sorted(candidates, key=lambda t: (t[0], t[1])):
        if len(chosen) >= 2 and chars + n_chars > max_chars:
            break
        chosen[doc_id] = key
        chars += n_chars
    return chosen


def _make_dirs(path: str) -> None:
    try:
        FileSystems.mkdirs(path)
    except Exception:  # exists (another worker made it) or the filesystem has no folders (gs://)
        pass


class _TokenizeSplitPoolDocuments(_Tokenizing):
    """One file → its documents chosen for their split's pool, tokenized and written to one part file in
    ``work_dir`` as ``[(split, key, doc_id, TokenizedDocument)]``; the element emitted is only the part's path."""

    def __init__(self, spm_model_path: str, do_lower_case: bool, work_dir: str):
        super().__init__(spm_model_path, do_lower_case)
        self._work_dir = work_dir

    def setup(self):
        super().setup()
        _make_dirs(self._work_dir)

    def process(self, path: str, chosen: Dict[str, Dict[str, int]]):
        prefix = posixpath.basename(path) + ":"
        wanted = {doc_id: (split, key) for split, ids in chosen.items() for doc_id, key in ids.items()
                  if doc_id.startswith(prefix)}
        if not wanted:
            return
        found = []
        for doc_id, sentences in read_documents(path):
            if doc_id in wanted:
                tokens = tokenize_document(self.tokenizer, sentences, self.vocab)
                if len(tokens):
                    split, key = wanted[doc_id]
                    found.append((split, key, doc_id, tokens))
        if found:
            yield _write_pickle(self._work_dir, "pool-part", found)


def _write_pickle(work_dir: str, prefix: str, value) -> str:
    """``value`` pickled into a new file of ``work_dir`` (a retried bundle's file is simply never read)."""
    path = posixpath.join(work_dir, f"{prefix}-{uuid.uuid4().hex}.pkl")
    with FileSystems.create(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
        f.write(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))
    return path


def _read_pickle(path: str):
    with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
        return pickle.loads(f.read())


def _build_pool(items: List[Tuple[int, str, object]]) -> DocumentPool:
    items = sorted(items, key=lambda t: (t[0], t[1]))
    return DocumentPool([doc_id for _, doc_id, _ in items], [tokens for _, _, tokens in items])


def _build_split_pools(part_paths: List[str], work_dir: str) -> str:
    """Part files → one pool file holding ``{split: DocumentPool}`` (each in (key, doc_id) order); its path."""
    by_split: Dict[str, List[Tuple[int, str, object]]] = {}
    for part in sorted(part_paths):
        for split, key, doc_id, tokens in _read_pickle(part):
            by_split.setdefault(split, []).append((key, doc_id, tokens))
    pools = {split: _build_pool(found) for split, found in sorted(by_split.items())}
    del by_split
    return _write_pickle(work_dir, "pools", pools)


def load_pools(pools_file: str) -> Dict[str, DocumentPool]:
    """The ``{split: DocumentPool}`` of a pool file written by :func:`split_document_pools`."""
    return _read_pickle(pools_file)


def split_document_pools(files: beam.PCollection, spm_model_path: str, do_lower_case: bool, seed: int,
                         max_documents: int, max_chars: int, split_rule: SplitRule,
                         work_dir: str) -> beam.PCollection:
    """File names → the path of one pool file (in ``work_dir``) holding ``{split: DocumentPool}``: per split,
    that split's documents with the smallest pool keys, at most ``max_documents`` of them and ``max_chars``
    characters (at least two when the split has two). A split's instances draw random documents from its own
    pool only.

    Only (key, id, file, characters) tuples reach the combiner; only the chosen documents are read again and
    tokenized (in parallel, per file) into part files, and Beam carries nothing but file names: no step holds
    more than the pool itself (see the module docstring).
    """
    chosen = (
        files
        | "PoolKeys" >> beam.FlatMap(_pool_keys, seed, split_rule)
        | "SmallestKeys" >> beam.combiners.Top.SmallestPerKey(max_documents, key=lambda t: (t[0], t[1]))
        | "FitPoolBudget" >> beam.MapTuple(lambda split, found: (split, select_pool(found, max_chars)))
        | "ChosenBySplit" >> beam.combiners.ToDict()
    )
    return (
        files
        | "TokenizePool" >> beam.ParDo(_TokenizeSplitPoolDocuments(spm_model_path, do_lower_case, work_dir),
                                       beam.pvalue.AsSingleton(chosen))
        | "CollectPoolParts" >> beam.combiners.ToList()
        | "BuildPool" >> beam.Map(_build_split_pools, work_dir)
    )


_SPILL_HEADER = struct.Struct("<QI")  # shuffle key, payload length
_EMPTY_POOL = DocumentPool([], [])


class _GenerateInstances(_Tokenizing):
    """Per file, per document: split, tokenize, build the instances of every pass and append each serialized
    example, with its deterministic shuffle key, to this bundle's spill file of its (split, shard).

    Records never become Beam elements: the output is one ``((split, shard), spill path)`` per spill file
    at the end of the bundle (a retried bundle's files are simply never referenced), plus one
    :class:`InstanceStats` per document on the ``stats_<split>`` outputs. So no stage holds the records in
    memory and per-instance Beam overhead (coders, GroupByKey buffers) is gone.
    """

    def __init__(self, spm_model_path: str, do_lower_case: bool, params: InstanceParams, seed: int,
                 dupe_factor: int, shards: Dict[str, int], split_rule: SplitRule, spill_dir: str,
                 long_params: Optional[InstanceParams] = None):
        super().__init__(spm_model_path, do_lower_case)
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

    def process(self, path: str, pools_file: Optional[str] = None):
        # The element is a file, read here: documents never become Beam elements. (As the output of a separate
        # FlatMap they were buffered whole whenever the runner did not fuse it with this side-input ParDo.)
        if pools_file is not None and pools_file != self._pools_file:  # loaded once per worker
            self._pools, self._pools_file = load_pools(pools_file), pools_file
        for doc_id, sentences in read_documents(path):
            split = self._split_rule(path, doc_id)
            pool = None if pools_file is None else self._pools.get(split, _EMPTY_POOL)
            yield from self._document(doc_id, split, sentences, pool)
        COUNTERS["files"].inc()

    def _document(self, doc_id: str, split: str, sentences: List[str], pool: Optional[DocumentPool]):
        ids = pool.get(doc_id) if pool is not None else None  # pooled documents are tokenized already
        if ids is None:
            ids = tokenize_document(self.tokenizer, sentences, self.vocab)
        COUNTERS["documents"].inc()
        COUNTERS["sentences"].inc(len(sentences))
        if not ids:
            COUNTERS["skipped_empty_documents"].inc()
            return
        COUNTERS["input_tokens"].inc(ids.num_tokens)  # not len(flat): a pooled document is a view into the pool
        # The split's own pool; a split with a single document draws from that document, as officially.
        random_document = pool.sampler(doc_id, alone=ids) if pool is not None else None
        stats = self._instances(doc_id, ids, split, self._seed, self._params, random_document)
        COUNTERS[f"instances_{split}"].inc(stats.instances)
        COUNTERS["instance_tokens"].inc(stats.tokens)
        if not stats.instances:
            COUNTERS["skipped_too_short_documents"].inc()
        yield beam.pvalue.TaggedOutput(f"stats_{split}", stats)
        if self._long_params is not None:  # the same document, its split's long twin, seeds of their own
            long_split = split + LONG_SUFFIX
            stats = self._instances(doc_id, ids, long_split, long_seed(self._seed), self._long_params,
                                    random_document)
            COUNTERS[f"instances_{long_split}"].inc(stats.instances)
            COUNTERS["instance_tokens_long"].inc(stats.tokens)
            yield beam.pvalue.TaggedOutput(f"stats_{long_split}", stats)

    def _instances(self, doc_id: str, ids, split: str, seed: int, params: InstanceParams,
                   random_document) -> InstanceStats:
        """Every pass's instances of one document with ``seed`` and ``params``, appended to ``split``'s spill files
        under shuffle keys from (``seed``, document, index); their statistics."""
        num_shards = self._shards[split]
        stats = InstanceStats()
        pending: Dict[int, List[bytes]] = {}
        for i, (payload, instance) in enumerate(generate_for_document(
                doc_id, ids, seed, self._dupe_factor, params, self.vocab, random_document)):
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


def _masked_crc32c(data: bytes) -> int:
    crc = google_crc32c.value(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def tfrecord_frame(payload: bytes) -> bytes:
    """One TFRecord: length (u64), masked CRC-32C of the length, data, masked CRC-32C of the data."""
    length = struct.pack("<Q", len(payload))
    return b"".join((length, struct.pack("<I", _masked_crc32c(length)), payload,
                     struct.pack("<I", _masked_crc32c(payload))))


class _WriteTFRecordShard(beam.DoFn):
    """One (split, shard): read the record index of its spill files (keys and offsets only, 24 bytes a record),
    sort by shuffle key (ties, which need a 64-bit hash collision, by payload) and write the payloads in that
    order as TFRecords. TensorFlow is not needed: framing is CRC-32C, GZIP is zlib with a fixed header."""

    _OPEN_FILES = 64

    def __init__(self, output_dirs: Dict[str, str], shards: Dict[str, int], compression: str,
                 compression_level: int = 6):
        self._output_dirs = dict(output_dirs)
        self._shards = dict(shards)
        self._compression = compression
        self._level = compression_level

    def process(self, element: Tuple[Tuple[str, int], Iterable[str]]):
        (split, shard), paths = element
        paths = sorted(set(paths))
        keys, files, offsets, lengths = array("Q"), array("I"), array("Q"), array("I")
        for fi, path in enumerate(paths):
            with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
                pos = 0
                while True:
                    header = f.read(_SPILL_HEADER.size)
                    if not header:
                        break
                    key, length = _SPILL_HEADER.unpack(header)
                    pos += _SPILL_HEADER.size
                    keys.append(key)
                    files.append(fi)
                    offsets.append(pos)
                    lengths.append(length)
                    pos += length
                    f.seek(pos)
        keys_np = np.frombuffer(keys, dtype=np.uint64) if len(keys) else np.zeros(0, np.uint64)
        order = np.argsort(keys_np, kind="stable").tolist()
        handles: "OrderedDict[int, object]" = OrderedDict()

        def payload(r: int) -> bytes:
            fi = files[r]
            f = handles.pop(fi, None)
            if f is None:
                if len(handles) >= self._OPEN_FILES:
                    handles.popitem(last=False)[1].close()
                f = FileSystems.open(paths[fi], compression_type=CompressionTypes.UNCOMPRESSED)
            handles[fi] = f
            f.seek(offsets[r])
            return f.read(lengths[r])

        n = self._shards[split]
        suffix = ".gz" if self._compression == "GZIP" else ""
        out_path = posixpath.join(self._output_dirs[split], f"data_tfrecord-{shard:05d}-of-{n:05d}{suffix}")
        gz = zlib.compressobj(self._level, zlib.DEFLATED, 31) if self._compression == "GZIP" else None
        try:
            with FileSystems.create(out_path, compression_type=CompressionTypes.UNCOMPRESSED) as out:
                buf: List[bytes] = []
                size = 0
                i = 0
                while i < len(order):
                    j = i + 1
                    while j < len(order) and keys[order[j]] == keys[order[i]]:
                        j += 1
                    records = [payload(r) for r in order[i:j]]
                    if j - i > 1:
                        records.sort()
                    for rec in records:
                        frame = tfrecord_frame(rec)
                        buf.append(frame)
                        size += len(frame)
                    if size >= 1 << 20:
                        data = b"".join(buf)
                        out.write(gz.compress(data) if gz else data)
                        buf, size = [], 0
                    i = j
                data = b"".join(buf)
                out.write((gz.compress(data) + gz.flush()) if gz else data)
        finally:
            for f in handles.values():
                f.close()
        yield split, shard


def _remove_spill_dir(_, spill_dir: str) -> None:
    try:
        found = FileSystems.match([posixpath.join(spill_dir, "*")])[0].metadata_list
        if found:
            FileSystems.delete([m.path for m in found])
        if FileSystems.exists(spill_dir):
            FileSystems.delete([spill_dir])
    except Exception:  # best effort: a leftover spill folder is harmless
        pass


def shard_path_glob(split_dir: str, compression: str) -> str:
    return posixpath.join(split_dir, "data_tfrecord-*" + (".gz" if compression == "GZIP" else ""))


def build_pretraining_data(pipeline: beam.Pipeline, document_files: List[str], spm_model_path: str,
                           output_dirs: Dict[str, str], stats_path: str, *, params: InstanceParams,
                           seed: int, dupe_factor: int, num_shards: int, eval_fraction: float,
                           compression: str = "GZIP", compression_level: int = 6, do_lower_case: bool = True,
                           spill_dir: Optional[str] = None, random_pool_size: int = RANDOM_POOL_SIZE,
                           random_pool_max_chars: int = RANDOM_POOL_MAX_CHARS,
                           eval_document_files: Optional[List[str]] = None,
                           long_params: Optional[InstanceParams] = None) -> None:
    """Add the data-generation stages to ``pipeline``.

    ``output_dirs`` maps split name ("train"/"eval", and "train_long"/"eval_long" with ``long_params``) to its
    folder; ``stats_path`` receives the JSON statistics of every split. ``eval_fraction`` 0 puts every document
    in "train". ``spill_dir``: where
    unsorted records wait for their shard's sort, and the random-document pool for the generators (default
    ``.datagen-spill`` next to the train folder; removed at the end). ``random_pool_size`` /
    ``random_pool_max_chars``: at most this many documents and characters in each split's random-document pool
    (official/nsp modes). ``eval_document_files``: documents (same format) that form the eval split instead of
    the held-out ``eval_fraction`` (which is then ignored: every corpus document trains), e.g. the SQuAD/RACE
    dev documents of :mod:`components.datagen.dev_documents`. ``long_params`` (BERT's two-phase sequence length):
    each document also gives instances with these parameters into its split's long twin ("train_long",
    "eval_long"), in the same generating pass over the documents (the same document split and random-document
    pools), with seeds of their own (:func:`long_seed`); the short splits' bytes are what they are without it.

    Stages: file names → read + tokenize + instances + serialize (one fused stage; its only side input is
    the path of the random-document pool file, chosen from per-document keys and then tokenized by two
    separate reads of the files, so documents are never materialized between stages) → spill files →
    per-shard sort and TFRecord write.
    """
    if not document_files:
        raise FileNotFoundError("no document files given to pretraining-data generation")
    eval_document_files = list(eval_document_files or [])
    by_name: Dict[str, str] = {}
    for path in list(document_files) + eval_document_files:
        name = posixpath.basename(path)
        if name in by_name:  # document ids are "<file name>:<index>": they would collide
            raise ValueError(f"two inputs have the same name, {by_name[name]} and {path} (the same file given twice, "
                             f"or two files named alike): document ids (file name:index) must be unique")
        by_name[name] = path
    if spill_dir is None:
        spill_dir = posixpath.join(posixpath.dirname(output_dirs["train"].rstrip("/")), ".datagen-spill")
    split_rule = SplitRule(seed, eval_fraction, eval_document_files)
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
    side = []
    if params.sop_mode in ("official", "nsp"):
        pools_file = split_document_pools(files, spm_model_path, do_lower_case, seed, random_pool_size,
                                          random_pool_max_chars, split_rule, spill_dir)
        side = [beam.pvalue.AsSingleton(pools_file)]
    generated = (
        files
        | "Generate" >> beam.ParDo(
            _GenerateInstances(spm_model_path, do_lower_case, params, seed, dupe_factor, shards, split_rule,
                               spill_dir, long_params), *side).with_outputs(*[f"stats_{s}" for s in splits],
                                                                            main="spills")
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
    _ = (
        stats_parts
        | "FlattenStats" >> beam.Flatten()
        | "CollectStats" >> beam.combiners.ToDict()
        | "WriteStats" >> beam.Map(_write_stats, stats_path, params, seed, dupe_factor, long_params)
    )


def _write_stats(per_split: Dict[str, Dict], stats_path: str, params: InstanceParams, seed: int,
                 dupe_factor: int, long_params: Optional[InstanceParams] = None) -> None:
    if not per_split.get("train", {}).get("instances"):
        raise ValueError("pretraining-data generation produced no training instances: the documents are empty or "
                         "too short for max_seq_length")
    summary = {"splits": per_split, "seed": seed, "dupe_factor": dupe_factor,
               "params": {k: getattr(params, k) for k in params.__dataclass_fields__}}
    if long_params is not None:  # the long splits' own parameters and seed (their statistics are in "splits")
        summary["long_params"] = {k: getattr(long_params, k) for k in long_params.__dataclass_fields__}
        summary["long_seed"] = long_seed(seed)
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
