"""``albert-pipeline plan``: which nodes a run of this config would take from the cache, and why the rest run.

Nothing runs and nothing is written: the MLMD store is opened read-only. For every node, in the
DAG's order, the plan computes the cache key exactly as TFX's launcher does
(``tfx.orchestration.portable.cache_utils.get_cache_context``: pipeline info, node info, executor
spec, input artifacts, output-artifact skeleton and parameters) from the compiled IR, with the input
artifacts the run would resolve (the cached outputs of upstream nodes, the artifacts Importers would
reuse), and looks that key up in MLMD. A node whose input comes from a node that will run, will run.
For each node that will run, the reason is a diff against that node's newest execution in the store:
the settings that changed (by their config names, from ``PipelineConfig.parameter_settings``: the same
table the node's parameters are built from), the inputs that will be new, or "code" when the
parameters and inputs are the same but the key is not (a changed executor or TFX version).
Resolvers are RESOLVED with what they would hand on: the latest blessed model, and the data gate's baseline (which
depends on the span CorpusGen hands on, so it is known only when CorpusGen is a cache hit). Whether the gate's check
will pass is not known before it runs: on a broken span the run stops there although plan lists what follows.
"""
from __future__ import annotations

import copy
import hashlib
import json
import os
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from google.protobuf import message as pb_message

from components.datagate.datagate_result import RESULT_FACTS, select_inputs
from pipeline.local import mlmd
from pipeline.settings import spans
from pipeline.settings.configs import GATE_BASELINE_NODE, IMPORTERS, PipelineConfig

CACHED, WILL_RUN = "CACHED", "WILL RUN"
RESOLVED = "RESOLVED"  # a resolver node: it executes nothing, its artifacts are looked up when its consumer starts


@dataclass
class NodePlan:
    node: str
    status: str
    reasons: List[str] = field(default_factory=list)
    # What a node that will run cost the last time it ran: its newest successful execution's wall time in MLMD
    # (None: it never ran in this store).
    last_seconds: Optional[float] = None

    def to_dict(self) -> Dict[str, Any]:
        return {"node": self.node, "status": self.status, "reasons": self.reasons, "last_seconds": self.last_seconds}


def _seconds(store, pipeline_name: str, node_id: str) -> Optional[float]:
    """Wall time of the node's newest execution that ran (not one served from the cache), from MLMD."""
    from ml_metadata.proto import metadata_store_pb2  # lazy: ml_metadata (0.1 s)

    ctx = store.get_context_by_type_and_name("node", f"{pipeline_name}.{node_id}")
    ran = [e for e in (store.get_executions_by_context(ctx.id) if ctx is not None else [])
           if e.last_known_state == metadata_store_pb2.Execution.COMPLETE]
    if not ran:
        return None
    last = max(ran, key=lambda e: (e.create_time_since_epoch, e.id))
    return round((last.last_update_time_since_epoch - last.create_time_since_epoch) / 1000.0, 1)


def _cache_key(pipeline_info, pipeline_node, executor_spec, inputs, outputs, parameters) -> str:
    """TFX's cache-context name (``cache_utils.get_cache_context``), computed without registering it."""
    h = hashlib.sha256()
    h.update(pipeline_info.SerializeToString(deterministic=True))
    h.update(pipeline_node.node_info.SerializeToString(deterministic=True))
    if executor_spec:
        h.update(executor_spec.SerializeToString(deterministic=True))
    for key in sorted(inputs):
        h.update(key.encode())
        for mlmd_artifact in inputs[key]:
            h.update(mlmd_artifact.SerializeToString(deterministic=True))
    for key in sorted(outputs):
        h.update(key.encode())
        for artifact in outputs[key]:
            stateless = copy.deepcopy(artifact)
            stateless.uri = ""
            stateless.name = ""
            h.update(stateless.mlmd_artifact.SerializeToString(deterministic=True))
    for key, value in sorted(parameters.items()):
        h.update(key.encode())
        h.update(str(value).encode())
    return h.hexdigest()


