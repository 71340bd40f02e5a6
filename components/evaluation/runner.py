"""Fine-tune the pretrained ALBERT encoder on GLUE / SQuAD / RACE and score it on dev.

``run_benchmark(benchmark, albert_dir, data_dir, cfg, output_dir)`` is the core of the three
evaluator components. It restores the encoder exported by :func:`trainer.train_lib.export`
(``<albert_dir>/albert_config.json``, ``<albert_dir>/encoder/ckpt``, ``<albert_dir>/spm.model``),
adds a task head, fine-tunes with AdamW (official semantics: weight decay 0.01, global-norm clip
1.0, linear warmup + linear decay to 0) using the per-task hyper-parameters of
``cfg.hparams`` (paper Table 14), evaluates on dev and writes
``<output_dir>/metrics.json`` plus official-format prediction files.

Protocol (recorded in the result):

* ``cfg.seeds`` runs with seeds ``cfg.seed + i``; every random choice of a run (head
  initialisation, dropout, shuffling) derives from its seed. A task's reported metrics are those
  of the *median run* (the run whose headline score is the median; with an even number of runs the
  lower middle one); all runs are listed under ``runs`` and ``score_median`` is the median of the
  headline scores.
* ``checkpoint_selection="best"`` evaluates on dev every ``eval_every`` steps (and at the end) and
  keeps the best weights by headline score (the paper's practice); ``"last"`` (or ``eval_every=0``)
  evaluates once at the end.
* ``max_eval_examples`` keeps the *first* N dev examples (0 = all); the number is recorded.

Headlines (``score``; all numbers are percentages like the paper's tables): GLUE as in
:func:`components.evaluation.metrics.glue_metrics` (CoLA MCC, MRPC/QQP mean of F1 and accuracy,
STS-B mean of Pearson/Spearman, others accuracy), MNLI matched accuracy (``MNLI-m``; the
checkpoint is selected on it), SQuAD mean(F1, EM), RACE accuracy on all questions.

SQuAD v2.0 head: start/end logits from a dense layer on the sequence output, and an answerability
classifier on ``[Σ softmax(start)·h ; pooled]`` (the official v2 model's input; a tanh hidden
layer then one logit). Loss = ½(CE_start + CE_end) + ½ BCE(unanswerable). The no-answer
probability of a question is ``sigmoid(min over its windows of the classifier logit)``; the
threshold on it is tuned on dev for best F1 (``best_f1_thresh``) and the reported exact/F1 use it.

Raw-text serving model and TFMA (GLUE): the selected run of each task is exported to
``<output_dir>/<TASK>/serving_model``, a SavedModel whose ``serving_default`` signature takes raw
``text_a`` (and ``text_b``) strings: the tf.Transform graph of
:mod:`components.evaluation.transform` (built with tf.Transform's Beam implementation, written to
``<TASK>/transform``) in front of the classifier. Training and in-loop evaluation keep the NumPy
featurisation (same ids; ``transform_check`` in the task's metrics records the comparison on the
dev rows, ``serving_check`` the exported model's logits against the in-memory model's). For the
classification tasks TFMA (:mod:`components.evaluation.tfma_eval`) then evaluates the exported
model on each dev split; its metrics (fractions, TFMA's names) go under ``tfma`` next to ours.
``cfg.export_serving_model`` / ``cfg.tfma`` (default on when the config
has no such field) switch these off.

TensorFlow is imported here; Beam / tf.Transform / TFMA only for the GLUE serving export.
"""
from __future__ import annotations

import dataclasses
import json
import logging
import copy
import math
import os
import posixpath
import shutil
import tempfile
import time
import weakref
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")

import numpy as np
import tensorflow as tf
import tf_keras

from components.evaluation import glue as glue_lib
from components.evaluation import race as race_lib
from components.evaluation import squad as squad_lib
from components.evaluation.metrics import GLUE_METRICS, glue_metrics
from components.text.tokenization import AlbertTokenizer
from trainer.modeling_albert import AlbertConfig, AlbertModel
from trainer.optimization import clip_gradients, create_optimizer
from trainer.train_lib import CONFIG_FILE, ENCODER_CKPT, SPM_FILE

EXPORT_INFO = "export_info.json"  # written by trainer.train_lib.export

log = logging.getLogger(__name__)

__all__ = [
    "run_benchmark",
    "load_encoder_config",
    "build_encoder",
    "ClassifierModel",
    "SpanModel",
    "MultipleChoiceModel",
    "fine_tune",
    "BENCHMARKS",
    "METRICS_FILE",
]

BENCHMARKS = ("glue", "squad", "race")
METRICS_FILE = "metrics.json"
WEIGHT_DECAY = 0.01
CLIP_NORM = 1.0
EVAL_BATCH_SIZE = 64
FEATURE_KEYS = ("input_ids", "input_mask", "segment_ids")


# ---------------------------------------------------------------------------------------------
# Encoder + heads


def load_encoder_config(albert_dir: str) -> AlbertConfig:
    return AlbertConfig.from_json_file(os.path.join(albert_dir, CONFIG_FILE))


def build_encoder(albert_dir: str, dropout: float, max_seq_length: int) -> AlbertModel:
    """The pretrained encoder with its dropout set to ``dropout`` (hidden and attention)."""
    config = dataclasses.replace(load_encoder_config(albert_dir), hidden_dropout_prob=float(dropout),
                                 attention_probs_dropout_prob=float(dropout))
    if max_seq_length > config.max_position_embeddings:
        raise ValueError(f"max_seq_length {max_seq_length} exceeds the model's max_position_embeddings "
                         f"{config.max_position_embeddings}")
    encoder = AlbertModel(config)
    encoder(encoder.dummy_inputs(batch_size=1, seq_len=min(8, max_seq_length)), training=False)
    ckpt = os.path.join(albert_dir, ENCODER_CKPT)
    tf.train.Checkpoint(encoder=encoder).read(ckpt).assert_existing_objects_matched()
    return encoder


