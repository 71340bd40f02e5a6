"""Cloud requests built offline and recorded at the transport: Vertex AI PipelineJob / schedules (real SDK objects,
anonymous credentials, the gapic RPC methods stubbed), and a real ``kfp.Client`` whose HTTP pool manager records the
requests. Nothing here can reach the network: sockets refuse to connect for every test in this module."""
import json
import socket

import pytest
import yaml

from pipeline.cloud import submit as cloud

IMAGE = "europe-west4-docker.pkg.dev/p-albert/albert/albert-tfx:abc123"
SPEC = {
    "displayName": "albert", "labels": {},
    "pipelineSpec": {
        "pipelineInfo": {"name": "albert"}, "schemaVersion": "2.1.0", "sdkVersion": "tfx-1.21.0",
        "root": {"dag": {"tasks": {}},
                 "inputDefinitions": {"parameters": {"num_train_steps": {"parameterType": "NUMBER_INTEGER"},
                                                     "sop_mode": {"parameterType": "STRING"}}}},
        "components": {},
        "deploymentSpec": {"executors": {"CorpusGen_executor": {"container": {
            "image": IMAGE, "command": ["python", "-m", "tfx.orchestration.kubeflow.v2.container.kubeflow_v2_run_executor"],
            "args": ["--runner=DataflowRunner", "--region=europe-west4"]}}}},
    },
    "runtimeConfig": {"gcsOutputDirectory": "gs://b/root"},
}
SA = "runner@p-albert.iam.gserviceaccount.com"


@pytest.fixture(autouse=True)
def no_network(monkeypatch):
    """Any attempt to open a TCP connection fails the test."""
    def refuse(*args, **kwargs):
        raise AssertionError(f"network access attempted: {args[1:] if len(args) > 1 else args}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)  # not even a DNS lookup


@pytest.fixture
def spec_path(tmp_path):
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(SPEC))
    return str(path)


@pytest.fixture
def target():
    return cloud.VertexTarget(project="p-albert", region="europe-west4", pipeline_root="gs://b/root",
                              service_account=SA, labels={"env": "dev"})


@pytest.fixture
def creds():
    from google.auth.credentials import AnonymousCredentials

    return AnonymousCredentials()


@pytest.fixture
def vertex_rpcs(monkeypatch):
    """Stub the gapic RPC methods (the last step before the wire) and record their requests."""
    from google.cloud.aiplatform.utils import gcs_utils
    from google.cloud.aiplatform_v1.services.pipeline_service import PipelineServiceClient
    from google.cloud.aiplatform_v1.services.schedule_service import ScheduleServiceClient
    from google.cloud.aiplatform_v1.types import pipeline_job as gca_pipeline_job
    from google.cloud.aiplatform_v1.types import schedule as gca_schedule

    calls = []

    def create_pipeline_job(self, parent=None, pipeline_job=None, pipeline_job_id=None, **kwargs):
        calls.append(("create_pipeline_job", {"parent": parent, "pipeline_job": pipeline_job,
                                              "pipeline_job_id": pipeline_job_id}))
        out = gca_pipeline_job.PipelineJob(pipeline_job)
        out.name = f"{parent}/pipelineJobs/{pipeline_job_id}"
        return out

    def create_schedule(self, parent=None, schedule=None, **kwargs):
        calls.append(("create_schedule", {"parent": parent, "schedule": schedule}))
        out = gca_schedule.Schedule(schedule)
        out.name = f"{parent}/schedules/123"
        return out

    def get_schedule(self, name=None, **kwargs):
        calls.append(("get_schedule", {"name": name}))
        return gca_schedule.Schedule(name=name, display_name="albert-weekly", cron="0 3 * * 1",
                                     state=gca_schedule.Schedule.State.ACTIVE)

    def list_schedules(self, request=None, **kwargs):
        calls.append(("list_schedules", {"request": request}))
        parent = request["parent"] if isinstance(request, dict) else request.parent
        return [gca_schedule.Schedule(name=f"{parent}/schedules/{i}", display_name="albert-weekly",
                                      cron="0 3 * * 1",
                                      create_pipeline_job_request={"parent": parent,
                                                                   "pipeline_job": {"display_name": "x"}})
                for i in (1, 2)]

    def pause_schedule(self, name=None, **kwargs):
        calls.append(("pause_schedule", {"name": name}))

    def resume_schedule(self, name=None, catch_up=None, **kwargs):
        calls.append(("resume_schedule", {"name": name, "catch_up": catch_up}))

    def bucket(**kwargs):
        calls.append(("create_bucket_if_missing", kwargs))

    monkeypatch.setattr(PipelineServiceClient, "create_pipeline_job", create_pipeline_job)
    for name, fn in (("create_schedule", create_schedule), ("get_schedule", get_schedule),
                     ("list_schedules", list_schedules), ("pause_schedule", pause_schedule),
                     ("resume_schedule", resume_schedule)):
        monkeypatch.setattr(ScheduleServiceClient, name, fn)
    monkeypatch.setattr(gcs_utils, "create_gcs_bucket_for_pipeline_artifacts_if_it_does_not_exist", bucket)
    return calls


