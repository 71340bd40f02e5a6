"""Issue 56 item 5, "A lower step count is not the same run": the Trainer with another ``train.num_train_steps``.

The learning rate decays to 0 at ``num_train_steps``, yet the count is not part of the run's identity (its
checkpoint folder), so that raising it continues the run. Reported: after a 300-step run, a run asking for 150
"resumed" it, trained nothing and returned the 300-step model (the Pusher then found it already pushed). Here, with
albert-tiny on tests/conftest.py's masked examples (float32, dropout 0, real steps):

* a run of 6 steps, then the same output folder asked for 3: a run of its own in a new checkpoint folder, whose
  model is the one a 3-step run trains in an empty folder (never the 6-step model), and the 6-step run's folder
  is left as it was and found again;
* the 6-step run asked for 9: it continues from step 6 in its own folder, and the log says so, naming both counts
  and the step where the learning-rate schedule changes.
"""
from __future__ import annotations

import json
import logging
import os
import shutil

import numpy as np
import pytest

from tests.conftest import RESUME_DATA as DATA

TRAIN = ["train.train_batch_size=8", "train.log_every=1", "train.eval_every=0", "train.eval_steps=2",
         "train.shuffle_buffer=16", "train.learning_rate=0.003", "train.num_warmup_steps=2", "model.dropout=0",
         "train.mixed_precision=float32", "train.checkpoint_every=0"]


pytestmark = [pytest.mark.slow, pytest.mark.longest_first(10)]


def _pretrain(examples, out, steps):
    from pipeline.settings.configs import build_config
    from trainer.task import pretrain_from_examples

    return pretrain_from_examples(examples, out, build_config("sample", overrides=DATA + TRAIN + [
        f"train.num_train_steps={steps}"]))


def _weights(out):
    import tensorflow as tf

    reader = tf.train.load_checkpoint(os.path.join(out, "model", "albert", "pretraining", "ckpt"))
    return {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map()
            if name.startswith("model/")}


def _checkpoints(out):
    """{run key: sorted checkpoint steps} of the output folder's checkpoint root."""
    root = os.path.join(out, "checkpoints")
    return {key: sorted(int(name[len("ckpt-"):-len(".index")]) for name in os.listdir(os.path.join(root, key))
                        if name.startswith("ckpt-") and name.endswith(".index"))
            for key in sorted(os.listdir(root))}


def _warnings(caplog):
    """The Trainer's warnings (not TensorFlow's)."""
    return [r.getMessage() for r in caplog.records if r.name == "trainer.task" and r.levelno == logging.WARNING]


def _schedule(checkpoint_dir):
    with open(os.path.join(checkpoint_dir, "schedule.json")) as f:
        return json.load(f)


@pytest.fixture(scope="module")
def six(resume_examples, tmp_path_factory):
    """A finished 6-step run: its output folder and what the Trainer returned."""
    out = str(tmp_path_factory.mktemp("six"))
    return {"out": out, "info": _pretrain(resume_examples["dir"], out, 6)}


def test_a_lower_count_is_a_run_of_its_own_never_the_longer_runs_model(six, resume_examples, tmp_path, caplog):
    from components.release.package import model_key

    examples = resume_examples["dir"]
    out = str(tmp_path / "out")
    shutil.copytree(six["out"], out)
    six_key = os.path.basename(six["info"]["checkpoint_dir"])
    assert six["info"]["final_step"] == 6 and _checkpoints(out) == {six_key: [6]}

    with caplog.at_level(logging.WARNING, logger="trainer.task"):
        info = _pretrain(examples, out, 3)
    three_key = os.path.basename(info["checkpoint_dir"])
    assert three_key != six_key
    assert (info["start_step"], info["final_step"]) == (0, 3)  # trained from step 0, not "resumed" at step 6
    assert _warnings(caplog) == [
        f"pretraining run {six_key} is at step 6, so train.num_train_steps=3 cannot continue it (its learning rate "
        f"decays to 0 at step 3): a run of its own, in checkpoint folder {three_key}; the other run's checkpoints "
        "are left as they are"]
    assert _checkpoints(out) == {six_key: [6], three_key: [3]}
    with open(os.path.join(info["checkpoint_dir"], "run_identity.json")) as f:
        assert json.load(f)["train"]["num_train_steps"] == 3
    assert _schedule(info["checkpoint_dir"]) == [{"from_step": 0, "num_train_steps": 3}]
    # The Pusher's "same model" key is another one, so the 3-step model is not "already pushed" as the 6-step one.
    with open(os.path.join(out, "model", "albert", "export_info.json")) as f:
        export_info = json.load(f)
    assert model_key(export_info) == f"{three_key}@3" != model_key(six["info"]) == f"{six_key}@6"

    # The model is the 3-step run's, as an empty folder trains it, and not the 6-step run's.
    fresh = str(tmp_path / "fresh")
    fresh_info = _pretrain(examples, fresh, 3)
    assert os.path.basename(fresh_info["checkpoint_dir"]) == six_key  # there, nothing is past step 3: the usual key
    ours, reference, longer = _weights(out), _weights(fresh), _weights(six["out"])
    assert sorted(ours) == sorted(reference) == sorted(longer) and len(ours) > 10
    for name in ours:
        np.testing.assert_allclose(ours[name], reference[name], rtol=1e-5, atol=1e-7, err_msg=name)
    assert sum(not np.allclose(ours[name], longer[name], rtol=1e-5, atol=1e-7) for name in ours) > 10

    # Asked for 6 again, the folder holds the 6-step run, found where it always was: nothing trains.
    again = _pretrain(examples, out, 6)
    assert (os.path.basename(again["checkpoint_dir"]), again["start_step"], again["final_step"]) == (six_key, 6, 6)
    assert _checkpoints(out) == {six_key: [6], three_key: [3]}


