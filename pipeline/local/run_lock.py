"""One local run at a time per MLMD store: an exclusive ``flock`` on ``<metadata_path>.lock`` for the whole run.

Two runs on one output folder (two ticks of a local schedule that overlap) would otherwise both execute every node
on the same sqlite store and push two versions of two models. The run that gets the lock writes who it is into the
file (pid, host, start time, command); a second run either refuses at once, naming that run, or waits for it
(``wait`` seconds, or without limit). The kernel releases a ``flock`` when its holder dies, ``kill -9`` included,
so a crashed run never blocks the next one; the file stays behind and only the lock on it counts.
"""
from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import math
import os
import shlex
import socket
import sys
import time
from typing import Dict, Iterator, Optional

from config.errors import UserError

PROGRESS = logging.getLogger("albert_tfx.progress")

POLL_S = 0.5  # how often a waiting run tries the lock again
# A run that has just taken the lock writes its name a moment later; one refused in that moment reads the file again
# (every NAME_POLL_S, for up to NAME_WAIT_S) so that its refusal names the holder.
NAME_WAIT_S, NAME_POLL_S = 2.0, 0.02
COMMAND_CHARS = 160  # of the holder's command line, in a message (a run's --set list can be long)


class RunInProgressError(UserError, RuntimeError):
    """Another run holds the output folder's MLMD store (its lock file); the message names that run."""


def lock_path(metadata_path: str) -> str:
    """The lock file of the sqlite store at ``metadata_path``: beside it, the store's name plus ``.lock``."""
    return metadata_path + ".lock"


def remove_if_alone(metadata_path: str) -> None:
    """Remove the store's folder when all it holds is the lock file (a run that stopped before it wrote anything,
    in a folder it created); anything else there stays."""
    folder = os.path.dirname(os.path.abspath(metadata_path))
    try:
        if os.listdir(folder) == [os.path.basename(lock_path(metadata_path))]:
            os.remove(lock_path(metadata_path))
            os.rmdir(folder)
    except OSError:
        pass


def holder(metadata_path: str) -> Optional[Dict[str, object]]:
    """What the run that last took the lock wrote about itself, or None (no lock file, or nothing readable in it).
    Whether that run still holds the lock is :func:`exclusive_run`'s question, not this one's."""
    try:
        with open(lock_path(metadata_path), encoding="utf-8") as f:
            record = json.loads(f.read() or "null")
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def _named_holder(metadata_path: str) -> Optional[Dict[str, object]]:
    """:func:`holder`, read again for up to :data:`NAME_WAIT_S` while the file names nobody (its holder took the
    lock an instant ago and is writing its name)."""
    deadline = time.monotonic() + NAME_WAIT_S
    record = holder(metadata_path)
    while record is None and time.monotonic() < deadline:
        time.sleep(NAME_POLL_S)
        record = holder(metadata_path)
    return record


def describe(record: Optional[Dict[str, object]]) -> str:
    """``pid 1234 on host h, started 2026-11-26T17:30:05Z: albert-pipeline run …`` (or that nobody is named); the
    command is cut after ``COMMAND_CHARS`` characters, so the refusal stays one readable line."""
    if not record:
        return "a run that has not written its name yet"
    command = str(record.get("command"))
    if len(command) > COMMAND_CHARS:
        command = command[:COMMAND_CHARS - 3] + "..."
    return f"pid {record.get('pid')} on host {record.get('host')}, started {record.get('started')}: {command}"


def _this_run(command: Optional[str]) -> Dict[str, object]:
    return {"pid": os.getpid(), "host": socket.gethostname(),
            "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "command": command or shlex.join([os.path.basename(sys.argv[0])] + sys.argv[1:])}


@contextlib.contextmanager
def exclusive_run(metadata_path: str, wait: float = 0.0, command: Optional[str] = None
                  ) -> Iterator[Dict[str, object]]:
    """Hold the store's lock while the block runs; yields what was written into the lock file about this run.

    ``wait`` 0 refuses at once when another run holds it, ``math.inf`` waits for as long as it takes, anything
    else waits up to that many seconds; refusing raises :class:`RunInProgressError` naming the holder. ``command``
    is what the record names (default: this process's command line)."""
    if wait < 0 or math.isnan(wait):
        raise ValueError(f"wait must be >= 0 seconds, got {wait}")
    path = lock_path(metadata_path)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        deadline = time.monotonic() + wait
        announced = False
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    waited = f" after waiting {wait:g} s" if wait else ""
                    raise RunInProgressError(
                        f"{os.path.dirname(os.path.abspath(metadata_path))} is in use by another run{waited} "
                        f"({describe(_named_holder(metadata_path))}); it holds {path}: rerun when it has finished, or "
                        f"pass --wait to start after it") from None
                if not announced:
                    PROGRESS.info("waiting for the run that holds %s (%s)%s", path,
                                  describe(_named_holder(metadata_path)),
                                  "" if math.isinf(wait) else f", for up to {wait:g} s")
                    announced = True
                time.sleep(min(POLL_S, max(0.0, deadline - time.monotonic())))
        record = _this_run(command)
        text = (json.dumps(record, sort_keys=True) + "\n").encode("utf-8")
        os.pwrite(fd, text, 0)  # then cut what an earlier holder's longer record left after it
        os.ftruncate(fd, len(text))
        yield record
    finally:
        os.close(fd)  # closing the only descriptor releases the lock
