"""Per-environment settings (``infra/environments.yaml``): where the pipeline runs and how its Beam steps run.

One YAML file names every environment (``local``, ``vertex-dev``, ``vertex-paper``, ``kfp-flink``, ...). This module
loads it with ``yaml.safe_load``, resolves ``${VAR}`` / ``${VAR:-default}`` (environment variables) and ``{field}``
(other fields of the same environment), validates it **before anything is compiled or sent** (missing project,
region, bucket or pipeline root → :class:`EnvironmentConfigError` naming the environment and the field; placeholder
values such as ``YOUR_PROJECT`` are rejected for cloud environments) and turns it into:

* :func:`beam_args` — the Beam pipeline args of the Beam components (CorpusGen, PretrainingDataGen, ...);
* :func:`vertex_target` — the :class:`pipeline.cloud.submit.VertexTarget` for Vertex AI Pipelines;
* :func:`compile_for_env` — what ``albert-pipeline compile --env NAME`` calls; :func:`list_env_schedules`,
  :func:`pause_env_schedule`, :func:`resume_env_schedule` for ``albert-pipeline schedules list|pause|resume --env
  NAME``. The argument parsing and printing of those commands live in :mod:`pipeline.cloud.cli_env`. ``submit`` and
  ``schedule --env NAME`` go through :mod:`pipeline.cloud.deploy`, which reads an environment; this module never imports it.

Beam runners (``beam.runner``) and the args they produce
-------------------------------------------------------
``DirectRunner`` (local; Beam's FnApiRunner, named directly: :mod:`components.beam_options` says why)::

    --runner=FnApiRunner --direct_running_mode=multi_processing --direct_num_workers=0   # 0 = one per core

``DataflowRunner``::

    --runner=DataflowRunner --project=P --region=R --temp_location=gs://B/.../temp
    --staging_location=gs://B/.../staging --sdk_container_image=IMAGE   (or --setup_file=./setup.py)
    --machine_type=n2-standard-4 --num_workers=1 --max_num_workers=4 --autoscaling_algorithm=THROUGHPUT_BASED
    --disk_size_gb=50 --service_account_email=SA --experiments=use_runner_v2 --labels=env=dev ...

``FlinkRunner`` (portable; the SDK harness is this image)::

    --runner=FlinkRunner --flink_master=flink-jobmanager:8081 --environment_type=DOCKER
    --environment_config=IMAGE --parallelism=8

``SparkRunner`` (portable)::

    --runner=SparkRunner --spark_master_url=spark://spark-master:7077 --environment_type=DOCKER
    --environment_config=IMAGE

``PortableRunner`` (any Beam job service)::

    --runner=PortableRunner --job_endpoint=localhost:8099 --environment_type=EXTERNAL --environment_config=localhost:50000

Any other key under ``beam:`` becomes ``--key=value`` (lists repeat the flag, ``true`` becomes a bare ``--key``), and
``beam.extra_args`` is appended verbatim, so every Beam option is reachable without code changes.
"""
from __future__ import annotations

import copy
import os
import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence

import yaml

from components.beam_options import LOCAL_RUNNER
from config.errors import MissingInputError
from config.schema import deep_merge
from pipeline.cloud import submit as cloud
from pipeline.cloud.submit import CloudConfigError, ScheduleSpec, VertexTarget
from pipeline.settings.home import PROJECT_HOME

DEFAULT_ENVIRONMENTS_FILE = os.path.join(PROJECT_HOME, "infra", "environments.yaml")
KINDS = ("local", "vertex", "kfp")
RUNNERS = ("DirectRunner", "DataflowRunner", "FlinkRunner", "SparkRunner", "PortableRunner")
# Placeholders that must never reach a cloud request.
PLACEHOLDER_RE = re.compile(r"YOUR[_-]|PROJECT[_-]ID|MY[_-]PROJECT|CHANGE[_-]?ME|REPLACE[_-]?ME|<[^>]*>|\bTODO\b",
                            re.IGNORECASE)
_ENV_VAR_RE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_FIELD_REF_RE = re.compile(r"\{([a-z_]+)\}")
_TOP_LEVEL_FIELDS = ("kind", "preset", "config_overrides", "project", "region", "bucket", "pipeline_root", "image",
                     "service_account", "network", "kfp_endpoint", "labels", "parameters", "enable_caching", "beam",
                     "schedule", "experiment")


class EnvironmentConfigError(CloudConfigError):
    """An environment in ``infra/environments.yaml`` is incomplete or wrong; raised before anything is sent."""