def _only(calls, name):
    found = [kwargs for n, kwargs in calls if n == name]
    assert len(found) == 1, (name, calls)
    return found[0]


# -- Vertex AI PipelineJob -------------------------------------------------------------------------------------
def test_vertex_submit_request_carries_image_root_parameters_account_and_labels(spec_path, target, creds,
                                                                                vertex_rpcs):
    job = cloud.build_pipeline_job(spec_path, target, display_name="albert-dev",
                                   parameter_values={"num_train_steps": 500, "sop_mode": "pure"}, credentials=creds)
    cloud.submit_vertex(job, target)
    request = _only(vertex_rpcs, "create_pipeline_job")
    sent = request["pipeline_job"]
    assert request["parent"] == "projects/p-albert/locations/europe-west4"
    assert request["pipeline_job_id"].startswith("albert")
    assert sent.display_name == "albert-dev"
    assert sent.service_account == SA
    assert sent.labels["env"] == "dev"
    assert sent.runtime_config.gcs_output_directory == "gs://b/root"
    assert sent.runtime_config.parameter_values["num_train_steps"] == 500
    assert sent.runtime_config.parameter_values["sop_mode"] == "pure"
    executor = sent.pipeline_spec["deploymentSpec"]["executors"]["CorpusGen_executor"]["container"]
    assert executor["image"] == IMAGE
    assert "--runner=DataflowRunner" in executor["args"]
    assert job.resource_name.startswith("projects/p-albert/locations/europe-west4/pipelineJobs/albert")
    # The SDK's get-or-create of the pipeline-root bucket is the only other call, with the run-as account.
    bucket = _only(vertex_rpcs, "create_bucket_if_missing")
    assert bucket["output_artifacts_gcs_dir"] == "gs://b/root" and bucket["service_account"] == SA


def test_vertex_job_rejects_unknown_parameters_before_sending(spec_path, target, creds, vertex_rpcs):
    with pytest.raises(ValueError, match="not_a_param"):
        cloud.build_pipeline_job(spec_path, target, display_name="x", parameter_values={"not_a_param": 1},
                                 credentials=creds)
    assert vertex_rpcs == []


def test_schedule_is_built_with_cron_and_limits(spec_path, target, creds):
    job = cloud.build_pipeline_job(spec_path, target, display_name="albert-weekly", credentials=creds)
    schedule, kwargs = cloud.build_schedule(job, cloud.ScheduleSpec(
        cron="TZ=Europe/Paris 0 3 * * 1", display_name="albert-weekly", max_concurrent_run_count=2),
        credentials=creds)
    assert kwargs["cron"] == "TZ=Europe/Paris 0 3 * * 1" and kwargs["max_concurrent_run_count"] == 2
    assert schedule._gca_resource.display_name == "albert-weekly"
    assert job._gca_resource.runtime_config.gcs_output_directory == "gs://b/root"


