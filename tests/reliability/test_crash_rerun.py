"""Crash and rerun, and pipeline-level determinism (slow: three killed/rerun invocations).

``albert-pipeline run --preset sample`` (small overrides, no benchmarks) is run with two multi-processing workers:
SIGKILLed in the middle of PretrainingDataGen, rerun and SIGKILLed in the middle of training (after the step-20
checkpoint), then rerun to the end. Checks: completed components come from the MLMD cache (CACHED), the
interrupted data step redoes its work and the interrupted training resumes from its last checkpoint (export_info
start_step > 0), no LIVE artifact duplicates, and documents / vocabulary / TFRecord bytes equal those of the shared
sample run (tests/conftest.py: uninterrupted, one DirectRunner worker; the overrides here touch only the Trainer and
the benchmarks, so the data nodes have the same parameters and seed). Unit-level determinism:
tests/test_corpus_beam.py, tests/test_vocab_lib.py, tests/test_datagen_beam.py.
"""
import glob
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from tests.reliability import fixtures, mlmd

OVERRIDES = ["train.num_train_steps=60", "train.checkpoint_every=20", "benchmarks.glue_dir=none",
             "benchmarks.squad_dir=none", "benchmarks.race_dir=none"]
TWO_WORKERS = "beam_args=--direct_running_mode=multi_processing,--direct_num_workers=2"
DATA_NODES = ("CorpusGen", "VocabGen", "PretrainingDataGen")


def _cmd(out, extra=()):
    exe = os.path.join(os.path.dirname(sys.executable), "albert-pipeline")
    sets = [f"--set={o}" for o in OVERRIDES + list(extra)]
    return [exe, "run", "--preset", "sample", "--output-dir", str(out)] + sets


def _env():
    return {**os.environ, "PYTHONPATH": fixtures.REPO, "TF_CPP_MIN_LOG_LEVEL": "2"}


def _start(cmd, log):
    return subprocess.Popen(cmd, env=_env(), cwd=fixtures.REPO, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)  # own process group: the kill takes its Beam workers too


def _kill_when(proc, ready, what, timeout=900):
    deadline = time.time() + timeout
    while not ready():
        assert proc.poll() is None, f"the run ended (rc {proc.returncode}) before {what}"
        assert time.time() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL


def _files(root):
    out = {}
    for dirpath, _, names in os.walk(root):
        for name in names:
            path = os.path.join(dirpath, name)
            out[os.path.relpath(path, root)] = open(path, "rb").read()
    return out


def _outputs(metadata_path):
    store = mlmd.open_store(metadata_path)
    live = mlmd.live_artifacts(store)
    return {t: [a.uri for a in arts] for t, arts in live.items()}


@pytest.fixture(scope="module")
def runs(tmp_path_factory, sample_run_pending):
    base = tmp_path_factory.mktemp("crash")
    out = base / "killed"
    logs = {name: open(base / f"{name}.log", "wb") for name in ("kill_data", "kill_train", "final")}
    root = out / "pipeline_root"
    metadata = str(out / "metadata.sqlite")
    record = {"base": str(base)}
    try:
        # 1. Killed while PretrainingDataGen's Beam job runs (its staging folder exists, nothing published).
        proc = _start(_cmd(out, [TWO_WORKERS]), logs["kill_data"])
        staging = str(root / "PretrainingDataGen" / "examples" / "*" / ".staging-*" / "Split-train")
        _kill_when(proc, lambda: glob.glob(staging), "PretrainingDataGen to start")
        store = mlmd.open_store(metadata)
        record["after_kill_data"] = {"states": mlmd.states_by_node(store), "live": mlmd.live_artifacts(store),
                                     "examples_dirs": glob.glob(str(root / "PretrainingDataGen" / "examples" / "*"))}
        mark1 = mlmd.max_execution_id(store)

        # 2. Rerun, killed after the step-20 checkpoint of training.
        proc = _start(_cmd(out, [TWO_WORKERS]), logs["kill_train"])
        ckpt = str(root / "_checkpoints" / "*" / "ckpt-20.index")
        _kill_when(proc, lambda: glob.glob(ckpt), "the step-20 checkpoint")
        store = mlmd.open_store(metadata)
        record["run2"] = mlmd.states_by_node(store, mark1)
        record["run2_live"] = {t: len(a) for t, a in mlmd.live_artifacts(store).items()}
        mark2 = mlmd.max_execution_id(store)
        record["checkpoints_at_kill"] = sorted(
            int(p.rsplit("ckpt-", 1)[1].split(".")[0]) for p in glob.glob(str(root / "_checkpoints" / "*" / "ckpt-*.index")))

        # 3. Rerun to the end.
        final = subprocess.run(_cmd(out, [TWO_WORKERS]), env=_env(), cwd=fixtures.REPO, stdout=logs["final"],
                               stderr=subprocess.STDOUT, timeout=900)
        assert final.returncode == 0, open(base / "final.log", errors="replace").read()[-3000:]
        store = mlmd.open_store(metadata)
        record["run3"] = mlmd.states_by_node(store, mark2)
        record["live"] = mlmd.live_artifacts(store)
        record["all"] = mlmd.all_artifacts(store)
    finally:
        for f in logs.values():
            f.close()
    record["reference_live"] = mlmd.live_artifacts(mlmd.open_store(sample_run_pending.finish().metadata_path))
    return record


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
    info = json.load(open(os.path.join(model.uri, "albert", "export_info.json")))
    saved = [s for s in runs["checkpoints_at_kill"] if s < 60]
    assert saved and info["start_step"] == max(saved) >= 20
    assert info["final_step"] == 60
    (model_run,) = runs["live"]["ModelRun"]
    steps = [json.loads(line)["step"] for line in open(os.path.join(model_run.uri, "train_history.jsonl"))
             if json.loads(line)["split"] == "train"]
    assert steps[-1] == 60 and steps.count(60) == 1


def test_no_duplicate_live_artifacts(runs):
    for type_name in ("albert_tfx.Documents", "albert_tfx.SentencePieceModel", "Examples",
                      "albert_tfx.DataGenStatistics", "Model", "ModelRun", "albert_tfx.BenchmarkReport"):
        assert len(runs["live"][type_name]) == 1, (type_name, [a.uri for a in runs["live"][type_name]])


@pytest.mark.parametrize("type_name", ["albert_tfx.Documents", "albert_tfx.SentencePieceModel", "Examples",
                                       "albert_tfx.DataGenStatistics"])
def test_outputs_are_byte_identical_to_an_uninterrupted_one_worker_run(runs, type_name):
    """Same data settings and seed: identical bytes across runs, a crash in between, and 1 vs 2 workers."""
    (ours,) = runs["live"][type_name]
    (ref,) = runs["reference_live"][type_name]
    a, b = _files(ours.uri), _files(ref.uri)
    assert sorted(a) == sorted(b)
    assert a == b
    if type_name == "Examples":
        assert any(name.startswith("Split-train/data_tfrecord-") for name in a)
