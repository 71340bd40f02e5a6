"""GLUE driver: fine-tune one classifier per task, score dev, write GLUE-format predictions.

Any classification task runs here: GLUE's, CLUE's built-in ones (:mod:`.clue`) and the specs of
``benchmarks.tasks`` (:mod:`.task_spec`), each from ``data_dir/<TASK>/``; a spec task's headline ``score`` is the
mean of its metrics and its selection metric the first of them (:class:`components.evaluation.glue.task_spec.ClassificationSpec`).
A cross-lingual spec (``languages``) is fine-tuned once, in its training language, and scored on each language's dev
set: ``<NAME>-<code>`` per language (with ``cross_lingual``: the task, the language, the training language) and
``<NAME>`` their mean (with ``languages``); checkpoints and the median run are chosen on the training language's.

Per task: the Table 14 row ``settings.hparams[<task>]``; headline ``score`` as
:func:`components.evaluation.metrics.glue_metrics` (CoLA MCC, MRPC/QQP mean of F1 and accuracy, STS-B mean of
Pearson/Spearman, others accuracy; MNLI: matched, reported as ``MNLI-m`` and ``MNLI-mm``); checkpoints and the
median run are chosen by the official selection metric (``selection_metric``: accuracy for MRPC/QQP, Pearson
for STS-B, MCC for CoLA). Test splits present beside the data get submission files from the selected weights;
the selected run is exported as a raw-text serving model unless ``settings.export_serving_model`` is off, by one of
two routes (:func:`serving_route`): a GLUE task on ALBERT's SentencePiece featurisation through its tf.Transform graph
(:mod:`components.evaluation.glue.serving`, which TFMA then evaluates), every other task (CLUE's, a task spec, a
WordPiece or otherwise normalising vocabulary) through the common in-graph tokenizer
(:mod:`components.evaluation.task_serving`). Both write the same ``classify`` signature and ``serving_info.json``.
"""
from __future__ import annotations

import dataclasses
import json
import logging
import os
import time
from typing import Any, Dict, List, Optional

from components.evaluation.glue import glue_data as glue_lib
from components.evaluation.finetune import fine_tune_seeds, predict, run_summary, runs_record, single_class_runs
from components.evaluation.heads import FEATURE_KEYS, ClassifierModel, build_encoder, classification_loss, regression_loss
from components.evaluation.metrics import GLUE_METRICS, glue_metrics, majority_baseline, majority_share, selection_metric
from components.evaluation.glue.serving import TransformGraphs, export_glue_serving
from components.evaluation.glue.glue_tasks import Task, dev_splits as _dev_splits, read_split as _read, resolve_task
from components.evaluation.glue.task_spec_reader import ClassificationSpec, specs_from_config, task_file
from config.errors import MissingInputError
from config.schema import ConfigError

__all__ = ["run_glue", "resolve_task", "serving_route"]

log = logging.getLogger(__name__)

def _test_splits(task: Task) -> List[str]:
    if isinstance(task, glue_lib.GlueTask):
        return [s for s in task.splits if s.startswith("test")]
    return [ls for s in task.files if s.startswith("test") for ls in task.language_splits(s)]


def _all_splits(task: ClassificationSpec) -> List[str]:
    """Every split a spec's files hold (a cross-lingual task's per language)."""
    return [ls for s in task.files for ls in task.language_splits(s)]


def _result_name(task: Task, split: str, dev_splits: List[str]) -> str:
    """The name a dev split's result goes by: MNLI-m / MNLI-mm, a cross-lingual task's ``<NAME>-<language>``
    (``<NAME>`` itself is the mean over the languages), a spec's first dev split its name, others
    ``<NAME>-<split>``."""
    if isinstance(task, glue_lib.GlueTask):
        return {"dev_matched": "MNLI-m", "dev_mismatched": "MNLI-mm"}.get(split, task.name)
    if task.is_cross_lingual:
        return f"{task.name}-{task.split_language(split)}"
    return task.name if split == dev_splits[0] else f"{task.name}-{split}"


