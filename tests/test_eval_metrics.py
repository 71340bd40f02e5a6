"""NumPy metrics vs scikit-learn / SciPy, and the per-task GLUE metric sets."""
import math
import warnings

import numpy as np
import pytest

from components.evaluation import metrics as M

sklearn_metrics = pytest.importorskip("sklearn.metrics")
scipy_stats = pytest.importorskip("scipy.stats")


def _scipy_corr(fn, x, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(fn(x, y)[0])


def _same(a, b, tol=1e-10):
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return abs(a - b) <= tol


@pytest.mark.parametrize("seed", range(8))
def test_classification_metrics_match_sklearn_random(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 200))
    labels = rng.integers(0, 2, n)
    preds = np.where(rng.random(n) < 0.7, labels, 1 - labels)
    assert _same(M.accuracy(preds, labels), sklearn_metrics.accuracy_score(labels, preds))
    assert _same(M.f1_binary(preds, labels), sklearn_metrics.f1_score(labels, preds, zero_division=0))
    assert _same(M.matthews_corrcoef(preds, labels), sklearn_metrics.matthews_corrcoef(labels, preds))


@pytest.mark.parametrize("seed", range(4))
def test_mcc_multiclass_matches_sklearn(seed):
    rng = np.random.default_rng(100 + seed)
    labels = rng.integers(0, 3, 150)
    preds = np.where(rng.random(150) < 0.5, labels, rng.integers(0, 3, 150))
    assert _same(M.matthews_corrcoef(preds, labels), sklearn_metrics.matthews_corrcoef(labels, preds))


@pytest.mark.parametrize("preds,labels", [
    ([1, 1, 1, 1], [1, 1, 1, 1]),          # single class everywhere: MCC undefined → 0
    ([0, 0, 0, 0], [0, 1, 0, 1]),          # no positive predictions: F1 0, MCC 0
    ([1, 1, 1, 1], [0, 1, 0, 1]),          # constant predictions
    ([0, 1, 0, 1], [0, 1, 0, 1]),          # perfect
    ([1, 0, 1, 0], [0, 1, 0, 1]),          # perfectly wrong: MCC -1
    ([0, 0, 0], [0, 0, 0]),                # no positives at all: F1 0
    ([1], [1]),
])
def test_classification_edge_cases(preds, labels):
    p, y = np.array(preds), np.array(labels)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want_f1 = sklearn_metrics.f1_score(y, p, zero_division=0)
        want_mcc = sklearn_metrics.matthews_corrcoef(y, p)
    assert _same(M.f1_binary(p, y), want_f1)
    assert _same(M.matthews_corrcoef(p, y), want_mcc)
    assert _same(M.accuracy(p, y), sklearn_metrics.accuracy_score(y, p))


@pytest.mark.parametrize("seed", range(6))
def test_correlations_match_scipy_random(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 300))
    x = rng.normal(size=n)
    y = 0.5 * x + rng.normal(size=n)
    assert _same(M.pearson(x, y), _scipy_corr(scipy_stats.pearsonr, x, y), 1e-9)
    assert _same(M.spearman(x, y), _scipy_corr(scipy_stats.spearmanr, x, y), 1e-9)


@pytest.mark.parametrize("seed", range(6))
def test_spearman_with_ties_matches_scipy(seed):
    rng = np.random.default_rng(50 + seed)
    x = rng.integers(0, 5, 80).astype(float)     # heavy ties (STS-B style 0..5 scores)
    y = np.round(x + rng.normal(scale=1.5, size=80))
    assert _same(M.spearman(x, y), _scipy_corr(scipy_stats.spearmanr, x, y), 1e-9)
    np.testing.assert_allclose(M.rankdata_average(x), scipy_stats.rankdata(x, method="average"))


