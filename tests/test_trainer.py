"""Pretraining on real bundled text: it learns, and a SIGKILLed run resumes to exactly the configured step."""
import glob
import json
import os
import signal
import subprocess
import sys
import time

import apache_beam as beam
import pytest

from components import corpus_beam
from components.datagen_tool import make_pretraining_data
from pipeline.configs import build_config

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA_OVERRIDES = ["datagen.max_seq_length=64", "datagen.max_predictions_per_seq=10", "datagen.dupe_factor=2",
                  "datagen.num_shards=2", "datagen.eval_fraction=0.1", "datagen.sop_mode=pure"]
TRAIN_OVERRIDES = ["train.train_batch_size=32", "train.learning_rate=0.005", "train.num_warmup_steps=20",
                   "train.eval_every=0", "train.eval_steps=5", "train.log_every=20"]


@pytest.fixture(scope="module")
def examples(tmp_path_factory, sample_dir):
    """The sample preset's own data path: clean documents, its trained 3000-piece vocabulary, masked examples."""
    from components import vocab_lib

    root = tmp_path_factory.mktemp("pretrain")
    docs = root / "documents"
    inputs = corpus_beam.list_inputs(os.path.join(sample_dir, "wikipedia"), "*pages-articles*",
                                     os.path.join(sample_dir, "books"), "**/*.txt")
    with beam.Pipeline() as p:
        corpus_beam.build_corpus(p, inputs, str(docs), num_shards=2, min_chars=200)
    vocab = build_config("sample").vocab
    spm_model_path = vocab_lib.train_sentencepiece(
        vocab_lib.iter_sentences(sorted(glob.glob(os.path.join(str(docs), "documents-*")))), str(root / "vocab"),
        vocab_size=vocab.vocab_size, input_sentence_size=vocab.input_sentence_size)
    out = root / "examples"
    make_pretraining_data([str(docs)], spm_model_path, str(out), build_config("sample", overrides=DATA_OVERRIDES))
    return str(out)


def _history(output):
    with open(os.path.join(output, "model_run", "train_history.jsonl")) as f:
        return [json.loads(line) for line in f]


def _unigram_baseline(examples_dir, split="eval"):
    """Accuracy of always predicting the most frequent masked id: the share of that id among masked tokens."""
    import collections

    from trainer import input_pipeline

    counts = collections.Counter()
    ds = input_pipeline.make_dataset([os.path.join(examples_dir, f"Split-{split}", "*")], 64, 64, 10,
                                     training=False, seed=0)
    for _, labels in ds:
        ids, weights = labels["masked_lm_ids"].numpy().ravel(), labels["masked_lm_weights"].numpy().ravel()
        counts.update(int(i) for i, w in zip(ids, weights) if w > 0)
    return counts.most_common(1)[0][1] / sum(counts.values())


# A few hundred steps of the official optimizers: without bias correction the first steps of Adam/LAMB are
# several times larger than lr suggests (v starts at 0), and at the sample preset's lr (LAMB 0.005) or AdamW 2e-3
# the tiny model sits on the unigram plateau for all 200-600 steps. AdamW at 5e-4 leaves it after ~200-300 steps
# (the initial weights are seeded since trainer.train_lib seeds tf_keras; measured train MLM accuracy 0.049 at
# step 200, 0.069 at 400, 0.098 at 800).
LEARN_OVERRIDES = ["train.optimizer=adamw", "train.learning_rate=0.0005", "train.eval_steps=100",
                   "train.num_train_steps=800", "train.log_every=50"]


