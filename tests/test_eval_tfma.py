"""components/evaluation/glue/tfma_eval.py: TFMA's metrics agree with ours on the same predictions.

TFMA runs on a predictions dataset (tf.Examples carrying label and prediction); the model-based
path (the exported raw-text model) is covered by tests/test_eval_run_benchmark.py.
"""
import math
import os

import numpy as np
import pytest

import components  # noqa: F401  (TF_USE_LEGACY_KERAS before TF)

tf = pytest.importorskip("tensorflow")
pytest.importorskip("tensorflow_model_analysis")

from components.evaluation.glue import tfma_eval  # noqa: E402
from components.evaluation.metrics import glue_metrics  # noqa: E402


pytestmark = pytest.mark.slow


def _softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def test_binary_tfma_matches_glue_metrics(tmp_path):
    rng = np.random.default_rng(0)
    n = 120
    labels = rng.integers(0, 2, n)
    logits = rng.normal(size=(n, 2)) + 0.8 * np.eye(2)[labels]  # better than chance, not perfect
    probs = _softmax(logits)
    path = tfma_eval.write_eval_examples(str(tmp_path / "ex.tfrecord"), [f"s{i}" for i in range(n)], None,
                                         labels, probs[:, 1])
    r = tfma_eval.run_tfma(path, str(tmp_path / "out"), num_labels=2)
    m = r["metrics"]
    ours = glue_metrics("CoLA", logits, labels)  # accuracy + MCC
    ours_f1 = glue_metrics("MRPC", logits, labels)["f1"]
    assert r["mode"] == "predictions" and m["example_count"] == n
    assert math.isclose(m["accuracy"], ours["accuracy"], abs_tol=1e-6)
    assert math.isclose(m["binary_accuracy"], ours["accuracy"], abs_tol=1e-6)
    assert math.isclose(m["f1_score"], ours_f1, abs_tol=1e-6)
    assert math.isclose(m["matthews_correlation_coefficient"], ours["mcc"], abs_tol=1e-6)
    # AUC: TFMA's is a 10000-threshold approximation of the exact rank statistic.
    pos, neg = probs[labels == 1, 1], probs[labels == 0, 1]
    exact_auc = np.mean(pos[:, None] > neg[None, :]) + 0.5 * np.mean(pos[:, None] == neg[None, :])
    assert math.isclose(m["auc"], exact_auc, abs_tol=5e-3)
    assert os.path.isdir(str(tmp_path / "out"))


def test_multiclass_tfma_accuracy_matches_glue_metrics(tmp_path):
    rng = np.random.default_rng(1)
    n = 90
    labels = rng.integers(0, 3, n)
    logits = rng.normal(size=(n, 3)) + 0.7 * np.eye(3)[labels]
    path = tfma_eval.write_eval_examples(str(tmp_path / "ex.tfrecord"), ["a"] * n, ["b"] * n, labels,
                                         _softmax(logits))
    r = tfma_eval.run_tfma(path, str(tmp_path / "out"), num_labels=3)
    assert r["metrics"]["example_count"] == n
    assert math.isclose(r["metrics"]["accuracy"], glue_metrics("MNLI", logits, labels)["accuracy"], abs_tol=1e-6)


def test_regression_is_not_a_tfma_task():
    assert not tfma_eval.tfma_supported(1)
    with pytest.raises(ValueError):
        tfma_eval.eval_config(1, with_model=False)
