"""The DataSnapshot task of a compiled spec: each data location resolved when a run starts, on Vertex AI and KFP.

A local run resolves its data locations when it starts (``pipeline.settings.resolve.resolve_config``, :mod:`pipeline.settings.spans`).
A compiled spec is compiled once and scheduled, so there the resolution is a task of the spec that runs at the start
of every run:

* ``DataSnapshot`` takes the data locations (the pipeline parameters ``wikipedia_dir``, ``glue_dir`` …, patterns
  allowed), ``data_span`` (a pipeline parameter: 0 the latest span, N a backfill) and the span window, and resolves
  them as a local run does: the span's folder and every folder's fingerprint. Its outputs are parameters:
  ``<key>_uri`` (the folder an Importer registers), ``<key>_snapshot`` (the location's summary, recorded on the
  imported artifact as metadata) and ``<Node>_data`` for each node that reads raw data (its ``data_snapshot``
  parameter, as a local run gives it).
* Its caching is off (``cachingOptions.enableCache`` false), so it runs on every tick. TFX sets caching for the
  whole pipeline only; :func:`wire` sets it for this one task in the compiled JSON, and ``submit`` leaves every
  task's setting as compiled (``enable_caching`` is sent only to turn caching off).
* Each Importer's ``artifact_uri`` is the task's ``<key>_uri``: a new span is a new URI, so a new artifact. Every node
  that reads raw data gets ``<Node>_data``: the fingerprint of what it reads is in its cache key, so data changed in
  place makes it miss the cache whether the backend's importer matches an artifact on URI and type alone (KFP's
  ``importer_launcher.go``, Vertex AI) or on its metadata too (newer KFP). Unchanged data: the same URIs and values,
  the same artifacts, and every task downstream is a cache hit.

The task is a plain container (``python -m pipeline.tasks.snapshot_task --executor_input {{$}}``) that writes its output
parameters to the ``ExecutorOutput`` file, as KFP v2's lightweight components do. A location that matches no folder,
or a ``data_span`` that is not there, fails the task with one line naming the parameter and the spans there are.
"""
from __future__ import annotations

import json
import os
import sys
from typing import Any, Callable, Dict, List, Optional, Tuple

TASK = "DataSnapshot"
SPAN_PARAMETER = "data_span"
SETTINGS_PARAMETER = "settings"
MODULE = "pipeline.tasks.snapshot_task"


def uri_output(key: str) -> str:
    return f"{key}_uri"


def snapshot_output(key: str) -> str:
    return f"{key}_snapshot"


def data_output(node: str) -> str:
    return f"{node}_data"


# ------------------------------------------------------------------------------------------------- at compile time
def wire(data: Dict[str, Any], pipeline_spec: Dict[str, Any], *, importers: Dict[str, Tuple[str, str]],
         consumers: Dict[str, Dict[str, str]], span: int, window: int, corpus_keys: List[str]) -> None:
    """Add the task to a compiled spec (``data``: the whole job JSON, ``pipeline_spec`` its ``PipelineSpec``) and
    rewire the Importers (``importers``: data key → (Importer task, the config key of its location, for messages))
    and the nodes that read raw data (``consumers``: node → {input key → data key}) to its outputs."""
    root = pipeline_spec["root"]
    tasks = root["dag"]["tasks"]
    executors = pipeline_spec["deploymentSpec"]["executors"]
    image = next(e["container"]["image"] for e in executors.values() if "container" in e)
    locations = {}  # data key → the pipeline parameter naming its location
    for key, (task_name, _) in importers.items():
        source = tasks[task_name]["inputs"]["parameters"]["artifact_uri"]
        if "componentInputParameter" not in source:
            raise ValueError(f"{task_name}: its artifact_uri is not a pipeline parameter ({sorted(source)})")
        locations[key] = source["componentInputParameter"]

    string = {"parameterType": "STRING"}
    outputs = {name: dict(string) for key in importers for name in (uri_output(key), snapshot_output(key))}
    outputs.update({data_output(node): dict(string) for node in consumers})
    inputs = {param: dict(string) for param in locations.values()}
    inputs[SPAN_PARAMETER] = {"parameterType": "NUMBER_INTEGER"}
    inputs[SETTINGS_PARAMETER] = dict(string)
    pipeline_spec["components"][TASK] = {"executorLabel": f"{TASK}_executor",
                                         "inputDefinitions": {"parameters": inputs},
                                         "outputDefinitions": {"parameters": outputs}}
    executors[f"{TASK}_executor"] = {"container": {
        "image": image, "command": ["python", "-m", MODULE], "args": ["--executor_input", "{{$}}"]}}
    task_settings = {"window": window, "corpus_keys": list(corpus_keys), "consumers": consumers,
                     "locations": {key: {"parameter": param, "setting": importers[key][1]}
                                   for key, param in sorted(locations.items())}}
    task_inputs = {param: {"componentInputParameter": param} for param in locations.values()}
    task_inputs[SPAN_PARAMETER] = {"componentInputParameter": SPAN_PARAMETER}
    task_inputs[SETTINGS_PARAMETER] = {"runtimeValue": {"constant": json.dumps(task_settings, sort_keys=True)}}
    tasks[TASK] = {"taskInfo": {"name": TASK}, "componentRef": {"name": TASK},
                   "cachingOptions": {"enableCache": False},  # it runs on every tick: that is its purpose
                   "inputs": {"parameters": task_inputs}}
    root.setdefault("inputDefinitions", {}).setdefault("parameters", {})[SPAN_PARAMETER] = {
        "parameterType": "NUMBER_INTEGER", "defaultValue": span}
    data.setdefault("runtimeConfig", {}).setdefault("parameterValues", {})[SPAN_PARAMETER] = span

    def from_task(name: str) -> Dict[str, Any]:
        return {"taskOutputParameter": {"producerTask": TASK, "outputParameterKey": name}}

    def depend(task: Dict[str, Any]) -> None:
        task["dependentTasks"] = sorted(set(task.get("dependentTasks", [])) | {TASK})

    for key, (task_name, _) in importers.items():
        task = tasks[task_name]
        task["inputs"]["parameters"]["artifact_uri"] = from_task(uri_output(key))
        task["inputs"]["parameters"]["data_snapshot"] = from_task(snapshot_output(key))
        depend(task)
        component = pipeline_spec["components"][task["componentRef"]["name"]]
        component["inputDefinitions"]["parameters"]["data_snapshot"] = dict(string)
        importer = executors[component["executorLabel"]]["importer"]
        # KFP's dynamic importer metadata: the placeholder is replaced by the parameter's value when it runs.
        importer["metadata"] = {"data_snapshot": "{{$.inputs.parameters['data_snapshot']}}"}
    for node in consumers:
        params = tasks[node]["inputs"]["parameters"]
        if "data_snapshot" not in params:
            raise ValueError(f"{node} has no data_snapshot parameter to take from {TASK}")
        params["data_snapshot"] = from_task(data_output(node))
        depend(tasks[node])


