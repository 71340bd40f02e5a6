"""TensorFlow Model Analysis on the GLUE classification dev sets.

:func:`run_tfma` runs ``tfma.run_model_analysis`` (the Beam pipeline behind the TFX ``Evaluator``)
on dev rows written as ``tf.Example`` TFRecords (``text_a`` [, ``text_b``], int64 ``label``),
either

* with the exported raw-text model (``model_dir``; its ``serve_tf_examples`` signature parses the
  examples, runs the tf.Transform graph and the classifier): TFMA computes the predictions itself,
  exactly as the TFX Evaluator would; or
* on a predictions dataset (``model_dir=None``): each example also carries the model's
  ``prediction`` (positive-class probability for two labels, the probability vector otherwise).

Metrics (TFMA native, threshold 0.5 on the positive probability for binary tasks, which equals
the argmax of two logits): binary tasks get ``example_count``, ``binary_accuracy``, ``auc``,
``f1_score``, ``precision``, ``recall`` and ``matthews_correlation_coefficient``; multi-class tasks
(MNLI) get ``example_count`` and ``sparse_categorical_accuracy`` (Keras' top-1 accuracy, run by TFMA). Values are
fractions as TFMA reports them. Regression (STS-B) is out of TFMA's scope here (no Pearson /
Spearman metric in TFMA); :func:`tfma_supported` says which tasks are covered.
"""
from __future__ import annotations

import os
from typing import Any, Dict, Optional, Sequence


import numpy as np
import tensorflow as tf
from google.protobuf import json_format

__all__ = ["LABEL_KEY", "PREDICTION_KEY", "write_eval_examples", "eval_config", "run_tfma", "tfma_supported"]

LABEL_KEY = "label"
PREDICTION_KEY = "prediction"
SERVING_SIGNATURE = "serve_tf_examples"
MODEL_TYPE = "tf_generic"  # tensorflow_model_analysis.constants.TF_GENERIC: a SavedModel called through a signature
BINARY_METRICS = ("ExampleCount", "BinaryAccuracy", "AUC", "F1Score", "Precision", "Recall",
                  "MatthewsCorrelationCoefficient")
# Keras' SparseCategoricalAccuracy (top-1 accuracy on the probability vector), run by TFMA.
MULTICLASS_METRICS = ("ExampleCount", "SparseCategoricalAccuracy")
# TFMA metric name → our key.
ACCURACY_NAMES = {"binary_accuracy": "accuracy", "sparse_categorical_accuracy": "accuracy"}


def tfma_supported(num_labels: int) -> bool:
    return num_labels >= 2


def _bytes(values):
    return tf.train.Feature(bytes_list=tf.train.BytesList(value=[v.encode("utf-8") for v in values]))


def write_eval_examples(path: str, text_a: Sequence[str], text_b: Optional[Sequence[str]], labels: Sequence[int],
                        predictions: Optional[np.ndarray] = None) -> str:
    """One ``tf.Example`` per dev row: text_a [, text_b], int64 label [, float prediction]."""
    tf.io.gfile.makedirs(os.path.dirname(path) or ".")
    with tf.io.TFRecordWriter(path) as writer:
        for i, a in enumerate(text_a):
            feature = {"text_a": _bytes([a]),
                       LABEL_KEY: tf.train.Feature(int64_list=tf.train.Int64List(value=[int(labels[i])]))}
            if text_b is not None:
                feature["text_b"] = _bytes([text_b[i]])
            if predictions is not None:
                p = np.asarray(predictions[i], dtype=np.float32).reshape(-1)
                feature[PREDICTION_KEY] = tf.train.Feature(float_list=tf.train.FloatList(value=p.tolist()))
            writer.write(tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString())
    return path


def eval_config(num_labels: int, with_model: bool):
    """The ``EvalConfig`` for a GLUE classification task (also what the TFX Evaluator takes)."""
    from tensorflow_model_analysis.proto import config_pb2 as C  # lazy: tensorflow_model_analysis (2.2 s)

    if not tfma_supported(num_labels):
        raise ValueError("TFMA evaluation here covers classification tasks (num_labels >= 2)")
    if num_labels == 2:
        prediction_key = "positive_probability" if with_model else PREDICTION_KEY
        names = BINARY_METRICS
    else:
        prediction_key = "probabilities" if with_model else PREDICTION_KEY
        names = MULTICLASS_METRICS
    spec = C.ModelSpec(label_key=LABEL_KEY, prediction_key=prediction_key)
    if with_model:
        spec.signature_name = SERVING_SIGNATURE
        # The serving model is a tf.Module saved with tf.saved_model.save (components/evaluation/glue/transform.py),
        # not a Keras model. Without a model type TFMA finds out by loading it whole with
        # tf.keras.models.load_model, which warns that the model was "saved prior to TF 2.5" and is then thrown
        # away; "tf_generic" makes it load the SavedModel as saved (tf.saved_model.load) and call the signature.
        spec.model_type = MODEL_TYPE
    return C.EvalConfig(model_specs=[spec], slicing_specs=[C.SlicingSpec()],
                        metrics_specs=[C.MetricsSpec(metrics=[C.MetricConfig(class_name=n) for n in names])])


def _flatten(metrics: Dict) -> Dict[str, float]:
    """{output: {sub_key: {name: {"doubleValue": v}}}} → {name[/sub_key]: v}."""
    out: Dict[str, float] = {}
    for _, by_sub in metrics.items():
        for sub_key, by_name in by_sub.items():
            for name, value in by_name.items():
                if not isinstance(value, dict):
                    continue
                v = value.get("doubleValue", value.get("double_value"))
                if v is None and "boundedValue" in value:
                    v = value["boundedValue"].get("value")
                if v is None:
                    continue
                key = name if not sub_key else f"{name}/{sub_key}"
                out[key] = float(v)
    return out


def run_tfma(examples_path: str, output_path: str, num_labels: int, model_dir: Optional[str] = None) -> Dict[str, Any]:
    """``tfma.run_model_analysis`` (DirectRunner) → ``{"metrics": {name: value}, "eval_config", "mode"}``.

    ``metrics`` holds TFMA's metric names (fractions) plus ``accuracy`` (= ``binary_accuracy`` or
    ``sparse_categorical_accuracy``) for comparison with :func:`glue_metrics`.
    """
    import tensorflow_model_analysis as tfma  # lazy: tensorflow_model_analysis (2.2 s)

    config = eval_config(num_labels, with_model=model_dir is not None)
    shared = None
    if model_dir is not None:
        shared = tfma.default_eval_shared_model(eval_saved_model_path=model_dir, eval_config=config)
    result = tfma.run_model_analysis(eval_shared_model=shared, eval_config=config, data_location=examples_path,
                                     output_path=output_path, file_format="tfrecords")
    overall: Dict[str, float] = {}
    for slice_key, metrics in result.slicing_metrics:
        if not slice_key:
            overall = _flatten(metrics)
    for name, ours in ACCURACY_NAMES.items():
        if name in overall:
            overall[ours] = overall[name]
    return {"metrics": overall, "mode": "model" if model_dir else "predictions",
            "eval_config": json_format.MessageToDict(config)}
