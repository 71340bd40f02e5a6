"""The image's Python environment emulated outside Docker, and the comparisons of a rehearsed run with a local one,
for tests/test_install_check.py (whose docstring says how the emulation follows ``infra/Dockerfile``)."""
import fnmatch
import json
import os
import shutil
import subprocess
import sys

from tests.conftest import REPO, cli_env

DOCKERFILE = os.path.join(REPO, "infra", "Dockerfile")
# What the checkout holds besides the product's packages (never installed).
NOT_PRODUCT = {"tests", "benchmarks", "experiments", "third_party"}
SITE = os.path.join("lib", "python3.11", "site-packages")  # a virtualenv's, relative to it


def uv_path() -> str:
    out = subprocess.run(["make", "-s", "uv"], cwd=REPO, capture_output=True, text=True, check=True).stdout
    path = out.strip().splitlines()[-1]
    return path if os.path.isabs(path) else os.path.join(REPO, path)


def _ignored(path: str, patterns) -> bool:
    parts = path.split("/")
    for pattern in patterns:
        bare = pattern[3:] if pattern.startswith("**/") else pattern
        if any(fnmatch.fnmatch("/".join(parts[:i]), pattern) or fnmatch.fnmatch(parts[i - 1], bare)
               for i in range(1, len(parts) + 1)):
            return True
    return False


def build_context(dest: str) -> str:
    """The Docker build context: the checkout's files less what ``Dockerfile.dockerignore`` keeps out."""
    with open(DOCKERFILE + ".dockerignore") as f:
        patterns = [line.strip() for line in f if line.strip() and not line.startswith("#")]
    files = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"], cwd=REPO,
                           capture_output=True, text=True, check=True).stdout.split("\0")
    for rel in files:
        if rel and os.path.isfile(os.path.join(REPO, rel)) and not _ignored(rel, patterns):
            os.makedirs(os.path.dirname(os.path.join(dest, rel)), exist_ok=True)
            shutil.copy2(os.path.join(REPO, rel), os.path.join(dest, rel))
    return dest


def final_stage_copies():
    """(source, destination) of the final stage's ``COPY`` lines that take files from the build context."""
    from tests.test_infra import instructions

    with open(DOCKERFILE) as f:
        steps = instructions(f.read())
    last_from = max(i for i, (kw, _) in enumerate(steps) if kw == "FROM")
    workdir, copies = "/", []
    for kw, arg in steps[last_from:]:
        if kw == "WORKDIR":
            workdir = arg
        elif kw == "COPY" and not arg.startswith("--from"):
            *sources, dest = arg.split()
            copies += [(src, os.path.normpath(os.path.join(workdir, dest))) for src in sources]
    return copies


