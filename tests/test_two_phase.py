"""BERT's two-phase sequence length (issue 24): datagen makes a short and a long example set from the same
documents, the Trainer switches from one to the other at ``train.long_seq_from_step``, and a run resumed on either
side of the switch is the same run. Off by default, and then nothing changes.

Data: the datagen Beam code on tests/fixtures/datagen_text.txt (four documents, one of them held out) with the
bundled 30k vocabulary, sequences of 32 and 64; albert-tiny, batch 8, 8 steps, the switch after 5.
"""
import glob
import json
import os
import shutil

import numpy as np
import pytest

from config import ConfigError
from pipeline.settings.configs import build_config
from tests.conftest import REPO

SHORT, LONG, PREDS = 32, 64, 5
DATA = [f"datagen.max_seq_length={SHORT}", f"datagen.max_predictions_per_seq={PREDS}", "datagen.dupe_factor=3",
        "datagen.num_shards=3", "datagen.eval_fraction=0.2"]
LONG_DATA = [f"datagen.long_max_seq_length={LONG}"]
STEPS, SWITCH, CHECKPOINT_EVERY = 8, 5, 3
TRAIN = [f"train.num_train_steps={STEPS}", "train.num_warmup_steps=2", "train.train_batch_size=8",
         f"train.checkpoint_every={CHECKPOINT_EVERY}", "train.log_every=1", "train.eval_every=0", "train.eval_steps=2",
         "train.shuffle_buffer=16", "train.learning_rate=0.003", f"train.long_seq_from_step={SWITCH}"]
METRICS = ("loss", "mlm_loss", "sentence_loss", "mlm_accuracy", "sentence_accuracy", "learning_rate")
DOCS_NAME = "documents-00000-of-00001.txt"


pytestmark = pytest.mark.longest_first(9)


# -- configuration ------------------------------------------------------------------------------------------------
def test_off_by_default_and_left_out_of_every_node_parameter():
    """The defaults are the official one-phase run, and a config that does not set them gives the same node
    parameters (so the same cache keys and checkpoint folders) as before the settings existed."""
    cfg = build_config("sample")
    assert (cfg.datagen.long_max_seq_length, cfg.datagen.long_max_predictions_per_seq,
            cfg.train.long_seq_from_step) == (0, 0, 0)
    params = json.dumps(cfg.node_parameters())
    assert "long_" not in params
    explicit = build_config("sample", overrides=["datagen.long_max_seq_length=0", "train.long_seq_from_step=0",
                                                 "datagen.long_max_predictions_per_seq=0"])
    assert explicit.node_parameters() == cfg.node_parameters()


def test_settings_reach_their_nodes_and_the_predictions_are_derived():
    base = build_config("sample").node_parameters()
    data_only = build_config("sample", overrides=["datagen.long_max_seq_length=256"])
    both = build_config("sample", overrides=["datagen.long_max_seq_length=256", "train.long_seq_from_step=270"])
    for cfg, nodes in ((data_only, {"PretrainingDataGen"}), (both, {"PretrainingDataGen", "Trainer"})):
        params = cfg.node_parameters()
        assert {n for n in set(base) | set(params) if base.get(n) != params.get(n)} == nodes
    assert both.node_parameters()["PretrainingDataGen"]["config"]["long_max_seq_length"] == 256
    assert json.loads(both.node_parameters()["Trainer"]["custom_config"]["albert"])["train"][
        "long_seq_from_step"] == 270
    # BERT's recipe: 20 predictions at 128 → 80 at 512; an explicit value wins.
    paper = build_config("paper", overrides=["corpus.books_dir=/books", "datagen.max_seq_length=128",
                                             "datagen.long_max_seq_length=512"])
    assert paper.datagen.long_predictions() == 80
    assert build_config("sample", overrides=["datagen.long_max_seq_length=256",
                                             "datagen.long_max_predictions_per_seq=7"]).datagen.long_predictions() == 7


