"""``albert-pipeline score``: score a predictions file against a benchmark's dataset.

Formats:

* ``squad`` / ``squad2``: dataset = official SQuAD JSON; predictions = official JSON
  ``{question id: answer text}``; for v2 an optional na-prob file ``{question id: null odds}``
  (``na_prob_path``) adds best_exact/best_f1 and their thresholds.
* ``cmrc2018``: as ``squad``, scored with CMRC2018's official character-level EM / F1
  (:mod:`.squad.cmrc2018`).
* ``glue``: dataset = a labeled GLUE TSV (e.g. ``glue_data/MRPC/dev.tsv``) or the task folder
  (→ its dev file); predictions = GLUE submission TSV ``index<TAB>prediction`` with label strings
  (indices = the file's index column, else the 0-based row number). ``task`` names the GLUE task;
  when omitted it is taken from the dataset's folder name.
* ``race``: dataset = a RACE split folder (containing ``middle``/``high``); predictions = JSON
  ``{example_id: "A".."D"}`` (see :mod:`.race` for example ids).

Missing predictions are errors for GLUE and RACE (a partial file would silently inflate or
deflate the score); SQuAD follows the official scripts (v1.1: missing → 0; v2.0: left out).
"""
from __future__ import annotations

import json
import os
from typing import Dict, Optional

import numpy as np

from components.evaluation.glue import glue_data as glue_lib
from components.evaluation.race import race_data as race_lib
from components.evaluation.metrics import glue_metrics
from components.evaluation.squad.cmrc2018 import cmrc2018_metrics
from components.evaluation.squad.scoring import squad_v1_metrics, squad_v2_metrics
from config.errors import InputError, MissingInputError

__all__ = ["score", "BENCHMARKS"]

BENCHMARKS = ("squad", "squad2", "cmrc2018", "glue", "race")


def _load_json(path: str):
    """A JSON input; a missing file, bytes that are not UTF-8 or text that is not JSON name the file."""
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        raise MissingInputError(f"{path} does not exist") from None
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not valid UTF-8 at byte offset {exc.start}") from None
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}") from None


def _score_glue(dataset_path: str, predictions_path: str, task: Optional[str]) -> Dict:
    if os.path.isdir(dataset_path):
        name = task or os.path.basename(os.path.normpath(dataset_path))
        t = glue_lib.get_task(name)
        split = "dev"
        if t.name == "MNLI":
            split = "dev_mismatched" if (task or "").upper() == "MNLI-MM" else "dev_matched"
        dataset_path = os.path.join(dataset_path, t.splits[split].filename)
    name = task or os.path.basename(os.path.dirname(os.path.abspath(dataset_path)))
    t = glue_lib.get_task(name)
    examples = glue_lib.read_glue_file(t.name, dataset_path)
    if any(e.label is None for e in examples):
        raise InputError(f"{dataset_path} has no labels (a test file?); score against a dev file")
    preds = glue_lib.read_glue_predictions(predictions_path)
    pred_values, label_values, missing = [], [], []
    for ex in examples:
        index = ex.guid.rsplit("-", 1)[-1]
        if index not in preds:
            missing.append(index)
            continue
        p = preds[index]
        if t.is_regression:
            try:
                pred_values.append(float(p))
            except ValueError:
                raise InputError(f"{predictions_path}: index {index}: prediction {p!r} is not a number") from None
            label_values.append(float(ex.label))
        else:
            if p not in t.labels:
                raise InputError(f"{predictions_path}: index {index}: prediction {p!r} is not one of {list(t.labels)}")
            pred_values.append(t.labels.index(p))
            label_values.append(t.labels.index(ex.label))
    if missing:
        raise InputError(f"{predictions_path}: no prediction for {len(missing)} of {len(examples)} examples of "
                         f"{dataset_path} (first indices: {missing[:5]})")
    extra = len(preds) - len(examples)
    result = glue_metrics(t.name, np.asarray(pred_values), np.asarray(label_values))
    result.update({"benchmark": "glue", "task": t.name, "dataset": dataset_path})
    if extra > 0:
        result["unused_predictions"] = extra
    return result


def _score_race(dataset_path: str, predictions_path: str) -> Dict:
    examples = race_lib.read_race(dataset_path)
    preds = _load_json(predictions_path)
    if not isinstance(preds, dict):
        raise InputError(f"{predictions_path}: expected a JSON object {{example_id: 'A'..'D'}}")
    p_ids, labels, levels, missing = [], [], [], []
    for ex in examples:
        if ex.example_id not in preds:
            missing.append(ex.example_id)
            continue
        letter = str(preds[ex.example_id]).strip().upper()
        if letter not in race_lib.ANSWER_LETTERS:
            raise InputError(f"{predictions_path}: {ex.example_id}: prediction {preds[ex.example_id]!r} is not A-D")
        p_ids.append(race_lib.ANSWER_LETTERS.index(letter))
        labels.append(ex.label)
        levels.append(ex.level)
    if missing:
        raise InputError(f"{predictions_path}: no prediction for {len(missing)} of {len(examples)} questions "
                         f"(first: {missing[:5]})")
    result = race_lib.race_metrics(np.asarray(p_ids), np.asarray(labels), np.asarray(levels))
    result.update({"benchmark": "race", "dataset": dataset_path})
    return result


def score(benchmark: str, dataset_path: str, predictions_path: str, task: Optional[str] = None,
          na_prob_path: Optional[str] = None) -> Dict:
    """Score ``predictions_path`` against ``dataset_path``; returns a JSON-serialisable dict."""
    benchmark = benchmark.lower()
    if benchmark == "squad":
        result = squad_v1_metrics(_load_json(dataset_path), _load_json(predictions_path))
    elif benchmark == "cmrc2018":
        result = cmrc2018_metrics(_load_json(dataset_path), _load_json(predictions_path))
    elif benchmark == "squad2":
        odds = _load_json(na_prob_path) if na_prob_path else None
        result = squad_v2_metrics(_load_json(dataset_path), _load_json(predictions_path), odds)
    elif benchmark == "glue":
        return _score_glue(dataset_path, predictions_path, task)
    elif benchmark == "race":
        return _score_race(dataset_path, predictions_path)
    else:
        raise ValueError(f"unknown benchmark {benchmark!r}; expected one of {BENCHMARKS}")
    result = dict(result)
    result.update({"benchmark": benchmark, "dataset": dataset_path})
    return result