def location_parameters(task: Dict[str, Any]) -> Dict[str, str]:
    """Data key → the pipeline parameter naming its location, from the task as compiled."""
    from pipeline.cloud import spec  # lazy: dataclasses, pipeline.cloud.spec (0.01 s)

    settings = json.loads(spec.constant(task["inputs"]["parameters"][SETTINGS_PARAMETER]))
    return {key: loc["parameter"] for key, loc in settings["locations"].items()}


# ------------------------------------------------------------------------------------------------------ at run time
def resolve(parameters: Dict[str, Any]) -> Dict[str, str]:
    """The task's output parameters from its input parameters (see the module docstring)."""
    from pipeline.settings import spans  # lazy: dataclasses, pipeline.settings.spans, datetime, hashlib (0.02 s)

    settings = json.loads(parameters[SETTINGS_PARAMETER])
    locations = {key: (loc["setting"], parameters[loc["parameter"]])
                 for key, loc in settings["locations"].items()}
    resolved = spans.resolve_all(locations, span=int(parameters.get(SPAN_PARAMETER) or 0), window=settings["window"],
                                 corpus_keys=settings["corpus_keys"])
    summaries = {key: snap.summary() for key, snap in resolved.items()}
    out = {}
    for key, snap in resolved.items():
        out[uri_output(key)] = snap.uri
        out[snapshot_output(key)] = json.dumps(summaries[key], sort_keys=True, separators=(",", ":"))
    for node, value in spans.consumer_values(summaries, settings["consumers"]).items():
        out[data_output(node)] = value
    return out


def write_text(path: str, text: str) -> None:
    """``text`` into the file at ``path`` (a local path or a ``gs://`` URI): a task's ``ExecutorOutput``."""
    if "://" in path:
        import tensorflow as tf  # lazy: tensorflow (2.8 s)

        tf.io.gfile.makedirs(os.path.dirname(path))
        with tf.io.gfile.GFile(path, "w") as f:
            f.write(text)
        return
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def run_task(task: str, module: str, compute: Callable[[Dict[str, Any]], Dict[str, Any]],
             argv: Optional[List[str]] = None) -> int:
    """The shell of this project's lightweight container tasks (DataSnapshot, InitFrom, DataGateBaseline), KFP v2's
    lightweight-component contract: ``python -m MODULE --executor_input JSON``; ``compute`` takes the executor
    input's ``inputs`` and returns the output parameters, written as ``parameterValues`` to the ``outputFile``. A
    user error is one line on stderr (the task's name first) and exit code 2."""
    from config.errors import UserError  # lazy: dataclasses, config.errors, copy (0.01 s)

    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 2 or args[0] != "--executor_input":
        print(f"usage: python -m {module} --executor_input JSON", file=sys.stderr)
        return 2
    executor_input = json.loads(args[1])
    try:
        values = compute(executor_input["inputs"])
    except UserError as exc:
        print(f"{task}: {exc}", file=sys.stderr)
        return 2
    write_text(executor_input["outputs"]["outputFile"], json.dumps({"parameterValues": values}, sort_keys=True))
    return 0


def _task(inputs: Dict[str, Any]) -> Dict[str, Any]:
    values = resolve(inputs["parameterValues"])
    for key, value in sorted(values.items()):
        print(f"{TASK}: {key} = {value[:200]}")
    return values


def main(argv: Optional[List[str]] = None) -> int:
    """``--executor_input JSON``: resolve, write the output parameters (:func:`run_task`)."""
    return run_task(TASK, MODULE, _task, argv)


if __name__ == "__main__":
    sys.exit(main())
