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
# short_seq_prob=1.0 and pure SOP: see LEARN_OVERRIDES. eval_fraction 0.3 holds out ~2200 instances, so SOP accuracy
# on them has a standard error of ~0.011 (at 0.1 only ~170 were held out: nothing could be told from chance).
DATA_OVERRIDES = ["datagen.max_seq_length=64", "datagen.max_predictions_per_seq=10", "datagen.dupe_factor=2",
                  "datagen.num_shards=2", "datagen.eval_fraction=0.3", "datagen.sop_mode=pure",
                  "datagen.short_seq_prob=1.0"]
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


# Optimizer: without bias correction the first steps of Adam/LAMB are several times larger than lr suggests (v
# starts at 0); at the sample preset's LAMB 0.005, or AdamW >= 1e-3, the tiny model sits on the unigram plateau.
# SOP: with the default short_seq_prob 0.1 at L=64, chunks overshoot the target and truncation trims both segment
# edges, so the order signal left is discourse-level and the tiny model stays at chance for 2000+ steps (even with
# the SOP loss alone). With every target short, many chunks are one sentence split at a word, and real-text order
# cues survive (where the sentence-final punctuation and the sentence-initial words sit: the single rule "the
# segment ending in . ? ! came second" scores 0.69). The model then leaves the SOP plateau between steps 400 and
# 1000. Measured (held-out SOP on 2221 instances / SOP on the last 100 training batches): seed 12345 at 1500 steps
# 0.72 / 0.86; seeds 1, 3 at 1000 steps 0.71 / 0.95 and 0.65 / 0.94; seed 2 memorised instead (0.51 / 0.99 at 1500
# steps). So the test asserts the training-side rise, which held for every seed, and not the held-out one. It runs
# 1000 steps (a third less time than 1500): seed 12345 there measured 0.51 / 0.92, MLM loss 6.58 (step 100) -> 5.18,
# held-out MLM accuracy 0.095 against the unigram guess's 0.057.
LEARN_OVERRIDES = ["train.optimizer=adamw", "train.learning_rate=0.0005", "train.train_batch_size=64",
                   "train.num_warmup_steps=50", "train.eval_steps=100", "train.num_train_steps=1000",
                   "train.log_every=100"]


def test_pretraining_learns_on_real_text(examples, tmp_path):
    from trainer.task import pretrain_from_examples

    config = build_config("sample", overrides=DATA_OVERRIDES + TRAIN_OVERRIDES + LEARN_OVERRIDES)
    info = pretrain_from_examples(examples, str(tmp_path / "run"), config)
    assert info["final_step"] == 1000 and info["start_step"] == 0
    train = [h for h in _history(str(tmp_path / "run")) if h["split"] == "train"]
    first, last = train[0], train[-1]
    assert last["mlm_loss"] < first["mlm_loss"] - 0.5, (first, last)
    assert last["learning_rate"] < first["learning_rate"]  # linear decay reached the end of the schedule
    evaluation = info["eval_metrics"]
    assert set(evaluation) >= {"mlm_loss", "mlm_accuracy", "sentence_accuracy"}
    # Contextual learning on held-out documents: MLM accuracy clearly above the best context-free guess.
    baseline = _unigram_baseline(examples)
    assert evaluation["mlm_accuracy"] > baseline + 0.01, (evaluation, baseline)
    # Sentence order: the SOP head learns it (mean accuracy over the last 100 batches of 64; a coin flip has a
    # standard error of 0.006 there). Held-out SOP accuracy is reported, not asserted (see LEARN_OVERRIDES).
    assert last["sentence_accuracy"] > 0.6 and last["sentence_loss"] < first["sentence_loss"] - 0.1, (first, last)
    assert 0.0 <= evaluation["sentence_accuracy"] <= 1.0
    print(f"held-out: mlm_accuracy {evaluation['mlm_accuracy']:.3f} (unigram {baseline:.3f}), "
          f"sentence_accuracy {evaluation['sentence_accuracy']:.3f}")


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


def test_resume_ignores_a_checkpoint_killed_while_it_was_written(tmp_path):
    """A kill during ``CheckpointManager.save`` leaves a ``ckpt-N_temp`` folder and maybe data without an index:
    the resume uses the previous checkpoint, and saving step N again succeeds over the leftovers."""
    import shutil

    import tensorflow as tf

    from trainer.train_lib import newest_checkpoint

    step = tf.Variable(0)
    ckpt = tf.train.Checkpoint(step=step)
    manager = tf.train.CheckpointManager(ckpt, str(tmp_path / "run"), max_to_keep=3)
    step.assign(10)
    manager.save(checkpoint_number=10)
    step.assign(20)
    complete = ckpt.write(str(tmp_path / "elsewhere" / "ckpt-20"))  # the bytes a finished write of ckpt-20 has
    (tmp_path / "run" / "ckpt-20_temp").mkdir()
    shutil.copy(complete + ".data-00000-of-00001", tmp_path / "run" / "ckpt-20_temp" / "part-00000-of-00001.data")
    shutil.copy(complete + ".data-00000-of-00001", tmp_path / "run" / "ckpt-20.data-00000-of-00001")  # no index yet
    newest = newest_checkpoint(str(tmp_path / "run"), manager.latest_checkpoint)
    assert newest == str(tmp_path / "run" / "ckpt-10")
    restored = tf.Variable(0)
    tf.train.Checkpoint(step=restored).restore(newest).assert_existing_objects_matched()
    assert int(restored.numpy()) == 10
    saved = manager.save(checkpoint_number=20)
    assert newest_checkpoint(str(tmp_path / "run"), manager.latest_checkpoint) == saved
    tf.train.Checkpoint(step=restored).restore(saved).assert_existing_objects_matched()
    assert int(restored.numpy()) == 20
