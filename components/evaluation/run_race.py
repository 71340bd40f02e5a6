"""RACE driver: one logit per option from the pooled output (``run_race.py``), accuracy on dev.

``[CLS] article [SEP] question+option [SEP]`` per option, the question+option part keeping at most 128 pieces
(official; ``max_seq_length // 2`` at short lengths so the article keeps room). Headline, selection metric and
median run: accuracy on all dev questions; middle/high accuracies are reported beside it.
"""
from __future__ import annotations

import dataclasses
import json
import math
import os
import time
from typing import Any, Dict

import numpy as np

from components.evaluation import race as race_lib
from components.evaluation.finetune import (EVAL_BATCH_SIZE, fine_tune_seeds, predict, run_summary, runs_record,
                                           single_class_runs)
from components.evaluation.heads import MultipleChoiceModel, classification_loss
from components.evaluation.metrics import majority_baseline, majority_share

__all__ = ["run_race"]


def run_race(data_dir: str, albert_dir: str, tokenizer, settings, seed: int, output_dir: str,
             init: str = "pretrained") -> Dict[str, Any]:
    """Fine-tune on ``data_dir/train`` and score ``data_dir/dev`` from the ``init`` starting point; returns
    ``{"tasks", "runs", "hparams", "skipped", "timings"}`` for :func:`.run_benchmark.run_benchmark`."""
    t0 = time.time()
    hp = settings.hparams["RACE"]
    max_qa = min(128, hp.max_seq_length // 2)
    train_ex = race_lib.read_race(data_dir, split="train")
    dev_ex = race_lib.read_race(data_dir, split="dev")
    if settings.max_eval_examples:
        dev_ex = dev_ex[: settings.max_eval_examples]
    train = race_lib.convert_race_examples(train_ex, tokenizer, hp.max_seq_length, max_qa)
    dev = race_lib.convert_race_examples(dev_ex, tokenizer, hp.max_seq_length, max_qa)
    levels = np.asarray([e.level for e in dev_ex])

    def evaluate(model):
        logits = predict(model, dev, batch_size=max(1, EVAL_BATCH_SIZE // 4))["logits"]
        m = race_lib.race_metrics(logits, dev["label_ids"], levels)
        metrics = {k: (100.0 * m[k] if not math.isnan(m[k]) else None) for k in ("middle", "high", "all")}
        metrics.update({k: m[k] for k in ("n_middle", "n_high", "n_all")})
        metrics.update({"score": metrics["all"], "selection_metric": "accuracy", "selection_score": metrics["all"],
                        "majority_share": 100.0 * majority_share(logits)})
        return metrics, {"predictions": np.argmax(logits, axis=-1)}

    run_results, chosen = fine_tune_seeds(
        albert_dir, hp, train, lambda enc, s: MultipleChoiceModel(enc, hp.classifier_dropout, s),
        classification_loss, evaluate, seed=seed, num_seeds=settings.seeds, selection=settings.checkpoint_selection,
        eval_every=settings.eval_every, init=init, task="RACE", precision=settings.mixed_precision)
    res = run_results[chosen]
    pred_path = os.path.join(output_dir, "predictions", "race_dev_predictions.json")
    os.makedirs(os.path.dirname(pred_path), exist_ok=True)
    with open(pred_path, "w", encoding="utf-8") as f:
        json.dump({e.example_id: race_lib.ANSWER_LETTERS[int(p)] for e, p in zip(dev_ex, res["payload"]["predictions"])},
                  f, indent=1)
    entry = dict(res["metrics"])
    entry.update(run_summary(run_results, chosen, lambda m: m))
    entry.update({"num_train": len(train_ex), "num_dev": len(dev_ex), "max_qa_length": max_qa,
                  "predictions": os.path.relpath(pred_path, output_dir),
                  # the floor: always answering the training set's most frequent letter
                  "majority_baseline": 100.0 * majority_baseline("RACE", train["label_ids"], dev["label_ids"]),
                  "single_class_runs": single_class_runs(run_results, lambda m: m)})
    return {"tasks": {"RACE": entry}, "runs": {"RACE": runs_record(run_results)},
            "hparams": {"RACE": dataclasses.asdict(hp)}, "skipped": {}, "timings": {"RACE": round(time.time() - t0, 3)}}
