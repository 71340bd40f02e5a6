"""Crash and rerun (slow: three killed/rerun invocations).

``albert-pipeline run --preset sample`` (small overrides, no benchmarks) is run with two multi-processing workers:
SIGKILLed in the middle of PretrainingDataGen, rerun and SIGKILLed in the middle of training (after the step-10
checkpoint of 30 steps), then rerun to the end. Checks: completed components come from the MLMD cache (CACHED), the
interrupted data step redoes its work and the interrupted training resumes from its last checkpoint (export_info
start_step > 0) and no LIVE artifact duplicates. The same runs' documents / vocabulary / TFRecord bytes against the
shared sample run's: tests/reliability/test_crash_rerun_bytes.py, late in the run order, when that run has ended
(the runs are made once per session for both files: tests/reliability/crash_runs.py).
"""
import json
import os

import pytest

from tests.conftest import shared_tmp
from tests.reliability.crash_runs import CHECKPOINT_EVERY, DATA_NODES, STEPS, crash_runs


pytestmark = [pytest.mark.slow, pytest.mark.longest_first(2)]


@pytest.fixture(scope="module")
def runs(tmp_path_factory, request):
    return crash_runs(shared_tmp(tmp_path_factory, request.config))


def test_kill_during_datagen_publishes_no_examples(runs):
    after = runs["after_kill_data"]
    assert "Examples" not in after["live"] and "albert_tfx.DataGenStatistics" not in after["live"]
    assert {"CorpusGen", "VocabGen"} <= set(after["states"])
    assert "COMPLETE" not in after["states"].get("PretrainingDataGen", [])
    # What the killed executor left is only a staging folder, never a file named like output.
    for d in after["examples_dirs"]:
        assert all(name.startswith(".staging-") for name in os.listdir(d)), os.listdir(d)


def test_rerun_serves_completed_steps_from_cache_and_redoes_the_killed_one(runs):
    assert runs["run2"]["CorpusGen"] == ["CACHED"] and runs["run2"]["VocabGen"] == ["CACHED"]
    assert runs["run2"]["PretrainingDataGen"] == ["COMPLETE"]
    for node in DATA_NODES:
        assert runs["run3"][node] == ["CACHED"], runs["run3"]
    assert runs["run3"]["Trainer"] == ["COMPLETE"] and runs["run3"]["BenchmarkReport"] == ["COMPLETE"]


def test_training_resumes_from_the_last_checkpoint(runs):
    (model,) = runs["live"]["Model"]
    info = json.load(open(os.path.join(model, "albert", "export_info.json")))
    saved = [s for s in runs["checkpoints_at_kill"] if s < STEPS]
    assert saved and info["start_step"] == max(saved) >= CHECKPOINT_EVERY
    assert info["final_step"] == STEPS
    (model_run,) = runs["live"]["ModelRun"]
    steps = [json.loads(line)["step"] for line in open(os.path.join(model_run, "train_history.jsonl"))
             if json.loads(line)["split"] == "train"]
    assert steps[-1] == STEPS and steps.count(STEPS) == 1


def test_no_duplicate_live_artifacts(runs):
    for type_name in ("albert_tfx.Documents", "albert_tfx.SentencePieceModel", "Examples",
                      "albert_tfx.DataGenStatistics", "Model", "ModelRun", "albert_tfx.BenchmarkReport"):
        assert len(runs["live"][type_name]) == 1, (type_name, runs["live"][type_name])


def test_multi_process_beam_workers_put_no_library_warning_on_the_terminal(runs):
    """The three runs' terminals (their stdout and stderr, in the logs) with two multi-processing Beam workers: no
    library warning line; the allow-list is tests/test_cli_run.py's, empty. (Beam's relayed "No
    semi_persistent_directory found" of each worker process it starts is pipeline/local/logs.py's LIBRARY_NOISE.)"""
    for name in ("kill_data", "kill_train", "final"):
        with open(os.path.join(runs["base"], f"{name}.log"), errors="replace") as f:
            warnings = [line for line in f.read().splitlines() if line.startswith("albert-pipeline: warning:")]
        assert warnings == [], (name, warnings)
