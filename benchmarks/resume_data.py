"""What a resumable data order costs: checkpointing the tf.data iterator vs. the seekable order.

Writes paper-shaped records (max_seq_length 512, 20 predictions, GZIP, realistic id ranges) and measures
* the reshuffling pipeline's iterator in a ``tf.train.Checkpoint`` (shuffle buffer ``--buffer`` records,
  batch ``--batch``): checkpoint bytes, save and restore seconds;
* ``input_pipeline.make_pretraining_dataset``: counting the records once, the first batch from position 0 and
  from a position deep in the data (the resume), and steady-state throughput of both pipelines.

    .venv/bin/python -m benchmarks.resume_data --records 24000 --files 8 --batch 4096
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time

import numpy as np

import trainer  # noqa: F401
import tensorflow as tf

from trainer import input_pipeline

L, P = 512, 20


def write_files(folder: str, records: int, files: int, seed: int = 0) -> str:
    rng = np.random.default_rng(seed)
    per = records // files
    for f in range(files):
        with tf.io.TFRecordWriter(os.path.join(folder, f"data_tfrecord-{f:05d}.gz"), options="GZIP") as w:
            for _ in range(per):
                length = int(rng.integers(L // 2, L + 1))
                ids = np.zeros(L, np.int64)
                ids[:length] = rng.integers(5, 30000, length)
                mask = (ids > 0).astype(np.int64)
                seg = np.zeros(L, np.int64)
                seg[length // 2:length] = 1
                feat = {"input_ids": ids, "input_mask": mask, "segment_ids": seg, "token_boundary": mask,
                        "masked_lm_positions": np.sort(rng.integers(1, length, P)),
                        "masked_lm_ids": rng.integers(5, 30000, P)}
                feature = {k: tf.train.Feature(int64_list=tf.train.Int64List(value=v)) for k, v in feat.items()}
                feature["masked_lm_weights"] = tf.train.Feature(float_list=tf.train.FloatList(value=[1.0] * P))
                feature["next_sentence_labels"] = tf.train.Feature(int64_list=tf.train.Int64List(value=[f % 2]))
                w.write(tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString())
    return os.path.join(folder, "data_tfrecord-*")


def reshuffling_dataset(pattern: str, batch: int, buffer: int, seed: int) -> tf.data.Dataset:
    """The previous training input: file shuffle, parallel interleave, sliding shuffle buffer, batch, parse."""
    files = input_pipeline.expand_files([pattern])
    ds = tf.data.Dataset.from_tensor_slices(files).shuffle(len(files), seed=seed).repeat()
    ds = ds.interleave(lambda f: tf.data.TFRecordDataset(f, compression_type="GZIP"), cycle_length=min(len(files), 16),
                       num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    ds = ds.shuffle(buffer, seed=seed).batch(batch, drop_remainder=True)
    ds = ds.map(lambda s: input_pipeline.parse_batch(s, L, P), num_parallel_calls=tf.data.AUTOTUNE)
    return ds.prefetch(tf.data.AUTOTUNE)


def throughput(ds: tf.data.Dataset, batches: int, batch: int) -> float:
    """Records per second over ``batches`` batches of a fresh iterator, first batch excluded."""
    it = iter(ds)
    next(it)
    t = time.perf_counter()
    for _ in range(batches):
        next(it)
    return batches * batch / (time.perf_counter() - t)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=24000)
    ap.add_argument("--files", type=int, default=8)
    ap.add_argument("--batch", type=int, default=4096)
    ap.add_argument("--buffer", type=int, default=10_000)
    ap.add_argument("--steps", type=int, default=6)
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="resume_data-")
    out = {"records": args.records, "files": args.files, "batch": args.batch, "shuffle_buffer": args.buffer}
    try:
        t = time.perf_counter()
        pattern = write_files(work, args.records, args.files)
        out["write_s"] = round(time.perf_counter() - t, 1)
        out["data_bytes"] = sum(os.path.getsize(f) for f in input_pipeline.expand_files([pattern]))

        # 1. Checkpoint the reshuffling pipeline's iterator after a few steps.
        it = iter(reshuffling_dataset(pattern, args.batch, args.buffer, seed=1))
        for _ in range(args.steps):
            next(it)
        time.sleep(2.0)  # let prefetch fill, as it would between two train steps
        ckpt = tf.train.Checkpoint(iterator=it)
        t = time.perf_counter()
        path = ckpt.write(os.path.join(work, "ckpt", "it"))
        out["iterator_checkpoint_save_s"] = round(time.perf_counter() - t, 2)
        out["iterator_checkpoint_bytes"] = sum(os.path.getsize(os.path.join(work, "ckpt", f))
                                               for f in os.listdir(os.path.join(work, "ckpt")))
        fresh = iter(reshuffling_dataset(pattern, args.batch, args.buffer, seed=1))
        t = time.perf_counter()
        tf.train.Checkpoint(iterator=fresh).read(path).assert_consumed()
        next(fresh)
        out["iterator_checkpoint_restore_and_first_batch_s"] = round(time.perf_counter() - t, 2)
        del it, fresh
        out["reshuffling_records_per_s"] = round(throughput(
            reshuffling_dataset(pattern, args.batch, args.buffer, seed=1), args.steps, args.batch))

        # 2. The seekable order: count once, then start anywhere.
        files = input_pipeline.expand_files([pattern])
        t = time.perf_counter()
        counts = input_pipeline.count_records(files)
        out["count_records_s"] = round(time.perf_counter() - t, 2)
        for name, start in (("start_0", 0), ("start_deep", (args.records * 3) // 4 // args.batch * args.batch)):
            ds = input_pipeline.make_pretraining_dataset([pattern], args.batch, L, P, seed=1, start=start,
                                                         shuffle_block=args.buffer, counts=counts)
            t = time.perf_counter()
            it = iter(ds)
            next(it)
            out[f"seekable_first_batch_{name}_s"] = round(time.perf_counter() - t, 2)
            out[f"seekable_{name}_position"] = start
        out["seekable_records_per_s"] = round(throughput(
            input_pipeline.make_pretraining_dataset([pattern], args.batch, L, P, seed=1, shuffle_block=args.buffer,
                                                    counts=counts), args.steps, args.batch))
        out["count_records_per_s"] = round(sum(counts) / out["count_records_s"])
        from trainer.modeling_albert import AlbertConfig, count_parameters

        # For scale: an albert-base checkpoint holds weights + LAMB m and v in float32.
        base = count_parameters(AlbertConfig.named("albert-base"), include_heads=True)["total"]
        out["albert_base_checkpoint_bytes"] = 3 * 4 * base
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
