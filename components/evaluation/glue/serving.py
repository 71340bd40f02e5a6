"""Raw-text serving export of a fine-tuned GLUE classifier, and TFMA on it.

The selected run of a task becomes ``<output_dir>/<TASK>/serving_model``: a SavedModel whose
``serving_default`` signature takes raw ``text_a`` (and ``text_b``) strings, i.e. the tf.Transform graph of
:mod:`components.evaluation.glue.transform` (built with tf.Transform's Beam implementation, written to
``<TASK>/transform``) in front of the classifier. The preprocessing_fn has no analyzers, so the graph depends only
on (SentencePiece model, max_seq_length, do_lower_case, has_text_b), not on the rows: within one node run it is
built once per such key (:class:`TransformGraphs`) and copied into the other tasks' ``transform/``. Training and
in-loop evaluation keep the NumPy featurisation; ``transform_check`` records that the graph gives the same ids on
the dev rows (and ``graph``: built, or reused from which task) and ``serving_check`` that the
exported model gives the in-memory model's logits. TFMA (:mod:`components.evaluation.glue.tfma_eval`) then
evaluates the exported model on each dev split of a classification task. Beam / tf.Transform / TFMA are
imported only here, and only when an export runs.

The export is all or nothing: ``transform/`` and ``serving_model/`` are built and checked in a staging folder
beside them and moved into place only when both exist and the exported model serves; any failure removes the
staging folder and raises :class:`ServingExportError`, which fails the benchmark node (a result that promises
``serving_model`` always has one).
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
from typing import Any, Dict, Optional, Tuple


import numpy as np
import tensorflow as tf

from components.evaluation.glue import glue_data as glue_lib
from components.evaluation.glue import tfma_eval
from components.evaluation.finetune import EVAL_BATCH_SIZE, predict
from components.evaluation.heads import FEATURE_KEYS, ClassifierModel, build_encoder
from components.file_io import copy_tree

log = logging.getLogger(__name__)

__all__ = ["export_glue_serving", "ServingExportError", "TransformGraphs", "SERVING_DIR", "TRANSFORM_DIR", "INFO_FILE",
           "write_serving_info"]

SERVING_DIR = "serving_model"  # <output_dir>/<TASK>/serving_model
INFO_FILE = "serving_info.json"  # <output_dir>/<TASK>/serving_info.json: the signature's kind, inputs and outputs
TRANSFORM_DIR = "transform"  # <output_dir>/<TASK>/transform: the tf.Transform output the serving model embeds
_STAGING_PREFIX = ".serving-staging-"


class ServingExportError(RuntimeError):
    """The raw-text serving model of a GLUE task could not be built, saved or checked."""


class TransformGraphs:
    """The Transform graphs exported so far in one GLUE node run: key → (task, its ``transform/`` folder).

    No analyzers, so a graph depends only on the key, not on the rows: a later task with the same key copies the
    folder instead of running Beam again. One instance per :func:`.run_glue.run_glue` call (nothing is shared
    across runs); an entry is added only once its task's export has succeeded.
    """

    def __init__(self):
        self._graphs: Dict[Tuple, Tuple[str, str]] = {}

    @staticmethod
    def key(model_proto: bytes, max_seq_length: int, do_lower_case: bool, has_text_b: bool) -> Tuple:
        return (hashlib.sha256(bytes(model_proto)).hexdigest(), int(max_seq_length), bool(do_lower_case),
                bool(has_text_b))

    def get(self, key: Tuple) -> Optional[Tuple[str, str]]:
        hit = self._graphs.get(key)
        return hit if hit is not None and os.path.isdir(hit[1]) else None

    def add(self, key: Tuple, task: str, transform_dir: str) -> None:
        if self.get(key) is None:
            self._graphs[key] = (task, transform_dir)

    def __len__(self) -> int:
        return len(self._graphs)


def export_glue_serving(task: glue_lib.GlueTask, hp, albert_dir: str, tokenizer, res, devs, dev_splits,
                         output_dir: str, run_tfma: bool = True,
                         graphs: Optional[TransformGraphs] = None) -> Dict[str, Dict[str, Any]]:
    """Export ``<output_dir>/<task>/serving_model`` (tf.Transform graph + the selected classifier, raw
    text in) and, for classification tasks, run TFMA on it over each dev split.

    The Transform graph is built by tf.Transform's Beam implementation over the first dev split, or copied from
    the task of ``graphs`` that built it for the same key (then run in process on those rows); its ids are
    compared with the Python featurisation used for training (``transform_check``), and
    the exported model's logits on the raw dev text with the in-memory model's (``serving_check``).
    An export failure raises :class:`ServingExportError` and leaves neither folder behind; a TFMA failure is
    logged and recorded under ``tfma.error`` (the exported model stands).
    """
    task_dir = os.path.join(output_dir, task.name)
    serving_dir = os.path.join(task_dir, SERVING_DIR)
    has_b = task.splits["train"].text_b is not None
    result: Dict[str, Dict[str, Any]] = {s: {} for s in dev_splits}
    created, moved, staging = not os.path.isdir(task_dir), [], None
    key = TransformGraphs.key(tokenizer.sp.serialized_model_proto(), hp.max_seq_length, tokenizer.do_lower_case, has_b)
    try:
        os.makedirs(task_dir, exist_ok=True)
        staging = tempfile.mkdtemp(prefix=_STAGING_PREFIX, dir=task_dir)
        checks = _export_and_check(task, hp, albert_dir, tokenizer, res, devs, dev_splits[0], staging,
                                   graphs.get(key) if graphs is not None else None)
        for name in (TRANSFORM_DIR, SERVING_DIR, INFO_FILE):
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
            shutil.rmtree(path, ignore_errors=True)
        raise ServingExportError(f"{task.name}: exporting the raw-text serving model to {serving_dir} failed: "
                                 f"{type(e).__name__}: {e}") from e
    finally:
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)
    if graphs is not None:
        graphs.add(key, task.name, os.path.join(task_dir, TRANSFORM_DIR))
    common = {"serving_model": os.path.relpath(serving_dir, output_dir),
              "serving_info": os.path.relpath(os.path.join(task_dir, INFO_FILE), output_dir), **checks}
    for split in dev_splits:
        result[split].update(common)
    if not run_tfma:
        return result

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


def write_serving_info(path: str, kind: str, signature, max_seq_length: int, **extra) -> Dict[str, Any]:
    """``serving_info.json`` of a signature: its kind, input and output names, the sequence length, ``extra``."""
    inputs = [spec.name for spec in tf.nest.flatten(signature.structured_input_signature)]
    outputs = sorted(signature.structured_outputs)
    info = {"kind": kind, "inputs": inputs, "outputs": outputs, "max_seq_length": int(max_seq_length), **extra}
    with open(path, "w", encoding="utf-8") as f:
        json.dump(info, f, indent=1, sort_keys=True, ensure_ascii=False)
        f.write("\n")
    return info


def _export_and_check(task: glue_lib.GlueTask, hp, albert_dir: str, tokenizer, res, devs, split: str,
                      staging: str, built: Optional[Tuple[str, str]] = None) -> Dict[str, Any]:
    """Build ``<staging>/transform`` (Beam; or a copy of ``built = (task, transform dir)``) and
    ``<staging>/serving_model`` from the selected run and check them on the ``split`` rows: the Transform graph's
    ids against the Python featurisation, the served logits against the in-memory model's. Raises on any failure
    (the caller removes ``staging``)."""
    from components.evaluation.glue import transform as transform_lib  # lazy: tensorflow_text (0.2 s)

    transform_dir, serving_dir = os.path.join(staging, TRANSFORM_DIR), os.path.join(staging, SERVING_DIR)
    has_b = task.splits["train"].text_b is not None
    first_ex, first_arrays = devs[split]
    rows = [{"text_a": e.text_a, **({"text_b": e.text_b} if has_b else {})} for e in first_ex]
    if built is None:
        fn = transform_lib.make_preprocessing_fn(tokenizer.sp.serialized_model_proto(), hp.max_seq_length,
                                                 tokenizer.do_lower_case, has_text_b=has_b)
        scratch = tempfile.mkdtemp(prefix="albert_tft_")
        try:
            transformed = transform_lib.analyze_and_transform(rows, fn, has_b, transform_dir, temp_dir=scratch)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        graph = "built"
    else:
        copy_tree(built[1], transform_dir)
        transformed = transform_lib.transform_rows(rows, transform_dir, has_b)
        graph = f"reused from {built[0]}"
    equal = sum(all(np.array_equal(np.asarray(t[k]).reshape(-1), first_arrays[k][i]) for k in FEATURE_KEYS)
                for i, t in enumerate(transformed))
    transform_check = {"split": split, "rows": len(rows), "rows_equal_python_featurisation": int(equal),
                       "graph": graph}
    if equal != len(rows):
        log.warning("%s: the Transform graph's ids differ from the Python featurisation on %d of %d dev rows",
                    task.name, len(rows) - equal, len(rows))
    encoder = build_encoder(albert_dir, hp.albert_dropout, hp.max_seq_length)
    model = ClassifierModel(encoder, task.num_labels, hp.classifier_dropout, res["seed"])
    model({k: v[:1] for k, v in first_arrays.items() if k in FEATURE_KEYS}, training=False)
    model.set_weights(res["weights"])
    in_memory = predict(model, first_arrays)["logits"]
    labels = [] if task.num_labels == 1 else list(task.labels)
    from components.text.graph_tokenizer import twin_of  # lazy: tensorflow_text (the export only)

    transform_lib.export_serving_model(model, transform_dir, serving_dir, has_b, task.num_labels, labels,
                                       tokenizer=twin_of(tokenizer))
    del model, encoder
    serve = tf.saved_model.load(serving_dir).signatures["serving_default"]
    write_serving_info(os.path.join(staging, INFO_FILE), "classify", serve, hp.max_seq_length,
                       **({"labels": labels} if labels else {}))
    served = []
    for start in range(0, len(rows), EVAL_BATCH_SIZE):
        chunk = first_ex[start:start + EVAL_BATCH_SIZE]
        feed = {"text_a": tf.constant([e.text_a for e in chunk])}
        if has_b:
            feed["text_b"] = tf.constant([e.text_b for e in chunk])
        served.append(serve(**feed)["logits"].numpy())
    del serve
    served_logits = np.concatenate(served) if served else np.zeros_like(in_memory)
    serving_check = {"split": split, "rows": len(rows),
                     "max_abs_logit_diff": float(np.max(np.abs(served_logits - in_memory))) if len(rows) else 0.0,
                     "same_predictions": int(np.sum(glue_lib.predictions_from_logits(task.name, served_logits)
                                                    == glue_lib.predictions_from_logits(task.name, in_memory)))}
    return {"transform_check": transform_check, "serving_check": serving_check}
