"""``albert-pipeline rehearse`` on small hand-written specs: the backend contract it emulates, and every spec it
refuses. The compiled sample DAG rehearsed in the image environment is ``tests/test_install_check.py``'s."""
import json
import os
import sys

import pytest

from pipeline.rehearsal import rehearsal
from pipeline.cloud import spec
from pipeline.cli import run_cli

ENTRY = ["python", "-c"]
# A stand-in container: writes what it received and an executor_output.json naming its output artifact's metadata.
ECHO = ("import json, os, sys; e = json.loads(sys.argv[1]); out = e['outputs']; "
        "art = out['artifacts']['result']['artifacts'][0]; os.makedirs(art['uri'], exist_ok=True); "
        "open(os.path.join(art['uri'], 'input.json'), 'w').write(json.dumps(e)); "
        "json.dump({'artifacts': {'result': {'artifacts': [{'uri': art['uri'], 'metadata': {'rows': 7}}]}}}, "
        "open(out['outputFile'], 'w'))")


def make_spec(tmp_path, *, schema="2.1.0", runner_arg=None, command=None, data_dir=None, root="gs://b/root"):
    """Importer → Echo: one Importer and one container task that reads its artifact and two parameters."""
    data_dir = data_dir or str(tmp_path / "data")
    if "://" not in data_dir:
        os.makedirs(data_dir, exist_ok=True)
    title = {"instanceSchema": "title: albert_tfx.RawCorpus\ntype: object\n"}
    args = ["{{$}}"] + ([runner_arg] if runner_arg else [])
    data = {
        "displayName": "t",
        "pipelineSpec": {
            "pipelineInfo": {"name": "t"}, "schemaVersion": schema,
            "root": {
                "inputDefinitions": {"parameters": {"data_dir": {"parameterType": "STRING"},
                                                    "steps": {"parameterType": "NUMBER_INTEGER"}}},
                "dag": {"tasks": {
                    "Echo": {"componentRef": {"name": "Echo"}, "dependentTasks": ["Importer"],
                             "inputs": {"artifacts": {"raw": {"taskOutputArtifact": {
                                 "producerTask": "Importer", "outputArtifactKey": "result"}}},
                                 "parameters": {"steps": {"componentInputParameter": "steps"},
                                                "config": {"runtimeValue": {"constant": f"{root}/ckpt"}}}},
                             "taskInfo": {"name": "Echo"}},
                    "Importer": {"componentRef": {"name": "Importer"},
                                 "inputs": {"parameters": {"artifact_uri": {"componentInputParameter": "data_dir"}}},
                                 "taskInfo": {"name": "Importer"}}}}},
            "components": {
                "Echo": {"executorLabel": "Echo_executor",
                         "inputDefinitions": {"parameters": {"steps": {"parameterType": "NUMBER_INTEGER"},
                                                             "config": {"parameterType": "STRING"}},
                                              "artifacts": {"raw": {"artifactType": title}}},
                         "outputDefinitions": {"artifacts": {"result": {"artifactType": title}}}},
                "Importer": {"executorLabel": "Importer_executor",
                             "inputDefinitions": {"parameters": {"artifact_uri": {"parameterType": "STRING"}}},
                             "outputDefinitions": {"artifacts": {"result": {"artifactType": title}}}}},
            "deploymentSpec": {"executors": {
                "Echo_executor": {"container": {"image": "img", "command": command or ENTRY + [ECHO],
                                                "args": args}},
                "Importer_executor": {"importer": {"artifactUri": {"runtimeParameter": "artifact_uri"},
                                                   "typeSchema": title}}}},
        },
        "runtimeConfig": {"gcsOutputDirectory": root,
                          "parameterValues": {"data_dir": data_dir, "steps": 300.0}},
    }
    path = str(tmp_path / "spec.json")
    with open(path, "w") as f:
        json.dump(data, f)
    return path