def test_correlation_edge_cases():
    assert math.isnan(M.pearson([1, 1, 1], [1, 2, 3]))       # constant input (SciPy also NaN)
    assert math.isnan(M.spearman([2, 2, 2, 2], [1, 2, 3, 4]))
    assert M.pearson([1, 2, 3], [2, 4, 6]) == pytest.approx(1.0)
    assert M.pearson([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)
    assert M.spearman([1, 2, 3, 4], [1, 4, 9, 16]) == pytest.approx(1.0)
    np.testing.assert_allclose(M.rankdata_average([10, 20, 20, 30]), [1, 2.5, 2.5, 4])
    with pytest.raises(ValueError):
        M.accuracy([1, 2], [1])


def test_glue_metrics_per_task():
    labels = np.array([1, 0, 1, 1, 0, 1])
    preds = np.array([1, 0, 0, 1, 1, 1])
    cola = M.glue_metrics("CoLA", preds, labels)
    assert cola["score"] == cola["mcc"] == pytest.approx(sklearn_metrics.matthews_corrcoef(labels, preds))
    mrpc = M.glue_metrics("MRPC", preds, labels)
    assert mrpc["f1"] == pytest.approx(sklearn_metrics.f1_score(labels, preds))
    assert mrpc["accuracy"] == pytest.approx(4 / 6)
    assert mrpc["score"] == pytest.approx((mrpc["f1"] + mrpc["accuracy"]) / 2)
    assert set(M.glue_metrics("QQP", preds, labels)) >= {"f1", "accuracy", "score"}
    for task in ("SST-2", "MNLI", "QNLI", "RTE", "WNLI"):
        out = M.glue_metrics(task, preds, labels)
        assert out["score"] == out["accuracy"] == pytest.approx(4 / 6)
    # Logits are arg-maxed.
    logits = np.eye(3)[[0, 1, 2, 2]]
    assert M.glue_metrics("MNLI", logits, np.array([0, 1, 2, 0]))["accuracy"] == pytest.approx(0.75)
    stsb = M.glue_metrics("STS-B", np.array([[0.1], [2.0], [3.9], [5.0]]), np.array([0.0, 2.5, 3.0, 4.8]))
    assert stsb["pearson"] == pytest.approx(scipy_stats.pearsonr([0.1, 2.0, 3.9, 5.0], [0.0, 2.5, 3.0, 4.8])[0])
    assert stsb["spearman"] == pytest.approx(1.0)
    assert stsb["score"] == pytest.approx((stsb["pearson"] + stsb["spearman"]) / 2)
    with pytest.raises(ValueError, match="unknown GLUE task"):
        M.glue_metrics("SQuAD", preds, labels)


# --- checkpoint selection: the official metric per task ---------------------------------------------------------

@pytest.mark.parametrize("task,metric", [
    ("MRPC", "accuracy"), ("QQP", "accuracy"), ("STS-B", "pearson"), ("stsb", "pearson"), ("CoLA", "mcc"),
    ("SST-2", "accuracy"), ("MNLI", "accuracy"), ("MNLI-m", "accuracy"), ("RTE", "accuracy"),
    ("SQuAD1.1", "f1"), ("squad2.0", "f1"), ("RACE", "accuracy"),
])
def test_selection_metric_is_the_official_one(task, metric):
    """run_classifier.py keeps checkpoints by Pearson (STS-B), MCC (CoLA), else accuracy; run_squad_*: F1."""
    assert M.selection_metric(task) == metric


def test_mrpc_selection_differs_from_the_headline():
    """MRPC's headline is mean(F1, accuracy); selection reads accuracy alone, so the two can rank differently."""
    from components.evaluation.glue.run_glue import glue_scores

    labels = np.array([1, 1, 1, 1, 1, 0, 0, 0, 0, 0])
    eager = np.ones(10, int)                          # accuracy 50, F1 66.7 -> headline 58.3
    cautious = np.array([1, 0, 0, 0, 0, 0, 0, 0, 0, 0])  # accuracy 60, F1 33.3 -> headline 46.7
    a, b = glue_scores("MRPC", eager, labels), glue_scores("MRPC", cautious, labels)
    assert a["score"] > b["score"] and a["selection_score"] < b["selection_score"]
    assert a["selection_metric"] == "accuracy" and (a["selection_score"], b["selection_score"]) == (50.0, 60.0)
    sts = glue_scores("STS-B", np.array([0.1, 0.5, 0.2, 0.9]), np.array([0.0, 2.0, 1.0, 4.0]))
    assert sts["selection_score"] == sts["pearson"] != sts["score"]


def test_majority_floor_by_hand():
    """The floor a classifier that ignores its input reaches: the training majority label on every dev example."""
    train = np.array([1, 1, 0, 1, 2, 2])                # majority 1
    assert M.majority_label(train) == 1
    assert M.majority_label(np.array([2, 0, 2, 0])) == 0  # a tie goes to the smaller id, reproducibly
    dev = np.array([1, 0, 1, 1, 0])
    # MRPC: every dev pair called a paraphrase: accuracy 3/5, F1 2*3/(2*3+2) = 0.75, headline their mean.
    assert M.majority_baseline("MRPC", train[:4], dev) == pytest.approx((0.6 + 0.75) / 2)
    assert M.majority_baseline("CoLA", train[:4], dev) == 0.0  # a constant predictor has MCC 0
    assert M.majority_baseline("RTE", np.array([0, 0, 1]), dev) == pytest.approx(0.4)
    assert M.majority_baseline("RACE", np.array([3, 3, 0, 1]), np.array([3, 2, 3, 3])) == 0.75
    assert M.majority_baseline("STS-B", np.array([1.0, 2.0]), np.array([0.5, 1.5])) is None
    with pytest.raises(ValueError, match="empty"):
        M.majority_label(np.array([], dtype=int))
    # The share of the most frequent prediction: 1.0 marks a run collapsed to one class.
    assert M.majority_share(np.array([[0.1, 0.9], [0.2, 0.3], [3.0, 1.0]])) == pytest.approx(2 / 3)
    assert M.majority_share(np.array([1, 1, 1])) == 1.0
    from components.evaluation.glue.run_glue import glue_scores

    s = glue_scores("MRPC", np.ones(5, int), dev)
    assert s["majority_share"] == 100.0 and s["score"] == pytest.approx(100 * M.majority_baseline("MRPC", train, dev))
    assert "majority_share" not in glue_scores("STS-B", np.array([0.1, 0.5, 0.2]), np.array([0.0, 2.0, 1.0]))


def test_compare_arms_carries_the_floor_and_one_class_runs():
    pre = {"MRPC": {"run_scores": [74.8, 76.0, 73.9], "majority_baseline": 74.8, "single_class_runs": 1}}
    base = {"MRPC": {"run_scores": [74.8, 74.8, 74.8], "majority_baseline": 74.8, "single_class_runs": 3}}
    g = M.compare_arms(pre, base)["MRPC"]
    assert g["majority_baseline"] == 74.8
    assert g["single_class_runs"] == {"pretrained": 1, "baseline": 3}


def test_compare_arms_beyond_spread_needs_two_seeds_per_arm():
    """One run per arm has no spread: beyond_spread is None there, a yes/no from two seeds on."""
    one = M.compare_arms({"RTE": {"score": 60.0}}, {"RTE": {"score": 50.0}})["RTE"]
    assert one["beyond_spread"] is None and one["gain_median"] == 10.0
    assert one["pretrained"] == {"median": 60.0, "min": 60.0, "max": 60.0, "n": 1}
    mixed = M.compare_arms({"RTE": {"run_scores": [60.0, 61.0]}}, {"RTE": {"run_scores": [50.0, None]}})["RTE"]
    assert mixed["baseline"]["n"] == 1 and mixed["beyond_spread"] is None
    two = M.compare_arms({"RTE": {"run_scores": [60.0, 61.0]}}, {"RTE": {"run_scores": [50.0, 59.0]}})["RTE"]
    assert two["beyond_spread"] is True
    assert M.compare_arms({"RTE": {"run_scores": [60.0, 58.0]}}, {"RTE": {"run_scores": [50.0, 59.0]}})["RTE"][
        "beyond_spread"] is False


def test_selection_metrics_name_every_squad_task():
    from components.evaluation.benchmark_config import SQUAD_TASKS

    assert [M.selection_metric(t) for t in SQUAD_TASKS.values()] == ["f1", "f1"]
    assert M.selection_metric("race") == "accuracy" and M.selection_metric("mnli-mm") == "accuracy"