def test_create_schedule_request(spec_path, target, creds, vertex_rpcs):
    job = cloud.build_pipeline_job(spec_path, target, display_name="albert-weekly",
                                   parameter_values={"num_train_steps": 100}, credentials=creds)
    schedule, kwargs = cloud.build_schedule(job, cloud.ScheduleSpec(
        cron="TZ=Europe/Paris 0 3 * * 1", display_name="albert-weekly", max_concurrent_run_count=2,
        max_run_count=10, start_time="2030-01-01T00:00:00Z", end_time="2030-12-31T00:00:00Z"), credentials=creds)
    cloud.create_schedule(schedule, kwargs, service_account=SA)
    request = _only(vertex_rpcs, "create_schedule")
    sent = request["schedule"]
    assert request["parent"] == "projects/p-albert/locations/europe-west4"
    assert sent.display_name == "albert-weekly"
    assert sent.cron == "TZ=Europe/Paris 0 3 * * 1"
    assert sent.max_concurrent_run_count == 2 and sent.max_run_count == 10
    assert sent.allow_queueing is True  # a tick that comes while two still run waits for them, not skipped
    assert sent.start_time.year == 2030 and sent.end_time.month == 12
    run = sent.create_pipeline_job_request.pipeline_job
    assert sent.create_pipeline_job_request.parent == "projects/p-albert/locations/europe-west4"
    assert run.service_account == SA
    assert run.runtime_config.gcs_output_directory == "gs://b/root"
    assert run.runtime_config.parameter_values["num_train_steps"] == 100
    assert run.labels["env"] == "dev"
    assert run.pipeline_spec["deploymentSpec"]["executors"]["CorpusGen_executor"]["container"]["image"] == IMAGE
    assert schedule.resource_name == "projects/p-albert/locations/europe-west4/schedules/123"
    assert [n for n, _ in vertex_rpcs] == ["create_schedule"]  # no PipelineJob is created by scheduling


def test_list_pause_resume_schedules(creds, vertex_rpcs):
    found = cloud.list_schedules("p-albert", "europe-west4", display_name="albert-weekly", state="active",
                                 credentials=creds)
    listed = _only(vertex_rpcs, "list_schedules")["request"]
    parent = listed["parent"] if isinstance(listed, dict) else listed.parent
    filt = listed["filter"] if isinstance(listed, dict) else listed.filter
    assert parent == "projects/p-albert/locations/europe-west4"
    assert filt == 'display_name="albert-weekly" AND state="ACTIVE"'
    assert sorted(s.resource_name.rsplit("/", 1)[-1] for s in found) == ["1", "2"]
    assert {s.display_name for s in found} == {"albert-weekly"}

    paused = cloud.pause_schedule("123", "p-albert", "europe-west4", credentials=creds)
    name = "projects/p-albert/locations/europe-west4/schedules/123"
    assert _only(vertex_rpcs, "pause_schedule") == {"name": name}
    assert paused.resource_name == name

    cloud.resume_schedule(name, "p-albert", "europe-west4", catch_up=True, credentials=creds)
    assert _only(vertex_rpcs, "resume_schedule") == {"name": name, "catch_up": True}


@pytest.mark.parametrize("name,problem", [("", "needs SCHEDULE"), ("a/b", "neither")])
def test_schedule_names_are_checked(name, problem):
    with pytest.raises(cloud.CloudConfigError, match=problem):
        cloud.schedule_resource_name(name, "p", "r")


def test_schedule_filter():
    assert cloud.schedule_filter() is None
    assert cloud.schedule_filter(state="paused") == 'state="PAUSED"'
    with pytest.raises(ValueError, match="state"):
        cloud.schedule_filter(state="sleeping")


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


# -- Kubeflow Pipelines --------------------------------------------------------------------------------------
class _Response:
    def __init__(self, payload, status=200):
        self.status, self.reason, self.data = status, "OK", json.dumps(payload).encode()

    def getheaders(self):
        return {"content-type": "application/json; charset=utf-8"}

    def getheader(self, name, default=None):
        return self.getheaders().get(name.lower(), default)


class RecordingPoolManager:
    """Stands in for urllib3's PoolManager inside kfp_server_api's REST client: records, answers like KFP."""

    def __init__(self):
        self.requests = []

    def request(self, method, url, body=None, fields=None, headers=None, **kwargs):
        self.requests.append({"method": method, "url": url, "fields": fields, "headers": dict(headers or {}),
                              "body": json.loads(body) if body else None})
        path = url.split("?")[0]
        if method == "GET" and path.endswith("/apis/v2beta1/healthz"):
            return _Response({"multi_user": False})
        if method == "GET" and path.endswith("/apis/v2beta1/experiments"):
            return _Response({"experiments": []})
        if method == "POST" and path.endswith("/apis/v2beta1/experiments"):
            return _Response({"experiment_id": "exp-1", "display_name": json.loads(body)["display_name"]})
        if method == "POST" and path.endswith("/apis/v2beta1/runs"):
            return _Response({"run_id": "run-1", "display_name": json.loads(body)["display_name"],
                              "experiment_id": "exp-1"})
        return _Response({"error": f"unexpected {method} {url}"}, status=404)


