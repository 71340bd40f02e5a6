"""Two ticks that overlap (issue 46): two `albert-pipeline run` processes started at once on one output folder.

The first to take the folder's lock (pipeline/local/run_lock.py) runs the smallest DAG (tests/test_change_impact.py's
BASE, without its benchmarks: what is tested is the folder's lock, the store and the one version); the other refuses
within seconds, in one line naming the run that holds the folder, exit code 2. Both are processes forked from
tests/warm_processes.py's server (the console script's own start is tests/test_cli_run.py's). Afterwards the store
opens and holds one run, the destination holds one version, and the JSON of the run that pushed it names that
version. The lock on its own (waiting, a killed holder) is tests/test_run_lock.py.
"""
import json
import os
import shlex
import socket
import time

import pytest

from tests import warm_processes
from tests.conftest import CLI, cli_env
from tests.test_change_impact import BASE


pytestmark = pytest.mark.slow


def test_two_runs_started_at_once_on_one_folder(tmp_path):
    from components.release.versions import list_versions
    from pipeline.local import mlmd
    from pipeline.local import run_lock

    out = tmp_path / "out"
    settings = BASE + ["benchmarks.glue_dir=null", "benchmarks.race_dir=null"]
    args = ["run", "--output-dir", str(out)] + [a for setting in settings for a in ("--set", setting)]
    started = time.monotonic()
    procs = [warm_processes.start([CLI, *args], cwd=tmp_path, env=cli_env()) for _ in range(2)]
    ended = {}
    while len(ended) < 2:
        for proc in procs:
            if proc.pid not in ended and proc.poll() is not None:
                ended[proc.pid] = time.monotonic() - started
        time.sleep(0.2)
    done = {proc.pid: (proc.returncode, *proc.communicate()) for proc in procs}

    [winner] = [pid for pid, (code, _, _) in done.items() if code == 0]
    [loser] = [pid for pid, (code, _, _) in done.items() if code == 2]
    assert ended[loser] < ended[winner], ended  # it refused while the other still ran

    # The refusal: one line naming the run that holds the folder, nothing on stdout.
    store = str(out / "metadata.sqlite")
    record = run_lock.holder(store)  # the winner's, left behind when it finished
    assert record == {"pid": winner, "host": socket.gethostname(), "started": record["started"],
                      "command": shlex.join(["albert-pipeline", *args])}
    code, stdout, stderr = done[loser]
    assert stdout == ""
    [line] = [ln for ln in stderr.splitlines() if ln.startswith("albert-pipeline")]
    assert line.startswith(f"albert-pipeline run: error: {out} is in use by another run ({run_lock.describe(record)}); "
                           f"it holds {store}.lock: rerun when it has finished, or pass --wait to start after it "
                           f"(full traceback: {out / 'logs'}"), stderr[-2000:]

    # The run: its own release in its JSON, one version pushed, one run in a store that opens.
    destination = str(out / "pipeline_root" / "releases")
    _, stdout, stderr = done[winner]
    assert json.loads(stdout)["release"] == {"blessed": True, "forced": False, "reason": "no criteria",
                                             "version": 1, "path": os.path.join(destination, "1")}
    assert stderr.splitlines()[-1] == (f"albert-pipeline: Release: BLESSED: no criteria; version 1: "
                                       f"{os.path.join(destination, '1')}")
    store_ = mlmd.open_readonly(store)
    assert len(store_.get_contexts_by_type("pipeline_run")) == 1
    [model] = store_.get_artifacts_by_type("Model")
    assert [(v["version"], v["model"]["uri"]) for v in list_versions(destination)] == [(1, model.uri)]
