"""GLUE driver: fine-tune one classifier per task, score dev, write GLUE-format predictions.

Per task: the Table 14 row ``settings.hparams[<task>]``; headline ``score`` as
:func:`components.evaluation.metrics.glue_metrics` (CoLA MCC, MRPC/QQP mean of F1 and accuracy, STS-B mean of
Pearson/Spearman, others accuracy; MNLI: matched, reported as ``MNLI-m`` and ``MNLI-mm``); checkpoints and the
median run are chosen by the official selection metric (``selection_metric``: accuracy for MRPC/QQP, Pearson
for STS-B, MCC for CoLA). Test splits present beside the data get submission files from the selected weights;
the selected run is exported as a raw-text serving model (:mod:`components.evaluation.serving`) unless
``settings.export_serving_model`` is off.
"""
from __future__ import annotations

import dataclasses
import os
import time
from typing import Any, Dict, Optional

from components.evaluation import glue as glue_lib
from components.evaluation.finetune import fine_tune_seeds, predict, run_summary, runs_record, single_class_runs
from components.evaluation.heads import FEATURE_KEYS, ClassifierModel, build_encoder, classification_loss, regression_loss
from components.evaluation.metrics import GLUE_METRICS, glue_metrics, majority_baseline, majority_share, selection_metric
from components.evaluation.serving import TransformGraphs, export_glue_serving

__all__ = ["run_glue"]


def _pct(values: Dict[str, Any], keys) -> Dict[str, Any]:
    return {k: (100.0 * float(values[k]) if values[k] is not None else None) for k in keys}


def glue_scores(task: str, logits, labels) -> Dict[str, Any]:
    """Percent metrics of one dev split, its headline ``score`` and its ``selection_score``."""
    name = glue_lib.get_task(task).name
    values = glue_metrics(task, logits, labels)
    out = _pct(values, list(GLUE_METRICS[name]["metrics"]) + ["score"])
    out["selection_metric"] = selection_metric(name)
    out["selection_score"] = out[out["selection_metric"]]
    if not glue_lib.get_task(task).is_regression:
        out["majority_share"] = 100.0 * majority_share(logits)  # 100: the run predicts one class
    return out


def run_glue(data_dir: str, albert_dir: str, tokenizer, settings, seed: int, output_dir: str,
             init: str = "pretrained") -> Dict[str, Any]:
    """Every task of ``settings.glue_tasks`` that has train and dev files under ``data_dir/<TASK>/``;
    ``init``: the encoder's starting point (``pretrained`` | ``random_init``, see :func:`fine_tune_seeds`).

    Returns ``{"tasks", "runs", "hparams", "skipped", "timings"}`` for :func:`.run_benchmark.run_benchmark`.
    """
    out: Dict[str, Any] = {"tasks": {}, "runs": {}, "hparams": {}, "skipped": {}, "timings": {}}
    graphs = TransformGraphs()  # this run's Transform graphs: built once per key, reused by later tasks
    for name in settings.glue_tasks:
        task = glue_lib.get_task(name)
        folder = os.path.join(data_dir, task.name)
        train_file = os.path.join(folder, task.splits["train"].filename)
        dev_files = [os.path.join(folder, task.splits[s].filename) for s in task.splits if s.startswith("dev")]
        if not (os.path.exists(train_file) and all(os.path.exists(p) for p in dev_files)):
            out["skipped"][task.name] = f"no train/dev data under {folder}"
            continue
        t0 = time.time()
        out["hparams"][task.name] = dataclasses.asdict(settings.hparams[task.name])
        out["tasks"].update(_run_task(task, data_dir, albert_dir, tokenizer, settings, seed, output_dir, out["runs"],
                                      init, graphs))
        out["timings"][task.name] = round(time.time() - t0, 3)
    return out


