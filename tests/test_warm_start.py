"""Continued pretraining (``train.init_from``, issue 47): a run that starts from a model starts from its weights.

The base: 6 steps of albert-tiny (float32, dropout 0) on tests/conftest.py's masked examples, exported as the
Trainer exports. A run with ``train.init_from`` = that albert folder, on the same examples:

* its first batch's loss, computed before its first update, is the base model's loss on that batch (the batch
  rebuilt here with the trainer's own input function and scored with the trainer's own loss);
* the official schedule starts fresh (step 0, learning rate 0 at the first step), so after one step the weights and
  the held-out metrics are the base's exactly;
* lineage: ``export_info.json`` says what it continued from and the steps behind it;
* a base whose configuration or vocabulary differs is refused in one line, exit 2, before training.
"""
from __future__ import annotations

import json
import os
import shutil

import numpy as np
import pytest

from tests.conftest import RESUME_DATA as DATA

BASE_STEPS = 6
TRAIN = ["train.train_batch_size=8", "train.log_every=1", "train.eval_every=0", "train.eval_steps=2",
         "train.shuffle_buffer=16", "train.learning_rate=0.003", "model.dropout=0", "train.mixed_precision=float32",
         "train.checkpoint_every=0"]


def _config(extra):
    from pipeline.settings.configs import build_config
    from pipeline.settings.resolve import resolve_config

    return resolve_config(build_config("sample", overrides=DATA + TRAIN + list(extra)), local=False)


BASE_TRAIN = [f"train.num_train_steps={BASE_STEPS}", "train.num_warmup_steps=2"]


@pytest.fixture(scope="module")
def base(resume_examples, tmp_path_factory):
    from trainer.task import pretrain_from_examples

    out = str(tmp_path_factory.mktemp("base"))
    info = pretrain_from_examples(resume_examples["dir"], out, _config(BASE_TRAIN))
    return {"out": out, "dir": os.path.join(out, "model", "albert"), "info": info}


@pytest.fixture(scope="module")
def warm(base, resume_examples, tmp_path_factory):
    from trainer.task import pretrain_from_examples

    out = str(tmp_path_factory.mktemp("warm"))
    info = pretrain_from_examples(resume_examples["dir"], out, _config(
        ["train.num_train_steps=1", "train.num_warmup_steps=1", f"train.init_from={base['dir']}"]))
    return {"out": out, "dir": os.path.join(out, "model", "albert"), "info": info}


def _first_batch_loss(albert_dir, examples, seed):
    """The base model's loss on batch 0 of the run's order, as the Trainer computes it."""
    from trainer import input_pipeline
    from trainer.convert import load_albert_dir
    from trainer.losses import pretraining_losses

    model = load_albert_dir(albert_dir)
    info = json.load(open(os.path.join(examples, "dataset_info.json")))
    ds = input_pipeline.make_pretraining_dataset([os.path.join(examples, "Split-train", "*")], 8,
                                                 info["max_seq_length"], info["max_predictions_per_seq"], seed=seed,
                                                 start=0, shuffle_block=16)
    inputs, labels = next(iter(ds))
    outputs = model(inputs, training=False)
    return float(pretraining_losses(outputs, labels["masked_lm_ids"], labels["masked_lm_weights"],
                                    labels["next_sentence_labels"])["loss"])


def test_the_first_batch_loss_before_any_update_is_the_base_models(base, warm, resume_examples):
    from trainer.run_state import read_history

    history = [r for r in read_history(os.path.join(warm["out"], "model_run")) if r["split"] == "train"]
    assert [r["step"] for r in history] == [1]
    assert history[0]["learning_rate"] == 0.0  # the official schedule, started afresh: warm-up from 0
    expected = _first_batch_loss(base["dir"], resume_examples["dir"], seed=12345)
    assert history[0]["loss"] == pytest.approx(expected, rel=1e-5)
    # A run from scratch on the same batch starts far from there (the restore is what makes them equal).
    scratch = [r for r in read_history(os.path.join(os.path.dirname(os.path.dirname(base["dir"])), "model_run"))
               if r["split"] == "train"]
    assert abs(scratch[0]["loss"] - expected) > 0.1


