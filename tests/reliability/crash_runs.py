"""The killed and rerun ``albert-pipeline run`` of tests/reliability/test_crash_rerun.py, made once per test session.

Two test files read it: test_crash_rerun.py (early in the run order: what the kills and reruns recorded) and
test_crash_rerun_bytes.py (late, with the other readers of the shared sample run: the outputs' bytes against that
run's). The shared sample run ends minutes into the session; a worker that waited for it right after the crash runs
sat idle that long. So the runs are made once in the folder every pytest-xdist worker sees (tests/conftest.py's
``shared_tmp``), under a file lock, and what they recorded is a JSON file there: whichever worker comes first makes
them, the other reads the file. Each run is a process of its own, forked from tests/warm_processes.py's server.
"""
from __future__ import annotations

import contextlib
import fcntl
import glob
import json
import os

import pytest

from tests import warm_processes
from tests.conftest import CLI
from tests.reliability import fixtures, mlmd

# The run is killed after the first checkpoint (step CHECKPOINT_EVERY) and resumed from it to STEPS.
STEPS, CHECKPOINT_EVERY = 30, 10
OVERRIDES = [f"train.num_train_steps={STEPS}", f"train.checkpoint_every={CHECKPOINT_EVERY}", "benchmarks.glue_dir=none",
             "benchmarks.squad_dir=none", "benchmarks.race_dir=none", "release.raw_text_serving=false"]
TWO_WORKERS = "beam_args=--direct_running_mode=multi_processing,--direct_num_workers=2"
DATA_NODES = ("CorpusGen", "VocabGen", "PretrainingDataGen")


def _cmd(out, extra=()):
    sets = [f"--set={o}" for o in OVERRIDES + list(extra)]
    # TFX's BeamDagRunner (`--runner beam`; the default is LocalDagRunner): its kills and reruns, and the outputs'
    # bytes against the shared sample run's (made by the default runner) in test_crash_rerun_bytes.py.
    return [CLI, "run", "--runner", "beam", "--preset", "sample", "--output-dir", str(out)] + sets


def _env():
    return {**os.environ, "PYTHONPATH": fixtures.REPO, "TF_CPP_MIN_LOG_LEVEL": "2"}


def _start(cmd, log):
    # A process forked from tests/warm_processes.py's server, leading its own process group: the kill takes its Beam
    # workers too.
    return warm_processes.start(cmd, env=_env(), cwd=fixtures.REPO, stdout=log, stderr=log, new_session=True)


def _uris(live):
    """type name → the URIs of its LIVE artifacts (what the record keeps of them)."""
    return {t: [a.uri for a in arts] for t, arts in live.items()}


def _make(base) -> dict:
    out = base / "killed"
    logs = {name: str(base / f"{name}.log") for name in ("kill_data", "kill_train", "final")}
    root = out / "pipeline_root"
    metadata = str(out / "metadata.sqlite")
    record = {"base": str(base), "metadata_path": metadata}
    # 1. Killed while PretrainingDataGen's Beam job runs (its staging folder exists, nothing published).
    proc = _start(_cmd(out, [TWO_WORKERS]), logs["kill_data"])
    staging = str(root / "PretrainingDataGen" / "examples" / "*" / ".staging-*" / "Split-train")
    fixtures.kill_when(proc, lambda: glob.glob(staging), "PretrainingDataGen to start", timeout=900, group=True)
    store = mlmd.open_store(metadata)
    record["after_kill_data"] = {"states": mlmd.states_by_node(store), "live": _uris(mlmd.live_artifacts(store)),
                                 "examples_dirs": glob.glob(str(root / "PretrainingDataGen" / "examples" / "*"))}
    mark1 = mlmd.max_execution_id(store)

    # 2. Rerun, killed after the first checkpoint of training.
    proc = _start(_cmd(out, [TWO_WORKERS]), logs["kill_train"])
    ckpt = str(root / "_checkpoints" / "*" / f"ckpt-{CHECKPOINT_EVERY}.index")
    fixtures.kill_when(proc, lambda: glob.glob(ckpt), f"the step-{CHECKPOINT_EVERY} checkpoint", timeout=900,
                       group=True)
    store = mlmd.open_store(metadata)
    record["run2"] = mlmd.states_by_node(store, mark1)
    record["run2_live"] = {t: len(a) for t, a in mlmd.live_artifacts(store).items()}
    mark2 = mlmd.max_execution_id(store)
    record["checkpoints_at_kill"] = sorted(
        int(p.rsplit("ckpt-", 1)[1].split(".")[0]) for p in glob.glob(str(root / "_checkpoints" / "*" / "ckpt-*.index")))

    # 3. Rerun to the end.
    final = warm_processes.run(_cmd(out, [TWO_WORKERS]), env=_env(), cwd=fixtures.REPO, stdout=logs["final"],
                               stderr=logs["final"], timeout=900)
    assert final.returncode == 0, final.stdout[-3000:]
    store = mlmd.open_store(metadata)
    record["run3"] = mlmd.states_by_node(store, mark2)
    record["live"] = _uris(mlmd.live_artifacts(store))
    return record


@contextlib.contextmanager
def _locked(base):
    with open(base / ".lock", "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def crash_runs(shared) -> dict:
    """The record of the three runs in ``shared / "crash"`` (made by the first caller of the session): node states
    after each, the LIVE artifacts' URIs by type, the checkpoints at the training kill. A failure is recorded too,
    so the other reader fails with it instead of making the runs again."""
    base = shared / "crash"
    base.mkdir(exist_ok=True)
    done, failed = base / "record.json", base / "failed.txt"
    with _locked(base):
        if not done.exists() and not failed.exists():
            try:
                record = _make(base)
            except BaseException as exc:
                failed.write_text(f"{type(exc).__name__}: {exc}")
                raise
            tmp = base / "record.json.tmp"
            tmp.write_text(json.dumps(record))
            tmp.rename(done)
    if failed.exists():
        pytest.fail(f"the crash-and-rerun runs failed (logs in {base}): {failed.read_text()[-3000:]}")
    return json.loads(done.read_text())
