"""The one logging set-up of ``albert-pipeline``: short human lines on stderr, everything in a log file.

Library code only calls ``logging.getLogger(__name__)``; this module, called once by the CLI, decides where records
go. stderr gets this project's INFO lines (progress, counters) and every library's WARNING and above, one line each,
without tracebacks, except the few library warnings listed in ``LIBRARY_NOISE`` (dropped everywhere, each with
its reason). The log file gets every INFO record (TFX, Beam, absl included) with full tracebacks, so an error
on the terminal can stay one line and name the file that holds the rest.
"""
from __future__ import annotations

import dataclasses
import logging
import os
import sys
import tempfile
import time
from typing import Optional

# Loggers whose INFO records a person running the CLI wants to see.
PROJECT_LOGGERS = ("albert_tfx", "pipeline", "components", "trainer")
LOG_DIR_VAR = "ALBERT_TFX_LOG_DIR"

@dataclasses.dataclass(frozen=True)
class LibraryNoise:
    """A warning a library logs on every run that says nothing a user of this pipeline can act on.

    Matched by logger, exact format string (``record.msg``, not the formatted text) and the library code it comes
    from: a path fragment of the file that logs it (``record.pathname``) or, for a TensorFlow deprecation notice
    (which TensorFlow's deprecation module logs on behalf of the caller), of the call site the notice names (its
    first argument). The same text from anywhere else, and anything else from the same logger, still shows.

    A record that Beam's runner relays from one of its worker processes (``Worker: %s``, the worker's LogEntry as
    text) is matched further by ``relayed``, the start of the worker's own message, and ``relayed_source``, a path
    fragment of the worker file that logged it (the entry's ``log_location``); every other worker line still shows.
    """

    logger: str
    message: str
    source: str
    reason: str
    relayed: str = ""
    relayed_source: str = ""

    def matches(self, record: logging.LogRecord) -> bool:
        if record.name != self.logger or record.msg != self.message:
            return False
        where = record.args[0] if self.message == _TF_DEPRECATION and record.args else record.pathname
        if self.source not in str(where).replace(os.sep, "/"):
            return False
        if not self.relayed:
            return True
        entry = str(record.args[0]) if record.args else ""
        location = entry.split('log_location: "', 1)[1].split('"', 1)[0] if 'log_location: "' in entry else ""
        return f'message: "{self.relayed}' in entry and self.relayed_source in location.replace(os.sep, "/")


_TF_DEPRECATION = ("From %s: %s (from %s) is deprecated and will be removed %s.\n"
                   "Instructions for updating:\n%s")

# The one place library warnings are dropped (docs/cli.md, "Library warnings"), from the terminal and the log file.
# tests/test_cli_run.py checks the sample run's stderr against its allow-list, so a new library warning shows up
# as a failing test, not as a line quietly added here.
LIBRARY_NOISE = (
    LibraryNoise("absl", "ArtifactQuery.property_predicate is not supported.",
                 "tfx/orchestration/portable/input_resolution/channel_resolver.py",
                 "TFX 1.21's compiler writes an output-key property predicate into every input channel; its in-process "
                 "resolver, which matches outputs by event instead, logs that it ignores it, once per input of every "
                 "node"),
    LibraryNoise("absl", "ContextQuery.property_predicate is not supported.",
                 "tfx/orchestration/portable/input_resolution/channel_resolver.py",
                 "the same, for the pipeline-run context of every input"),
    LibraryNoise("absl", "Tensorflow version (%s) found. Note that TFMA support for TF 2.0 is currently in beta",
                 "tensorflow_model_analysis/api/model_eval_lib.py",
                 "TFMA 0.52 logs it on every run_model_analysis with any TensorFlow 2 (once per GLUE classification "
                 "task and dev split); the TensorFlow installed is the one TFMA's own pins resolve to"),
    LibraryNoise("apache_beam.runners.portability.local_job_service", "Worker: %s",
                 "apache_beam/runners/portability/local_job_service.py",
                 "with beam_args=--direct_running_mode=multi_processing (ingest --workers N), every worker process the "
                 "DirectRunner starts logs that it has no semi-persistent directory to load a pickled main session "
                 "from: a Dataflow worker's folder, which a local worker never has and this project's pipelines never "
                 "use (no save_main_session); the runner relays it, one line per worker process it starts",
                 relayed="No semi_persistent_directory found: ",
                 relayed_source="apache_beam/runners/worker/sdk_worker_main.py"),
    LibraryNoise("tensorflow", _TF_DEPRECATION, "tensorflow_model_analysis/writers/",
                 "TFMA's metrics and eval-config writers read their own output back with the deprecated "
                 "tf.compat.v1.python_io.tf_record_iterator; TensorFlow logs that once per process, naming TFMA's "
                 "line"),
)


