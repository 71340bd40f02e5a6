"""Start a rehearsal's container tasks without paying each one's interpreter start and imports again.

A compiled spec's container task is ``python -m MODULE ARGS``: TFX's KFP v2 entrypoint
(:data:`TFX_ENTRYPOINT`) for every TFX node, this project's own module for the DataSnapshot task. A backend starts
each in a fresh container, and the entrypoint's imports (TensorFlow, Beam, TFMA, KFP's protos) take 7-9 s of CPU
before the task does anything (docs/performance.md). A rehearsal of the small DAG starts about 20 tasks per tick.

:class:`WarmLauncher` is a fork server in the chosen environment: ``python -m pipeline.tasks.task_launcher --preload
MODULE`` started once per rehearsal with the tasks' own environment variables, in an empty working folder, without
``PYTHONPATH``. It imports the preloaded entrypoint's dependencies once (then drops the entrypoint module itself, so
each task executes it afresh as ``__main__``), and for each task forks a child that, before anything else:

* points file descriptors 1 and 2 at the task's log and 0 at ``/dev/null``;
* takes the task's working folder, its environment variables (replacing every one, as a new process gets them),
  and ``sys.path[0]`` and ``sys.argv`` as ``python -m`` sets them;
* runs the module with :func:`runpy.run_module` as ``__main__`` and exits with its code.

So each task is still a process of its own, with the exact argv, environment and working folder the rehearsal gives
a cold start, in the same interpreter and site-packages; what it shares with the other tasks is the already imported
code of the entrypoint's dependencies. The server never parses flags, creates a TensorFlow context or starts a Beam
pipeline, so nothing of a task's runtime state comes from before the fork. What a warm start cannot show: an error
that happens while the entrypoint's dependencies import (a broken TFX install). The environment's import check
(``pipeline/tasks/install_check.py``) and ``rehearse --cold`` cover it; ``--cold`` starts every task as a new interpreter.
"""
from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import tempfile
from typing import Dict, List, Optional, Sequence

TFX_ENTRYPOINT = "tfx.orchestration.kubeflow.v2.container.kubeflow_v2_run_executor"
MODULE = "pipeline.tasks.task_launcher"
# The names of the environment variables the server was given, so it can tell what its interpreter added at start
# (Python's locale coercion sets LC_CTYPE) and give each task the same additions a fresh interpreter would make.
GIVEN_ENV_VAR = "ALBERT_TFX_LAUNCHER_GIVEN_ENV"


def module_of(argv: Sequence[str]) -> Optional[str]:
    """``MODULE`` when ``argv`` is ``python -m MODULE …`` (an interpreter named python*), else None."""
    if len(argv) >= 3 and os.path.basename(argv[0]).startswith("python") and argv[1] == "-m":
        return argv[2]
    return None


class WarmLauncher:
    """The rehearsal's side of the fork server (see the module docstring). ``run`` is a drop-in for
    ``subprocess.run(argv, cwd=…, env=…, stdin=DEVNULL, stdout=log, stderr=STDOUT).returncode`` for argv of the
    form ``python -m MODULE …``; :meth:`close` (or the ``with`` block's end) stops the server."""

    def __init__(self, python: str, env: Dict[str, str], preload: Sequence[str] = (TFX_ENTRYPOINT,)):
        self.python, self.env = python, dict(env)  # what the server runs with (a rehearsal given one checks them)
        self._cwd = tempfile.TemporaryDirectory(prefix="rehearsal-launcher-")
        self._server_log = open(os.path.join(self._cwd.name, "launcher.log"), "w+")
        argv = [python, "-m", MODULE] + [arg for module in preload for arg in ("--preload", module)]
        server_env = {**env, GIVEN_ENV_VAR: ",".join(sorted(env))}
        self._process = subprocess.Popen(argv, cwd=self._cwd.name, env=server_env, stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, stderr=self._server_log, text=True)

    def run(self, argv: List[str], *, cwd: str, env: Dict[str, str], log_path: str) -> int:
        request = {"argv": argv, "cwd": cwd, "env": env, "log": log_path}
        self._process.stdin.write(json.dumps(request) + "\n")
        self._process.stdin.flush()
        reply = self._process.stdout.readline()
        if not reply:
            self._server_log.seek(0)
            raise RuntimeError(f"the rehearsal's task launcher stopped (exit {self._process.wait()}): "
                               f"{self._server_log.read()[-2000:]}")
        return json.loads(reply)["code"]

    def close(self) -> None:
        if self._process.poll() is None:
            self._process.stdin.close()
            self._process.wait()
        self._server_log.close()
        self._cwd.cleanup()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


