"""benchmarks/busy_cpu.py: the machine's busy CPU while a command ran, counting what its waited-for children miss."""
import json
import sys

import pytest

from benchmarks import busy_cpu

# A process that forks a grandchild, does not wait for it, and exits: the grandchild spins for a while.
_ORPHAN = r"""
import os, time
if os.fork() == 0:
    end = time.process_time() + 0.6
    while time.process_time() < end:
        pass
    os._exit(0)
"""


def test_busy_seconds_count_every_field_but_idle_iowait_and_guest():
    # user nice system idle iowait irq softirq steal guest guest_nice, in ticks of 1/100 s
    line = "cpu  100 20 30 5000 70 4 6 10 900 900\n"
    assert busy_cpu.busy_seconds(line, 100) == (100 + 20 + 30 + 4 + 6 + 10) / 100
    with pytest.raises(ValueError, match="aggregate cpu line"):
        busy_cpu.busy_seconds("cpu0 1 2 3 4 5 6 7 8", 100)


def test_the_command_s_exit_code_and_its_unwaited_grandchild_s_cpu(tmp_path):
    out = tmp_path / "busy.json"
    code = busy_cpu.main(["--output", str(out), "--", sys.executable, "-c",
                          _ORPHAN + "time.sleep(1.0)\nraise SystemExit(3)"])
    result = json.loads(out.read_text())
    assert code == 3 == result["exit"]
    # The grandchild's 0.6 s of CPU ran while the command slept: the machine was busy at least that long.
    assert result["busy_cpu_s"] >= 0.6 and result["wall_s"] >= 1.0
    with pytest.raises(SystemExit):
        busy_cpu.main([])
