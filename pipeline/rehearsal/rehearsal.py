"""Run a compiled pipeline spec on this machine the way Vertex AI Pipelines and Kubeflow Pipelines v2 run it.

A rehearsal catches, before anything is sent to the cloud, the class of error that only the backend's way of
starting tasks shows: an artifact type the container cannot import, a module missing from the environment,
parameters the task never receives. For each task of ``root.dag``, in dependency order, it does what the backends
do:

* an **Importer** task (``importer`` executor) runs no container: the backend records an artifact with the
  importer's URI and type schema, or reuses the one it recorded for the same URI and type (``reimport=False``), and
  so does the rehearsal. The URI may be an upstream task's output parameter (the DataSnapshot task's, which
  resolves span patterns when a run starts: :mod:`pipeline.tasks.snapshot_task`), and the metadata may hold
  ``{{$.inputs.parameters['…']}}`` placeholders, filled from the task's parameters as KFP fills them;
* a **resolver** task (the latest blessed model, the data gate's newest result) answers its compiled
  ``outputArtifactQueries`` against the artifacts of earlier runs of the pipeline: the rehearsal keeps them in a
  store in its output folder (:mod:`pipeline.rehearsal.rehearsal_store`), so the first rehearsal in a folder finds none, as a
  pipeline's first run does, and the next one finds what the first produced;
* a **container** task whose spec enables caching (every task TFX compiles; not the DataSnapshot, InitFrom and
  DataGateBaseline tasks, which run on every tick: :mod:`pipeline.tasks.snapshot_task`, :mod:`pipeline.tasks.init_from_task`,
  :mod:`pipeline.tasks.gate_baseline_task`) is a cache hit
  when an earlier execution had the same cache key (KFP v2's fields: input artifact names, parameter values, output definitions, image, command and args): its
  outputs are reused and nothing runs. Otherwise it gets an ``ExecutorInput`` JSON built as the backends build it: ``inputs.parameterValues``
  (typed protobuf values, the only field open-source KFP fills), input artifacts as their producers'
  ``executor_output.json`` left them, output artifacts with URIs under the pipeline root, and ``outputFile``.
  The JSON replaces ``{{$}}`` in the container's ``command`` + ``args``, and that exact argv runs as a process of
  its own whose ``python`` is the chosen environment's (the image's virtualenv is first on its ``PATH`` the same
  way), in an empty working folder, with no ``PYTHONPATH``: only what is installed in that environment can be
  imported. A ``python -m MODULE`` command (every task TFX compiles) is forked from a server in that environment that
  imported TFX's entrypoint's dependencies once (:mod:`pipeline.tasks.task_launcher`: 7-9 s of CPU saved per task);
  ``cold=True`` (``rehearse --cold``) starts each as a new interpreter instead. Rehearsals in a row (a schedule's
  ticks, each after its data changed) can share one server: :func:`rehearse`'s ``launcher``.

A rehearsal writes nothing outside its output folder and sends nothing anywhere (:class:`Destinations`): the
pipeline root moves to a local folder (every compiled string under the spec's root moves with it), so does every
other ``gs://`` location in a parameter or argument and every folder the spec writes to that lies outside the output
folder (the Pusher's destination, the Trainer's checkpoint root); a remote Beam runner is replaced by Beam's local
one; Model Registry uploads are recorded (:data:`components.release.registry.RECORD_VAR`) and not sent. The
summary lists each move. The image's bundled sample, :data:`pipeline.cloud.submit.IMAGE_DATA_ROOT`, is read from this
project's ``data/``.

What it cannot hold without a real backend: the container image itself (it runs in an environment built the way
the image is built, see ``infra/build_env.sh``), retries and resource limits, credentials and real ``gs://`` I/O.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional

from components.beam_options import LOCAL_RUNNER
from components.release.registry import RECORD_VAR
from config.errors import UserError
from pipeline.cloud import spec
from pipeline.cloud.submit import IMAGE_DATA_ROOT, lasting_folders
from pipeline.settings.home import PROJECT_HOME
from pipeline.rehearsal.rehearsal_store import QueryError, Store, cache_key, schema_title
from pipeline.tasks.task_launcher import WarmLauncher, module_of

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
    outcome: str = "done"  # what the progress line says: "cache hit (RUN)", "found none", "recorded", ...


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
            raise RehearsalError(f"--spec: the compiled DAG has a cycle among {sorted(set(tasks) - set(order))}")
        order.extend(ready)
    return order


class Destinations:
    """Every place outside the rehearsal's output folder that a spec writes to or sends to, moved or held back.

    * ``gs://BUCKET/PATH`` anywhere in a parameter or container argument (the compiled pipeline root aside, which
      moves to ``<output>/pipeline_root``) → ``<output>/gs/BUCKET/PATH``;
    * a folder of this machine the spec writes to (:func:`pipeline.cloud.submit.lasting_folders`: the Pusher's destination,
      the Trainer's checkpoint root) outside the output folder → ``<output>/moved/<its absolute path>``;
    * a remote Beam runner (``--runner=DataflowRunner`` …) → Beam's local runner;
    * Model Registry uploads: recorded in ``<output>/registry_requests.jsonl``, not sent.

    ``moved`` ({original: replacement}) and ``not_sent`` ({what: where it is recorded}) go into the summary.
    """

    GS = re.compile(r"gs://[^\s\"',;]+")

    def __init__(self, output_dir: str, spec_path: str, compiled_root: Optional[str], root: str):
        self.output_dir = output_dir
        self.compiled_root = (compiled_root or "").rstrip("/")
        self.root = root
        self.moved: Dict[str, str] = {}
        self.not_sent: Dict[str, str] = {}
        self.registry_record = os.path.join(output_dir, "registry_requests.jsonl")
        self._folders = {}
        for folder in lasting_folders(spec_path).values():
            if "://" not in folder and not _inside(folder, output_dir) and not (
                    self.compiled_root and folder.startswith(self.compiled_root)):
                self._folders[folder.rstrip("/")] = os.path.join(output_dir, "moved", folder.strip("/"))

    def local(self, value: Any) -> Any:
        """A compiled string with every destination moved (see the class docstring)."""
        if not isinstance(value, str):
            return value
        if self.compiled_root:
            value = value.replace(self.compiled_root, self.root)  # also inside compiled JSON settings
        for folder, replacement in self._folders.items():
            if folder in value:
                value = value.replace(folder, replacement)
                self.moved[folder] = replacement
        return self.GS.sub(self._gs, value)

    def _gs(self, match) -> str:
        uri = match.group(0)
        replacement = os.path.join(self.output_dir, "gs", uri[len("gs://"):].rstrip("/"))
        self.moved[uri] = replacement
        return replacement

    def runner_arg(self, arg: str) -> str:
        runner = arg.split("=", 1)[1] if arg.startswith("--runner=") else None
        if runner and runner not in LOCAL_RUNNERS:
            self.moved[arg] = f"--runner={LOCAL_RUNNER}"
            return f"--runner={LOCAL_RUNNER}"
        return self.local(arg)

    def registry(self, parameters: Dict[str, Any]) -> Dict[str, str]:
        """The environment that makes a task record its Model Registry uploads instead of sending them."""
        for value in parameters.values():
            if isinstance(value, str) and '"vertex_model"' in value:
                model = json.loads(value).get("vertex_model")
                if model:
                    self.not_sent[f"Model Registry upload to {model}"] = self.registry_record
        return {RECORD_VAR: self.registry_record}


def _inside(path: str, folder: str) -> bool:
    path, folder = os.path.abspath(path), os.path.abspath(folder)
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


class _Rehearsal:
    def __init__(self, spec_path: str, output_dir: str, parameter_values: Optional[Dict[str, Any]],
                 python: str, log: Callable[[str], None], cold: bool = False,
                 launcher: Optional[WarmLauncher] = None):
        self.spec_path = spec_path
        self.cold = cold
        # Started at the first container task (pipeline/tasks/task_launcher.py), unless the caller gave one.
        self.launcher: Optional[WarmLauncher] = launcher
        self.data, self.pipeline_spec = spec.load(spec_path)
        spec.check_schema(spec_path, self.pipeline_spec, "the backends fill only `parameterValues`, which older "
                                                         "specs do not read")
        self.output_dir = os.path.abspath(output_dir)
        self.root = os.path.join(self.output_dir, "pipeline_root")
        self.compiled_root = (self.data.get("runtimeConfig", {}).get("gcsOutputDirectory")
                              or self.pipeline_spec.get("defaultPipelineRoot"))
        self.pipeline_name = self.pipeline_spec.get("pipelineInfo", {}).get("name", "")
        self.python_bin = os.path.dirname(os.path.abspath(python))
        self.log = log
        self.run_id = f"rehearsal-{time.strftime('%Y%m%d-%H%M%S')}-{uuid.uuid4().hex[:6]}"
        self.destinations = Destinations(self.output_dir, spec_path, self.compiled_root, self.root)
        self.store = Store(self.output_dir)
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
        """A compiled string moved to this machine: destinations as :class:`Destinations` moves them, the image's
        bundled sample → this project's ``data/``."""
        if isinstance(value, str) and value.startswith(IMAGE_DATA_ROOT):  # a data folder naming the image's copy
            return os.path.join(PROJECT_HOME, "data", value[len(IMAGE_DATA_ROOT):])
        return self.destinations.local(value)

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
        for i, name in enumerate(order, 1):
            task = tasks[name]
            component = self.pipeline_spec["components"][task["componentRef"]["name"]]
            executor = self.pipeline_spec["deploymentSpec"]["executors"][component["executorLabel"]]
            start = time.monotonic()
            if "importer" in executor:
                result = self._importer(name, task, component, executor["importer"])
            elif "resolver" in executor:
                result = self._resolver(name, task, component, executor["resolver"])
            elif "container" in executor:
                result = self._container(name, task, component, executor["container"])
            else:
                raise RehearsalError(f"--spec task {name}: executor kind {sorted(executor)} is not supported")
            result.seconds = time.monotonic() - start
            self.results[name] = result
            self.store.save()
            self.log(f"[{i}/{len(order)}] {name}: {result.kind} {result.outcome} in {result.seconds:.1f} s")
        return self.results

    def _importer(self, name, task, component, importer) -> TaskResult:
        source = importer["artifactUri"]
        params = self._task_parameters(name, task, component)
        uri = params[source["runtimeParameter"]] if "runtimeParameter" in source else self._local(
            spec.constant({"runtimeValue": source}))
        if not isinstance(uri, str) or "://" in uri or not os.path.exists(uri):
            uri = next((k for k, v in self.destinations.moved.items() if v == uri), uri)
            raise RehearsalError(f"task {name}: the folder it imports, {uri!r}, is not on this machine: pass "
                                 f"--parameters with local folders for the data parameters")
        (key,) = component["outputDefinitions"]["artifacts"]
        reimport = bool(params.get("reimport", False))
        known = None if reimport else self.store.imported(uri, schema_title(importer["typeSchema"]))
        if known is not None:  # KFP's importer: the artifact of the same URI and type, not a new one
            return TaskResult(name, "importer", 0.0, outputs={key: [Store.runtime(known)]}, outcome="reused")
        metadata = {k: self._PARAMETER.sub(lambda m: str(params[m.group(1)]), v) if isinstance(v, str) else v
                    for k, v in importer.get("metadata", {}).items()}  # KFP's dynamic importer metadata
        artifact = {"name": self._new_name(), "type": importer["typeSchema"], "uri": uri, "metadata": metadata}
        self.store.record(artifact, pipeline=self.pipeline_name, run_id=self.run_id, task=name, kind="importer")
        return TaskResult(name, "importer", 0.0, outputs={key: [artifact]}, outcome="recorded")

    _PARAMETER = re.compile(r"\{\{\$\.inputs\.parameters\['([^']+)'\]\}\}")
    _PLACEHOLDER = re.compile(r"\{\{\$\.inputs\.artifacts\['([^']+)'\]\.metadata\['([^']+)'\]\}\}")

    def _resolver(self, name, task, component, resolver) -> TaskResult:
        """Each output's compiled filter answered against the store: the newest match in this pipeline, or none."""
        inputs = self._input_artifacts(name, task)
        queries = resolver.get("outputArtifactQueries", {})
        outputs = {}
        for key in component.get("outputDefinitions", {}).get("artifacts", {}):
            query, unresolved = queries.get(key, {}).get("filter", ""), False

            def value(match):
                nonlocal unresolved
                arts = inputs.get(match.group(1), {}).get("artifacts", [])
                found = arts[0].get("metadata", {}).get(match.group(2)) if arts else None
                unresolved = unresolved or not isinstance(found, str)
                return found if isinstance(found, str) else ""

            query = self._PLACEHOLDER.sub(value, query)
            try:
                found = None if unresolved or not query else self.store.resolve(query, self.pipeline_name)
            except QueryError as exc:
                raise RehearsalError(f"--spec task {name}: {exc}") from None
            outputs[key] = [Store.runtime(found)] if found else []
        got = sorted(a["name"] for arts in outputs.values() for a in arts)
        return TaskResult(name, "resolver", 0.0, outputs=outputs,
                          outcome=f"found {', '.join(got)}" if got else "found none")

    def _container(self, name, task, component, container) -> TaskResult:
        parameters = self._task_parameters(name, task, component)
        inputs = self._input_artifacts(name, task)
        argv_spec = [self.destinations.runner_arg(a) for a in container["command"] + container.get("args", [])]
        key = cache_key({k: v["artifacts"] for k, v in inputs.items()}, parameters, component,
                        {"image": container.get("image"), "command": argv_spec})
        caching = task.get("cachingOptions", {}).get("enableCache", False)
        hit = self.store.cached(key) if caching else None
        if hit is not None:
            return TaskResult(name, "container", 0.0, outputs=hit["outputs"],
                              output_parameters=hit["output_parameters"], outcome=f"cache hit ({hit['run_id']})")
        task_root = os.path.join(self.root, self.run_id, name)
        os.makedirs(task_root, exist_ok=True)
        outputs = {}
        for out_key, definition in component.get("outputDefinitions", {}).get("artifacts", {}).items():
            uri = os.path.join(task_root, out_key)
            os.makedirs(uri, exist_ok=True)  # gs:// has no folders to create; a local filesystem needs them
            outputs[out_key] = {"artifacts": [{"name": self._new_name(), "type": definition["artifactType"],
                                               "uri": uri, "metadata": {}}]}
        executor_input = {
            "inputs": {"parameterValues": parameters, "artifacts": inputs},
            "outputs": {"artifacts": outputs, "outputFile": os.path.join(task_root, "executor_output.json")},
        }
        argv = [self._placeholders(name, part, executor_input) for part in argv_spec]
        log_path = os.path.join(task_root, "log.txt")
        base_env = task_environment(self.python_bin)
        env = {**base_env, **self.destinations.registry(parameters)}
        with tempfile.TemporaryDirectory(prefix="rehearsal-cwd-") as cwd:
            if self.cold or module_of(argv) is None:
                with open(log_path, "w") as log_file:
                    code = subprocess.run(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=log_file,
                                          stderr=subprocess.STDOUT).returncode
            else:
                python = os.path.join(self.python_bin, os.path.basename(argv[0]))
                if self.launcher is None:
                    self.launcher = WarmLauncher(python, base_env)
                elif (self.launcher.python, self.launcher.env) != (python, base_env):
                    raise RehearsalError(f"task {name}: the launcher given runs {self.launcher.python} with another "
                                         f"environment than this rehearsal's tasks get ({python}): start it with "
                                         f"WarmLauncher(python, task_environment(os.path.dirname(python)))")
                code = self.launcher.run(argv, cwd=cwd, env=env, log_path=log_path)
        if code != 0:
            raise TaskFailed(f"task {name} failed (exit {code}): {_last_error(log_path)} (log: {log_path})")
        outputs, output_parameters = self._outputs(executor_input, name)
        for arts in outputs.values():
            for artifact in arts:
                self.store.record(artifact, pipeline=self.pipeline_name, run_id=self.run_id, task=name,
                                  kind="container")
        if caching:
            self.store.remember(key, {"outputs": outputs, "output_parameters": output_parameters,
                                      "run_id": self.run_id, "task": name})
        return TaskResult(name, "container", 0.0, outputs=outputs, output_parameters=output_parameters,
                          log=log_path, outcome="cache miss, ran" if caching else "ran")

    @staticmethod
    def _placeholders(name: str, part: str, executor_input: Dict[str, Any]) -> str:
        part = part.replace("{{$}}", json.dumps(executor_input))
        if "{{$" in part:
            raise RehearsalError(f"--spec task {name}: placeholder in {part[:80]!r} is not supported by the rehearsal")
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
    return (errors or lines or ["(empty log)"])[-1][:2000]  # whole: an error's last words name what to --set


def task_environment(python_bin: str) -> Dict[str, str]:
    """The environment every container task of a rehearsal gets before its own additions: this process's, without
    ``PYTHONPATH`` and ``PYTHONHOME``, with the chosen environment's ``bin`` folder (``python_bin``) first on ``PATH``."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env["PATH"] = python_bin + os.pathsep + env.get("PATH", "")
    return env


def rehearse(spec_path: str, output_dir: str, *, parameter_values: Optional[Dict[str, Any]] = None,
             python: Optional[str] = None, log: Callable[[str], None] = print,
             cold: bool = False, launcher: Optional[WarmLauncher] = None) -> Dict[str, Any]:
    """Run every task of ``spec_path`` with its pipeline root under ``output_dir`` (see the module docstring).

    Rehearsals in one ``output_dir`` share its store: each is a later run of the pipeline than the one before.

    ``python``: the interpreter of the environment to run the containers' commands in (default: this one's).
    ``cold``: start every container task as a new interpreter, as a backend does, instead of forking it from a
    server that imported the entrypoint's dependencies once (:mod:`pipeline.tasks.task_launcher`).
    ``launcher``: a running server to fork the warm tasks from, for rehearsals in a row (each otherwise starts its
    own at its first container task and stops it at its end: 7-9 s of CPU each); it must run the tasks' interpreter
    with :func:`task_environment`, and it stays open. Returns a JSON-ready summary. Raises :class:`TaskFailed` at the first task that fails, and
    :class:`RehearsalError` or :class:`pipeline.cloud.spec.SpecError` before any task runs when the spec cannot run here. A success is recorded next to the spec (``<spec>.rehearsal.json``) for ``submit``'s hint.
    """
    rehearsal = _Rehearsal(spec_path, output_dir, parameter_values, python or sys.executable, log, cold, launcher)
    start = time.monotonic()
    try:
        results = rehearsal.run()
    finally:
        if launcher is None and rehearsal.launcher is not None:  # the one it started; a launcher given stays open
            rehearsal.launcher.close()
    summary = {
        "spec": spec_path, "spec_sha256": spec_digest(spec_path),
        "schema_version": spec.schema_version(rehearsal.pipeline_spec), "run_id": rehearsal.run_id,
        "pipeline_root": rehearsal.root, "python": python or sys.executable, "parameters": rehearsal.params,
        "task_start": "cold" if cold else "warm",
        "seconds": round(time.monotonic() - start, 1),
        "store": rehearsal.store.path,
        # Where each destination of the spec went instead (nothing is written or sent outside the output folder).
        "moved": dict(sorted(rehearsal.destinations.moved.items())),
        "not_sent": dict(sorted(rehearsal.destinations.not_sent.items())),
        "tasks": {name: {"kind": r.kind, "seconds": round(r.seconds, 1), "outcome": r.outcome,
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
