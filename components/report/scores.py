"""The report's arithmetic: the paper's Table-2 row and its Avg, and the per-benchmark facts gathered across results.

Table 2 "Avg" (paper): mean over SQuAD1.1, SQuAD2.0, MNLI, SST-2 and RACE where each SQuAD column is first the
mean of its F1 and EM. Columns this run did not produce are named, never filled in; the average is then over the
columns present and is not comparable with the paper's Avg. The seed spreads and gains themselves are computed by
the benchmarks (:func:`components.evaluation.metrics.compare_arms`); here they are only gathered.
"""
from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Tuple

from config.references import PAPER_ALBERT_BASE
from components.evaluation.benchmark_config import CLUE_TASKS, GLUE_TASKS, SQUAD_TASKS
from components.evaluation.glue.task_spec import METRIC_NAMES
from components.evaluation.metrics import GLUE_METRICS
from trainer.formatting import number

__all__ = ["TABLE2_COLUMNS", "NON_GLUE_TASKS", "FAMILIES", "all_tasks", "task_family", "families", "task_metrics",
           "table2_row", "suite_row", "paper_avg_check", "gains", "init_checks"]

# (column, task names in the results (first found wins), metric key(s))
TABLE2_COLUMNS: Tuple[Tuple[str, Tuple[str, ...], Tuple[str, ...]], ...] = (
    (SQUAD_TASKS["1.1"], (SQUAD_TASKS["1.1"],), ("f1", "exact_match")),
    (SQUAD_TASKS["2.0"], (SQUAD_TASKS["2.0"],), ("f1", "exact_match")),
    ("MNLI", ("MNLI-m", "MNLI"), ("accuracy",)),
    ("SST-2", ("SST-2",), ("accuracy",)),
    ("RACE", ("RACE",), ("all",)),
)
# Every other task name in the results is a classification task (GLUE's, CLUE's or a spec's): the GLUE node's.
NON_GLUE_TASKS = (*SQUAD_TASKS.values(), "RACE", "CMRC2018", "C3")
# The English suite: the paper's Table 2 and the GLUE table. Any other task is a column of the suite row.
_ENGLISH = frozenset((*GLUE_TASKS, "MNLI-m", "MNLI-mm", *SQUAD_TASKS.values(), "RACE"))
_SUITE_ORDER = (*CLUE_TASKS, "CMRC2018", "C3")  # CLUE's leaderboard order: classification, then reading

# Each task of a result belongs to one family, which the report's sections and the model card file it under, in
# this order: GLUE's classification tasks; CLUE's (classification, run by the GLUE node); any other task a spec
# describes (benchmarks.tasks); a cross-lingual spec's languages and their mean; extractive question answering
# (SQuAD, CMRC2018); multiple choice (RACE, C3).
FAMILIES = {"glue": "GLUE", "clue": "CLUE", "spec": "Tasks by spec", "cross_lingual": "Cross-lingual",
            "qa": "Question answering", "multiple_choice": "Multiple choice"}
QA_TASKS = (*SQUAD_TASKS.values(), "CMRC2018")
MULTIPLE_CHOICE_TASKS = ("RACE", "C3")
_GLUE_RESULTS = {**{t: t for t in GLUE_TASKS}, "MNLI-m": "MNLI", "MNLI-mm": "MNLI"}  # result name → GLUE task


def task_family(name: str, metrics: Optional[Mapping[str, Any]] = None) -> str:
    """The family (a key of :data:`FAMILIES`) of one task of a result: a cross-lingual task's languages
    (``cross_lingual`` in their metrics) and its mean (``languages``) by their metrics, every other task by its
    name."""
    metrics = metrics or {}
    if name in QA_TASKS:
        return "qa"
    if name in MULTIPLE_CHOICE_TASKS:
        return "multiple_choice"
    if "cross_lingual" in metrics or "languages" in metrics:
        return "cross_lingual"
    if name in _GLUE_RESULTS:
        return "glue"
    return "clue" if name in CLUE_TASKS else "spec"


def families(tasks: Mapping[str, Mapping[str, Any]]) -> Dict[str, List[str]]:
    """{family: its task names, in the results' order} for the families that have tasks, in :data:`FAMILIES`'
    order."""
    out: Dict[str, List[str]] = {family: [] for family in FAMILIES}
    for name, metrics in tasks.items():
        out[task_family(name, metrics)].append(name)
    return {family: names for family, names in out.items() if names}


def task_metrics(name: str, metrics: Mapping[str, Any]) -> List[Tuple[str, Any]]:
    """(metric, value) of what a task reports, its headline's first: a GLUE task's official metrics; SQuAD's and
    CMRC2018's ``f1`` and ``exact_match``; RACE's and C3's ``accuracy`` (over all questions); any other
    classification task's metrics (:data:`~components.evaluation.glue.task_spec.METRIC_NAMES`) as its result holds
    them, the one it selects by first. Percentages, as the result holds them."""
    family = task_family(name, metrics)
    if family == "glue":
        keys: List[str] = list(GLUE_METRICS[_GLUE_RESULTS[name]]["metrics"])
    elif family == "qa":
        keys = ["f1", "exact_match"]
    elif family == "multiple_choice":
        return [("accuracy", metrics.get("all", metrics.get("score")))]
    else:
        first = metrics.get("selection_metric")
        keys = [first] if first in METRIC_NAMES and first in metrics else []
        keys += [m for m in METRIC_NAMES if m in metrics and m not in keys]
    return [(key, metrics.get(key)) for key in keys]