@dataclass
class Environment:
    name: str
    kind: str = "local"
    preset: str = "sample"
    config_overrides: List[str] = field(default_factory=list)
    project: Optional[str] = None
    region: Optional[str] = None
    bucket: Optional[str] = None
    pipeline_root: Optional[str] = None
    image: Optional[str] = None
    service_account: Optional[str] = None
    network: Optional[str] = None
    kfp_endpoint: Optional[str] = None
    experiment: str = "albert-tfx"
    labels: Dict[str, str] = field(default_factory=dict)
    parameters: Dict[str, Any] = field(default_factory=dict)
    enable_caching: bool = True
    beam: Dict[str, Any] = field(default_factory=dict)
    schedule: Dict[str, Any] = field(default_factory=dict)

    @property
    def is_cloud(self) -> bool:
        return self.kind != "local"

    def to_dict(self) -> Dict[str, Any]:
        return {k: copy.deepcopy(getattr(self, k)) for k in ("name",) + _TOP_LEVEL_FIELDS}

    # -- validation -------------------------------------------------------------------------------------------
    def _fail(self, fieldname: str, problem: str) -> None:
        raise EnvironmentConfigError(f"environment {self.name!r}: {fieldname} {problem}")

    def validate(self) -> "Environment":
        """Every check that can fail before a request is sent; returns self."""
        if self.kind not in KINDS:
            self._fail("kind", f"must be one of {', '.join(KINDS)}, got {self.kind!r}")
        from pipeline.settings.configs import PRESETS  # lazy: pipeline.settings.configs (0.02 s)

        if self.preset not in PRESETS:
            self._fail("preset", f"must be one of {', '.join(sorted(PRESETS))}, got {self.preset!r}")
        if not isinstance(self.config_overrides, list) or not all(isinstance(o, str) and "=" in o
                                                                   for o in self.config_overrides):
            self._fail("config_overrides", "must be a list of 'section.key=value' strings")
        for name, value in (("labels", self.labels), ("parameters", self.parameters), ("beam", self.beam),
                            ("schedule", self.schedule)):
            if not isinstance(value, dict):
                self._fail(name, f"must be a mapping, got {type(value).__name__}")
        required = {"local": ("pipeline_root",),
                    "vertex": ("project", "region", "bucket", "pipeline_root", "image"),
                    "kfp": ("kfp_endpoint", "pipeline_root", "image")}[self.kind]
        for name in required:
            if not getattr(self, name):
                self._fail(name, f"is required for a {self.kind} environment (set it in the environments file "
                                 f"or with --env-set {name}=...)")
        if self.is_cloud:
            self._reject_placeholders()
        if self.kind == "vertex":
            if not str(self.bucket).startswith("gs://"):
                self._fail("bucket", f"must be a gs:// URI, got {self.bucket!r}")
            if not str(self.pipeline_root).startswith("gs://"):
                self._fail("pipeline_root", f"must be a gs:// URI for Vertex AI, got {self.pipeline_root!r}")
            if not re.fullmatch(r"[a-z][a-z0-9-]{4,28}[a-z0-9]", str(self.project)):
                self._fail("project", f"is not a valid Google Cloud project id: {self.project!r}")
            if not re.fullmatch(r"[a-z]+-[a-z]+[0-9]+", str(self.region)):
                self._fail("region", f"is not a Google Cloud region (e.g. europe-west4): {self.region!r}")
            if self.service_account and not re.fullmatch(r"[^@\s]+@[^@\s]+\.iam\.gserviceaccount\.com",
                                                         self.service_account):
                self._fail("service_account", f"must be an e-mail ending in .iam.gserviceaccount.com, "
                                              f"got {self.service_account!r}")
        if self.kind == "kfp" and not re.match(r"https?://", str(self.kfp_endpoint)):
            self._fail("kfp_endpoint", f"must start with http:// or https://, got {self.kfp_endpoint!r}")
        for key, value in self.labels.items():  # Vertex AI / Dataflow label rules
            if not re.fullmatch(r"[a-z][a-z0-9_-]{0,62}", str(key)) or not re.fullmatch(r"[a-z0-9_-]{0,63}",
                                                                                       str(value)):
                self._fail("labels", f"{key}={value}: keys/values must be lowercase letters, digits, _ or - "
                                     "(keys start with a letter, at most 63 characters)")
        if self.schedule:
            self.schedule_spec()  # raises on a bad cron / limits
        beam_args(self)  # raises on incomplete runner settings
        return self

    def _reject_placeholders(self) -> None:
        def walk(prefix: str, value: Any) -> None:
            if isinstance(value, dict):
                for k, v in value.items():
                    walk(f"{prefix}.{k}", v)
            elif isinstance(value, list):
                for i, v in enumerate(value):
                    walk(f"{prefix}[{i}]", v)
            elif isinstance(value, str) and PLACEHOLDER_RE.search(value):
                raise EnvironmentConfigError(
                    f"environment {self.name!r}: {prefix} still holds a placeholder ({value!r}); set the real "
                    f"value in the environments file or with --env-set {prefix}=...")

        for name in _TOP_LEVEL_FIELDS:
            walk(name, getattr(self, name))

    def schedule_spec(self, display_name: Optional[str] = None, **overrides: Any) -> ScheduleSpec:
        settings = {**self.schedule, **{k: v for k, v in overrides.items() if v is not None}}
        unknown = set(settings) - {"cron", "max_concurrent_run_count", "allow_queueing", "max_run_count", "start_time",
                                   "end_time"}
        if unknown:
            self._fail("schedule", f"has unknown keys {sorted(unknown)}")
        if not settings.get("cron"):
            self._fail("schedule.cron", "is required to create a schedule (environments file or --cron)")
        try:
            return ScheduleSpec(display_name=display_name or f"albert-tfx-{self.name}", **{
                k: (str(v) if k in ("cron", "start_time", "end_time") else v) for k, v in settings.items()
            }).validate()
        except CloudConfigError as exc:
            raise EnvironmentConfigError(f"environment {self.name!r}: schedule: {exc}") from None


