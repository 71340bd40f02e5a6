"""The DataSnapshot task of a compiled spec (pipeline/tasks/snapshot_task.py): in the spec ``compile`` writes, and run as
the backends run it (its exact command, given an ``ExecutorInput``), against the local run's resolution.

The four ticks it serves, rehearsed task by task: tests/test_install_check.py.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from tests.conftest import REPO

SAMPLE = os.path.join(REPO, "data", "sample")


def _layout(root):
    """Spans 1 and 2 of a Wikipedia pattern, an unpatterned GLUE folder."""
    for span in (1, 2):
        shutil.copytree(os.path.join(SAMPLE, "wikipedia"), root / "wiki" / f"span-{span}")
    shutil.copytree(os.path.join(SAMPLE, "glue"), root / "glue")
    return {"corpus.wikipedia_dir": str(root / "wiki" / "span-{SPAN}"), "corpus.books_dir": "null",
            "benchmarks.glue_dir": str(root / "glue"), "benchmarks.squad_dir": "null",
            "benchmarks.race_dir": "null"}


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    """(data root, the locations, the compiled spec JSON) of the sample preset on a span layout."""
    from pipeline.settings.configs import build_config
    from pipeline.cloud.kubeflow_v2_runner import compile_pipeline

    root = tmp_path_factory.mktemp("snapshot")
    locations = _layout(root)
    config = build_config("sample", overrides=[f"{k}={v}" for k, v in locations.items()] + ["data.span_window=2"],
                          pipeline_root="gs://b/root")
    path = compile_pipeline(config, str(root / "spec.json"), image="img:1")
    with open(path) as f:
        return root, locations, json.load(f)


def _run_task(spec, root, parameters=None):
    """The DataSnapshot task's container command run with an ExecutorInput built from the spec: (exit code,
    stderr, output parameter values or None)."""
    from pipeline.cloud import spec as spec_lib

    pipeline_spec = spec["pipelineSpec"]
    task = pipeline_spec["root"]["dag"]["tasks"]["DataSnapshot"]
    container = pipeline_spec["deploymentSpec"]["executors"]["DataSnapshot_executor"]["container"]
    values = {**spec_lib.parameter_defaults(spec), **(parameters or {})}
    inputs = {k: values[v["componentInputParameter"]] if "componentInputParameter" in v else spec_lib.constant(v)
              for k, v in task["inputs"]["parameters"].items()}
    output_file = root / "task" / "executor_output.json"
    executor_input = json.dumps({"inputs": {"parameterValues": inputs},
                                 "outputs": {"outputFile": str(output_file)}})
    argv = [a.replace("{{$}}", executor_input) for a in container["command"] + container["args"]]
    assert argv[0] == "python"
    done = subprocess.run([sys.executable] + argv[1:], capture_output=True, text=True, cwd=str(root),
                          env={**os.environ, "PYTHONPATH": REPO})
    if not output_file.exists():
        return done.returncode, done.stderr, None
    with open(output_file) as f:
        return done.returncode, done.stderr, json.load(f)["parameterValues"]


def test_the_task_runs_on_every_tick_and_feeds_the_importers_and_the_nodes_that_read_data(compiled):
    _, _, spec = compiled
    tasks = spec["pipelineSpec"]["root"]["dag"]["tasks"]
    caching = {name: t.get("cachingOptions", {}).get("enableCache", False) for name, t in tasks.items()
               if not name.startswith("LatestBlessedModel-") and name != "DataGateLatest"}  # resolvers: queries
    assert caching.pop("DataSnapshot") is False and caching.pop("DataGateBaseline") is False  # the gate's baseline
    assert set(caching.values()) == {True}
    source = {"taskOutputParameter": {"producerTask": "DataSnapshot", "outputParameterKey": "wikipedia_uri"}}
    assert tasks["WikipediaImporter"]["inputs"]["parameters"]["artifact_uri"] == source
    for node in ("CorpusGen", "GlueBenchmark"):
        assert tasks[node]["inputs"]["parameters"]["data_snapshot"]["taskOutputParameter"] == {
            "producerTask": "DataSnapshot", "outputParameterKey": f"{node}_data"}
        assert "DataSnapshot" in tasks[node]["dependentTasks"]
    assert spec["runtimeConfig"]["parameterValues"]["data_span"] == 0  # the latest span; a backfill sets it


def test_the_task_resolves_what_a_local_run_resolves(compiled):
    """Its outputs, run from the spec's command, are what a local run of the same configuration gives its
    Importers and nodes: one resolution, two places it runs."""
    from pipeline.settings.configs import IMPORTERS, build_config
    from pipeline.settings.resolve import resolve_config

    root, locations, spec = compiled
    code, err, values = _run_task(spec, root)
    assert code == 0, err
    local = resolve_config(build_config("sample", overrides=[f"{k}={v}" for k, v in locations.items()]
                                        + ["data.span_window=2"], output_dir=str(root / "local")), local=True)
    params = local.node_parameters()
    for node in ("CorpusGen", "GlueBenchmark"):
        assert values[f"{node}_data"] == params[node]["data_snapshot"]
    for key in ("wikipedia", "glue"):
        assert values[f"{key}_uri"] == params[IMPORTERS[key][0]]["artifact_uri"]
    read = json.loads(values["CorpusGen_data"])["wikipedia"]
    assert (read["uri"], read["folders"], read["spans"]) == (str(root / "wiki"), ["span-1", "span-2"], [1, 2])


def test_a_backfill_reads_the_span_it_names_and_a_missing_span_fails_the_task_with_one_line(compiled):
    root, _, spec = compiled
    code, err, values = _run_task(spec, root, {"data_span": 1})
    assert code == 0, err
    assert json.loads(values["CorpusGen_data"])["wikipedia"]["spans"] == [1]
    os.remove(root / "task" / "executor_output.json")
    code, err, values = _run_task(spec, root, {"data_span": 7})
    assert (code, values) == (2, None)
    assert err.strip().splitlines() == [
        f"DataSnapshot: config corpus.wikipedia_dir={str(root / 'wiki' / 'span-{SPAN}')!r}: no span 7 (data.span); "
        "there are spans 1, 2"]


@pytest.mark.parametrize("module", ["pipeline.tasks.snapshot_task", "pipeline.tasks.init_from_task", "pipeline.tasks.gate_baseline_task"])
def test_each_lightweight_task_refuses_a_command_line_it_does_not_know(module):
    """The three tasks' shared shell (:func:`pipeline.tasks.snapshot_task.run_task`), run as the backends run it."""
    done = subprocess.run([sys.executable, "-m", module, "--executor-input", "{}"], cwd=REPO, capture_output=True,
                          text=True, timeout=120)
    assert (done.returncode, done.stderr.strip()) == (2, f"usage: python -m {module} --executor_input JSON")
