"""The names a Kubeflow Pipelines v2 / Vertex AI backend gave the artifacts of the task running in this process.

On those backends an artifact is known by a string resource name (Vertex ML Metadata:
``projects/P/locations/L/metadataStores/default/artifacts/ID``). TFX's container entrypoint
(``tfx.orchestration.kubeflow.v2.container.kubeflow_v2_run_executor``) hands executors artifacts whose integer
``id`` is only a hash of that name, which no one can look up. The entrypoint keeps the names to itself, but they
are in the ``ExecutorInput`` JSON it was started with (``--json_serialized_invocation_args``, this process's
argv), so they are read back from there and matched to the ids by TFX's own hash. A local run (no such
argument) gets an empty mapping, and its MLMD ids stand.
"""
import json
import sys
from typing import Dict, Optional, Sequence

INVOCATION_FLAG = "--json_serialized_invocation_args"


def _invocation(argv: Sequence[str]) -> Optional[str]:
    for i, arg in enumerate(argv):
        if arg == INVOCATION_FLAG and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith(INVOCATION_FLAG + "="):
            return arg.split("=", 1)[1]
    return None


def artifact_names(argv: Optional[Sequence[str]] = None) -> Dict[int, str]:
    """{artifact id as the executor sees it: backend resource name} for this task's input and output artifacts."""
    text = _invocation(sys.argv if argv is None else argv)
    if text is None:
        return {}
    from tfx.orchestration.kubeflow.v2.container import kubeflow_v2_entrypoint_utils as entrypoint  # lazy: tfx (6.0 s)

    names: Dict[int, str] = {}
    data = json.loads(text)
    for side in ("inputs", "outputs"):
        for artifact_list in data.get(side, {}).get("artifacts", {}).values():
            for artifact in artifact_list.get("artifacts", []):
                if artifact.get("name"):
                    entrypoint._get_hashed_id(artifact["name"], names)  # fills names[id] = name
    return names