# -- loading --------------------------------------------------------------------------------------------------
def load_environments(path: Optional[str] = None) -> Dict[str, Dict[str, Any]]:
    """The raw (unresolved) environment mappings of ``path``, defaults merged in."""
    path = path or os.environ.get("ALBERT_TFX_ENVIRONMENTS") or DEFAULT_ENVIRONMENTS_FILE
    if not os.path.exists(path):
        raise MissingInputError(f"environments file not found: {path}")
    try:
        with open(path, encoding="utf-8") as f:
            data = yaml.safe_load(f) or {}
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise EnvironmentConfigError(f"{path}: not valid YAML ({str(exc).splitlines()[0]})") from None
    if not isinstance(data, dict) or not isinstance(data.get("environments"), dict):
        raise EnvironmentConfigError(f"{path}: needs a top-level 'environments:' mapping")
    defaults = data.get("defaults") or {}
    envs = {}
    for name, body in data["environments"].items():
        if not isinstance(body, dict):
            raise EnvironmentConfigError(f"environment {name!r}: must be a mapping")
        envs[str(name)] = deep_merge(defaults, body)
    return envs


def environment_names(path: Optional[str] = None) -> List[str]:
    return list(load_environments(path))


def get_environment(name: str, path: Optional[str] = None, overrides: Optional[Sequence[str]] = None,
                    environ: Optional[Mapping[str, str]] = None, validate: bool = True) -> Environment:
    """Load, override (``field=value`` / ``beam.key=value``), resolve and validate one environment."""
    envs = load_environments(path)
    if name not in envs:
        raise EnvironmentConfigError(f"unknown environment {name!r}; choose one of {', '.join(envs)}")
    raw = copy.deepcopy(envs[name])
    for item in overrides or ():
        if "=" not in item:
            raise EnvironmentConfigError(f"environment {name!r}: --env-set {item!r} must be FIELD=VALUE")
        key, value = item.split("=", 1)
        _set_dotted(raw, key.strip(), yaml.safe_load(value) if value.strip() else "")
    unknown = set(raw) - set(_TOP_LEVEL_FIELDS)
    if unknown:
        raise EnvironmentConfigError(f"environment {name!r}: unknown field(s) {', '.join(sorted(unknown))}; "
                                     f"known: {', '.join(_TOP_LEVEL_FIELDS)}")
    resolved = _resolve(name, raw, os.environ if environ is None else environ)
    env = Environment(name=name, **resolved)
    env.labels = {str(k): str(v) for k, v in (env.labels or {}).items()}
    env.parameters = env.parameters or {}
    env.beam = env.beam or {}
    env.schedule = env.schedule or {}
    env.config_overrides = list(env.config_overrides or [])
    return env.validate() if validate else env


def _set_dotted(data: Dict[str, Any], key: str, value: Any) -> None:
    parts = key.split(".")
    for part in parts[:-1]:
        data = data.setdefault(part, {})
        if not isinstance(data, dict):
            raise EnvironmentConfigError(f"--env-set {key}: {part} is not a mapping")
    data[parts[-1]] = value


