"""RACE driver: one logit per option from the pooled output (``run_race.py``), accuracy on dev.

``[CLS] article [SEP] question+option [SEP]`` per option, the question+option part keeping at most 128 pieces
(official; ``max_seq_length // 2`` at short lengths so the article keeps room). Headline, selection metric and
median run: accuracy on all dev questions; middle/high accuracies are reported beside it.

``settings.race_format="c3"`` runs CLUE's C3 instead (:func:`components.evaluation.glue.clue.read_c3`:
``{d,m}-{train,dev}.json`` in ``data_dir``, 2-4 choices padded to four as CLUE's ``run_c3.py`` does), as task
``C3`` with its own hparams row: accuracy over all dev questions (C3's official metric), with the dialogue (``d``)
and mixed-genre (``m``) subsets beside it; dev predictions are ``{question id: choice index}``.
"""
from __future__ import annotations

import dataclasses
import json
import math
import os
import time
from typing import Any, Dict

import numpy as np

from components.evaluation.glue import clue as clue_lib
from components.evaluation.race import race_data as race_lib
from components.evaluation.finetune import (EVAL_BATCH_SIZE, fine_tune_seeds, predict, run_summary, runs_record,
                                           single_class_runs)
from components.evaluation.heads import MultipleChoiceModel, build_encoder, classification_loss
from components.evaluation.metrics import majority_baseline, majority_share

__all__ = ["run_race"]


def run_race(data_dir: str, albert_dir: str, tokenizer, settings, seed: int, output_dir: str,
             init: str = "pretrained") -> Dict[str, Any]:
    """Fine-tune on ``data_dir/train`` and score ``data_dir/dev`` from the ``init`` starting point; returns
    ``{"tasks", "runs", "hparams", "skipped", "timings"}`` for :func:`.run_benchmark.run_benchmark`."""
    t0 = time.time()
    c3 = getattr(settings, "race_format", "race") == "c3"
    name, levels_of = ("C3", clue_lib.C3_SUBSETS) if c3 else ("RACE", race_lib.LEVELS)
    hp = settings.hparams[name]
    max_qa = min(128, hp.max_seq_length // 2)
    read = clue_lib.read_c3 if c3 else (lambda d, split: race_lib.read_race(d, split=split))
    train_ex = read(data_dir, "train")
    dev_ex = read(data_dir, "dev")
    if settings.max_eval_examples:
        dev_ex = dev_ex[: settings.max_eval_examples]
    train = race_lib.convert_race_examples(train_ex, tokenizer, hp.max_seq_length, max_qa)
    dev = race_lib.convert_race_examples(dev_ex, tokenizer, hp.max_seq_length, max_qa)
    levels = np.asarray([e.level for e in dev_ex])

    def evaluate(model):
        logits = predict(model, dev, batch_size=max(1, EVAL_BATCH_SIZE // 4))["logits"]
        if c3:
            m = clue_lib.c3_accuracy(np.argmax(logits, axis=-1), dev["label_ids"], levels)
        else:
            m = race_lib.race_metrics(logits, dev["label_ids"], levels)
        metrics = {k: (100.0 * m[k] if not math.isnan(m[k]) else None) for k in (*levels_of, "all")}
        metrics.update({f"n_{k}": m[f"n_{k}"] for k in (*levels_of, "all")})
        metrics.update({"score": metrics["all"], "selection_metric": "accuracy", "selection_score": metrics["all"],
                        "majority_share": 100.0 * majority_share(logits)})
        return metrics, {"predictions": np.argmax(logits, axis=-1)}

    export = bool(getattr(settings, "export_serving_model", True))

    def make_head(encoder, run_seed):
        return MultipleChoiceModel(encoder, hp.classifier_dropout, run_seed)

    def after_run(model, res):
        if export:
            res["weights"] = model.get_weights()  # the selected weights, exported if this run is the median

    run_results, chosen = fine_tune_seeds(
        albert_dir, hp, train, make_head, classification_loss, evaluate, seed=seed, num_seeds=settings.seeds,
        selection=settings.checkpoint_selection, eval_every=settings.eval_every, after_run=after_run, init=init,
        task=name, precision=settings.mixed_precision)
    res = run_results[chosen]
    pred_path = os.path.join(output_dir, "predictions", f"{name.lower()}_dev_predictions.json")
    os.makedirs(os.path.dirname(pred_path), exist_ok=True)
    with open(pred_path, "w", encoding="utf-8") as f:
        answer = (lambda p: int(p)) if c3 else (lambda p: race_lib.ANSWER_LETTERS[int(p)])
        json.dump({e.example_id: answer(p) for e, p in zip(dev_ex, res["payload"]["predictions"])},
                  f, indent=1, ensure_ascii=False)
    entry = dict(res["metrics"])
    entry.update(run_summary(run_results, chosen, lambda m: m))
    entry.update({"num_train": len(train_ex), "num_dev": len(dev_ex), "max_qa_length": max_qa,
                  "predictions": os.path.relpath(pred_path, output_dir),
                  # the floor: always answering the training set's most frequent letter
                  "majority_baseline": 100.0 * majority_baseline(name, train["label_ids"], dev["label_ids"]),
                  "single_class_runs": single_class_runs(run_results, lambda m: m)})
    if export:
        from components.evaluation.task_serving import export_choose  # lazy: tensorflow_text (the export only)

        encoder = build_encoder(albert_dir, hp.albert_dropout, hp.max_seq_length, restore=False)
        info = {"pad_option": clue_lib.C3_PAD_CHOICE} if c3 else {}
        entry.update(export_choose(name, hp, max_qa, encoder, make_head, tokenizer, res, dev_ex, dev, output_dir,
                                   **info))
    for r in run_results:
        r.pop("weights", None)
    return {"tasks": {name: entry}, "runs": {name: runs_record(run_results)},
            "hparams": {name: dataclasses.asdict(hp)}, "skipped": {}, "timings": {name: round(time.time() - t0, 3)}}