def image_env_vars(home: str):
    """The Dockerfile's ``ENV ALBERT_TFX_HOME`` pointed at the emulated image home, without ``PYTHONPATH``."""
    env = {k: v for k, v in cli_env().items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["ALBERT_TFX_HOME"] = home
    return env


class ImageEnv:
    def __init__(self, root: str, context: str, venv: str, home: str):
        self.root, self.context, self.venv, self.home = root, context, venv, home
        self.python = os.path.join(venv, "bin", "python")
        self.cli = os.path.join(venv, "bin", "albert-pipeline")

    def run(self, *argv, timeout=900, env=None):
        return subprocess.run(list(argv), cwd=self.home, env={**image_env_vars(self.home), **(env or {})},
                              capture_output=True, text=True, timeout=timeout)

    def install_check(self):
        done = self.run(self.python, "-m", "pipeline.tasks.install_check", timeout=600)
        return done.returncode, json.loads(done.stdout) if done.stdout.strip() else None, done.stderr


# A schedule's ticks rehearsed in a row: one process of the image environment, one rehearsal per tick through
# `rehearse()` with one warm launcher for all (its `launcher`: the entrypoint's imports once, not once per tick, 7-9 s
# of CPU each). A line on stdin starts the next tick; its summary (or failure) and progress lines come back as one
# JSON line. `albert-pipeline rehearse` itself, its output and its failure line, is tests/test_rehearsal.py's.
_TICKS = r"""
import json, os, sys
from pipeline.rehearsal import rehearsal
from pipeline.tasks.task_launcher import WarmLauncher

spec, out = sys.argv[1:3]
with WarmLauncher(sys.executable, rehearsal.task_environment(os.path.dirname(sys.executable))) as launcher:
    for _ in sys.stdin:
        lines = []
        try:
            summary = rehearsal.rehearse(spec, out, launcher=launcher,
                                         log=lambda line: lines.append(f"albert-pipeline rehearse: {line}"))
            reply = {"summary": summary}
        except rehearsal.TaskFailed as exc:
            reply = {"failed": str(exc)}
        print(json.dumps({**reply, "log": "\n".join(lines) + "\n"}), flush=True)
"""


class TickRehearsals:
    """Rehearsals of ``spec`` into ``out`` in the image environment, one per :meth:`tick` (the data may change
    between ticks): ``{"summary": …}`` or ``{"failed": the TaskFailed message}``, with ``"log"``, the progress
    lines. The process's own stderr goes to a file in ``log_dir``."""

    def __init__(self, env: ImageEnv, spec: str, out: str, log_dir: str):
        self._stderr = open(os.path.join(log_dir, "ticks.stderr"), "w+")
        self._proc = subprocess.Popen([env.python, "-c", _TICKS, spec, out], cwd=env.home,
                                      env=image_env_vars(env.home), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      stderr=self._stderr, text=True)

    def tick(self) -> dict:
        self._proc.stdin.write("\n")
        self._proc.stdin.flush()
        line = self._proc.stdout.readline()
        self._stderr.seek(0)
        assert line, f"the ticks' process ended (exit {self._proc.wait()}): {self._stderr.read()[-3000:]}"
        return json.loads(line)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._proc.stdin.close()
        code = self._proc.wait(timeout=120)
        self._stderr.close()
        assert exc[0] is not None or code == 0, f"the ticks' process exited {code}"


def build_env(context: str, venv: str, uv: str) -> None:
    for phase in ("deps", "project"):
        subprocess.run([os.path.join(context, "infra", "build_env.sh"), phase, context, venv], check=True,
                       env={**os.environ, "UV": uv}, capture_output=True, text=True, timeout=900)


def link_compiled_bytecode(venv: str) -> int:
    """The image's byte-code, without compiling it again: the Dockerfile's build stage compiles every module
    (``UV_COMPILE_BYTECODE=1``), and an environment built here would compile each one the first time a process
    imports it (17 s of CPU for the image's first import check). uv links both this environment and the checkout's
    ``.venv`` from its cache, so a source file that is the same file (inode) in both has, in ``.venv``'s
    ``__pycache__``, the byte-code Python compiled from exactly those bytes (a ``.pyc`` records the source's
    modification time and size, and the importer checks them). Each such ``.pyc`` is hard-linked in; anything
    else (the project's own wheel, a module ``.venv`` never imported) compiles on first import as before.
    Returns how many were linked."""
    ours, theirs = os.path.join(sys.prefix, SITE), os.path.join(venv, SITE)
    linked = 0
    for folder, _, names in os.walk(ours):
        if os.path.basename(folder) != "__pycache__":
            continue
        package = os.path.dirname(os.path.relpath(folder, ours))
        for name in names:
            module, _, rest = name.partition(".")
            if rest != f"{sys.implementation.cache_tag}.pyc":
                continue
            source = os.path.join(package, module + ".py")
            try:
                if os.stat(os.path.join(ours, source)).st_ino != os.stat(os.path.join(theirs, source)).st_ino:
                    continue
            except FileNotFoundError:
                continue
            cache = os.path.join(theirs, package, "__pycache__")
            os.makedirs(cache, exist_ok=True)
            try:
                os.link(os.path.join(folder, name), os.path.join(cache, name))
                linked += 1
            except FileExistsError:
                pass
    return linked




def product_packages():
    """The checkout's top-level Python packages that are the product (what the image must hold)."""
    return sorted(name for name in os.listdir(REPO) if name not in NOT_PRODUCT
                  and os.path.isfile(os.path.join(REPO, name, "__init__.py")))


# results.json values that differ between two runs of the same configuration: how long things took, and where the
# run's files are. Everything else (1,500 values: scores, losses, counts, settings, fingerprints) must be equal.
TIMING_KEYS = ("seconds", "overhead_seconds", "wall_seconds")


def differences(local, remote, path="", roots=()):
    """Paths (``/a/b/0``) whose values differ, besides timings. ``roots``: pairs (local root, remote root) of the
    folders the two runs' files sit under: an absolute path is the same as the other's when both name the same
    folder relative to a pair of roots (the same data folder, the same place under each run's pipeline root)."""
    if isinstance(local, dict) and isinstance(remote, dict):
        out = [f"{path}/{k}: only in one" for k in sorted(set(local) ^ set(remote))]
        for key in sorted(set(local) & set(remote)):
            if not any(word in key for word in TIMING_KEYS):
                out += differences(local[key], remote[key], f"{path}/{key}", roots)
        return out
    if isinstance(local, list) and isinstance(remote, list) and len(local) == len(remote):
        return [d for i, (a, b) in enumerate(zip(local, remote)) for d in differences(a, b, f"{path}/{i}", roots)]
    if isinstance(local, str) and isinstance(remote, str) and local != remote:
        for local_root, remote_root in roots:
            if _relative(local, local_root) is not None and _relative(local, local_root) == _relative(remote,
                                                                                                   remote_root):
                return []
    return [] if local == remote else [f"{path}: {local!r} != {remote!r}"]


def _relative(value, root):
    """``value`` (a path, or text holding paths) with ``root`` written as ``<root>``; None when it holds no path
    under ``root``."""
    root = str(root).rstrip("/")
    return value.replace(root, "<root>") if value == root or root + "/" in value else None


# ------------------------------------------------------------------------ a schedule's ticks, as the backends run them
# Five rehearsals of one compiled spec in one rehearsal store, from the image environment: five runs of a scheduled
# pipeline on Vertex AI (issues 45, 46 and 55), over the data layout of tests/test_schedule_ticks.py (its local twin,
# whose TICK_RUNS each of the first four ticks must match) plus the sample books, read where the image holds them (the
# preset's ``books_dir``, not set at compile): the Wikipedia location is the pattern ``wiki/span-{SPAN}``.
# The spec is the same small DAG with books (tests/test_change_impact.py's, without RACE), compiled with a ``gs://``
# push destination, a Model Registry model, ``release.max_regression=0`` (a criterion only the comparison with the
# last blessed model can fail) and ``train.init_from=latest_blessed`` (each tick continues the last blessed model by
# the local rule: tests/test_schedule_ticks.py, and its InitFrom task). Tick 1 is also run by the local DAG on the
# same data: its report and card must be the rehearsal's.
#


def shared_roots(local, summary, out):
    """(local folder, rehearsed folder) pairs that hold the same files: the model, then the pipeline root."""
    return [(local["report"]["summary"]["artifact_ids"]["model"]["uri"],
             summary["tasks"]["Trainer"]["outputs"]["model"]),
            (local["pipeline_root"], os.path.join(out, "pipeline_root"))]


def card_differences(local, remote, roots=()):
    """Two cards' facts, field by field, less what names a run rather than describes the model: artifact ids and
    paths, and the time training took."""
    local, remote = json.loads(json.dumps(local)), json.loads(json.dumps(remote))
    for card in (local, remote):
        card.pop("artifacts")
        card["training"].pop("wall_seconds")
        card["blessing"].pop("model")
    return differences(local, remote, roots=roots)
