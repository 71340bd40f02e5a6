"""Run a compiled pipeline spec on this machine the way Vertex AI Pipelines and Kubeflow Pipelines v2 run it.

A rehearsal catches, before anything is sent to the cloud, the class of error that only the backend's way of
starting tasks shows: an artifact type the container cannot import, a module missing from the environment,
parameters the task never receives. For each task of ``root.dag``, in dependency order, it does what the backends
do:

* an **Importer** task (``importer`` executor) runs no container: the backend records an artifact with the
  importer's URI and type schema, and so does the rehearsal;
* a **resolver** task (the latest blessed model) queries the backend's ML Metadata for earlier runs' artifacts: a
  rehearsal is a first run and finds none, as the backend does on a pipeline's first run;
* a **container** task gets an ``ExecutorInput`` JSON built as the backends build it: ``inputs.parameterValues``
  (typed protobuf values, the only field open-source KFP fills), input artifacts as their producers'
  ``executor_output.json`` left them, output artifacts with URIs under the pipeline root, and ``outputFile``.
  The JSON replaces ``{{$}}`` in the container's ``command`` + ``args``, and that exact argv runs as a subprocess
  whose ``python`` is the chosen environment's (the image's virtualenv is first on its ``PATH`` the same way), in
  an empty working folder, with no ``PYTHONPATH``: only what is installed in that environment can be imported.

What it cannot hold without a real backend: the container image itself (it runs in an environment built the way
the image is built, see ``infra/build_env.sh``), Vertex's caching, retries and resource limits, credentials,
``gs://`` I/O (the pipeline root is moved to a local folder: every compiled string under the spec's root moves
with it, and the image's bundled sample, :data:`pipeline.cloud.IMAGE_DATA_ROOT`, is read from this project's
``data/``), and a remote Beam runner (a spec whose tasks name one is refused: rehearse the same configuration
compiled for local Beam).
"""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional

from components.beam_options import LOCAL_RUNNER
from config.errors import UserError
from pipeline import spec
from pipeline.cloud import IMAGE_DATA_ROOT
from pipeline.home import PROJECT_HOME

# Written next to a spec after a successful rehearsal: `submit` hints at `rehearse` when it is missing or stale.
MARKER_SUFFIX = ".rehearsal.json"
# Beam runners that run inside the task's own container (anything else needs a cloud or cluster).
LOCAL_RUNNERS = (LOCAL_RUNNER, "DirectRunner", "SwitchingDirectRunner", "BundleBasedDirectRunner")
# The form Vertex ML Metadata gives artifact names; the rehearsal's own project and store are named as such.
NAME_FORMAT = "projects/rehearsal/locations/local/metadataStores/default/artifacts/{id}"


class RehearsalError(UserError, ValueError):
    """The spec cannot be rehearsed as given (a user error: the message says what to pass or change)."""


class TaskFailed(RuntimeError):
    """A task of the rehearsed spec failed: what the backend would have reported (exit code, last error, log)."""


@dataclass
class TaskResult:
    name: str
    kind: str  # "importer", "resolver" or "container"
    seconds: float
    outputs: Dict[str, List[Dict[str, Any]]] = field(default_factory=dict)  # output key → runtime artifacts
    output_parameters: Dict[str, Any] = field(default_factory=dict)
    log: Optional[str] = None