@pytest.mark.parametrize("overrides,message", [
    (["train.long_seq_from_step=100"], "train.long_seq_from_step=100 is invalid: expected 0 unless "
                                       "datagen.long_max_seq_length is set"),
    (["datagen.long_max_seq_length=128"], "datagen.long_max_seq_length=128 is invalid: expected 0 (one phase) or "
                                          "more than datagen.max_seq_length=128"),
    (["datagen.long_max_seq_length=1024"], "expected at most 512, the max_position_embeddings of model.size=albert-tiny"),
    (["datagen.long_max_seq_length=256", "train.long_seq_from_step=300"],
     "train.long_seq_from_step=300 is invalid: expected 0 (one phase) or a step in (0, train.num_train_steps=300)"),
    (["datagen.long_max_predictions_per_seq=40"], "expected 0 unless datagen.long_max_seq_length is set"),
    (["datagen.long_max_seq_length=256", "datagen.long_max_predictions_per_seq=300"],
     "in [1, datagen.long_max_seq_length=256]"),
])
def test_invalid_settings_are_config_errors(overrides, message):
    with pytest.raises(ConfigError) as err:
        build_config("sample", overrides=overrides)
    assert message in str(err.value)


def test_the_run_identity_changes_with_the_switch():
    from trainer.trainer_config import ModelConfig, TrainConfig
    from trainer import task

    albert = task.AlbertConfig(**ModelConfig(size="albert-tiny").encoder_fields(500))
    key = {s: task.checkpoint_dir_for("/r", task.run_identity("f" * 64, albert, TrainConfig(long_seq_from_step=s), 1))
           for s in (0, 100, 200)}
    assert len(set(key.values())) == 3
    assert key[0] == task.checkpoint_dir_for("/r", task.run_identity("f" * 64, albert, TrainConfig(), 1))


# -- datagen ------------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def examples(tmp_path_factory, spm_model_path):
    """{"on": examples with both sets, "off": the same settings without the long set, "docs": the input file}."""
    from components.datagen.datagen_tool import make_pretraining_data

    root = tmp_path_factory.mktemp("two_phase")
    docs = root / "docs"
    docs.mkdir()
    shutil.copyfile(os.path.join(REPO, "tests", "fixtures", "datagen_text.txt"), docs / DOCS_NAME)
    out = {"docs": str(docs / DOCS_NAME)}
    for name, extra in (("on", LONG_DATA), ("off", [])):
        out[name] = str(root / name)
        out[name + "_stats"] = make_pretraining_data([str(docs)], spm_model_path, out[name],
                                                     build_config("sample", overrides=DATA + extra))
    return out


def _records(folder, split, length, preds):
    """Each record of a split as (length, segment A, segment B) with the masked pieces put back."""
    import tensorflow as tf

    from trainer.input_pipeline import feature_spec

    files = sorted(glob.glob(os.path.join(folder, f"Split-{split}", "*")))
    assert files, f"no files in Split-{split}"
    rows = []
    for rec in tf.data.TFRecordDataset(files, compression_type="GZIP"):
        ex = {k: v.numpy() for k, v in tf.io.parse_single_example(rec, feature_spec(length, preds)).items()}
        ids = ex["input_ids"].copy()
        real = ex["masked_lm_weights"] > 0
        ids[ex["masked_lm_positions"][real]] = ex["masked_lm_ids"][real]
        n = int(ex["input_mask"].sum())
        seps = np.flatnonzero(ids[:n] == 3)
        assert ids[0] == 2 and len(seps) == 2 and seps[1] == n - 1
        rows.append((n, ids[1:seps[0]].tolist(), ids[seps[0] + 1:seps[1]].tolist()))
    return rows


def _text(ids):
    return "".join(chr(0x100 + i) for i in ids)


