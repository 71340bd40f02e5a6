"""SQuAD driver: v1.1 with the official v1 head and decoding, v2.0 with the official v2 model and evaluation.

* v1.1 (:class:`~components.evaluation.heads.SpanModel`): raw start/end logits; best span by
  :func:`components.evaluation.squad.decoding.postprocess_squad`; EM/F1 with the official v1.1 definitions.
* v2.0 (:class:`~components.evaluation.heads.SquadV2Model`): beam outputs decoded and scored by
  :func:`components.evaluation.squad.decoding.evaluate_squad_v2` (null odds = min over windows of the
  answerability logit; best-F1 threshold tuned on dev; final predictions decoded with it). The ``null_odds`` file holds the
  official values (logits, not probabilities).

``settings.squad_metric="cmrc2018"`` (SQuAD v1.1 files: CMRC2018's, or any text without spaces between words)
scores with CMRC2018's official character-level EM / F1 (:mod:`components.evaluation.squad.cmrc2018`), as task
``CMRC2018`` with its own hparams row; a WordPiece model's contexts are aligned by character offsets
(:mod:`components.evaluation.squad.alignment`).

Headline ``score`` = mean(F1, EM) (the paper's Table 2 averages the pair; CMRC2018's ``AVERAGE`` too); checkpoints and the median run are
chosen by F1, the official scripts' key. ``settings.max_eval_examples`` keeps the first N dev questions and
writes the matching subset of the dev file so the predictions can be re-scored.
"""
from __future__ import annotations

import dataclasses
import json
import os
import time
from typing import Any, Dict, List, Tuple

from components.evaluation.finetune import fine_tune_seeds, predict, run_summary, runs_record
from components.evaluation.heads import SpanModel, SquadV2Model, build_encoder, span_loss, squad_v2_loss
from components.evaluation.squad.cmrc2018 import cmrc2018_metrics
from components.evaluation.squad.decoding import (evaluate_squad_v2, postprocess_squad, write_null_odds,
                                                  write_squad_predictions)
from components.evaluation.squad.squad_features import convert_squad_examples
from components.evaluation.squad.reading import load_squad_json, read_squad
from components.evaluation.squad.scoring import squad_v1_metrics
from components.evaluation.benchmark_config import SQUAD_TASKS

__all__ = ["run_squad", "START_N_TOP", "END_N_TOP", "squad_task_name"]

START_N_TOP = 5  # official run_squad_v2.py beam sizes
END_N_TOP = 5


def squad_task_name(version: str) -> str:
    return SQUAD_TASKS["2.0" if str(version) == "2.0" else "1.1"]


def _filter_squad(articles: List[Dict], keep: set) -> List[Dict]:
    out = []
    for article in articles:
        paragraphs = []
        for p in article["paragraphs"]:
            qas = [qa for qa in p["qas"] if qa["id"] in keep]
            if qas:
                paragraphs.append(dict(p, qas=qas))
        if paragraphs:
            out.append(dict(article, paragraphs=paragraphs))
    return out


