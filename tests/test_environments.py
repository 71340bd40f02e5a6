"""infra/environments.yaml: loading, resolution, validation before sending, Beam args per runner, and the
compile/submit/schedule paths per environment (requests recorded offline, as in test_cloud.py)."""
import argparse
import json
import os
import textwrap

import pytest

from pipeline.cloud import submit as cloud
from pipeline.cloud import cli_env
from pipeline.cloud import deploy
from pipeline.cloud import environments as envs
from test_cloud import IMAGE, SPEC, kfp_client, no_network, vertex_rpcs  # noqa: F401  (fixtures)

ENV = {"ALBERT_GCP_PROJECT": "albert-proj", "ALBERT_GCS_BUCKET": "gs://albert-bkt", "ALBERT_IMAGE": "reg/albert:1"}


@pytest.fixture(autouse=True)
def cloud_env(monkeypatch):
    for key in ("ALBERT_GCP_REGION", "ALBERT_IMAGE_TAG", "ALBERT_KFP_ENDPOINT", "ALBERT_KFP_PIPELINE_ROOT",
                "ALBERT_TFX_ENVIRONMENTS"):
        monkeypatch.delenv(key, raising=False)
    for key, value in ENV.items():
        monkeypatch.setenv(key, value)


@pytest.fixture
def spec_path(tmp_path):
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(SPEC))
    return str(path)


def write_envs(tmp_path, body):
    path = tmp_path / "environments.yaml"
    path.write_text(textwrap.dedent(body))
    return str(path)


def options(args):
    from apache_beam.options.pipeline_options import PipelineOptions

    return PipelineOptions(args)


def assert_all_known_to_beam(args):
    """Every flag is a registered Beam option (none would be silently ignored)."""
    known = options(args).get_all_options(retain_unknown_options=False)
    for arg in args:
        key = arg[2:].split("=", 1)[0]
        key = key if key in known else key.replace("no_", "", 1)  # store_false flags, e.g. --no_use_public_ips
        assert key in known, f"{key} is not a Beam pipeline option"


# -- the committed file ------------------------------------------------------------------------------------------
def test_committed_file_has_the_three_environments_and_all_resolve():
    names = envs.environment_names()
    assert {"local", "vertex-dev", "vertex-paper"} <= set(names)
    for name in names:
        env = envs.get_environment(name)
        assert env.pipeline_root
    dev, paper = envs.get_environment("vertex-dev"), envs.get_environment("vertex-paper")
    assert (dev.preset, paper.preset) == ("sample", "paper")
    assert dev.project == "albert-proj" and dev.region == "europe-west4"
    assert dev.bucket == "gs://albert-bkt"
    assert dev.pipeline_root == "gs://albert-bkt/albert-tfx/vertex-dev/pipeline_root"
    assert dev.image == "europe-west4-docker.pkg.dev/albert-proj/albert/albert-tfx:latest"
    assert dev.service_account == "albert-pipelines@albert-proj.iam.gserviceaccount.com"
    assert dev.labels == {"app": "albert-tfx", "env": "dev"}
    assert paper.pipeline_root != dev.pipeline_root  # environments never share a pipeline root / cache


def test_local_is_direct_runner_multi_processing():
    env = envs.get_environment("local")
    args = envs.beam_args(env)
    # `runner: DirectRunner` names Beam's FnApiRunner itself: Beam's DirectRunner would first try to download Prism.
    assert args == ["--runner=FnApiRunner", "--direct_running_mode=multi_processing", "--direct_num_workers=0"]
    from apache_beam.options.pipeline_options import DirectOptions, StandardOptions

    opts = options(args)
    assert opts.view_as(StandardOptions).runner == "FnApiRunner"
    assert opts.view_as(DirectOptions).direct_running_mode == "multi_processing"
    assert_all_known_to_beam(args)


def test_dataflow_args_for_vertex_dev():
    env = envs.get_environment("vertex-dev")
    args = envs.beam_args(env)
    from apache_beam.options.pipeline_options import (DebugOptions, GoogleCloudOptions, StandardOptions,
                                                      WorkerOptions)

    opts = options(args)
    gcp, workers = opts.view_as(GoogleCloudOptions), opts.view_as(WorkerOptions)
    assert opts.view_as(StandardOptions).runner == "DataflowRunner"
    assert (gcp.project, gcp.region) == ("albert-proj", "europe-west4")
    assert gcp.temp_location == "gs://albert-bkt/albert-tfx/vertex-dev/dataflow/temp"
    assert gcp.staging_location == "gs://albert-bkt/albert-tfx/vertex-dev/dataflow/staging"
    assert gcp.service_account_email == env.service_account
    assert sorted(gcp.labels) == ["app=albert-tfx", "env=dev"]
    assert workers.sdk_container_image == env.image  # the same image as the pipeline components
    assert workers.machine_type == "n2-standard-4"
    assert (workers.num_workers, workers.max_num_workers) == (1, 4)
    assert workers.autoscaling_algorithm == "THROUGHPUT_BASED"
    assert workers.disk_size_gb == 50
    assert "use_runner_v2" in opts.view_as(DebugOptions).experiments
    assert_all_known_to_beam(args)


