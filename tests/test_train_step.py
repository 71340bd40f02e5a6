"""The trainer's optimizer step on the real ALBERT model: gradient semantics, dropout seeds, resumable logs.

* ``global_batch`` semantics: 1 x batch B, ``grad_accum_steps=k`` x B/k and 2 replicas x B/2 give the same update
  (micro-batches with different numbers of real masked tokens, clipping engaged);
* ``per_replica`` (official per-shard) is a different update, so the setting is real;
* dropout masks depend on (seed, step, micro-batch, replica): a restored run draws the same ones;
* a resumed run's history / TensorBoard files are cut back to the checkpoint step.
"""
import json
import os
import sys

import numpy as np
import pytest

import trainer  # noqa: F401
import tensorflow as tf
import tf_keras

from tests import warm_processes
from tests.conftest import REPO
from trainer import losses, run_state, train_step
from trainer.dropout import DropoutSeeds, use_stateless_dropout
from trainer.modeling_albert import AlbertConfig
from trainer.optimization import create_optimizer

L, P, V, B = 16, 4, 60, 8


pytestmark = pytest.mark.longest_first(7)


def tiny_config(dropout=0.0):
    return AlbertConfig.named("albert-tiny", vocab_size=V, max_position_embeddings=L, hidden_dropout_prob=dropout,
                              attention_probs_dropout_prob=dropout)


