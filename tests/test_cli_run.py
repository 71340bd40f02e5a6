"""`albert-pipeline run` as a user sees it, on the shared sample run (tests/conftest.py): one progress line per node on
stderr, machine-readable JSON alone on stdout, the libraries' lines in the log file; `make sample` on the same folder
prints exactly that JSON and reports every executed node as CACHED."""
import json
import os
import re

import pytest

RELEASE = {"Blesser", "Pusher"}
EXECUTED = {"CorpusGen", "DataGate", "DataGateCheck", "VocabGen", "PretrainingDataGen", "ExamplesGate", "Trainer",
            "GlueBenchmark",
            "SquadBenchmark", "RaceBenchmark", "BenchmarkReport"} | RELEASE
# Nodes that look artifacts up in every run (they compute nothing): the Importers and the resolvers (the latest
# blessed model, the data gate's baseline).
RESOLVERS = {"LatestBlessedModel", "DataGateBaseline"}
IMPORTERS = {"WikipediaImporter", "BooksImporter", "GlueDataImporter", "SquadDataImporter", "RaceDataImporter"} | RESOLVERS
# Library warnings the sample run may print on stderr: (logger, regular expression of the line's message) → why it
# is allowed. Empty: the warnings that pointed at this project's code were fixed at their cause and the few a user
# cannot act on are dropped, with their reasons, by pipeline/local/logs.py's LIBRARY_NOISE (docs/cli.md, "Library
# warnings"). A new entry needs its reason here.
ALLOWED_LIBRARY_WARNINGS = {
    # TensorFlow 2.21's oneDNN build writes it from C++ (straight to the terminal, no logger to filter) the first
    # time an int64 op runs in a process; the raw-text task graphs' checks run one (RACE's option packing). The
    # default kernel runs instead: nothing for a user to act on.
    ("tensorflow-c++", r"E0000 [\d:. ]+ \d+ util\.cc:\d+\] oneDNN supports DT_INT64 only on platforms with AVX-512\. "
                       r"Falling back to the default Eigen-based implementation if present\."):
        "TF 2.21 oneDNN's notice for an int64 op (the raw-text task graphs' checks)",
}


pytestmark = [pytest.mark.slow, pytest.mark.reads_sample_run]


def test_stdout_is_only_json_and_names_the_report(sample_run):
    first = sample_run.first
    result = json.loads(first.stdout)
    version = os.path.join(sample_run.pipeline_root, "releases", "1")
    assert result == {"pipeline_root": sample_run.pipeline_root, "metadata_path": sample_run.metadata_path,
                      "report": result["report"], "report_html": result["report_html"],
                      "release": {"blessed": True, "forced": False, "reason": "no criteria", "version": 1,
                                  "path": version}}
    report_dir = os.path.dirname(result["report"])
    assert report_dir.startswith(os.path.join(sample_run.pipeline_root, "BenchmarkReport", "report") + os.sep)
    assert result["report_html"] == os.path.join(report_dir, "report.html") and os.path.isfile(result["report"])
    assert first.stderr.splitlines()[-2:] == [f"albert-pipeline: Report: {result['report']}",
                                              f"albert-pipeline: Release: BLESSED: no criteria; version 1: {version}"]
    assert os.path.isfile(os.path.join(version, "release.json"))


def test_one_progress_line_per_node_on_stderr(sample_run):
    first = sample_run.first
    lines = first.stderr.splitlines()
    for node in EXECUTED:
        assert sum(bool(re.fullmatch(rf"albert-pipeline: {node}: started \(execution \d+\)", ln)) for ln in lines) == 1
        finished = [ln for ln in lines if re.fullmatch(rf"albert-pipeline: {node}: finished in \d+\.\d s", ln)]
        assert len(finished) == 1, (node, first.stderr[-3000:])
    for node in IMPORTERS:
        assert sum(bool(re.fullmatch(rf"albert-pipeline: {node}: done in \d+\.\d s", ln)) for ln in lines) == 1
    # Known harmless warnings are gone at their source; no tracebacks; nothing but the CLI's own lines and the
    # TensorFlow runtime's own C++ log lines (glog format: it writes them to file descriptor 2 itself).
    assert "property_predicate" not in first.stderr and "Traceback" not in first.stderr
    others = [ln for ln in lines if not ln.startswith("albert-pipeline: ")]
    assert all(re.match(r"[IWEF]\d{4} [\d:.]+ +\d+ \w+\.cc:\d+\] ", ln) for ln in others), others


def test_make_sample_prints_exactly_the_run_json_and_reports_cached_nodes(sample_run):
    """`make sample` (install's uv stood in by `echo`) on the shared run's folder: make echoes no recipe, install
    writes to stderr, so stdout is byte for byte the JSON the first run printed; every node comes from the cache."""
    if sample_run.rerun_by_make is not None:
        pytest.skip(f"the rerun ran the CLI directly: {sample_run.rerun_by_make}")
    second = sample_run.rerun
    assert second.returncode == 0, second.stderr[-3000:]
    assert second.stdout == sample_run.first.stdout
    lines = second.stderr.splitlines()
    assert lines[0] == "sync --frozen --extra test --inexact", second.stderr[:500]  # `make install` ran first