def _resolve(name: str, raw: Dict[str, Any], environ: Mapping[str, str]) -> Dict[str, Any]:
    """``${VAR}`` from ``environ`` everywhere, then ``{field}`` from the environment's own scalar fields."""

    def env_vars(path: str, value: Any) -> Any:
        if isinstance(value, dict):
            return {k: env_vars(f"{path}.{k}" if path else k, v) for k, v in value.items()}
        if isinstance(value, list):
            return [env_vars(f"{path}[{i}]", v) for i, v in enumerate(value)]
        if not isinstance(value, str):
            return value

        def sub(m: "re.Match[str]") -> str:
            var, default = m.group(1), m.group(2)
            if var in environ and environ[var] != "":
                return environ[var]
            if default is not None:
                return default
            raise EnvironmentConfigError(f"environment {name!r}: {path} needs the environment variable {var} "
                                         f"(export {var}=... or use --env-set {path}=...)")

        return _ENV_VAR_RE.sub(sub, value)

    data = env_vars("", raw)
    scalars = {"name": name, **{k: v for k, v in data.items() if isinstance(v, (str, int, float))}}

    def fields(path: str, value: Any, depth: int = 0) -> Any:
        if isinstance(value, dict):
            return {k: fields(f"{path}.{k}" if path else k, v) for k, v in value.items()}
        if isinstance(value, list):
            return [fields(f"{path}[{i}]", v) for i, v in enumerate(value)]
        if not isinstance(value, str) or depth > 5 or path.startswith("parameters"):
            return value

        def sub(m: "re.Match[str]") -> str:
            ref = m.group(1)
            if ref not in scalars:
                raise EnvironmentConfigError(f"environment {name!r}: {path} refers to {{{ref}}}, which is not set")
            return str(scalars[ref])

        out = _FIELD_REF_RE.sub(sub, value)
        return fields(path, out, depth + 1) if _FIELD_REF_RE.search(out) and out != value else out

    # Resolve scalar fields first (they may refer to each other, e.g. image -> region/project), then the rest.
    for _ in range(3):
        scalars = {"name": name, **{k: fields(k, v) for k, v in scalars.items() if k != "name"}}
    data.update({k: v for k, v in scalars.items() if k != "name"})
    return fields("", data)


# -- what each environment produces ---------------------------------------------------------------------------
def _flag(key: str, value: Any) -> List[str]:
    if value is None or value == "":
        return []
    if value is True:
        return [f"--{key}"]
    if value is False:
        return []
    if isinstance(value, (list, tuple)):
        return [a for v in value for a in _flag(key, v)]
    return [f"--{key}={value}"]


def beam_args(env: Environment) -> List[str]:
    """The Beam pipeline args for ``env``'s Beam components (validated; see the module docstring)."""
    beam = dict(env.beam or {})
    runner = beam.pop("runner", "DirectRunner")
    extra = list(beam.pop("extra_args", []) or [])
    where = f"environment {env.name!r}: beam"
    if runner not in RUNNERS:
        raise EnvironmentConfigError(f"{where}.runner must be one of {', '.join(RUNNERS)}, got {runner!r}")
    args = [f"--runner={LOCAL_RUNNER if runner == 'DirectRunner' else runner}"]

    if runner == "DirectRunner":
        mode = beam.pop("direct_running_mode", "multi_processing")
        if mode not in ("in_memory", "multi_threading", "multi_processing"):
            raise EnvironmentConfigError(f"{where}.direct_running_mode must be in_memory, multi_threading or "
                                         f"multi_processing, got {mode!r}")
        args += [f"--direct_running_mode={mode}", f"--direct_num_workers={int(beam.pop('direct_num_workers', 0))}"]
    elif runner == "DataflowRunner":
        if env.kind == "local" and not (env.project and env.region):
            raise EnvironmentConfigError(f"{where}: DataflowRunner needs project and region")
        for name in ("temp_location", "staging_location"):
            value = beam.get(name)
            if not value:
                raise EnvironmentConfigError(f"{where}.{name} is required for DataflowRunner")
            if not str(value).startswith("gs://"):
                raise EnvironmentConfigError(f"{where}.{name} must be a gs:// URI, got {value!r}")
        has_image, has_setup = bool(beam.get("sdk_container_image")), bool(beam.get("setup_file"))
        if has_image == has_setup:
            raise EnvironmentConfigError(f"{where}: DataflowRunner needs exactly one of sdk_container_image (the "
                                         "infra/Dockerfile image) or setup_file (./setup.py)")
        if beam.get("max_num_workers") is not None and int(beam["max_num_workers"]) < int(beam.get("num_workers", 1)):
            raise EnvironmentConfigError(f"{where}.max_num_workers must be >= num_workers")
        args += [f"--project={env.project}", f"--region={env.region}"]
        for name in ("temp_location", "staging_location", "sdk_container_image", "setup_file", "machine_type",
                     "num_workers", "max_num_workers", "autoscaling_algorithm", "disk_size_gb"):
            args += _flag(name, beam.pop(name, None))
        sa = beam.pop("service_account_email", env.service_account)
        args += _flag("service_account_email", sa)
        if env.network and "network" not in beam and "subnetwork" not in beam:
            args += _flag("network", env.network.rsplit("/", 1)[-1])
        labels = {**env.labels, **(beam.pop("labels", None) or {})}
        args += [f"--labels={k}={v}" for k, v in sorted(labels.items())]
    elif runner == "FlinkRunner":
        if not beam.get("flink_master"):
            raise EnvironmentConfigError(f"{where}.flink_master is required for FlinkRunner (host:port or [local])")
        for name in ("flink_master", "environment_type", "environment_config", "parallelism"):
            args += _flag(name, beam.pop(name, None))
    elif runner == "SparkRunner":
        if not beam.get("spark_master_url"):
            raise EnvironmentConfigError(f"{where}.spark_master_url is required for SparkRunner (spark://host:7077)")
        for name in ("spark_master_url", "environment_type", "environment_config"):
            args += _flag(name, beam.pop(name, None))
    elif runner == "PortableRunner":
        if not beam.get("job_endpoint"):
            raise EnvironmentConfigError(f"{where}.job_endpoint is required for PortableRunner")
        for name in ("job_endpoint", "environment_type", "environment_config"):
            args += _flag(name, beam.pop(name, None))
    for key, value in sorted(beam.items()):  # anything else is passed through as a Beam option
        args += _flag(key, value)
    return args + [str(a) for a in extra]


