"""Processes of this project's commands, forked from a warm fork server instead of each a new interpreter.

The tests that kill and rerun ``albert-pipeline pretrain`` or ``run``, or start a cluster of them, need each run to be
a process of its own: its own pid to SIGKILL (with its process group: Beam's workers), its exit code, its terminal
output and its own TensorFlow runtime. They do not test the interpreter's start and the imports before the command's
first line, which cost 5-11 s of CPU a process (TensorFlow; TensorFlow, Beam and TFX for ``run``: docs/performance.md)
and are tested by the runs that start the console script itself (tests/test_cli_run.py, ``make sample``'s rerun of
the shared sample run in tests/conftest.py, the image's ticks). The shared sample run's first run is forked too.

:func:`start` forks such a process from :mod:`multiprocessing`'s fork server, started once per test process with
:data:`PRELOAD` imported and the environment of :func:`tests.conftest.cli_env`. As
:class:`pipeline.tasks.task_launcher.WarmLauncher` does for a rehearsal's tasks, the server never parses flags,
creates a TensorFlow context or starts a Beam pipeline, so nothing of a run's runtime state comes from before the
fork. :func:`start` creates the output files empty before it forks (they exist once it returns, as a ``Popen``
caller's files do). The child, before anything else, takes the given environment (replacing every variable), working
folder and ``sys.argv``, points descriptors 0, 1 and 2 at ``/dev/null`` and the given files, with ``new_session``
leads a process group of its own, and drops the placeholder root handler the server imported its libraries with (as
a command sets its handlers before it imports them: tests/warm_preload.py); then it runs ``pipeline.cli.main``
(``albert-pipeline ARGS``), or a module or code as ``python -m`` and ``python -c`` do.
"""
from __future__ import annotations

import logging
import multiprocessing
import os
import runpy
import signal
import subprocess
import sys
import tempfile
import time
from typing import Dict, List, Optional, Sequence

from tests.conftest import CLI, cli_env

# What the server imports once: a placeholder root handler first (tests/warm_preload.py), the CLI, the Trainer
# (pretrain), the local DAG runners (run) and TFX's executor entrypoint (a Vertex AI worker pool's container command).
PRELOAD = ("tests.warm_preload", "pipeline.cli", "trainer.task", "pipeline.local.local_runner",
           "tfx.scripts.run_executor")

_context = None
_scratch = None  # the folder of the output files not named by the caller, removed when this process exits


def _server():
    """The fork server's context, its preload set before its first start (with the tests' CLI environment: the
    variables TensorFlow reads while it imports are a CLI process's)."""
    global _context
    if _context is None:
        _context = multiprocessing.get_context("forkserver")
        _context.set_forkserver_preload(list(PRELOAD))
        saved = dict(os.environ)
        os.environ.update({**cli_env(), "TF_CPP_MIN_LOG_LEVEL": "2"})
        try:
            from multiprocessing import forkserver
            forkserver.ensure_running()
        finally:
            os.environ.clear()
            os.environ.update(saved)
    return _context


def _child(argv: List[str], env: Dict[str, str], cwd: str, stdout: str, stderr: str, new_session: bool) -> None:
    if new_session:
        os.setsid()
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    os.dup2(os.open(stdout, os.O_WRONLY), 1)  # created empty by start() before the fork
    os.dup2(os.open(stderr, os.O_WRONLY) if stderr != stdout else 1, 2)
    os.environ.clear()
    os.environ.update(env)
    os.chdir(cwd)
    from tests.warm_preload import PLACEHOLDER
    logging.getLogger().removeHandler(PLACEHOLDER)
    if argv[0] == CLI:  # tests.conftest's CLI, this venv's console script: run as pipeline.cli.main
        sys.argv = list(argv)
        from pipeline import cli
        cli.main(argv[1:])
    elif argv[1] == "-c":  # [python, "-c", CODE, ARGS...]
        sys.argv = ["-c"] + list(argv[3:])
        sys.path.insert(0, "")
        exec(compile(argv[2], "<string>", "exec"), {"__name__": "__main__", "__builtins__": __builtins__})
    else:  # [python, "-m", MODULE, ARGS...]
        assert argv[1] == "-m", argv
        sys.argv = [argv[2]] + list(argv[3:])
        sys.path.insert(0, cwd)
        runpy.run_module(argv[2], run_name="__main__", alter_sys=True)
    sys.stdout.flush()
    sys.stderr.flush()


class WarmProcess:
    """The started process, as much of :class:`subprocess.Popen` as the tests use: ``pid``, ``returncode``,
    :meth:`poll`, :meth:`wait`, :meth:`send_signal`, :meth:`kill` and :meth:`communicate` (the output files' text,
    once it has ended)."""

    def __init__(self, args: Sequence[str], process, stdout: str, stderr: str):
        self.args, self._process, self._stdout, self._stderr = list(args), process, stdout, stderr

    @property
    def pid(self) -> int:
        return self._process.pid

    @property
    def returncode(self) -> Optional[int]:
        return self._process.exitcode

    def poll(self) -> Optional[int]:
        return self._process.exitcode

    def wait(self, timeout: Optional[float] = None) -> int:
        self._process.join(timeout)
        if self._process.exitcode is None:
            raise subprocess.TimeoutExpired(self.args, timeout)
        return self._process.exitcode

    def send_signal(self, sig: int) -> None:
        if self._process.exitcode is None:
            os.kill(self.pid, sig)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def communicate(self, timeout: Optional[float] = None):
        self.wait(timeout)
        with open(self._stdout, errors="replace") as f:
            out = f.read()
        if self._stderr == self._stdout:
            return out, ""
        with open(self._stderr, errors="replace") as f:
            return out, f.read()


def start(argv: Sequence[str], *, env: Optional[Dict[str, str]] = None, cwd: Optional[str] = None,
          stdout: Optional[str] = None, stderr: Optional[str] = None, new_session: bool = False) -> WarmProcess:
    """``argv`` (``[CLI, ARGS…]``, ``[python, "-m", MODULE, ARGS…]`` or ``[python, "-c", CODE, ARGS…]``) as a
    process forked from the warm server.
    Its output goes to the files ``stdout`` and ``stderr`` (the same file for both when they are equal; when not
    given, files in a temporary folder this process removes when it exits); ``env`` defaults to
    :func:`tests.conftest.cli_env`."""
    global _scratch
    if stdout is None or stderr is None:
        if _scratch is None:
            _scratch = tempfile.TemporaryDirectory(prefix="warm-processes-")
        folder = tempfile.mkdtemp(dir=_scratch.name)
        stdout = stdout or os.path.join(folder, "stdout")
        stderr = stderr or os.path.join(folder, "stderr")
    args = [str(a) for a in argv]
    for path in {str(stdout), str(stderr)}:  # as Popen's caller opens them: the files exist once start returns
        open(path, "w").close()
    process = _server().Process(target=_child, args=(args, dict(env if env is not None else cli_env()),
                                                     str(cwd or os.getcwd()), str(stdout), str(stderr), new_session))
    process.start()
    while new_session and process.exitcode is None:  # as Popen(start_new_session=True): the group exists on return
        try:
            if os.getpgid(process.pid) == process.pid:
                break
        except ProcessLookupError:
            break
        time.sleep(0.001)
    return WarmProcess(args, process, str(stdout), str(stderr))


def run(argv: Sequence[str], *, timeout: float, **kwargs) -> subprocess.CompletedProcess:
    """:func:`start`, then wait: ``subprocess.run(argv, capture_output=True, text=True)``'s result."""
    proc = start(argv, **kwargs)
    try:
        out, err = proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
