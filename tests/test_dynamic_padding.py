"""Dynamic padding (components/evaluation/finetune.py): cutting each batch to its longest example changes no result.

A tiny seeded, randomly initialised ALBERT is evaluated on the bundled GLUE / RACE samples with batches cut to their
longest example (the default) and with every batch at max_seq_length (``dynamic=False``, the reference); logits and
the metric agree within float tolerance. A few training steps both ways give the same weights. The tests also check
that the cut really happened (shorter batches), that one trace serves every length, and that the heads or settings
where a cut would change results (SQuAD v1.1's head, ALBERT dropout > 0 in training) keep full-length batches.
"""
import os

import numpy as np
import pytest

import components  # noqa: F401  (TF_USE_LEGACY_KERAS before TF)

tf = pytest.importorskip("tensorflow")

import tf_keras  # noqa: E402

from components.evaluation import finetune as ft  # noqa: E402
from components.evaluation.glue import glue_data as glue_lib  # noqa: E402
from components.evaluation.race import race_data as race_lib  # noqa: E402
from components.evaluation.heads import (ClassifierModel, MultipleChoiceModel, SpanModel,  # noqa: E402
                                         classification_loss)
from components.evaluation.metrics import glue_metrics  # noqa: E402
from components.evaluation.benchmark_config import FinetuneHParams
from trainer.modeling_albert import AlbertConfig, AlbertModel  # noqa: E402


def _encoder(dropout=0.0, seed=0):
    tf_keras.utils.set_random_seed(seed)
    return AlbertModel(AlbertConfig.named("albert-tiny", hidden_dropout_prob=dropout,
                                          attention_probs_dropout_prob=dropout))


def _classifier(arrays, dropout=0.0, seed=0):
    model = ClassifierModel(_encoder(dropout, seed), 2, 0.1, seed=seed)
    model({k: arrays[k][:1] for k in model.input_keys}, training=False)
    return model


@pytest.fixture(scope="module")
def glue_arrays(sample_dir, tok):
    def load(task, split, length):
        examples = glue_lib.read_glue(task, split, os.path.join(sample_dir, "glue"))
        return glue_lib.convert_glue_examples(examples, tok, length, task)
    return load


def test_pad_length_rounds_up_within_bounds():
    assert [ft.pad_length(x, 64) for x in (0, 1, 8, 9, 63, 64)] == [1, 8, 8, 16, 64, 64]
    assert ft.pad_length(13, 64, multiple=1) == 13
    got = [int(ft.pad_length(tf.constant(x), 64)) for x in (0, 9, 63)]
    assert got == [1, 16, 64]
    mask = np.zeros((2, 4, 10), np.int32)
    mask[0, 1, :7] = 1
    mask[1, :, :3] = 1
    assert ft.example_lengths(mask).tolist() == [7, 3]  # RACE: the longest of the options


@pytest.mark.parametrize("task,split,length", [("CoLA", "dev", 64), ("MRPC", "dev", 128)])
def test_eval_logits_and_metric_match_full_padding(glue_arrays, task, split, length):
    arrays = glue_arrays(task, split, length)
    model = _classifier(arrays)
    lengths = ft.example_lengths(arrays["input_mask"])
    plan = ft.predict_batches(lengths, len(lengths), 16, length)
    assert max(cut for _, cut in plan) < length and sorted(np.concatenate([r for r, _ in plan])) == list(
        range(len(lengths)))
    dynamic = ft.predict(model, arrays, batch_size=16)["logits"]
    padded = ft.predict(model, arrays, batch_size=16, dynamic=False)["logits"]
    assert dynamic.shape == padded.shape == (len(lengths), 2)
    np.testing.assert_allclose(dynamic, padded, rtol=1e-5, atol=1e-6)
    assert np.abs(padded).max() > 1e-3  # not a degenerate all-zero output
    labels = arrays["label_ids"]
    assert glue_metrics(task, dynamic, labels) == pytest.approx(glue_metrics(task, padded, labels), abs=1e-9)
    # One trace for every batch size and padded length seen (the function of the model's twin: see finetune._runner).
    (fn,) = ft._PREDICT_FNS[ft._TWINS[model.twin_key()]].values()
    assert fn.experimental_get_tracing_count() == 1