@pytest.fixture
def kfp_client(monkeypatch, tmp_path):
    import kfp

    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.config/kfp/context.json from the machine
    monkeypatch.setattr(kfp.Client, "_LOCAL_KFP_CONTEXT", str(tmp_path / "kfp" / "context.json"))
    for var in ("KF_PIPELINES_ENDPOINT", "KF_PIPELINES_OVERRIDE_EXPERIMENT_NAME", "KF_PIPELINES_DEFAULT_EXPERIMENT_NAME"):
        monkeypatch.delenv(var, raising=False)
    import kfp_server_api.rest

    pool = RecordingPoolManager()
    # kfp_server_api's REST client builds its urllib3 PoolManager in the constructor: hand it the recorder.
    monkeypatch.setattr(kfp_server_api.rest.urllib3, "PoolManager", lambda *a, **k: pool)
    with pytest.warns(FutureWarning):
        client = kfp.Client(host="http://kfp.example.invalid:8888")
    assert client._run_api.api_client.rest_client.pool_manager is pool
    assert client._experiment_api.api_client is client._run_api.api_client  # one transport for every API
    return client, pool


def test_kfp_submission_with_a_real_client_records_the_run_request(spec_path, kfp_client):
    client, pool = kfp_client
    result = cloud.submit_kfp(spec_path, "http://kfp.example.invalid:8888", run_name="albert-nightly",
                              experiment_name="albert-tfx", arguments={"num_train_steps": 500, "sop_mode": "pure"},
                              pipeline_root="gs://b/kfp-root", client=client)
    assert result.run_id == "run-1"
    assert [r["url"] for r in pool.requests[:1]] == ["http://kfp.example.invalid:8888/apis/v2beta1/healthz"]
    del pool.requests[0]  # kfp.Client.__init__ asks whether the deployment is multi-user
    methods = [(r["method"], r["url"].split("?")[0]) for r in pool.requests]
    assert methods == [("GET", "http://kfp.example.invalid:8888/apis/v2beta1/experiments"),
                       ("POST", "http://kfp.example.invalid:8888/apis/v2beta1/experiments"),
                       ("POST", "http://kfp.example.invalid:8888/apis/v2beta1/runs")]
    assert "albert-tfx" in json.dumps(pool.requests[0]["fields"])  # experiment looked up by name
    assert pool.requests[1]["body"]["display_name"] == "albert-tfx"
    run = pool.requests[2]["body"]
    assert run["display_name"] == "albert-nightly"
    assert run["experiment_id"] == "exp-1"
    assert run["runtime_config"] == {"parameters": {"num_train_steps": 500, "sop_mode": "pure"},
                                     "pipeline_root": "gs://b/kfp-root"}
    spec = run["pipeline_spec"]
    assert spec["pipelineInfo"]["name"] == "albert"
    assert spec["defaultPipelineRoot"] == "gs://b/kfp-root"
    container = spec["deploymentSpec"]["executors"]["CorpusGen_executor"]["container"]
    assert container["image"] == IMAGE and "--runner=DataflowRunner" in container["args"]
    assert set(spec["root"]["inputDefinitions"]["parameters"]) == {"num_train_steps", "sop_mode"}
    assert pool.requests[2]["headers"]["Content-Type"] == "application/json"


def test_kfp_package_is_the_bare_pipeline_spec_with_the_root(spec_path, tmp_path):
    package = cloud.kfp_package(spec_path)
    assert package.endswith(".kfp.yaml")
    doc = yaml.safe_load(open(package))
    assert doc["pipelineInfo"]["name"] == "albert" and doc["defaultPipelineRoot"] == "gs://b/root"
    assert "runtimeConfig" not in doc and "displayName" not in doc
    from kfp.client.client import _extract_pipeline_yaml  # what `kfp run create -f` parses

    parsed = _extract_pipeline_yaml(package)
    assert parsed.pipeline_spec.default_pipeline_root == "gs://b/root"
    assert cloud.kfp_package(package) == package
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    with pytest.raises(cloud.CloudConfigError, match="not a compiled pipeline spec"):
        cloud.kfp_package(str(bad))