def _init(encoder: AlbertModel, seed: int):
    return tf_keras.initializers.TruncatedNormal(stddev=encoder.config.initializer_range, seed=seed)


def _features(inputs: Dict[str, tf.Tensor]) -> Dict[str, tf.Tensor]:
    return {k: inputs[k] for k in FEATURE_KEYS}


class ClassifierModel(tf_keras.Model):
    """pooled output → dropout → dense(num_labels) (num_labels = 1: regression). Output ``logits``."""

    def __init__(self, encoder: AlbertModel, num_labels: int, dropout: float, seed: int, **kwargs):
        super().__init__(**kwargs)
        self.albert = encoder
        self.dropout = tf_keras.layers.Dropout(dropout, seed=seed)
        self.classifier = tf_keras.layers.Dense(num_labels, kernel_initializer=_init(encoder, seed),
                                                name="classifier")

    def call(self, inputs, training=False):
        pooled = self.albert(_features(inputs), training=training)["pooled_output"]
        return {"logits": tf.cast(self.classifier(self.dropout(pooled, training=training)), tf.float32)}


class SpanModel(tf_keras.Model):
    """dense H→2 on the sequence output (start/end logits; padding masked); with ``version_2`` also
    an answerability logit (higher = unanswerable) from ``[Σ softmax(start)·h ; pooled]``."""

    def __init__(self, encoder: AlbertModel, dropout: float, seed: int, version_2: bool = False, **kwargs):
        super().__init__(**kwargs)
        self.albert = encoder
        self.version_2 = version_2
        self.dropout = tf_keras.layers.Dropout(dropout, seed=seed)
        self.span = tf_keras.layers.Dense(2, kernel_initializer=_init(encoder, seed), name="span")
        if version_2:
            self.answer_hidden = tf_keras.layers.Dense(encoder.config.hidden_size, activation="tanh",
                                                       kernel_initializer=_init(encoder, seed + 1),
                                                       name="answer_class_hidden")
            self.answer_logit = tf_keras.layers.Dense(1, kernel_initializer=_init(encoder, seed + 2),
                                                      name="answer_class")

    def call(self, inputs, training=False):
        out = self.albert(_features(inputs), training=training)
        seq = self.dropout(out["sequence_output"], training=training)
        logits = tf.cast(self.span(seq), tf.float32)
        pad = (1.0 - tf.cast(inputs["input_mask"], tf.float32)) * -10000.0
        start, end = logits[..., 0] + pad, logits[..., 1] + pad
        result = {"start_logits": start, "end_logits": end}
        if self.version_2:
            weights = tf.nn.softmax(start, axis=-1)
            attended = tf.einsum("bt,bth->bh", weights, tf.cast(seq, tf.float32))
            pooled = self.dropout(out["pooled_output"], training=training)
            h = self.answer_hidden(tf.concat([attended, tf.cast(pooled, tf.float32)], axis=-1))
            result["null_logits"] = tf.cast(self.answer_logit(h)[:, 0], tf.float32)
        return result


class MultipleChoiceModel(tf_keras.Model):
    """[B, C, L] → pooled output per option → dropout → dense(1) → logits [B, C]."""

    def __init__(self, encoder: AlbertModel, dropout: float, seed: int, **kwargs):
        super().__init__(**kwargs)
        self.albert = encoder
        self.dropout = tf_keras.layers.Dropout(dropout, seed=seed)
        self.classifier = tf_keras.layers.Dense(1, kernel_initializer=_init(encoder, seed), name="classifier")

    def call(self, inputs, training=False):
        ids = inputs["input_ids"]
        num_choices, length = tf.shape(ids)[1], tf.shape(ids)[2]
        flat = {k: tf.reshape(inputs[k], [-1, length]) for k in FEATURE_KEYS}
        pooled = self.albert(flat, training=training)["pooled_output"]
        logits = tf.cast(self.classifier(self.dropout(pooled, training=training)), tf.float32)
        return {"logits": tf.reshape(logits, [-1, num_choices])}


# ---------------------------------------------------------------------------------------------
# Losses


def classification_loss(outputs, batch):
    return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=tf.cast(batch["label_ids"], tf.int32), logits=outputs["logits"]))


def regression_loss(outputs, batch):
    return tf.reduce_mean(tf.square(outputs["logits"][:, 0] - tf.cast(batch["label_ids"], tf.float32)))


def span_loss(outputs, batch):
    ce = tf.nn.sparse_softmax_cross_entropy_with_logits
    loss = 0.5 * (tf.reduce_mean(ce(labels=tf.cast(batch["start_positions"], tf.int32), logits=outputs["start_logits"]))
                  + tf.reduce_mean(ce(labels=tf.cast(batch["end_positions"], tf.int32), logits=outputs["end_logits"])))
    if "null_logits" in outputs:
        loss += 0.5 * tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(
            labels=tf.cast(batch["is_impossible"], tf.float32), logits=outputs["null_logits"]))
    return loss


# ---------------------------------------------------------------------------------------------
# The shared loop


_PREDICT_FNS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # one compiled step per model


