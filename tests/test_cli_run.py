"""`albert-pipeline run` as a user sees it: one progress line per node on stderr, machine-readable JSON alone on
stdout; a rerun reports every executed node as CACHED. Slow: a (shortened) sample DAG, twice."""
import json
import os
import re
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow

CLI = os.path.join(os.path.dirname(sys.executable), "albert-pipeline")
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXECUTED = {"CorpusGen", "VocabGen", "PretrainingDataGen", "Trainer", "GlueBenchmark", "SquadBenchmark",
            "RaceBenchmark", "BenchmarkReport"}
IMPORTERS = {"WikipediaImporter", "BooksImporter", "GlueDataImporter", "SquadDataImporter", "RaceDataImporter"}
# The sample preset, shortened: fewer steps and one GLUE task (the full sample DAG is test_pipeline_e2e's job).
SHORT = "train:\n  num_train_steps: 20\n  num_warmup_steps: 2\n  eval_every: 10\n  checkpoint_every: 10\n" \
        "benchmarks:\n  glue_tasks: [RTE]\n  export_serving_model: false\n  tfma: false\n"


def _run(out, config):
    env = {**os.environ, "PYTHONPATH": REPO}
    env.pop("ALBERT_TFX_LOG_DIR", None)
    return subprocess.run([CLI, "run", "--preset", "sample", "--config", str(config), "--output-dir", str(out)],
                          cwd=REPO, capture_output=True, text=True, env=env, timeout=1800)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    out = tmp_path_factory.mktemp("cli_run")
    config = out / "short.yaml"
    config.write_text(SHORT)
    return out, _run(out, config), _run(out, config)


def test_stdout_is_only_json_and_names_the_report(runs):
    out, first, _ = runs
    assert first.returncode == 0, first.stderr[-3000:]
    result = json.loads(first.stdout)
    assert set(result) == {"pipeline_root", "metadata_path", "report", "report_html"}
    assert os.path.isfile(result["report"]) and result["report"].startswith(str(out))
    assert f"albert-pipeline: Report: {result['report']}" in first.stderr.splitlines()


def test_one_progress_line_per_node_on_stderr(runs):
    _, first, _ = runs
    lines = first.stderr.splitlines()
    for node in EXECUTED:
        assert sum(bool(re.fullmatch(rf"albert-pipeline: {node}: started \(execution \d+\)", ln)) for ln in lines) == 1
        finished = [ln for ln in lines if re.fullmatch(rf"albert-pipeline: {node}: finished in \d+\.\d s", ln)]
        assert len(finished) == 1, (node, first.stderr[-3000:])
    for node in IMPORTERS:
        assert sum(bool(re.fullmatch(rf"albert-pipeline: {node}: done in \d+\.\d s", ln)) for ln in lines) == 1
    # Known harmless warnings are gone at their source; no tracebacks; counters are reported.
    assert "property_predicate" not in first.stderr and "Traceback" not in first.stderr


def test_rerun_reports_cached_nodes(runs):
    _, _, second = runs
    assert second.returncode == 0, second.stderr[-3000:]
    json.loads(second.stdout)
    lines = second.stderr.splitlines()
    for node in EXECUTED:
        assert f"albert-pipeline: {node}: CACHED" in lines, (node, second.stderr[-3000:])
    assert not any(": started" in ln for ln in lines)


def test_log_file_under_the_output_holds_the_libraries_lines(runs):
    out, _, _ = runs
    logs = sorted(os.listdir(out / "logs"))  # one per run
    assert len(logs) == 2 and all(name.startswith("run-") and name.endswith(".log") for name in logs)
    text = (out / "logs" / logs[0]).read_text()
    assert "tfx.orchestration" in text or "absl" in text  # TFX's own INFO lines are kept, in the file
