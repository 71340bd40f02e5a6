"""The rehearsal's stand-in for the backend's ML Metadata: what earlier rehearsals of a pipeline produced, kept
between rehearsals in one output folder, so a rehearsal is a later run where the backend's would be one.

It holds what Vertex AI Pipelines and Kubeflow Pipelines v2 keep and read between runs:

* **artifacts** (name, schema title, URI, metadata, state LIVE) in the order they were recorded, with the pipeline
  and run that produced them. A resolver task's ``outputArtifactQueries`` filter is answered against them
  (:func:`matches`: the clauses TFX compiles, ``schema_title="…"``, ``state=LIVE``,
  ``metadata.KEY.number_value=N``, ``name="…"``), newest first, within the same pipeline, as the backends scope a
  resolver to the pipeline's context;
* **imported artifacts**: an importer with ``reimport=False`` reuses the artifact of the same URI and schema title
  (KFP's ``importer_launcher.go``), so its name, and every cache key downstream, stays the same;
* **cached executions**: a container task whose cache key (:func:`cache_key`: input artifact names, parameter
  values, output definitions, image, command and args, as KFP's ``cacheutils.GenerateCacheKey``) matches an
  earlier one's reuses that execution's outputs when the spec enables caching for the task.

The store is one JSON file (:data:`STORE_FILE`) in the rehearsal's output folder, rewritten whole (through a
temporary file and a rename) after each task, so a rehearsal that fails midway keeps what its finished tasks
recorded, as the backend's store does.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
from typing import Any, Dict, List, Mapping, Optional

__all__ = ["STORE_FILE", "Store", "schema_title", "cache_key", "matches", "QueryError"]

STORE_FILE = "rehearsal_store.json"
_CLAUSE = re.compile(r'\s*(?:(schema_title)="([^"]*)"|(state)=(\w+)|metadata\.([\w-]+)\.number_value=([-0-9.eE+]+)'
                     r'|(name)="([^"]*)")\s*')


class QueryError(ValueError):
    """A resolver filter with a clause the rehearsal does not know (the backend's query language is larger)."""


def schema_title(artifact_type: Mapping[str, Any]) -> str:
    """``albert_tfx.RawCorpus`` from a compiled ``artifactType`` / ``typeSchema`` (``schemaTitle`` or the title line of
    ``instanceSchema``)."""
    if artifact_type.get("schemaTitle"):
        return artifact_type["schemaTitle"]
    for line in artifact_type.get("instanceSchema", "").splitlines():
        if line.startswith("title:"):
            return line.split(":", 1)[1].strip()
    return ""


def matches(query: str, artifact: Mapping[str, Any]) -> bool:
    """Whether ``artifact`` (a stored record) satisfies every ``AND``-joined clause of ``query``."""
    for clause in query.split(" AND "):
        m = _CLAUSE.fullmatch(clause)
        if m is None:
            raise QueryError(f"resolver filter clause {clause.strip()!r} is not one the rehearsal answers")
        if m.group(1) and artifact["title"] != m.group(2):
            return False
        if m.group(3) and m.group(4) != "LIVE":  # every stored artifact is LIVE
            return False
        if m.group(5):
            value = artifact.get("metadata", {}).get(m.group(5))
            if not isinstance(value, (int, float)) or isinstance(value, bool) or value != float(m.group(6)):
                return False
        if m.group(7) and artifact["name"] != m.group(8):
            return False
    return True


def cache_key(input_artifacts: Mapping[str, List[Mapping[str, Any]]], parameters: Mapping[str, Any],
              component: Mapping[str, Any], container: Mapping[str, Any]) -> str:
    """KFP v2's cache key fields: input artifact names, input parameter values, output artifact and parameter
    definitions, the container's image, command and args."""
    fields = {
        "inputArtifactNames": {key: [a["name"] for a in arts] for key, arts in sorted(input_artifacts.items())},
        "inputParameterValues": dict(sorted(parameters.items())),
        "outputArtifactsSpec": component.get("outputDefinitions", {}).get("artifacts", {}),
        "outputParametersSpec": component.get("outputDefinitions", {}).get("parameters", {}),
        "containerSpec": {"image": container.get("image"),
                          "cmdArgs": list(container.get("command", [])) + list(container.get("args", []))},
    }
    return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()


class Store:
    """The store of one rehearsal output folder (see the module docstring)."""

    def __init__(self, folder: str):
        self.path = os.path.join(folder, STORE_FILE)
        self.data: Dict[str, Any] = {"artifacts": [], "executions": {}}
        if os.path.exists(self.path):
            with open(self.path) as f:
                self.data = json.load(f)

    def save(self) -> None:
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        tmp = self.path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(self.data, f, indent=1, sort_keys=True)
        os.replace(tmp, self.path)

    # -- artifacts ------------------------------------------------------------------------------------------------
    def record(self, artifact: Mapping[str, Any], *, pipeline: str, run_id: str, task: str, kind: str) -> None:
        """Keep an artifact a task produced (``kind``: ``importer`` or ``container``)."""
        self.data["artifacts"].append({"name": artifact["name"], "title": schema_title(artifact["type"]),
                                       "type": artifact["type"], "uri": artifact["uri"],
                                       "metadata": artifact.get("metadata", {}), "pipeline": pipeline,
                                       "run_id": run_id, "task": task, "kind": kind})

    def imported(self, uri: str, title: str) -> Optional[Dict[str, Any]]:
        """The artifact an importer recorded earlier for this URI and schema title (any pipeline), or None."""
        for artifact in self.data["artifacts"]:
            if artifact["kind"] == "importer" and artifact["uri"] == uri and artifact["title"] == title:
                return artifact
        return None

    def resolve(self, query: str, pipeline: str) -> Optional[Dict[str, Any]]:
        """The newest artifact of ``pipeline`` that ``query`` matches, or None."""
        for artifact in reversed(self.data["artifacts"]):
            if artifact["pipeline"] == pipeline and matches(query, artifact):
                return artifact
        return None

    @staticmethod
    def runtime(artifact: Mapping[str, Any]) -> Dict[str, Any]:
        """A stored artifact as the backend hands it to a task (``RuntimeArtifact``'s JSON)."""
        return {"name": artifact["name"], "type": artifact["type"], "uri": artifact["uri"],
                "metadata": artifact.get("metadata", {})}

    # -- executions -----------------------------------------------------------------------------------------------
    def cached(self, key: str) -> Optional[Dict[str, Any]]:
        return self.data["executions"].get(key)

    def remember(self, key: str, execution: Mapping[str, Any]) -> None:
        self.data["executions"][key] = dict(execution)
