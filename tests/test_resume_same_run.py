"""Done-when test of issue 14: a SIGKILLed and rerun ``albert-pipeline pretrain`` is the same run.

Real masked examples (the datagen Beam code on tests/fixtures/datagen_text.txt, the bundled 30k vocabulary,
three uneven shards, so the run crosses file and epoch boundaries), albert-tiny with dropout 0.1 (the random
state must resume too), 12 steps of batch 8, checkpoints every 5 steps, a history line every step.
"""
import glob
import json
import os

import numpy as np
import pytest

from tests import warm_processes
from tests.conftest import CLI, REPO, cli_in_process
from tests.conftest import RESUME_DATA as DATA
from tests.reliability.fixtures import kill_when

STEPS, CHECKPOINT_EVERY = 12, 5
TRAIN = [f"train.num_train_steps={STEPS}", "train.num_warmup_steps=2", "train.train_batch_size=8",
         f"train.checkpoint_every={CHECKPOINT_EVERY}", "train.log_every=1", "train.eval_every=0",
         "train.eval_steps=2", "train.shuffle_buffer=16", "train.learning_rate=0.003", "model.dropout=0.1"]
METRICS = ("loss", "mlm_loss", "sentence_loss", "mlm_accuracy", "sentence_accuracy", "learning_rate")


pytestmark = [pytest.mark.slow, pytest.mark.longest_first(5)]


@pytest.fixture(scope="module")
def examples(resume_examples):
    # More records than one epoch of the run would need is not the point: 12 x 8 steps cross an epoch boundary.
    assert resume_examples["stats"]["splits"]["train"]["instances"] < STEPS * 8
    assert len(glob.glob(os.path.join(resume_examples["dir"], "Split-train", "*"))) == 3
    return resume_examples["dir"]


def _cmd(examples, output):
    return [CLI, "pretrain", "--examples", examples, "--output", output] + [
        f"--set={o}" for o in DATA + TRAIN]


def _env():
    return {**os.environ, "PYTHONPATH": REPO, "TF_CPP_MIN_LOG_LEVEL": "2"}


def _train_lines(output):
    path = os.path.join(output, "model_run", "train_history.jsonl")
    if not os.path.exists(path):
        return []
    lines = []
    with open(path) as f:
        for line in f:
            try:
                record = json.loads(line)
            except ValueError:  # a line being written
                continue
            if record["split"] == "train":
                lines.append(record)
    return lines


def _checkpoint_steps(output):
    return sorted(int(p.rsplit("ckpt-", 1)[1].split(".")[0])
                  for p in glob.glob(os.path.join(output, "checkpoints", "*", "ckpt-*.index")))


def _weights(output):
    import tensorflow as tf

    reader = tf.train.load_checkpoint(os.path.join(output, "model", "albert", "pretraining", "ckpt"))
    return {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map()
            if name.startswith("model/")}


def _tensorboard_steps(output, tag="loss"):
    import tensorflow as tf
    from tensorboard.compat.proto import event_pb2

    steps = []
    for path in sorted(glob.glob(os.path.join(output, "model_run", "train", "events.out.tfevents.*"))):
        for raw in tf.data.TFRecordDataset(path):
            event = event_pb2.Event.FromString(raw.numpy())
            steps += [event.step for v in event.summary.value if v.tag == tag]
    return steps


def _assert_same_run(reference, resumed, weight_atol=1e-7):
    """Every logged training metric (1e-5 relative), the exported weights and the TensorBoard steps."""
    ref, got = _train_lines(reference), _train_lines(resumed)
    assert [h["step"] for h in got] == list(range(1, STEPS + 1)) == [h["step"] for h in ref]
    for a, b in zip(ref, got):
        for name in METRICS:
            np.testing.assert_allclose(b[name], a[name], rtol=1e-5, atol=1e-7, err_msg=f"step {a['step']} {name}")
    assert ref[-1]["loss"] != ref[0]["loss"]  # it trained
    ref_w, got_w = _weights(reference), _weights(resumed)
    assert sorted(ref_w) == sorted(got_w) and len(ref_w) > 10
    for name in ref_w:
        np.testing.assert_allclose(got_w[name], ref_w[name], rtol=1e-5, atol=weight_atol, err_msg=name)
    assert sorted(_tensorboard_steps(resumed)) == list(range(1, STEPS + 1))


def test_sigkilled_and_rerun_pretrain_equals_the_uninterrupted_run(examples, tmp_path):
    """(A resume with gradient accumulation, ``train.grad_accum_steps=2``: tests/test_distributed_pretrain.py's
    mirrored run, which is killed and resumed with it.)"""
    reference, killed = str(tmp_path / "reference"), str(tmp_path / "killed")
    # The uninterrupted run: the same command in this process. Each run it is compared with is a process of its own,
    # forked from tests/warm_processes.py's server.
    done = cli_in_process(_cmd(examples, reference)[1:], tmp_path / "logs")
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout)["final_step"] == STEPS
    # 1. SIGKILL between two checkpoints: after ckpt-5, once step 6 is logged (a step that is not a checkpoint).
    proc = warm_processes.start(_cmd(examples, killed), env=_env())
    kill_when(proc, lambda: any(h["step"] > CHECKPOINT_EVERY for h in _train_lines(killed)), "step 6",
              timeout=300, poll=0.01)
    logged, saved = [h["step"] for h in _train_lines(killed)], _checkpoint_steps(killed)
    assert saved and max(logged) > max(saved) and max(logged) % CHECKPOINT_EVERY != 0 and max(logged) < STEPS
    assert not os.path.exists(os.path.join(killed, "model", "albert", "export_info.json"))

    # 2. The rerun, SIGKILLed again while it exports (training finished, the SavedModel is being written).
    proc = warm_processes.start(_cmd(examples, killed), env=_env())
    kill_when(proc, lambda: os.path.exists(os.path.join(killed, "model", "Format-Serving")), "the export",
              timeout=300, poll=0.01)
    assert not os.path.exists(os.path.join(killed, "model", "albert", "export_info.json"))
    assert STEPS in _checkpoint_steps(killed)

    # 3. The same command completes the run.
    done = warm_processes.run(_cmd(examples, killed), env=_env(), timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    info = json.loads(done.stdout)
    assert info["final_step"] == STEPS
    assert info["start_step"] == STEPS
    _assert_same_run(reference, killed)
    # The serving export the rerun wrote after a kill in the middle of writing it serves what the uninterrupted
    # run's serves.
    ref_out, got_out = _serve(reference), _serve(killed)
    assert ref_out["pooled_output"].shape == (1, 128) and ref_out["sequence_output"].shape == (1, 6, 128)
    for key in ref_out:
        np.testing.assert_allclose(got_out[key], ref_out[key], rtol=1e-5, atol=1e-6, err_msg=key)


def _serve(output):
    """The outputs of ``<output>/model/Format-Serving``'s ``serving_default`` on one fixed 6-token pair."""
    import tensorflow as tf

    ids = tf.constant([[2, 100, 200, 3, 300, 3]], tf.int32)
    loaded = tf.saved_model.load(os.path.join(output, "model", "Format-Serving"))
    out = loaded.signatures["serving_default"](input_ids=ids, input_mask=tf.ones_like(ids),
                                               segment_ids=tf.constant([[0, 0, 0, 0, 1, 1]], tf.int32))
    return {k: v.numpy() for k, v in out.items()}