def test_race_logits_match_full_padding(sample_dir, tok):
    examples = race_lib.read_race(os.path.join(sample_dir, "race"), split="dev")[:12]
    arrays = race_lib.convert_race_examples(examples, tok, 512, 128)
    assert ft.example_lengths(arrays["input_mask"]).max() < 512
    model = MultipleChoiceModel(_encoder(), 0.1, seed=0)
    model({k: arrays[k][:1] for k in model.input_keys}, training=False)
    dynamic = ft.predict(model, arrays, batch_size=4)["logits"]
    padded = ft.predict(model, arrays, batch_size=4, dynamic=False)["logits"]
    assert dynamic.shape == (12, 4)
    np.testing.assert_allclose(dynamic, padded, rtol=1e-5, atol=1e-6)


def test_span_head_keeps_full_length(glue_arrays):
    arrays = glue_arrays("MRPC", "dev", 128)
    model = SpanModel(_encoder(), seed=0)
    model({k: arrays[k][:1] for k in model.input_keys}, training=False)
    assert not ft.dynamic_padding(model)
    out = ft.predict(model, {k: v[:20] for k, v in arrays.items()}, batch_size=8)
    assert out["start_logits"].shape == (20, 128)


def _train(arrays, dynamic, dropout=0.0, steps=5):
    model = _classifier(arrays, dropout, seed=3)
    hp = FinetuneHParams(1e-3, 8, dropout, 0.1, train_steps=steps, warmup_steps=1,
                         max_seq_length=arrays["input_ids"].shape[-1])
    res = ft.fine_tune(model, classification_loss, arrays, hp, seed=3, dynamic=dynamic,
                       evaluate=lambda m: ({"score": 0.0}, None))
    return model.get_weights(), res


def test_training_steps_match_full_padding(glue_arrays):
    arrays = glue_arrays("CoLA", "train", 64)
    got, res = _train(arrays, dynamic=True)
    want, ref = _train(arrays, dynamic=False)
    assert ref["mean_train_length"] == 64 and res["mean_train_length"] < 40  # batches really were cut
    moved = max(np.abs(w - w0).max() for w, w0 in zip(want, _classifier(arrays, seed=3).get_weights()))
    assert moved > 1e-4  # the steps changed the weights, so the comparison below means something
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    assert res["final_loss"] == pytest.approx(ref["final_loss"], rel=1e-4)


def test_training_with_albert_dropout_keeps_full_length(glue_arrays):
    """Dropout masks are drawn per padded shape: a cut batch would be another run, so no cut."""
    arrays = glue_arrays("CoLA", "train", 64)
    assert not ft.dynamic_padding(_classifier(arrays, dropout=0.1), training=True)
    got, res = _train(arrays, dynamic=True, dropout=0.1, steps=3)
    want, _ = _train(arrays, dynamic=False, dropout=0.1, steps=3)
    assert res["mean_train_length"] == 64
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


def test_train_step_traces_once_for_every_length(glue_arrays):
    arrays = glue_arrays("CoLA", "train", 64)
    model = _classifier(arrays)
    keys = ("input_ids", "input_mask", "segment_ids")
    ds = (tf.data.Dataset.from_tensor_slices(arrays).batch(8, drop_remainder=True)
          .map(ft.trim_batch_fn(keys, 64)))
    spec = ft._relaxed_spec(ds.element_spec, keys)
    step = ft.make_train_step(model, classification_loss, 1e-4, 1, 10, batch_spec=spec)
    seen = set()
    for batch in ds.take(6):
        want = ft.pad_length(int(ft.example_lengths(batch["input_mask"].numpy()).max()), 64)
        assert batch["input_ids"].shape == (8, want)
        seen.add(want)
        assert np.isfinite(float(step(batch)))
    assert len(seen) > 1 and step.experimental_get_tracing_count() == 1