def test_a_container_task_gets_the_executor_input_the_backends_build(tmp_path):
    path = make_spec(tmp_path)
    summary = rehearsal.rehearse(path, str(tmp_path / "out"), log=lambda line: None)
    assert list(summary["tasks"]) == ["Importer", "Echo"]
    result_uri = summary["tasks"]["Echo"]["outputs"]["result"]
    root = os.path.join(str(tmp_path / "out"), "pipeline_root")
    assert result_uri == os.path.join(root, summary["run_id"], "Echo", "result")
    with open(os.path.join(result_uri, "input.json")) as f:
        received = json.load(f)
    # Parameters only in parameterValues, typed as declared; the compiled root moved to the local one.
    assert received["inputs"]["parameterValues"] == {"steps": 300, "config": f"{root}/ckpt"}
    assert "parameters" not in received["inputs"]
    (raw,) = received["inputs"]["artifacts"]["raw"]["artifacts"]
    assert raw == {"name": summary["tasks"]["Importer"]["artifacts"]["result"], "uri": str(tmp_path / "data"),
                   "type": {"instanceSchema": "title: albert_tfx.RawCorpus\ntype: object\n"}, "metadata": {}}
    assert raw["name"] == f"projects/rehearsal/locations/local/metadataStores/default/artifacts/{summary['run_id']}-1"
    assert received["outputs"]["outputFile"] == os.path.join(root, summary["run_id"], "Echo", "executor_output.json")
    assert rehearsal.was_rehearsed(path)
    with open(path, "a") as f:
        f.write(" ")  # another spec now, by content
    assert not rehearsal.was_rehearsed(path)


def test_the_task_runs_in_the_named_environment_from_an_empty_folder_without_pythonpath(tmp_path, monkeypatch):
    probe = ("import json, os, sys; e = json.loads(sys.argv[1]); out = e['outputs']; "
             "json.dump({'exe': sys.executable, 'cwd': os.listdir('.'), 'pp': os.environ.get('PYTHONPATH')}, "
             "open(out['artifacts']['result']['artifacts'][0]['uri'] + '/env.json', 'w')); "
             "json.dump({}, open(out['outputFile'], 'w'))")
    path = make_spec(tmp_path, command=["python", "-c", probe])
    monkeypatch.setenv("PYTHONPATH", "/somewhere/else")
    summary = rehearsal.rehearse(path, str(tmp_path / "out"), python=sys.executable, log=lambda line: None)
    with open(os.path.join(summary["tasks"]["Echo"]["outputs"]["result"], "env.json")) as f:
        seen = json.load(f)
    assert os.path.dirname(seen["exe"]) == os.path.dirname(sys.executable)
    assert seen["cwd"] == [] and seen["pp"] is None


