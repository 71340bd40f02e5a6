"""The DataGateBaseline task of a compiled spec: the data gate's baseline and earlier acceptance chosen when each run
starts, on Vertex AI and KFP, by the rule a local run's ``DataGateBaseline`` resolver applies
(:func:`components.datagate.datagate_result.select_inputs`).

A local run's resolver reads every ``DataGateResult`` of the pipeline from MLMD. Vertex AI and KFP compile TFX's
``LatestArtifact`` resolver alone among those that could find them, and feeding its artifact to DataGate would rerun
DataGate on a tick with no new data (the backends key a task's cache on its input artifacts, and after tick 1 the
resolver returns tick 1's result where tick 1 had none). So:

* ``DataGateLatest`` (:data:`RESOLVER`, a ``LatestArtifact`` resolver, ``pipeline/pipeline.py``) finds the newest
  ``DataGateResult`` of the pipeline (none before the first span went through the gate);
* ``DataGateBaseline`` (this task) takes it and the corpus the run reads (the DataSnapshot task's ``CorpusGen_data``:
  the ``data_snapshot`` CorpusGen records on its documents) and applies ``select_inputs`` to the results it knows of:
  the newest one and that result's own baseline (its ``baseline`` and ``baseline_span`` properties: the last span
  that went through before it). Every result records its baseline, so the chain holds the last span that went
  through even when the newest result failed the gate. It outputs ``baseline_uris``: ``{"baseline": URI or null,
  "acceptance": URI or null}``;
* DataGate's ``baseline_uris`` parameter is that output (:func:`wire`); a local run's DataGate takes the resolver's
  artifacts instead. A tick with nothing new chooses what the tick before chose (the newest result is then the one of
  the same span, so its own baseline again), so DataGate is a cache hit; a new span is compared with the last span
  that went through.

What the chain does not hold, and a local run's resolver does: a result older than the newest one's baseline. So a
backfill (``data_span`` lower than the newest result's span) is compared with that baseline only if it is older
still, else it gets the absolute limits alone; and an acceptance (``gate.accept``) carries over from the newest
result only (the one a rerun of the accepted span without the setting finds).

Its caching is off (``cachingOptions.enableCache`` false), as the DataSnapshot and InitFrom tasks': it costs a
second. A plain container (``python -m pipeline.tasks.gate_baseline_task --executor_input {{$}}``) that writes its output
parameter to the ``ExecutorOutput`` file, as :mod:`pipeline.tasks.snapshot_task` does; it imports no TFX.
"""
from __future__ import annotations

import json
import sys
from typing import Any, Dict, List, Optional

from pipeline.tasks import snapshot_task
from pipeline.tasks.snapshot_task import run_task

TASK = "DataGateBaseline"  # the local DAG's resolver of the same name chooses the same (pipeline/settings/configs.py)
RESOLVER = "DataGateLatest"  # the LatestArtifact resolver of the pipeline's newest DataGateResult
MODULE = "pipeline.tasks.gate_baseline_task"
RESULT_INPUT = "result"  # the newest DataGateResult (the resolver's), absent before the first
CORPUS_PARAMETER = "corpus"  # the DataSnapshot task's CorpusGen_data
OUTPUT = "baseline_uris"  # out, and DataGate's parameter: {"baseline": URI | None, "acceptance": URI | None}
GATE_NODE = "DataGate"


