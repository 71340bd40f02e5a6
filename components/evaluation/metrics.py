"""Classification / regression metrics in NumPy, and the per-task metric sets (GLUE's, or a task spec's).

All scores are fractions in [0, 1] (correlations in [-1, 1]); multiply by 100 for the paper's
tables. Degenerate inputs follow scikit-learn / SciPy: F1 and MCC are 0.0 when undefined, Pearson
and Spearman are NaN when an input is constant.
"""
from __future__ import annotations

from typing import Dict, Optional, Sequence

import numpy as np

from components.evaluation.benchmark_config import SQUAD_TASKS

__all__ = [
    "accuracy",
    "f1_binary",
    "macro_f1",
    "matthews_corrcoef",
    "pearson",
    "spearman",
    "rankdata_average",
    "glue_metrics",
    "GLUE_METRICS",
    "SELECTION_METRICS",
    "selection_metric",
    "majority_label",
    "majority_share",
    "majority_baseline",
    "compare_arms",
]


def _as_1d(x, name: str) -> np.ndarray:
    arr = np.asarray(x)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {arr.shape}")
    return arr


def _check_same_length(a: np.ndarray, b: np.ndarray) -> None:
    if a.shape[0] != b.shape[0]:
        raise ValueError(f"predictions and labels differ in length: {a.shape[0]} vs {b.shape[0]}")


def accuracy(predictions, labels) -> float:
    p, y = _as_1d(predictions, "predictions"), _as_1d(labels, "labels")
    _check_same_length(p, y)
    if p.size == 0:
        return float("nan")
    return float(np.mean(p == y))


def f1_binary(predictions, labels, positive=1) -> float:
    """F1 of the positive class (sklearn ``f1_score(average='binary')``; 0.0 when undefined)."""
    p, y = _as_1d(predictions, "predictions"), _as_1d(labels, "labels")
    _check_same_length(p, y)
    tp = int(np.sum((p == positive) & (y == positive)))
    fp = int(np.sum((p == positive) & (y != positive)))
    fn = int(np.sum((p != positive) & (y == positive)))
    denom = 2 * tp + fp + fn
    return 0.0 if denom == 0 else 2.0 * tp / denom


def macro_f1(predictions, labels) -> float:
    """The unweighted mean of each class's F1 over the classes in ``labels`` or ``predictions`` (sklearn
    ``f1_score(average='macro')``: a class never predicted has F1 0; NaN for no examples)."""
    p, y = _as_1d(predictions, "predictions"), _as_1d(labels, "labels")
    _check_same_length(p, y)
    classes = np.unique(np.concatenate([y, p]))
    if classes.size == 0:
        return float("nan")
    scores = []
    for c in classes:
        tp = int(np.sum((p == c) & (y == c)))
        fp = int(np.sum((p == c) & (y != c)))
        fn = int(np.sum((p != c) & (y == c)))
        scores.append(2.0 * tp / (2 * tp + fp + fn))  # > 0: c is in labels or predictions
    return float(np.mean(scores))


def matthews_corrcoef(predictions, labels) -> float:
    """Matthews correlation (multiclass form of Gorodkin 2004, as sklearn); 0.0 when undefined."""
    p, y = _as_1d(predictions, "predictions"), _as_1d(labels, "labels")
    _check_same_length(p, y)
    classes, inv = np.unique(np.concatenate([y, p]), return_inverse=True)
    k = classes.size
    yi, pi = inv[: y.size], inv[y.size:]
    cm = np.zeros((k, k), dtype=np.float64)
    np.add.at(cm, (yi, pi), 1.0)
    t_sum = cm.sum(axis=1)  # true occurrences per class
    p_sum = cm.sum(axis=0)  # predicted occurrences per class
    n_correct = np.trace(cm)
    n = cm.sum()
    cov_ytyp = n_correct * n - np.dot(t_sum, p_sum)
    cov_ypyp = n * n - np.dot(p_sum, p_sum)
    cov_ytyt = n * n - np.dot(t_sum, t_sum)
    if cov_ypyp * cov_ytyt == 0:
        return 0.0
    return float(cov_ytyp / np.sqrt(cov_ytyt * cov_ypyp))


def pearson(x, y) -> float:
    a = _as_1d(x, "x").astype(np.float64)
    b = _as_1d(y, "y").astype(np.float64)
    _check_same_length(a, b)
    if a.size < 2:
        return float("nan")
    a = a - a.mean()
    b = b - b.mean()
    na, nb = np.sqrt(np.dot(a, a)), np.sqrt(np.dot(b, b))
    if na == 0 or nb == 0:
        return float("nan")
    r = float(np.dot(a / na, b / nb))
    return max(-1.0, min(1.0, r))