def test_kfp_cli_command_is_documented_exactly():
    command = cloud.kfp_cli_command("outputs/albert_pipeline.kfp.yaml", "http://localhost:8080",
                                    run_name="albert nightly", arguments={"num_train_steps": 500})
    assert command == ("kfp --endpoint http://localhost:8080 run create --experiment-name albert-tfx "
                       "--run-name 'albert nightly' --package-file outputs/albert_pipeline.kfp.yaml "
                       "num_train_steps=500")


def test_kfp_submission_sends_the_package_and_parameters(spec_path):
    calls = []

    class RecordingClient:
        def create_run_from_pipeline_package(self, **kwargs):
            calls.append(kwargs)
            return "run-1"

    run = cloud.submit_kfp(spec_path, "", run_name="nightly", arguments={"seed": 3}, client=RecordingClient())
    assert run == "run-1"
    assert calls == [{"pipeline_file": spec_path[:-5] + ".kfp.yaml", "arguments": {"seed": 3}, "run_name": "nightly",
                      "experiment_name": "albert-tfx", "enable_caching": None, "pipeline_root": None,
                      "service_account": None}]


def test_kfp_submission_needs_an_endpoint(spec_path):
    with pytest.raises(cloud.CloudConfigError, match="--endpoint"):
        cloud.submit_kfp(spec_path, "", run_name="x")


# -- runtime parameters on the spec that `compile` really wrote ---------------------------------------------------
@pytest.fixture(scope="module")
def compiled_spec(tmp_path_factory):
    from pipeline.settings.configs import build_config
    from pipeline.cloud.kubeflow_v2_runner import compile_pipeline

    path = str(tmp_path_factory.mktemp("compiled") / "spec.json")
    return compile_pipeline(build_config("sample"), path, image=IMAGE)


def test_compiled_spec_declares_runtime_parameters_with_the_config_as_defaults(compiled_spec):
    with open(compiled_spec) as f:
        spec = json.load(f)
    declared = spec["pipelineSpec"]["root"]["inputDefinitions"]["parameters"]
    assert set(declared) == {"num_train_steps", "finetune_seeds", "wikipedia_dir", "books_dir", "glue_dir",
                             "squad_dir", "race_dir", "data_span"}
    # Schema 2.1: typed values in `parameterValues` (the deprecated `parameters` field is not written at all).
    assert spec["pipelineSpec"]["schemaVersion"] == "2.1.0" and set(spec["runtimeConfig"]) == {
        "gcsOutputDirectory", "parameterValues"}
    defaults = spec["runtimeConfig"]["parameterValues"]
    assert defaults["num_train_steps"] == 300 and defaults["finetune_seeds"] == 1
    assert declared["num_train_steps"] == {"parameterType": "NUMBER_INTEGER"}
    assert defaults["glue_dir"].endswith("data/sample/glue")
    tasks = spec["pipelineSpec"]["root"]["dag"]["tasks"]
    assert tasks["Trainer"]["inputs"]["parameters"]["num_train_steps"] == {"componentInputParameter": "num_train_steps"}
    for node in ("GlueBenchmark", "SquadBenchmark", "RaceBenchmark"):
        assert tasks[node]["inputs"]["parameters"]["seeds"] == {"componentInputParameter": "finetune_seeds"}
    assert tasks["DataSnapshot"]["inputs"]["parameters"]["glue_dir"] == {"componentInputParameter": "glue_dir"}
    assert tasks["GlueDataImporter"]["inputs"]["parameters"]["artifact_uri"] == {
        "taskOutputParameter": {"producerTask": "DataSnapshot", "outputParameterKey": "glue_uri"}}