def predict(model: tf_keras.Model, arrays: Dict[str, np.ndarray], batch_size: int = EVAL_BATCH_SIZE,
            step_fn=None) -> Dict[str, np.ndarray]:
    """Model outputs (numpy) for every row of ``arrays``; the last batch is padded to a fixed shape
    so the compiled step is traced once."""
    feats = {k: arrays[k] for k in FEATURE_KEYS}
    n = feats["input_ids"].shape[0]
    if step_fn is None:
        step_fn = _PREDICT_FNS.get(model)
        if step_fn is None:
            step_fn = _PREDICT_FNS[model] = tf.function(lambda x: model(x, training=False))
    chunks: Dict[str, List[np.ndarray]] = {}
    for start in range(0, n, batch_size):
        batch = {k: v[start:start + batch_size] for k, v in feats.items()}
        real = batch["input_ids"].shape[0]
        if real < batch_size:
            batch = {k: np.concatenate([v, np.zeros((batch_size - real,) + v.shape[1:], v.dtype)])
                     for k, v in batch.items()}
        for key, value in step_fn(batch).items():
            chunks.setdefault(key, []).append(value.numpy()[:real])
    return {k: np.concatenate(v) for k, v in chunks.items()} if chunks else {}


def make_train_step(model: tf_keras.Model, loss_fn: Callable, learning_rate: float, warmup_steps: int,
                    total_steps: int) -> Callable:
    """The compiled fine-tuning step (AdamW + warmup/linear decay, weight decay 0.01, clip 1.0) for ``model``;
    ``benchmarks/finetune.py`` times this same function."""
    optimizer = create_optimizer("adamw", learning_rate, warmup_steps, total_steps, weight_decay=WEIGHT_DECAY)
    variables = model.trainable_variables
    optimizer.build(variables)

    @tf.function
    def train_step(batch):
        with tf.GradientTape() as tape:
            loss = loss_fn(model(batch, training=True), batch)
        grads = tape.gradient(loss, variables)
        grads, _ = clip_gradients(grads, CLIP_NORM)
        # Unused variables (e.g. the pooler under the SQuAD v1.1 head) have no gradient.
        optimizer.apply_gradients([(g, v) for g, v in zip(grads, variables) if g is not None])
        return loss

    return train_step


def fine_tune(model: tf_keras.Model, loss_fn: Callable, train_arrays: Dict[str, np.ndarray], hp, seed: int,
              evaluate: Callable[[tf_keras.Model], Tuple[Dict[str, Any], Any]], selection: str = "last",
              eval_every: int = 0) -> Dict[str, Any]:
    """One fine-tuning run shared by every head.

    AdamW with linear warmup/decay (``hp.learning_rate``, ``hp.warmup_steps``, ``hp.train_steps``),
    weight decay 0.01 (not on LayerNorm/bias), global-norm clipping 1.0, batches of
    ``hp.batch_size`` drawn from ``train_arrays`` shuffled with ``seed`` (repeated as needed).
    ``evaluate(model) -> (metrics with "score", payload)``. With ``selection="best"`` and
    ``eval_every > 0`` the model is evaluated every ``eval_every`` steps and at the end and the
    best-scoring weights are restored at the end; otherwise it is evaluated once at the end.
    Returns ``{"metrics", "payload", "step", "history", "train_seconds", "eval_seconds", "final_loss"}``.
    """
    n = int(next(iter(train_arrays.values())).shape[0])
    if n == 0:
        raise ValueError("no training examples")
    steps = int(hp.train_steps)
    ds = (tf.data.Dataset.from_tensor_slices(train_arrays)
          .shuffle(n, seed=seed, reshuffle_each_iteration=True)
          .repeat()
          .batch(int(hp.batch_size), drop_remainder=True)
          .prefetch(2))
    train_step = make_train_step(model, loss_fn, float(hp.learning_rate), int(hp.warmup_steps), steps)

    periodic = selection == "best" and eval_every > 0
    best: Optional[Dict[str, Any]] = None
    history: List[Dict[str, Any]] = []
    train_seconds = eval_seconds = 0.0
    losses: List[float] = []
    iterator = iter(ds)
    t0 = time.time()
    for step in range(1, steps + 1):
        losses.append(float(train_step(next(iterator))))
        if (periodic and step % eval_every == 0) or step == steps:
            train_seconds += time.time() - t0
            t1 = time.time()
            metrics, payload = evaluate(model)
            eval_seconds += time.time() - t1
            score = metrics.get("score")
            window = losses[-min(len(losses), 10):]
            history.append({"step": step, "score": score, "train_loss": float(np.mean(window))})
            if best is None or not periodic or _better(score, best["metrics"].get("score")):
                best = {"metrics": metrics, "payload": payload, "step": step,
                        "weights": model.get_weights() if periodic and step != steps else None}
            t0 = time.time()
    if not math.isfinite(losses[-1]):
        log.warning("fine-tuning loss is not finite at the last step: %s", losses[-1])
    if best["weights"] is not None:
        model.set_weights(best["weights"])  # the best checkpoint on dev, for test predictions
    return {"metrics": best["metrics"], "payload": best["payload"], "step": best["step"], "history": history,
            "train_seconds": train_seconds, "eval_seconds": eval_seconds, "final_loss": losses[-1]}


def _better(score, best_score) -> bool:
    if score is None or (isinstance(score, float) and math.isnan(score)):
        return False
    if best_score is None or (isinstance(best_score, float) and math.isnan(best_score)):
        return True
    return score > best_score


def _seed_everything(seed: int) -> None:
    tf_keras.utils.set_random_seed(seed)  # python, numpy and TF global seeds


# ---------------------------------------------------------------------------------------------
# GLUE


def _pct(values: Dict[str, Any], keys: Sequence[str]) -> Dict[str, Any]:
    return {k: (100.0 * float(values[k]) if values[k] is not None else None) for k in keys}


def _glue_scores(task: str, logits: np.ndarray, labels: np.ndarray) -> Dict[str, Any]:
    values = glue_metrics(task, logits, labels)
    return _pct(values, list(GLUE_METRICS[glue_lib.get_task(task).name]["metrics"]) + ["score"])