def rankdata_average(x) -> np.ndarray:
    """Ranks 1..n, ties get the average of the ranks they span (scipy ``rankdata(method='average')``)."""
    a = _as_1d(x, "x")
    n = a.size
    order = np.argsort(a, kind="mergesort")
    sorted_a = a[order]
    # Start of each run of equal values.
    new_group = np.ones(n, dtype=bool)
    if n > 1:
        new_group[1:] = sorted_a[1:] != sorted_a[:-1]
    starts = np.flatnonzero(new_group)
    ends = np.append(starts[1:], n)  # exclusive
    avg = (starts + ends - 1) / 2.0 + 1.0  # mean of 1-based ranks start+1 .. end
    group_id = np.cumsum(new_group) - 1
    ranks = np.empty(n, dtype=np.float64)
    ranks[order] = avg[group_id]
    return ranks


def spearman(x, y) -> float:
    """Spearman's rho = Pearson of the average ranks (handles ties like scipy)."""
    a, b = _as_1d(x, "x"), _as_1d(y, "y")
    _check_same_length(a, b)
    return pearson(rankdata_average(a), rankdata_average(b))


# ---------------------------------------------------------------------------------------------
# GLUE

# Metric names per task, and which one (or the mean of which) is the task's headline score.
GLUE_METRICS: Dict[str, Dict[str, Sequence[str]]] = {
    "CoLA": {"metrics": ("mcc", "accuracy"), "headline": ("mcc",)},
    "SST-2": {"metrics": ("accuracy",), "headline": ("accuracy",)},
    "MRPC": {"metrics": ("f1", "accuracy"), "headline": ("f1", "accuracy")},
    "STS-B": {"metrics": ("pearson", "spearman"), "headline": ("pearson", "spearman")},
    "QQP": {"metrics": ("f1", "accuracy"), "headline": ("f1", "accuracy")},
    "MNLI": {"metrics": ("accuracy",), "headline": ("accuracy",)},
    "QNLI": {"metrics": ("accuracy",), "headline": ("accuracy",)},
    "RTE": {"metrics": ("accuracy",), "headline": ("accuracy",)},
    "WNLI": {"metrics": ("accuracy",), "headline": ("accuracy",)},
}
# The metric the official scripts keep the best checkpoint by (``run_classifier.py``: Pearson for STS-B,
# Matthews correlation for CoLA, accuracy otherwise, MRPC and QQP included; ``run_squad_v1/v2.py``: F1;
# ``run_race.py``: accuracy). The headline ``score`` (GLUE leaderboard rule) stays what tables report.
SELECTION_METRICS: Dict[str, str] = {
    "CoLA": "mcc", "SST-2": "accuracy", "MRPC": "accuracy", "STS-B": "pearson", "QQP": "accuracy",
    "MNLI": "accuracy", "QNLI": "accuracy", "RTE": "accuracy", "WNLI": "accuracy",
    **{name: "f1" for name in SQUAD_TASKS.values()}, "RACE": "accuracy",
    "CMRC2018": "f1", "C3": "accuracy",   # the SQuAD node with benchmarks.squad_metric=cmrc2018; the RACE node's C3
}
_NON_GLUE = (*SQUAD_TASKS.values(), "RACE", "CMRC2018", "C3")
_MULTIPLE_CHOICE = ("RACE", "C3")
_ALIASES = {"MNLI-M": "MNLI", "MNLI-MM": "MNLI", "SST2": "SST-2", "STSB": "STS-B", "STS": "STS-B"}


def _canonical_task(task: str) -> str:
    for name in GLUE_METRICS:
        if name.upper() == task.upper():
            return name
    if task.upper() in _ALIASES:
        return _ALIASES[task.upper()]
    raise ValueError(f"unknown GLUE task {task!r}; expected one of {sorted(GLUE_METRICS)}")


def _plan(task):
    """(metric names, headline metric names, is_regression) of a GLUE task's name or of a task object with
    ``metrics``, ``headline`` and ``is_regression`` (a :class:`components.evaluation.glue.task_spec.ClassificationSpec`)."""
    if not isinstance(task, str):
        return tuple(task.metrics), tuple(task.headline), bool(task.is_regression)
    name = _canonical_task(task)
    return tuple(GLUE_METRICS[name]["metrics"]), tuple(GLUE_METRICS[name]["headline"]), name == "STS-B"


def selection_metric(task) -> str:
    """Name of the metric the official fine-tuning scripts select checkpoints by, for a GLUE task, ``SQuAD1.1``,
    ``SQuAD2.0``, ``RACE``, ``CMRC2018``, ``C3``, or a task spec (its first metric)."""
    if not isinstance(task, str):
        return task.selection_metric
    for name in _NON_GLUE:
        if task.upper() == name.upper():
            return SELECTION_METRICS[name]
    return SELECTION_METRICS[_canonical_task(task)]