def node_cache_key(ir, deployment, pipeline_node, inputs: Dict[str, List[Any]]) -> str:
    """The cache key the launcher would compute for ``pipeline_node`` of the compiled ``ir`` with these input
    artifacts (MLMD ``Artifact`` protos): its parameters as the launcher parses them, the output-artifact skeleton
    (its URIs and names do not count, so execution 0 under no folder stands for any) and its executor spec."""
    from tfx.orchestration import data_types_utils  # lazy: tfx (2.9 s)
    from tfx.orchestration.local import runner_utils  # lazy: tfx (0.1 s)
    from tfx.orchestration.portable import inputs_utils, outputs_utils  # lazy: tfx (6.0 s)

    params = data_types_utils.build_parsed_value_dict(
        inputs_utils.resolve_parameters_with_schema(node_parameters=pipeline_node.parameters))
    spec = runner_utils.extract_executor_spec(deployment, pipeline_node.node_info.id)
    outputs = outputs_utils.generate_output_artifacts(0, pipeline_node.outputs.outputs, node_dir="")
    return _cache_key(ir.pipeline_info, pipeline_node, spec, inputs, outputs, params)


def _successful(execution) -> bool:
    from ml_metadata.proto import metadata_store_pb2  # lazy: ml_metadata (0.1 s)

    return execution.last_known_state in (metadata_store_pb2.Execution.COMPLETE, metadata_store_pb2.Execution.CACHED)


def _outputs_of(store, execution_id: int) -> Optional[Dict[str, List[Any]]]:
    """``cache_utils._get_outputs_of_execution`` + ``verify_artifacts``: None unless all outputs are LIVE and exist."""
    import tensorflow as tf  # lazy: tensorflow (2.8 s)
    from ml_metadata.proto import metadata_store_pb2  # lazy: ml_metadata (0.1 s)

    events = [e for e in store.get_events_by_execution_ids([execution_id]) if e.type == metadata_store_pb2.Event.OUTPUT]
    artifacts = {a.id: a for a in store.get_artifacts_by_id([e.artifact_id for e in events])}
    out: Dict[str, List[Any]] = {}
    for event in events:
        artifact = artifacts[event.artifact_id]
        if artifact.state != metadata_store_pb2.Artifact.LIVE or not tf.io.gfile.exists(artifact.uri):
            return None
        out.setdefault(event.path.steps[0].key, []).append(artifact)
    return out


def _cached_outputs(store, key: str) -> Optional[Dict[str, List[Any]]]:
    ctx = store.get_context_by_type_and_name("execution_cache", key)
    if ctx is None:
        return None
    executions = sorted((e for e in store.get_executions_by_context(ctx.id) if _successful(e)),
                        key=lambda e: (e.create_time_since_epoch, e.id), reverse=True)
    for execution in executions:
        outputs = _outputs_of(store, execution.id)
        if outputs is not None:
            return outputs
    return None


def _latest_execution(store, pipeline_name: str, node_id: str):
    ctx = store.get_context_by_type_and_name("node", f"{pipeline_name}.{node_id}")
    if ctx is None:
        return None
    executions = [e for e in store.get_executions_by_context(ctx.id) if _successful(e)]
    return max(executions, key=lambda e: (e.create_time_since_epoch, e.id)) if executions else None