def run_squad(data_dir: str, albert_dir: str, tokenizer, settings, seed: int, output_dir: str,
              init: str = "pretrained") -> Dict[str, Any]:
    """Fine-tune and score ``settings.squad_version`` on ``data_dir/<squad_train_file>`` and ``<squad_dev_file>``;
    ``init``: the encoder's starting point (``pretrained`` | ``random_init``).

    Returns ``{"tasks", "runs", "hparams", "skipped", "timings"}`` for :func:`.run_benchmark.run_benchmark`.
    """
    t0 = time.time()
    v2 = str(settings.squad_version) == "2.0"
    cmrc = getattr(settings, "squad_metric", "official") == "cmrc2018"
    if cmrc and v2:
        from config.schema import ConfigError  # lazy: on one branch (adds nothing)

        raise ConfigError("config benchmarks.squad_metric=cmrc2018 is invalid with benchmarks.squad_version=2.0: "
                          "CMRC2018's files are SQuAD v1.1's format")
    name = "CMRC2018" if cmrc else squad_task_name(settings.squad_version)
    score_v1 = cmrc2018_metrics if cmrc else squad_v1_metrics
    hp = settings.hparams[name]
    skipped: List[Tuple[str, str, str]] = []
    train_ex = read_squad(os.path.join(data_dir, settings.squad_train_file), on_bad_answer="skip", skipped=skipped)
    train, _ = convert_squad_examples(train_ex, tokenizer, hp.max_seq_length, settings.doc_stride,
                                      settings.max_query_length, is_training=True)
    dev_articles = load_squad_json(os.path.join(data_dir, settings.squad_dev_file))
    dev_ex = read_squad(dev_articles, on_bad_answer="skip", skipped=skipped)
    if settings.max_eval_examples:
        dev_ex = dev_ex[: settings.max_eval_examples]
        dev_articles = _filter_squad(dev_articles, {e.qid for e in dev_ex})
    dev, metas = convert_squad_examples(dev_ex, tokenizer, hp.max_seq_length, settings.doc_stride,
                                        settings.max_query_length, is_training=False)

    def evaluate_v1(model):
        out = predict(model, dev)
        preds, _ = postprocess_squad(dev_ex, metas, out["start_logits"], out["end_logits"], settings.n_best_size,
                                     settings.max_answer_length)
        m = score_v1(dev_articles, preds)
        metrics = {"exact_match": m["exact_match"], "f1": m["f1"], "total": m["total"],
                   "score": 0.5 * (m["exact_match"] + m["f1"]), "selection_metric": "f1", "selection_score": m["f1"]}
        return metrics, {"predictions": preds}

    def evaluate_v2(model):
        out = predict(model, dev)
        m, final, null_odds = evaluate_squad_v2(dev_articles, dev_ex, metas, out, settings.n_best_size,
                                                settings.max_answer_length)
        metrics = dict(m)
        metrics.update({"exact_match": m["exact"], "score": 0.5 * (m["exact"] + m["f1"]), "selection_metric": "f1",
                        "selection_score": m["f1"]})
        return metrics, {"predictions": final, "null_odds": null_odds}

    if v2:
        def make_head(enc, s):
            return SquadV2Model(enc, hp.classifier_dropout, s, START_N_TOP, END_N_TOP)
        loss_fn, evaluate = squad_v2_loss, evaluate_v2
    else:
        def make_head(enc, s):
            return SpanModel(enc, s)
        loss_fn, evaluate = span_loss, evaluate_v1
    export = bool(getattr(settings, "export_serving_model", True))

    def after_run(model, res):
        if export:
            res["weights"] = model.get_weights()  # the selected weights, exported if this run is the median

    run_results, chosen = fine_tune_seeds(albert_dir, hp, train, make_head, loss_fn, evaluate, seed=seed,
                                          num_seeds=settings.seeds, selection=settings.checkpoint_selection,
                                          eval_every=settings.eval_every, init=init, after_run=after_run,
                                          task=name if cmrc else "SQuAD" + settings.squad_version,
                                          precision=settings.mixed_precision)
    res = run_results[chosen]
    pred_path = os.path.join(output_dir, "predictions", f"{'cmrc2018' if cmrc else 'squad'}_predictions.json")
    write_squad_predictions(res["payload"]["predictions"], pred_path)
    entry = dict(res["metrics"])
    entry.update(run_summary(run_results, chosen, lambda m: m))
    entry.update({"num_train": len(train_ex), "num_train_features": int(train["input_ids"].shape[0]),
                  "num_dev": len(dev_ex), "num_dev_features": int(dev["input_ids"].shape[0]),
                  "skipped_questions": len(skipped), "predictions": os.path.relpath(pred_path, output_dir)})
    if v2:
        odds_path = os.path.join(output_dir, "predictions", "squad_null_odds.json")
        write_null_odds(res["payload"]["null_odds"], odds_path)
        entry["na_prob"] = os.path.relpath(odds_path, output_dir)
    if settings.max_eval_examples:
        subset = os.path.join(output_dir, "predictions", "squad_dev_subset.json")
        with open(subset, "w", encoding="utf-8") as f:
            json.dump({"version": settings.squad_version, "data": dev_articles}, f, ensure_ascii=False)
        entry["dev_subset"] = os.path.relpath(subset, output_dir)
    if export:
        from components.evaluation.task_serving import export_answer  # lazy: tensorflow_text (the export only)

        encoder = build_encoder(albert_dir, hp.albert_dropout, hp.max_seq_length, restore=False)
        entry.update(export_answer(name, hp, settings, encoder, make_head, tokenizer, res, dev_ex, dev, output_dir))
    for r in run_results:
        r.pop("weights", None)
    return {"tasks": {name: entry}, "runs": {name: runs_record(run_results)},
            "hparams": {name: dataclasses.asdict(hp)}, "skipped": {}, "timings": {name: round(time.time() - t0, 3)}}
