"""The output folder's run lock (pipeline/local/run_lock.py) on its own: another process holds it, a second run refuses
naming it or waits for it, and a holder killed with SIGKILL blocks nobody. The two real runs on one folder are
tests/test_overlapping_runs.py."""
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

from tests.conftest import REPO

# A process that takes the lock, says so on stdout, and holds it until killed or until its stdin closes.
HOLDER = """
import sys
from pipeline.local import run_lock
with run_lock.exclusive_run(sys.argv[1], command="albert-pipeline run --output-dir elsewhere"):
    print("held", flush=True)
    sys.stdin.read()
"""


@pytest.fixture
def store(tmp_path):
    return str(tmp_path / "out" / "metadata.sqlite")


@pytest.fixture
def held(store):
    """A holder process on ``store``'s lock; yields it once it holds the lock, kills it afterwards."""
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, store], cwd=REPO, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": REPO})
    try:
        assert proc.stdout.readline() == "held\n"
        yield proc
    finally:
        proc.kill()
        proc.wait()


def _refusal(store, proc, waited=""):
    from pipeline.local import run_lock

    record = run_lock.holder(store)
    assert record == {"pid": proc.pid, "host": socket.gethostname(), "started": record["started"],
                      "command": "albert-pipeline run --output-dir elsewhere"}
    return (f"{os.path.dirname(store)} is in use by another run{waited} (pid {proc.pid} on host "
            f"{socket.gethostname()}, started {record['started']}: albert-pipeline run --output-dir elsewhere); it "
            f"holds {store}.lock: rerun when it has finished, or pass --wait to start after it")


def test_a_second_run_refuses_at_once_naming_the_holder(store, held):
    from pipeline.local import run_lock

    start = time.monotonic()
    with pytest.raises(run_lock.RunInProgressError) as refused:
        with run_lock.exclusive_run(store):
            pytest.fail("took a lock another process holds")
    assert time.monotonic() - start < 1.0
    assert str(refused.value) == _refusal(store, held)


