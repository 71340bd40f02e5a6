"""The InitFrom task of a compiled spec: ``train.init_from=latest_blessed`` resolved when each run starts, on Vertex
AI and KFP, by the rule a local run resolves it with (:func:`pipeline.settings.continuation.pick_base`).

Vertex AI and KFP compile TFX's ``LatestBlessedModel`` resolver, but feeding its model to the Trainer would rerun the
Trainer on a tick with no new data: the backends key a task's cache on its input artifacts, and after tick 1 the
resolver returns tick 1's model where tick 1 had none. So the resolver's model goes to this small task instead, and
the Trainer gets a parameter:

* ``InitFrom`` takes the resolver's model (the Blesser's ``baseline_model``; none before the first blessing), the
  corpus the run reads (the DataSnapshot task's ``CorpusGen_data``) and, as compiled, the Trainer's
  ``custom_config`` and VocabGen's ``config``. It decides the base by :func:`pipeline.settings.continuation.pick_base` on the
  facts the model's own files hold: what it was trained on (the ``data_read`` of its pushed version's card) and the
  base its Trainer took (its ``export_info.json``). It outputs ``trainer_config`` (``custom_config`` with
  ``train.init_from`` the base: ``scratch`` or a model folder), ``vocab_config`` (VocabGen's settings, importing the
  base's vocabulary when there is a base: :func:`pipeline.settings.continuation.base_vocab`, which checks the base against the
  run's encoder and vocabulary as a local run does before any node runs) and ``base``.
* The Trainer's ``custom_config`` and VocabGen's ``config`` are its outputs (:func:`wire`). A tick with no new data
  gives them the values of the tick that trained the latest blessed model: every task is a cache hit. A new span
  gives the Trainer the latest blessed model's pushed version, which it continues (its card: "continued from
  version N").
* Its caching is off (``cachingOptions.enableCache`` false), as the DataSnapshot task's: it reads the push
  destination, which is no input of the cache key, and costs a second.

A plain container (``python -m pipeline.tasks.init_from_task --executor_input {{$}}``) that writes its output parameters to
the ``ExecutorOutput`` file, as :mod:`pipeline.tasks.snapshot_task` does; it imports no TFX. A base that is not this run's
model (another encoder configuration, another vocabulary) fails it with one line naming each difference.
"""
from __future__ import annotations

import json
import posixpath
import sys
from typing import Any, Dict, List, Optional

from pipeline.tasks import snapshot_task
from pipeline.tasks.snapshot_task import run_task

TASK = "InitFrom"
MODULE = "pipeline.tasks.init_from_task"
MODEL_INPUT = "model"  # the latest blessed model (the LatestBlessedModel resolver's), absent before the first
CORPUS_PARAMETER = "corpus"  # the DataSnapshot task's CorpusGen_data: {data key: summary} of the corpus read
SETTINGS_PARAMETER = "settings"
TRAINER_CONFIG = "trainer_config"  # in: the Trainer's custom_config as compiled; out: with train.init_from resolved
VOCAB_CONFIG = "vocab_config"  # in: VocabGen's config as compiled; out: importing the base's vocabulary, if any
BASE_OUTPUT = "base"
# Where the task's outputs go: node → its parameter.
TARGETS = {"Trainer": ("custom_config", TRAINER_CONFIG), "VocabGen": ("config", VOCAB_CONFIG)}