def all_tasks(results: Mapping[str, Mapping[str, Any]]) -> Dict[str, Dict[str, Any]]:
    """{task: metrics} over every benchmark result (a later result's task of the same name wins)."""
    tasks: Dict[str, Dict[str, Any]] = {}
    for result in results.values():
        for name, metrics in (result or {}).get("tasks", {}).items():
            tasks[name] = metrics
    return tasks


def table2_row(tasks: Mapping[str, Mapping[str, Any]]) -> Dict[str, Any]:
    """Table-2 cells from task metrics: ``columns`` {column: value or {"f1","exact_match"}},
    ``headline`` {column: number used in Avg}, ``present``/``missing`` column names, ``avg``
    (mean of the present headlines, each SQuAD pair averaged first; None if none present) and
    ``complete`` (all five columns present)."""
    columns: Dict[str, Any] = {}
    headline: Dict[str, float] = {}
    missing: List[str] = []
    for column, names, keys in TABLE2_COLUMNS:
        metrics = next((tasks[n] for n in names if n in tasks), None)
        values = [number(metrics.get(k)) for k in keys] if metrics else [None]
        if any(v is None for v in values):
            missing.append(column)
            continue
        if len(keys) == 2:
            columns[column] = {keys[0]: values[0], keys[1]: values[1]}
        else:
            columns[column] = values[0]
        headline[column] = sum(values) / len(values)
    avg = sum(headline.values()) / len(headline) if headline else None
    return {"columns": columns, "headline": headline, "present": list(headline), "missing": missing,
            "avg": avg, "complete": not missing}


def suite_row(tasks: Mapping[str, Mapping[str, Any]]) -> Dict[str, Any]:
    """Table 2's shape for the tasks beyond English a run scored (CLUE's, spec tasks; a cross-lingual task by its
    mean over the languages): ``columns`` in CLUE's order, then the other tasks by name; ``cells`` {column:
    headline, or {"f1", "exact_match"} for an extraction task}; ``headline`` {column: the task's ``score``: a classification task's headline, C3's accuracy, CMRC2018's
    mean of F1 and EM (its official AVERAGE)}; ``avg`` their mean (None without columns)."""
    names = [t for t, m in tasks.items() if t not in _ENGLISH and "cross_lingual" not in (m or {})]
    columns = [t for t in _SUITE_ORDER if t in names] + sorted(t for t in names if t not in _SUITE_ORDER)
    cells: Dict[str, Any] = {}
    headline: Dict[str, float] = {}
    for name in columns:
        metrics = tasks[name]
        score = number(metrics.get("score"))
        if score is None:
            continue
        headline[name] = score
        cells[name] = ({"f1": number(metrics.get("f1")), "exact_match": number(metrics.get("exact_match"))}
                       if "exact_match" in metrics else score)
    avg = sum(headline.values()) / len(headline) if headline else None
    return {"columns": [c for c in columns if c in headline], "cells": cells, "headline": headline, "avg": avg}


def paper_avg_check() -> float:
    """The paper's ALBERT-base Avg recomputed from its five columns by the rule above."""
    p = PAPER_ALBERT_BASE
    cols = [(p["SQuAD1.1"]["f1"] + p["SQuAD1.1"]["exact_match"]) / 2,
            (p["SQuAD2.0"]["f1"] + p["SQuAD2.0"]["exact_match"]) / 2, p["MNLI"], p["SST-2"], p["RACE"]]
    return sum(cols) / len(cols)  # 80.05 → the paper's 80.1


def gains(results: Mapping[str, Mapping[str, Any]]) -> Dict[str, Dict[str, Dict[str, Any]]]:
    """{baseline name: {task: comparison}} over every benchmark result (``gain_over_baseline`` of metrics.json)."""
    out: Dict[str, Dict[str, Dict[str, Any]]] = {}
    for _, r in sorted(results.items()):
        for name, per_task in ((r or {}).get("gain_over_baseline") or {}).items():
            out.setdefault(name, {}).update(per_task or {})
    return out


def init_checks(results: Mapping[str, Mapping[str, Any]]) -> Dict[Tuple[str, str], Dict[str, Any]]:
    """{(benchmark, arm): step-0 check} for every arm whose check compared at least one run."""
    out: Dict[Tuple[str, str], Dict[str, Any]] = {}
    for bench, r in (results or {}).items():
        r = r or {}
        if r.get("init_check", {}).get("runs_checked"):
            out[(bench, "pretrained")] = r["init_check"]
        for name, arm in (r.get("baselines") or {}).items():
            if (arm.get("init_check") or {}).get("runs_checked"):
                out[(bench, name)] = arm["init_check"]
    return out
