"""The data gate's baseline in a compiled spec: the DataGateBaseline task (pipeline/tasks/gate_baseline_task.py) applies
the local resolver's rule (components/datagate/datagate_result.py ``select_inputs``) to the newest DataGateResult and that
result's own baseline, run as the backends run it: its exact command, given an ``ExecutorInput``.

The ticks it serves (span 1; nothing new, a cache hit of DataGate; span 2 compared with span 1; a garbage span 3
compared with span 2), rehearsed task by task in the image environment: tests/test_install_check.py.
"""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import REPO


def _corpus(span, fingerprint="f"):
    """A DataSnapshot task's ``CorpusGen_data``: the corpus read, span ``span``."""
    return json.dumps({"wikipedia": {"spans": [span], "fingerprint": f"{fingerprint}{span}"}}, sort_keys=True)


def _result(uri, span, passed, baseline=None, accepted=0, corpus=None):
    """A DataGateResult as the resolver hands it over: its custom properties as metadata numbers (floats)."""
    from components.datagate.datagate_result import data_fingerprint

    meta = {"span": float(span), "passed": float(passed), "accepted": float(accepted), "documents": 19.0,
            "data_fingerprint": data_fingerprint(corpus or _corpus(span))}
    if baseline is not None:
        meta.update({"baseline": baseline[0], "baseline_span": float(baseline[1])})
    return {"name": f"projects/p/artifacts/{span}", "type": {"schemaTitle": "albert_tfx.DataGateResult"},
            "uri": uri, "metadata": meta}