def test_raising_the_count_continues_the_run_and_says_where_the_schedule_changes(six, resume_examples, tmp_path,
                                                                                  caplog):
    from trainer.optimization import WarmupLinearDecay
    from trainer.run_state import read_history

    out = str(tmp_path / "out")
    shutil.copytree(six["out"], out)
    key = os.path.basename(six["info"]["checkpoint_dir"])
    with caplog.at_level(logging.WARNING, logger="trainer.task"):
        info = _pretrain(resume_examples["dir"], out, 9)
    assert (os.path.basename(info["checkpoint_dir"]), info["start_step"], info["final_step"]) == (key, 6, 9)
    assert _warnings(caplog) == [
        f"continuing pretraining run {key} from its checkpoint at step 6, trained toward train.num_train_steps=6, to "
        "train.num_train_steps=9: the learning-rate schedule changes at step 6 (same warm-up, the linear decay now "
        "ends at step 9)"]
    assert _checkpoints(out) == {key: [6, 9]}
    assert _schedule(info["checkpoint_dir"]) == [{"from_step": 0, "num_train_steps": 6},
                                                 {"from_step": 6, "num_train_steps": 9}]
    # The updates of steps 1-6 were at the 6-step schedule's rates, those of steps 7-9 at the 9-step schedule's
    # (the history logs the rate of each step's update: the schedule at the update's index, step - 1).
    rates = {r["step"]: r["learning_rate"] for r in read_history(os.path.join(out, "model_run"))
             if r["split"] == "train"}
    assert sorted(rates) == list(range(1, 10))
    for step, total in [(s, 6) for s in range(1, 7)] + [(s, 9) for s in range(7, 10)]:
        expected = float(WarmupLinearDecay(0.003, 2, total)(step - 1))
        np.testing.assert_allclose(rates[step], expected, rtol=1e-6, atol=1e-9, err_msg=f"step {step}")
    # The rate steps up at the resume point: 0.003 * (1 - 5/6) for step 6's update, 0.003 * (1 - 6/9) for step 7's.
    np.testing.assert_allclose([rates[6], rates[7]], [0.0005, 0.001], rtol=1e-6)


def test_which_folder_a_count_trains_in(tmp_path):
    """``run_folder`` on checkpoint folders laid out by hand: the usual folder unless the count is below its newest
    checkpoint, or equal to it while that checkpoint was trained toward a larger count."""
    from trainer import task

    identity = {"examples_fingerprint": "f" * 64, "albert_config": {"hidden_size": 8}, "train": {"seed_like": 1},
                "seed": 1}
    root = str(tmp_path)
    shared = task.checkpoint_dir_for(root, identity)

    def own(steps):
        return task.checkpoint_dir_for(root, {**identity, "train": {"seed_like": 1, "num_train_steps": steps}})

    def checkpoint(step, schedule=None):
        os.makedirs(shared, exist_ok=True)
        for name in (f"ckpt-{step}.index", f"ckpt-{step}.data-00000-of-00001"):
            open(os.path.join(shared, name), "w").close()
        if schedule is not None:
            with open(os.path.join(shared, "schedule.json"), "w") as f:
                json.dump(schedule, f)

    assert task.run_folder(root, identity, 5) == (shared, identity, None)  # no checkpoints yet
    checkpoint(4)  # a folder written before schedule.json
    assert task.run_folder(root, identity, 4) == (shared, identity, None)
    assert task.run_folder(root, identity, 9) == (shared, identity, None)
    folder, ident, passed = task.run_folder(root, identity, 3)
    assert (folder, ident["train"], passed) == (own(3), {"seed_like": 1, "num_train_steps": 3}, (shared, 4, None))
    # A 10-step run stopped at step 4: asked for 4, that checkpoint is not a 4-step run's; asked for 5, it continues.
    checkpoint(4, [{"from_step": 0, "num_train_steps": 10}])
    assert task.run_folder(root, identity, 4) == (own(4), {**identity, "train": {"seed_like": 1, "num_train_steps": 4}},
                                                  (shared, 4, 10))
    assert task.run_folder(root, identity, 5) == (shared, identity, None)
    # A 4-step run finished, then a 10-step attempt killed before its first checkpoint: the checkpoint at 4 is the
    # 4-step run's.
    checkpoint(4, [{"from_step": 0, "num_train_steps": 4}, {"from_step": 4, "num_train_steps": 10}])
    assert task.run_folder(root, identity, 4) == (shared, identity, None)


def test_continuing_a_bases_run_below_its_step_is_refused(six, resume_examples, cli, tmp_path):
    """``train.init_restore=all`` continues the base's run, so a count below the base's step is refused in one line
    (exit 2, before training), naming the step and the two ways out."""
    base = os.path.join(six["out"], "model", "albert")
    done = cli("pretrain", "--examples", resume_examples["dir"], "--output", tmp_path / "out", "--preset", "sample",
               *[f"--set={o}" for o in DATA + TRAIN + ["train.num_train_steps=3", f"train.init_from={base}",
                                                       "train.init_restore=all"]])
    assert done.returncode == 2 and done.stdout == ""
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith(
        "albert-pipeline pretrain: error: train.init_restore=all continues the base's run from its checkpoint at "
        f"step 6 ({six['info']['checkpoint_dir']}), past train.num_train_steps=3: --set train.num_train_steps=N with "
        "N >= 6 to continue it, or --set train.init_restore=weights for a new run from its weights (full traceback: ")
    assert not os.path.exists(tmp_path / "out" / "checkpoints") and not os.path.exists(tmp_path / "out" / "model")
