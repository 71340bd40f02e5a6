"""Raw-text serving models of fine-tuned task models: the tokenizer, the featurisation and the decoding in the graph.

The selected run of a task becomes ``<output_dir>/<TASK>/serving_model`` (a SavedModel whose ``serving_default``
takes raw strings) with ``<output_dir>/<TASK>/serving_info.json`` beside it::

    {"kind": "classify" | "answer" | "choose", "inputs": [...], "outputs": [...], "labels": [...] (classify),
     "max_seq_length": N, ...}

Signatures (strings ``[None]``, one row per example):

* ``classify``: ``text_a`` (and ``text_b`` for a pair task) → ``label`` (string), ``label_id`` (int32), ``scores``
  (float ``[None, C]``, the softmax of the logits); a regression task (STS-B) → ``score`` (float).
* ``answer``: ``question``, ``context`` → ``answer_text`` (string), ``answer_start`` / ``answer_end`` (int32,
  *character* offsets into the context, end exclusive; -1 when no span is valid), ``score`` (float, the start plus
  end logit of the span; v2.0: their log-probabilities): SQuAD's windows and decoding (:mod:`.serving_graphs`), the
  text cut from the original context and stripped as the benchmark's ``context[start:end].strip()``; SQuAD v2.0's
  model answers "" (offsets -1) where the benchmark's dev-tuned ``null_threshold`` (in ``serving_info.json``) says
  unanswerable.
* ``choose``: ``context``, ``question`` (``[None]``), ``options`` (``[None, K]``) → ``choice`` (int32), ``scores``
  (float ``[None, K]``, the softmax over the options).

The ids come from :class:`components.text.graph_tokenizer.GraphTokenizer` (TF Text ops equal to the project's
tokenizer, SentencePiece or WordPiece), so the model serves wherever TF Text's ops are linked (TF Serving). GLUE's
tasks on English's SentencePiece vocabulary keep their tf.Transform route (:mod:`.glue.serving`, TFMA evaluates it)
and get the same ``classify`` outputs and ``serving_info.json``.

The export is all or nothing, as :mod:`.glue.serving`'s: built, saved, loaded and checked in a staging folder inside
``<TASK>/``, moved into place only when it serves; any failure removes the staging folder and raises
:class:`~components.evaluation.glue.serving.ServingExportError`. ``serving_check`` (in the task's result) records,
on the dev rows, how many of the served predictions equal the benchmark's own (``same_predictions`` of ``rows``).
"""
from __future__ import annotations

import logging
import os
import shutil
import tempfile
from typing import Any, Callable, Dict, List, Optional, Sequence

import numpy as np
import tensorflow as tf

from components.evaluation import serving_graphs as graphs
from components.evaluation.glue import glue_data as glue_lib
from components.evaluation.glue.serving import INFO_FILE, SERVING_DIR, ServingExportError, write_serving_info
from components.evaluation.heads import FEATURE_KEYS
from components.text.graph_tokenizer import char_class, twin_of
from trainer.export import Untracked

log = logging.getLogger(__name__)

__all__ = ["INFO_FILE", "SERVE_BATCH", "classify_module", "answer_module", "choose_module",
           "export_task_serving", "serve_rows", "write_serving_info", "restore_head", "export_classify",
           "export_answer", "export_choose"]

SERVE_BATCH = 32  # examples per call when the export is checked on the dev rows
_STAGING_PREFIX = ".serving-staging-"
_STRINGS = tf.TensorSpec([None], tf.string)


def restore_head(make_head: Callable, encoder, seed: int, weights, features: Dict[str, np.ndarray]):
    """The task model of a run: ``make_head(encoder, seed)`` built on one row of ``features`` and given the run's
    ``weights``."""
    model = make_head(encoder, seed)
    keys = getattr(model, "input_keys", FEATURE_KEYS)
    model({k: v[:1] for k, v in features.items() if k in keys}, training=False)
    model.set_weights(weights)
    return model


class _TaskModule(tf.Module):
    """A tokenizer and a task model: the variables the signature reads are tracked, not the Keras model (see
    :class:`trainer.export.Untracked`), the tokenizer is (its vocabulary travels in the SavedModel)."""

    def __init__(self, tokenizer, model):
        super().__init__()
        self.tokenizer = tokenizer
        self.model_variables = list(model.variables)
        self._model = Untracked(model)

    def run(self, features: Dict[str, tf.Tensor]) -> Dict[str, tf.Tensor]:
        keys = getattr(self._model.model, "input_keys", FEATURE_KEYS)  # SQuAD v2.0's head also reads p_mask
        return self._model.model({k: features[k] for k in keys}, training=False)