def _split_file(task: Task, split: str, data_dir: str) -> Optional[str]:
    """The file of one split, or None where there is none."""
    if isinstance(task, glue_lib.GlueTask):
        path = os.path.join(data_dir, task.name, task.splits[split].filename)
        return path if os.path.exists(path) else None
    try:
        return task_file(task, split, data_dir)
    except MissingInputError:
        return None


def serving_route(task: Task, tokenizer) -> str:
    """How the raw-text serving model of this task is built: ``transform`` (GLUE's tf.Transform graph of ALBERT's
    SentencePiece featurisation of GLUE's columns, components/evaluation/glue/transform.py; TFMA runs on it) or
    ``graph`` (the common in-graph tokenizer, components/evaluation/task_serving.py) for everything else."""
    if (isinstance(task, glue_lib.GlueTask) and getattr(tokenizer, "kind", "sentencepiece") == "sentencepiece"
            and getattr(tokenizer, "normalization", "albert") == "albert"
            and not getattr(tokenizer, "strip_accents", False)):
        return "transform"
    return "graph"


def _pct(values: Dict[str, Any], keys) -> Dict[str, Any]:
    return {k: (100.0 * float(values[k]) if values[k] is not None else None) for k in keys}


def glue_scores(task, logits, labels) -> Dict[str, Any]:
    """Percent metrics of one dev split, its headline ``score`` and its ``selection_score`` (``task``: a GLUE
    task's name, or a task object)."""
    if isinstance(task, str):
        task = glue_lib.get_task(task)
    plan = task if isinstance(task, ClassificationSpec) else task.name
    values = glue_metrics(plan, logits, labels)
    names = list(task.metrics) if isinstance(task, ClassificationSpec) else list(GLUE_METRICS[task.name]["metrics"])
    out = _pct(values, names + ["score"])
    out["selection_metric"] = selection_metric(plan)
    out["selection_score"] = out[out["selection_metric"]]
    if not task.is_regression:
        out["majority_share"] = 100.0 * majority_share(logits)  # 100: the run predicts one class
    return out


def run_glue(data_dir: str, albert_dir: str, tokenizer, settings, seed: int, output_dir: str,
             init: str = "pretrained") -> Dict[str, Any]:
    """Every task of ``settings.glue_tasks`` that has train and dev files under ``data_dir/<TASK>/`` (a GLUE task,
    a CLUE classification task or a spec of ``settings.tasks``); ``init``: the encoder's starting point
    (``pretrained`` | ``random_init``, see :func:`fine_tune_seeds`).

    Returns ``{"tasks", "runs", "hparams", "skipped", "timings"}`` for :func:`.run_benchmark.run_benchmark`, and
    ``selection_metrics`` for the tasks that are not GLUE's.
    """
    out: Dict[str, Any] = {"tasks": {}, "runs": {}, "hparams": {}, "skipped": {}, "timings": {}}
    graphs = TransformGraphs()  # this run's Transform graphs: built once per key, reused by later tasks
    specs = specs_from_config(getattr(settings, "tasks", None) or {})
    tasks = [resolve_task(name, specs) for name in settings.glue_tasks]
    for task in tasks:  # a task beyond GLUE is read whole before anything is fine-tuned: a bad row fails fast
        if isinstance(task, glue_lib.GlueTask):
            continue
        if "train" not in task.files or not _dev_splits(task):
            raise ConfigError(f"config {task.setting('files')} names no train and dev split "
                              f"(it has {', '.join(task.files)}): a task is fine-tuned on train and scored on dev")
        for split in _all_splits(task):
            if _split_file(task, split, data_dir):
                _read(task, split, data_dir)
    for task in tasks:
        if not isinstance(task, glue_lib.GlueTask):
            out.setdefault("selection_metrics", {})[task.name] = task.selection_metric
        if not all(_split_file(task, s, data_dir) for s in ["train"] + _dev_splits(task)):
            out["skipped"][task.name] = f"no train/dev data under {os.path.join(data_dir, task.name)}"
            continue
        t0 = time.time()
        out["hparams"][task.name] = dataclasses.asdict(settings.hparams[task.name])
        out["tasks"].update(_run_task(task, data_dir, albert_dir, tokenizer, settings, seed, output_dir, out["runs"],
                                      init, graphs))
        out["timings"][task.name] = round(time.time() - t0, 3)
    return out