def vertex_target(env: Environment) -> VertexTarget:
    if env.kind != "vertex":
        raise EnvironmentConfigError(f"environment {env.name!r} is kind {env.kind!r}, not a Vertex AI environment")
    return VertexTarget(project=env.project, region=env.region, pipeline_root=env.pipeline_root,
                        service_account=env.service_account, network=env.network,
                        labels=dict(env.labels) or None).validate()


def pipeline_config(env: Environment, config_file: Optional[str] = None,
                    overrides: Optional[Sequence[str]] = None):
    """The PipelineConfig for ``env``: its preset, its ``config_overrides``, then the caller's file/overrides,
    placed at the environment's pipeline root with its Beam args, then resolved for a compiled spec (not local)."""
    from pipeline.settings.configs import build_config  # lazy: pipeline.settings.configs (0.02 s)
    from pipeline.settings.resolve import resolve_config  # lazy: pipeline.settings.resolve, logging (0.03 s)

    config = build_config(env.preset, config_file, list(env.config_overrides) + list(overrides or []),
                          pipeline_root=env.pipeline_root, beam_args=beam_args(env))
    return resolve_config(config, local=False)


def compile_for_env(env: Environment, output: str, *, config_file: Optional[str] = None,
                    overrides: Optional[Sequence[str]] = None, image: Optional[str] = None,
                    compile_fn=None) -> Dict[str, Any]:
    """Compile the KFP v2 / Vertex spec for ``env``: its image, pipeline root and Beam args flow into the spec."""
    env.validate()
    if image and env.is_cloud and PLACEHOLDER_RE.search(image):
        raise EnvironmentConfigError(f"environment {env.name!r}: image {image!r} is a placeholder")
    config = pipeline_config(env, config_file, overrides)
    if compile_fn is None:
        from pipeline.cloud.kubeflow_v2_runner import compile_pipeline as compile_fn  # lazy: tensorflow, apache_beam, tfx (6.2 s)
    compile_fn(config, output, image=image or env.image)
    return {"spec": output, "environment": env.name, "image": image or env.image,
            "pipeline_root": config.pipeline_root, "beam_pipeline_args": list(config.beam_args)}


def list_env_schedules(env: Environment, *, display_name: Optional[str] = None, state: Optional[str] = None,
                       credentials=None):
    target = vertex_target(env.validate())
    return cloud.list_schedules(target.project, target.region, display_name=display_name, state=state,
                                credentials=credentials)


def pause_env_schedule(env: Environment, schedule: str, credentials=None):
    target = vertex_target(env.validate())
    return cloud.pause_schedule(schedule, target.project, target.region, credentials=credentials)


def resume_env_schedule(env: Environment, schedule: str, catch_up: bool = False, credentials=None):
    target = vertex_target(env.validate())
    return cloud.resume_schedule(schedule, target.project, target.region, catch_up=catch_up,
                                 credentials=credentials)
