"""Where a compiled spec is sent, and the one way it is sent there.

``albert-pipeline submit`` and ``schedule`` take their target either from flags (``--project``, ``--endpoint``, …)
or from an environment of ``infra/environments.yaml`` (``--env NAME``). Both forms build one
:class:`Deployment` (:func:`from_flags`, :func:`from_environment`), and :func:`submit` and :func:`schedule` send
it, so an option cannot reach one form's request and not the other's (``tests/test_deploy.py`` checks every
option through both; :func:`submit_env` and :func:`schedule_env` are the environment form in one call).
:mod:`pipeline.cloud.submit` builds and sends the requests themselves; :mod:`pipeline.cloud.environments` reads the
environments and never imports this module.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any, Dict, Optional

from config.errors import MissingInputError
from pipeline.cloud import submit as cloud
from pipeline.cloud.submit import CloudConfigError, ScheduleSpec, VertexTarget
from pipeline.cloud.environments import Environment, EnvironmentConfigError

DEFAULT_EXPERIMENT = "albert-tfx"  # the KFP experiment runs are filed under
DEFAULT_RUN_NAME = "albert-tfx"  # the flag form's display name (an environment's: albert-tfx-NAME)


@dataclass(frozen=True)
class Deployment:
    """A compiled spec's destination: Vertex AI Pipelines (``kind="vertex"``) or a Kubeflow Pipelines endpoint."""

    kind: str
    run_name: str
    pipeline_root: Optional[str] = None
    project: Optional[str] = None
    region: Optional[str] = None
    service_account: Optional[str] = None
    network: Optional[str] = None
    labels: Dict[str, str] = field(default_factory=dict)
    kfp_endpoint: Optional[str] = None
    experiment: str = DEFAULT_EXPERIMENT
    enable_caching: bool = True
    parameters: Dict[str, Any] = field(default_factory=dict)
    source: str = "the command line"  # what it was built from, for messages

    def vertex_target(self) -> VertexTarget:
        if self.kind != "vertex":
            raise CloudConfigError(f"{self.source} targets Kubeflow Pipelines ({self.kfp_endpoint}); Vertex AI "
                                   f"schedules need a Vertex AI target")
        return VertexTarget(project=self.project, region=self.region, pipeline_root=self.pipeline_root,
                            service_account=self.service_account, network=self.network,
                            labels=dict(self.labels) or None).validate()


