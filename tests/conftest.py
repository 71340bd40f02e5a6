"""Shared test setup: one Keras (tf_keras), quiet TF logs, paths of the bundled sample data."""
import json
import os
import shutil
import signal
import subprocess
import sys
import time

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import pytest  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

# `make test` runs one pytest-xdist worker per core, and TensorFlow sizes both of its thread pools to every core in
# each process: N busy workers oversubscribed N cores. Each worker, and every process it starts, gets its share of
# the cores instead (docs/performance.md: two concurrent pretraining runs on 2 cores took 38-42 s with one thread
# each against 47-50 s with TensorFlow's default). A run without xdist keeps TensorFlow's default.
_XDIST_WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
if _XDIST_WORKERS > 1:
    from trainer.precision import thread_count  # os only: TensorFlow is not imported yet

    _share = str(max(1, thread_count() // _XDIST_WORKERS))
    os.environ.setdefault("TF_NUM_INTRAOP_THREADS", _share)
    os.environ.setdefault("TF_NUM_INTEROP_THREADS", _share)

# The product's garbage collector thresholds (trainer/gc_tuning.py, which the CLI sets) in each test process too: most
# of the suite's pipeline runs, training and fine-tuning run inside the pytest processes.
from trainer import gc_tuning  # noqa: E402

gc_tuning.tune()

SAMPLE = os.path.join(REPO, "data", "sample")

# Data too big for the repository (full GLUE/SQuAD/RACE, the 206-page dump, whole Gutenberg books) is found
# through ONE setting: ALBERT_TFX_DATA_DIR. Unset, tests look at ../shared/data next to the repository (the
# layout README documents); tests needing a file that is absent there skip and name the variable.
DATA_DIR_VAR = "ALBERT_TFX_DATA_DIR"


def shared_data_dir() -> str:
    return os.environ.get(DATA_DIR_VAR) or os.path.join(os.path.dirname(REPO), "shared", "data")


def shared_path(*parts: str) -> str:
    """``$ALBERT_TFX_DATA_DIR/<parts>``, or skip the calling test saying which variable to set."""
    path = os.path.join(shared_data_dir(), *parts)
    if not os.path.exists(path):
        pytest.skip(f"{path} not found: set {DATA_DIR_VAR} to the shared data folder (e.g. "
                    f"{DATA_DIR_VAR}=../shared/data) to run this test")
    return path


@pytest.fixture(scope="session")
def shared_data():
    """``shared_data("glue_data")`` → that path under $ALBERT_TFX_DATA_DIR, or a skip naming the variable."""
    return shared_path


@pytest.fixture
def gcs(tmp_path, monkeypatch):
    """``gs://`` served from ``tmp_path/gcs`` by :class:`tests.gcs_standin.GcsStandIn` for the test's duration."""
    from apache_beam.io.gcp.gcsfilesystem import GCSFileSystem

    from tests.gcs_standin import GcsStandIn

    root = tmp_path / "gcs"
    root.mkdir()
    monkeypatch.setattr(GCSFileSystem, "scheme", classmethod(lambda cls: "gs-real-unregistered"))
    monkeypatch.setattr(GcsStandIn, "root", str(root))
    return root


@pytest.fixture(scope="session")
def sample_dir() -> str:
    return SAMPLE


@pytest.fixture(scope="session")
def spm_model_path() -> str:
    return os.path.join(SAMPLE, "vocab", "30k-clean.model")


@pytest.fixture(scope="session")
def tok(spm_model_path):
    """The official ALBERT tokenizer (bundled 30k-clean.model)."""
    from components.text.tokenization import AlbertTokenizer

    return AlbertTokenizer(spm_model_path)


@pytest.fixture(scope="session")
def vocab(tok):
    """Datagen's view of that vocabulary (word starts, special ids)."""
    from components.datagen.instances import VocabInfo

    return VocabInfo.from_tokenizer(tok)


@pytest.fixture(scope="session")
def datagen_texts():
    """tests/fixtures/datagen_text.txt (real public-domain prose) as documents of sentences."""
    with open(os.path.join(REPO, "tests", "fixtures", "datagen_text.txt"), encoding="utf-8") as f:
        return [d.split("\n") for d in f.read().strip().split("\n\n")]


@pytest.fixture(scope="session")
def datagen_docs(tok, vocab, datagen_texts):
    """The same documents tokenized with the official vocabulary: one id array per sentence."""
    from components.datagen.generate import tokenize_document

    return [tokenize_document(tok, d, vocab) for d in datagen_texts]


# Masked examples for the pretraining-loop tests (resume, strategies): the datagen Beam code on
# tests/fixtures/datagen_text.txt with the bundled 30k vocabulary, three uneven shards (a run crosses file and epoch
# boundaries), sequences of 64.
RESUME_DATA = ["datagen.max_seq_length=64", "datagen.max_predictions_per_seq=10", "datagen.dupe_factor=3",
               "datagen.num_shards=3", "datagen.eval_fraction=0.2"]


@pytest.fixture(scope="session")
def resume_examples(tmp_path_factory):
    """{"dir": the examples folder (laid out like the Examples artifact), "stats": datagen's statistics}."""
    import shutil

    from components.datagen.datagen_tool import make_pretraining_data
    from pipeline.settings.configs import build_config

    root = tmp_path_factory.mktemp("resume")
    docs = root / "docs"
    docs.mkdir()
    shutil.copyfile(os.path.join(REPO, "tests", "fixtures", "datagen_text.txt"), docs / "documents-00000-of-00001.txt")
    out = str(root / "examples")
    stats = make_pretraining_data([str(docs)], os.path.join(SAMPLE, "vocab", "30k-clean.model"), out,
                                  build_config("sample", overrides=RESUME_DATA))
    return {"dir": out, "stats": stats}


def export_untrained_albert(d, seed, **overrides):
    """An albert dir as ``train_lib.export`` writes it (config, encoder checkpoint, the official 30k-clean
    vocabulary), from an untrained albert-tiny drawn with ``seed``: what the benchmark tests fine-tune."""
    import shutil

    import tensorflow as tf

    from pipeline.settings.configs import SAMPLE_DATA
    from trainer import train_lib
    from trainer.modeling_albert import AlbertConfig, AlbertForPreTraining

    os.makedirs(d, exist_ok=True)
    tf.keras.utils.set_random_seed(seed)
    config = AlbertConfig.named("albert-tiny", vocab_size=30000, **overrides)
    model = AlbertForPreTraining(config)
    model(model.dummy_inputs(batch_size=1, seq_len=8, num_predictions=2))
    config.to_json_file(os.path.join(d, train_lib.CONFIG_FILE), official=True)
    tf.train.Checkpoint(encoder=model.albert).write(os.path.join(d, train_lib.ENCODER_CKPT))
    shutil.copy(os.path.join(SAMPLE_DATA, "vocab", "30k-clean.model"), os.path.join(d, train_lib.SPM_FILE))
    return d


def tiny_benchmark_config(steps, batch, seq, **bench):
    """The sample config with every fine-tuning row made tiny (lr 1e-3, 1 warm-up step); ``bench`` sets
    ``benchmarks.*`` fields. The raw-text export, TFMA (Beam pipelines) and the sample's random-init arm (a second
    fine-tuning of every task: tests/test_eval_baselines.py) run only where a test asks for them."""
    from pipeline.settings.configs import FinetuneHParams, sample_config

    cfg = sample_config()
    hp = FinetuneHParams(1e-3, batch, 0.0, 0.1, train_steps=steps, warmup_steps=1, max_seq_length=seq)
    cfg.benchmarks.hparams = {name: hp for name in cfg.benchmarks.hparams}
    bench.setdefault("export_serving_model", False)
    bench.setdefault("tfma", False)
    bench.setdefault("baselines", [])
    for key, value in bench.items():
        setattr(cfg.benchmarks, key, value)
    return cfg


def squad_v2_from_v1(path):
    """A SQuAD 2.0-shaped dataset from a v1.1 file: every third question becomes unanswerable (its answers move to
    ``plausible_answers``), as in the official v2 data."""
    import json

    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    k = 0
    for article in data["data"]:
        for p in article["paragraphs"]:
            for qa in p["qas"]:
                qa["is_impossible"] = k % 3 == 0
                if qa["is_impossible"]:
                    qa["plausible_answers"], qa["answers"] = qa["answers"], []
                k += 1
    data["version"] = "v2.0"
    return data


def hf_peer():
    """(torch, transformers) for the Hugging Face parity tests, from the folder ``make install-test`` puts them in
    (:mod:`benchmarks.hf_packages`); the calling test skips, saying how to install them, when they are not there."""
    from benchmarks import hf_packages

    hf_packages.use()
    how = ("the test-only torch 2.13 CPU wheel is not installed: run `TORCH_WHEELS=DIR make install-test` with DIR "
           "holding torch-2.13.0+cpu-*.whl (see README, Two commands)")
    return pytest.importorskip("torch", reason=how), pytest.importorskip("transformers", reason=how)


# ------------------------------------------------------------------------------------------ slow marks, run order
# `make test-quick` runs `-m "not slow"`. What is slow is marked at the test (pyproject.toml registers the marks):
# `pytestmark = pytest.mark.slow` for a whole module (DAG runs, training, fine-tuning, Beam / tf.Transform pipelines,
# subprocesses that import TensorFlow), `@pytest.mark.slow` on a single test.
#
# Run order, for `make test`'s workers (pytest-xdist hands out whole files in collection order): the longest files
# first, `pytestmark = pytest.mark.longest_first(RANK)` (measured; 1 = the longest), so no worker starts one near the
# end while the other has nothing left; the files that read the shared sample run last,
# `pytestmark = pytest.mark.reads_sample_run`, when it has finished (it starts with the session, in the background);
# every other file between them, in collection order.
SAMPLE_RUN_FIXTURES = ("sample_run", "sample_run_pending")


def _run_order(item, position):
    if item.get_closest_marker("reads_sample_run"):
        return (2, position)
    longest = item.get_closest_marker("longest_first")
    return (0, longest.args[0], position) if longest else (1, position)


def _marks_that_are_not_sane(items):
    """What is wrong with the order marks: ``longest_first`` takes one rank, an int >= 1, and ``slow`` and
    ``reads_sample_run`` take nothing; the order marks are the whole file's (its ``pytestmark``: xdist hands out
    whole files), one rank per file and one file per rank; a file is not both longest-first and last; and a test
    that uses the shared sample run is in a file marked ``reads_sample_run``."""
    problems, ranks, by_file = [], {}, {}
    for item in items:
        name = item.nodeid.split("::")[0]
        for mark in item.iter_markers("longest_first"):
            if len(mark.args) != 1 or mark.kwargs or type(mark.args[0]) is not int or mark.args[0] < 1:
                problems.append(f"{item.nodeid}: longest_first takes one rank, an int >= 1, not {mark.args}"
                                f"{mark.kwargs or ''}")
        for mark in (*item.iter_markers("slow"), *item.iter_markers("reads_sample_run")):
            if mark.args or mark.kwargs:
                problems.append(f"{item.nodeid}: {mark.name} takes no arguments")
        longest = item.get_closest_marker("longest_first")
        rank = longest.args[0] if longest and longest.args else None
        order = (rank, bool(item.get_closest_marker("reads_sample_run")))
        by_file.setdefault(name, set()).add(order)
        if order[0] is not None:
            ranks.setdefault(order[0], set()).add(name)
        if order[0] is not None and order[1]:
            problems.append(f"{item.nodeid}: both longest_first (run first) and reads_sample_run (run last)")
        if not order[1] and set(SAMPLE_RUN_FIXTURES) & set(getattr(item, "fixturenames", ())):
            problems.append(f"{item.nodeid} uses the shared sample run: mark its file reads_sample_run")
    problems += [f"{name}: its tests differ in longest_first / reads_sample_run: set them as the module's pytestmark"
                 for name, orders in by_file.items() if len(orders) > 1]
    problems += [f"longest_first({rank}) is on {len(names)} files: {', '.join(sorted(names))}"
                 for rank, names in ranks.items() if len(names) > 1]
    return sorted(set(problems))


def pytest_collection_modifyitems(config, items):
    problems = _marks_that_are_not_sane(items)
    if problems:
        message = "tests/conftest.py: the slow and run-order marks are not sane:\n" + "\n".join(problems)
        # pytest prints a UsageError after the session, which pytest_unconfigure's hard exit cuts short: say it now
        sys.stderr.write(f"ERROR: {message}\n")
        raise pytest.UsageError(message)
    order = {id(item): _run_order(item, i) for i, item in enumerate(items)}
    items.sort(key=lambda item: order[id(item)])


# ------------------------------------------------------------------------------------- the CLI, in this process
@pytest.fixture
def cli(capsys, monkeypatch, tmp_path):
    """``cli(*argv)`` runs ``albert-pipeline ARGV`` in this process, as ``main`` does but returning instead of
    exiting: a ``CompletedProcess`` (exit code, stdout, stderr). Importing TensorFlow in a subprocess for every
    one-line message cost seconds each; what only a real process shows (the exit code and a clean terminal) has one
    subprocess test per mechanism (tests/test_cli_errors.py, tests/test_exit_codes.py, tests/test_cli_run.py).
    Logs go to ``tmp_path/logs``; the CLI's logging set-up is undone afterwards."""
    import logging

    from pipeline import cli as cli_module
    from pipeline.local import logs

    monkeypatch.setenv(logs.LOG_DIR_VAR, str(tmp_path / "logs"))
    level = logging.getLogger().level

    def run(*argv):
        capsys.readouterr()
        try:
            code = cli_module.run_cli([str(a) for a in argv])
        except SystemExit as exc:  # argparse's usage errors
            code = exc.code
        out, err = capsys.readouterr()
        return subprocess.CompletedProcess(list(argv), code, out, err)

    yield run
    _undo_cli_logging(level)


def _undo_cli_logging(level: int) -> None:
    """Undo what the CLI's logging set-up did in this process: its handlers on the root logger, the root's level
    (back to ``level``) and the capture of warnings."""
    import logging

    root = logging.getLogger()
    for handler in [h for h in root.handlers if getattr(h, "_albert_tfx", False)]:
        root.removeHandler(handler)
        handler.close()
    root.setLevel(level)
    logging.captureWarnings(False)


def cli_in_process(argv, log_dir) -> subprocess.CompletedProcess:
    """``albert-pipeline ARGV`` in this process, as the ``cli`` fixture runs it, for a module fixture: its exit code,
    stdout and stderr; logs go to ``log_dir``, and the CLI's logging set-up is undone afterwards."""
    import contextlib
    import io
    import logging

    from pipeline import cli as cli_module
    from pipeline.local import logs

    out, err = io.StringIO(), io.StringIO()
    level, old = logging.getLogger().level, os.environ.get(logs.LOG_DIR_VAR)
    os.environ[logs.LOG_DIR_VAR] = str(log_dir)
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
            code = cli_module.run_cli([str(a) for a in argv])
    finally:
        _undo_cli_logging(level)
        if old is None:
            os.environ.pop(logs.LOG_DIR_VAR)
        else:
            os.environ[logs.LOG_DIR_VAR] = old
    return subprocess.CompletedProcess([str(a) for a in argv], code, out.getvalue(), err.getvalue())


def preset_run_in_process(tmp_path_factory, preset: str):
    """``albert-pipeline run --preset PRESET`` on a fresh folder, in this process (:func:`cli_in_process`), for a
    module fixture: the output folder, the run's JSON and its stderr; a failed run fails the fixture with its
    stderr's end."""
    base = tmp_path_factory.mktemp(preset)
    out = base / "run"
    done = cli_in_process(["run", "--preset", preset, "--output-dir", out], base / "logs")
    assert done.returncode == 0, done.stderr[-3000:]
    return out, json.loads(done.stdout), done.stderr


# ------------------------------------------------------------------------------------------ the shared sample run
CLI = os.path.join(os.path.dirname(sys.executable), "albert-pipeline")
# What `make sample` runs (tests/test_docs.py checks the recipe), with the output folder given.
SAMPLE_RUN = ["run", "--preset", "sample", "--output-dir"]
# A `make` started by a test must behave as one typed in a shell: no flags or level from the `make test` around it
# (a sub-make prints "Entering directory" on stdout).
_MAKE_VARS = ("MAKEFLAGS", "MAKELEVEL", "MFLAGS", "MAKEOVERRIDES")


def cli_env(**extra):
    """The environment of an ``albert-pipeline`` subprocess: this checkout first on the path, logs under the
    output folder (no $ALBERT_TFX_LOG_DIR), no `make` state."""
    env = {k: v for k, v in os.environ.items() if k not in _MAKE_VARS and k != "ALBERT_TFX_LOG_DIR"}
    return {**env, "PYTHONPATH": REPO, **extra}


class SampleRun:
    """``albert-pipeline run --preset sample`` on the whole DAG, once per test session, then the same command
    through ``make sample`` on the same folder (every node CACHED).

    The first run starts in the background when the session begins (it overlaps the unit tests), forked from
    tests/warm_processes.py's server (the imports before the command's first line are that server's); ``finish()``
    waits for it and does the rerun, a new interpreter through the console script, as a user starts it. The rerun
    is on the run's own folder, not a copy: the Trainer's ``checkpoint_root`` (an absolute path under the pipeline
    root) is one of its parameters, so a copy elsewhere would re-run the Trainer and everything after it. Tests only
    read what ``finish()`` returns.

    One run serves every pytest-xdist worker: ``base`` is in the folder the workers share, the first worker to ask
    starts the run under a file lock, and the run's exit code and the rerun's result are files there, so whichever
    worker needs them reads them.
    """

    def __init__(self, base):
        self.base = base
        self.out = base / "outputs"
        self.pipeline_root = str(self.out / "pipeline_root")
        self.metadata_path = str(self.out / "metadata.sqlite")
        self.first = self.rerun = None
        self.rerun_by_make = None  # None: by make; else why the rerun ran the CLI directly
        self._proc = self._recorder = None  # where this process started the run: it, and the thread recording its exit

    @property
    def config(self):
        from pipeline.settings.configs import build_config
        from pipeline.settings.resolve import resolve_config

        return resolve_config(build_config("sample", output_dir=str(self.out)), local=True)

    def _lock(self):
        import contextlib
        import fcntl

        @contextlib.contextmanager
        def held():
            with open(self.base / ".lock", "w") as f:
                fcntl.flock(f, fcntl.LOCK_EX)
                try:
                    yield
                finally:
                    fcntl.flock(f, fcntl.LOCK_UN)

        return held()

    def start(self) -> "SampleRun":
        """Start the first run unless a worker already did."""
        import threading

        from tests import warm_processes

        with self._lock():
            if not (self.base / "started").exists():
                self._proc = warm_processes.start([CLI, *SAMPLE_RUN, str(self.out)], env=cli_env(), cwd=REPO,
                                                  stdout=str(self.base / "first.stdout"),
                                                  stderr=str(self.base / "first.stderr"), new_session=True)
                # The exit code goes to a file when the run ends, for whichever worker waits for it.
                self._recorder = threading.Thread(target=self._record_exit, daemon=True)
                self._recorder.start()
                (self.base / "started").write_text(str(self._proc.pid))
        return self

    def _record_exit(self) -> None:
        code = self._proc.wait()
        (self.base / "first.rc.tmp").write_text(f"{code}\n")
        os.replace(self.base / "first.rc.tmp", self.base / "first.rc")

    def finish(self, timeout: float = 1800) -> "SampleRun":
        if self.first is None:
            self.start()
            rc, deadline = self.base / "first.rc", time.time() + timeout
            while not rc.exists():
                assert time.time() < deadline, f"the shared sample run did not end within {timeout:.0f} s"
                time.sleep(0.5)
            code = int(rc.read_text())
            self.first = subprocess.CompletedProcess([CLI, *SAMPLE_RUN, str(self.out)], code,
                                                     *(self._text(f"first.{s}") for s in ("stdout", "stderr")))
            if code == 0:
                with self._lock():
                    done = self.base / "rerun.json"
                    if not done.exists():
                        proc, why = self._rerun()
                        record = {"args": [str(a) for a in proc.args], "returncode": proc.returncode,
                                  "stdout": proc.stdout, "stderr": proc.stderr, "why": why}
                        done.write_text(json.dumps(record))
                    record = json.loads(done.read_text())
                self.rerun = subprocess.CompletedProcess(record["args"], record["returncode"], record["stdout"],
                                                         record["stderr"])
                self.rerun_by_make = record["why"]
        assert self.first.returncode == 0, (f"the shared sample run failed (exit {self.first.returncode}):\n"
                                            f"{self.first.stderr[-4000:]}")
        return self

    def _text(self, name: str) -> str:
        return (self.base / name).read_text(errors="replace")

    def _rerun(self):
        venv = os.path.join(REPO, ".venv")
        if not shutil.which("make"):
            why = "no make on PATH"
        elif not (os.path.isdir(venv) and os.path.samefile(venv, sys.prefix)):
            why = f"make sample runs .venv/bin/albert-pipeline, and this interpreter is {sys.executable}"
        else:
            # UV=echo: `make install` prints its uv command (to stderr) instead of syncing the shared venv.
            return subprocess.run(["make", "sample", "UV=echo", f"SAMPLE_OUTPUT={self.out}"], cwd=REPO,
                                  env=cli_env(), capture_output=True, text=True, timeout=900), None
        return subprocess.run([CLI, *SAMPLE_RUN, str(self.out)], cwd=REPO, env=cli_env(), capture_output=True,
                              text=True, timeout=900), why

    def stop(self, other_workers: bool):
        """At the end of the session of the process that started the run: kill it, unless other workers may still
        read it (they wait for it; it ends on its own)."""
        if self._proc is None:
            return
        if self._proc.poll() is None and other_workers:
            try:
                self._proc.wait(timeout=1800)
            except subprocess.TimeoutExpired:
                pass
        if self._proc.poll() is None:
            os.killpg(self._proc.pid, signal.SIGKILL)
            self._proc.wait()
        self._recorder.join()  # its exit code is on file before this process leaves


def _xdist_workers(config) -> int:
    """How many pytest-xdist workers share this session (0: none, this is the only process)."""
    worker = getattr(config, "workerinput", None)
    return int(worker["workercount"]) if worker else 0


def shared_tmp(tmp_path_factory, config):
    """A folder every pytest-xdist worker of this session sees (the session's own temp folder without xdist)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if _xdist_workers(config) else base


@pytest.fixture(scope="session")
def sample_run_pending(tmp_path_factory, request):
    """The shared sample run, possibly still running: call ``.finish()`` when its outputs are needed."""
    base = shared_tmp(tmp_path_factory, request.config) / "sample_run"
    base.mkdir(exist_ok=True)
    run = SampleRun(base).start()
    yield run
    run.stop(other_workers=_xdist_workers(request.config) > 1)


@pytest.fixture(scope="session")
def sample_run(sample_run_pending) -> SampleRun:
    """The shared sample run, finished (see :class:`SampleRun`): read its outputs, never change them."""
    return sample_run_pending.finish()


@pytest.fixture(scope="session", autouse=True)
def _start_sample_run_early(request):
    """Start the shared sample run with the session's first test if any collected test needs it (under xdist
    every worker collects every test; the first to get here starts the one run)."""
    if any("sample_run_pending" in getattr(item, "fixturenames", ()) for item in request.session.items):
        request.getfixturevalue("sample_run_pending")


# -------------------------------------------------------------------------------------- progress, as it happens
# `--durations` prints the slowest tests only when the session ends; a CI run stopped at its time limit prints
# nothing of the kind, and `-q` shows one character per test. So every test phase that takes at least
# REPORT_AFTER_S seconds, and every failure (with its one-line reason), is printed when it ends, with the time
# since the session began: where the time went and what failed stay visible even in a run that never finishes.
REPORT_AFTER_S = 30.0
_SESSION = {}  # "config", "start": set by pytest_configure


def pytest_runtest_logreport(report):
    config = _SESSION.get("config")
    if config is None or getattr(config, "workerinput", None) is not None:
        return  # a pytest-xdist worker: the controller prints its reports
    if report.duration < REPORT_AFTER_S and not report.failed:
        return
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None:
        return
    elapsed = int(time.monotonic() - _SESSION["start"])
    line = (f"[{elapsed // 60:d}:{elapsed % 60:02d}] {report.nodeid} ({report.when}): {report.outcome}, "
            f"{report.duration:.0f} s")
    crash = getattr(getattr(report, "longrepr", None), "reprcrash", None)
    if report.failed and crash is not None:
        line += f": {crash.message.splitlines()[0][:200] if crash.message else ''}"
    if getattr(getattr(reporter, "_tw", None), "width_of_current_line", 0):
        reporter.write("\n")  # after -q's progress characters
    reporter.write_line(line)


def pytest_configure(config):
    _SESSION.update(config=config, start=time.monotonic())


# tf.Transform / TensorFlow processes can segfault during interpreter teardown (a protobuf upb bug) after
# every test has finished and the summary is printed. Leave with pytest's own status instead, so the exit
# code reports the tests. ALBERT_TFX_HARD_EXIT=0 restores normal teardown (e.g. for coverage tools).
def pytest_sessionfinish(session, exitstatus):
    session.config._albert_exitstatus = int(exitstatus)


def pytest_unconfigure(config):
    status = getattr(config, "_albert_exitstatus", None)
    if status is not None and os.environ.get("ALBERT_TFX_HARD_EXIT", "1") == "1":
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)
