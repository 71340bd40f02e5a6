"""Cloud submission: Vertex AI Pipelines (submit, schedule) and a Kubeflow Pipelines endpoint.

Each action is split into *build* (construct the request object, offline, testable) and *send*
(one call that needs credentials and network), so tests can assert on exactly what would be sent.
"""
from __future__ import annotations

import copy
import json
import shlex
from dataclasses import dataclass
from typing import Any, Dict, List, Optional

from components import cloud_auth
from config.errors import UserError
from pipeline.cloud import spec
from pipeline.settings.home import IMAGE_HOME
from pipeline.tasks import snapshot_task
from pipeline.tasks.init_from_task import compiled_source  # the Trainer's settings come through it with latest_blessed

# Where a pipeline's files must live for each target: the machines that run it cannot read the folders of the
# machine that compiled the spec.
REMOTE_SCHEMES = {"Vertex AI": ("gs://",), "Kubeflow Pipelines": ("gs://", "s3://", "minio://")}
# The pipeline image's own copy of the bundled sample (infra/Dockerfile: COPY data/sample): folders under it exist
# in every container of the image, so a spec may name them wherever it was compiled.
IMAGE_DATA_ROOT = IMAGE_HOME + "/data/"


class CloudConfigError(UserError, ValueError):
    """A required cloud setting is missing or wrong; raised before anything is sent."""


class CloudAuthError(CloudConfigError):
    """No usable Google Cloud credentials (a user error: the message says how to authenticate)."""


def _spec_values(spec_path: str):
    """(compiled pipeline root, {what: folder} of the folders that must outlive the containers (the Trainer's
    ``checkpoint_root``, the Pusher's ``push_destination``), {data parameter: default}, data parameter names).

    Data parameters are the raw data locations: those the DataSnapshot task resolves (:mod:`pipeline.tasks.snapshot_task`),
    or in a spec without one, those feeding an Importer's ``artifact_uri``.
    """
    data, pipeline_spec = spec.load(spec_path)
    runtime = data.get("runtimeConfig", {})
    root = runtime.get("gcsOutputDirectory") or pipeline_spec.get("defaultPipelineRoot")
    tasks = pipeline_spec.get("root", {}).get("dag", {}).get("tasks", {})
    uri_params = {task["inputs"]["parameters"]["artifact_uri"].get("componentInputParameter")
                  for task in tasks.values() if "artifact_uri" in task.get("inputs", {}).get("parameters", {})}
    if snapshot_task.TASK in tasks:
        uri_params = set(snapshot_task.location_parameters(tasks[snapshot_task.TASK]).values())
    defaults = {name: value for name, value in spec.parameter_defaults(data).items()
                if name in uri_params and isinstance(value, str)}
    return root, _lasting(tasks), defaults, uri_params, _model_location(tasks)


def _model_location(tasks: Dict[str, Any]) -> Optional[str]:
    """A benchmark-only spec's model folder (``ModelImport``'s ``location``: ``train.init_from``), else None."""
    from pipeline.settings.configs import MODEL_IMPORT_NODE  # lazy: pipeline.settings.configs (0.03 s)

    task = tasks.get(MODEL_IMPORT_NODE)
    return spec.constant(task["inputs"]["parameters"]["location"]) if task else None


# The settings naming folders a spec writes to that must outlive its containers: (task, parameter, JSON key).
LASTING_FOLDERS = (("Trainer", "custom_config", "checkpoint_root"), ("Pusher", "config", "push_destination"))


def _lasting(tasks: Dict[str, Any]) -> Dict[str, str]:
    lasting = {}
    for task, parameter, key in LASTING_FOLDERS:
        text = spec.constant(compiled_source(tasks, task, parameter)) if task in tasks else None
        if text and json.loads(text).get(key) is not None:
            lasting[f"{task} {key}"] = json.loads(text)[key]
    return lasting


def lasting_folders(spec_path: str) -> Dict[str, str]:
    """{"Trainer checkpoint_root" | "Pusher push_destination": folder} where the spec sets them (compiled from the
    pipeline root otherwise)."""
    _, pipeline_spec = spec.load(spec_path)
    return _lasting(pipeline_spec.get("root", {}).get("dag", {}).get("tasks", {}))