def parse_parameters(text: Optional[str]) -> Dict[str, Any]:
    """``--parameters``: a JSON object of pipeline parameter values."""
    if not text:
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CloudConfigError(f"--parameters is not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise CloudConfigError("--parameters must be a JSON object")
    return value


def from_flags(args) -> Deployment:
    """The ``--project/--region/--pipeline-root/--endpoint/…`` form."""
    labels = {}
    for item in args.label or []:
        if "=" not in item:
            raise CloudConfigError(f"--label {item!r} must be KEY=VALUE")
        key, value = item.split("=", 1)
        labels[key] = value
    return Deployment(
        kind="kfp" if getattr(args, "endpoint", None) else "vertex", run_name=args.run_name or DEFAULT_RUN_NAME,
        pipeline_root=args.pipeline_root, project=args.project, region=args.region,
        service_account=args.service_account, network=args.network, labels=labels,
        kfp_endpoint=getattr(args, "endpoint", None), experiment=getattr(args, "experiment", None) or DEFAULT_EXPERIMENT,
        enable_caching=not getattr(args, "no_cache", False), parameters=parse_parameters(args.parameters))


def from_environment(env: Environment, run_name: Optional[str] = None, parameters: Optional[Dict[str, Any]] = None,
                     enable_caching: Optional[bool] = None) -> Deployment:
    """An environment of ``infra/environments.yaml`` (validated), with the command's run name and parameters."""
    env.validate()
    if env.kind == "local":
        raise EnvironmentConfigError(f"environment {env.name!r} is local: use `albert-pipeline run`, not submit")
    return Deployment(
        kind=env.kind, run_name=run_name or f"albert-tfx-{env.name}", pipeline_root=env.pipeline_root,
        project=env.project, region=env.region, service_account=env.service_account, network=env.network,
        labels=dict(env.labels), kfp_endpoint=env.kfp_endpoint, experiment=env.experiment,
        enable_caching=env.enable_caching if enable_caching is None else enable_caching,
        parameters={**env.parameters, **(parameters or {})}, source=f"environment {env.name!r}")


def _check_spec(spec: str) -> None:
    if not os.path.exists(spec):
        raise MissingInputError(f"compiled spec not found: {spec} (run `albert-pipeline compile --env NAME` or "
                                f"`albert-pipeline compile --output {spec}` first)")


def submit(deployment: Deployment, spec: str, *, credentials=None, client=None, send: bool = True):
    """Submit ``spec``: a Vertex AI ``PipelineJob`` (returned; ``send=False`` builds it only) or a KFP run (its
    ``RunPipelineResult``). Every check happens before anything is sent."""
    _check_spec(spec)
    d = deployment
    if d.kind == "kfp":
        return cloud.submit_kfp(spec, d.kfp_endpoint, run_name=d.run_name, experiment_name=d.experiment,
                                arguments=d.parameters, enable_caching=d.enable_caching,
                                pipeline_root=d.pipeline_root, service_account=d.service_account, client=client)
    target = d.vertex_target()
    job = cloud.build_pipeline_job(spec, target, display_name=d.run_name, parameter_values=d.parameters,
                                   enable_caching=d.enable_caching, credentials=credentials)
    return cloud.submit_vertex(job, target) if send else job


def schedule(deployment: Deployment, spec: str, schedule_spec: ScheduleSpec, *, credentials=None,
             send: bool = True):
    """A Vertex AI schedule of ``spec`` at ``schedule_spec`` (cron and limits); returns (schedule, the kwargs of
    its ``create``). ``send=False`` builds it only."""
    _check_spec(spec)
    target = deployment.vertex_target()
    job = cloud.build_pipeline_job(spec, target, display_name=deployment.run_name,
                                   parameter_values=deployment.parameters, enable_caching=deployment.enable_caching,
                                   credentials=credentials)
    schedule_obj, kwargs = cloud.build_schedule(job, schedule_spec.validate(), credentials=credentials)
    if send:
        cloud.create_schedule(schedule_obj, kwargs, service_account=target.service_account, network=target.network)
    return schedule_obj, kwargs


def submit_env(env: Environment, spec: str, *, run_name: Optional[str] = None,
               parameters: Optional[Dict[str, Any]] = None, credentials=None, client=None, send: bool = True):
    """:func:`submit` to an environment: :func:`from_environment`, then the path the flag form takes too. Returns
    the PipelineJob (``send=False``: built, not sent) or the KFP result."""
    return submit(from_environment(env, run_name, parameters), spec, credentials=credentials, client=client,
                  send=send)


def schedule_env(env: Environment, spec: str, *, run_name: Optional[str] = None,
                 parameters: Optional[Dict[str, Any]] = None, cron: Optional[str] = None,
                 max_concurrent_run_count: Optional[int] = None, max_run_count: Optional[int] = None,
                 start_time: Optional[str] = None, end_time: Optional[str] = None, credentials=None,
                 send: bool = True):
    """:func:`schedule` in an environment, at its ``schedule:`` settings (overridable here)."""
    deployment = from_environment(env, run_name, parameters)
    schedule_spec = env.schedule_spec(deployment.run_name, cron=cron, max_run_count=max_run_count,
                                      max_concurrent_run_count=max_concurrent_run_count, start_time=start_time,
                                      end_time=end_time)
    return schedule(deployment, spec, schedule_spec, credentials=credentials, send=send)