def test_paper_scales_out():
    from apache_beam.options.pipeline_options import WorkerOptions

    workers = options(envs.beam_args(envs.get_environment("vertex-paper"))).view_as(WorkerOptions)
    assert workers.max_num_workers == 200 and workers.machine_type == "n2-highmem-8"


def test_flink_and_spark_portable_args(tmp_path):
    from apache_beam.options.pipeline_options import FlinkRunnerOptions, PortableOptions, SparkRunnerOptions

    flink = envs.beam_args(envs.get_environment("kfp-flink"))
    opts = options(flink)
    assert opts.view_as(FlinkRunnerOptions).flink_master == "flink-jobmanager.flink:8081"
    assert opts.view_as(FlinkRunnerOptions).parallelism == 8
    assert opts.view_as(PortableOptions).environment_type == "DOCKER"
    assert opts.view_as(PortableOptions).environment_config == "reg/albert:1"
    assert_all_known_to_beam(flink)

    path = write_envs(tmp_path, """
        environments:
          spark:
            kind: local
            pipeline_root: /tmp/root
            image: reg/albert:1
            beam: {runner: SparkRunner, spark_master_url: "spark://spark-master:7077",
                   environment_type: DOCKER, environment_config: "{image}"}
    """)
    spark = envs.beam_args(envs.get_environment("spark", path))
    assert spark == ["--runner=SparkRunner", "--spark_master_url=spark://spark-master:7077",
                     "--environment_type=DOCKER", "--environment_config=reg/albert:1"]
    assert options(spark).view_as(SparkRunnerOptions).spark_master_url == "spark://spark-master:7077"
    assert_all_known_to_beam(spark)


def test_setup_file_instead_of_container_and_extra_args():
    env = envs.get_environment("vertex-dev", overrides=[
        "beam.sdk_container_image=", "beam.setup_file=./setup.py", "beam.extra_args=['--no_use_public_ips']",
        "beam.max_num_workers=50"])
    args = envs.beam_args(env)
    assert "--setup_file=./setup.py" in args and not any(a.startswith("--sdk_container_image") for a in args)
    assert "--max_num_workers=50" in args and args[-1] == "--no_use_public_ips"
    assert_all_known_to_beam(args)


# -- validation before anything is sent ----------------------------------------------------------------------
VERTEX_BODY = """
    environments:
      dev:
        kind: vertex
        project: albert-proj
        region: europe-west4
        bucket: gs://albert-bkt
        pipeline_root: "{bucket}/root"
        image: reg/albert:1
"""


@pytest.mark.parametrize("field", ["project", "region", "bucket", "pipeline_root", "image"])
def test_missing_cloud_field_names_environment_and_field(tmp_path, field):
    body = "\n".join(line for line in textwrap.dedent(VERTEX_BODY).splitlines()
                     if not line.strip().startswith(f"{field}:"))
    if field == "bucket":
        body = body.replace('"{bucket}/root"', "gs://albert-bkt/root")
    with pytest.raises(envs.EnvironmentConfigError, match=rf"environment 'dev': {field} is required"):
        envs.get_environment("dev", write_envs(tmp_path, body))


@pytest.mark.parametrize("override,field", [
    ("project=YOUR_PROJECT", "project"), ("bucket=gs://YOUR_BUCKET", "bucket"),
    ("image=gcr.io/PROJECT_ID/albert:1", "image"), ("service_account=<sa>@p.iam.gserviceaccount.com",
                                                       "service_account"),
    ("labels.owner=change-me", "labels.owner")])
def test_placeholders_are_rejected_for_cloud(tmp_path, override, field):
    with pytest.raises(envs.EnvironmentConfigError, match=rf"environment 'dev': {field} still holds a placeholder"):
        envs.get_environment("dev", write_envs(tmp_path, VERTEX_BODY), overrides=[override])


def test_placeholder_in_an_environment_variable_is_rejected(monkeypatch):
    monkeypatch.setenv("ALBERT_GCP_PROJECT", "YOUR_PROJECT")
    with pytest.raises(envs.EnvironmentConfigError, match="'vertex-dev': project still holds a placeholder"):
        envs.get_environment("vertex-dev")