def test_rerun_reports_cached_nodes(sample_run):
    second = sample_run.rerun
    assert second.returncode == 0, second.stderr[-3000:]
    assert json.loads(second.stdout) == json.loads(sample_run.first.stdout)
    lines = second.stderr.splitlines()
    for node in EXECUTED - RELEASE:
        assert f"albert-pipeline: {node}: CACHED" in lines, (node, second.stderr[-3000:])
    # The release decides once more (docs/release.md): its baseline, none in the first run, is now the model the
    # first run blessed. The model is already pushed, so the JSON above is the first run's.
    assert sorted(ln.split(":")[1].strip() for ln in lines if ": started" in ln) == sorted(RELEASE)
    assert "albert-pipeline: release: already pushed as version 1: " + os.path.join(
        sample_run.pipeline_root, "releases", "1") in lines


def test_log_file_under_the_output_holds_the_libraries_lines(sample_run):
    logs = sorted(os.listdir(sample_run.out / "logs"))  # one per run
    assert len(logs) == 2 and all(re.fullmatch(r"run-\d{8}-\d{6}-\d+\.log", name) for name in logs), logs
    text = (sample_run.out / "logs" / logs[0]).read_text()
    # TensorFlow's start-up banner, which import_tensorflow keeps off the terminal, is in the file of the run whose
    # process imported TensorFlow: the rerun (`make sample`, a new interpreter; the first run is forked warm)...
    assert "All log messages before absl::InitializeLog() is called are written to STDERR" in (
        sample_run.out / "logs" / logs[1]).read_text()
    assert "absl::InitializeLog" not in sample_run.first.stderr + sample_run.rerun.stderr
    # ...TFX's own INFO lines (through absl): its DAG runner (LocalDagRunner) runs every node once...
    for node in EXECUTED | IMPORTERS:
        for state in ("running", "finished"):
            assert len(re.findall(rf"^\S+ \S+ INFO absl: Component {node} is {state}\.$", text, re.M)) == 1, node
    # ...and each line the terminal showed, with its level and logger (INFO only from this project's loggers).
    for line in sample_run.first.stderr.splitlines():
        if not line.startswith("albert-pipeline: "):
            continue  # a C++ runtime line (see test_one_progress_line_per_node_on_stderr)
        level, message = re.fullmatch(r"albert-pipeline: (?:(warning|error): )?(.*)", line).groups()
        logger = r"(albert_tfx|pipeline|components|trainer)(\.[\w.]+)?" if level is None else r"[\w.]+"
        pattern = rf"^\S+ \S+ {(level or 'info').upper()} {logger}: {re.escape(message)}$"
        assert re.search(pattern, text, re.M), line


def _library_warnings(stderr: str, log_text: str):
    """(logger, message) of each warning or error line on ``stderr`` that a library logged (its logger, from the
    run's log file, is not this project's), and ("tensorflow-c++", line) for the TensorFlow runtime's own W/E/F
    lines (glog format, written to file descriptor 2 directly)."""
    from pipeline.local.logs import PROJECT_LOGGERS

    found = []
    for line in stderr.splitlines():
        if re.match(r"[WEF]\d{4} [\d:.]+ +\d+ \w+\.cc:\d+\] ", line):
            found.append(("tensorflow-c++", line))
            continue
        match = re.fullmatch(r"albert-pipeline: (warning|error): (.*)", line)
        if match is None:
            continue
        level, message = match.groups()
        loggers = re.findall(rf"^\S+ \S+ {level.upper()} ([\w.]+): {re.escape(message)}$", log_text, re.M)
        assert loggers, f"not in the log file: {line}"
        if loggers[0].split(".")[0] not in PROJECT_LOGGERS:
            found.append((loggers[0], message))
    return found


def test_no_library_warning_on_stderr_beyond_the_allow_list(sample_run):
    """Both runs of the shared sample (the whole DAG, then `make sample` with every node cached) print no library
    warning beyond ALLOWED_LIBRARY_WARNINGS."""
    logs = sorted(os.listdir(sample_run.out / "logs"))
    assert len(logs) == 2, logs
    for proc, log in ((sample_run.first, logs[0]), (sample_run.rerun, logs[1])):
        found = _library_warnings(proc.stderr, (sample_run.out / "logs" / log).read_text())
        unexpected = [(logger, message) for logger, message in found
                      if not any(logger == allowed and re.fullmatch(pattern, message)
                                 for allowed, pattern in ALLOWED_LIBRARY_WARNINGS)]
        assert unexpected == [], (log, unexpected)


def test_plan_on_the_run_says_what_a_change_reruns_and_why(sample_run, cli):
    """README's `plan` example, against the shared run's store (opened read-only): an RTE learning-rate change
    reruns GlueBenchmark (the setting, old → new) and the report (its new input); every other node is CACHED."""
    done = cli("plan", "--preset", "sample", "--output-dir", sample_run.out,
               "--set", "benchmarks.hparams.RTE.learning_rate=0.0004")
    assert done.returncode == 0, done.stderr[-3000:]
    nodes = {n["node"]: n for n in json.loads(done.stdout)["nodes"]}
    assert set(nodes) == EXECUTED | IMPORTERS
    assert [nodes.pop(node)["status"] for node in sorted(RESOLVERS)] == ["RESOLVED", "RESOLVED"]
    assert {node for node, n in nodes.items() if n["status"] != "CACHED"} == {"GlueBenchmark", "BenchmarkReport"} | RELEASE
    assert {nodes[n]["status"] for n in ("GlueBenchmark", "BenchmarkReport", *RELEASE)} == {"WILL RUN"}
    assert nodes["GlueBenchmark"]["reasons"] == ["setting benchmarks.hparams.RTE.learning_rate: 0.0005 → 0.0004"]
    assert nodes["BenchmarkReport"]["reasons"] == ["input glue: new artifact from GlueBenchmark (will run)"]
