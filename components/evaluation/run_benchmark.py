"""Run one benchmark family (GLUE / SQuAD / RACE) end to end: every task, seed and arm, into ``metrics.json``.

``run_benchmark(benchmark, albert_dir, data_dir, cfg, output_dir)`` is the core of the three evaluator
components. It restores the encoder exported by :func:`trainer.export.export`
(``<albert_dir>/albert_config.json``, ``<albert_dir>/encoder/ckpt``, the vocabulary: ``spm.model`` or a WordPiece
``vocab.txt`` with the ``tokenizer.json`` that says how text becomes pieces, as ``convert tf1-to-albert`` writes
for an official Chinese model), runs one driver and writes ``<output_dir>/metrics.json`` plus official-format
prediction files. One concept per module:

* :mod:`.heads` – the task heads (``SquadV2Model`` is the official SQuAD 2.0 model) and their losses;
* :mod:`.finetune` – the fine-tuning loop (AdamW, official semantics) and the seed protocol;
* :mod:`.run_glue`, :mod:`.run_squad`, :mod:`.run_race` – one driver per benchmark;
* :mod:`.serving` – the GLUE raw-text serving export and TFMA (a failed export fails the run).

Configuration: the benchmark node's own :class:`config.BenchmarkConfig` (``hparams``, ``seeds``, ``seed``,
``checkpoint_selection``, ``eval_every``, ``max_eval_examples``, ``glue_tasks``, ``squad_*``, ``doc_stride``,
...; see ``BenchmarkConfig.node_settings``). ``do_lower_case`` is read from the pretrained model's
``export_info.json`` (recorded from the examples artifact), never from a copy of the vocab settings.

Arms: the pretrained encoder, plus each of ``baselines`` (``random_init``: the same architecture from random
initialisation, same hparams, seeds and protocol). ``tasks``/``runs`` are the pretrained arm's; a baseline's are
under ``baselines[<name>]`` (its prediction files under ``baselines/<name>/``), the per-task comparison under
``gain_over_baseline[<name>]`` and each arm's step-0 proof of its starting weights under ``init_check``
(:mod:`.init_check`; a run whose encoder is not what its arm says fails with ``EncoderInitError``).

Protocol (recorded in the result): ``seeds`` runs with seeds ``seed + i``; the reported run is the median one
by the task's official selection metric; ``checkpoint_selection="best"`` with ``eval_every > 0`` keeps the best
weights on dev by that metric (the official scripts' practice), ``"last"`` (or ``eval_every=0``) evaluates once
at the end; ``max_eval_examples`` keeps the first N dev examples (0 = all). All metric values are percentages.
"""
from __future__ import annotations

import copy
import dataclasses
import json
import os
import posixpath
import shutil
import tempfile
import time
from typing import Any, Dict


import tensorflow as tf

from components.evaluation.finetune import OPTIMIZER_RECORD
from components.evaluation.heads import load_encoder_config
from components.evaluation.init_check import summarize_checks
from components.evaluation.metrics import SELECTION_METRICS, compare_arms
from components.evaluation.glue.run_glue import run_glue
from components.evaluation.race.run_race import run_race
from components.evaluation.squad.run_squad import END_N_TOP, START_N_TOP, run_squad
from components.file_io import copy_tree, is_uri, json_safe
from components.text.tokenizers import load_tokenizer
from components.vocab.vocab_lib import vocab_folder_spec
from config.errors import InputError
from trainer.files import ENCODER_CKPT, EXPORT_INFO_FILE, METRICS_FILE, SPM_FILE
from trainer.vocabulary import vocabulary_file

__all__ = ["run_benchmark", "BENCHMARKS"]

BENCHMARKS = ("glue", "squad", "race")
DRIVERS = {"glue": run_glue, "squad": run_squad, "race": run_race}


def benchmark_settings(cfg):
    """The benchmark section with its seed resolved; a whole pipeline config (scripts, tests) is narrowed."""
    if hasattr(cfg, "benchmarks"):
        settings = copy.copy(cfg.benchmarks)
        settings.seed = cfg.seed if settings.seed is None else settings.seed
        return settings
    if cfg.seed is None:
        raise ValueError("benchmark settings need a resolved seed")
    return cfg


