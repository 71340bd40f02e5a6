"""One deploy path: every option of ``submit`` and ``schedule`` reaches the request the same way from flags and from an
environment (``--env NAME --env-set FIELD=VALUE``), through the real CLI, with the request recorded at the last
step before the wire (the fixtures of ``test_cloud.py``)."""
import json

import pytest

from test_cloud import IMAGE, gs_spec, kfp_client, no_network, vertex_rpcs  # noqa: F401  (fixtures)

ROOT = "gs://b/root"
DATA = {name: f"gs://b/data/{name}" for name in ("books_dir", "glue_dir", "race_dir", "squad_dir", "wikipedia_dir")}
ENVIRONMENTS = f"""
environments:
  v:
    kind: vertex
    project: p-albert
    region: europe-west4
    bucket: gs://b
    pipeline_root: {ROOT}
    image: {IMAGE}
    parameters: {json.dumps(DATA)}
  k:
    kind: kfp
    kfp_endpoint: http://kfp.example.invalid:8888
    pipeline_root: {ROOT}
    image: {IMAGE}
    parameters: {json.dumps(DATA)}
"""
VERTEX_FLAGS = ["--project", "p-albert", "--region", "europe-west4", "--pipeline-root", ROOT,
                "--parameters", json.dumps(DATA)]
KFP_FLAGS = ["--endpoint", "http://kfp.example.invalid:8888", "--pipeline-root", ROOT, "--parameters", json.dumps(DATA)]

# option → (its flags, the same as --env-set, how to read it from the request sent)
VERTEX_OPTIONS = {
    "service_account": (["--service-account", "sa@p.iam.gserviceaccount.com"],
                        ["--env-set", "service_account=sa@p.iam.gserviceaccount.com"],
                        lambda job: job.service_account),
    "network": (["--network", "projects/1/global/networks/n"], ["--env-set", "network=projects/1/global/networks/n"],
                lambda job: job.network),
    "labels": (["--label", "team=nlp"], ["--env-set", "labels.team=nlp"], lambda job: dict(job.labels)),
    "no_cache": (["--no-cache"], ["--env-set", "enable_caching=false"],
                 lambda job: {t["cachingOptions"].get("enableCache", False)
                              for t in job.pipeline_spec["root"]["dag"]["tasks"].values()}),
    "parameters": (["--parameters", json.dumps({**DATA, "num_train_steps": 9})],
                   ["--parameters", json.dumps({"num_train_steps": 9})],
                   lambda job: dict(job.runtime_config.parameter_values)["num_train_steps"]),
}


def _run(argv, tmp_path, capsys):
    from pipeline.cli import run_cli

    envs = tmp_path / "environments.yaml"
    envs.write_text(ENVIRONMENTS)
    code = run_cli([*argv, "--environments", str(envs)] if "--env" in argv else argv)
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


@pytest.fixture(autouse=True)
def anonymous(monkeypatch):
    import google.auth
    from google.auth.credentials import AnonymousCredentials

    monkeypatch.setattr(google.auth, "default", lambda *a, **k: (AnonymousCredentials(), "p-albert"))


def _sent(vertex_rpcs, name):  # noqa: F811
    """(display name, PipelineJob) of the one job or schedule sent."""
    (kw,) = [kw for n, kw in vertex_rpcs if n == name]
    if name == "create_pipeline_job":
        return kw["pipeline_job"].display_name, kw["pipeline_job"]
    return kw["schedule"].display_name, kw["schedule"].create_pipeline_job_request.pipeline_job


@pytest.mark.parametrize("command", ["submit", "schedule"])
@pytest.mark.parametrize("option", sorted(VERTEX_OPTIONS))
def test_every_vertex_option_reaches_the_request_from_flags_and_from_an_environment(
        command, option, gs_spec, vertex_rpcs, tmp_path, capsys):  # noqa: F811
    flags, env_set, read = VERTEX_OPTIONS[option]
    cron = ["--cron", "0 3 * * 1"] if command == "schedule" else []
    rpc = "create_pipeline_job" if command == "submit" else "create_schedule"
    _run([command, "--spec", gs_spec, "--run-name", "r", *VERTEX_FLAGS, *flags, *cron], tmp_path, capsys)
    name_flags, by_flags = _sent(vertex_rpcs, rpc)
    vertex_rpcs.clear()
    _run([command, "--spec", gs_spec, "--run-name", "r", "--env", "v", *env_set, *cron], tmp_path, capsys)
    name_env, by_env = _sent(vertex_rpcs, rpc)
    assert read(by_flags) == read(by_env)
    assert read(by_flags) not in (None, "", {}, [])
    for name, job in ((name_flags, by_flags), (name_env, by_env)):  # and the rest of the request is the same too
        assert (name, job.runtime_config.gcs_output_directory) == ("r", ROOT)
    if option == "no_cache":
        assert read(by_flags) == {False}  # caching off on every task