# ----------------------------------------------------------------------------------------------- the server side
def _child(request: Dict, added: Dict[str, str]) -> None:
    """In the forked child: become the task (see the module docstring) and never return."""
    code = 1
    try:
        log = os.open(request["log"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.close(log)
        os.close(null)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update({**{k: v for k, v in added.items() if k not in request["env"]}, **request["env"]})
        argv = request["argv"]
        sys.path[0] = os.getcwd()  # `python -m` puts the working folder first
        sys.argv = [argv[0]] + list(argv[3:])  # run_module sets argv[0] to the module's file, as `-m` does
        import runpy  # lazy: inside try (adds nothing)

        runpy.run_module(argv[2], run_name="__main__", alter_sys=True)
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if not isinstance(exc.code, (int, type(None))):
            print(exc.code, file=sys.stderr)
    except BaseException as exc:  # noqa: BLE001 - a task's crash is reported as a cold start reports it
        import runpy  # lazy: inside try (adds nothing)
        import traceback  # lazy: inside try; traceback (0.003 s)

        tb = exc.__traceback__  # from the task's own frames on (this module's and runpy's left out)
        while tb is not None and tb.tb_frame.f_code.co_filename in (__file__, runpy.__file__, "<frozen runpy>"):
            tb = tb.tb_next
        traceback.print_exception(type(exc), exc, tb)
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def serve(preload: Sequence[str]) -> None:
    # The environment a fresh interpreter of the tasks' own starts with: what the launcher gave, plus what the
    # interpreter adds at start (asked of one, as a task's `python` would add it), without what importing this
    # module's package set (`pipeline/__init__.py`). The preload and every task see exactly that.
    given = {key: os.environ[key] for key in os.environ.pop(GIVEN_ENV_VAR, "").split(",") if key in os.environ}
    fresh = json.loads(subprocess.run([sys.executable, "-c", "import json, os; print(json.dumps(dict(os.environ)))"],
                                      env=given, stdout=subprocess.PIPE, check=True, text=True).stdout)
    added = {key: value for key, value in fresh.items() if key not in given}
    os.environ.clear()
    os.environ.update(fresh)
    for name in [m for m in sys.modules if m == "pipeline" or m.startswith("pipeline.")]:
        del sys.modules[name]  # a task importing `pipeline.…` runs the package's __init__ itself, as a cold one does
    channel_out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # anything the server or a preloaded module prints goes to its log, not into the channel
    for module in preload:
        importlib.import_module(module)
        sys.modules.pop(module, None)  # its dependencies stay; each task executes the module itself afresh
    for line in sys.stdin:
        request = json.loads(line)
        if module_of(request["argv"]) is None:
            raise SystemExit(f"not a `python -m MODULE` command: {request['argv'][:3]}")
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            channel_out.close()
            _child(request, added)
        _, status = os.waitpid(pid, 0)
        channel_out.write(json.dumps({"code": os.waitstatus_to_exitcode(status)}) + "\n")
        channel_out.flush()


def main(argv: Optional[List[str]] = None) -> None:
    import argparse  # lazy: argparse (0.002 s)

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preload", action="append", default=[], help="a module whose imports to do once")
    serve(parser.parse_args(argv).preload)


if __name__ == "__main__":
    main()