def model_do_lower_case(albert_dir: str) -> bool:
    """Whether the pretrained model's text was lower-cased (recorded at export from the examples artifact)."""
    path = posixpath.join(albert_dir, EXPORT_INFO_FILE)
    if not tf.io.gfile.exists(path):
        return True  # ALBERT's default; exports from before the fact was recorded
    with tf.io.gfile.GFile(path) as f:
        return bool(json.load(f).get("do_lower_case", True))


def run_benchmark(benchmark: str, albert_dir: str, data_dir: str, cfg, output_dir: str) -> Dict[str, Any]:
    """Fine-tune + evaluate one benchmark ("glue" | "squad" | "race"); writes and returns metrics.json.

    ``cfg``: the node's :class:`config.BenchmarkConfig` with ``seed`` resolved (a whole pipeline config, as
    scripts and tests pass, is narrowed to its ``benchmarks`` section). ``data_dir``: GLUE root holding
    ``<TASK>/`` folders, the folder holding the SQuAD files, or the RACE root holding
    ``train/`` and ``dev/``. Result: ``{"benchmark", "tasks": {name: metrics}, "skipped",
    "protocol", "runs", "seconds"}``; all metric values are percentages.

    Remote URIs (``gs://...``) work for all three paths: the data is copied to a local temporary folder (the
    readers use ``open()``; the vocabulary is read as bytes), outputs are written locally and uploaded at the end.
    """
    cfg = benchmark_settings(cfg)
    if not any(is_uri(p) for p in (albert_dir, data_dir, output_dir)):
        return _run_benchmark_local(benchmark, albert_dir, data_dir, cfg, output_dir)
    scratch = tempfile.mkdtemp(prefix="albert_bench_")
    try:
        local_data = data_dir
        if is_uri(data_dir):
            local_data = os.path.join(scratch, "data")
            copy_tree(data_dir, local_data)
        local_out = os.path.join(scratch, "out") if is_uri(output_dir) else output_dir
        result = _run_benchmark_local(benchmark, albert_dir, local_data, cfg, local_out)
        if is_uri(output_dir):
            copy_tree(local_out, output_dir)
        return result
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def load_model_tokenizer(albert_dir: str, vocab_size: int):
    """(tokenizer, vocabulary path, spec) of a model folder: its ``spm.model`` or ``vocab.txt`` read as its
    ``tokenizer.json`` says (without one: English's SentencePiece, lower-casing as ``export_info.json`` records).
    A vocabulary whose size is not the encoder's ``vocab_size`` is an InputError naming the file."""
    path = vocabulary_file(albert_dir)
    spec = vocab_folder_spec(albert_dir, do_lower_case=model_do_lower_case(albert_dir))
    with tf.io.gfile.GFile(path, "rb") as f:
        tokenizer = load_tokenizer(f.read(), spec, path=path)
    if tokenizer.vocab_size != vocab_size:
        raise InputError(f"{path} has {tokenizer.vocab_size} pieces but the model's vocab_size is {vocab_size}")
    return tokenizer, path, spec