@pytest.fixture(scope="module")
def gs_spec(tmp_path_factory):
    """Compiled with ``--pipeline-root gs://b/root``; the data folders still the bundled local ones."""
    from pipeline.settings.configs import build_config
    from pipeline.cloud.kubeflow_v2_runner import compile_pipeline

    config = build_config("sample", pipeline_root="gs://b/root")
    return compile_pipeline(config, str(tmp_path_factory.mktemp("compiled_gs") / "spec.json"), image=IMAGE)


DATA_FOLDERS = ("books_dir", "glue_dir", "race_dir", "squad_dir", "wikipedia_dir")
ON_GCS = {name: f"gs://b/data/{name}" for name in DATA_FOLDERS}


def _cli(argv, capsys):
    from pipeline.cli import run_cli

    code = run_cli(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _vertex_args(command, spec, *extra):
    return [command, "--spec", spec, "--project", "p-albert", "--region", "europe-west4",
            "--pipeline-root", "gs://b/root", *extra]


def test_submit_with_parameters_on_the_compiled_spec(gs_spec, vertex_rpcs, monkeypatch):
    """`albert-pipeline submit --parameters` through the CLI's own handler, on what `compile` wrote."""
    import google.auth
    from google.auth.credentials import AnonymousCredentials

    from pipeline.cli import build_parser

    monkeypatch.setattr(google.auth, "default", lambda *a, **k: (AnonymousCredentials(), "p-albert"))
    params = {"num_train_steps": 1000, "finetune_seeds": 3, **ON_GCS, "glue_dir": "gs://b/glue"}
    args = build_parser().parse_args(_vertex_args("submit", gs_spec, "--service-account", SA,
                                                  "--parameters", json.dumps(params)))
    assert args.func(args) == 0
    sent = _only(vertex_rpcs, "create_pipeline_job")["pipeline_job"]
    # A schema-2.1.0 spec: the SDK sends `runtimeConfig.parameterValues` (protobuf Values) and no `parameters`.
    assert len(sent.runtime_config.parameters) == 0
    values = dict(sent.runtime_config.parameter_values)
    assert values["num_train_steps"] == 1000 and values["finetune_seeds"] == 3 and values["glue_dir"] == "gs://b/glue"
    assert values["race_dir"] == "gs://b/data/race_dir"
    with pytest.raises(ValueError, match="learning_rate"):
        args = build_parser().parse_args(_vertex_args("submit", gs_spec, "--parameters",
                                                      json.dumps({"learning_rate": 1, **ON_GCS})))
        args.func(args)


# -- a compiled spec that cannot be sent wrong -----------------------------------------------------------------------
def test_vertex_refuses_a_spec_compiled_with_the_local_pipeline_root(compiled_spec, vertex_rpcs, capsys):
    """The default compile: its Trainer checkpoints would live inside the container (lost on preemption)."""
    for command, extra in (("submit", ()), ("schedule", ("--cron", "0 3 * * 1"))):
        code, out, err = _cli(_vertex_args(command, compiled_spec, *extra,
                                           "--parameters", json.dumps(ON_GCS)), capsys)
        assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
        assert "Trainer checkpoint_root=outputs/pipeline_root/_checkpoints" in err
        assert "recompile with --pipeline-root gs://BUCKET/PATH" in err and "_dir=" not in err
    assert vertex_rpcs == []


def test_vertex_refuses_local_data_folder_defaults_until_parameters_override_them(gs_spec, vertex_rpcs, capsys,
                                                                                 monkeypatch):
    import google.auth
    from google.auth.credentials import AnonymousCredentials

    monkeypatch.setattr(google.auth, "default", lambda *a, **k: (AnonymousCredentials(), "p-albert"))
    code, _, err = _cli(_vertex_args("submit", gs_spec), capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1
    for name in DATA_FOLDERS:  # each one named, with the compiling machine's path
        assert f"{name}=" in err and f"data/sample/{name[:-4]}" in err
    assert "checkpoint_root" not in err and "--parameters" in err
    partial = {k: v for k, v in ON_GCS.items() if k != "race_dir"}
    code, _, err = _cli(_vertex_args("submit", gs_spec, "--parameters", json.dumps(partial)), capsys)
    assert code == 2 and "race_dir=" in err and "glue_dir" not in err
    bad = {**ON_GCS, "glue_dir": "/srv/glue"}  # an override must be reachable too
    code, _, err = _cli(_vertex_args("submit", gs_spec, "--parameters", json.dumps(bad)), capsys)
    assert code == 2 and "glue_dir=/srv/glue" in err
    assert vertex_rpcs == []
    code, out, err = _cli(_vertex_args("submit", gs_spec, "--parameters", json.dumps(ON_GCS)), capsys)
    assert code == 0 and "submitted Vertex AI PipelineJob" in out, err
    assert len([c for c in vertex_rpcs if c[0] == "create_pipeline_job"]) == 1


def test_kfp_refuses_a_local_pipeline_root(compiled_spec, gs_spec):
    class NeverCalled:
        def create_run_from_pipeline_package(self, **kwargs):
            raise AssertionError("sent")

    with pytest.raises(cloud.CloudConfigError) as info:
        cloud.submit_kfp(compiled_spec, "http://kfp.example.invalid", run_name="x", arguments=ON_GCS,
                         client=NeverCalled())
    assert "pipeline root=outputs/pipeline_root" in str(info.value)
    assert "Trainer checkpoint_root=outputs/pipeline_root/_checkpoints" in str(info.value)
    s3 = {k: "s3://b/" + k for k in DATA_FOLDERS}
    with pytest.raises(cloud.CloudConfigError, match="books_dir=.*data/sample/books"):
        cloud.submit_kfp(gs_spec, "http://kfp.example.invalid", run_name="x", client=NeverCalled())
    with pytest.raises(AssertionError, match="sent"):  # everything reachable: it goes on to send
        cloud.submit_kfp(gs_spec, "http://kfp.example.invalid", run_name="x", arguments=s3, client=NeverCalled())


def test_missing_credentials_is_a_user_error_saying_how_to_authenticate(gs_spec, vertex_rpcs, capsys, monkeypatch,
                                                                         tmp_path):
    """Google's real credential lookup, pointed at a key file that does not exist (no network involved)."""
    from google.cloud.aiplatform import initializer

    monkeypatch.setattr(initializer.global_config, "_credentials", None)  # what earlier tests' SDK calls cached
    monkeypatch.setattr(initializer.global_config, "_project", None)
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "missing-key.json"))
    for command, extra in (("submit", ()), ("schedule", ("--cron", "0 3 * * 1"))):
        code, out, err = _cli(_vertex_args(command, gs_spec, *extra, "--parameters", json.dumps(ON_GCS)), capsys)
        assert code == 2 and out == "", err
        assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
        assert "no usable Google Cloud credentials" in err and "gcloud auth application-default login" in err
        assert "missing-key.json" in err
    assert vertex_rpcs == []


