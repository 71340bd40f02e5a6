"""What ships is what runs: the image's Python environment, built outside Docker, and the compiled spec run in it the
way Vertex AI Pipelines and Kubeflow Pipelines v2 start tasks.

There is no Docker engine here, so the image is emulated from ``infra/Dockerfile`` itself:

* the build context is the checkout's files (tracked and not git-ignored) less ``infra/Dockerfile.dockerignore``;
* its build stage runs ``infra/build_env.sh deps`` and ``project``, the same script the Dockerfile runs, into a
  fresh virtualenv outside the checkout (uv's cache makes that seconds, not minutes);
* its final stage's ``COPY`` lines fill an image home (``ALBERT_TFX_HOME``, as the Dockerfile sets it), which is
  the working folder of every command: no source package is importable from there.

The spec test rehearses the compiled spec (``pipeline/rehearsal/rehearsal.py``'s ``rehearse()``, five ticks in a row
from one warm launcher) from that environment rather than ``kfp.local``: kfp's local runners run
KFP-SDK components (``SubprocessRunner`` only lightweight Python components, ``DockerRunner`` needs a Docker engine);
neither executes a TFX-compiled container spec without Docker.
"""
import json
import os
import re
import shutil
import subprocess

import pytest

from tests.image_env import (SITE, ImageEnv, TickRehearsals, build_context, build_env, card_differences, differences,
                              final_stage_copies, link_compiled_bytecode, product_packages, shared_roots, uv_path)

pytestmark = [pytest.mark.slow, pytest.mark.longest_first(1)]


@pytest.fixture(scope="module")
def image_env(tmp_path_factory) -> ImageEnv:
    root = str(tmp_path_factory.mktemp("image"))
    context = build_context(os.path.join(root, "context"))
    venv, home = os.path.join(root, "opt", ".venv"), os.path.join(root, "opt", "albert-tfx")
    build_env(context, venv, uv_path())
    link_compiled_bytecode(venv)
    image_home = next(dest for src, dest in final_stage_copies() if src == "data/sample").rsplit("/data/", 1)[0]
    for src, dest in final_stage_copies():
        target = os.path.join(home, os.path.relpath(dest, image_home))
        os.makedirs(os.path.dirname(target), exist_ok=True)
        (shutil.copytree if os.path.isdir(os.path.join(context, src)) else shutil.copy2)(
            os.path.join(context, src), target)
    return ImageEnv(root, context, venv, home)


def test_the_image_environment_holds_every_package_and_resolves_every_artifact_title(image_env):
    from components.artifacts import ALL_TYPES

    code, report, stderr = image_env.install_check()
    assert code == 0, report["failures"] if report else stderr[-2000:]
    assert report["failures"] == []
    assert report["packages"] == product_packages() == ["albert_tfx", "components", "config", "pipeline", "trainer"]
    # Every top-level import name the wheel installs is one of those packages: no `albert` (the official code's).
    assert report["top_level"] == report["packages"]
    assert report["location"] == os.path.realpath(os.path.join(image_env.venv, SITE))
    assert report["artifact_types"] == {cls.TYPE_NAME: f"components.artifacts.{cls.__name__}" for cls in ALL_TYPES}
    assert set(report["artifact_types"]) == {"albert_tfx.RawCorpus", "albert_tfx.Documents",
                                             "albert_tfx.DataGateResult", "albert_tfx.SentencePieceModel", "albert_tfx.DataGenStatistics",
                                             "albert_tfx.BenchmarkResult", "albert_tfx.BenchmarkReport"}


# Run in the environment under test with the official checkout's parent first on ``PYTHONPATH`` (as a checkout is
# run): the official package's import, every artifact title resolved as the KFP v2 entrypoint does
# (``import_class_by_path``); then the same parent moved after site-packages (where an installed distribution's
# package would win over it) and the official package imported afresh. One process: each start imports TFX.
OFFICIAL_PROBE = """
import json, sys

def official():
    for name in [m for m in sys.modules if m == "albert" or m.startswith("albert.")]:
        del sys.modules[name]
    from albert import tokenization
    return tokenization.__file__

found = {"before": official()}
from tfx.utils import import_utils
from components.artifacts import ALL_TYPES
parent = sys.argv[1]
sys.path.remove(parent)
sys.path.append(parent)
found["after"] = official()
found["titles"] = {c.TYPE_NAME: import_utils.import_class_by_path(c.TYPE_NAME) is c for c in ALL_TYPES}
print(json.dumps(found))
"""


