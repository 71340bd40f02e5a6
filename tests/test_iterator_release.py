"""Iterators that are opened again and again are dropped at once (trainer.input_pipeline.short_lived).

tf.data's autotuner makes dropping an iterator wait until its thread's current sleep ends, and the sleep appears to
grow with the iterator's age: fine-tuning runs stalled 0-60 s between seeds, held-out evaluations a few seconds.
The held-out evaluation and every fine-tuning run read through ``short_lived`` pipelines; the training stream keeps
the autotuner.
"""
import time

import numpy as np
import pytest

import components  # noqa: F401  (TF_USE_LEGACY_KERAS before TF)

tf = pytest.importorskip("tensorflow")

from components.evaluation.finetune import fine_tune, train_dataset  # noqa: E402
from components.evaluation.heads import ClassifierModel, classification_loss  # noqa: E402
from pipeline.settings.configs import FinetuneHParams  # noqa: E402
from tests.test_input_order import L, P, SIZES, _write  # noqa: E402  (its pretraining records: ids 1000 * file + row)
from trainer import input_pipeline  # noqa: E402
from trainer.modeling_albert import AlbertConfig, AlbertModel  # noqa: E402


def _drop_seconds(ds, run_seconds):
    iterator = iter(ds)
    start = time.time()
    while time.time() - start < run_seconds:
        next(iterator)
        time.sleep(0.05)
    t = time.time()
    del iterator
    return time.time() - t


def test_a_short_lived_iterator_is_dropped_at_once_after_seconds_of_use():
    rows = np.zeros((3000, 128), np.int32)
    ds = tf.data.Dataset.from_tensor_slices(rows).shuffle(3000, seed=1).repeat().batch(8).map(tf.identity).prefetch(2)
    # Left to the autotuner, the drop waits for the rest of its sleep: from 0 s to about the iterator's age,
    # depending on where in the sleep it falls (measured 0-16 s after 4-25 s of use), so only this side is timed.
    assert _drop_seconds(input_pipeline.short_lived(ds), 3.0) < 1.0
    assert input_pipeline.short_lived(ds).options().autotune.enabled is False


def test_heldout_evaluation_and_fine_tuning_read_short_lived_pipelines(tmp_path):
    _, files = _write(str(tmp_path), gzip=True)
    ev = input_pipeline.make_eval_dataset(files, 4, L, P, num_records=10, global_batch_size=4)
    assert ev.options().autotune.enabled is False
    batches = list(ev)
    ids = np.concatenate([inputs["input_ids"][:, 0].numpy() for inputs, _ in batches])
    assert ids.tolist() == list(range(7)) + [1000, 1001, 1002, 0, 0]  # file order, padded to whole batches
    assert sum(int(labels["row_weights"].numpy().sum()) for _, labels in batches) == 10
    train = input_pipeline.make_pretraining_dataset(files, 4, L, P, seed=0, counts=list(SIZES))
    assert train.options().autotune.enabled is not False  # the training stream keeps the autotuner

    model = ClassifierModel(AlbertModel(AlbertConfig.named("albert-tiny", vocab_size=50)), 2, 0.1, seed=0)
    rng = np.random.default_rng(0)
    arrays = {"input_ids": rng.integers(5, 50, (12, 16)).astype(np.int32),
              "input_mask": np.ones((12, 16), np.int32), "segment_ids": np.zeros((12, 16), np.int32),
              "label_ids": rng.integers(0, 2, 12).astype(np.int32)}
    arrays["input_mask"][:, 9:] = 0  # every example 9 pieces long: dynamic padding cuts batches to 16 -> 16
    model({k: v[:1] for k, v in arrays.items()}, training=False)
    ds, spec = train_dataset(model, arrays, batch_size=4, seed=0)
    assert ds.options().autotune.enabled is False
    batch = next(iter(ds))
    assert batch["input_ids"].shape == (4, 16) and spec["input_ids"].shape.as_list() == [4, None]

    # A run times what it spends outside its steps, the iterator's drop included (metrics.json: overhead_seconds).
    hp = FinetuneHParams(1e-3, 4, 0.0, 0.1, train_steps=6, warmup_steps=1, max_seq_length=16)
    res = fine_tune(model, classification_loss, arrays, hp, seed=0,
                    evaluate=lambda m: ({"score": 1.0}, None), selection="last")
    overhead = res["overhead_seconds"]
    assert sorted(overhead) == ["first_step", "input_and_step", "input_release"]
    assert 0.0 <= overhead["input_release"] < 1.0 and overhead["first_step"] > 0.0