def test_the_image_data_root_is_where_the_dockerfile_puts_the_sample():
    """Data folders under ``IMAGE_DATA_ROOT`` pass the check because the pipeline image holds them."""
    import os

    from tests.conftest import REPO

    with open(os.path.join(REPO, "infra", "Dockerfile")) as f:
        dockerfile = f.read()
    assert cloud.IMAGE_DATA_ROOT == "/opt/albert-tfx/data/"
    assert "WORKDIR /opt/albert-tfx\n" in dockerfile and "COPY data/sample ./data/sample" in dockerfile


def test_the_kfp_package_is_the_compiled_spec_with_the_jobs_root_and_values_moved_in(gs_spec, tmp_path):
    """What `submit --endpoint` sends is what `compile` wrote (and what Vertex AI runs): schema 2.1, every task and
    executor unchanged; the job's pipeline root and parameter values become the spec's defaults."""
    import copy

    import yaml

    with open(gs_spec) as f:
        job = json.load(f)
    with open(cloud.kfp_package(gs_spec, str(tmp_path / "spec.kfp.yaml"))) as f:
        package = yaml.safe_load(f)
    expected = copy.deepcopy(job["pipelineSpec"])
    expected["defaultPipelineRoot"] = "gs://b/root"
    for name, value in job["runtimeConfig"]["parameterValues"].items():
        declared = expected["root"]["inputDefinitions"]["parameters"][name]
        declared.update(defaultValue=int(value) if declared["parameterType"] == "NUMBER_INTEGER" else value,
                        isOptional=True)
    assert package == expected and package["schemaVersion"] == "2.1.0"