def make_batches(steps, seed=0):
    """``steps`` global batches of B real-shaped examples; rows carry 1..P real masked tokens (uneven)."""
    rng = np.random.default_rng(seed)
    n = steps * B
    real = rng.integers(1, P + 1, n)
    weights = (np.arange(P)[None, :] < real[:, None]).astype(np.float32)
    inputs = {"input_ids": rng.integers(5, V, (n, L)).astype(np.int32), "input_mask": np.ones((n, L), np.int32),
              "segment_ids": (np.arange(L)[None, :] >= L // 2).repeat(n, 0).astype(np.int32),
              "masked_lm_positions": np.sort(rng.permuted(np.tile(np.arange(1, L), (n, 1)), axis=1)[:, :P], 1)
              .astype(np.int32)}
    labels = {"masked_lm_ids": (rng.integers(5, V, (n, P)) * weights).astype(np.int32), "masked_lm_weights": weights,
              "next_sentence_labels": rng.integers(0, 2, (n, 1)).astype(np.int32)}
    return inputs, labels


def run_steps(k, steps=2, semantics="global_batch", clip_norm=0.05, dropout=0.0, strategy=None, start_step=0):
    """Weights and per-step metrics after ``steps`` optimizer steps from the seeded initial model."""
    strategy = strategy or tf.distribute.get_strategy()
    tf_keras.utils.set_random_seed(3)
    with strategy.scope():
        model = train_step.build_pretraining_model(tiny_config(dropout), "sop", L, P)
        optimizer = create_optimizer("lamb", 0.01, 0, 10)
        optimizer.build(model.trainable_variables)
    step_fn = train_step.make_train_step(model, optimizer, strategy, grad_accum_steps=k, clip_norm=clip_norm,
                                         seed=7, semantics=semantics)
    if start_step:
        optimizer.iterations.assign(start_step)
    inputs, labels = make_batches(steps)
    micro = B // k

    def dataset_fn(ctx):
        return tf.data.Dataset.from_tensor_slices((inputs, labels)).batch(ctx.get_per_replica_batch_size(micro))

    iterator = iter(strategy.distribute_datasets_from_function(dataset_fn))
    metrics = [step_fn(iterator).numpy() for _ in range(steps)]
    return [v.numpy() for v in model.trainable_variables], np.array(metrics), model


def assert_same(a, b, rtol=1e-5, atol=1e-6):
    for x, y in zip(a, b):
        np.testing.assert_allclose(x, y, rtol=rtol, atol=atol)


def max_diff(a, b):
    return max(float(np.max(np.abs(x - y))) for x, y in zip(a, b))


def test_metrics_from_sums_equal_the_official_losses():
    """The Trainer's sums give the official ALBERT losses of a batch (MLM ``sum(w * nll) / (sum(w) + 1e-5)``, the
    mean sentence cross entropy, their accuracies), here computed in NumPy from the real model's outputs; and
    ``pretraining_losses`` is that same arithmetic by name."""
    inputs, labels = make_batches(1)
    tf_keras.utils.set_random_seed(3)
    model = train_step.build_pretraining_model(tiny_config(), "sop", L, P)
    outputs = model(inputs, training=False)
    logits, sent = outputs["mlm_logits"].numpy().astype(np.float64), outputs["sentence_logits"].numpy()
    ids, w, sl = labels["masked_lm_ids"], labels["masked_lm_weights"], labels["next_sentence_labels"][:, 0]
    logp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    mlm = (w * -np.take_along_axis(logp, ids[..., None], -1)[..., 0]).sum() / (w.sum() + 1e-5)
    slogp = sent - np.log(np.exp(sent).sum(-1, keepdims=True))
    sentence = -slogp[np.arange(len(sl)), sl].mean()
    official = [mlm + sentence, mlm, sentence, (w * (logits.argmax(-1) == ids)).sum() / (w.sum() + 1e-5),
                (sent.argmax(-1) == sl).mean()]
    ours = losses.metrics_from_sums(losses.loss_sums(outputs, labels)).numpy()
    np.testing.assert_allclose(ours, official, rtol=1e-5)
    by_name = losses.pretraining_losses(outputs, ids, w, labels["next_sentence_labels"])
    np.testing.assert_allclose([float(by_name[n]) for n in losses.METRIC_NAMES], ours, rtol=1e-6)
    mlm_only = losses.pretraining_losses(outputs, ids, w)  # no sentence labels: no sentence loss
    np.testing.assert_allclose([float(mlm_only[n]) for n in losses.METRIC_NAMES], [ours[1], ours[1], 0, ours[3], 0],
                               rtol=1e-6)


def test_accumulation_gives_the_update_of_the_full_batch():
    full_w, full_m, _ = run_steps(1)
    w, m, _ = run_steps(2)  # each micro-step is traced: k = 4 cost twice as much and showed nothing more
    assert_same(w, full_w)
    np.testing.assert_allclose(m, full_m, rtol=1e-5)  # the logged loss is the global batch's
    # Clipping is engaged (a larger clip norm changes the update) ...
    unclipped, _, _ = run_steps(1, clip_norm=1e6)
    assert max_diff(unclipped, full_w) > 1e-4
    # ... and the official per-replica semantics (each micro-batch normalised by its own masked-token count) is a
    # different update once micro-batches differ, while with k = 1 on one replica it is the same.
    official_k1, _, _ = run_steps(1, semantics="per_replica")
    assert_same(official_k1, full_w)
    official_k2, _, _ = run_steps(2, semantics="per_replica")
    assert max_diff(official_k2, full_w) > 1e-4
    with pytest.raises(ValueError, match="gradient_semantics"):
        run_steps(1, semantics="per_shard")


def test_dropout_resumes_from_a_checkpoint_with_the_same_masks(tmp_path):
    """Dropout 0.1: steps 0-2 in one go equal steps 0-1, a checkpoint, and step 2 in a new model, optimizer and
    train function restored from it (Keras' stateful dropout RNG would restart there and draw step 0's masks)."""
    inputs, labels = make_batches(3)

    def setup():
        tf_keras.utils.set_random_seed(3)
        model = train_step.build_pretraining_model(tiny_config(0.1), "sop", L, P)
        optimizer = create_optimizer("lamb", 0.01, 0, 10)
        optimizer.build(model.trainable_variables)
        step_fn = train_step.make_train_step(model, optimizer, tf.distribute.get_strategy(), grad_accum_steps=2,
                                             clip_norm=1.0, seed=7)
        return model, optimizer, step_fn

    def batches(start_step):
        return iter(tf.data.Dataset.from_tensor_slices((inputs, labels)).skip(start_step * B).batch(B // 2))

    model, optimizer, step_fn = setup()
    it = batches(0)
    straight = [step_fn(it).numpy() for _ in range(3)]
    straight_w = [v.numpy() for v in model.trainable_variables]

    model, optimizer, step_fn = setup()
    it = batches(0)
    first = [step_fn(it).numpy() for _ in range(2)]
    path = tf.train.Checkpoint(model=model, optimizer=optimizer).write(str(tmp_path / "ckpt"))
    model, optimizer, step_fn = setup()
    tf.train.Checkpoint(model=model, optimizer=optimizer).read(path).assert_consumed()
    resumed = first + [step_fn(batches(2)).numpy()]
    np.testing.assert_allclose(np.array(resumed), np.array(straight), rtol=1e-6)
    assert_same([v.numpy() for v in model.trainable_variables], straight_w, rtol=1e-6, atol=1e-7)

    # Dropout really is on: the same initial model without it has another step-0 loss.
    tf_keras.utils.set_random_seed(3)
    plain = train_step.build_pretraining_model(tiny_config(0.0), "sop", L, P)
    plain_loss = losses.metrics_from_sums(losses.loss_sums(
        plain({k: v[:B] for k, v in inputs.items()}, training=True), {k: v[:B] for k, v in labels.items()}))
    assert abs(float(plain_loss[0]) - straight[0][0]) > 1e-4
    assert use_stateless_dropout(model, DropoutSeeds()) >= 4  # every Dropout layer rerouted


_REPLICAS_SCRIPT = r"""
import json, sys
import trainer  # noqa: F401
import tensorflow as tf
cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
from tests import test_train_step as t
two = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
one_w, one_m, _ = t.run_steps(1)
out = {}
for name, k, semantics in (("global_k2", 2, "global_batch"), ("per_replica_k1", 1, "per_replica")):
    w, m, _ = t.run_steps(k, semantics=semantics, strategy=two)
    out[name] = {"weights": t.max_diff(w, one_w), "metrics": float(abs(m - one_m).max()),
                 "scale": float(max(abs(x).max() for x in one_w))}
print("RESULT" + json.dumps(out))
"""


def test_two_replicas_give_the_update_of_one_device():
    """MirroredStrategy over 2 logical CPUs (a process of its own, forked from tests/warm_processes.py's server
    before TensorFlow starts: logical devices must be set before), with accumulation (k = 1 over two replicas is
    tests/test_distributed_pretrain.py's mirrored run, equal to one device within 1e-5 through a kill and a resume)."""
    done = warm_processes.run([sys.executable, "-c", _REPLICAS_SCRIPT], cwd=REPO, timeout=600,
                              env={**os.environ, "PYTHONPATH": REPO, "TF_CPP_MIN_LOG_LEVEL": "2"})
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.split("RESULT", 1)[1])
    assert result["global_k2"]["weights"] < 1e-5 and result["global_k2"]["metrics"] < 1e-4, result
    assert result["per_replica_k1"]["weights"] > 1e-4, result  # official per-shard clipping is another update


def test_history_is_cut_back_to_the_checkpoint_step(tmp_path):
    path = str(tmp_path / "train_history.jsonl")
    lines = [{"step": s, "split": "train", "loss": 1.0 / s} for s in range(1, 8)] + [
        {"step": 5, "split": "eval", "loss": 0.5}, {"step": 7, "split": "eval", "loss": 0.4}]
    with open(path, "w") as f:
        f.write("".join(json.dumps(x) + "\n" for x in lines) + '{"step": 8, "spl')  # torn by the kill
    assert run_state.read_history(str(tmp_path)) == lines  # the one reader leaves the torn line out
    assert run_state.truncate_history(path, 5) == 6
    kept = [json.loads(x) for x in open(path)]
    assert [(x["step"], x["split"]) for x in kept] == [(s, "train") for s in range(1, 6)] + [(5, "eval")]
    assert run_state.truncate_history(path, 0) == 0 and open(path).read() == ""
    assert run_state.truncate_history(str(tmp_path / "missing.jsonl"), 3) == 0


def test_tensorboard_events_are_cut_back_and_merged(tmp_path):
    from tensorboard.compat.proto import event_pb2

    folder = str(tmp_path / "train")

    def write(steps):
        writer = tf.summary.create_file_writer(folder)
        with writer.as_default():
            for s in steps:
                tf.summary.scalar("loss", float(s), step=s)
        writer.close()

    def scalars():
        out = []
        for path in sorted(tf.io.gfile.glob(os.path.join(folder, "events.out.tfevents.*"))):
            for raw in tf.data.TFRecordDataset(path):
                event = event_pb2.Event.FromString(raw.numpy())
                out += [(event.step, tf.make_ndarray(v.tensor).item()) for v in event.summary.value]
        return sorted(out)

    write(range(1, 9))  # the killed attempt logged to step 8; its checkpoint is step 5
    run_state.truncate_event_files(folder, 5)
    write(range(6, 11))  # the resumed run
    run_state.truncate_event_files(folder, 7)  # killed again after step 7's checkpoint... and resumed
    write(range(8, 11))
    assert scalars() == [(s, float(s)) for s in range(1, 11)]
    assert len(tf.io.gfile.glob(os.path.join(folder, "events.out.tfevents.*"))) == 2
    run_state.truncate_event_files(str(tmp_path / "none"), 3)  # no folder: nothing to do
