"""tf.data input for pretraining: the masked TFRecords written by ``PretrainingDataGen``.

Files are interleaved in parallel, shuffled with a seeded buffer, batched with
``drop_remainder=True`` (static shapes: what TPUs and XLA need) and prefetched.
"""
from __future__ import annotations

from typing import Dict, List, Optional, Sequence

import tensorflow as tf

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


def _compression(files: Sequence[str]) -> Optional[str]:
    kinds = {f.endswith(".gz") for f in files}
    if len(kinds) > 1:
        raise ValueError("mixed GZIP and uncompressed TFRecord files: " + ", ".join(files[:4]))
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
        raise FileNotFoundError(f"no TFRecord files match {list(file_patterns)}")
    compression = _compression(files)
    ds = tf.data.Dataset.from_tensor_slices(files)
    if input_context is not None and input_context.num_input_pipelines > 1:
        ds = ds.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
    if training:
        ds = ds.shuffle(len(files), seed=seed, reshuffle_each_iteration=True).repeat()
    ds = ds.interleave(lambda f: tf.data.TFRecordDataset(f, compression_type=compression),
                       cycle_length=min(len(files), 16), num_parallel_calls=tf.data.AUTOTUNE,
                       deterministic=True)
    if training:
        ds = ds.shuffle(shuffle_buffer, seed=seed, reshuffle_each_iteration=True)
    ds = ds.batch(batch_size, drop_remainder=training)
    ds = ds.map(lambda s: parse_batch(s, max_seq_length, max_predictions_per_seq),
                num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    return ds.prefetch(tf.data.AUTOTUNE)