def test_unset_variable_names_environment_field_and_variable(monkeypatch):
    monkeypatch.delenv("ALBERT_GCS_BUCKET")
    with pytest.raises(envs.EnvironmentConfigError,
                       match="environment 'vertex-paper': bucket needs the environment variable ALBERT_GCS_BUCKET"):
        envs.get_environment("vertex-paper")
    # ... and --env-set fills it instead
    assert envs.get_environment("vertex-paper", overrides=["bucket=gs://other"]).bucket == "gs://other"


@pytest.mark.parametrize("override,message", [
    ("bucket=albert-bkt", "bucket must be a gs:// URI"),
    ("pipeline_root=/local/root", "pipeline_root must be a gs:// URI"),
    ("region=Europe", "region is not a Google Cloud region"),
    ("project=Albert_Proj", "project is not a valid Google Cloud project id"),
    ("service_account=someone@gmail.com", "service_account must be an e-mail"),
    ("kind=cluster", "kind must be one of"),
    ("preset=huge", "preset must be one of paper, paper-v1, paper-v2, sample"),
    ("labels.Team=nlp", "labels"),
    ("schedule.cron=every day", "5 fields"),
    ("beam.runner=SparkRunnr", "beam.runner must be one of"),
    ("beam.temp_location=", "beam.temp_location is required for DataflowRunner"),
    ("beam.staging_location=/tmp/x", "beam.staging_location must be a gs:// URI"),
    ("beam.setup_file=./setup.py", "exactly one of sdk_container_image"),
    ("beam.max_num_workers=0", "max_num_workers must be >= num_workers"),
    ("bogus=1", "unknown field"),
])
def test_bad_values_are_rejected(override, message):
    with pytest.raises(envs.EnvironmentConfigError, match=message):
        envs.get_environment("vertex-dev", overrides=[override])


def test_unknown_environment_and_missing_file(tmp_path):
    with pytest.raises(envs.EnvironmentConfigError, match="unknown environment 'prod'; choose one of local"):
        envs.get_environment("prod")
    with pytest.raises(FileNotFoundError):
        envs.get_environment("dev", str(tmp_path / "nope.yaml"))
    with pytest.raises(envs.EnvironmentConfigError, match="top-level 'environments:'"):
        envs.get_environment("dev", write_envs(tmp_path, "dev: {}\n"))


def test_file_is_read_with_safe_load(tmp_path):
    path = write_envs(tmp_path, "environments: !!python/object/apply:os.system ['true']\n")
    with pytest.raises(envs.EnvironmentConfigError) as info:
        envs.get_environment("x", path)
    assert str(info.value) == (f"{path}: not valid YAML (could not determine a constructor for the tag "
                               "'tag:yaml.org,2002:python/object/apply:os.system')")


def test_errors_are_value_errors_for_the_cli():
    # cli.main turns ValueError into a one-line `albert-pipeline CMD: error: ...` and exit code 2.
    assert issubclass(envs.EnvironmentConfigError, cloud.CloudConfigError)
    assert issubclass(envs.EnvironmentConfigError, ValueError)


# -- compile / submit / schedule per environment ------------------------------------------------------------
def test_compile_for_env_passes_image_root_and_beam_args(tmp_path):
    seen = {}

    def fake_compile(config, output, image):
        seen.update(config=config, output=output, image=image)
        return output

    env = envs.get_environment("vertex-paper")
    info = envs.compile_for_env(env, str(tmp_path / "spec.json"), compile_fn=fake_compile,
                                overrides=["train.num_train_steps=5000"])
    assert seen["image"] == env.image == info["image"]
    assert seen["config"].pipeline_root == env.pipeline_root
    assert seen["config"].train.num_train_steps == 5000
    assert seen["config"].preset == "paper" and seen["config"].train.strategy == "tpu"
    assert seen["config"].corpus.wikipedia_dir == "gs://albert-bkt/albert-tfx/raw/wikipedia"
    assert seen["config"].beam_args == envs.beam_args(env) == info["beam_pipeline_args"]
    assert "--runner=DataflowRunner" in seen["config"].beam_args
    assert seen["config"].frozen  # resolved once (preset, overrides, the environment's root and Beam args)
    with pytest.raises(envs.EnvironmentConfigError, match="placeholder"):
        envs.compile_for_env(env, "x.json", image="gcr.io/YOUR_PROJECT/albert-tfx:latest", compile_fn=fake_compile)