def glue_metrics(task, predictions, labels) -> Dict[str, float]:
    """Metrics of one GLUE task (its name) or task spec (the object) plus ``score``, the task's headline number.

    ``predictions`` are label ids ([N]), or logits ([N, C]) which are arg-maxed; for a regression task (STS-B)
    they are the regression outputs ([N] or [N, 1]). Headline: CoLA MCC; MRPC/QQP mean of F1 and
    accuracy; STS-B mean of Pearson and Spearman; the other tasks accuracy (GLUE leaderboard rule); a spec's: the
    mean of its metrics.
    """
    metrics, headline, regression = _plan(task)
    preds = np.asarray(predictions)
    labels = np.asarray(labels)
    if regression:
        preds = preds.reshape(preds.shape[0], -1)[:, 0] if preds.ndim == 2 else preds
        preds = preds.astype(np.float64)
        labels = labels.astype(np.float64)
    elif preds.ndim == 2:
        preds = np.argmax(preds, axis=-1)
    values: Dict[str, float] = {}
    for metric in metrics:
        if metric == "accuracy":
            values[metric] = accuracy(preds, labels)
        elif metric == "f1":
            values[metric] = f1_binary(preds, labels, positive=1)
        elif metric == "macro_f1":
            values[metric] = macro_f1(preds, labels)
        elif metric == "mcc":
            values[metric] = matthews_corrcoef(preds, labels)
        elif metric == "pearson":
            values[metric] = pearson(preds, labels)
        elif metric == "spearman":
            values[metric] = spearman(preds, labels)
    values["score"] = float(np.mean([values[m] for m in headline]))
    values["n"] = int(labels.shape[0])
    return values


def majority_label(train_labels) -> int:
    """The training set's most frequent label (ties: the smallest id), what a classifier that ignores its
    input converges to."""
    values, counts = np.unique(_as_1d(train_labels, "train_labels").astype(np.int64), return_counts=True)
    if values.size == 0:
        raise ValueError("train_labels is empty")
    return int(values[np.argmax(counts)])


def majority_share(predictions) -> float:
    """Share of the most frequent predicted label ([N] ids or [N, C] logits, arg-maxed): 1.0 for a run that
    collapsed to one class, whatever its score."""
    preds = np.asarray(predictions)
    preds = np.argmax(preds, axis=-1) if preds.ndim == 2 else preds
    if preds.size == 0:
        return float("nan")
    return float(np.unique(preds, return_counts=True)[1].max() / preds.size)


def majority_baseline(task, train_labels, dev_labels) -> Optional[float]:
    """Headline score (a fraction, as :func:`glue_metrics`) of predicting the training majority label for every
    dev example, the floor a fine-tuned classifier must clear to have read its input (MRPC: F1 81.2 / acc 68.4,
    CoLA: MCC 0). ``task`` is a GLUE task, a task spec, or ``RACE`` / ``C3`` (plain accuracy). None for a
    regression task (STS-B): a constant prediction has no correlation."""
    dev = _as_1d(dev_labels, "dev_labels")
    if isinstance(task, str) and task.upper() in _MULTIPLE_CHOICE:
        return accuracy(np.full(dev.shape, majority_label(train_labels)), dev)
    if _plan(task)[2]:
        return None
    return glue_metrics(task, np.full(dev.shape, majority_label(train_labels)), dev)["score"]


def _finite(values) -> list:
    out = []
    for v in values or []:
        if v is None or isinstance(v, bool):
            continue
        try:
            f = float(v)
        except (TypeError, ValueError):
            continue
        if np.isfinite(f):
            out.append(f)
    return out


def _spread(values) -> Dict[str, object]:
    vals = _finite(values)
    if not vals:
        return {"median": None, "min": None, "max": None, "n": 0}
    return {"median": float(np.median(vals)), "min": min(vals), "max": max(vals), "n": len(vals)}


def compare_arms(pretrained: Dict[str, Dict], baseline: Dict[str, Dict]) -> Dict[str, Dict[str, object]]:
    """Gain of the pretrained arm over a baseline arm, per task, from each task's per-seed headline scores.

    Both arms run the same seeds, so besides the medians (``gain_median`` = median(pretrained) −
    median(baseline)) the per-seed differences are paired (``gain_paired``: median and min–max of
    pretrained[seed] − baseline[seed]). ``beyond_spread``: the worst pretrained seed beats the best baseline seed
    (the issue's "beats beyond the seed spread"); None unless both arms have at least two seeds, because a single
    run has no spread to be beyond. Scores are the tasks' headlines in percent (``run_scores``).
    """
    out: Dict[str, Dict[str, object]] = {}
    for task, pre in pretrained.items():
        base = baseline.get(task)
        if base is None:
            continue
        pre_runs = pre.get("run_scores") or [pre.get("score")]
        base_runs = base.get("run_scores") or [base.get("score")]
        p, b = _spread(pre_runs), _spread(base_runs)
        paired = [x - y for x, y in zip(pre_runs, base_runs) if _finite([x]) and _finite([y])]
        gain = p["median"] - b["median"] if p["median"] is not None and b["median"] is not None else None
        out[task] = {
            "pretrained": p, "baseline": b, "gain_median": gain, "gain_paired": _spread(paired),
            "beyond_spread": (p["min"] > b["max"]) if min(p["n"], b["n"]) >= 2 else None,
            "selection_metric": pre.get("selection_metric"),
            # The floor both arms share (training-majority prediction) and how many runs of each arm sit on it:
            # a task where every run of both arms predicts one class compares nothing.
            "majority_baseline": pre.get("majority_baseline"),
            "single_class_runs": {"pretrained": pre.get("single_class_runs"), "baseline": base.get("single_class_runs")},
        }
    return out