def classify_module(tokenizer, model, max_seq_length: int, labels: Sequence[str], pair: bool, regression: bool):
    """(module, signature) of a classification task."""
    module = _TaskModule(tokenizer, model)
    names = tf.constant([str(x) for x in labels] or [""])

    def outputs(text_a, text_b=None):
        b = module.tokenizer.tokenize(text_b) if text_b is not None else None
        logits = tf.cast(module.run(graphs.pack_classification(module.tokenizer.tokenize(text_a), b,
                                                               max_seq_length))["logits"], tf.float32)
        if regression:
            return {"score": logits[:, 0]}
        label_id = tf.argmax(logits, axis=-1, output_type=tf.int32)
        return {"label": tf.gather(names, label_id), "label_id": label_id,
                "scores": tf.nn.softmax(logits, axis=-1)}

    if pair:
        fn = tf.function(lambda text_a, text_b: outputs(text_a, text_b), autograph=False)
        signature = fn.get_concrete_function(tf.TensorSpec([None], tf.string, name="text_a"),
                                             tf.TensorSpec([None], tf.string, name="text_b"))
    else:
        fn = tf.function(lambda text_a: outputs(text_a), autograph=False)
        signature = fn.get_concrete_function(tf.TensorSpec([None], tf.string, name="text_a"))
    return module, signature


def answer_module(tokenizer, model, max_seq_length: int, doc_stride: int, max_query_length: int, n_best_size: int,
                  max_answer_length: int, null_threshold: Optional[float] = None):
    """(module, signature) of a SQuAD-style span extraction task: v1.1's head, or with ``null_threshold`` (the
    threshold the benchmark tuned on dev) v2.0's beam head, unanswered questions getting ""."""
    graphs.check_squad_lengths(max_seq_length, max_query_length)
    module = _TaskModule(tokenizer, model)
    ws = char_class("space")

    def serve(question, context):
        batch = tf.size(question, out_type=tf.int64)
        ids, begin, end = module.tokenizer.tokenize_with_offsets(context)
        windows = graphs.squad_windows(module.tokenizer.tokenize(question), ids, max_seq_length, doc_stride,
                                       max_query_length)
        out = module.run(windows)
        if null_threshold is None:
            best = graphs.decode_spans(out["start_logits"], out["end_logits"], windows, batch, n_best_size,
                                       max_answer_length)
        else:
            best = graphs.decode_beam_spans(out, windows, batch, max_answer_length, float(null_threshold))
        found = best["found"]
        first = tf.cast(ids.row_splits[:-1], tf.int64) + tf.maximum(best["first_piece"], 0)
        last = tf.cast(ids.row_splits[:-1], tf.int64) + tf.maximum(best["last_piece"], 0)
        pad = tf.zeros([1], tf.int64)  # a context without pieces has no span: its (clamped) index reads this
        start_byte = tf.where(found, tf.gather(tf.concat([tf.cast(begin.flat_values, tf.int64), pad], 0), first), 0)
        end_byte = tf.where(found, tf.gather(tf.concat([tf.cast(end.flat_values, tf.int64), pad], 0), last), 0)
        raw = tf.strings.substr(context, start_byte, tf.maximum(end_byte - start_byte, 0), unit="BYTE")
        text = graphs.strip_spaces(raw, ws)
        lead = (tf.strings.length(raw, unit="UTF8_CHAR")
                - tf.strings.length(tf.strings.regex_replace(raw, f"^{ws}+", ""), unit="UTF8_CHAR"))
        before = tf.strings.substr(context, tf.zeros_like(start_byte), start_byte, unit="BYTE")
        start = tf.cast(tf.strings.length(before, unit="UTF8_CHAR") + lead, tf.int32)
        minus = -tf.ones_like(start)
        return {"answer_text": tf.where(found, text, ""), "answer_start": tf.where(found, start, minus),
                "answer_end": tf.where(found, start + tf.strings.length(text, unit="UTF8_CHAR"), minus),
                "score": tf.cast(best["score"], tf.float32)}

    fn = tf.function(serve, autograph=False)
    return module, fn.get_concrete_function(tf.TensorSpec([None], tf.string, name="question"),
                                            tf.TensorSpec([None], tf.string, name="context"))