def _glue_predictions(task: glue_lib.GlueTask, logits: np.ndarray):
    return logits[:, 0] if task.is_regression else np.argmax(logits, axis=-1)


def _run_glue_task(task_name: str, data_dir: str, albert_dir: str, tokenizer, cfg, output_dir: str,
                   runs_out: Dict[str, Any]) -> Dict[str, Dict[str, Any]]:
    task = glue_lib.get_task(task_name)
    hp = cfg.hparams[task.name]
    b = cfg
    dev_splits = ["dev_matched", "dev_mismatched"] if task.name == "MNLI" else ["dev"]
    names = {"dev_matched": "MNLI-m", "dev_mismatched": "MNLI-mm", "dev": task.name}
    test_splits = [s for s in task.splits if s.startswith("test")
                   and os.path.exists(os.path.join(data_dir, task.name, task.splits[s].filename))]

    train_ex = glue_lib.read_glue(task.name, "train", data_dir)
    train = glue_lib.convert_glue_examples(train_ex, tokenizer, hp.max_seq_length, task.name)
    devs = {}
    for split in dev_splits:
        ex = glue_lib.read_glue(task.name, split, data_dir)
        if b.max_eval_examples:
            ex = ex[: b.max_eval_examples]
        devs[split] = (ex, glue_lib.convert_glue_examples(ex, tokenizer, hp.max_seq_length, task.name))

    def evaluate(model):
        metrics, payload = {}, {}
        for split, (_, arrays) in devs.items():
            logits = predict(model, arrays)["logits"]
            scores = _glue_scores(task.name, logits, arrays["label_ids"])
            payload[split] = _glue_predictions(task, logits)
            metrics[split] = scores
        # Selection / headline: the first dev split (MNLI: matched).
        return {"score": metrics[dev_splits[0]]["score"], "splits": metrics}, payload

    loss_fn = regression_loss if task.is_regression else classification_loss
    export = bool(getattr(b, "export_serving_model", True))
    test_payloads = []

    def after_run(model, res):
        if export:
            res["weights"] = model.get_weights()  # the selected weights, exported if this run is the median
        tests = {}
        for split in test_splits:
            ex = glue_lib.read_glue(task.name, split, data_dir)
            arrays = glue_lib.convert_glue_examples(ex, tokenizer, hp.max_seq_length, task.name)
            tests[split] = (ex, _glue_predictions(task, predict(model, arrays)["logits"]))
        test_payloads.append(tests)

    run_results, chosen = _fine_tune_seeds(
        cfg, albert_dir, hp, train, lambda enc, seed: ClassifierModel(enc, task.num_labels, hp.classifier_dropout, seed),
        loss_fn, evaluate, after_run)
    res = run_results[chosen]
    pred_dir = os.path.join(output_dir, "predictions", task.name)
    out: Dict[str, Dict[str, Any]] = {}
    for split in dev_splits:
        ex, _ = devs[split]
        path = os.path.join(pred_dir, f"{split}.tsv")
        glue_lib.write_glue_predictions(task.name, [e.guid for e in ex], list(res["payload"][split]), path)
        entry = dict(res["metrics"]["splits"][split])
        entry.update(_run_summary(run_results, chosen, lambda m, s=split: m["splits"][s]))
        entry.update({"num_train": len(train_ex), "num_dev": len(ex), "predictions": os.path.relpath(path, output_dir)})
        out[names[split]] = entry
    for split, (ex, preds) in test_payloads[chosen].items():
        path = os.path.join(output_dir, "predictions", "glue_test", glue_lib.submission_filename(task.name, split))
        glue_lib.write_glue_predictions(task.name, [e.guid for e in ex], list(preds), path)
        out[names.get(split.replace("test", "dev"), task.name)]["test_predictions"] = os.path.relpath(path, output_dir)
    if export:
        serving = _export_glue_serving(task, hp, albert_dir, tokenizer, res, devs, dev_splits, output_dir,
                                       run_tfma=bool(getattr(b, "tfma", True)))
        for split in dev_splits:
            out[names[split]].update(serving.get(split, {}))
    for r in run_results:
        r.pop("weights", None)
    runs_out[task.name] = _runs_record(run_results)
    return out