def test_a_run_refused_before_the_holder_wrote_its_name_still_names_it(store):
    """Two runs started together: the loser can try the lock between the winner's ``flock`` and the write of its
    name. It reads the file again until the name is there (here a holder that takes the lock bare and writes its
    record 0.3 s later), so the refusal names the holder instead of "a run that has not written its name yet"."""
    import fcntl

    from pipeline.local import run_lock

    os.makedirs(os.path.dirname(store))
    fd = os.open(run_lock.lock_path(store), os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    record = {"command": "albert-pipeline run --output-dir elsewhere", "host": "h", "pid": 7,
              "started": "2026-11-27T18:00:00Z"}
    writer = threading.Timer(0.3, lambda: os.pwrite(fd, json.dumps(record).encode("utf-8"), 0))
    writer.start()
    try:
        with pytest.raises(run_lock.RunInProgressError, match=r"\(pid 7 on host h, started 2026-11-27T18:00:00Z: "
                                                              r"albert-pipeline run --output-dir elsewhere\)"):
            with run_lock.exclusive_run(store):
                pytest.fail("took a lock another descriptor holds")
    finally:
        writer.join()
        os.close(fd)


def test_a_run_that_waits_too_long_refuses_saying_how_long_it_waited(store, held, caplog):
    from pipeline.local import run_lock

    caplog.set_level(logging.INFO, logger="albert_tfx.progress")
    start = time.monotonic()
    with pytest.raises(run_lock.RunInProgressError) as refused:
        with run_lock.exclusive_run(store, wait=1.5):
            pytest.fail("took a lock another process holds")
    assert 1.5 <= time.monotonic() - start < 3.0
    assert str(refused.value) == _refusal(store, held, waited=" after waiting 1.5 s")
    assert [r.getMessage() for r in caplog.records] == [
        f"waiting for the run that holds {store}.lock ({run_lock.describe(run_lock.holder(store))}), for up to 1.5 s"]


def test_a_waiting_run_starts_when_the_holder_finishes(store, held):
    from pipeline.local import run_lock

    threading.Timer(1.0, held.stdin.close).start()  # the holder leaves its `with` block and exits
    start = time.monotonic()
    with run_lock.exclusive_run(store, wait=float("inf"), command="second") as record:
        assert time.monotonic() - start >= 1.0
        assert held.wait(timeout=5) == 0
        assert record == run_lock.holder(store) and (record["pid"], record["command"]) == (os.getpid(), "second")


def test_a_holder_killed_with_sigkill_blocks_nobody(store, held):
    from pipeline.local import run_lock

    os.kill(held.pid, signal.SIGKILL)
    assert held.wait(timeout=5) == -signal.SIGKILL
    assert run_lock.holder(store)["pid"] == held.pid  # its record stays behind; only the lock counts
    start = time.monotonic()
    with run_lock.exclusive_run(store) as record:
        assert time.monotonic() - start < 1.0
        assert run_lock.holder(store) == record and record["pid"] == os.getpid()
    with open(f"{store}.lock", encoding="utf-8") as f:
        assert json.loads(f.read()) == record  # one record, the last holder's


def test_two_threads_of_one_process_exclude_each_other_too(store):
    from pipeline.local import run_lock

    errors = []
    with run_lock.exclusive_run(store, command="first"):
        def second():
            try:
                with run_lock.exclusive_run(store, command="second"):
                    pass
            except run_lock.RunInProgressError as exc:
                errors.append(str(exc))

        thread = threading.Thread(target=second)
        thread.start()
        thread.join()
    assert len(errors) == 1 and f"(pid {os.getpid()} on host {socket.gethostname()}" in errors[0] \
        and ": first); it holds" in errors[0]
    with run_lock.exclusive_run(store, command="third") as record:  # released when the block ended
        assert record["command"] == "third"


def test_run_refuses_in_one_line_while_another_run_holds_the_folder(cli, tmp_path, monkeypatch):
    """Through the CLI, before any node runs: exit 2, the one line, and the store is neither created nor touched."""
    from pipeline.local import run_lock

    monkeypatch.chdir(tmp_path)
    store = str(tmp_path / "out" / "metadata.sqlite")
    with run_lock.exclusive_run(store, command="albert-pipeline run --output-dir out") as record:
        done = cli("run", "--output-dir", "out")
    assert (done.returncode, done.stdout) == (2, ""), done.stderr
    [line] = [ln for ln in done.stderr.splitlines() if ": error: " in ln]
    assert line.startswith(f"albert-pipeline run: error: {tmp_path / 'out'} is in use by another run (pid "
                           f"{os.getpid()} on host {socket.gethostname()}, started {record['started']}: "
                           f"albert-pipeline run --output-dir out); it holds {store}.lock: rerun when it has finished, "
                           f"or pass --wait to start after it (full traceback: {tmp_path / 'logs'}")
    assert sorted(os.listdir(tmp_path / "out")) == ["metadata.sqlite.lock"]


def test_run_takes_the_lock_before_it_looks_at_what_exists(cli, tmp_path, monkeypatch):
    """The lock comes before the configuration is resolved against the world (input folders, spans, the latest
    blessed model): a run that waited (--wait) resolves them as they are when it starts, not as they were before
    it waited, so a missing input folder is not even looked at while another run holds the store. Without a holder
    the same run fails on that folder, and leaves no output folder behind (it created it only for the lock)."""
    from pipeline.local import run_lock

    monkeypatch.chdir(tmp_path)
    missing = ["--set", f"corpus.books_dir={tmp_path / 'nowhere'}"]
    with run_lock.exclusive_run(str(tmp_path / "out" / "metadata.sqlite"), command="another run"):
        done = cli("run", "--output-dir", "out", *missing)
    [line] = [ln for ln in done.stderr.splitlines() if ": error: " in ln]
    assert done.returncode == 2 and " is in use by another run (" in line and "nowhere" not in line, line
    done = cli("run", "--output-dir", "fresh", *missing)
    [line] = [ln for ln in done.stderr.splitlines() if ": error: " in ln]
    assert done.returncode == 2 and f"{tmp_path / 'nowhere'} does not exist" in line, line
    assert not (tmp_path / "fresh").exists()


@pytest.mark.parametrize("value", ["-1", "nan"])
def test_a_negative_wait_is_a_setting_error(cli, tmp_path, monkeypatch, value):
    monkeypatch.chdir(tmp_path)
    done = cli("run", "--output-dir", "out", "--wait", value)
    assert (done.returncode, done.stdout) == (2, "")
    [line] = [ln for ln in done.stderr.splitlines() if ": error: " in ln]
    assert line.startswith(f"albert-pipeline run: error: --wait must be a number of seconds >= 0, got {value} ")
    assert not (tmp_path / "out").exists()


def test_the_holder_is_named_in_one_short_line():
    from pipeline.local import run_lock

    record = {"pid": 7, "host": "h", "started": "2026-11-26T17:30:05Z", "command": "albert-pipeline run " + "x" * 300}
    assert run_lock.describe(record) == ("pid 7 on host h, started 2026-11-26T17:30:05Z: albert-pipeline run "
                                         + "x" * (run_lock.COMMAND_CHARS - 23) + "...")
    assert run_lock.describe(None) == "a run that has not written its name yet"