def _run_benchmark_local(benchmark: str, albert_dir: str, data_dir: str, cfg, output_dir: str) -> Dict[str, Any]:
    benchmark = benchmark.lower()
    if benchmark not in BENCHMARKS:
        raise ValueError(f"unknown benchmark {benchmark!r}; expected one of {BENCHMARKS}")
    settings, seed = cfg, cfg.seed
    if settings.checkpoint_selection not in ("best", "last"):
        raise ValueError(f"checkpoint_selection must be 'best' or 'last', got {settings.checkpoint_selection!r}")
    os.makedirs(output_dir, exist_ok=True)
    started = time.time()
    albert_config = load_encoder_config(albert_dir)
    tokenizer, vocab_path, tokenizer_spec = load_model_tokenizer(albert_dir, albert_config.vocab_size)

    done = DRIVERS[benchmark](data_dir, albert_dir, tokenizer, settings, seed, output_dir)
    baselines: Dict[str, Any] = {}
    for name in getattr(settings, "baselines", None) or []:
        t0 = time.time()
        sub = os.path.join("baselines", name)
        # Same hparams, seeds and protocol; no serving export / TFMA / test predictions (artifacts of the real model).
        arm_settings = copy.copy(settings)
        arm_settings.export_serving_model, arm_settings.tfma, arm_settings.predict_test = False, False, False
        arm = DRIVERS[benchmark](data_dir, albert_dir, tokenizer, arm_settings, seed, os.path.join(output_dir, sub),
                                 init=name)
        baselines[name] = {"tasks": _prefix_paths(arm["tasks"], sub), "runs": arm["runs"], "skipped": arm["skipped"],
                           "init_check": summarize_checks(_checks(arm["runs"])),
                           "seconds": {"total": round(time.time() - t0, 3), **arm["timings"]}}
    protocol = _protocol(settings, seed, done["hparams"])
    selection = done.get("selection_metrics", {})  # tasks beyond the built-in table (a spec's first metric)
    pretrained = {"albert_dir": albert_dir, "encoder_checkpoint": os.path.join(albert_dir, ENCODER_CKPT),
                  "albert_config": albert_config.to_dict()}
    if posixpath.basename(vocab_path) == SPM_FILE and not tokenizer_spec.needs_file:
        pretrained["spm_model"] = vocab_path  # English's SentencePiece: recorded as it always was
    else:
        pretrained.update({"vocabulary": vocab_path, "tokenizer": dataclasses.asdict(tokenizer_spec)})
    protocol.update({
        "selection_metrics": {name: selection.get(name) or SELECTION_METRICS[name] for name in done["hparams"]},
        "pretrained": pretrained,
        "data_dir": data_dir,
    })
    if benchmark == "squad":
        protocol["squad"] = {"version": settings.squad_version, "train_file": settings.squad_train_file,
                             "dev_file": settings.squad_dev_file, "doc_stride": settings.doc_stride,
                             "max_query_length": settings.max_query_length,
                             "max_answer_length": settings.max_answer_length, "n_best_size": settings.n_best_size}
        if getattr(settings, "squad_metric", "official") != "official":
            protocol["squad"]["metric"] = settings.squad_metric  # CMRC2018's character-level EM / F1
        if str(settings.squad_version) == "2.0":
            protocol["squad"].update({"start_n_top": START_N_TOP, "end_n_top": END_N_TOP, "na_prob_thresh": 1.0,
                                      "null_threshold": "best-F1 threshold tuned on dev (official evaluate_v2)"})
    if benchmark == "race" and getattr(settings, "race_format", "race") != "race":
        protocol["race_format"] = settings.race_format  # CLUE's C3 through the RACE node
    protocol["arms"] = ["pretrained"] + list(baselines)
    result = {"benchmark": benchmark, "tasks": done["tasks"], "skipped": done["skipped"], "protocol": protocol,
              "runs": done["runs"], "init_check": summarize_checks(_checks(done["runs"])),
              "seconds": {"total": round(time.time() - started, 3), **done["timings"]}}
    if baselines:
        result["baselines"] = baselines
        result["gain_over_baseline"] = {name: compare_arms(done["tasks"], arm["tasks"])
                                        for name, arm in baselines.items()}
    result = json_safe(result)
    with open(os.path.join(output_dir, METRICS_FILE), "w", encoding="utf-8") as f:
        json.dump(result, f, indent=2, sort_keys=True, allow_nan=False)
    return result


def _checks(runs: Dict[str, Any]):
    return [r["init_check"] for task_runs in runs.values() for r in task_runs if r.get("init_check")]


_PATH_KEYS = ("predictions", "test_predictions", "na_prob", "dev_subset", "serving_model")


def _prefix_paths(tasks: Dict[str, Any], sub: str) -> Dict[str, Any]:
    """A baseline's relative file paths made relative to the benchmark's output folder."""
    return {t: {k: (os.path.join(sub, v) if k in _PATH_KEYS and isinstance(v, str) else v) for k, v in m.items()}
            for t, m in tasks.items()}


def _protocol(settings, seed: int, hparams: Dict[str, Any]) -> Dict[str, Any]:
    periodic = settings.checkpoint_selection == "best" and settings.eval_every > 0
    return {
        "seeds": [seed + i for i in range(settings.seeds)],
        "aggregation": "median run by the official selection metric" if settings.seeds > 1 else "single run",
        "checkpoint_selection": settings.checkpoint_selection,
        "checkpoint_selection_effective": "best on dev by the official selection metric" if periodic else "last",
        "eval_every": settings.eval_every,
        "max_eval_examples": settings.max_eval_examples,
        "dev_subset": "first N examples" if settings.max_eval_examples else "all",
        "hparams": hparams,
        "optimizer": dict(OPTIMIZER_RECORD),
        "metric_scale": "percent",
    }