def _export_glue_serving(task: glue_lib.GlueTask, hp, albert_dir: str, tokenizer, res, devs, dev_splits,
                         output_dir: str, run_tfma: bool = True) -> Dict[str, Dict[str, Any]]:
    """Export ``<output_dir>/<task>/serving_model`` (tf.Transform graph + the selected classifier, raw
    text in) and, for classification tasks, run TFMA on it over each dev split.

    The Transform graph is built by tf.Transform's Beam implementation over the first dev split;
    its ids are compared with the Python featurisation used for training (``transform_check``), and
    the exported model's logits on the raw dev text with the in-memory model's (``serving_check``).
    Failures are logged and recorded under ``serving_error`` / ``tfma.error`` (the fine-tuning
    results stand).
    """
    from components.evaluation import transform as transform_lib

    task_dir = os.path.join(output_dir, task.name)
    serving_dir = os.path.join(task_dir, "serving_model")
    has_b = task.splits["train"].text_b is not None
    result: Dict[str, Dict[str, Any]] = {s: {} for s in dev_splits}
    try:
        first_ex, first_arrays = devs[dev_splits[0]]
        rows = [{"text_a": e.text_a, **({"text_b": e.text_b} if has_b else {})} for e in first_ex]
        fn = transform_lib.make_preprocessing_fn(tokenizer.sp.serialized_model_proto(), hp.max_seq_length,
                                                 tokenizer.do_lower_case, has_text_b=has_b)
        scratch = tempfile.mkdtemp(prefix="albert_tft_")
        try:
            transformed = transform_lib.analyze_and_transform(rows, fn, has_b, os.path.join(task_dir, "transform"),
                                                              temp_dir=scratch)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        equal = sum(all(np.array_equal(np.asarray(t[k]).reshape(-1), first_arrays[k][i]) for k in FEATURE_KEYS)
                    for i, t in enumerate(transformed))
        transform_check = {"split": dev_splits[0], "rows": len(rows), "rows_equal_python_featurisation": int(equal)}
        if equal != len(rows):
            log.warning("%s: the Transform graph's ids differ from the Python featurisation on %d of %d dev rows",
                        task.name, len(rows) - equal, len(rows))
        encoder = build_encoder(albert_dir, hp.albert_dropout, hp.max_seq_length)
        model = ClassifierModel(encoder, task.num_labels, hp.classifier_dropout, res["seed"])
        model(_features({k: v[:1] for k, v in first_arrays.items()}), training=False)
        model.set_weights(res["weights"])
        in_memory = predict(model, first_arrays)["logits"]
        if os.path.exists(serving_dir):
            shutil.rmtree(serving_dir)
        transform_lib.export_serving_model(model, os.path.join(task_dir, "transform"), serving_dir, has_b,
                                           task.num_labels)
        del model, encoder
        serve = tf.saved_model.load(serving_dir).signatures["serving_default"]
        served = []
        for start in range(0, len(rows), EVAL_BATCH_SIZE):
            chunk = first_ex[start:start + EVAL_BATCH_SIZE]
            feed = {"text_a": tf.constant([e.text_a for e in chunk])}
            if has_b:
                feed["text_b"] = tf.constant([e.text_b for e in chunk])
            served.append(serve(**feed)["logits"].numpy())
        served_logits = np.concatenate(served) if served else np.zeros_like(in_memory)
        serving_check = {"split": dev_splits[0], "rows": len(rows),
                         "max_abs_logit_diff": float(np.max(np.abs(served_logits - in_memory))) if len(rows) else 0.0,
                         "same_predictions": int(np.sum(_glue_predictions(task, served_logits)
                                                        == _glue_predictions(task, in_memory)))}
        common = {"serving_model": os.path.relpath(serving_dir, output_dir), "transform_check": transform_check,
                  "serving_check": serving_check}
    except Exception as e:  # noqa: BLE001 - record, keep the fine-tuning results
        log.exception("%s: exporting the raw-text serving model failed", task.name)
        for split in dev_splits:
            result[split]["serving_error"] = f"{type(e).__name__}: {e}"
        return result
    for split in dev_splits:
        result[split].update(common)
    if not run_tfma:
        return result
    from components.evaluation import tfma_eval

    for split in dev_splits:
        if not tfma_eval.tfma_supported(task.num_labels):
            result[split]["tfma"] = {"skipped": "regression task: no TFMA metric for Pearson/Spearman"}
            continue
        ex, arrays = devs[split]
        tfma_dir = os.path.join(task_dir, "tfma", split)
        try:
            path = tfma_eval.write_eval_examples(os.path.join(tfma_dir, "dev.tfrecord"), [e.text_a for e in ex],
                                                 [e.text_b for e in ex] if has_b else None, arrays["label_ids"])
            r = tfma_eval.run_tfma(path, os.path.join(tfma_dir, "eval_result"), task.num_labels, model_dir=serving_dir)
            result[split]["tfma"] = {"metrics": r["metrics"], "mode": r["mode"],
                                     "output": os.path.relpath(os.path.join(tfma_dir, "eval_result"), output_dir)}
        except Exception as e:  # noqa: BLE001
            log.exception("%s %s: TFMA failed", task.name, split)
            result[split]["tfma"] = {"error": f"{type(e).__name__}: {e}"}
    return result


# ---------------------------------------------------------------------------------------------
# SQuAD


def _filter_squad(articles: List[Dict], keep: set) -> List[Dict]:
    out = []
    for article in articles:
        paragraphs = []
        for p in article["paragraphs"]:
            qas = [qa for qa in p["qas"] if qa["id"] in keep]
            if qas:
                paragraphs.append(dict(p, qas=qas))
        if paragraphs:
            out.append(dict(article, paragraphs=paragraphs))
    return out