@pytest.mark.slow
def test_datagen_makes_both_sets_from_the_same_documents(examples, tok, vocab):
    """The long splits hold sequences of the long length (many beyond the short limit), built from exactly the
    documents of the same train/eval split as the short set; the short set is byte for byte what datagen writes
    with the feature off, and the statistics and facts cover both."""
    from components.datagen import datagen_beam_input
    from components.datagen.generate import tokenize_document

    on, off = examples["on"], examples["off"]

    def shards(folder):
        return {os.path.relpath(p, folder): open(p, "rb").read()
                for p in glob.glob(os.path.join(folder, "Split-*", "*"))}

    short = shards(off)
    assert short and {k: v for k, v in shards(on).items() if "_long" not in k} == short  # the feature only adds
    assert sorted(os.listdir(on)) == ["Split-eval", "Split-eval_long", "Split-train", "Split-train_long",
                                      "dataset_info.json", "stats.json", "vocab"]
    info = json.load(open(os.path.join(on, "dataset_info.json")))
    assert (info["max_seq_length"], info["long_max_seq_length"], info["long_max_predictions_per_seq"]) == (
        SHORT, LONG, 2 * PREDS)
    assert "long_max_seq_length" not in json.load(open(os.path.join(off, "dataset_info.json")))
    stats, stats_off = examples["on_stats"], examples["off_stats"]
    assert {k: stats["splits"][k] for k in ("train", "eval")} == stats_off["splits"]
    assert stats["long_params"]["max_seq_length"] == LONG and stats["long_seed"] not in (stats["seed"], None)

    # Which split each document is in, and its pieces.
    docs = {doc_id: _text(tokenize_document(tok, sentences, vocab).flat.tolist())
            for doc_id, sentences in datagen_beam_input.read_documents(examples["docs"])}
    split_of = {d: datagen_beam_input.split_of(d, stats["seed"], 0.2) for d in docs}
    assert sorted(split_of.values()) == ["eval", "train", "train", "train"]
    used = {}
    for split, length, preds in (("train", SHORT, PREDS), ("eval", SHORT, PREDS),
                                 ("train_long", LONG, 2 * PREDS), ("eval_long", LONG, 2 * PREDS)):
        rows = _records(on, split, length, preds)
        assert len(rows) == stats["splits"][split]["instances"] > 0
        assert max(n for n, _, _ in rows) <= length
        own = split.split("_")[0]
        used[split] = set()
        for _, a, b in rows:
            for segment in (a, b):
                found = {d for d, text in docs.items() if _text(segment) in text}
                assert found and any(split_of[d] == own for d in found), (split, segment)
                if len(segment) >= 8:  # long enough to name its document: always one of its own split
                    assert {split_of[d] for d in found} == {own}, (split, segment)
                    used[split] |= found
        if split.endswith("_long"):
            assert sum(n > SHORT for n, _, _ in rows) >= len(rows) // 2  # longer than the short set can hold
    assert used["train_long"] == used["train"] == {d for d, s in split_of.items() if s == "train"}
    assert used["eval_long"] == used["eval"] == {d for d, s in split_of.items() if s == "eval"}


# -- the Trainer --------------------------------------------------------------------------------------------------
def _pretrain(examples_dir, output):
    from trainer.task import pretrain_from_examples

    return pretrain_from_examples(examples_dir, output, build_config("sample", overrides=DATA + LONG_DATA + TRAIN))


@pytest.fixture(scope="module")
def reference(examples, tmp_path_factory):
    """The uninterrupted two-phase run, with the dataset each phase opened (shape and stream position)."""
    output = str(tmp_path_factory.mktemp("reference") / "run")
    info, opened = _pretrain_recording_inputs(examples["on"], output)
    return {"dir": output, "info": info, "opened": opened}


def _pretrain_recording_inputs(examples_dir, output):
    """``_pretrain``, recording each training dataset the Trainer opens: (split folder, max_seq_length,
    max_predictions_per_seq, stream start)."""
    from trainer import input_pipeline

    opened = []
    original = input_pipeline.make_pretraining_dataset

    def recording(files, batch_size, max_seq_length, max_predictions_per_seq, **kw):
        opened.append((os.path.basename(os.path.dirname(files[0])), max_seq_length, max_predictions_per_seq,
                       kw["start"]))
        return original(files, batch_size, max_seq_length, max_predictions_per_seq, **kw)

    mp = pytest.MonkeyPatch()
    mp.setattr(input_pipeline, "make_pretraining_dataset", recording)
    try:
        return _pretrain(examples_dir, output), opened
    finally:
        mp.undo()


def _history(output, split="train"):
    from trainer.run_state import read_history

    return [h for h in read_history(os.path.join(output, "model_run")) if h["split"] == split]