@pytest.mark.slow
def test_compiled_spec_for_vertex_dev_carries_image_and_dataflow_args(tmp_path):
    from pipeline.cloud.kubeflow_v2_runner import spec_summary

    env = envs.get_environment("vertex-dev", overrides=["image=europe-docker.pkg.dev/albert-proj/r/albert-tfx:7"])
    out = str(tmp_path / "spec.json")
    envs.compile_for_env(env, out)
    assert spec_summary(out)["images"] == ["europe-docker.pkg.dev/albert-proj/r/albert-tfx:7"]
    spec = json.load(open(out))
    assert spec["runtimeConfig"]["gcsOutputDirectory"] == env.pipeline_root
    corpus = spec["pipelineSpec"]["deploymentSpec"]["executors"]["CorpusGen_executor"]["container"]["args"]
    for arg in ("--runner=DataflowRunner", "--region=europe-west4",
                "--sdk_container_image=europe-docker.pkg.dev/albert-proj/r/albert-tfx:7",
                "--temp_location=gs://albert-bkt/albert-tfx/vertex-dev/dataflow/temp"):
        assert arg in corpus


def test_submit_env_vertex_request(spec_path, vertex_rpcs):
    from google.auth.credentials import AnonymousCredentials

    env = envs.get_environment("vertex-dev", overrides=["parameters.sop_mode=pure"])
    job = deploy.submit_env(env, spec_path, run_name="albert-dev-1", parameters={"num_train_steps": 7},
                            credentials=AnonymousCredentials())
    sent = next(kw for name, kw in vertex_rpcs if name == "create_pipeline_job")["pipeline_job"]
    assert sent.display_name == "albert-dev-1"
    assert sent.service_account == "albert-pipelines@albert-proj.iam.gserviceaccount.com"
    assert sent.runtime_config.gcs_output_directory == "gs://albert-bkt/albert-tfx/vertex-dev/pipeline_root"
    assert dict(sent.runtime_config.parameter_values) == {"sop_mode": "pure", "num_train_steps": 7}
    assert dict(sent.labels) == {"app": "albert-tfx", "env": "dev"}
    assert job.resource_name.startswith("projects/albert-proj/locations/europe-west4/pipelineJobs/")


def test_nothing_is_sent_when_validation_fails(spec_path, vertex_rpcs, monkeypatch):
    env = envs.get_environment("vertex-dev")
    env.bucket = None  # e.g. edited after loading
    with pytest.raises(envs.EnvironmentConfigError, match="'vertex-dev': bucket is required"):
        deploy.submit_env(env, spec_path)
    with pytest.raises(envs.EnvironmentConfigError, match="is local"):
        deploy.submit_env(envs.get_environment("local"), spec_path)
    with pytest.raises(FileNotFoundError, match="compile --env"):
        deploy.submit_env(envs.get_environment("vertex-dev"), spec_path + ".missing")
    assert vertex_rpcs == []


def test_submit_env_kfp_with_a_real_client(spec_path, kfp_client):
    client, pool = kfp_client
    env = envs.get_environment("kfp-flink")
    result = deploy.submit_env(env, spec_path, run_name="albert-kfp", parameters={"num_train_steps": 3},
                               client=client)
    assert result.run_id == "run-1"
    run = pool.requests[-1]
    assert run["url"] == "http://kfp.example.invalid:8888/apis/v2beta1/runs"
    assert run["body"]["display_name"] == "albert-kfp"
    assert run["body"]["runtime_config"] == {"parameters": {"num_train_steps": 3},
                                             "pipeline_root": "minio://mlpipeline/v2/artifacts/albert-tfx"}
    assert run["body"]["pipeline_spec"]["defaultPipelineRoot"] == "minio://mlpipeline/v2/artifacts/albert-tfx"


def test_schedule_env_uses_the_environment_schedule(spec_path, vertex_rpcs):
    from google.auth.credentials import AnonymousCredentials

    env = envs.get_environment("vertex-dev")
    schedule, kwargs = deploy.schedule_env(env, spec_path, max_run_count=12, credentials=AnonymousCredentials())
    sent = next(kw for name, kw in vertex_rpcs if name == "create_schedule")["schedule"]
    assert sent.display_name == "albert-tfx-vertex-dev"
    assert sent.cron == "TZ=Europe/Paris 0 3 * * 1"
    assert sent.max_concurrent_run_count == 1 and sent.max_run_count == 12
    run = sent.create_pipeline_job_request.pipeline_job
    assert run.service_account == env.service_account
    assert run.runtime_config.gcs_output_directory == env.pipeline_root
    assert [n for n, _ in vertex_rpcs] == ["create_schedule"]

    no_cron = envs.get_environment("vertex-dev", overrides=["schedule={}"])
    with pytest.raises(envs.EnvironmentConfigError, match="schedule.cron is required"):
        deploy.schedule_env(no_cron, spec_path, send=False)