KFP_OPTIONS = {
    "service_account": (["--service-account", "sa@p.iam.gserviceaccount.com"],
                        ["--env-set", "service_account=sa@p.iam.gserviceaccount.com"],
                        lambda run: run.get("service_account")),
    "experiment": (["--experiment", "nightly"], ["--env-set", "experiment=nightly"], None),
    "no_cache": (["--no-cache"], ["--env-set", "enable_caching=false"],
                 lambda run: {t.get("cachingOptions", {}).get("enableCache", False)
                              for t in run["pipeline_spec"]["root"]["dag"]["tasks"].values()}),
    "parameters": (["--parameters", json.dumps({**DATA, "num_train_steps": 9})],
                   ["--parameters", json.dumps({"num_train_steps": 9})],
                   lambda run: run["runtime_config"]["parameters"]["num_train_steps"]),
}


@pytest.mark.parametrize("option", sorted(KFP_OPTIONS))
def test_every_kfp_option_reaches_the_request_from_flags_and_from_an_environment(
        option, gs_spec, kfp_client, tmp_path, capsys):  # noqa: F811
    _, pool = kfp_client
    flags, env_set, read = KFP_OPTIONS[option]
    seen = []
    for argv in (["submit", "--spec", gs_spec, "--run-name", "r", *KFP_FLAGS, *flags],
                 ["submit", "--spec", gs_spec, "--run-name", "r", "--env", "k", *env_set]):
        pool.requests.clear()
        _run(argv, tmp_path, capsys)
        runs = [r for r in pool.requests if r["url"].endswith("/apis/v2beta1/runs")]
        experiments = [r for r in pool.requests if r["method"] == "POST" and r["url"].endswith("/experiments")]
        seen.append(experiments[0]["body"]["display_name"] if read is None else read(runs[0]["body"]))
    assert seen[0] == seen[1] and seen[0] not in (None, "")
    if option == "no_cache":
        assert seen[0] == {False}


@pytest.mark.parametrize("command", ["submit", "schedule"])
def test_a_vertex_job_keeps_each_tasks_caching_as_compiled(command, gs_spec, vertex_rpcs, tmp_path,
                                                           capsys):  # noqa: F811
    """Caching on (the default) sends the spec's own per-task settings: every task cached but the DataSnapshot and
    DataGateBaseline tasks, which resolve the data and the gate's baseline on every tick (``enable_caching=True``
    would have switched them on)."""
    cron = ["--cron", "0 3 * * 1"] if command == "schedule" else []
    _run([command, "--spec", gs_spec, "--run-name", "r", *VERTEX_FLAGS, *cron], tmp_path, capsys)
    _, job = _sent(vertex_rpcs, "create_pipeline_job" if command == "submit" else "create_schedule")
    caching = {name: t.get("cachingOptions", {}).get("enableCache", False)
               for name, t in job.pipeline_spec["root"]["dag"]["tasks"].items()
               if not name.startswith("LatestBlessedModel-") and name != "DataGateLatest"}  # resolvers: queries
    assert caching.pop("DataSnapshot") is False and caching.pop("DataGateBaseline") is False
    assert set(caching.values()) == {True}


def test_target_flags_are_refused_beside_an_environment(gs_spec, tmp_path, capsys):  # noqa: F811
    from pipeline.cli import run_cli

    envs = tmp_path / "environments.yaml"
    envs.write_text(ENVIRONMENTS)
    code = run_cli(["submit", "--spec", gs_spec, "--env", "v", "--environments", str(envs), "--network", "n"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "--network cannot be combined with --env v: the environment sets the target" in err