def check_spec_paths(spec_path: str, target: str, parameter_values: Optional[Dict[str, Any]] = None,
                     pipeline_root: Optional[str] = None) -> None:
    """Refuse a spec whose compiled paths the cloud machines cannot reach (:class:`CloudConfigError`, one line).

    Checked: the compiled pipeline root (or ``pipeline_root``, where the submission sets one), the Trainer's
    checkpoint root and the Pusher's destination (compiled from the pipeline root unless set: a folder of the
    container is lost with it), and
    every data folder after ``parameter_values`` overrides (a remote URI, or the image's bundled sample), and a
    benchmark-only spec's model folder (``train.init_from``).
    """
    schemes = REMOTE_SCHEMES[target]
    root, lasting, defaults, data_params, model = _spec_values(spec_path)
    given = {k: v for k, v in (parameter_values or {}).items() if k in data_params and isinstance(v, str)}
    values = {**defaults, **given}
    bad: List[str] = []
    if not str(pipeline_root or root or "").startswith(schemes):
        bad.append(f"pipeline root={pipeline_root or root}")
    bad += [f"{what}={folder}" for what, folder in sorted(lasting.items()) if not folder.startswith(schemes)]
    data = [f"{name}={value}" for name, value in sorted(values.items())
            if not value.startswith(schemes + (IMAGE_DATA_ROOT,))]
    unreachable_model = [f"train.init_from={model}"] if model is not None and not model.startswith(schemes) else []
    if bad or data or unreachable_model:
        fixes = ([f"recompile with --pipeline-root {schemes[0]}BUCKET/PATH"] if bad else []) + (
            [f"recompile with --set train.init_from={schemes[0]}BUCKET/PATH"] if unreachable_model else []) + (
            [f"pass --parameters '{{\"{data[0].split('=')[0]}\": \"{schemes[0]}...\"}}' for each data folder (or "
             f"name the pipeline image's bundled sample under {IMAGE_DATA_ROOT})"] if data else [])
        raise CloudConfigError(f"{spec_path} cannot run on {target} (paths must be {' or '.join(schemes)}): "
                               f"{', '.join(bad + unreachable_model + data)}; fix: {'; '.join(fixes)}")


def google_credentials():
    """Google's credential errors become one :class:`CloudAuthError` saying how to authenticate
    (:func:`components.cloud_auth.google_credentials`, the rule the Model Registry upload shares)."""
    return cloud_auth.google_credentials(CloudAuthError)


@dataclass
class VertexTarget:
    project: str
    region: str
    pipeline_root: str  # gs://bucket/path
    service_account: Optional[str] = None
    network: Optional[str] = None
    labels: Optional[Dict[str, str]] = None

    def validate(self) -> "VertexTarget":
        missing = [n for n in ("project", "region", "pipeline_root") if not getattr(self, n)]
        if missing:
            raise CloudConfigError(f"Vertex AI submission needs {', '.join(missing)} (flags --project/--region/--pipeline-root)")
        if not self.pipeline_root.startswith("gs://"):
            raise CloudConfigError(f"--pipeline-root must be a gs:// URI for Vertex AI, got {self.pipeline_root!r}")
        return self


def backend_caching(enable_caching: bool) -> Optional[bool]:
    """What a submission sends as ``enable_caching``: None (every task as compiled) when caching is on, False when it
    is off. The Vertex AI SDK and ``kfp.Client`` write a True or False into every task of the spec, and True would
    cache the DataSnapshot task, whose caching the spec turns off so that it resolves the data on every tick
    (:mod:`pipeline.tasks.snapshot_task`)."""
    return None if enable_caching else False


def build_pipeline_job(template_path: str, target: VertexTarget, *, display_name: str,
                       parameter_values: Optional[Dict[str, Any]] = None, enable_caching: bool = True,
                       credentials=None):
    """A ``google.cloud.aiplatform.PipelineJob`` for the compiled spec (constructed offline)."""
    from google.cloud import aiplatform  # lazy: google.cloud.aiplatform (2.1 s)

    target.validate()
    check_spec_paths(template_path, "Vertex AI", parameter_values, pipeline_root=target.pipeline_root)
    with google_credentials():
        return aiplatform.PipelineJob(
            display_name=display_name,
            template_path=template_path,
            pipeline_root=target.pipeline_root,
            parameter_values=parameter_values or {},
            enable_caching=backend_caching(enable_caching),
            project=target.project,
            location=target.region,
            labels=target.labels,
            credentials=credentials,
        )


def submit_vertex(job, target: VertexTarget):
    """Send the job (network)."""
    with google_credentials():  # expired or revoked credentials surface here
        job.submit(service_account=target.service_account, network=target.network)
    return job


