"""Cloud requests built offline: Vertex schedule, the KFP submission call, validation before sending."""
import json

import pytest

from pipeline import cloud

SPEC = {
    "displayName": "albert", "labels": {},
    "pipelineSpec": {"pipelineInfo": {"name": "albert"}, "root": {"dag": {"tasks": {}}}, "schemaVersion": "2.1.0",
                     "sdkVersion": "tfx-1.21.0", "components": {}, "deploymentSpec": {"executors": {}}},
    "runtimeConfig": {"gcsOutputDirectory": "gs://placeholder"},
}


@pytest.fixture
def spec_path(tmp_path):
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(SPEC))
    return str(path)


@pytest.fixture
def target():
    return cloud.VertexTarget(project="p", region="europe-west4", pipeline_root="gs://b/root",
                              service_account="runner@p.iam.gserviceaccount.com")


def test_schedule_is_built_with_cron_and_limits(spec_path, target):
    from google.auth.credentials import AnonymousCredentials

    creds = AnonymousCredentials()
    job = cloud.build_pipeline_job(spec_path, target, display_name="albert-weekly", credentials=creds)
    schedule, kwargs = cloud.build_schedule(job, cloud.ScheduleSpec(
        cron="TZ=Europe/Paris 0 3 * * 1", display_name="albert-weekly", max_concurrent_run_count=2),
        credentials=creds)
    assert kwargs["cron"] == "TZ=Europe/Paris 0 3 * * 1" and kwargs["max_concurrent_run_count"] == 2
    assert schedule._gca_resource.display_name == "albert-weekly"
    assert job._gca_resource.runtime_config.gcs_output_directory == "gs://b/root"


@pytest.mark.parametrize("cron", ["0 3 * *", "every monday", "TZ=UTC 0 3 * * 1 2"])
def test_bad_cron_is_rejected_before_sending(cron):
    with pytest.raises(cloud.CloudConfigError, match="5 fields"):
        cloud.ScheduleSpec(cron=cron, display_name="x").validate()


@pytest.mark.parametrize("field,value,message", [
    ("project", "", "needs project"), ("pipeline_root", "/local/path", "must be a gs:// URI")])
def test_vertex_target_is_validated(field, value, message):
    kwargs = {"project": "p", "region": "r", "pipeline_root": "gs://b"}
    kwargs[field] = value
    with pytest.raises(cloud.CloudConfigError, match=message):
        cloud.VertexTarget(**kwargs).validate()


def test_kfp_submission_sends_the_package_and_parameters(spec_path):
    calls = []

    class RecordingClient:
        def create_run_from_pipeline_package(self, **kwargs):
            calls.append(kwargs)
            return "run-1"

    run = cloud.submit_kfp(spec_path, "", run_name="nightly", arguments={"seed": 3}, client=RecordingClient())
    assert run == "run-1"
    assert calls == [{"pipeline_file": spec_path, "arguments": {"seed": 3}, "run_name": "nightly",
                      "experiment_name": "albert-tfx", "enable_caching": True}]


def test_kfp_submission_needs_an_endpoint(spec_path):
    with pytest.raises(cloud.CloudConfigError, match="--endpoint"):
        cloud.submit_kfp(spec_path, "", run_name="x")