def _run(tmp_path, corpus, results):
    from pipeline.tasks.gate_baseline_task import MODULE

    output_file = tmp_path / "task" / "executor_output.json"
    executor_input = {"inputs": {"parameterValues": {"corpus": corpus},
                                 "artifacts": {"result": {"artifacts": results}}},
                      "outputs": {"outputFile": str(output_file)}}
    done = subprocess.run([sys.executable, "-m", MODULE, "--executor_input", json.dumps(executor_input)], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(output_file.read_text())["parameterValues"], done.stdout


def test_the_first_span_and_a_tick_with_nothing_new_get_the_same_parameter(tmp_path):
    """Tick 1 finds no result; tick 2 finds tick 1's, of the same span: no baseline either time, so DataGate's
    parameters are unchanged (a cache hit)."""
    first, out = _run(tmp_path, _corpus(1), [])
    assert first == {"baseline_uris": '{"acceptance": null, "baseline": null}'}
    assert out.splitlines() == ["DataGateBaseline: newest result: None", "DataGateBaseline: baseline = None",
                                "DataGateBaseline: acceptance = None"]
    second, _ = _run(tmp_path, _corpus(1), [_result("/pipeline_root/run-1/DataGate/result", 1, 1)])
    assert second == first


def test_a_new_span_is_compared_with_the_newest_result_that_went_through(tmp_path):
    values, out = _run(tmp_path, _corpus(2), [_result("/pipeline_root/run-1/DataGate/result", 1, 1)])
    assert json.loads(values["baseline_uris"]) == {"baseline": "/pipeline_root/run-1/DataGate/result", "acceptance": None}
    assert "DataGateBaseline: baseline = /pipeline_root/run-1/DataGate/result" in out.splitlines()


def test_after_a_failed_span_the_chain_gives_the_last_span_that_went_through():
    """The newest result failed (span 3): its own baseline (span 2) is the baseline of span 3 again (a rerun: the
    same parameter as the failed run's) and of span 4."""
    from pipeline.tasks.gate_baseline_task import choose

    failed = _result("/pipeline_root/run-5/DataGate/result", 3, 0, baseline=("/pipeline_root/run-3/DataGate/result", 2))
    for span in (3, 4):
        assert choose(_corpus(span), failed) == {"baseline": "/pipeline_root/run-3/DataGate/result", "acceptance": None}
    # A result that passed is the next span's baseline, and not its own span's.
    passed = _result("/pipeline_root/run-3/DataGate/result", 2, 1, baseline=("/pipeline_root/run-1/DataGate/result", 1))
    assert choose(_corpus(3), passed) == {"baseline": "/pipeline_root/run-3/DataGate/result", "acceptance": None}
    assert choose(_corpus(2), passed) == {"baseline": "/pipeline_root/run-1/DataGate/result", "acceptance": None}
    # A backfill older than the chain's baseline: the absolute limits alone (the chain holds no older result).
    assert choose(_corpus(1), passed) == {"baseline": None, "acceptance": None}


def test_an_accepted_span_stays_accepted_for_the_same_data_only():
    from pipeline.tasks.gate_baseline_task import choose

    accepted = _result("/pipeline_root/run-6/DataGate/result", 3, 0, accepted=1,
                       baseline=("/pipeline_root/run-3/DataGate/result", 2))
    assert choose(_corpus(3), accepted) == {"baseline": "/pipeline_root/run-3/DataGate/result",
                                            "acceptance": "/pipeline_root/run-6/DataGate/result"}
    # The same span with other raw data (a changed fingerprint): not accepted by it.
    assert choose(_corpus(3, fingerprint="g"), accepted) == {"baseline": "/pipeline_root/run-3/DataGate/result",
                                                             "acceptance": None}
    # The next span: the accepted one went through, so it is the baseline.
    assert choose(_corpus(4), accepted) == {"baseline": "/pipeline_root/run-6/DataGate/result", "acceptance": None}


# -- the compiled spec ------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    from pipeline.settings.configs import build_config
    from pipeline.cloud.kubeflow_v2_runner import compile_pipeline
    from pipeline.settings.resolve import resolve_config

    root = tmp_path_factory.mktemp("gate_baseline")
    config = resolve_config(build_config("sample", pipeline_root="gs://b/root"), local=False)
    path = compile_pipeline(config, str(root / "spec.json"), image="img:1")
    with open(path) as f:
        return json.load(f)["pipelineSpec"]


def test_compile_wires_the_newest_result_through_the_task_into_the_data_gate(compiled):
    from pipeline.settings.configs import GATE_BASELINE_NODE
    from pipeline.tasks.gate_baseline_task import TASK

    assert TASK == GATE_BASELINE_NODE  # the task chooses what the local DAG's resolver of that name chooses
    tasks = compiled["root"]["dag"]["tasks"]
    task = tasks["DataGateBaseline"]
    assert task["cachingOptions"] == {"enableCache": False}
    assert task["dependentTasks"] == ["DataGateLatest", "DataSnapshot"]
    assert task["inputs"] == {
        "artifacts": {"result": {"taskOutputArtifact": {"producerTask": "DataGateLatest",
                                                        "outputArtifactKey": "result"}}},
        "parameters": {"corpus": {"taskOutputParameter": {"producerTask": "DataSnapshot",
                                                          "outputParameterKey": "CorpusGen_data"}}}}
    assert tasks["DataGate"]["inputs"]["parameters"]["baseline_uris"] == {
        "taskOutputParameter": {"producerTask": "DataGateBaseline", "outputParameterKey": "baseline_uris"}}
    assert "DataGateBaseline" in tasks["DataGate"]["dependentTasks"]
    # No resolver artifact among DataGate's inputs, the artifacts of its cache key.
    assert sorted(tasks["DataGate"]["inputs"]["artifacts"]) == ["documents", "glue_dev", "race_dev", "squad_dev"]
    executors = compiled["deploymentSpec"]["executors"]
    # The resolver's query names the result's own schema title (TFX compiles "tfx.Artifact" for a custom type).
    assert executors["DataGateLatest_executor"] == {"resolver": {"outputArtifactQueries": {
        "result": {"filter": 'schema_title="albert_tfx.DataGateResult" AND state=LIVE'}}}}
    assert executors["DataGateBaseline_executor"]["container"] == {
        "image": "img:1", "command": ["python", "-m", "pipeline.tasks.gate_baseline_task"],
        "args": ["--executor_input", "{{$}}"]}
