"""tf.data input for pretraining: the masked TFRecords written by ``PretrainingDataGen``.

Training input (:func:`make_pretraining_dataset`) is *seekable*: the record at stream position ``p`` is a pure
function of (seed, p, the files), so the batch of optimizer step N is records ``[N*B, (N+1)*B)`` whatever the
number of micro-batches, replicas or input pipelines, and a resumed run starts there without reading what came
before (see docs/resume.md, "Resume guarantee"):

* epoch ``e`` is the files in a seeded order (``file_order(seed, e)``) read one after another;
* the endless stream of epochs is cut into blocks of ``shuffle_block`` records and each block is permuted with
  a seed derived from (seed, block index) — the block shuffle replaces ``Dataset.shuffle``'s sliding buffer,
  whose contents depend on everything read before;
* to start at position ``p``, whole files are skipped by their record counts (counted once, cached), and only
  the records between the start of ``p``'s block and ``p`` are read and dropped (< ``shuffle_block``
  plus one file's head, the same refill any shuffle buffer pays).

Held-out input for pretraining (:func:`make_eval_dataset`) reads the files in order, padded to whole global
batches; :func:`make_dataset` with ``training=False`` reads them in order for offline evaluation.
"""
from __future__ import annotations

import json
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np
import tensorflow as tf

from config.errors import InputError, MissingInputError

# The ``tf.data`` functions here are plain TensorFlow ops: traced as written, not rewritten by autograph (whose
# conversion of each one cost time in every process that builds an input pipeline; trainer/export.py says more).
plain = tf.autograph.experimental.do_not_convert

INPUT_KEYS = ("input_ids", "input_mask", "segment_ids", "masked_lm_positions")
LABEL_KEYS = ("masked_lm_ids", "masked_lm_weights", "next_sentence_labels")


def feature_spec(max_seq_length: int, max_predictions_per_seq: int) -> Dict[str, tf.io.FixedLenFeature]:
    """The official ALBERT feature names and shapes (padding 0)."""
    L, P = max_seq_length, max_predictions_per_seq
    return {
        "input_ids": tf.io.FixedLenFeature([L], tf.int64),
        "input_mask": tf.io.FixedLenFeature([L], tf.int64),
        "segment_ids": tf.io.FixedLenFeature([L], tf.int64),
        "token_boundary": tf.io.FixedLenFeature([L], tf.int64),
        "masked_lm_positions": tf.io.FixedLenFeature([P], tf.int64),
        "masked_lm_ids": tf.io.FixedLenFeature([P], tf.int64),
        "masked_lm_weights": tf.io.FixedLenFeature([P], tf.float32),
        "next_sentence_labels": tf.io.FixedLenFeature([1], tf.int64),
    }


def expand_files(patterns: Sequence[str]) -> List[str]:
    files: List[str] = []
    for pattern in patterns:
        files.extend(sorted(tf.io.gfile.glob(pattern)))
    return files


def short_lived(ds: tf.data.Dataset) -> tf.data.Dataset:
    """``ds`` with tf.data's autotuner off, for pipelines whose iterators are opened and dropped again and again
    (each held-out evaluation, each fine-tuning run, the precision probe's constant batch).

    Why: dropping an iterator waits for the autotuner's thread, which sees the cancellation only when its current
    sleep ends, and that sleep appears to grow with the iterator's age (waits up to a minute). Measured: a
    fine-tuning run's iterator took 33-39 s to drop after 80 RACE steps, a held-out evaluation's 4 s; with the
    autotuner off, 0.00 s (docs/performance.md, "Measured numbers"). These pipelines need no tuning: the work per element is a
    slice, or a parse of a few hundred records. The training stream keeps the tuner: it is opened once per phase,
    its throughput matters on accelerator hosts, and its drop measured 0.01 s after 5 and 30 s of use."""
    options = tf.data.Options()
    options.autotune.enabled = False
    return ds.with_options(options)