def _cli(argv, capsys):
    code = run_cli(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_a_failing_task_ends_the_rehearsal_naming_it_and_its_log(tmp_path, capsys):
    path = make_spec(tmp_path, command=["python", "-c", "import sys; print('ValueError: no rows'); sys.exit(3)"])
    code, out, err = _cli(["rehearse", "--spec", path, "--output-dir", str(tmp_path / "out")], capsys)
    assert code == 1 and out == ""
    line = err.strip().splitlines()[-1]
    assert line.startswith("albert-pipeline rehearse: failed: task Echo failed (exit 3): ValueError: no rows (log: ")
    assert not rehearsal.was_rehearsed(path)


@pytest.mark.parametrize("case, expected", [
    ("schema", "has pipeline-spec schema 2.0.0, not 2.1.0: the backends fill only `parameterValues`"),
    ("unknown", "has no parameter learning_rate (it has data_dir, steps)"),
    ("remote_data", "task Importer: the folder it imports, 'gs://b/data', is not on this machine"),
])
def test_a_spec_that_cannot_run_here_is_refused_before_any_task(tmp_path, capsys, case, expected):
    path = make_spec(tmp_path, schema="2.0.0" if case == "schema" else "2.1.0",
                     data_dir="gs://b/data" if case == "remote_data" else None)
    argv = ["rehearse", "--spec", path, "--output-dir", str(tmp_path / "out")]
    if case == "unknown":
        argv += ["--parameters", json.dumps({"learning_rate": 1})]
    code, out, err = _cli(argv, capsys)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert expected in err
    assert not os.path.exists(str(tmp_path / "out" / "pipeline_root" / "Echo"))


def test_submit_hints_at_a_rehearsal_only_for_a_spec_that_never_passed_one(tmp_path, capsys):
    from pipeline.cli import _hint_rehearsal

    path = make_spec(tmp_path)
    _hint_rehearsal(path)
    assert f"hint: {path} has not been rehearsed; `albert-pipeline rehearse --spec {path}`" in capsys.readouterr().err
    rehearsal.rehearse(path, str(tmp_path / "out"), log=lambda line: None)
    _hint_rehearsal(path)
    assert capsys.readouterr().err == ""


def test_the_kfp_package_carries_the_compiled_values_as_parameter_defaults(tmp_path):
    import yaml

    from pipeline.cloud import submit as cloud

    package = cloud.kfp_package(make_spec(tmp_path))
    with open(package) as f:
        doc = yaml.safe_load(f)
    declared = doc["root"]["inputDefinitions"]["parameters"]
    assert declared["steps"] == {"parameterType": "NUMBER_INTEGER", "defaultValue": 300, "isOptional": True}
    assert declared["data_dir"]["defaultValue"] == str(tmp_path / "data")
    assert doc["defaultPipelineRoot"] == "gs://b/root" and doc["schemaVersion"] == "2.1.0"
    os.makedirs(tmp_path / "old")
    old = make_spec(tmp_path / "old", schema="2.0.0")
    with pytest.raises(cloud.CloudConfigError, match="open-source Kubeflow Pipelines passes no parameters"):
        cloud.kfp_package(old)


def test_spec_reads_both_schema_versions_of_a_value():
    assert spec.constant({"runtimeValue": {"constant": "x"}}) == "x"
    assert spec.constant({"runtimeValue": {"constantValue": {"intValue": "3"}}}) == 3
    data = {"pipelineSpec": {"root": {"inputDefinitions": {"parameters": {
        "n": {"parameterType": "NUMBER_INTEGER"}, "s": {"parameterType": "STRING"}}}}},
        "runtimeConfig": {"parameters": {"n": {"intValue": "5"}}, "parameterValues": {"s": "a"}}}
    assert spec.parameter_defaults(data) == {"n": 5, "s": "a"}


def test_backend_names_are_read_back_from_the_executor_input_by_tfxs_own_hash():
    """The ids TFX's entrypoint gives the executor's artifacts map back to the names the backend sent."""
    from kfp.pipeline_spec import pipeline_spec_pb2
    from google.protobuf import json_format
    from tfx.orchestration.kubeflow.v2.container import kubeflow_v2_entrypoint_utils as entrypoint

    from components import backend_names

    name = "projects/p/locations/l/metadataStores/default/artifacts/123"
    executor_input = {"inputs": {"artifacts": {"model": {"artifacts": [{
        "name": name, "uri": "gs://b/m", "type": {"schemaTitle": "tfx.Model"}}]}}},
        "outputs": {"outputFile": "gs://b/o.json"}}
    parsed = pipeline_spec_pb2.ExecutorInput()
    json_format.Parse(json.dumps(executor_input), parsed)
    (model,) = entrypoint.parse_raw_artifact_dict(parsed.inputs.artifacts)["model"]
    names = backend_names.artifact_names(["x", "--executor_class_path", "a.B", "--json_serialized_invocation_args",
                                          json.dumps(executor_input)])
    assert names == {model.id: name}
    assert backend_names.artifact_names(["albert-pipeline", "run"]) == {}


def test_the_images_bundled_sample_is_read_from_this_projects_data_folder(tmp_path):
    """A spec compiled inside the image names /opt/albert-tfx/data/…; a folder that merely contains those words
    elsewhere is left alone."""
    from pipeline.settings.home import PROJECT_HOME

    path = make_spec(tmp_path, data_dir="/opt/albert-tfx/data/sample/books")
    summary = rehearsal.rehearse(path, str(tmp_path / "out"), log=lambda line: None)
    assert summary["tasks"]["Importer"]["outputs"]["result"] == os.path.join(PROJECT_HOME, "data", "sample", "books")
    lookalike = tmp_path / "mirror" / "opt" / "albert-tfx" / "data" / "sample"
    lookalike.mkdir(parents=True)
    path = make_spec(tmp_path, data_dir=str(lookalike))
    summary = rehearsal.rehearse(path, str(tmp_path / "out2"), log=lambda line: None)
    assert summary["tasks"]["Importer"]["outputs"]["result"] == str(lookalike)


def test_an_output_parameter_reaches_the_task_that_reads_it(tmp_path):
    """A ``taskOutputParameter`` is the producer's ``executor_output.json`` ``parameterValues`` entry."""
    producer = ECHO.replace("{'artifacts':", "{'parameterValues': {'count': 7}, 'artifacts':")
    path = make_spec(tmp_path, command=ENTRY + [producer])
    with open(path) as f:
        data = json.load(f)
    ps = data["pipelineSpec"]
    ps["components"]["Echo"]["outputDefinitions"]["parameters"] = {"count": {"parameterType": "NUMBER_INTEGER"}}
    ps["root"]["dag"]["tasks"]["Next"] = {
        "componentRef": {"name": "Next"}, "dependentTasks": ["Echo"], "taskInfo": {"name": "Next"},
        "inputs": {"parameters": {"n": {"taskOutputParameter": {"producerTask": "Echo", "outputParameterKey": "count"}}}}}
    ps["components"]["Next"] = {"executorLabel": "Next_executor",
                                "inputDefinitions": {"parameters": {"n": {"parameterType": "NUMBER_INTEGER"}}},
                                "outputDefinitions": {"artifacts": {"result": ps["components"]["Echo"][
                                    "outputDefinitions"]["artifacts"]["result"]}}}
    ps["deploymentSpec"]["executors"]["Next_executor"] = {"container": {"image": "img", "command": ENTRY + [ECHO],
                                                                        "args": ["{{$}}"]}}
    with open(path, "w") as f:
        json.dump(data, f)
    summary = rehearsal.rehearse(path, str(tmp_path / "out"), log=lambda line: None)
    with open(os.path.join(summary["tasks"]["Next"]["outputs"]["result"], "input.json")) as f:
        assert json.load(f)["inputs"]["parameterValues"] == {"n": 7}


def test_every_destination_outside_the_output_folder_is_moved_into_it_and_listed(tmp_path):
    """A ``gs://`` location outside the pipeline root and a remote Beam runner: moved, and the summary says so."""
    path = make_spec(tmp_path, runner_arg="--runner=DataflowRunner")
    with open(path) as f:
        data = json.load(f)
    echo = data["pipelineSpec"]["root"]["dag"]["tasks"]["Echo"]["inputs"]["parameters"]
    echo["config"] = {"runtimeValue": {"constant": json.dumps({"temp": "gs://other-bucket/tmp/x",
                                                               "root": "gs://b/root/ckpt"})}}
    with open(path, "w") as f:
        json.dump(data, f)
    out = str(tmp_path / "out")
    summary = rehearsal.rehearse(path, out, log=lambda line: None)
    with open(os.path.join(summary["tasks"]["Echo"]["outputs"]["result"], "input.json")) as f:
        received = json.loads(json.load(f)["inputs"]["parameterValues"]["config"])
    assert received == {"temp": os.path.join(out, "gs", "other-bucket", "tmp", "x"),
                        "root": os.path.join(out, "pipeline_root", "ckpt")}
    assert summary["moved"] == {"--runner=DataflowRunner": "--runner=" + rehearsal.LOCAL_RUNNER,
                                "gs://other-bucket/tmp/x": os.path.join(out, "gs", "other-bucket", "tmp", "x")}
    assert summary["not_sent"] == {}


def _with_caching(path):
    with open(path) as f:
        data = json.load(f)
    data["pipelineSpec"]["root"]["dag"]["tasks"]["Echo"]["cachingOptions"] = {"enableCache": True}
    with open(path, "w") as f:
        json.dump(data, f)
    return path


def test_rehearsals_in_one_folder_share_a_store_importers_reuse_and_the_cache_keys_on_kfps_fields(tmp_path):
    """The second rehearsal imports the same artifact (same URI and type) and is a cache hit; a changed parameter
    value is a miss; without ``enableCache`` in the spec the task always runs."""
    path = _with_caching(make_spec(tmp_path))
    out = str(tmp_path / "out")
    lines = []
    first = rehearsal.rehearse(path, out, log=lines.append)
    second = rehearsal.rehearse(path, out, log=lines.append)
    assert [t["outcome"] for t in first["tasks"].values()] == ["recorded", "cache miss, ran"]
    assert [t["outcome"] for t in second["tasks"].values()] == ["reused", f"cache hit ({first['run_id']})"]
    assert second["tasks"]["Importer"]["artifacts"] == first["tasks"]["Importer"]["artifacts"]
    assert second["tasks"]["Echo"]["outputs"] == first["tasks"]["Echo"]["outputs"]
    assert not os.path.exists(os.path.join(out, "pipeline_root", second["run_id"]))  # nothing ran
    assert lines[-1].startswith(f"[2/2] Echo: container cache hit ({first['run_id']}) in ")
    third = rehearsal.rehearse(path, out, parameter_values={"steps": 301}, log=lambda line: None)
    assert third["tasks"]["Echo"]["outcome"] == "cache miss, ran"
    os.makedirs(tmp_path / "plain")
    uncached = make_spec(tmp_path / "plain")
    for _ in range(2):
        assert rehearsal.rehearse(uncached, str(tmp_path / "out2"), log=lambda line: None)["tasks"]["Echo"][
            "outcome"] == "ran"


def test_a_resolver_answers_the_compiled_filter_with_the_newest_match_of_this_pipeline(tmp_path):
    from pipeline.rehearsal.rehearsal_store import QueryError, Store, matches

    store = Store(str(tmp_path))
    blessing = {"type": {"schemaTitle": "tfx.ModelBlessing"}, "uri": "/u"}
    for i, (blessed, pipeline) in enumerate([(1, "p"), (0, "p"), (1, "q"), (1, "p"), (0, "p")]):
        store.record({**blessing, "name": f"b{i}", "metadata": {"blessed": float(blessed)}}, pipeline=pipeline,
                     run_id="r", task="Blesser", kind="container")
    query = 'schema_title="tfx.ModelBlessing" AND state=LIVE AND metadata.blessed.number_value=1'
    assert store.resolve(query, "p")["name"] == "b3"
    assert store.resolve(query, "q")["name"] == "b2"
    assert store.resolve(query, "other") is None
    assert store.resolve('schema_title="tfx.Model" AND state=LIVE AND name="b3"', "p") is None
    assert matches('schema_title="tfx.ModelBlessing" AND name="b4"', store.data["artifacts"][4])
    with pytest.raises(QueryError, match="create_time"):
        store.resolve('schema_title="tfx.ModelBlessing" AND create_time>5', "p")
    store.save()
    assert Store(str(tmp_path)).resolve(query, "p")["name"] == "b3"  # kept between rehearsals


def test_rehearsals_in_a_row_fork_their_tasks_from_the_launcher_given_and_leave_it_open(tmp_path):
    """``rehearse(launcher=…)``, a schedule's ticks rehearsed in a row: each rehearsal forks its ``python -m`` tasks
    from the launcher given (its imports paid once for all of them), and leaves it serving, failed task or not. A
    launcher started with another environment than the tasks get is refused before any task is forked from it."""
    from pipeline.tasks.task_launcher import WarmLauncher

    python = os.path.join(os.path.dirname(sys.executable), "python")
    path = make_spec(tmp_path, command=["python", "-m", "json.tool"])  # its argument, the executor input, is no file
    with WarmLauncher(python, rehearsal.task_environment(os.path.dirname(python)), preload=["json"]) as launcher:
        forked, real_run = [], launcher.run
        launcher.run = lambda argv, **kwargs: forked.append(argv[:3]) or real_run(argv, **kwargs)
        for n in (1, 2):
            with pytest.raises(rehearsal.TaskFailed,
                               match=r"^task Echo failed \(exit 2\): python -m json.tool: error: argument infile: "):
                rehearsal.rehearse(path, str(tmp_path / f"out{n}"), python=python, launcher=launcher,
                                   log=lambda line: None)
            assert launcher._process.poll() is None  # still serving
    assert forked == [["python", "-m", "json.tool"]] * 2
    with WarmLauncher(python, {"PATH": os.path.dirname(python)}, preload=[]) as other:
        other.run = lambda argv, **kwargs: pytest.fail("a task was forked from a launcher of another environment")
        with pytest.raises(rehearsal.RehearsalError, match="task Echo: the launcher given runs .* with another "
                                                           "environment than this rehearsal's tasks get"):
            rehearsal.rehearse(path, str(tmp_path / "out3"), python=python, launcher=other, log=lambda line: None)