def _run_squad(data_dir: str, albert_dir: str, tokenizer, cfg, output_dir: str, runs_out: Dict[str, Any]):
    b = cfg
    v2 = b.squad_version == "2.0"
    name = "SQuAD2.0" if v2 else "SQuAD1.1"
    hp = b.hparams[name]
    train_path = os.path.join(data_dir, b.squad_train_file)
    dev_path = os.path.join(data_dir, b.squad_dev_file)
    skipped: List[Tuple[str, str, str]] = []
    train_ex = squad_lib.read_squad(train_path, on_bad_answer="skip", skipped=skipped)
    train, _ = squad_lib.convert_squad_examples(train_ex, tokenizer, hp.max_seq_length, b.doc_stride,
                                                b.max_query_length, is_training=True)
    dev_articles = squad_lib.load_squad_json(dev_path)
    dev_ex = squad_lib.read_squad(dev_articles, on_bad_answer="skip", skipped=skipped)
    if b.max_eval_examples:
        dev_ex = dev_ex[: b.max_eval_examples]
        dev_articles = _filter_squad(dev_articles, {e.qid for e in dev_ex})
    dev, metas = squad_lib.convert_squad_examples(dev_ex, tokenizer, hp.max_seq_length, b.doc_stride,
                                                  b.max_query_length, is_training=False)

    def evaluate(model):
        out = predict(model, dev)
        preds, span_odds = squad_lib.postprocess_squad(dev_ex, metas, out["start_logits"], out["end_logits"],
                                                       b.n_best_size, b.max_answer_length, version_2=False)
        if not v2:
            m = squad_lib.squad_v1_metrics(dev_articles, preds)
            metrics = {"exact_match": m["exact_match"], "f1": m["f1"], "total": m["total"]}
            metrics["score"] = 0.5 * (metrics["exact_match"] + metrics["f1"])
            return metrics, {"predictions": preds}
        na_prob = _squad_na_prob(dev_ex, metas, out["null_logits"])
        thresh, _ = squad_lib.best_null_threshold(dev_articles, preds, na_prob)
        final = squad_lib.apply_null_threshold(preds, na_prob, thresh)
        m = squad_lib.squad_v2_metrics(dev_articles, final, na_prob, null_threshold=thresh)
        metrics = {k: v for k, v in m.items()}
        metrics["exact_match"] = m["exact"]
        metrics["null_threshold"] = thresh
        metrics["score"] = 0.5 * (metrics["exact_match"] + metrics["f1"])
        return metrics, {"predictions": final, "na_prob": na_prob}

    run_results, chosen = _fine_tune_seeds(
        cfg, albert_dir, hp, train, lambda enc, seed: SpanModel(enc, hp.classifier_dropout, seed, version_2=v2),
        span_loss, evaluate)
    res = run_results[chosen]
    pred_path = os.path.join(output_dir, "predictions", "squad_predictions.json")
    squad_lib.write_squad_predictions(res["payload"]["predictions"], pred_path)
    entry = dict(res["metrics"])
    entry.update(_run_summary(run_results, chosen, lambda m: m))
    entry.update({"num_train": len(train_ex), "num_train_features": int(train["input_ids"].shape[0]),
                  "num_dev": len(dev_ex), "num_dev_features": int(dev["input_ids"].shape[0]),
                  "skipped_questions": len(skipped), "predictions": os.path.relpath(pred_path, output_dir)})
    if v2:
        na_path = os.path.join(output_dir, "predictions", "squad_na_prob.json")
        squad_lib.write_null_odds(res["payload"]["na_prob"], na_path)
        entry["na_prob"] = os.path.relpath(na_path, output_dir)
    if b.max_eval_examples:
        subset = os.path.join(output_dir, "predictions", "squad_dev_subset.json")
        with open(subset, "w", encoding="utf-8") as f:
            json.dump({"version": b.squad_version, "data": dev_articles}, f, ensure_ascii=False)
        entry["dev_subset"] = os.path.relpath(subset, output_dir)
    runs_out[name] = _runs_record(run_results)
    return {name: entry}


def _squad_na_prob(examples, metas, null_logits) -> Dict[str, float]:
    """sigmoid(min over a question's windows of the unanswerable logit) (reference: min over windows)."""
    best: Dict[int, float] = {}
    for f_i, meta in enumerate(metas):
        v = float(null_logits[f_i])
        best[meta.example_index] = min(best.get(meta.example_index, v), v)
    return {ex.qid: float(1.0 / (1.0 + math.exp(-max(min(best.get(i, 0.0), 60.0), -60.0))))
            for i, ex in enumerate(examples)}


# ---------------------------------------------------------------------------------------------
# RACE


