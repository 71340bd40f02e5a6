"""The training data order is a pure, seekable function of (seed, position, files): what resume relies on."""
import os

import numpy as np
import pytest

import trainer  # noqa: F401  (sets TF_USE_LEGACY_KERAS before TensorFlow)
import tensorflow as tf

from trainer import input_pipeline

L, P = 8, 2
# Uneven files (one GZIP set, one plain set): epochs and blocks cross file boundaries at odd places.
SIZES = (7, 13, 5, 11)


def _example(record_id: int) -> bytes:
    ids = [record_id] + [0] * (L - 1)
    feature = {k: tf.train.Feature(int64_list=tf.train.Int64List(value=ids if k == "input_ids" else [0] * L))
               for k in ("input_ids", "input_mask", "segment_ids", "token_boundary")}
    for k in ("masked_lm_positions", "masked_lm_ids"):
        feature[k] = tf.train.Feature(int64_list=tf.train.Int64List(value=[0] * P))
    feature["masked_lm_weights"] = tf.train.Feature(float_list=tf.train.FloatList(value=[1.0] * P))
    feature["next_sentence_labels"] = tf.train.Feature(int64_list=tf.train.Int64List(value=[record_id % 2]))
    return tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()


def _write(folder, gzip: bool):
    """Files whose record ``r`` of file ``f`` carries id ``1000 * f + r``; returns (pattern, sorted files)."""
    os.makedirs(folder, exist_ok=True)
    paths = []
    for f, n in enumerate(SIZES):
        path = os.path.join(folder, f"data-{f:02d}" + (".gz" if gzip else ""))
        with tf.io.TFRecordWriter(path, options="GZIP" if gzip else None) as w:
            for r in range(n):
                w.write(_example(1000 * f + r))
        paths.append(path)
    return os.path.join(folder, "data-*"), paths


def _ids(ds, n):
    """Record ids of the first ``n`` serialized records of ``ds``."""
    spec = {"input_ids": tf.io.FixedLenFeature([L], tf.int64)}
    return [int(tf.io.parse_single_example(r, spec)["input_ids"][0]) for r in ds.take(n)]


@pytest.fixture(scope="module", params=[True, False], ids=["gzip", "plain"])
def files(request, tmp_path_factory):
    return _write(str(tmp_path_factory.mktemp("order")), request.param)


def test_each_epoch_reads_every_record_once_in_a_seeded_file_order(files):
    _, paths = files
    counts = input_pipeline.record_counts(paths)
    assert counts == list(SIZES)
    total = sum(SIZES)
    ids = _ids(input_pipeline.record_stream(paths, counts, seed=7), 3 * total)
    every = sorted(1000 * f + r for f, n in enumerate(SIZES) for r in range(n))
    epochs = [ids[e * total:(e + 1) * total] for e in range(3)]
    for epoch in epochs:
        assert sorted(epoch) == every
    orders = [input_pipeline.file_order(len(SIZES), 7, e) for e in range(3)]
    for epoch, order in zip(epochs, orders):  # the files, whole and in their own record order
        assert epoch == [1000 * f + r for f in order for r in range(SIZES[f])]
    assert len({tuple(o) for o in orders}) > 1  # epochs differ
    assert input_pipeline.file_order(len(SIZES), 8, 0) != orders[0] or input_pipeline.file_order(
        len(SIZES), 8, 1) != orders[1]


@pytest.mark.parametrize("start", [0, 7, 35, 37, 111])
def test_starting_at_a_position_equals_the_tail_of_the_full_stream(files, start):
    _, paths = files
    counts = list(SIZES)
    full = _ids(input_pipeline.shuffled_records(paths, counts, seed=3, shuffle_block=10), start + 40)
    resumed = _ids(input_pipeline.shuffled_records(paths, counts, seed=3, start=start, shuffle_block=10), 40)
    assert resumed == full[start:]
    assert full[:36] != _ids(input_pipeline.record_stream(paths, counts, seed=3), 36)  # the blocks are permuted


def test_seek_skips_whole_files_without_reading_them(files, tmp_path):
    """Files wholly before the start position are never opened: replaced by garbage, the resume still works."""
    _, paths = files
    counts = list(SIZES)
    seed, block = 5, 4
    order = input_pipeline.file_order(len(SIZES), seed, 0)
    start = SIZES[order[0]] + SIZES[order[1]] + 4  # inside epoch 0's third file, after a block boundary
    start -= start % block
    expected = _ids(input_pipeline.shuffled_records(paths, counts, seed, start=start, shuffle_block=block), 8)
    broken = list(paths)
    for i in order[:2]:
        broken[i] = str(tmp_path / f"garbage-{i}") + (".gz" if paths[i].endswith(".gz") else "")
        with open(broken[i], "wb") as f:
            f.write(b"not a tfrecord" * 10)
    got = _ids(input_pipeline.shuffled_records(broken, counts, seed, start=start, shuffle_block=block), 8)
    assert got == expected
    with pytest.raises(tf.errors.OpError):  # reading them would have failed
        _ids(input_pipeline.shuffled_records(broken, counts, seed, start=0, shuffle_block=block), 8)


@pytest.mark.parametrize("pipelines", [2, 4])
def test_global_batches_do_not_depend_on_the_number_of_input_pipelines(files, pipelines):
    pattern, _ = files
    global_batch, start, steps = 8, 16, 5

    def batches(num, index):
        ctx = tf.distribute.InputContext(num_input_pipelines=num, input_pipeline_id=index, num_replicas_in_sync=num)
        ds = input_pipeline.make_pretraining_dataset([pattern], global_batch // num, L, P, seed=11, start=start,
                                                     shuffle_block=6, input_context=ctx)
        return [inputs["input_ids"][:, 0].numpy().tolist() for inputs, _ in ds.take(steps)]

    single = batches(1, 0)
    split = [batches(pipelines, i) for i in range(pipelines)]
    for step in range(steps):
        assert sorted(sum((s[step] for s in split), [])) == sorted(single[step])
    flat = _ids(input_pipeline.shuffled_records(input_pipeline.expand_files([pattern]), list(SIZES), 11,
                                                start=start, shuffle_block=6), steps * global_batch)
    assert sum(single, []) == flat  # step N's global batch is records [N*G, (N+1)*G) of the stream


def test_record_counts_are_cached_and_rechecked(tmp_path):
    _, paths = _write(str(tmp_path / "d"), gzip=True)
    cache = str(tmp_path / "counts.json")
    assert input_pipeline.record_counts(paths, cache) == list(SIZES)
    assert os.path.exists(cache)
    # A file that changed size is counted again, not trusted from the cache.
    with tf.io.TFRecordWriter(paths[0], options="GZIP") as w:
        for r in range(3):
            w.write(_example(r))
    assert input_pipeline.record_counts(paths, cache) == [3] + list(SIZES[1:])
    assert np.sum(input_pipeline.record_counts(paths, cache)) == 3 + sum(SIZES[1:])