def _decode(value: Any) -> Any:
    """JSON strings (nested ones too, like the Trainer's ``custom_config.albert``) → plain data."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except (json.JSONDecodeError, ValueError):
            return value
    if isinstance(value, dict):
        return {k: _decode(v) for k, v in value.items()}
    return value


def _flatten(value: Any, prefix: str) -> Dict[str, Any]:
    if isinstance(value, dict) and value:
        out: Dict[str, Any] = {}
        for k, v in value.items():
            out.update(_flatten(v, f"{prefix}.{k}" if prefix else str(k)))
        return out
    return {prefix: value}


def _display(settings: Dict[str, str], path: str) -> str:
    """A changed node parameter path → the config key users set (``train.learning_rate``, ``benchmarks.seeds``),
    by the longest parameter path of ``settings`` (one node's ``PipelineConfig.parameter_settings``) it starts with."""
    for prefix in sorted(settings, key=len, reverse=True):
        if path == prefix or path.startswith(prefix + "."):
            return settings[prefix] + path[len(prefix):]
    return path


def _param_diff(settings: Dict[str, str], old: Dict[str, Any], new: Dict[str, Any]) -> List[str]:
    reasons = []
    for param in sorted(set(old) | set(new)):
        a, b = _decode(old.get(param)), _decode(new.get(param))
        if a == b or str(a) == str(b):
            continue
        fa, fb = _flatten(a, param), _flatten(b, param)
        for path in sorted(set(fa) | set(fb)):
            if fa.get(path) != fb.get(path) and str(fa.get(path)) != str(fb.get(path)):
                reasons.append(f"setting {_display(settings, path)}: {fa.get(path)!r} → {fb.get(path)!r}")
    return list(dict.fromkeys(reasons))  # one line per setting, even where two parameters carry it


def plan(config: PipelineConfig, metadata_path: Optional[str] = None) -> List[NodePlan]:
    """The plan of ``config`` (``resolve_config(..., local=True)``, as ``run`` would get it) against its pipeline
    root and MLMD store (``metadata_path``)."""
    from tfx.dsl.compiler import compiler, constants  # lazy: tfx (2.9 s)
    from tfx.orchestration import data_types_utils  # lazy: tfx (2.9 s)
    from tfx.orchestration.local import runner_utils  # lazy: tfx (0.1 s)
    from tfx.orchestration.portable import inputs_utils, runtime_parameter_utils  # lazy: tfx (6.0 s)

    from pipeline.pipeline import create_pipeline  # lazy: tensorflow, apache_beam, tfx (6.1 s)

    metadata_path = metadata_path or config.metadata_path
    connection = mlmd.connection_config(metadata_path, readonly=True)  # what the run's IR names (no TFX warning)
    ir = compiler.Compiler().compile(create_pipeline(config, metadata_connection_config=connection))
    settings = config.parameter_settings()
    runtime_parameter_utils.substitute_runtime_parameter(ir, {constants.PIPELINE_RUN_ID_PARAMETER_NAME: "plan"})
    deployment = runner_utils.extract_local_deployment_config(ir)
    store = mlmd.open_readonly(metadata_path) if os.path.exists(metadata_path) else None

    produced: Dict[str, Optional[Dict[str, List[Any]]]] = {}  # node id → its outputs, None when it will run
    resolved = set()  # the resolver nodes
    result: List[NodePlan] = []
    for node in ir.nodes:
        pn = node.pipeline_node
        node_id = pn.node_info.id
        if store is None:
            produced[node_id] = None
            first = [_data_change(None, ir.pipeline_info.id, pn)] if _data_properties(pn) else []
            result.append(NodePlan(node_id, WILL_RUN, first + ["no MLMD store yet at " + metadata_path]))
            continue
        params = data_types_utils.build_parsed_value_dict(
            inputs_utils.resolve_parameters_with_schema(node_parameters=pn.parameters))
        if pn.node_info.type.name.endswith("Importer"):
            produced[node_id], status, reasons = _plan_importer(store, ir.pipeline_info.id, pn, params)
            result.append(NodePlan(node_id, status, reasons))
            continue
        if pn.node_info.type.name.endswith("Resolver"):
            if node_id == GATE_BASELINE_NODE:
                produced[node_id], reasons = _plan_gate_baseline(store, ir.pipeline_info.id,
                                                                 produced.get("CorpusGen"))
            else:
                produced[node_id], reasons = _plan_latest_blessed(store, ir.pipeline_info.id)
            result.append(NodePlan(node_id, RESOLVED, reasons))
            resolved.add(node_id)
            continue
        inputs: Dict[str, List[Any]] = {}
        new_inputs = []
        for key, spec in pn.inputs.inputs.items():
            for channel in spec.channels:
                upstream = channel.producer_node_query.id
                outputs = produced.get(upstream)
                if outputs is None and upstream in resolved:  # the gate's baseline, for documents still to come
                    new_inputs.append(f"input {key}: chosen by {upstream} once the new documents exist")
                elif outputs is None:
                    new_inputs.append(f"input {key}: new artifact from {upstream} (will run)")
                else:
                    inputs.setdefault(key, []).extend(outputs.get(channel.output_key, []))
        previous = _latest_execution(store, ir.pipeline_info.id, node_id)
        node_settings = settings.get(node_id, {})
        if new_inputs:
            produced[node_id] = None
            why = _why(store, previous, node_settings, params, inputs)
            cost = _seconds(store, ir.pipeline_info.id, node_id)
            result.append(NodePlan(node_id, WILL_RUN, new_inputs + why, cost))
            continue
        key = node_cache_key(ir, deployment, pn, inputs)
        cached = _cached_outputs(store, key) if pn.execution_options.caching_options.enable_cache else None
        produced[node_id] = cached
        if cached is not None:
            result.append(NodePlan(node_id, CACHED))
        else:
            reasons = _why(store, previous, node_settings, params, inputs) or [
                "code or TFX version (same settings and inputs as the last execution)"]
            result.append(NodePlan(node_id, WILL_RUN, reasons, _seconds(store, ir.pipeline_info.id, node_id)))
    return result


def _why(store, previous, settings: Dict[str, str], params: Dict[str, Any],
         inputs: Dict[str, List[Any]]) -> List[str]:
    """Why a node will run: its settings and inputs against its newest successful execution."""
    from google.protobuf import json_format  # lazy: google.protobuf (0.02 s)
    from ml_metadata.proto import metadata_store_pb2  # lazy: ml_metadata (0.1 s)

    if previous is None:
        return ["never ran in this store"]
    old = {k: mlmd.value(v) for k, v in previous.custom_properties.items() if not k.startswith("__")}
    new = {k: (json_format.MessageToJson(v) if isinstance(v, pb_message.Message) else v)
           for k, v in params.items() if k in old or v is not None}
    reasons = _param_diff(settings, {k: v for k, v in old.items() if k in new}, new)
    events = [e for e in store.get_events_by_execution_ids([previous.id]) if e.type == metadata_store_pb2.Event.INPUT]
    old_inputs: Dict[str, set] = {}
    for e in events:
        old_inputs.setdefault(e.path.steps[0].key, set()).add(e.artifact_id)
    for key, artifacts in sorted(inputs.items()):
        if {a.id for a in artifacts} != old_inputs.get(key, set()):
            reasons.append(f"input {key}: a different artifact than the last execution's")
    return reasons


def _data_properties(pn, output_key: str = "result") -> Dict[str, Any]:
    """The custom properties an Importer gives its artifact: a data location's span(s) and fingerprint
    (pipeline/settings/spans.py), {} when it records none."""
    spec = pn.outputs.outputs[output_key].artifact_spec if output_key in pn.outputs.outputs else None
    return {k: mlmd.value(v.field_value) for k, v in spec.additional_custom_properties.items()} if spec else {}


def _data_change(store, pipeline_name: str, pn, output_key: str = "result") -> str:
    """How the data location of an Importer changed since the artifact its last execution registered."""
    old = None
    previous = _latest_execution(store, pipeline_name, pn.node_info.id) if store is not None else None
    outputs = _outputs_of(store, previous.id) if previous is not None else None
    if outputs and outputs.get(output_key):
        old = {k: mlmd.value(v) for k, v in outputs[output_key][0].custom_properties.items()}
    key = next((k for k, (node, _) in IMPORTERS.items() if node == pn.node_info.id), pn.node_info.id)
    return spans.describe_change(key, _data_properties(pn, output_key), old)


def _plan_importer(store, pipeline_name: str, pn, params):
    """TFX's importer reuses the newest LIVE artifact of the same type, URI and custom properties
    (``reimport=False``): a data location whose span or fingerprint (pipeline/settings/spans.py) changed since the last run
    gets a new artifact, and the plan's first line says how the data changed."""
    from ml_metadata.proto import metadata_store_pb2  # lazy: ml_metadata (0.1 s)

    uri = params.get("artifact_uri") or params.get("source_uri")
    output_key = params.get("output_key", "result")
    type_name = pn.outputs.outputs[output_key].artifact_spec.type.name
    wanted = _data_properties(pn, output_key)
    found = [a for a in store.get_artifacts_by_uri(uri) if a.state == metadata_store_pb2.Artifact.LIVE]
    types = {t.id: t.name for t in store.get_artifact_types_by_id(list({a.type_id for a in found}))} if found else {}
    found = [a for a in found if types.get(a.type_id) == type_name
             and all(k in a.custom_properties and mlmd.value(a.custom_properties[k]) == v for k, v in wanted.items())]
    change = [_data_change(store, pipeline_name, pn, output_key)] if wanted else []
    if params.get("reimport") or not found:
        return None, WILL_RUN, change + [f"new import of {uri}"]
    newest = max(found, key=lambda a: (a.create_time_since_epoch, a.id))
    return {output_key: [newest]}, CACHED, change


def _plan_latest_blessed(store, pipeline_name: str):
    """What TFX's ``LatestBlessedModelStrategy`` resolves now (:func:`pipeline.settings.continuation.latest_blessed_model`).
    Nothing is executed: the resolution happens when the consuming node starts, before this run blesses anything."""
    from pipeline.settings.continuation import latest_blessed_model  # lazy: logging, pipeline.settings.continuation (0.006 s)

    found = latest_blessed_model(store, pipeline_name)
    if found is None:
        return {"model": [], "model_blessing": []}, ["no blessed model yet"]
    model, blessing = found
    return ({"model": [model], "model_blessing": [blessing]},
            [f"the latest blessed model: artifact {model.id} ({model.uri})"])


def _plan_gate_baseline(store, pipeline_name: str, corpus: Optional[Dict[str, List[Any]]]):
    """What the data gate's ``GateBaselineStrategy`` resolves now (:func:`components.datagate.datagate_result.select_inputs`
    over the pipeline's LIVE ``DataGateResult`` artifacts), for the documents CorpusGen would hand on; None (the gate
    will run) while CorpusGen will run, since the span is the new documents'."""
    from ml_metadata.proto import metadata_store_pb2  # lazy: ml_metadata (0.1 s)

    if corpus is None:
        return None, ["chosen for the span CorpusGen will make"]
    documents = corpus.get("documents", [])
    snapshot = [mlmd.value(d.custom_properties["data_snapshot"]) for d in documents
                if "data_snapshot" in d.custom_properties]
    contexts = [c for c in store.get_contexts_by_type("pipeline") if c.name == pipeline_name]
    types = {t.id: t.name for t in store.get_artifact_types()}
    results = {a.id: a for c in contexts for a in store.get_artifacts_by_context(c.id)
               if a.state == metadata_store_pb2.Artifact.LIVE and types.get(a.type_id) == "albert_tfx.DataGateResult"}
    facts = {i: {"id": i, **{k: mlmd.value(a.custom_properties[k]) for k in RESULT_FACTS if k in a.custom_properties}}
             for i, a in results.items()}
    chosen = select_inputs(snapshot[0] if snapshot else None, facts.values())
    base, accepted = chosen["baseline"], chosen["acceptance"]
    reasons = [f"span {chosen['span']}: " + (f"baseline span {facts[base]['span']} (artifact {base})" if base
                                              else "no baseline (absolute limits only)")
               + (f"; accepted in an earlier run (artifact {accepted})" if accepted else "")]
    return ({"documents": documents, "baseline": [results[base]] if base else [],
             "acceptance": [results[accepted]] if accepted else []}, reasons)


def format_plan(plan_rows: List[NodePlan]) -> str:
    width = max(len(r.node) for r in plan_rows) if plan_rows else 10
    lines = []
    for r in plan_rows:
        cost = f" (last time {r.last_seconds:.0f} s)" if r.status == WILL_RUN and r.last_seconds is not None else ""
        lines.append(f"{r.node:<{width}}  {r.status}{cost}")
        for reason in r.reasons:
            lines.append(f"{'':<{width}}    - {reason}")
    runs = [r for r in plan_rows if r.status == WILL_RUN and r.last_seconds is not None]
    if runs:
        lines.append(f"what will run took {sum(r.last_seconds for r in runs):.0f} s the last time "
                     f"({len(runs)} of {sum(r.status == WILL_RUN for r in plan_rows)} nodes that will run had run)")
    return "\n".join(lines)