def _compression(files: Sequence[str]) -> Optional[str]:
    kinds = {f.endswith(".gz") for f in files}
    if len(kinds) > 1:
        raise InputError("mixed GZIP and uncompressed TFRecord files: " + ", ".join(files[:4]))
    return "GZIP" if kinds == {True} else None


def parse_batch(serialized: tf.Tensor, max_seq_length: int, max_predictions_per_seq: int):
    """Serialized examples [B] → (inputs dict, labels dict) as int32/float32 tensors."""
    parsed = tf.io.parse_example(serialized, feature_spec(max_seq_length, max_predictions_per_seq))
    parsed = {k: (tf.cast(v, tf.int32) if v.dtype == tf.int64 else v) for k, v in parsed.items()}
    return {k: parsed[k] for k in INPUT_KEYS}, {k: parsed[k] for k in LABEL_KEYS}


def make_dataset(file_patterns: Sequence[str], batch_size: int, max_seq_length: int, max_predictions_per_seq: int,
                 *, training: bool, seed: int, shuffle_buffer: int = 10_000,
                 input_context: Optional[tf.distribute.InputContext] = None) -> tf.data.Dataset:
    """Batched (inputs, labels); repeats forever when ``training``."""
    files = expand_files(file_patterns)
    if not files:
        raise MissingInputError(f"no TFRecord files match {list(file_patterns)}")
    compression = _compression(files)
    ds = tf.data.Dataset.from_tensor_slices(files)
    if input_context is not None and input_context.num_input_pipelines > 1:
        ds = ds.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
    if training:
        ds = ds.shuffle(len(files), seed=seed, reshuffle_each_iteration=True).repeat()
    ds = ds.interleave(plain(lambda f: tf.data.TFRecordDataset(f, compression_type=compression)),
                       cycle_length=min(len(files), 16), num_parallel_calls=tf.data.AUTOTUNE,
                       deterministic=True)
    if training:
        ds = ds.shuffle(shuffle_buffer, seed=seed, reshuffle_each_iteration=True)
    ds = ds.batch(batch_size, drop_remainder=training)
    ds = ds.map(plain(lambda s: parse_batch(s, max_seq_length, max_predictions_per_seq)),
                num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    return ds.prefetch(tf.data.AUTOTUNE)


def make_eval_dataset(file_patterns: Sequence[str], batch_size: int, max_seq_length: int,
                      max_predictions_per_seq: int, *, num_records: int, global_batch_size: int,
                      input_context: Optional[tf.distribute.InputContext] = None) -> tf.data.Dataset:
    """The first ``num_records`` held-out records (files in sorted order), padded to whole global batches.

    Labels carry ``row_weights`` (1 real, 0 padding). Pipeline ``i`` of ``P`` keeps positions ``i`` modulo ``P``
    and batches ``batch_size`` (per replica), so every replica of every host runs the same number of steps and
    the replicas of step N together hold positions ``[N*G, (N+1)*G)``: the metrics do not depend on the layout.
    """
    files = expand_files(file_patterns)
    if not files:
        raise MissingInputError(f"no TFRecord files match {list(file_patterns)}")
    padded = -(-int(num_records) // global_batch_size) * global_batch_size
    ds = tf.data.TFRecordDataset(files, compression_type=_compression(files)).take(num_records)
    ds = ds.batch(256).map(plain(lambda s: parse_batch(s, max_seq_length, max_predictions_per_seq))).unbatch()
    ds = ds.map(plain(lambda inputs, labels: (inputs, {**labels, "row_weights": tf.constant(1.0)})))
    zeros = tf.nest.map_structure(lambda s: tf.zeros(s.shape, s.dtype), ds.element_spec)
    ds = ds.concatenate(tf.data.Dataset.from_tensors(zeros).repeat(padded - num_records))
    if input_context is not None and input_context.num_input_pipelines > 1:
        ds = ds.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
    return short_lived(ds.batch(batch_size, drop_remainder=True).prefetch(2))


# ---------------------------------------------------------------------------------------------------------------
# Seekable training order
# ---------------------------------------------------------------------------------------------------------------
_FILE_ORDER_SALT = 0x0F11E5
_BLOCK_SALT = 0xB10C


def _permutation(n, seed: int, salt: int, index) -> tf.Tensor:
    """A permutation of ``range(n)`` that depends only on (seed, salt, index) (Philox: same on every host)."""
    key = tf.stack([tf.constant(seed, tf.int64) * 1_000_003 + salt, tf.cast(index, tf.int64)])
    return tf.argsort(tf.random.stateless_uniform([n], seed=key, alg="philox"), stable=True)


def file_order(num_files: int, seed: int, epoch: int) -> List[int]:
    """Indices of the (sorted) input files in the order epoch ``epoch`` reads them."""
    return [int(i) for i in _permutation(num_files, seed, _FILE_ORDER_SALT, epoch).numpy()]


def count_records(files: Sequence[str]) -> List[int]:
    """Records per TFRecord file, counted in parallel (one decompressing pass). A truncated or corrupt file (the
    training data is the user's: ``pretrain --examples``) is an :class:`config.InputError` naming it."""
    compression = _compression(files)

    def counted(paths):
        return tf.data.Dataset.from_tensor_slices(list(paths)).map(
            plain(lambda f: tf.data.TFRecordDataset(f, compression_type=compression).reduce(
                tf.constant(0, tf.int64), plain(lambda n, _: n + 1))),
            num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)

    try:
        return [int(c) for c in counted(files).as_numpy_iterator()]
    except (tf.errors.DataLossError, tf.errors.NotFoundError) as exc:
        for path in files:  # which file: the parallel count does not say
            try:
                list(counted([path]).as_numpy_iterator())
            except (tf.errors.DataLossError, tf.errors.NotFoundError) as one:
                raise InputError(f"{path}: not a readable TFRecord file ({one.message.splitlines()[0]})") from one
        raise InputError(f"{', '.join(files[:4])}: not readable TFRecord files ({exc.message.splitlines()[0]})"
                         ) from exc


def record_counts(files: Sequence[str], cache_path: Optional[str] = None, write: bool = True) -> List[int]:
    """:func:`count_records`, cached in ``cache_path`` (JSON keyed by path, checked against the file size).

    The seek needs every file's record count; counting reads the data once, so a resumed run reuses the counts
    its first attempt wrote (next to the checkpoints). ``write=False`` (a cluster's non-chief tasks) reads the
    cache but leaves writing it to the chief.
    """
    cached: Dict[str, Dict[str, int]] = {}
    if cache_path and tf.io.gfile.exists(cache_path):
        try:
            with tf.io.gfile.GFile(cache_path) as f:
                cached = json.load(f)
        except (ValueError, tf.errors.OpError):
            cached = {}
    sizes = {f: tf.io.gfile.stat(f).length for f in files}
    missing = [f for f in files if cached.get(f, {}).get("bytes") != sizes[f]]
    if missing:
        for f, n in zip(missing, count_records(missing)):
            cached[f] = {"bytes": sizes[f], "records": n}
        if cache_path and write:
            tmp = cache_path + ".tmp"
            with tf.io.gfile.GFile(tmp, "w") as f:
                f.write(json.dumps(cached, indent=1, sort_keys=True))
            tf.io.gfile.rename(tmp, cache_path, overwrite=True)
    return [cached[f]["records"] for f in files]


def locate(position: int, counts: Sequence[int], seed: int) -> Tuple[int, int, int]:
    """Stream position → (epoch, index in that epoch's file order, records to skip in that file)."""
    total = int(sum(counts))
    if total <= 0:
        raise InputError("the examples' Split-train files hold no records (make-pretraining-data --output, or the "
                         "PretrainingDataGen output)")
    epoch, offset = divmod(int(position), total)
    order = file_order(len(counts), seed, epoch)
    for slot, file_index in enumerate(order):
        if offset < counts[file_index]:
            return epoch, slot, offset
        offset -= counts[file_index]
    raise AssertionError("unreachable: offset < total")


def record_stream(files: Sequence[str], counts: Sequence[int], seed: int, start: int = 0) -> tf.data.Dataset:
    """Serialized records of the endless, unshuffled stream (epochs of seeded file orders) from ``start`` on."""
    files = list(files)
    compression = _compression(files)
    epoch, slot, skip = locate(start, counts, seed)
    order = file_order(len(files), seed, epoch)
    first = tf.data.Dataset.from_tensor_slices(
        (tf.constant([files[i] for i in order[slot:]]), tf.constant([skip] + [0] * (len(order) - slot - 1), tf.int64)))
    files_t = tf.constant(files)
    later = tf.data.Dataset.range(epoch + 1, np.iinfo(np.int64).max).flat_map(
        plain(lambda e: tf.data.Dataset.from_tensor_slices(
            (tf.gather(files_t, _permutation(len(files), seed, _FILE_ORDER_SALT, e)),
             tf.zeros([len(files)], tf.int64)))))
    return first.concatenate(later).flat_map(
        plain(lambda f, n: tf.data.TFRecordDataset(f, compression_type=compression, buffer_size=1 << 20).skip(n)))


def shuffled_records(files: Sequence[str], counts: Sequence[int], seed: int, start: int = 0,
                     shuffle_block: int = 10_000) -> tf.data.Dataset:
    """The training order: :func:`record_stream` with each block of ``shuffle_block`` records permuted."""
    block = max(int(shuffle_block), 1)
    first_block = int(start) // block
    ds = record_stream(files, counts, seed, first_block * block).batch(block, drop_remainder=True)
    ds = tf.data.Dataset.zip((tf.data.Dataset.range(first_block, np.iinfo(np.int64).max), ds))
    ds = ds.map(plain(lambda k, records: tf.gather(records, _permutation(block, seed, _BLOCK_SALT, k))))
    return ds.unbatch().skip(int(start) - first_block * block)


def make_pretraining_dataset(file_patterns: Sequence[str], batch_size: int, max_seq_length: int,
                             max_predictions_per_seq: int, *, seed: int, start: int = 0, shuffle_block: int = 10_000,
                             input_context: Optional[tf.distribute.InputContext] = None,
                             counts: Optional[Sequence[int]] = None,
                             counts_cache: Optional[str] = None) -> tf.data.Dataset:
    """Endless batches of ``batch_size`` (per replica) from stream position ``start`` (a record index).

    With several input pipelines, pipeline ``i`` of ``P`` keeps the records whose position is ``i`` modulo ``P``
    (``start`` must be a multiple of ``P``): each global micro-batch of G records is then the same G records
    for any number of pipelines and replicas. Every pipeline reads the whole stream (single-host TPUs and GPUs
    have one pipeline; multi-host readers pay (P-1)/P extra I/O for a global order).
    """
    files = expand_files(file_patterns)
    if not files:
        raise MissingInputError(f"no TFRecord files match {list(file_patterns)}")
    if counts is None:
        counts = record_counts(files, counts_cache)
    ds = shuffled_records(files, counts, seed, start, shuffle_block)
    if input_context is not None and input_context.num_input_pipelines > 1:
        if start % input_context.num_input_pipelines:
            raise ValueError(f"start {start} is not a multiple of {input_context.num_input_pipelines} pipelines")
        ds = ds.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
    ds = ds.batch(batch_size, drop_remainder=True)
    ds = ds.map(plain(lambda s: parse_batch(s, max_seq_length, max_predictions_per_seq)),
                num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    return ds.prefetch(tf.data.AUTOTUNE)