def _weights(output):
    import tensorflow as tf

    reader = tf.train.load_checkpoint(os.path.join(output, "model", "albert", "pretraining", "ckpt"))
    return {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map() if name.startswith("model/")}


@pytest.mark.slow
def test_the_trainer_switches_to_the_long_sequences_at_the_step(reference, caplog):
    """Steps 1-5 train on the short examples from record 0, steps 6-8 on the long ones from their record 0; the
    held-out evaluation stays on the short eval split; the export says which length trained which steps."""
    info = reference["info"]
    assert info["final_step"] == STEPS
    assert reference["opened"] == [("Split-train", SHORT, PREDS, 0), ("Split-train_long", LONG, 2 * PREDS, 0)]
    history = _history(reference["dir"])
    assert [h["step"] for h in history] == list(range(1, STEPS + 1))
    assert [h["max_seq_length"] for h in history] == [SHORT] * SWITCH + [LONG] * (STEPS - SWITCH)
    assert history[-1]["learning_rate"] < history[SWITCH - 1]["learning_rate"]  # the schedule carried on
    assert [h["step"] for h in _history(reference["dir"], "eval")] == [STEPS] and info["eval_metrics"]["loss"] > 0
    assert info["sequence_phases"] == [{"from_step": 0, "max_seq_length": SHORT, "max_predictions_per_seq": PREDS},
                                       {"from_step": SWITCH, "max_seq_length": LONG,
                                        "max_predictions_per_seq": 2 * PREDS}]
    run_config = json.load(open(os.path.join(reference["dir"], "model_run", "run_config.json")))
    assert run_config["train"]["long_seq_from_step"] == SWITCH
    assert run_config["examples"]["long_max_seq_length"] == LONG


@pytest.mark.slow
def test_the_trainer_refuses_examples_without_the_long_split(examples, tmp_path):
    with pytest.raises(ConfigError, match="train.long_seq_from_step=5 is invalid: the examples have no long split"):
        _pretrain(examples["off"], str(tmp_path / "run"))


@pytest.mark.slow
@pytest.mark.parametrize("resume_at", [3, 6])
def test_a_resume_across_the_switch_is_the_same_run(examples, reference, tmp_path, resume_at):
    """The run's state as a process killed after checkpoint ``resume_at`` left it (the later checkpoints gone), then
    the same command again: before the switch (3) the resumed run crosses it, after it (6) it seeks into the long
    stream at (6 - 5) x 8. Every logged step and the exported weights equal the uninterrupted run's."""
    output = str(tmp_path / "run")
    shutil.copytree(reference["dir"], output)
    shutil.rmtree(os.path.join(output, "model"))
    (folder,) = glob.glob(os.path.join(output, "checkpoints", "*"))
    os.remove(os.path.join(folder, "checkpoint"))  # the state file: only the checkpoint files say what is there
    for path in glob.glob(os.path.join(folder, "ckpt-*")):
        if int(os.path.basename(path).split("-")[1].split(".")[0]) > resume_at:
            os.remove(path)
    info, opened = _pretrain_recording_inputs(examples["on"], output)
    opened = [(split, start) for split, _, _, start in opened]
    assert (info["start_step"], info["final_step"]) == (resume_at, STEPS)
    assert opened == ([("Split-train", resume_at * 8), ("Split-train_long", 0)] if resume_at < SWITCH
                      else [("Split-train_long", (resume_at - SWITCH) * 8)])
    ref, got = _history(reference["dir"]), _history(output)
    assert [h["step"] for h in got] == list(range(1, STEPS + 1))
    for a, b in zip(ref, got):
        assert a["max_seq_length"] == b["max_seq_length"]
        for name in METRICS:
            np.testing.assert_allclose(b[name], a[name], rtol=1e-5, atol=1e-7, err_msg=f"step {a['step']} {name}")
    ref_w, got_w = _weights(reference["dir"]), _weights(output)
    assert sorted(ref_w) == sorted(got_w) and len(ref_w) > 10
    for name in ref_w:
        np.testing.assert_allclose(got_w[name], ref_w[name], rtol=1e-5, atol=1e-7, err_msg=name)