# ------------------------------------------------------------------------------------------------- at compile time
def wire(pipeline_spec: Dict[str, Any]) -> None:
    """Add the task to a compiled spec's ``PipelineSpec`` (after :func:`pipeline.tasks.snapshot_task.wire`), between the
    :data:`RESOLVER` task and DataGate, whose ``baseline_uris`` parameter becomes its output."""
    from pipeline.rehearsal.rehearsal_store import schema_title  # lazy: hashlib, pipeline.rehearsal.rehearsal_store (0.003 s)

    tasks = pipeline_spec["root"]["dag"]["tasks"]
    components = pipeline_spec["components"]
    executors = pipeline_spec["deploymentSpec"]["executors"]
    image = next(e["container"]["image"] for e in executors.values() if "container" in e)
    (key,) = components[tasks[RESOLVER]["componentRef"]["name"]]["outputDefinitions"]["artifacts"]
    result_type = components[tasks[RESOLVER]["componentRef"]["name"]]["outputDefinitions"]["artifacts"][key][
        "artifactType"]
    # TFX compiles a LatestArtifact query of a type of its own only (any other is `schema_title="tfx.Artifact"`):
    # the query names the result's own schema title, which its instanceSchema gives it on the backend.
    resolver = executors[components[tasks[RESOLVER]["componentRef"]["name"]]["executorLabel"]]["resolver"]
    resolver["outputArtifactQueries"][key]["filter"] = (f'schema_title="{schema_title(result_type)}" AND '
                                                        f'state=LIVE')
    string = {"parameterType": "STRING"}
    components[TASK] = {
        "executorLabel": f"{TASK}_executor",
        "inputDefinitions": {"artifacts": {RESULT_INPUT: {"artifactType": result_type, "isOptional": True}},
                             "parameters": {CORPUS_PARAMETER: dict(string)}},
        "outputDefinitions": {"parameters": {OUTPUT: dict(string)}}}
    executors[f"{TASK}_executor"] = {"container": {
        "image": image, "command": ["python", "-m", MODULE], "args": ["--executor_input", "{{$}}"]}}
    tasks[TASK] = {
        "taskInfo": {"name": TASK}, "componentRef": {"name": TASK},
        "cachingOptions": {"enableCache": False},  # the newest result changes between runs: it runs on every tick
        "dependentTasks": sorted({RESOLVER, snapshot_task.TASK}),
        "inputs": {
            "artifacts": {RESULT_INPUT: {"taskOutputArtifact": {"producerTask": RESOLVER,
                                                                "outputArtifactKey": key}}},
            "parameters": {CORPUS_PARAMETER: {"taskOutputParameter": {
                "producerTask": snapshot_task.TASK, "outputParameterKey": snapshot_task.data_output("CorpusGen")}}}}}
    gate = tasks[GATE_NODE]
    gate_component = components[gate["componentRef"]["name"]]
    gate_component["inputDefinitions"].setdefault("parameters", {})[OUTPUT] = dict(string)
    gate["inputs"].setdefault("parameters", {})[OUTPUT] = {"taskOutputParameter": {"producerTask": TASK,
                                                                                   "outputParameterKey": OUTPUT}}
    gate["dependentTasks"] = sorted(set(gate.get("dependentTasks", [])) | {TASK})


# ------------------------------------------------------------------------------------------------------ at run time
def _number(value: Any) -> Optional[int]:
    """A metadata number as the backends hand it over (a float in the artifact's ``metadata`` Struct)."""
    return None if value is None or value == "" else int(float(value))


def known_results(newest: Optional[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """The results the chain knows of, as ``select_inputs`` takes them, from the newest result's runtime artifact
    (``uri``, ``metadata``: its custom properties): its own baseline (id 1: a result that went through, no
    fingerprint known) and itself (id 2, the newer)."""
    if newest is None:
        return []
    meta = newest.get("metadata") or {}
    out = []
    if meta.get("baseline") and _number(meta.get("baseline_span")) is not None:
        out.append({"id": 1, "uri": meta["baseline"], "span": _number(meta["baseline_span"]), "passed": 1})
    out.append({"id": 2, "uri": newest["uri"], "span": _number(meta.get("span")),
                "passed": _number(meta.get("passed")), "accepted": _number(meta.get("accepted")),
                "data_fingerprint": meta.get("data_fingerprint") or ""})
    return out


def choose(corpus: str, newest: Optional[Dict[str, Any]]) -> Dict[str, Optional[str]]:
    """``baseline_uris``: the URIs of the results ``select_inputs`` chooses among :func:`known_results`."""
    from components.datagate.datagate_result import select_inputs  # lazy: dataclasses, hashlib (0.01 s)

    results = known_results(newest)
    chosen = select_inputs(corpus or None, results)
    uris = {r["id"]: r["uri"] for r in results}
    return {"baseline": uris.get(chosen["baseline"]), "acceptance": uris.get(chosen["acceptance"])}


def _task(inputs: Dict[str, Any]) -> Dict[str, Any]:
    results = (inputs.get("artifacts", {}).get(RESULT_INPUT) or {}).get("artifacts") or []
    chosen = choose(inputs["parameterValues"][CORPUS_PARAMETER], results[0] if results else None)
    print(f"{TASK}: newest result: {results[0]['uri'] if results else None}")
    for key in ("baseline", "acceptance"):
        print(f"{TASK}: {key} = {chosen[key]}")
    return {OUTPUT: json.dumps(chosen, sort_keys=True)}


def main(argv: Optional[List[str]] = None) -> int:
    """``--executor_input JSON``: choose, write the output parameter (:func:`pipeline.tasks.snapshot_task.run_task`)."""
    return run_task(TASK, MODULE, _task, argv)


if __name__ == "__main__":
    sys.exit(main())