def choose_module(tokenizer, model, max_seq_length: int, max_qa_length: int):
    """(module, signature) of a multiple-choice task (RACE, C3)."""
    module = _TaskModule(tokenizer, model)

    def serve(context, question, options):
        k = tf.shape(options)[1]
        qa = tf.reshape(graphs.qa_texts(question, options), [-1])
        features = graphs.pack_choices(module.tokenizer.tokenize(context), module.tokenizer.tokenize(qa), k,
                                       max_seq_length, max_qa_length)
        features = {key: tf.reshape(v, [-1, k, max_seq_length]) for key, v in features.items()}
        logits = tf.cast(module.run(features)["logits"], tf.float32)
        return {"choice": tf.argmax(logits, axis=-1, output_type=tf.int32), "scores": tf.nn.softmax(logits, axis=-1)}

    fn = tf.function(serve, autograph=False)
    return module, fn.get_concrete_function(tf.TensorSpec([None], tf.string, name="context"),
                                            tf.TensorSpec([None], tf.string, name="question"),
                                            tf.TensorSpec([None, None], tf.string, name="options"))


def serve_rows(signature, feeds: Dict[str, Sequence], batch: int = SERVE_BATCH) -> Dict[str, np.ndarray]:
    """The signature's outputs for every row of ``feeds`` (lists of strings, or of string lists), in order."""
    n = len(next(iter(feeds.values())))
    chunks: Dict[str, List[np.ndarray]] = {}
    for start in range(0, n, batch):
        out = signature(**{k: tf.constant(list(v[start:start + batch])) for k, v in feeds.items()})
        for key, value in out.items():
            chunks.setdefault(key, []).append(value.numpy())
    return {k: np.concatenate(v) for k, v in chunks.items()}


def export_task_serving(task: str, output_dir: str, kind: str, build: Callable, check: Callable,
                        max_seq_length: int, **info) -> Dict[str, Any]:
    """Export ``<output_dir>/<task>/serving_model`` and ``serving_info.json`` all or nothing.

    ``build()`` gives (module, signature); ``check(serving_default)`` runs the *saved and reloaded* signature on
    the dev rows and returns ``serving_check`` (``rows``, ``same_predictions``, ...). Returns the task's result
    entries ``serving_model``, ``serving_info`` and ``serving_check``."""
    task_dir = os.path.join(output_dir, task)
    serving_dir = os.path.join(task_dir, SERVING_DIR)
    created, moved, staging = not os.path.isdir(task_dir), [], None
    try:
        os.makedirs(task_dir, exist_ok=True)
        staging = tempfile.mkdtemp(prefix=_STAGING_PREFIX, dir=task_dir)
        module, signature = build()
        staged = os.path.join(staging, SERVING_DIR)
        tf.saved_model.save(module, staged, signatures={"serving_default": signature})
        write_serving_info(os.path.join(staging, INFO_FILE), kind, signature, max_seq_length, **info)
        del module, signature
        serving_check = check(tf.saved_model.load(staged).signatures["serving_default"])
        for name in (SERVING_DIR, INFO_FILE):
            final = os.path.join(task_dir, name)
            if os.path.isdir(final):
                shutil.rmtree(final)
            os.replace(os.path.join(staging, name), final)
            moved.append(final)
    except Exception as e:
        for path in moved:
            if os.path.isfile(path):
                os.remove(path)  # serving_info.json
        for path in moved + ([task_dir] if created else []):
            shutil.rmtree(path, ignore_errors=True)  # a file in the way of <task>/ is not ours: it stays
        raise ServingExportError(f"{task}: exporting the raw-text serving model to {serving_dir} failed: "
                                 f"{type(e).__name__}: {e}") from e
    finally:
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)
    if serving_check.get("same_predictions") != serving_check.get("rows"):
        log.warning("%s: the raw-text serving model differs from the benchmark's predictions on %s of %s dev rows",
                    task, serving_check.get("rows", 0) - serving_check.get("same_predictions", 0),
                    serving_check.get("rows"))
    return {"serving_model": os.path.relpath(serving_dir, output_dir),
            "serving_info": os.path.relpath(os.path.join(task_dir, INFO_FILE), output_dir),
            "serving_check": serving_check}


