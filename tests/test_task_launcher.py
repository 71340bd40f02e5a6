"""The rehearsal's warm task start (``pipeline/tasks/task_launcher.py``) against a cold one: a forked task sees what a new
interpreter started with the same argv, environment and working folder sees, exits with the same code and writes the
same log; nothing one task leaves in an imported module reaches the next."""
import json
import os
import subprocess
import sys

import pytest

from pipeline.tasks.task_launcher import WarmLauncher, module_of

HOME = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROBE = ["python", "-m", "tests.task_probe"]  # tests/task_probe.py


def _env(**extra):
    # The project importable as the image's site-packages make it; nothing else of this process's environment.
    return {"PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""), "PYTHONPATH": HOME,
            "PROBE": "x", **extra}


def _cold(cwd, env, out):
    with open(os.path.join(cwd, "..", "cold.log"), "w") as log:
        code = subprocess.run(PROBE + [out], cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=log,
                              stderr=subprocess.STDOUT).returncode
    return code, _read(out), _read(os.path.join(cwd, "..", "cold.log"))


def _warm(launcher, cwd, env, out):
    log = os.path.join(cwd, "..", "warm.log")
    code = launcher.run(PROBE + [out], cwd=cwd, env=env, log_path=log)
    return code, _read(out), _read(log)


def _own(log):
    """A log without runpy's frames (a cold start's traceback has `python -m`'s, a warm one's none)."""
    return [line for line in log.splitlines() if "<frozen runpy>" not in line]


def _read(path):
    with open(path) as f:
        return f.read()


@pytest.fixture(scope="module")
def launcher():
    with WarmLauncher(os.path.join(os.path.dirname(sys.executable), "python"), _env(), preload=["json"]) as warm:
        yield warm


@pytest.mark.parametrize("extra, code, log_end", [
    ({}, 0, "on stderr\non stdout\n"),
    ({"PROBE_EXIT": "3"}, 3, "on stderr\non stdout\n"),
    ({"PROBE_RAISE": "boom"}, 1, 'raise ValueError(os.environ["PROBE_RAISE"])\nValueError: boom\non stdout\n'),
])
def test_a_warm_task_sees_exits_and_logs_as_a_cold_one(tmp_path, launcher, extra, code, log_end):
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    out = str(tmp_path / "record.json")
    cold = _cold(str(cwd), _env(**extra), out)
    os.remove(out)
    warm = _warm(launcher, str(cwd), _env(**extra), out)
    assert warm[0] == cold[0] == code
    record = json.loads(warm[1])
    assert record == json.loads(cold[1])
    assert record["cwd"] == str(cwd) and record["path0"] == str(cwd) and record["name"] == "__main__"
    assert record["argv"] == [out] and record["argv0"] == os.path.join(HOME, "tests", "task_probe.py")
    assert record["stdin"] == "" and record["env"] == {"PROBE": "x", "PROBE_ONLY_FIRST": None}
    assert record["project_modules"] == []  # the launcher's own package is not left imported
    assert _own(warm[2]) == _own(cold[2]) and warm[2].startswith("on stderr\n") and warm[2].endswith(log_end)


def test_a_task_gets_only_its_own_environment_and_nothing_an_earlier_task_left(tmp_path, launcher):
    records = []
    for i, env in enumerate([_env(PROBE_ONLY_FIRST="1"), _env()]):
        cwd = tmp_path / f"cwd{i}"
        cwd.mkdir()
        code, record, _ = _warm(launcher, str(cwd), env, str(tmp_path / f"{i}.json"))
        assert code == 0
        records.append(json.loads(record))
    assert [r["env"]["PROBE_ONLY_FIRST"] for r in records] == ["1", None]
    assert [r["left_by_earlier_task"] for r in records] == [None, None]


def test_only_python_dash_m_commands_start_warm():
    assert module_of(["python", "-m", "tfx.x", "--a"]) == "tfx.x"
    assert module_of(["/env/bin/python3", "-m", "pipeline.tasks.snapshot_task"]) == "pipeline.tasks.snapshot_task"
    assert module_of(["python", "-c", "print(1)"]) is None
    assert module_of(["bash", "-m", "x"]) is None
    assert module_of(["python", "-m"]) is None