class _DropLibraryNoise(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not any(noise.matches(record) for noise in LIBRARY_NOISE)


# Loggers that log an exception just before re-raising it: the CLI reports that exception once, itself.
RERAISING_LOGGERS = ("apache_beam.runners.common", "apache_beam.runners.direct", "apache_beam.runners.portability")


class _TerminalFilter(logging.Filter):
    """Project INFO lines and anyone's warnings; nothing chatty from third-party libraries."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.ERROR and record.name.startswith(RERAISING_LOGGERS):
            return False
        if record.levelno >= logging.WARNING:
            return True
        return record.levelno >= logging.INFO and record.name.split(".")[0] in PROJECT_LOGGERS


class _OneLine(logging.Formatter):
    """``albert-pipeline: message`` (first line only: tracebacks belong in the log file)."""

    def format(self, record: logging.LogRecord) -> str:
        message = record.getMessage().splitlines()[0] if record.getMessage() else ""
        prefix = "" if record.levelno < logging.WARNING else f"{record.levelname.lower()}: "
        return f"albert-pipeline: {prefix}{message}"


def default_log_path(command: str, log_dir: Optional[str] = None) -> str:
    """``<log_dir>/<command>-<time>-<pid>.log``; ``log_dir`` defaults to $ALBERT_TFX_LOG_DIR or the temp folder.

    Never inside a command's output folder: a failed command must leave nothing there.
    """
    log_dir = log_dir or os.environ.get(LOG_DIR_VAR) or os.path.join(tempfile.gettempdir(), "albert-tfx-logs")
    stamp = time.strftime("%Y%m%d-%H%M%S")
    return os.path.abspath(os.path.join(log_dir, f"{command}-{stamp}-{os.getpid()}.log"))


def setup(log_path: str, verbose: bool = False) -> str:
    """Configure the root logger once (idempotent) and quiet libraries that print on their own; returns the path."""
    root = logging.getLogger()
    for handler in list(root.handlers):
        if getattr(handler, "_albert_tfx", False):
            root.removeHandler(handler)
            handler.close()
    root.setLevel(logging.DEBUG if verbose else logging.INFO)

    terminal = logging.StreamHandler(sys.stderr)
    terminal.setLevel(logging.DEBUG if verbose else logging.INFO)
    terminal.addFilter(_TerminalFilter())
    terminal.setFormatter(_OneLine())
    os.makedirs(os.path.dirname(log_path), exist_ok=True)
    logfile = logging.FileHandler(log_path, delay=True, encoding="utf-8")
    logfile.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    for handler in (terminal, logfile):
        handler._albert_tfx = True  # type: ignore[attr-defined]
        handler.addFilter(_DropLibraryNoise())
        root.addHandler(handler)
    _quiet_absl(verbose)
    logging.captureWarnings(True)  # DeprecationWarning & co. go to the log file, not raw to stderr
    return log_path


def _quiet_absl(verbose: bool = False) -> None:
    """absl (TFX's logger) writes to stderr through its own handler once it is 'initialised'; route it to ours.

    Its verbosity is set explicitly (INFO, DEBUG with ``verbose``): TensorFlow's SavedModel writer sets it to FATAL
    while it saves and then "restores" it, which, from absl's default, leaves the absl logger at WARNING, and every
    INFO line of TFX after the first export (each node's start and end) would be missing from the log file."""
    try:
        from absl import logging as absl_logging  # lazy: optional dependency (absl comes with TensorFlow and TFX; 0.01 s)
    except ImportError:  # pragma: no cover - absl comes with TensorFlow/TFX
        return
    absl_logging.set_verbosity(absl_logging.DEBUG if verbose else absl_logging.INFO)
    absl_logger = logging.getLogger("absl")
    absl_logger.handlers = [h for h in absl_logger.handlers if not isinstance(h, absl_logging.ABSLHandler)]
    absl_logger.propagate = True
    logging.root.handlers = [h for h in logging.root.handlers if not isinstance(h, absl_logging.ABSLHandler)]
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # TensorFlow's C++ INFO/WARNING banner lines


_looked_for_gpus = False  # whether import_tensorflow made this process's first look for GPUs


def import_tensorflow(log_path: str) -> None:
    """Import TensorFlow with file descriptor 2 pointed at the log file.

    TensorFlow 2.21's C++ libraries print "All log messages before absl::InitializeLog() ...", the oneDNN notice
    and "Could not find cuda drivers" from static initialisers, before TF_CPP_MIN_LOG_LEVEL is read, so no
    setting silences them; the first look for GPUs prints "failed call to cuInit" on a machine without one. They
    are kept, in the log file, instead of on the terminal. (Listing physical devices leaves the runtime
    unconfigured: logical CPU devices and collective ops can still be set up afterwards.) In a process that imported
    TensorFlow before (a program calling :func:`pipeline.cli.run_cli`, a process forked after the import), the first
    look for GPUs is still made here, once.
    """
    global _looked_for_gpus
    if _looked_for_gpus:
        return
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(log_path, "ab") as f:
            os.dup2(f.fileno(), 2)
            import tensorflow  # lazy: tensorflow (2.8 s), with fd 2 pointed at the log file

            tensorflow.config.list_physical_devices("GPU")
            _looked_for_gpus = True
    finally:
        os.dup2(saved, 2)
        os.close(saved)