def test_after_a_zero_learning_rate_step_the_weights_and_held_out_metrics_are_the_bases(base, warm):
    import tensorflow as tf

    for name in ("encoder/ckpt", "pretraining/ckpt"):
        ours = tf.train.load_checkpoint(os.path.join(warm["dir"], name))
        theirs = tf.train.load_checkpoint(os.path.join(base["dir"], name))
        names = [n for n in theirs.get_variable_to_shape_map() if "/.ATTRIBUTES/VARIABLE_VALUE" in n]
        assert names and sorted(names) == sorted(n for n in ours.get_variable_to_shape_map()
                                                 if "/.ATTRIBUTES/VARIABLE_VALUE" in n)
        for n in names:
            np.testing.assert_array_equal(ours.get_tensor(n), theirs.get_tensor(n), err_msg=n)
    assert warm["info"]["eval_metrics"] == base["info"]["eval_metrics"]
    assert (warm["info"]["start_step"], warm["info"]["final_step"]) == (0, 1)


def test_the_export_says_what_the_model_continued_from(base, warm):
    with open(os.path.join(warm["dir"], "export_info.json")) as f:
        info = json.load(f)
    assert info["init_from"] == {"location": base["dir"], "version": None, "steps": BASE_STEPS, "restored": "weights"}
    assert info["total_steps"] == BASE_STEPS + 1
    with open(os.path.join(base["dir"], "export_info.json")) as f:
        assert "init_from" not in json.load(f)


def test_a_base_with_another_configuration_or_vocabulary_is_refused_before_training(base, resume_examples, cli,
                                                                                    tmp_path):
    argv = ["pretrain", "--examples", resume_examples["dir"], "--output", str(tmp_path / "out"), "--preset",
            "sample"] + [f"--set={o}" for o in DATA + TRAIN + ["train.num_train_steps=1", "train.num_warmup_steps=1"]]
    done = cli(*argv, f"--set=train.init_from={base['dir']}", "--set=model.hidden_size=64",
               "--set=model.intermediate_size=256")
    assert done.returncode == 2 and done.stdout == ""
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith(f"albert-pipeline pretrain: error: train.init_from={base['dir']}: this run's model "
                           "configuration differs from the base's: hidden_size 64 (base 128); intermediate_size 256 "
                           "(base 512) (full traceback: ")
    foreign = tmp_path / "foreign"
    shutil.copytree(base["dir"], foreign)
    with open(foreign / "spm.model", "ab") as f:
        f.write(b"\0")  # another file: another vocabulary
    done = cli(*argv, f"--set=train.init_from={foreign}")
    assert done.returncode == 2 and done.stdout == ""
    (line,) = done.stderr.strip().splitlines()
    assert f"train.init_from={foreign}: the vocabulary is not the base's" in line
    assert not (tmp_path / "out").exists()
    done = cli(*argv, f"--set=train.init_from={tmp_path / 'nowhere'}")
    assert done.returncode == 2 and f"train.init_from={tmp_path / 'nowhere'} is not a model folder" in done.stderr


def test_the_model_card_says_what_the_model_continued_from():
    from components.release import model_card, package

    decision = {"blessed": True, "forced": False, "reason": "no criteria", "checks": [], "baseline": None}
    facts = package.card_facts(
        name="m", license="apache-2.0", version=2, results={}, run_config={}, decision=decision, documents={},
        artifacts={}, arm="random_init", hf_note=None,
        export_info={"final_step": 5, "total_steps": 11,
                     "init_from": {"location": "gs://b/releases/1", "version": 1, "steps": 6}})
    assert (facts["training"]["continued_from"], facts["training"]["total_steps"]) == (
        {"location": "gs://b/releases/1", "version": 1, "steps": 6}, 11)
    card = model_card.render(facts)
    assert "| continued from | version 1 at gs://b/releases/1 (6 steps) |" in card
    assert "| total steps (with the base's) | 11 |" in card
    scratch = package.card_facts(name="m", license="apache-2.0", version=1, results={}, run_config={},
                                 decision=decision, documents={}, artifacts={}, arm="random_init", hf_note=None,
                                 export_info={"final_step": 5})
    assert (scratch["training"]["continued_from"], scratch["training"]["total_steps"]) == (None, 5)
    assert "continued from" not in model_card.render(scratch)