def test_the_official_albert_code_imports_beside_the_installed_project(image_env, tmp_path):
    """The official ALBERT code imports itself as ``albert`` (``from albert import tokenization``). With the project
    installed from its wheel, a stand-in official package imports as ``albert`` both before the project on
    ``sys.path`` (``PYTHONPATH``, as a checkout is run) and after it (where an installed distribution's package would
    win over one of the project's own name), and every artifact title still resolves in that process."""
    from tests.official_albert import make_official_albert

    checkout = make_official_albert(str(tmp_path))
    done = image_env.run(image_env.python, "-c", OFFICIAL_PROBE, str(tmp_path), env={"PYTHONPATH": str(tmp_path)},
                         timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    official = os.path.join(checkout, "tokenization.py")
    assert (found["before"], found["after"]) == (official, official)
    assert found["titles"] == {title: True for title in found["titles"]} and len(found["titles"]) == 7


class _Dist:
    """What ``install_check`` reads of a distribution: its name, RECORD paths and ``top_level.txt``."""

    def __init__(self, name, files, top_level=None):
        self.metadata, self.files, self._top_level = {"Name": name}, files, top_level

    def read_text(self, name):
        return self._top_level if name == "top_level.txt" else None


def test_the_top_level_names_are_read_from_the_record_and_checked_against_other_distributions(monkeypatch):
    import importlib.metadata

    from pipeline.tasks import install_check

    ours = _Dist("albert-tfx", ["albert_tfx/__init__.py", "config/__init__.py", "config/schema.py", "stray.py",
                                "albert_tfx-0.1.0.dist-info/RECORD", "../../../bin/albert-pipeline",
                                "config/__pycache__/sections.cpython-311.pyc"])
    assert install_check._top_level_names(ours) == ["albert_tfx", "config", "stray"]
    assert install_check._top_level_packages(ours) == ["albert_tfx", "config"]
    others = [ours, _Dist("config", ["config.py", "config-0.5.1.dist-info/RECORD"]),
              _Dist("albert-tensorflow", [], top_level="albert\n"), _Dist("six", ["six.py"])]
    monkeypatch.setattr(importlib.metadata, "distributions", lambda: iter(others))
    assert install_check._shared_names(ours, ["albert_tfx", "config"]) == ["config (config)"]
    assert install_check._shared_names(ours, ["albert"]) == ["albert (albert-tensorflow)"]


def project_env(image_env: ImageEnv, context: str, root: str) -> ImageEnv:
    """The image environment with another build of the project: a virtualenv whose dependencies are the image
    environment's own (each top-level entry of its site-packages linked into one folder that a ``.pth`` file adds,
    the project's packages and ``dist-info`` left out), and the project installed from ``context`` (a source tree, an
    sdist) without dependencies. Installing the locked dependencies again would take a minute and read nothing new;
    without the link farm the image's own build of the project would answer every import the new build lacks."""
    image_site = os.path.join(image_env.venv, SITE)
    (record,) = [os.path.join(image_site, n, "RECORD") for n in os.listdir(image_site)
                 if n.startswith("albert_tfx-") and n.endswith(".dist-info")]
    with open(record) as f:
        ours = {line.split("/", 1)[0] for line in f if not line.startswith("..")}
    assert {"albert_tfx", "config", "pipeline"} < ours, ours
    deps = os.path.join(root, "image-deps")
    os.makedirs(deps)
    for name in sorted(set(os.listdir(image_site)) - ours):
        os.symlink(os.path.join(image_site, name), os.path.join(deps, name))
    venv = os.path.join(root, "venv")
    subprocess.run([uv_path(), "venv", "--python", image_env.python, venv], check=True, capture_output=True)
    with open(os.path.join(venv, SITE, "_image_deps.pth"), "w") as f:
        f.write(f"import site; site.addsitedir({deps!r})\n")
    subprocess.run([uv_path(), "pip", "install", "--python", os.path.join(venv, "bin", "python"), "--no-deps", context],
                   check=True, capture_output=True, text=True, env={**os.environ, "UV_PYTHON_DOWNLOADS": "never"})
    return ImageEnv(root, context, venv, image_env.home)


def test_the_smoke_check_fails_when_the_metadata_leaves_packages_out(image_env, tmp_path):
    """``config`` is the package the image once lacked; ``albert_tfx`` the one the artifact titles need. The project
    built from metadata without both, beside the image's dependencies: the check fails and names each."""
    packages = ("albert_tfx", "config")
    context = build_context(str(tmp_path / "context"))  # not a copy of a built one: setuptools leaves build/ there
    pyproject = os.path.join(context, "pyproject.toml")
    with open(pyproject) as f:
        text = f.read()
    for package in packages:
        assert f'"{package}*", ' in text
        text = text.replace(f'"{package}*", ', "")
    with open(pyproject, "w") as f:
        f.write(text)
    broken = project_env(image_env, context, str(tmp_path))
    code, report, _ = broken.install_check()
    assert code == 1
    for package in packages:
        assert package not in report["packages"]
        named = [line for line in report["failures"] if f"'{package}'" in line or f"{package}." in line]
        assert named, (package, report["failures"])


def test_the_dataflow_setup_file_ships_every_module_the_workers_unpickle(image_env, tmp_path):
    """``--setup_file=./setup.py``: Beam's stager builds an sdist of the project, and every Dataflow worker
    installs it. Built here by Beam's own function and installed beside the image's dependencies in place of the
    wheel, it passes the same check."""
    from apache_beam.runners.portability.stager import Stager

    context = build_context(str(tmp_path / "context"))
    sdist = Stager._build_setup_package(os.path.join(context, "setup.py"), str(tmp_path))
    workers = project_env(image_env, sdist, str(tmp_path))
    code, report, stderr = workers.install_check()
    assert code == 0, report["failures"] if report else stderr[-2000:]
    assert report["packages"] == product_packages()
    assert report["location"] == os.path.realpath(os.path.join(workers.venv, SITE))


# 1. span 1: the DataSnapshot task resolves the pattern; every task runs; the resolvers find no blessed model, so
#    InitFrom gives the Trainer scratch, and no data gate result, so the gate checks the absolute limits; the model
#    is blessed and pushed as version 1 into the rehearsal's stand-in of the destination, and the registry request
#    is recorded, not sent;
# 2. nothing new: every task before the Blesser is a cache hit of tick 1's run, the Trainer too (InitFrom gives it
#    the base tick 1's model started from: scratch), DataGate too (the newest result is span 1's: no baseline); the
#    resolvers find the first run's blessed model through the compiled queries (the same model: nothing to compare,
#    nothing pushed);
# 3. span 2 lands: the Wikipedia Importer registers the new span; CorpusGen and everything downstream run, the data
#    gate comparing span 2 with span 1 (its drift checks too), the Trainer continuing version 1; the new model is
#    compared with the last blessed one (the regression gate applies), blessed and pushed as version 2, its card
#    saying "continued from version 1";
# 4. one GLUE file changes in place: only the GLUE benchmark, the report and the release run;
# 5. span 3 is binary garbage: the rehearsal stops at DataGateCheck, with the check's line (compared with span 2).
DESTINATION = "gs://albert-releases/prod"
VERTEX_MODEL = "projects/p/locations/us-central1/models/albert"
RELEASE = ["release.max_regression=0", f"release.push_destination={DESTINATION}",
           f"release.vertex_model={VERTEX_MODEL}"]
RESOLVERS = ("LatestBlessedModel-model-blessing-resolver", "LatestBlessedModel-model-resolver")


def _tick_overrides(root):
    from tests.test_change_impact import BASE
    from tests.test_schedule_ticks import RESENT_SPAN

    # The preset's books (the image's bundled copy), and the raw-text folders pushed: the Pusher's whole product path
    # in the image's environment.
    with_books = [o for o in BASE if o not in ("corpus.books_dir=null", "release.raw_text_serving=false")]
    # Span 2 re-sends most of span 1: the gate, comparing it with span 1, lets it through as the local ticks do.
    return with_books + RESENT_SPAN + RELEASE + [
        f"corpus.wikipedia_dir={root / 'data' / 'wiki' / 'span-{SPAN}'}",
        f"benchmarks.glue_dir={root / 'data' / 'glue'}", "benchmarks.race_dir=null", "train.init_from=latest_blessed"]


def _local_tick(root, overrides):
    """The local DAG on the same data and configuration, its ``gs://`` destination on the stand-in and its registry
    upload recorded: {"report": results.json, "card": model_card.json of version 1, "pipeline_root",
    "init_from": what ``train.init_from`` resolved to}."""
    import glob

    from apache_beam.io.filesystems import FileSystems
    from apache_beam.io.gcp.gcsfilesystem import GCSFileSystem

    from components.release.registry import RECORD_VAR
    from pipeline.settings.configs import build_config
    from pipeline.local.local_runner import run_local
    from pipeline.settings.resolve import resolve_config
    from tests.gcs_standin import GcsStandIn

    gcs = root / "local_gcs"
    gcs.mkdir()
    real_scheme = GCSFileSystem.__dict__["scheme"]
    GCSFileSystem.scheme = classmethod(lambda cls: "gs-real-unregistered")  # as tests/conftest.py's gcs fixture
    GcsStandIn.root = str(gcs)
    FileSystems._FILESYSTEMS = {}  # re-read the registry (the scheme moved to the stand-in)
    os.environ[RECORD_VAR] = str(root / "local_registry.jsonl")
    try:
        config = resolve_config(build_config("sample", overrides=overrides, output_dir=str(root / "local")), local=True)
        run_local(config)
    finally:
        GCSFileSystem.scheme = real_scheme
        GcsStandIn.root = None
        FileSystems._FILESYSTEMS = {}
        os.environ.pop(RECORD_VAR)
    (report,) = glob.glob(os.path.join(config.pipeline_root, "BenchmarkReport", "report", "*", "results.json"))
    with open(report) as f, open(gcs / "albert-releases" / "prod" / "1" / "model_card.json") as g:
        return {"report": json.load(f), "card": json.load(g), "pipeline_root": config.pipeline_root,
                "init_from": config.train.init_from}


@pytest.fixture(scope="module")
def image_ticks(image_env, tmp_path_factory):
    """(data root, rehearsal output folder, the four rehearsals' summaries, their progress logs, the local tick 1,
    the fifth rehearsal's (failure, progress log): a bad span)."""
    from tests.test_data_gate import garbage_docs, write_extracted
    from tests.test_schedule_ticks import add_span_2, change_glue_in_place, data_layout

    root = tmp_path_factory.mktemp("image_ticks")
    data_layout(root)
    overrides = _tick_overrides(root)
    spec_path, out = str(root / "spec.json"), str(root / "out")
    sets = [arg for o in overrides for arg in ("--set", o)]
    done = image_env.run(image_env.cli, "compile", "--preset", "sample", "--output", spec_path, "--image", "img:1",
                         "--pipeline-root", str(root / "compiled_root"), *sets)
    assert done.returncode == 0, done.stderr[-3000:]
    summaries, logs = [], []

    def passing_tick():
        reply = ticks.tick()
        assert "summary" in reply, reply["failed"]
        summaries.append(reply["summary"])
        logs.append(reply["log"])

    with TickRehearsals(image_env, spec_path, out, str(tmp_path_factory.mktemp("image_ticks_log"))) as ticks:
        passing_tick()
        local = _local_tick(root, overrides + [f"corpus.books_dir={image_env.home}/data/sample/books"])
        passing_tick()
        add_span_2(root)
        passing_tick()
        change_glue_in_place(root)
        passing_tick()
        write_extracted(root / "data" / "wiki" / "span-3", garbage_docs())
        bad = ticks.tick()
    return root, out, summaries, logs, local, (bad.get("failed"), bad["log"])


def _outcomes(summary):
    return {name: t["outcome"] for name, t in summary["tasks"].items()}


def _blessing(summary):
    with open(os.path.join(summary["tasks"]["Blesser"]["outputs"]["blessing"], "blessing.json")) as f:
        return json.load(f)


def _store(summaries):
    with open(summaries[0]["store"]) as f:
        return json.load(f)


def _pushed(out):
    return os.path.join(out, "gs", "albert-releases", "prod")


def _local_versions(out):
    return sorted(int(n) for n in os.listdir(_pushed(out)) if n.isdigit())


# The tasks whose caching is off: they resolve what a run starts from.
UNCACHED = {"DataSnapshot", "InitFrom", "DataGateBaseline"}


def test_each_tick_runs_the_tasks_the_local_dag_runs_and_hits_the_cache_for_the_rest(image_ticks):
    """Each tick runs what the local DAG's tick runs (tests/test_schedule_ticks.py's TICK_RUNS, with
    ``train.init_from=latest_blessed`` too: tests/test_schedule_ticks.py), and every other task is a cache hit of
    the tick that last ran it, by that run's id."""
    from tests.test_schedule_ticks import TICK_RUNS

    _, _, summaries, _, _, _ = image_ticks
    assert len(summaries) == len(TICK_RUNS) == 4
    # Tick 4 (the GLUE folder changed in place): the backend's importer reuses the artifact of the same URI, and
    # DataGate has no data_snapshot parameter (the benchmark has), so on a backend the gate is a cache hit there.
    image_runs = TICK_RUNS[:3] + [TICK_RUNS[3] - {"DataGate", "DataGateCheck"}]
    last_ran = {}  # task → the run id of the tick that last ran it
    for tick, (summary, expected) in enumerate(zip(summaries, image_runs), 1):
        outcomes = _outcomes(summary)
        assert {name: outcomes[name] for name in UNCACHED} == {name: "ran" for name in UNCACHED}, tick
        ran = {name for name, outcome in outcomes.items() if outcome == "cache miss, ran"}
        assert ran == expected, tick
        containers = {n for n, t in summary["tasks"].items() if t["kind"] == "container"} - UNCACHED
        assert {name: outcomes[name] for name in containers - expected} == {
            name: f"cache hit ({last_ran[name]})" for name in containers - expected}, tick
        last_ran.update({name: summary["run_id"] for name in ran})
    # Importers: the backend's importer reuses the artifact of the same URI and type; a new span is a new URI.
    assert [_outcomes(s)["WikipediaImporter"] for s in summaries] == ["recorded", "reused", "recorded", "reused"]
    assert [_outcomes(s)["GlueDataImporter"] for s in summaries] == ["recorded", "reused", "reused", "reused"]


def _init_from(summary, out):
    """What the tick's InitFrom task decided: (its one-line reason, the base it gave the Trainer)."""
    with open(os.path.join(out, "pipeline_root", summary["run_id"], "InitFrom", "log.txt")) as f:
        lines = f.read().splitlines()
    (why,) = [line for line in lines if line.startswith("InitFrom: train.init_from=latest_blessed: ")]
    (base,) = [line.split(" = ", 1)[1] for line in lines if line.startswith("InitFrom: base = ")]
    return why.split(": ", 2)[2], base


def _export_info(summary):
    with open(os.path.join(summary["tasks"]["Trainer"]["outputs"]["model"], "albert", "export_info.json")) as f:
        return json.load(f)


def test_latest_blessed_chains_the_ticks_as_a_local_schedule_does(image_ticks):
    """``train.init_from=latest_blessed`` compiled: the InitFrom task applies the local rule when each run starts.
    Tick 1 has no blessed model (scratch, as the local run of the same data); tick 2, nothing new, gives the Trainer
    tick 1's start (a cache hit of tick 1's Trainer); tick 3, span 2, continues version 1 (its card says so) and is
    pushed as version 2; tick 4, only GLUE changed, gives the Trainer tick 3's start again (a cache hit)."""
    _, out, summaries, _, local, _ = image_ticks
    v1 = os.path.join(_pushed(out), "1")
    models = [s["tasks"]["Trainer"]["outputs"]["model"] for s in summaries]
    assert local["init_from"] == "scratch"
    assert [_init_from(s, out) for s in summaries] == [
        ("no blessed model in this pipeline yet: pretraining from scratch", "scratch"),
        (f"the corpus is the one the latest blessed model ({models[0]}) was trained on: its own start, scratch",
         "scratch"),
        (f"the corpus changed since the latest blessed model: continuing it ({v1})", v1),
        (f"the corpus is the one the latest blessed model ({models[2]}) was trained on: its own start, {v1}", v1)]
    assert models[1] == models[0] and models[3] == models[2] != models[0]
    assert "init_from" not in _export_info(summaries[0])
    steps = _export_info(summaries[0])["final_step"]
    assert _export_info(summaries[2])["init_from"] == {"location": v1, "version": 1, "steps": steps,
                                                        "restored": "weights"}
    assert _local_versions(out) == [1, 2]
    with open(os.path.join(_pushed(out), "2", "release.json")) as f:
        assert json.load(f)["model"]["uri"] == models[2]
    with open(os.path.join(_pushed(out), "2", "model_card.md"), encoding="utf-8") as f:
        card = f.read()
    assert f"| continued from | version 1 at {v1} ({steps} steps) |" in card
    # VocabGen imported the base's vocabulary on tick 3 (a cache hit of it on tick 4), as a local run's does.
    with open(os.path.join(v1, "checkpoint", "spm.model"), "rb") as f, open(
            os.path.join(models[2], "albert", "spm.model"), "rb") as g:
        assert f.read() == g.read()


def _gate_baseline(run_id, out):
    """What the run's DataGateBaseline task chose as DataGate's baseline: a result's URI, or None."""
    with open(os.path.join(out, "pipeline_root", run_id, "DataGateBaseline", "log.txt")) as f:
        (line,) = [line for line in f.read().splitlines() if line.startswith("DataGateBaseline: baseline = ")]
    chosen = line.split(" = ", 1)[1]
    return None if chosen == "None" else chosen


def _gate_summary(result):
    with open(os.path.join(result, "gate.json")) as f:
        return json.load(f)


def test_the_data_gate_compares_each_span_with_the_last_one_that_went_through(image_ticks):
    """The compiled gate's baseline (pipeline/tasks/gate_baseline_task.py), as a local run's resolver chooses it: tick 1
    has none (the absolute limits); tick 2, nothing new, chooses none again, so DataGate is a cache hit of tick 1's
    run; tick 3 compares span 2 with span 1 (the drift checks too), and tick 4 (only GLUE changed) is a cache hit
    of it. Each result records its baseline, which the chain follows."""
    _, out, summaries, _, _, _ = image_ticks
    results = [s["tasks"]["DataGate"]["outputs"]["result"] for s in summaries]
    assert [_outcomes(s)["DataGate"] for s in summaries] == [
        "cache miss, ran", f"cache hit ({summaries[0]['run_id']})", "cache miss, ran",
        f"cache hit ({summaries[2]['run_id']})"]
    assert [_outcomes(s)["DataGateLatest"] for s in summaries] == [
        "found none"] + [f"found {summaries[0]['tasks']['DataGate']['artifacts']['result']}"] * 2 + [
        f"found {summaries[2]['tasks']['DataGate']['artifacts']['result']}"]
    assert results[1] == results[0] and results[3] == results[2] != results[0]
    assert [_gate_baseline(s["run_id"], out) for s in summaries] == [None, None, results[0], results[0]]
    first, third = _gate_summary(results[0]), _gate_summary(results[2])
    assert (first["span"], first["baseline"], first["passed"], len(first["checks"])) == (1, None, True, 11)
    assert first["baseline_note"] == "no baseline: first span through the gate, so only the absolute limits apply"
    assert (third["span"], third["baseline"]["span"], third["passed"], len(third["checks"])) == (2, 1, True, 18)
    assert third["baseline_note"] == "drift checked against span 1, the last span that went through the gate"
    with open(os.path.join(out, "pipeline_root", summaries[2]["run_id"], "DataGateCheck", "log.txt"),
              errors="replace") as f:
        assert ("data gate: span 2 passed all 18 checks (drift checked against span 1, the last span that went "
                "through the gate)") in f.read()
    artifacts = {a["name"]: a["metadata"] for a in _store(summaries)["artifacts"]}
    recorded = artifacts[summaries[2]["tasks"]["DataGate"]["artifacts"]["result"]]
    assert (recorded["span"], recorded["passed"], recorded["baseline"], recorded["baseline_span"]) == (
        2, 1, results[0], 1)


def test_a_bad_span_stops_the_rehearsal_at_the_data_gate_check(image_ticks):
    """Tick 5: span 3 is binary garbage. The rehearsal stops at DataGateCheck, the task a local run stops at
    (tests/test_data_gate.py), with the check's line and one line per failed check, compared with span 2 (the last
    span that went through: tick 3's result); nothing after the gate ran (VocabGen, the Trainer), and nothing was
    pushed."""
    _, out, summaries, _, _, (failed, log) = image_ticks
    assert failed is not None, log[-3000:]
    done = re.findall(r"\[\d+/20\] ([\w-]+): \w+ (.*) in ", log)
    assert ("DataGate", "cache miss, ran") in done and ("InitFrom", "ran") in done
    assert not {"DataGateCheck", "VocabGen", "PretrainingDataGen", "Trainer"} & {name for name, _ in done}
    (run,) = set(os.listdir(os.path.join(out, "pipeline_root"))) - {s["run_id"] for s in summaries} - {"_checkpoints"}
    run_dir = os.path.join(out, "pipeline_root", run)
    assert sorted(os.listdir(run_dir)) == ["CorpusGen", "DataGate", "DataGateBaseline", "DataGateCheck",
                                           "DataSnapshot", "InitFrom"]
    span_2 = summaries[2]["tasks"]["DataGate"]["outputs"]["result"]
    assert _gate_baseline(run, out) == span_2
    gate = _gate_summary(os.path.join(run_dir, "DataGate", "result"))
    assert (gate["span"], gate["baseline"]["span"], gate["passed"], gate["accepted"]) == (3, 2, False, False)
    assert gate["baseline_note"] == "drift checked against span 2, the last span that went through the gate"
    assert failed.startswith(
        "task DataGateCheck failed (exit 1): components.datagate.datagate_result."
        "DataGateError: the data gate stopped span 3 before the vocabulary, pretraining data and Trainer: 3 of 18 "
        f"checks failed; anomalies in {os.path.join(run_dir, 'DataGate', 'result')}; --set gate.accept=3 lets it"), \
        failed
    with open(os.path.join(run_dir, "DataGateCheck", "log.txt"), errors="replace") as f:
        checks = re.findall(r"^span 3: check (\w+) = [\d.]+, limit <= ([\d.]+): FAILED \(([^)]*)\)$", f.read(), re.M)
    # Each check names the location it failed in (the patterned one; issue 63's checks per location).
    assert checks == [("max_word_length_share", "0.05", "absolute; wikipedia location"),
                      ("max_symbols_share", "0.05", "absolute; wikipedia location"),
                      ("max_few_letters_share", "0.05", "absolute; wikipedia location")]
    assert _local_versions(out) == [1, 2]


def test_the_spec_compiled_in_the_image_names_its_bundled_data(image_env, image_ticks):
    """``compile`` inside the image environment (as ``infra/cloudbuild.yaml`` does): the data parameters the compile
    does not set (the books here) name the image's bundled copy, in schema 2.1's typed ``parameterValues``."""
    root = image_ticks[0]
    with open(root / "spec.json") as f:
        spec = json.load(f)
    assert spec["pipelineSpec"]["schemaVersion"] == "2.1.0"
    assert "parameters" not in spec["runtimeConfig"]
    values = spec["runtimeConfig"]["parameterValues"]
    assert values["books_dir"] == os.path.join(image_env.home, "data", "sample", "books")
    assert values["glue_dir"] == str(root / "data" / "glue")
    assert values["data_span"] == 0 and "DataSnapshot" in spec["pipelineSpec"]["root"]["dag"]["tasks"]


def test_the_first_tick_runs_every_task_as_the_backends_start_it_and_equals_the_local_run(image_env, image_ticks):
    """Every task of the spec run from the image environment: Importers recorded, each container's exact command
    given an ``ExecutorInput`` with parameters only in ``parameterValues``. The report and the card equal the local
    DAG's on the same data, and the report names its artifacts by the backend's resource names."""
    _, out, summaries, logs, local, _ = image_ticks
    first = summaries[0]
    assert first["python"] == image_env.python and first["schema_version"] == "2.1.0"
    order = re.findall(r"\[\d+/20\] ([\w-]+): ", logs[0])  # the progress lines, in the order the tasks ran
    assert order == ["DataGateLatest", "DataSnapshot", "LatestBlessedModel-model-blessing-resolver",
                     "BooksImporter", "DataGateBaseline", "GlueDataImporter", "LatestBlessedModel-model-resolver",
                     "WikipediaImporter",
                     "CorpusGen", "InitFrom", "DataGate", "DataGateCheck", "VocabGen", "PretrainingDataGen",
                     "ExamplesGate", "Trainer", "GlueBenchmark", "BenchmarkReport", "Blesser", "Pusher"]
    assert sorted(first["tasks"]) == sorted(order)
    assert {t["kind"] for t in first["tasks"].values()} == {"importer", "resolver", "container"}
    # The Beam steps ran on FnApiRunner as Beam's default, never trying to download PrismRunner.
    run_dir = os.path.join(out, "pipeline_root", first["run_id"])
    for task in ("CorpusGen", "PretrainingDataGen"):
        with open(os.path.join(run_dir, task, "log.txt"), errors="replace") as f:
            log = f.read()
        assert "Starting executor" in log and "prism" not in log.lower(), task

    with open(os.path.join(first["tasks"]["BenchmarkReport"]["outputs"]["report"], "results.json")) as f:
        remote = json.load(f)
    report = json.loads(json.dumps(local["report"]))
    ids, local_ids = remote["summary"].pop("artifact_ids"), report["summary"].pop("artifact_ids")
    assert sorted(remote["summary"]["data_read"]) == ["books", "glue", "wikipedia"]
    # The data read included: the same folders, the same fingerprints; the model's files at the same place in each
    # run's model folder, the checkpoints at the same place under each pipeline root.
    roots = shared_roots(local, first, out)
    assert differences(report, remote, roots=roots) == []
    assert all(isinstance(value["id"], int) for value in local_ids.values())  # a local run: MLMD ids
    # The report names artifacts as the backend knows them: its resource names, not TFX's hash of them.
    assert ids["model"]["id"] == first["tasks"]["Trainer"]["artifacts"]["model"]
    assert ids["model"]["id"].startswith("projects/rehearsal/locations/local/metadataStores/default/artifacts/")
    assert {name: value["type"] for name, value in ids.items()} == {
        "model": "Model", "model_run": "ModelRun", "statistics": "albert_tfx.DataGenStatistics",
        "glue": "albert_tfx.BenchmarkResult", "data_gate": "albert_tfx.DataGateResult"}

    # The release: no blessed model yet, blessed with no criteria, version 1 in the rehearsal's stand-in of the
    # gs:// destination, with the local run's scores.
    outcomes = _outcomes(first)
    assert [outcomes[r] for r in RESOLVERS] == ["found none", "found none"]
    decision = _blessing(first)
    assert (decision["blessed"], decision["reason"], decision["baseline"]) == (True, "no criteria applicable", None)
    with open(os.path.join(_pushed(out), "1", "release.json")) as f:
        record = json.load(f)
    from components.release.blessing import task_scores

    assert record["version"] == 1 and record["scores"] == task_scores(local["report"])
    assert record["model"]["id"] == first["tasks"]["Trainer"]["artifacts"]["model"]
    assert os.path.isfile(os.path.join(_pushed(out), "1", "saved_model.pb"))
    # The card holds the same facts as the local run's card: the Pusher reads the documents' counts as the backend
    # hands them over (metadata numbers), not only as a local MLMD store holds them.
    with open(os.path.join(_pushed(out), "1", "model_card.json")) as f:
        remote_card = json.load(f)
    assert remote_card["corpus"]["sources"] == {"books": 2, "wikipedia": 19}
    assert remote_card["corpus"]["documents"] == 21
    assert card_differences(local["card"], remote_card, roots) == []


def test_the_data_snapshot_task_resolves_the_span_when_each_run_starts(image_ticks):
    root, _, summaries, _, _, _ = image_ticks
    wiki = root / "data" / "wiki"
    assert [s["tasks"]["WikipediaImporter"]["outputs"]["result"] for s in summaries] == [
        str(wiki / "span-1"), str(wiki / "span-1"), str(wiki / "span-2"), str(wiki / "span-2")]
    artifacts = {a["name"]: a for a in _store(summaries)["artifacts"]}

    def metadata(summary, task, key):
        return json.loads(artifacts[summary["tasks"][task]["artifacts"][key]]["metadata"]["data_snapshot"])

    # The Importer records what the task resolved (KFP's dynamic importer metadata) …
    imported = metadata(summaries[2], "WikipediaImporter", "result")
    assert (imported["spans"], imported["uri"], imported["location"]) == ([2], str(wiki / "span-2"),
                                                                          str(wiki / "span-{SPAN}"))
    # … and the benchmark's result what it read: the GLUE folder changed in place has a new fingerprint, though the
    # Importer reused the artifact of that URI.
    before, after = (metadata(s, "GlueBenchmark", "result")["dataset"] for s in (summaries[0], summaries[3]))
    assert before["uri"] == after["uri"] == str(root / "data" / "glue") and before["files"] == after["files"] == 16
    assert before["fingerprint"] != after["fingerprint"]
    documents = metadata(summaries[2], "CorpusGen", "documents")["wikipedia"]
    assert documents["spans"] == [2] and documents["fingerprint"] == imported["fingerprint"]


def test_the_second_tick_resolves_the_first_ones_blessed_model_through_the_compiled_queries(image_ticks):
    _, _, summaries, _, _, _ = image_ticks
    first, second = summaries[:2]
    blessing_name = first["tasks"]["Blesser"]["artifacts"]["blessing"]
    model_name = first["tasks"]["Trainer"]["artifacts"]["model"]
    outcomes = _outcomes(second)
    assert [outcomes[r] for r in RESOLVERS] == [f"found {blessing_name}", f"found {model_name}"]
    # The Blesser recorded the model by the name the resolver's query matches, not TFX's hash of it.
    (blessing,) = [a for a in _store(summaries)["artifacts"] if a["name"] == blessing_name]
    assert blessing["metadata"]["current_model_id"] == model_name and blessing["metadata"]["blessed"] == 1
    decision = _blessing(second)
    assert second["tasks"]["Trainer"]["artifacts"] == first["tasks"]["Trainer"]["artifacts"]  # the same model
    assert decision["baseline"] == {"model": {"id": model_name, "uri": first["tasks"]["Trainer"]["outputs"]["model"]},
                                    "scores": _blessing(first)["scores"], "version": 1}
    assert decision["skipped"] == [{"criterion": "max_regression", "why": "the latest blessed model is this model"}]


def test_the_third_tick_is_gated_on_the_last_blessed_model(image_ticks):
    _, out, summaries, _, _, _ = image_ticks
    first, third = summaries[0], summaries[2]
    model_name = first["tasks"]["Trainer"]["artifacts"]["model"]
    assert _outcomes(third)["LatestBlessedModel-model-resolver"] == f"found {model_name}"
    assert third["tasks"]["Trainer"]["artifacts"]["model"] != model_name  # a model trained on span 2
    decision = _blessing(third)
    first_scores = _blessing(first)["scores"]
    assert decision["baseline"] == {"model": {"id": model_name, "uri": first["tasks"]["Trainer"]["outputs"]["model"]},
                                    "scores": first_scores, "version": 1}
    # The regression gate applied (on the backends before issue 45 it was skipped as "no blessed model yet").
    assert [(c["criterion"], c["threshold"]) for c in decision["checks"]] == [
        ("max_regression.RTE", first_scores["RTE"]), ("max_regression.average", first_scores["RTE"])]
    assert decision["skipped"] == [] and all(c["passed"] for c in decision["checks"]) and decision["blessed"]


def test_a_version_is_pushed_once_per_blessed_model(image_ticks):
    _, out, summaries, _, _, _ = image_ticks
    assert [_blessing(s)["blessed"] for s in summaries] == [True, True, True, True]
    assert _local_versions(out) == [1, 2]  # tick 1's model, tick 3's: ticks 2 and 4 bless a pushed model again
    for version, tick in ((1, 0), (2, 2)):
        with open(os.path.join(_pushed(out), str(version), "release.json")) as f:
            assert json.load(f)["model"]["id"] == summaries[tick]["tasks"]["Trainer"]["artifacts"]["model"]


def test_a_rehearsal_writes_and_sends_nothing_outside_its_folder(image_ticks):
    root, out, summaries, _, _, _ = image_ticks
    for summary in summaries:
        assert summary["moved"] == {DESTINATION: _pushed(out)}
        assert summary["not_sent"] == {f"Model Registry upload to {VERTEX_MODEL}":
                                       os.path.join(out, "registry_requests.jsonl")}
    # The compiled pipeline root moved too: nothing was written under it, nor beside the output folder.
    assert sorted(os.listdir(root)) == ["data", "local", "local_gcs", "local_registry.jsonl", "out", "spec.json",
                                        "spec.json.rehearsal.json"]
    from components.release.registry import recorded_requests

    requests = recorded_requests(os.path.join(out, "registry_requests.jsonl"))
    versions = _local_versions(out)
    assert len(requests) == len(versions) == 2
    create = requests[0]["request"]
    assert create["model_id"] == "albert" and create["parent"] == "projects/p/locations/us-central1"
    assert create["model"]["artifact_uri"] == os.path.join(_pushed(out), "1")
    assert create["model"]["version_aliases"][0] == "v1"
    for request, number in zip(requests[1:], versions[1:]):  # later versions name the model as their parent
        assert request["request"]["parent_model"] == VERTEX_MODEL
        assert request["request"]["model"]["version_aliases"][0] == f"v{number}"