# ------------------------------------------------------------------------------------------------- at compile time
def wire(pipeline_spec: Dict[str, Any], *, push_destination: str) -> None:
    """Add the task to a compiled spec's ``PipelineSpec`` (after :func:`pipeline.tasks.snapshot_task.wire`) and take the
    Trainer's ``custom_config`` and VocabGen's ``config`` from it."""
    from pipeline.cloud import spec  # lazy: dataclasses, pipeline.cloud.spec (0.01 s)

    tasks = pipeline_spec["root"]["dag"]["tasks"]
    components = pipeline_spec["components"]
    executors = pipeline_spec["deploymentSpec"]["executors"]
    image = next(e["container"]["image"] for e in executors.values() if "container" in e)
    baseline = tasks["Blesser"]["inputs"]["artifacts"]["baseline_model"]["taskOutputArtifact"]
    resolver = baseline["producerTask"]
    model_type = components[tasks[resolver]["componentRef"]["name"]]["outputDefinitions"]["artifacts"][
        baseline["outputArtifactKey"]]["artifactType"]
    compiled = {}
    for node, (param, name) in TARGETS.items():
        source = tasks[node]["inputs"]["parameters"][param]
        if "runtimeValue" not in source:
            raise ValueError(f"{node}: its {param} is not a constant of the spec ({sorted(source)})")
        compiled[name] = spec.constant(source)

    string = {"parameterType": "STRING"}
    components[TASK] = {
        "executorLabel": f"{TASK}_executor",
        "inputDefinitions": {"artifacts": {MODEL_INPUT: {"artifactType": model_type, "isOptional": True}},
                             "parameters": {name: dict(string) for name in (CORPUS_PARAMETER, SETTINGS_PARAMETER,
                                                                            TRAINER_CONFIG, VOCAB_CONFIG)}},
        "outputDefinitions": {"parameters": {name: dict(string) for name in (TRAINER_CONFIG, VOCAB_CONFIG,
                                                                             BASE_OUTPUT)}}}
    executors[f"{TASK}_executor"] = {"container": {
        "image": image, "command": ["python", "-m", MODULE], "args": ["--executor_input", "{{$}}"]}}
    settings = {"push_destination": push_destination}
    tasks[TASK] = {
        "taskInfo": {"name": TASK}, "componentRef": {"name": TASK},
        "cachingOptions": {"enableCache": False},  # it reads the push destination: it runs on every tick
        "dependentTasks": sorted({resolver, snapshot_task.TASK}),
        "inputs": {
            "artifacts": {MODEL_INPUT: {"taskOutputArtifact": dict(baseline)}},
            "parameters": {
                CORPUS_PARAMETER: {"taskOutputParameter": {"producerTask": snapshot_task.TASK,
                                                           "outputParameterKey": snapshot_task.data_output(
                                                               "CorpusGen")}},
                SETTINGS_PARAMETER: {"runtimeValue": {"constant": json.dumps(settings, sort_keys=True)}},
                **{name: {"runtimeValue": {"constant": value}} for name, value in compiled.items()}}}}
    for node, (param, name) in TARGETS.items():
        task = tasks[node]
        task["inputs"]["parameters"][param] = {"taskOutputParameter": {"producerTask": TASK,
                                                                       "outputParameterKey": name}}
        task["dependentTasks"] = sorted(set(task.get("dependentTasks", [])) | {TASK})


def compiled_source(tasks: Dict[str, Any], node: str, param: str) -> Dict[str, Any]:
    """The compiled source of a task's parameter: for a parameter this task hands on, its own input (the value as
    compiled, ``latest_blessed`` unresolved), else the task's."""
    source = tasks[node]["inputs"]["parameters"].get(param, {})
    produced = source.get("taskOutputParameter", {})
    if produced.get("producerTask") == TASK and TASK in tasks:
        return tasks[TASK]["inputs"]["parameters"][produced["outputParameterKey"]]
    return source


# ------------------------------------------------------------------------------------------------------ at run time
def blessed_facts(model_uri: str, push_destination: str):
    """:class:`pipeline.settings.continuation.Blessed` of the model at ``model_uri`` from its own files: its pushed version
    (the folder a run continues, and its card's ``data_read``: the corpus it was trained on) and its
    ``export_info.json`` (the base its Trainer took). Not pushed: its albert folder, and its corpus unknown."""
    import tensorflow as tf  # lazy: tensorflow (2.8 s)

    from components.release.model_card import FACTS_FILE  # lazy: numpy, components.release.model_card (0.1 s)
    from components.release.versions import find_version  # lazy: tensorflow (2.9 s)
    from trainer.trainer_config import INIT_FROM_SCRATCH  # lazy: dataclasses, trainer.trainer_config (0.01 s)
    from pipeline.settings.continuation import Blessed, corpus_from_summaries  # lazy: pipeline.settings.continuation, dataclasses, logging (0.04 s)
    from trainer.files import ALBERT_DIR, EXPORT_INFO_FILE  # lazy: trainer.files (0.002 s)

    def read(path: str) -> Optional[Dict[str, Any]]:
        if not tf.io.gfile.exists(path):
            return None
        with tf.io.gfile.GFile(path) as f:
            return json.loads(f.read())

    pushed = find_version(push_destination, model_uri)
    card = read(posixpath.join(pushed["path"], FACTS_FILE)) if pushed else None
    info = read(posixpath.join(model_uri, ALBERT_DIR, EXPORT_INFO_FILE)) or {}
    return Blessed(uri=model_uri,
                   corpus=corpus_from_summaries(card["data_read"]) if card and "data_read" in card else None,
                   started_from=(info.get("init_from") or {}).get("location") or INIT_FROM_SCRATCH,
                   folder=pushed["path"] if pushed else posixpath.join(model_uri, ALBERT_DIR))


