"""Cloud submission: Vertex AI Pipelines (submit, schedule) and a Kubeflow Pipelines endpoint.

Each action is split into *build* (construct the request object, offline, testable) and *send*
(one call that needs credentials and network), so tests can assert on exactly what would be sent.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Optional


class CloudConfigError(ValueError):
    """A required cloud setting is missing; raised before anything is sent."""


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
            raise CloudConfigError(f"pipeline_root must be a gs:// URI for Vertex AI, got {self.pipeline_root!r}")
        return self


def build_pipeline_job(template_path: str, target: VertexTarget, *, display_name: str,
                       parameter_values: Optional[Dict[str, Any]] = None, enable_caching: bool = True,
                       credentials=None):
    """A ``google.cloud.aiplatform.PipelineJob`` for the compiled spec (constructed offline)."""
    from google.cloud import aiplatform

    target.validate()
    return aiplatform.PipelineJob(
        display_name=display_name,
        template_path=template_path,
        pipeline_root=target.pipeline_root,
        parameter_values=parameter_values or {},
        enable_caching=enable_caching,
        project=target.project,
        location=target.region,
        labels=target.labels,
        credentials=credentials,
    )


def submit_vertex(job, target: VertexTarget):
    """Send the job (network)."""
    job.submit(service_account=target.service_account, network=target.network)
    return job


@dataclass
class ScheduleSpec:
    cron: str
    display_name: str
    max_concurrent_run_count: int = 1
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
            raise CloudConfigError("max_concurrent_run_count must be >= 1")
        return self


def build_schedule(job, spec: ScheduleSpec, credentials=None):
    """(``PipelineJobSchedule``, kwargs for its ``create``) — built offline."""
    from google.cloud import aiplatform

    spec.validate()
    schedule = aiplatform.PipelineJobSchedule(pipeline_job=job, display_name=spec.display_name,
                                              credentials=credentials, project=job.project,
                                              location=job.location)
    create_kwargs = {"cron": spec.cron, "max_concurrent_run_count": spec.max_concurrent_run_count,
                     "max_run_count": spec.max_run_count, "start_time": spec.start_time,
                     "end_time": spec.end_time}
    return schedule, create_kwargs


def create_schedule(schedule, create_kwargs: Dict[str, Any], service_account: Optional[str] = None):
    """Send the schedule (network)."""
    schedule.create(service_account=service_account, **create_kwargs)
    return schedule


def submit_kfp(package_path: str, host: str, *, run_name: str, experiment_name: str = "albert-tfx",
               arguments: Optional[Dict[str, Any]] = None, enable_caching: bool = True, client=None):
    """The ``kfp run submit`` path: create a run of the compiled package on a KFP endpoint."""
    if not host and client is None:
        raise CloudConfigError("Kubeflow submission needs --endpoint (the KFP API host)")
    if client is None:
        import kfp

        client = kfp.Client(host=host)
    return client.create_run_from_pipeline_package(
        pipeline_file=package_path, arguments=arguments or {}, run_name=run_name,
        experiment_name=experiment_name, enable_caching=enable_caching)