@dataclass
class ScheduleSpec:
    """A Vertex AI schedule's timing and limits. A tick that comes while ``max_concurrent_run_count`` runs still
    run is queued (``allow_queueing``, as ``run --wait`` does locally), not skipped: it then runs after them, cached
    where nothing changed."""

    cron: str
    display_name: str
    max_concurrent_run_count: int = 1
    allow_queueing: bool = True
    max_run_count: Optional[int] = None
    start_time: Optional[str] = None
    end_time: Optional[str] = None

    def validate(self) -> "ScheduleSpec":
        fields = self.cron.split()
        if self.cron.startswith("TZ="):
            fields = fields[1:]
        if len(fields) != 5:
            raise CloudConfigError(f"cron {self.cron!r} must have 5 fields (optionally prefixed by TZ=Area/City)")
        if self.max_concurrent_run_count < 1:
            raise CloudConfigError("--max-concurrent (an environment's schedule.max_concurrent_run_count) must be >= 1")
        return self


def build_schedule(job, spec: ScheduleSpec, credentials=None):
    """(``PipelineJobSchedule``, kwargs for its ``create``) — built offline."""
    from google.cloud import aiplatform  # lazy: google.cloud.aiplatform (2.1 s)

    spec.validate()
    with google_credentials():
        schedule = aiplatform.PipelineJobSchedule(pipeline_job=job, display_name=spec.display_name,
                                                  credentials=credentials, project=job.project,
                                                  location=job.location)
    create_kwargs = {"cron": spec.cron, "max_concurrent_run_count": spec.max_concurrent_run_count,
                     "allow_queueing": spec.allow_queueing, "max_run_count": spec.max_run_count,
                     "start_time": spec.start_time, "end_time": spec.end_time}
    return schedule, create_kwargs


def create_schedule(schedule, create_kwargs: Dict[str, Any], service_account: Optional[str] = None,
                    network: Optional[str] = None):
    """Send the schedule (network)."""
    with google_credentials():
        schedule.create(service_account=service_account, network=network, **create_kwargs)
    return schedule


# -- existing schedules: list / pause / resume ----------------------------------------------------------------
SCHEDULE_STATES = ("ACTIVE", "PAUSED", "COMPLETED")


def schedule_filter(display_name: Optional[str] = None, state: Optional[str] = None) -> Optional[str]:
    """The ``filter`` string of ``ListSchedules`` (AIP-160), e.g. ``display_name="albert-weekly" AND state="ACTIVE"``."""
    parts = []
    if display_name:
        parts.append(f'display_name="{display_name}"')
    if state:
        if state.upper() not in SCHEDULE_STATES:
            # A caller's argument, no user setting (the CLI lists schedules by display name only): a bug if it happens.
            raise ValueError(f"schedule state must be one of {', '.join(SCHEDULE_STATES)}, got {state!r}")
        parts.append(f'state="{state.upper()}"')
    return " AND ".join(parts) or None


def schedule_resource_name(schedule: str, project: str, region: str) -> str:
    """``projects/P/locations/R/schedules/ID`` from an id or a full resource name."""
    if not schedule:
        raise CloudConfigError("schedules needs SCHEDULE, a schedule id or resource name")
    if schedule.startswith("projects/"):
        return schedule
    if "/" in schedule:
        raise CloudConfigError(f"{schedule!r} is neither a schedule id nor projects/P/locations/R/schedules/ID")
    return f"projects/{project}/locations/{region}/schedules/{schedule}"


def list_schedules(project: str, region: str, *, display_name: Optional[str] = None, state: Optional[str] = None,
                   order_by: str = "create_time desc", credentials=None):
    """``aiplatform.PipelineJobSchedule.list(filter=...)`` for the project/region (network)."""
    from google.cloud import aiplatform  # lazy: google.cloud.aiplatform (2.1 s)

    if not (project and region):
        raise CloudConfigError("listing schedules needs --project and --region (or an environment's, --env)")
    return aiplatform.PipelineJobSchedule.list(filter=schedule_filter(display_name, state), order_by=order_by,
                                               project=project, location=region, credentials=credentials)


def get_schedule(schedule: str, project: str, region: str, credentials=None):
    """``aiplatform.PipelineJobSchedule.get`` by id or resource name (network)."""
    from google.cloud import aiplatform  # lazy: google.cloud.aiplatform (2.1 s)

    return aiplatform.PipelineJobSchedule.get(schedule_resource_name(schedule, project, region), project=project,
                                              location=region, credentials=credentials)


def pause_schedule(schedule: str, project: str, region: str, credentials=None):
    """ACTIVE → PAUSED (``PipelineJobSchedule.pause``)."""
    obj = get_schedule(schedule, project, region, credentials)
    obj.pause()
    return obj


def resume_schedule(schedule: str, project: str, region: str, catch_up: bool = False, credentials=None):
    """PAUSED → ACTIVE. ``catch_up`` backfills the runs missed while paused.

    ``PipelineJobSchedule.resume(catch_up=...)`` does not forward ``catch_up`` to the API (SDK 1.x), so the
    ``ResumeSchedule`` request is sent through the same client with the flag set.
    """
    obj = get_schedule(schedule, project, region, credentials)
    obj.api_client.resume_schedule(name=obj.resource_name, catch_up=catch_up)
    return obj