def _run_task(task: glue_lib.GlueTask, data_dir: str, albert_dir: str, tokenizer, settings, seed: int,
              output_dir: str, runs_out: Dict[str, Any], init: str = "pretrained",
              graphs: Optional[TransformGraphs] = None) -> Dict[str, Dict[str, Any]]:
    hp = settings.hparams[task.name]
    dev_splits = ["dev_matched", "dev_mismatched"] if task.name == "MNLI" else ["dev"]
    names = {"dev_matched": "MNLI-m", "dev_mismatched": "MNLI-mm", "dev": task.name}
    # Test predictions are the submission files of the real model: the selected run only, not baseline arms.
    test_splits = [s for s in task.splits if s.startswith("test") and getattr(settings, "predict_test", True)
                   and os.path.exists(os.path.join(data_dir, task.name, task.splits[s].filename))]

    train_ex = glue_lib.read_glue(task.name, "train", data_dir)
    train = glue_lib.convert_glue_examples(train_ex, tokenizer, hp.max_seq_length, task.name)
    devs = {}
    for split in dev_splits:
        ex = glue_lib.read_glue(task.name, split, data_dir)
        if settings.max_eval_examples:
            ex = ex[: settings.max_eval_examples]
        devs[split] = (ex, glue_lib.convert_glue_examples(ex, tokenizer, hp.max_seq_length, task.name))

    def evaluate(model):
        metrics, payload = {}, {}
        for split, (_, arrays) in devs.items():
            logits = predict(model, arrays)["logits"]
            metrics[split] = glue_scores(task.name, logits, arrays["label_ids"])
            payload[split] = glue_lib.predictions_from_logits(task.name, logits)
        first = metrics[dev_splits[0]]  # selection and headline: the first dev split (MNLI: matched)
        return {"score": first["score"], "selection_score": first["selection_score"],
                "selection_metric": first["selection_metric"], "splits": metrics}, payload

    loss_fn = regression_loss if task.is_regression else classification_loss
    export = bool(getattr(settings, "export_serving_model", True))

    def make_head(encoder, run_seed):
        return ClassifierModel(encoder, task.num_labels, hp.classifier_dropout, run_seed)

    def after_run(model, res):
        if export or test_splits:
            res["weights"] = model.get_weights()  # the selected weights, used if this run is the median

    run_results, chosen = fine_tune_seeds(
        albert_dir, hp, train, make_head, loss_fn, evaluate, seed=seed, num_seeds=settings.seeds,
        selection=settings.checkpoint_selection, eval_every=settings.eval_every, after_run=after_run, init=init,
        task=task.name, precision=settings.mixed_precision)
    res = run_results[chosen]
    tests = {}
    if test_splits:
        model = make_head(build_encoder(albert_dir, hp.albert_dropout, hp.max_seq_length, restore=False), res["seed"])
        model({k: v[:1] for k, v in train.items() if k in FEATURE_KEYS}, training=False)
        model.set_weights(res["weights"])
        for split in test_splits:
            ex = glue_lib.read_glue(task.name, split, data_dir)
            arrays = glue_lib.convert_glue_examples(ex, tokenizer, hp.max_seq_length, task.name)
            tests[split] = (ex, glue_lib.predictions_from_logits(task.name, predict(model, arrays)["logits"]))
        del model
    pred_dir = os.path.join(output_dir, "predictions", task.name)
    result: Dict[str, Dict[str, Any]] = {}
    for split in dev_splits:
        ex, _ = devs[split]
        path = os.path.join(pred_dir, f"{split}.tsv")
        glue_lib.write_glue_predictions(task.name, [e.guid for e in ex], list(res["payload"][split]), path)
        entry = dict(res["metrics"]["splits"][split])
        entry.update(run_summary(run_results, chosen, lambda m, s=split: m["splits"][s]))
        entry.update({"num_train": len(train_ex), "num_dev": len(ex), "predictions": os.path.relpath(path, output_dir)})
        floor = majority_baseline(task.name, train["label_ids"], devs[split][1]["label_ids"])
        if floor is not None:
            entry["majority_baseline"] = 100.0 * floor
            entry["single_class_runs"] = single_class_runs(run_results, lambda m, s=split: m["splits"][s])
        result[names[split]] = entry
    for split, (ex, preds) in tests.items():
        path = os.path.join(output_dir, "predictions", "glue_test", glue_lib.submission_filename(task.name, split))
        glue_lib.write_glue_predictions(task.name, [e.guid for e in ex], list(preds), path)
        result[names.get(split.replace("test", "dev"), task.name)]["test_predictions"] = os.path.relpath(path, output_dir)
    if export:
        serving = export_glue_serving(task, hp, albert_dir, tokenizer, res, devs, dev_splits, output_dir,
                                      run_tfma=bool(getattr(settings, "tfma", True)), graphs=graphs)
        for split in dev_splits:
            result[names[split]].update(serving.get(split, {}))
    for r in run_results:
        r.pop("weights", None)
    runs_out[task.name] = runs_record(run_results)
    return result