def _guid_id(guid: str):
    """The id part of a guid (``test-17`` → 17, ``test-x-1`` → "x-1"), an int where it is one."""
    value = str(guid).split("-", 1)[1] if "-" in str(guid) else str(guid)
    return int(value) if value.isdigit() else value


def write_spec_predictions(task: ClassificationSpec, examples, predictions, path: str) -> None:
    """A spec task's test predictions in CLUE's submission format: JSON lines ``{"id": …, "label": "…"}``."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        for example, prediction in zip(examples, predictions):
            label = glue_lib.format_prediction(task, prediction)
            f.write(json.dumps({"id": _guid_id(example.guid), "label": label}, ensure_ascii=False) + "\n")


MEAN = "mean"  # a cross-lingual task's metrics averaged over its languages, beside each language's


def _language_mean(task: ClassificationSpec, per_language: List[Dict[str, Any]]) -> Dict[str, Any]:
    """Each metric (and ``score``) of a cross-lingual task averaged over its languages (None if any is None)."""
    out: Dict[str, Any] = {}
    for key in list(task.metrics) + ["score"]:
        values = [m.get(key) for m in per_language]
        out[key] = None if any(v is None for v in values) else sum(values) / len(values)
    return out


def _mean_entry(task: ClassificationSpec, rows: Dict[str, Dict[str, Any]], names: List[str], run_results,
                chosen: int, num_train: int) -> Dict[str, Any]:
    """The result of a cross-lingual task itself: its metrics averaged over the languages (each run's too, so the
    seed spread and the gain over a baseline arm are of the mean), the languages and the training language."""
    entry = dict(run_results[chosen]["metrics"]["splits"][MEAN])
    entry.update(run_summary(run_results, chosen, lambda m: m["splits"][MEAN]))
    floors = [rows[n].get("majority_baseline") for n in names]
    entry.update({"num_train": num_train, "num_dev": sum(rows[n]["num_dev"] for n in names),
                  "languages": list(task.languages), "train_language": task.train_language,
                  "language_results": names, "selection_metric": rows[names[0]]["selection_metric"]})
    if floors and all(f is not None for f in floors):
        entry["majority_baseline"] = sum(floors) / len(floors)
    return entry


def _run_task(task: Task, data_dir: str, albert_dir: str, tokenizer, settings, seed: int,
              output_dir: str, runs_out: Dict[str, Any], init: str = "pretrained",
              graphs: Optional[TransformGraphs] = None) -> Dict[str, Dict[str, Any]]:
    hp = settings.hparams[task.name]
    glue_task = isinstance(task, glue_lib.GlueTask)
    plan = task.name if glue_task else task  # what the metrics take: a GLUE task's name, or the spec
    dev_splits = _dev_splits(task)
    names = {split: _result_name(task, split, dev_splits) for split in dev_splits}
    cross_lingual = not glue_task and task.is_cross_lingual
    # Test predictions are the submission files of the real model: the selected run only, not baseline arms.
    test_splits = [s for s in _test_splits(task) if getattr(settings, "predict_test", True)
                   and _split_file(task, s, data_dir)]

    train_ex = _read(task, "train", data_dir)
    train = glue_lib.convert_glue_examples(train_ex, tokenizer, hp.max_seq_length, task)
    devs = {}
    for split in dev_splits:
        ex = _read(task, split, data_dir)
        if settings.max_eval_examples:
            ex = ex[: settings.max_eval_examples]
        devs[split] = (ex, glue_lib.convert_glue_examples(ex, tokenizer, hp.max_seq_length, task))

    def evaluate(model):
        metrics, payload = {}, {}
        for split, (_, arrays) in devs.items():
            logits = predict(model, arrays)["logits"]
            metrics[split] = glue_scores(task, logits, arrays["label_ids"])
            payload[split] = glue_lib.predictions_from_logits(task, logits)
        first = metrics[dev_splits[0]]  # selection and headline: the first dev split (MNLI: matched)
        if cross_lingual:  # selection: the training language's dev set; headline: the mean over the languages
            metrics[MEAN] = _language_mean(task, [metrics[s] for s in dev_splits])
            return {"score": metrics[MEAN]["score"], "selection_score": first["selection_score"],
                    "selection_metric": first["selection_metric"], "splits": metrics}, payload
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
            ex = _read(task, split, data_dir)
            arrays = glue_lib.convert_glue_examples(ex, tokenizer, hp.max_seq_length, task)
            tests[split] = (ex, glue_lib.predictions_from_logits(task, predict(model, arrays)["logits"]))
        del model
    pred_dir = os.path.join(output_dir, "predictions", task.name)
    result: Dict[str, Dict[str, Any]] = {}
    for split in dev_splits:
        ex, _ = devs[split]
        path = os.path.join(pred_dir, f"{split}.tsv")
        glue_lib.write_glue_predictions(task, [e.guid for e in ex], list(res["payload"][split]), path)
        entry = dict(res["metrics"]["splits"][split])
        entry.update(run_summary(run_results, chosen, lambda m, s=split: m["splits"][s]))
        entry.update({"num_train": len(train_ex), "num_dev": len(ex), "predictions": os.path.relpath(path, output_dir)})
        floor = majority_baseline(plan, train["label_ids"], devs[split][1]["label_ids"])
        if floor is not None:
            entry["majority_baseline"] = 100.0 * floor
            entry["single_class_runs"] = single_class_runs(run_results, lambda m, s=split: m["splits"][s])
        if cross_lingual:
            entry["cross_lingual"] = {"task": task.name, "language": task.split_language(split),
                                      "train_language": task.train_language}
        result[names[split]] = entry
    if cross_lingual:
        result[task.name] = _mean_entry(task, result, [names[s] for s in dev_splits], run_results, chosen,
                                        len(train_ex))
    for split, (ex, preds) in tests.items():
        dev_split = split.replace("test", "dev")
        name = names.get(dev_split, task.name)
        if glue_task:
            path = os.path.join(output_dir, "predictions", "glue_test", glue_lib.submission_filename(task.name, split))
            glue_lib.write_glue_predictions(task.name, [e.guid for e in ex], list(preds), path)
        else:
            suffix = "" if split == "test" else f"_{split}"
            path = os.path.join(output_dir, "predictions", "test", f"{task.name.lower()}{suffix}_predict.json")
            write_spec_predictions(task, ex, list(preds), path)
        result[name]["test_predictions"] = os.path.relpath(path, output_dir)
    if export and serving_route(task, tokenizer) == "transform":
        serving = export_glue_serving(task, hp, albert_dir, tokenizer, res, devs, dev_splits, output_dir,
                                      run_tfma=bool(getattr(settings, "tfma", True)), graphs=graphs)
        for split in dev_splits:
            result[names[split]].update(serving.get(split, {}))
    elif export:
        from components.evaluation.task_serving import export_classify  # lazy: tensorflow_text (the export only)

        ex, arrays = devs[dev_splits[0]]
        encoder = build_encoder(albert_dir, hp.albert_dropout, hp.max_seq_length, restore=False)
        served = export_classify(task, hp, encoder, make_head, tokenizer, res, ex, arrays, output_dir,
                                 split=dev_splits[0])
        for split in dev_splits:
            result[names[split]].update(served)
    for r in run_results:
        r.pop("weights", None)
    runs_out[task.name] = runs_record(run_results)
    return result