# ---------------------------------------------------------------------------------------------
# The three families: build from the selected run, check against the benchmark's own predictions


def export_classify(task, hp, encoder, make_head, tokenizer, res, dev_examples, dev_arrays, output_dir: str,
                    split: str = "dev") -> Dict[str, Any]:
    """A classification task (GLUE, CLUE, a task spec): the served labels (or scores) against the run's dev
    predictions on ``split``."""
    pair = any(e.text_b is not None for e in dev_examples)
    labels = [] if task.is_regression else list(task.labels)

    def build():
        model = restore_head(make_head, encoder, res["seed"], res["weights"], dev_arrays)
        return classify_module(twin_of(tokenizer), model, hp.max_seq_length, labels, pair, task.is_regression)

    def check(serve):
        feeds = {"text_a": [e.text_a for e in dev_examples]}
        if pair:
            feeds["text_b"] = [e.text_b or "" for e in dev_examples]
        out = serve_rows(serve, feeds)
        want = [glue_lib.format_prediction(task, p) for p in res["payload"][split]]
        got = [glue_lib.format_prediction(task, p) for p in (out["score"] if task.is_regression else out["label_id"])]
        return {"split": split, "rows": len(want), "same_predictions": sum(a == b for a, b in zip(got, want))}

    extra = {} if task.is_regression else {"labels": labels}
    return export_task_serving(task.name, output_dir, "classify", build, check, hp.max_seq_length, **extra)


def export_answer(name: str, hp, settings, encoder, make_head, tokenizer, res, dev_examples, dev_arrays,
                  output_dir: str) -> Dict[str, Any]:
    """A SQuAD-style task (SQuAD1.1, CMRC2018; SQuAD2.0 with the run's dev-tuned null threshold): the served
    answers against the run's dev predictions, and each answer's character offsets against its text."""
    null_threshold = res["metrics"].get("null_threshold") if str(settings.squad_version) == "2.0" else None

    def build():
        model = restore_head(make_head, encoder, res["seed"], res["weights"], dev_arrays)
        return answer_module(twin_of(tokenizer), model, hp.max_seq_length, settings.doc_stride,
                             settings.max_query_length, settings.n_best_size, settings.max_answer_length,
                             null_threshold)

    def check(serve):
        out = serve_rows(serve, {"question": [e.question for e in dev_examples],
                                 "context": [e.context for e in dev_examples]})
        texts = [t.decode("utf-8") for t in out["answer_text"]]
        want = res["payload"]["predictions"]
        spans = sum(e.context[s:t] == text if s >= 0 else text == ""
                    for e, s, t, text in zip(dev_examples, out["answer_start"], out["answer_end"], texts))
        return {"split": "dev", "rows": len(texts), "offsets_match_text": int(spans),
                "same_predictions": sum(text == want[e.qid] for e, text in zip(dev_examples, texts))}

    extra = {} if null_threshold is None else {"null_threshold": float(null_threshold)}
    return export_task_serving(name, output_dir, "answer", build, check, hp.max_seq_length, **extra,
                               doc_stride=settings.doc_stride, max_query_length=settings.max_query_length,
                               n_best_size=settings.n_best_size, max_answer_length=settings.max_answer_length)


def export_choose(name: str, hp, max_qa_length: int, encoder, make_head, tokenizer, res, dev_examples, dev_arrays,
                  output_dir: str, **info) -> Dict[str, Any]:
    """A multiple-choice task (RACE, C3): the served choices against the run's dev predictions."""

    def build():
        model = restore_head(make_head, encoder, res["seed"], res["weights"], dev_arrays)
        return choose_module(twin_of(tokenizer), model, hp.max_seq_length, max_qa_length)

    def check(serve):
        out = serve_rows(serve, {"context": [e.article for e in dev_examples],
                                 "question": [e.question for e in dev_examples],
                                 "options": [list(e.options) for e in dev_examples]}, batch=max(1, SERVE_BATCH // 4))
        want = np.asarray(res["payload"]["predictions"]).reshape(-1)
        return {"split": "dev", "rows": int(want.size), "same_predictions": int(np.sum(out["choice"] == want))}

    return export_task_serving(name, output_dir, "choose", build, check, hp.max_seq_length,
                               max_qa_length=int(max_qa_length), **info)
