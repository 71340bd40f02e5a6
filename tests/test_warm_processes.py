"""tests/warm_processes.py: a forked run is a process of its own with what a new interpreter would give it."""
import json
import os
import signal
import sys
import time

import pytest

from tests import warm_processes

pytestmark = pytest.mark.slow

_PROBE = r"""
import json, logging, os, sys
print(json.dumps({"argv": sys.argv, "cwd": os.getcwd(), "env": sorted(os.environ.items()),
                  "root_handlers": len(logging.getLogger().handlers),
                  "warm": "tensorflow" in sys.modules, "pid": os.getpid(), "stdin": sys.stdin.read()}))
print("to stderr", file=sys.stderr)
sys.exit(3)
"""


def test_a_forked_run_gets_its_argv_environment_folder_and_output_and_exits_with_its_code(tmp_path):
    # The server runs with the CLI's environment (PYTHONPATH, TF_CPP_MIN_LOG_LEVEL among others): the run has only
    # the variables it is given.
    env = {"PATH": os.environ["PATH"], "WARM_PROBE": "given"}
    proc = warm_processes.start([sys.executable, "-c", _PROBE, "a", "b"], env=env, cwd=str(tmp_path))
    out, err = proc.communicate(timeout=300)
    seen = json.loads(out)
    assert proc.returncode == 3 and err == "to stderr\n"
    assert seen == {"argv": ["-c", "a", "b"], "cwd": str(tmp_path), "env": [list(kv) for kv in sorted(env.items())],
                    "root_handlers": 0, "warm": True, "pid": proc.pid, "stdin": ""}


def test_a_run_in_a_session_of_its_own_is_killed_with_its_group(tmp_path):
    log = str(tmp_path / "log")
    # The run starts a child of its own (as Beam starts its workers) and waits.
    proc = warm_processes.start([sys.executable, "-c", "import subprocess, sys, time\n"
                                 "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
                                 "print('started', flush=True)\ntime.sleep(600)"],
                                cwd=str(tmp_path), stdout=log, stderr=log, new_session=True)
    assert os.getpgid(proc.pid) == proc.pid  # it leads its group once start returns, as with Popen's new session
    with open(log) as f:
        while "started" not in f.read():
            f.seek(0)
            assert proc.poll() is None
            time.sleep(0.01)
    os.killpg(proc.pid, signal.SIGKILL)
    assert proc.wait(timeout=60) == -signal.SIGKILL
    with pytest.raises(ProcessLookupError):  # the group is gone: its grandchild was killed with it
        for _ in range(200):
            os.killpg(proc.pid, 0)
            time.sleep(0.05)