# -- Kubeflow Pipelines -------------------------------------------------------------------------------------------
def kfp_package(spec_path: str, output_path: Optional[str] = None, pipeline_root: Optional[str] = None) -> str:
    """A KFP v2 package (IR YAML) for ``spec_path``; returns its path.

    ``compile`` writes a Vertex ``PipelineJob`` JSON (``{"displayName", "pipelineSpec", "runtimeConfig"}``); the KFP
    API and ``kfp run create`` take the bare ``PipelineSpec`` as ``.yaml``. The package is that same spec with two
    facts of the job moved into it, as KFP expects them: the pipeline root (``runtimeConfig.gcsOutputDirectory`` or
    ``pipeline_root``) becomes ``defaultPipelineRoot``, and each compiled parameter value becomes the parameter's
    ``defaultValue`` (so a run given no arguments runs the compiled configuration, as on Vertex AI). A
    ``.yaml``/``.yml`` package is returned unchanged. Either must be schema 2.1 (:mod:`pipeline.cloud.spec`): the
    open-source KFP v2 driver gives a 2.0 spec's tasks no parameters at all.
    """
    import yaml  # lazy: yaml (0.02 s)

    if spec_path.endswith((".tar.gz", ".tgz", ".zip")):
        return spec_path
    try:
        data, pipeline_spec = spec.load(spec_path)
        spec.check_schema(spec_path, pipeline_spec, "open-source Kubeflow Pipelines passes no parameters to "
                                                    "the tasks of an older schema")
    except spec.SpecError as exc:
        raise CloudConfigError(str(exc)) from None
    if spec_path.endswith((".yaml", ".yml")):
        return spec_path
    pipeline_spec = copy.deepcopy(pipeline_spec)
    root = pipeline_root or data.get("runtimeConfig", {}).get("gcsOutputDirectory")
    if root and not pipeline_spec.get("defaultPipelineRoot"):
        pipeline_spec["defaultPipelineRoot"] = root
    declared = pipeline_spec["root"].get("inputDefinitions", {}).get("parameters", {})
    for name, value in spec.parameter_defaults(data).items():
        if name in declared:
            declared[name].update(defaultValue=value, isOptional=True)
    if output_path is None:
        base = spec_path[:-5] if spec_path.endswith(".json") else spec_path
        output_path = base + ".kfp.yaml"
    with open(output_path, "w") as f:
        yaml.safe_dump(pipeline_spec, f, sort_keys=True)
    return output_path


def kfp_cli_command(package_path: str, host: str, *, run_name: str, experiment_name: str = "albert-tfx",
                    arguments: Optional[Dict[str, Any]] = None) -> str:
    """The equivalent ``kfp`` CLI command line (KFP SDK 2.x: ``kfp run create``; 1.x called it ``kfp run submit``)."""
    args = ["kfp", "--endpoint", host, "run", "create", "--experiment-name", experiment_name,
            "--run-name", run_name, "--package-file", package_path]
    for key, value in sorted((arguments or {}).items()):
        args.append(f"{key}={value if isinstance(value, str) else json.dumps(value)}")
    return " ".join(shlex.quote(a) for a in args)


def submit_kfp(package_path: str, host: str, *, run_name: str, experiment_name: str = "albert-tfx",
               arguments: Optional[Dict[str, Any]] = None, enable_caching: bool = True,
               pipeline_root: Optional[str] = None, service_account: Optional[str] = None, client=None):
    """The ``kfp run create`` path: create a run of the compiled package on a KFP endpoint.

    The compiled Vertex JSON is converted to a KFP package first (:func:`kfp_package`, written next to it as
    ``*.kfp.yaml``); then ``kfp.Client.create_run_from_pipeline_package`` gets-or-creates the experiment and sends
    ``POST /apis/v2beta1/runs`` with the run name, the pipeline spec, the parameters and the pipeline root.
    """
    if not host and client is None:
        raise CloudConfigError("Kubeflow submission needs --endpoint (the KFP API host)")
    check_spec_paths(package_path, "Kubeflow Pipelines", arguments, pipeline_root=pipeline_root)
    package = kfp_package(package_path, pipeline_root=pipeline_root)
    if client is None:
        import kfp  # lazy: kfp (0.5 s)

        client = kfp.Client(host=host)
    return client.create_run_from_pipeline_package(
        pipeline_file=package, arguments=arguments or {}, run_name=run_name,
        experiment_name=experiment_name, enable_caching=backend_caching(enable_caching), pipeline_root=pipeline_root,
        service_account=service_account)