def _run_race(data_dir: str, albert_dir: str, tokenizer, cfg, output_dir: str, runs_out: Dict[str, Any]):
    b = cfg
    hp = b.hparams["RACE"]
    max_qa = min(128, hp.max_seq_length // 2)  # official: 128 of 512; keep room for the article at short lengths
    train_ex = race_lib.read_race(data_dir, split="train")
    dev_ex = race_lib.read_race(data_dir, split="dev")
    if b.max_eval_examples:
        dev_ex = dev_ex[: b.max_eval_examples]
    train = race_lib.convert_race_examples(train_ex, tokenizer, hp.max_seq_length, max_qa)
    dev = race_lib.convert_race_examples(dev_ex, tokenizer, hp.max_seq_length, max_qa)
    levels = np.asarray([e.level for e in dev_ex])

    def evaluate(model):
        logits = predict(model, dev, batch_size=max(1, EVAL_BATCH_SIZE // 4))["logits"]
        m = race_lib.race_metrics(logits, dev["label_ids"], levels)
        metrics = {k: (100.0 * m[k] if not math.isnan(m[k]) else None) for k in ("middle", "high", "all")}
        metrics.update({k: m[k] for k in ("n_middle", "n_high", "n_all")})
        metrics["score"] = metrics["all"]
        return metrics, {"predictions": np.argmax(logits, axis=-1)}

    run_results, chosen = _fine_tune_seeds(
        cfg, albert_dir, hp, train, lambda enc, seed: MultipleChoiceModel(enc, hp.classifier_dropout, seed),
        classification_loss, evaluate)
    res = run_results[chosen]
    pred_path = os.path.join(output_dir, "predictions", "race_dev_predictions.json")
    os.makedirs(os.path.dirname(pred_path), exist_ok=True)
    with open(pred_path, "w", encoding="utf-8") as f:
        json.dump({e.example_id: race_lib.ANSWER_LETTERS[int(p)] for e, p in zip(dev_ex, res["payload"]["predictions"])},
                  f, indent=1)
    entry = dict(res["metrics"])
    entry.update(_run_summary(run_results, chosen, lambda m: m))
    entry.update({"num_train": len(train_ex), "num_dev": len(dev_ex), "max_qa_length": max_qa,
                  "predictions": os.path.relpath(pred_path, output_dir)})
    runs_out["RACE"] = _runs_record(run_results)
    return {"RACE": entry}


# ---------------------------------------------------------------------------------------------
# Seeds / protocol helpers


def _fine_tune_seeds(cfg, albert_dir: str, hp, train: Dict[str, np.ndarray],
                     make_head: Callable[[tf_keras.Model, int], tf_keras.Model], loss_fn: Callable,
                     evaluate: Callable, after_run: Optional[Callable] = None) -> Tuple[List[Dict[str, Any]], int]:
    """One fine-tuning run per seed (``cfg.seed + i``) on a freshly restored encoder; returns the runs and the
    index of the median one (the protocol's reported run). ``after_run(model, result)`` sees each trained model."""
    b = cfg
    runs: List[Dict[str, Any]] = []
    for i in range(b.seeds):
        seed = cfg.seed + i
        _seed_everything(seed)
        encoder = build_encoder(albert_dir, hp.albert_dropout, hp.max_seq_length)
        model = make_head(encoder, seed)
        model(_features({k: v[:1] for k, v in train.items()}), training=False)
        res = fine_tune(model, loss_fn, train, hp, seed, evaluate, b.checkpoint_selection, b.eval_every)
        res["seed"] = seed
        if after_run is not None:
            after_run(model, res)
        runs.append(res)
        del model, encoder
    return runs, _median_run(runs)


def _median_run(run_results: List[Dict[str, Any]]) -> int:
    """Index of the run whose headline score is the median (lower middle for an even count; NaN last)."""
    def key(i):
        s = run_results[i]["metrics"].get("score")
        return (s is None or (isinstance(s, float) and math.isnan(s)), s if s is not None else 0.0, i)
    order = sorted(range(len(run_results)), key=key)
    return order[(len(order) - 1) // 2]


def _run_summary(run_results, chosen: int, pick: Callable) -> Dict[str, Any]:
    scores = [pick(r["metrics"]).get("score") for r in run_results]
    finite = [s for s in scores if s is not None and not (isinstance(s, float) and math.isnan(s))]
    return {
        "score_median": float(np.median(finite)) if finite else None,
        "score_mean": float(np.mean(finite)) if finite else None,
        "score_std": float(np.std(finite)) if finite else None,
        "run_scores": scores,
        "median_run": chosen,
        "seed": run_results[chosen]["seed"],
        "selected_step": run_results[chosen]["step"],
    }


def _runs_record(run_results) -> List[Dict[str, Any]]:
    return [{"seed": r["seed"], "selected_step": r["step"], "metrics": r["metrics"], "history": r["history"],
             "final_train_loss": r["final_loss"], "train_seconds": round(r["train_seconds"], 3),
             "eval_seconds": round(r["eval_seconds"], 3)} for r in run_results]


def _json_safe(obj):
    """NaN/inf → None, numpy scalars → Python (strict JSON)."""
    if isinstance(obj, dict):
        return {str(k): _json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_json_safe(v) for v in obj]
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (np.floating, float)):
        v = float(obj)
        return v if math.isfinite(v) else None
    if isinstance(obj, np.ndarray):
        return _json_safe(obj.tolist())
    return obj


# ---------------------------------------------------------------------------------------------
# Entry point


def _is_uri(path: str) -> bool:
    return "://" in str(path)


def _download_tree(src: str, dst: str) -> None:
    tf.io.gfile.makedirs(dst)
    for name in tf.io.gfile.listdir(src):
        name = name.rstrip("/")
        s, d = src.rstrip("/") + "/" + name, os.path.join(dst, name)
        if tf.io.gfile.isdir(s):
            _download_tree(s, d)
        else:
            tf.io.gfile.copy(s, d, overwrite=True)


def _upload_tree(src: str, dst: str) -> None:
    tf.io.gfile.makedirs(dst)
    for name in sorted(os.listdir(src)):
        s, d = os.path.join(src, name), dst.rstrip("/") + "/" + name
        if os.path.isdir(s):
            _upload_tree(s, d)
        else:
            tf.io.gfile.copy(s, d, overwrite=True)


def benchmark_settings(cfg):
    """The benchmark section with its seed resolved; a whole pipeline config (scripts, tests) is narrowed."""
    if hasattr(cfg, "benchmarks"):
        settings = copy.copy(cfg.benchmarks)
        settings.seed = cfg.seed if settings.seed is None else settings.seed
        return settings
    if cfg.seed is None:
        raise ValueError("benchmark settings need a resolved seed")
    return cfg


def model_do_lower_case(albert_dir: str) -> bool:
    """Whether the pretrained model's text was lower-cased (recorded at export from the examples artifact)."""
    path = posixpath.join(albert_dir, EXPORT_INFO)
    if not tf.io.gfile.exists(path):
        return True  # ALBERT's default; exports from before the fact was recorded
    with tf.io.gfile.GFile(path) as f:
        return bool(json.load(f).get("do_lower_case", True))


def run_benchmark(benchmark: str, albert_dir: str, data_dir: str, cfg, output_dir: str) -> Dict[str, Any]:
    """Fine-tune + evaluate one benchmark ("glue" | "squad" | "race"); writes and returns metrics.json.

    ``cfg``: the node's :class:`config.BenchmarkConfig` (``seed`` resolved; a whole pipeline config is
    narrowed to its ``benchmarks`` section). ``do_lower_case`` comes from the pretrained model's
    ``export_info.json``, like the vocabulary, never from a copy of the vocab settings. ``data_dir``: GLUE root holding
    ``<TASK>/`` folders, the folder holding the SQuAD files, or the RACE root holding
    ``train/`` and ``dev/``. Result: ``{"benchmark", "tasks": {name: metrics}, "skipped",
    "protocol", "runs", "seconds"}``; all metric values are percentages.

    Remote URIs (``gs://...``) work for all three paths: the data and the SentencePiece model are
    copied to a local temporary folder (the readers use ``open()``), outputs are written locally
    and uploaded at the end.
    """
    cfg = benchmark_settings(cfg)
    if not any(_is_uri(p) for p in (albert_dir, data_dir, output_dir)):
        return _run_benchmark_local(benchmark, albert_dir, data_dir, cfg, output_dir)
    scratch = tempfile.mkdtemp(prefix="albert_bench_")
    try:
        local_data = data_dir
        if _is_uri(data_dir):
            local_data = os.path.join(scratch, "data")
            _download_tree(data_dir, local_data)
        local_out = os.path.join(scratch, "out") if _is_uri(output_dir) else output_dir
        result = _run_benchmark_local(benchmark, albert_dir, local_data, cfg, local_out,
                                      spm_dir=os.path.join(scratch, "spm") if _is_uri(albert_dir) else None)
        if _is_uri(output_dir):
            _upload_tree(local_out, output_dir)
        return result
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _run_benchmark_local(benchmark: str, albert_dir: str, data_dir: str, cfg, output_dir: str,
                         spm_dir: Optional[str] = None) -> Dict[str, Any]:
    benchmark = benchmark.lower()
    if benchmark not in BENCHMARKS:
        raise ValueError(f"unknown benchmark {benchmark!r}; expected one of {BENCHMARKS}")
    b = cfg
    if b.checkpoint_selection not in ("best", "last"):
        raise ValueError(f"checkpoint_selection must be 'best' or 'last', got {b.checkpoint_selection!r}")
    os.makedirs(output_dir, exist_ok=True)
    started = time.time()
    albert_config = load_encoder_config(albert_dir)
    spm_path = os.path.join(albert_dir, SPM_FILE)
    local_spm = spm_path
    if spm_dir is not None:
        os.makedirs(spm_dir, exist_ok=True)
        local_spm = os.path.join(spm_dir, SPM_FILE)
        tf.io.gfile.copy(spm_path, local_spm, overwrite=True)
    tokenizer = AlbertTokenizer(local_spm, do_lower_case=model_do_lower_case(albert_dir))
    if tokenizer.vocab_size != albert_config.vocab_size:
        raise ValueError(f"{spm_path} has {tokenizer.vocab_size} pieces but the model's vocab_size is "
                         f"{albert_config.vocab_size}")

    tasks: Dict[str, Dict[str, Any]] = {}
    skipped: Dict[str, str] = {}
    runs: Dict[str, Any] = {}
    hparams: Dict[str, Any] = {}
    timings: Dict[str, float] = {}
    if benchmark == "glue":
        for name in b.glue_tasks:
            task = glue_lib.get_task(name)
            folder = os.path.join(data_dir, task.name)
            train_file = os.path.join(folder, task.splits["train"].filename)
            dev_files = [os.path.join(folder, task.splits[s].filename) for s in task.splits if s.startswith("dev")]
            if not (os.path.exists(train_file) and all(os.path.exists(p) for p in dev_files)):
                skipped[task.name] = f"no train/dev data under {folder}"
                continue
            t0 = time.time()
            hparams[task.name] = dataclasses.asdict(b.hparams[task.name])
            tasks.update(_run_glue_task(task.name, data_dir, albert_dir, tokenizer, cfg, output_dir, runs))
            timings[task.name] = round(time.time() - t0, 3)
    elif benchmark == "squad":
        name = "SQuAD2.0" if b.squad_version == "2.0" else "SQuAD1.1"
        t0 = time.time()
        hparams[name] = dataclasses.asdict(b.hparams[name])
        tasks.update(_run_squad(data_dir, albert_dir, tokenizer, cfg, output_dir, runs))
        timings[name] = round(time.time() - t0, 3)
    else:
        t0 = time.time()
        hparams["RACE"] = dataclasses.asdict(b.hparams["RACE"])
        tasks.update(_run_race(data_dir, albert_dir, tokenizer, cfg, output_dir, runs))
        timings["RACE"] = round(time.time() - t0, 3)

    periodic = b.checkpoint_selection == "best" and b.eval_every > 0
    protocol = {
        "seeds": [cfg.seed + i for i in range(b.seeds)],
        "aggregation": "median run by headline score" if b.seeds > 1 else "single run",
        "checkpoint_selection": b.checkpoint_selection,
        "checkpoint_selection_effective": "best on dev" if periodic else "last",
        "eval_every": b.eval_every,
        "max_eval_examples": b.max_eval_examples,
        "dev_subset": "first N examples" if b.max_eval_examples else "all",
        "hparams": hparams,
        "optimizer": {"name": "adamw", "weight_decay": WEIGHT_DECAY, "clip_norm": CLIP_NORM,
                      "schedule": "linear warmup then linear decay to 0", "beta_1": 0.9, "beta_2": 0.999,
                      "epsilon": 1e-6},
        "pretrained": {"albert_dir": albert_dir, "encoder_checkpoint": os.path.join(albert_dir, ENCODER_CKPT),
                       "albert_config": albert_config.to_dict(), "spm_model": spm_path},
        "data_dir": data_dir,
        "metric_scale": "percent",
    }
    if benchmark == "squad":
        protocol["squad"] = {"version": b.squad_version, "train_file": b.squad_train_file,
                             "dev_file": b.squad_dev_file, "doc_stride": b.doc_stride,
                             "max_query_length": b.max_query_length, "max_answer_length": b.max_answer_length,
                             "n_best_size": b.n_best_size}
    result = {"benchmark": benchmark, "tasks": tasks, "skipped": skipped, "protocol": protocol, "runs": runs,
              "seconds": {"total": round(time.time() - started, 3), **timings}}
    result = _json_safe(result)
    with open(os.path.join(output_dir, METRICS_FILE), "w", encoding="utf-8") as f:
        json.dump(result, f, indent=2, sort_keys=True, allow_nan=False)
    return result