def test_restoring_the_whole_state_continues_the_bases_run_as_a_resume_does(base, resume_examples, tmp_path_factory):
    """``train.init_restore=all`` from the base's export, to 9 steps, is the base's own run resumed with
    ``num_train_steps`` raised to 9 (the Trainer's continuation): the same history lines and the same weights."""
    from trainer.run_state import read_history
    from trainer.task import pretrain_from_examples

    more = [o.replace(f"num_train_steps={BASE_STEPS}", "num_train_steps=9") for o in BASE_TRAIN]
    reference = str(tmp_path_factory.mktemp("reference"))
    shutil.copytree(base["out"], reference, dirs_exist_ok=True)  # the base's run, its checkpoints included
    ref_info = pretrain_from_examples(resume_examples["dir"], reference, _config(more))
    assert (ref_info["start_step"], ref_info["final_step"]) == (BASE_STEPS, 9)
    out = str(tmp_path_factory.mktemp("continued"))
    info = pretrain_from_examples(resume_examples["dir"], out, _config(
        more + [f"train.init_from={base['dir']}", "train.init_restore=all"]))
    assert (info["start_step"], info["final_step"], info["total_steps"]) == (BASE_STEPS, 9, 9)

    def lines(folder):
        return [r for r in read_history(os.path.join(folder, "model_run")) if r["step"] > BASE_STEPS]

    got, ref = lines(out), lines(reference)
    assert [r["step"] for r in got if r["split"] == "train"] == [7, 8, 9]
    assert [(r["step"], r["split"]) for r in got] == [(r["step"], r["split"]) for r in ref]
    for a, b in zip(got, ref):
        for name in ("loss", "mlm_loss", "sentence_loss", "mlm_accuracy", "sentence_accuracy", "learning_rate"):
            if name in b:  # the metrics, not the timings
                np.testing.assert_allclose(a[name], b[name], rtol=1e-5, atol=1e-7, err_msg=f"step {a['step']} {name}")
    import tensorflow as tf

    ours = tf.train.load_checkpoint(os.path.join(out, "model", "albert", "pretraining/ckpt"))
    theirs = tf.train.load_checkpoint(os.path.join(reference, "model", "albert", "pretraining/ckpt"))
    names = [n for n in theirs.get_variable_to_shape_map() if "/.ATTRIBUTES/VARIABLE_VALUE" in n]
    assert len(names) > 10
    for n in names:
        np.testing.assert_allclose(ours.get_tensor(n), theirs.get_tensor(n), rtol=1e-5, atol=1e-7, err_msg=n)


def test_restoring_the_whole_state_of_another_run_is_refused(base, resume_examples, cli, tmp_path):
    argv = ["pretrain", "--examples", resume_examples["dir"], "--output", str(tmp_path / "out"), "--preset",
            "sample"] + [f"--set={o}" for o in DATA + TRAIN + ["train.num_train_steps=9", "train.num_warmup_steps=2",
                                                               f"train.init_from={base['dir']}",
                                                               "train.init_restore=all"]]
    done = cli(*argv, "--set=train.learning_rate=0.001")
    assert done.returncode == 2 and done.stdout == ""
    (line,) = done.stderr.strip().splitlines()
    assert (f"train.init_from={base['dir']} with train.init_restore=all: this run is not the base's run continued "
            "(differs in train.learning_rate); use train.init_restore=weights") in line