def with_base(base: str, trainer_config: str, vocab_config: str) -> Dict[str, str]:
    """The Trainer's ``custom_config`` and VocabGen's ``config`` of a run whose ``train.init_from`` is ``base``, from
    the compiled ones (``latest_blessed``): what ``PipelineConfig.node_parameters`` gives a local run of that base."""
    import dataclasses  # lazy: dataclasses (0.009 s)

    from config import canonical_json  # lazy: dataclasses, config, copy (0.01 s)
    from config.schema import plain_data  # lazy: dataclasses, config.schema, copy (0.01 s)
    from components.vocab.vocab_config import VocabConfig  # lazy: dataclasses, components.vocab.vocab_config (0.01 s)
    from trainer.trainer_config import INIT_FROM_SCRATCH  # lazy: dataclasses, trainer.trainer_config (0.01 s)
    from trainer.trainer_settings import parse_settings, trainer_settings  # lazy: dataclasses, trainer.trainer_settings (0.01 s)
    from pipeline.settings.continuation import base_vocab  # lazy: pipeline.settings.continuation, dataclasses, logging (0.04 s)

    custom = json.loads(trainer_config)
    model, train, seed = parse_settings(custom["albert"], None)
    custom["albert"] = trainer_settings(model, dataclasses.replace(train, init_from=base), seed)
    vocab = VocabConfig.from_dict(json.loads(vocab_config), "vocab.")
    if base != INIT_FROM_SCRATCH:
        vocab = base_vocab(model, vocab, base)
    return {TRAINER_CONFIG: json.dumps(custom, sort_keys=True),
            VOCAB_CONFIG: canonical_json(plain_data(vocab.to_dict())), BASE_OUTPUT: base}


def resolve(parameters: Dict[str, Any], models: List[Dict[str, Any]]) -> Dict[str, str]:
    """The task's output parameters from its input parameters and its ``model`` input's artifacts (none or one)."""
    from pipeline.settings.continuation import corpus_from_summaries, pick_base  # lazy: pipeline.settings.continuation, dataclasses, logging (0.04 s)

    settings = json.loads(parameters[SETTINGS_PARAMETER])
    blessed = blessed_facts(models[0]["uri"], settings["push_destination"]) if models else None
    base, why = pick_base(blessed, corpus_from_summaries(json.loads(parameters[CORPUS_PARAMETER])))
    print(f"{TASK}: train.init_from=latest_blessed: {why}")
    return with_base(base, parameters[TRAINER_CONFIG], parameters[VOCAB_CONFIG])


def _task(inputs: Dict[str, Any]) -> Dict[str, Any]:
    models = (inputs.get("artifacts", {}).get(MODEL_INPUT) or {}).get("artifacts") or []
    values = resolve(inputs["parameterValues"], models)
    print(f"{TASK}: {BASE_OUTPUT} = {values[BASE_OUTPUT]}")
    return values


def main(argv: Optional[List[str]] = None) -> int:
    """``--executor_input JSON``: resolve, write the output parameters (:func:`pipeline.tasks.snapshot_task.run_task`)."""
    return run_task(TASK, MODULE, _task, argv)


if __name__ == "__main__":
    sys.exit(main())