def test_schedule_list_pause_resume_per_environment(vertex_rpcs):
    from google.auth.credentials import AnonymousCredentials

    creds = AnonymousCredentials()
    env = envs.get_environment("vertex-dev")
    assert len(envs.list_env_schedules(env, display_name="albert-tfx-vertex-dev", credentials=creds)) == 2
    envs.pause_env_schedule(env, "42", credentials=creds)
    envs.resume_env_schedule(env, "42", credentials=creds)
    names = {n: kw for n, kw in vertex_rpcs}
    assert names["pause_schedule"] == {"name": "projects/albert-proj/locations/europe-west4/schedules/42"}
    assert names["resume_schedule"]["catch_up"] is False


def test_cli_handlers(capsys, spec_path, vertex_rpcs, monkeypatch):
    args = argparse.Namespace(env="vertex-dev", environments=None, env_set=["beam.max_num_workers=9"])
    assert cli_env.cmd_env_show(args) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["project"] == "albert-proj" and "--max_num_workers=9" in shown["beam_pipeline_args"]
    assert cli_env.cmd_env_show(argparse.Namespace(env=None, environments=None, env_set=[])) == 0
    assert "vertex-paper" in json.loads(capsys.readouterr().out)

    from google.auth.credentials import AnonymousCredentials
    from google.cloud import aiplatform

    monkeypatch.setattr(aiplatform.initializer.global_config, "_credentials", AnonymousCredentials())
    from pipeline.cli import build_parser

    args = build_parser().parse_args(["submit", "--env", "vertex-dev", "--spec", spec_path,
                                      "--parameters", '{"num_train_steps": 5}'])
    assert args.func(args) == 0
    assert "submitted Vertex AI PipelineJob: projects/albert-proj" in capsys.readouterr().out
    args = argparse.Namespace(env="vertex-dev", environments=None, env_set=[], action="pause", schedule="9",
                              display_name=None, catch_up=False)
    assert cli_env.cmd_schedules(args) == 0
    assert "paused schedule: projects/albert-proj/locations/europe-west4/schedules/9" in capsys.readouterr().out
    with pytest.raises(cloud.CloudConfigError, match="needs SCHEDULE, the schedule id"):
        cli_env.cmd_schedules(argparse.Namespace(env="vertex-dev", environments=None, env_set=[], action="resume",
                                              schedule=None, display_name=None, catch_up=False))


def test_environments_file_can_be_chosen_by_variable(tmp_path, monkeypatch):
    path = write_envs(tmp_path, VERTEX_BODY)
    monkeypatch.setenv("ALBERT_TFX_ENVIRONMENTS", path)
    assert envs.environment_names() == ["dev"]
    assert os.path.exists(envs.DEFAULT_ENVIRONMENTS_FILE)


def test_cli_wiring_helpers_parse_on_the_real_parser(capsys):
    """The argparse helpers pipeline/cli.py wires in (add_env_arguments, add_cli_subcommands)."""
    from pipeline import cli

    parser = cli.build_parser()
    sub = parser._subparsers._group_actions[0]
    for name in ("compile", "submit", "schedule"):
        if "--env" not in sub.choices[name]._option_string_actions:  # not yet wired in cli.py
            cli_env.add_env_arguments(sub.choices[name])
    if "schedules" not in sub.choices:
        cli_env.add_cli_subcommands(sub)
    args = parser.parse_args(["compile", "--env", "vertex-dev", "--env-set", "beam.max_num_workers=9",
                              "--output", "x.json"])
    assert (args.env, args.env_set, args.output) == ("vertex-dev", ["beam.max_num_workers=9"], "x.json")
    args = parser.parse_args(["schedules", "resume", "42", "--env", "vertex-dev", "--catch-up"])
    assert (args.func, args.action, args.schedule, args.catch_up) == (cli_env.cmd_schedules, "resume", "42", True)
    args = parser.parse_args(["env", "vertex-paper"])
    assert args.func(args) == 0
    assert json.loads(capsys.readouterr().out)["preset"] == "paper"
    # docs/running-at-scale.md's form, `env show NAME`, is the same command; `env show` alone lists the names.
    args = parser.parse_args(["env", "show", "vertex-dev"])
    assert args.func(args) == 0
    assert json.loads(capsys.readouterr().out)["name"] == "vertex-dev"
    args = parser.parse_args(["env", "show"])
    assert args.func(args) == 0
    assert "vertex-paper" in json.loads(capsys.readouterr().out)