def test_pretraining_learns_on_real_text(examples, tmp_path):
    from trainer.task import pretrain_from_examples

    config = build_config("sample", overrides=DATA_OVERRIDES + TRAIN_OVERRIDES + LEARN_OVERRIDES)
    info = pretrain_from_examples(examples, str(tmp_path / "run"), config)
    assert info["final_step"] == 800 and info["start_step"] == 0
    train = [h for h in _history(str(tmp_path / "run")) if h["split"] == "train"]
    first, last = train[0], train[-1]
    assert last["mlm_loss"] < first["mlm_loss"] - 0.5, (first, last)
    assert last["learning_rate"] < first["learning_rate"]  # linear decay reached the end of the schedule
    evaluation = info["eval_metrics"]
    assert set(evaluation) >= {"mlm_loss", "mlm_accuracy", "sentence_accuracy"}
    # Contextual learning on held-out documents: MLM accuracy clearly above the best context-free guess
    # (measured: 0.075 vs baseline 0.050 over ~1600 held-out masked tokens). SOP stays at chance in this budget
    # (train sentence loss 0.693 throughout; held-out is only 166 examples here), so it is only reported: the
    # order signal that survives truncation at this length is discourse-level, and where a shallower one exists
    # (datagen.short_seq_prob=1.0) the tiny model leaves the SOP plateau only in some runs (2 of 6, 1000-1500 steps).
    baseline = _unigram_baseline(examples)
    assert evaluation["mlm_accuracy"] > baseline + 0.01, (evaluation, baseline)
    assert 0.0 <= evaluation["sentence_accuracy"] <= 1.0


def test_sigkill_then_rerun_resumes_from_checkpoint(examples, tmp_path):
    output = str(tmp_path / "killed")
    cmd = [os.path.join(os.path.dirname(sys.executable), "albert-pipeline"), "pretrain", "--examples", examples,
           "--output", output] + [f"--set={o}" for o in DATA_OVERRIDES + TRAIN_OVERRIDES] + [
           "--set=train.num_train_steps=80", "--set=train.checkpoint_every=20"]
    env = {**os.environ, "PYTHONPATH": REPO}
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 240
    while time.time() < deadline and not glob.glob(os.path.join(output, "checkpoints", "*", "ckpt-20.index")):
        assert proc.poll() is None, "training ended before it could be killed"
        time.sleep(0.2)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL
    assert not os.path.exists(os.path.join(output, "model", "albert", "export_info.json"))
    saved = sorted(int(p.split("ckpt-")[1].split(".")[0])
                   for p in glob.glob(os.path.join(output, "checkpoints", "*", "ckpt-*.index")))
    assert saved and saved[-1] < 80

    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    info = json.loads(done.stdout)
    assert info["start_step"] == saved[-1] and info["final_step"] == 80
    steps = [h["step"] for h in _history(output) if h["split"] == "train"]
    assert steps[-1] == 80 and steps.count(80) == 1

    import tensorflow as tf

    loaded = tf.saved_model.load(os.path.join(output, "model", "Format-Serving"))
    ids = tf.constant([[2, 100, 200, 3, 300, 3]], tf.int32)
    out = loaded.signatures["serving_default"](input_ids=ids, input_mask=tf.ones_like(ids),
                                               segment_ids=tf.constant([[0, 0, 0, 0, 1, 1]]))
    assert out["pooled_output"].shape == (1, 128)


def test_resume_finds_a_checkpoint_the_state_file_does_not_list_yet(tmp_path):
    """A kill between writing ckpt-N and updating the ``checkpoint`` state file must not lose ckpt-N."""
    import tensorflow as tf

    from trainer.train_lib import newest_checkpoint

    step = tf.Variable(0)
    ckpt = tf.train.Checkpoint(step=step)
    manager = tf.train.CheckpointManager(ckpt, str(tmp_path), max_to_keep=3)
    step.assign(10)
    listed = manager.save(checkpoint_number=10)
    step.assign(20)
    ckpt.write(str(tmp_path / "ckpt-20"))  # complete files, but the state file still says ckpt-10
    (tmp_path / "ckpt-30.index").write_bytes(b"")  # an index without data shards is not a checkpoint
    assert manager.latest_checkpoint == listed
    newest = newest_checkpoint(str(tmp_path), manager.latest_checkpoint)
    assert newest == str(tmp_path / "ckpt-20")
    restored = tf.Variable(0)
    tf.train.Checkpoint(step=restored).restore(newest)
    assert int(restored.numpy()) == 20
    assert newest_checkpoint(str(tmp_path / "empty"), None) is None
