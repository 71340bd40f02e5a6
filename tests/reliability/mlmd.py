"""Read-only helpers over a run's MLMD sqlite store."""
from __future__ import annotations

from typing import Dict, List


def open_store(path: str):
    from pipeline.local import mlmd

    return mlmd.open_readonly(path)


def node_of(store, execution) -> str:
    """The node id (``Trainer``, ``GlueBenchmark``…) from the execution's node context, not its executor type."""
    for ctx in store.get_contexts_by_execution(execution.id):
        if store.get_context_types_by_id([ctx.type_id])[0].name == "node":
            return ctx.name.split(".", 1)[1]
    return store.get_execution_types_by_id([execution.type_id])[0].name.split(".")[-1]


def executions(store, after_id: int = 0) -> List[Dict]:
    """[{id, node, state}] of executions with id > after_id, in id order."""
    from ml_metadata.proto import metadata_store_pb2 as pb

    return [{"id": e.id, "node": node_of(store, e), "state": pb.Execution.State.Name(e.last_known_state)}
            for e in sorted(store.get_executions(), key=lambda e: e.id) if e.id > after_id]


def states_by_node(store, after_id: int = 0) -> Dict[str, List[str]]:
    out: Dict[str, List[str]] = {}
    for e in executions(store, after_id):
        out.setdefault(e["node"], []).append(e["state"])
    return out


def live_artifacts(store) -> Dict[str, List]:
    """type name → LIVE artifacts."""
    from ml_metadata.proto import metadata_store_pb2 as pb

    out: Dict[str, List] = {}
    types = {t.id: t.name for t in store.get_artifact_types()}
    for a in store.get_artifacts():
        if a.state == pb.Artifact.LIVE:
            out.setdefault(types[a.type_id], []).append(a)
    return out


def all_artifacts(store) -> Dict[str, List]:
    out: Dict[str, List] = {}
    types = {t.id: t.name for t in store.get_artifact_types()}
    for a in store.get_artifacts():
        out.setdefault(types[a.type_id], []).append(a)
    return out


def max_execution_id(store) -> int:
    return max((e.id for e in store.get_executions()), default=0)