def spec_digest(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def marker_path(spec_path: str) -> str:
    return spec_path + MARKER_SUFFIX


def was_rehearsed(spec_path: str) -> bool:
    """Whether this exact spec (by content) passed a rehearsal."""
    try:
        with open(marker_path(spec_path)) as f:
            return json.load(f).get("spec_sha256") == spec_digest(spec_path)
    except (OSError, ValueError):
        return False


def task_order(pipeline_spec: Dict[str, Any]) -> List[str]:
    """The root DAG's tasks, each after every task it depends on (ties by name, so the order is stable)."""
    tasks = pipeline_spec["root"]["dag"]["tasks"]
    needs = {name: set(t.get("dependentTasks", [])) | {
        a["taskOutputArtifact"]["producerTask"] for a in t.get("inputs", {}).get("artifacts", {}).values()
        if "taskOutputArtifact" in a} for name, t in tasks.items()}
    order: List[str] = []
    while len(order) < len(tasks):
        ready = sorted(n for n in tasks if n not in order and needs[n] <= set(order))
        if not ready:
            raise RehearsalError(f"the DAG has a cycle among {sorted(set(tasks) - set(order))}")
        order.extend(ready)
    return order


class _Rehearsal:
    def __init__(self, spec_path: str, pipeline_root: str, parameter_values: Optional[Dict[str, Any]],
                 python: str, log: Callable[[str], None]):
        self.spec_path = spec_path
        self.data, self.pipeline_spec = spec.load(spec_path)
        spec.check_schema(spec_path, self.pipeline_spec, "the backends fill only `parameterValues`, which older "
                                                         "specs do not read")
        self.root = os.path.abspath(pipeline_root)
        self.compiled_root = (self.data.get("runtimeConfig", {}).get("gcsOutputDirectory")
                              or self.pipeline_spec.get("defaultPipelineRoot"))
        self.python_bin = os.path.dirname(os.path.abspath(python))
        self.log = log
        self.run_id = f"rehearsal-{time.strftime('%Y%m%d-%H%M%S')}-{uuid.uuid4().hex[:6]}"
        self.params = self._pipeline_parameters(parameter_values or {})
        self.results: Dict[str, TaskResult] = {}
        self._names = 0

    # -- values ---------------------------------------------------------------------------------------------------
    def _pipeline_parameters(self, given: Dict[str, Any]) -> Dict[str, Any]:
        declared = self.pipeline_spec["root"].get("inputDefinitions", {}).get("parameters", {})
        unknown = sorted(set(given) - set(declared))
        if unknown:
            raise RehearsalError(f"{self.spec_path} has no parameter {', '.join(unknown)} (it has "
                                 f"{', '.join(sorted(declared))})")
        values = {**spec.parameter_defaults(self.data), **given}
        missing = sorted(set(declared) - set(values))
        if missing:
            raise RehearsalError(f"no value for the pipeline parameter(s) {', '.join(missing)}: pass --parameters")
        return {name: spec.typed(value, declared[name]) for name, value in values.items()}

    def _local(self, value: Any) -> Any:
        """A compiled string moved to this machine: the spec's pipeline root → the rehearsal's, the image's bundled
        sample → this project's ``data/``."""
        if not isinstance(value, str):
            return value
        if self.compiled_root:
            value = value.replace(self.compiled_root.rstrip("/"), self.root)  # also inside compiled JSON settings
        if value.startswith(IMAGE_DATA_ROOT):  # a data folder parameter naming the image's copy
            value = os.path.join(PROJECT_HOME, "data", value[len(IMAGE_DATA_ROOT):])
        return value

    def _new_name(self) -> str:
        self._names += 1
        return NAME_FORMAT.format(id=f"{self.run_id}-{self._names}")

    def _task_parameters(self, name: str, task: Dict[str, Any], component: Dict[str, Any]) -> Dict[str, Any]:
        declared = component.get("inputDefinitions", {}).get("parameters", {})
        values = {}
        for key, source in task.get("inputs", {}).get("parameters", {}).items():
            if "componentInputParameter" in source:
                value = self.params[source["componentInputParameter"]]
            elif "runtimeValue" in source:
                value = spec.constant(source)
            elif "taskOutputParameter" in source:
                ref = source["taskOutputParameter"]
                value = self.results[ref["producerTask"]].output_parameters[ref["outputParameterKey"]]
            else:
                raise RehearsalError(f"task {name}: parameter {key} has a source this rehearsal does not know: "
                                     f"{sorted(source)}")
            values[key] = self._local(spec.typed(value, declared.get(key, {})))
        return values

    def _input_artifacts(self, name: str, task: Dict[str, Any]) -> Dict[str, Any]:
        artifacts = {}
        for key, source in task.get("inputs", {}).get("artifacts", {}).items():
            if "taskOutputArtifact" not in source:
                raise RehearsalError(f"task {name}: input artifact {key} has a source this rehearsal does not know: "
                                     f"{sorted(source)}")
            ref = source["taskOutputArtifact"]
            artifacts[key] = {"artifacts": self.results[ref["producerTask"]].outputs[ref["outputArtifactKey"]]}
        return artifacts

    # -- tasks ----------------------------------------------------------------------------------------------------
    def run(self) -> Dict[str, TaskResult]:
        tasks = self.pipeline_spec["root"]["dag"]["tasks"]
        order = task_order(self.pipeline_spec)
        self._check_runners()
        for i, name in enumerate(order, 1):
            task = tasks[name]
            component = self.pipeline_spec["components"][task["componentRef"]["name"]]
            executor = self.pipeline_spec["deploymentSpec"]["executors"][component["executorLabel"]]
            start = time.monotonic()
            if "importer" in executor:
                result = self._importer(name, task, component, executor["importer"])
            elif "resolver" in executor:
                result = self._resolver(name, component)
            elif "container" in executor:
                result = self._container(name, task, component, executor["container"])
            else:
                raise RehearsalError(f"task {name}: executor kind {sorted(executor)} is not supported")
            result.seconds = time.monotonic() - start
            self.results[name] = result
            self.log(f"[{i}/{len(order)}] {name}: {result.kind} done in {result.seconds:.1f} s")
        return self.results

    def _check_runners(self) -> None:
        for executor in self.pipeline_spec["deploymentSpec"]["executors"].values():
            for arg in executor.get("container", {}).get("args", []):
                runner = arg.split("=", 1)[1] if arg.startswith("--runner=") else None
                if runner and runner not in LOCAL_RUNNERS:
                    raise RehearsalError(f"{self.spec_path} runs its Beam steps on {runner}, which a rehearsal "
                                         f"cannot start here: rehearse the same configuration compiled for local "
                                         f"Beam (`albert-pipeline compile` without a remote runner)")

    def _importer(self, name, task, component, importer) -> TaskResult:
        source = importer["artifactUri"]
        params = self._task_parameters(name, task, component)
        uri = params[source["runtimeParameter"]] if "runtimeParameter" in source else self._local(
            spec.constant({"runtimeValue": source}))
        if not isinstance(uri, str) or "://" in uri or not os.path.exists(uri):
            raise RehearsalError(f"task {name}: the folder it imports, {uri!r}, is not on this machine: pass "
                                 f"--parameters with local folders for the data parameters")
        (key,) = component["outputDefinitions"]["artifacts"]
        artifact = {"name": self._new_name(), "type": importer["typeSchema"], "uri": uri,
                    "metadata": importer.get("metadata", {})}
        return TaskResult(name, "importer", 0.0, outputs={key: [artifact]})

    @staticmethod
    def _resolver(name, component) -> TaskResult:
        """A resolver task (TFX's latest-blessed-model resolver) queries the backend's ML Metadata for artifacts of
        earlier runs; a rehearsal is a first run, so it finds none, as the backend does on a pipeline's first run."""
        keys = component.get("outputDefinitions", {}).get("artifacts", {})
        return TaskResult(name, "resolver", 0.0, outputs={key: [] for key in keys})

    def _container(self, name, task, component, container) -> TaskResult:
        task_root = os.path.join(self.root, self.run_id, name)
        outputs = {}
        for key, definition in component.get("outputDefinitions", {}).get("artifacts", {}).items():
            uri = os.path.join(task_root, key)
            os.makedirs(uri, exist_ok=True)  # gs:// has no folders to create; a local filesystem needs them
            outputs[key] = {"artifacts": [{"name": self._new_name(), "type": definition["artifactType"],
                                           "uri": uri, "metadata": {}}]}
        executor_input = {
            "inputs": {"parameterValues": self._task_parameters(name, task, component),
                       "artifacts": self._input_artifacts(name, task)},
            "outputs": {"artifacts": outputs, "outputFile": os.path.join(task_root, "executor_output.json")},
        }
        argv = [self._placeholders(name, part, executor_input) for part in container["command"] + container.get(
            "args", [])]
        log_path = os.path.join(task_root, "log.txt")
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
        env["PATH"] = self.python_bin + os.pathsep + env.get("PATH", "")
        with tempfile.TemporaryDirectory(prefix="rehearsal-cwd-") as cwd, open(log_path, "w") as log_file:
            code = subprocess.run(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=log_file,
                                  stderr=subprocess.STDOUT).returncode
        if code != 0:
            raise TaskFailed(f"task {name} failed (exit {code}): {_last_error(log_path)} (log: {log_path})")
        outputs, parameters = self._outputs(executor_input, name)
        return TaskResult(name, "container", 0.0, outputs=outputs, output_parameters=parameters, log=log_path)

    @staticmethod
    def _placeholders(name: str, part: str, executor_input: Dict[str, Any]) -> str:
        part = part.replace("{{$}}", json.dumps(executor_input))
        if "{{$" in part:
            raise RehearsalError(f"task {name}: placeholder in {part[:80]!r} is not supported by the rehearsal")
        return part

    @staticmethod
    def _outputs(executor_input: Dict[str, Any], name: str):
        """(output artifacts, output parameter values) as the backend passes them on: artifacts with name and type
        as assigned, URI and metadata as the executor's ``executor_output.json`` reports them; parameters as it
        reports them (``parameterValues``, which a ``taskOutputParameter`` reads)."""
        path = executor_input["outputs"]["outputFile"]
        try:
            with open(path) as f:
                reported = json.load(f)
        except (OSError, ValueError) as exc:
            raise TaskFailed(f"task {name} exited 0 but wrote no readable {path} ({exc})") from None
        outputs = {}
        for key, value in executor_input["outputs"]["artifacts"].items():
            (assigned,) = value["artifacts"]
            got = (reported.get("artifacts", {}).get(key, {}).get("artifacts") or [{}])[0]
            outputs[key] = [{**assigned, "uri": got.get("uri", assigned["uri"]),
                             "metadata": got.get("metadata", assigned["metadata"])}]
        return outputs, dict(reported.get("parameterValues", {}))


def _last_error(log_path: str) -> str:
    """The log's last line that looks like an error (a task's log ends with its traceback)."""
    with open(log_path, errors="replace") as f:
        lines = [line.strip() for line in f if line.strip()]
    errors = [line for line in lines if "Error" in line or "error" in line or "Exception" in line]
    return (errors or lines or ["(empty log)"])[-1][:300]


def rehearse(spec_path: str, output_dir: str, *, parameter_values: Optional[Dict[str, Any]] = None,
             python: Optional[str] = None, log: Callable[[str], None] = print) -> Dict[str, Any]:
    """Run every task of ``spec_path`` with its pipeline root under ``output_dir`` (see the module docstring).

    ``python``: the interpreter of the environment to run the containers' commands in (default: this one's).
    Returns a JSON-ready summary. Raises :class:`TaskFailed` at the first task that fails, and
    :class:`RehearsalError` or :class:`pipeline.spec.SpecError` before any task runs when the spec cannot run here. A success is recorded next to the spec (``<spec>.rehearsal.json``) for ``submit``'s hint.
    """
    rehearsal = _Rehearsal(spec_path, os.path.join(output_dir, "pipeline_root"), parameter_values,
                           python or sys.executable, log)
    start = time.monotonic()
    results = rehearsal.run()
    summary = {
        "spec": spec_path, "spec_sha256": spec_digest(spec_path),
        "schema_version": spec.schema_version(rehearsal.pipeline_spec), "run_id": rehearsal.run_id,
        "pipeline_root": rehearsal.root, "python": python or sys.executable, "parameters": rehearsal.params,
        "seconds": round(time.monotonic() - start, 1),
        "tasks": {name: {"kind": r.kind, "seconds": round(r.seconds, 1),
                         "outputs": {key: arts[0]["uri"] if arts else None for key, arts in r.outputs.items()},
                         "artifacts": {key: arts[0]["name"] if arts else None for key, arts in r.outputs.items()}}
                  for name, r in results.items()},
    }
    try:
        with open(marker_path(spec_path), "w") as f:
            json.dump(summary, f, indent=2, sort_keys=True)
    except OSError as exc:
        log(f"(could not record the rehearsal next to the spec: {exc})")
    return summary
