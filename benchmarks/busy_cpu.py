"""A command's wall time and the whole machine's busy CPU while it ran.

    python3 -m benchmarks.busy_cpu [--output FILE.json] -- COMMAND [ARGS…]

``/usr/bin/time`` (and ``getrusage``) count a command's CPU and that of the children it waited for. A process forked
by a server the command started (multiprocessing's fork server in tests/warm_processes.py, the rehearsal's task
launcher) is the server's child, not the command's, and a server that outlives its parent is never waited for: their
CPU is in no such count. This reads ``/proc/stat`` before and after instead: every core's user, nice, system, irq,
softirq and steal time (all but idle and iowait), so it counts everything that ran on the machine. On a quiet machine
that is the command's work; the host's own background shows as the busy CPU of a ``sleep`` of the same length.

Prints one line (``busy_cpu: wall W s, busy CPU C s, … cores, exit E``) on stderr after the command's own output;
exits with the command's exit code; ``--output`` writes the numbers as JSON.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from typing import Dict, List, Optional

# /proc/stat's cpu line: user nice system idle iowait irq softirq steal guest guest_nice (guest time is in user).
IDLE_FIELDS = (3, 4)
COUNTED_FIELDS = 8


def busy_seconds(stat_line: str, ticks_per_second: int) -> float:
    """The busy seconds of all cores in ``/proc/stat``'s aggregate ``cpu`` line: every field but idle and iowait,
    guest time left out (the kernel counts it in user too)."""
    name, *values = stat_line.split()
    if name != "cpu":
        raise ValueError(f"not /proc/stat's aggregate cpu line: {stat_line!r}")
    fields = [int(v) for v in values[:COUNTED_FIELDS]]
    return sum(v for i, v in enumerate(fields) if i not in IDLE_FIELDS) / ticks_per_second


def _read_busy(stat_path: str = "/proc/stat") -> float:
    with open(stat_path) as f:
        return busy_seconds(f.readline(), os.sysconf("SC_CLK_TCK"))


def measure(command: List[str]) -> Dict[str, object]:
    """Run ``command``; its exit code, wall seconds, the machine's busy CPU seconds and cores meanwhile."""
    busy0, wall0 = _read_busy(), time.monotonic()
    code = subprocess.call(command)
    wall, busy = time.monotonic() - wall0, _read_busy() - busy0
    return {"command": command, "exit": code, "wall_s": round(wall, 2), "busy_cpu_s": round(busy, 2),
            "cores": os.cpu_count(), "busy_cores": round(busy / wall, 2) if wall else 0.0}


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.busy_cpu", description=__doc__.split("\n\n")[0])
    parser.add_argument("--output", help="also write the numbers as JSON to this file")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the command to run, after --")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("name the command to run after --")
    result = measure(command)
    print(f"busy_cpu: wall {result['wall_s']} s, busy CPU {result['busy_cpu_s']} s, {result['busy_cores']} of "
          f"{result['cores']} cores, exit {result['exit']}", file=sys.stderr)
    if args.output:
        with open(args.output, "w") as f:
            json.dump(result, f, indent=2)
    return int(result["exit"])


if __name__ == "__main__":
    sys.exit(main())
