"""Ticks of a schedule on the backend path (issues 45 and 46): four rehearsals of one compiled spec in one
rehearsal store, as four runs of a scheduled pipeline on Vertex AI, over the data layout of
``tests/test_schedule_ticks.py`` (its local twin): the Wikipedia location is the pattern ``wiki/span-{SPAN}``.

The spec is the smallest DAG that holds the release (``tests/test_change_impact.py``'s: the sample Wikipedia dump,
a 1000-piece vocabulary, 4 Trainer steps, GLUE RTE and RACE), compiled once with a ``gs://`` push destination, a
Model Registry model and ``release.max_regression=0``: a criterion only the comparison with the last blessed model
can fail. The ``gs://`` stand-in (``tests/gcs_standin.py``) serves ``gs://`` in this process for the test's
duration: whatever reached ``gs://`` would land there.

1. span 1: the DataSnapshot task resolves the pattern; every task runs; the resolvers find no blessed model; the
   model is blessed and pushed as version 1 into the rehearsal's stand-in of the destination, and the registry
   request is recorded, not sent;
2. nothing new: every task before the Blesser is a cache hit; the resolvers find the first run's blessed model
   through the compiled queries, and the Blesser's decision names it (the same model: nothing to compare, nothing
   pushed);
3. span 2 lands: the Wikipedia Importer registers the new span; CorpusGen and everything downstream run; the new
   model is compared with the last blessed one (the regression gate applies) and pushed as version 2 if blessed;
4. one GLUE file changes in place: only the GLUE benchmark, the report and the release run.

Each tick's tasks run or hit the cache exactly as the local DAG's nodes run or are cached in the same tick
(``TICK_RUNS`` of the local test).
"""
from __future__ import annotations

import json
import os

import pytest

from tests.test_change_impact import BASE
from tests.test_schedule_ticks import TICK_RUNS, add_span_2, change_glue_in_place, data_layout

DESTINATION = "gs://albert-releases/prod"
VERTEX_MODEL = "projects/p/locations/us-central1/models/albert"
RELEASE = ["release.max_regression=0", f"release.push_destination={DESTINATION}",
           f"release.vertex_model={VERTEX_MODEL}"]
IMPORTERS = ("WikipediaImporter", "GlueDataImporter", "RaceDataImporter")
RESOLVERS = ("LatestBlessedModel-model-blessing-resolver", "LatestBlessedModel-model-resolver")


@pytest.fixture(scope="module")
def ticks(tmp_path_factory):
    from apache_beam.io.filesystems import FileSystems

    from pipeline import rehearsal
    from pipeline.cli import run_cli
    from tests.gcs_standin import GcsStandIn

    root = tmp_path_factory.mktemp("rehearsed_ticks")
    data_layout(root)
    gcs = root / "gcs"
    gcs.mkdir()
    GcsStandIn.root = str(gcs)
    FileSystems._FILESYSTEMS = {}  # re-read the registry (the scheme moved to the stand-in)
    try:
        spec_path = str(root / "spec.json")
        argv = ["compile", "--preset", "sample", "--output", spec_path, "--image", "img:1",
                "--pipeline-root", str(root / "compiled_root")]
        for override in BASE + RELEASE + [f"corpus.wikipedia_dir={root / 'data' / 'wiki' / 'span-{SPAN}'}",
                                          f"benchmarks.glue_dir={root / 'data' / 'glue'}",
                                          f"benchmarks.race_dir={root / 'data' / 'race'}"]:
            argv += ["--set", override]
        assert run_cli(argv) == 0
        out = str(root / "out")
        summaries = [rehearsal.rehearse(spec_path, out, log=lambda line: None)]
        summaries.append(rehearsal.rehearse(spec_path, out, log=lambda line: None))
        add_span_2(root)
        summaries.append(rehearsal.rehearse(spec_path, out, log=lambda line: None))
        change_glue_in_place(root)
        summaries.append(rehearsal.rehearse(spec_path, out, log=lambda line: None))
    finally:
        GcsStandIn.root = None
        FileSystems._FILESYSTEMS = {}
    return root, out, summaries


def _outcomes(summary):
    return {name: t["outcome"] for name, t in summary["tasks"].items()}


def _ran(summary):
    """The container tasks that ran (cache misses), the DataSnapshot task aside (it runs on every tick)."""
    return {name for name, outcome in _outcomes(summary).items() if outcome == "cache miss, ran"}


def _blessing(summary):
    with open(os.path.join(summary["tasks"]["Blesser"]["outputs"]["blessing"], "blessing.json")) as f:
        return json.load(f)


def _local_versions(out):
    local = os.path.join(out, "gs", "albert-releases", "prod")
    return sorted(int(n) for n in os.listdir(local) if n.isdigit())


def test_each_tick_runs_the_tasks_the_local_dag_runs_and_hits_the_cache_for_the_rest(ticks):
    _, _, summaries = ticks
    for tick, (summary, expected) in enumerate(zip(summaries, TICK_RUNS), 1):
        outcomes = _outcomes(summary)
        assert outcomes["DataSnapshot"] == "ran", tick  # its caching is off: it resolves the data on every tick
        assert _ran(summary) == expected, tick
        containers = {n for n, t in summary["tasks"].items() if t["kind"] == "container"} - {"DataSnapshot"}
        for name in containers - expected:
            assert outcomes[name].startswith("cache hit ("), (tick, name, outcomes[name])
    # Importers: the backend's importer reuses the artifact of the same URI and type; a new span is a new URI.
    assert [_outcomes(s)["WikipediaImporter"] for s in summaries] == ["recorded", "reused", "recorded", "reused"]
    assert [_outcomes(s)["GlueDataImporter"] for s in summaries] == ["recorded", "reused", "reused", "reused"]


def test_the_data_snapshot_task_resolves_the_span_when_each_run_starts(ticks):
    root, _, summaries = ticks
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
    assert before["uri"] == after["uri"] == str(root / "data" / "glue") and before["files"] == after["files"] == 8
    assert before["fingerprint"] != after["fingerprint"]
    documents = metadata(summaries[2], "CorpusGen", "documents")["wikipedia"]
    assert documents["spans"] == [2] and documents["fingerprint"] == imported["fingerprint"]


def _store(summaries):
    with open(summaries[0]["store"]) as f:
        return json.load(f)


def test_the_first_tick_finds_no_blessed_model_and_pushes_version_1(ticks):
    _, out, summaries = ticks
    first = summaries[0]
    outcomes = _outcomes(first)
    assert [outcomes[r] for r in RESOLVERS] == ["found none", "found none"]
    decision = _blessing(first)
    assert (decision["blessed"], decision["reason"], decision["baseline"]) == (True, "no criteria applicable", None)
    pushed = os.path.join(out, "gs", "albert-releases", "prod", "1")
    with open(os.path.join(pushed, "release.json")) as f:
        assert json.load(f)["model"]["id"] == first["tasks"]["Trainer"]["artifacts"]["model"]


def test_the_second_tick_resolves_the_first_ones_blessed_model_through_the_compiled_queries(ticks):
    _, out, summaries = ticks
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


def test_the_third_tick_is_gated_on_the_last_blessed_model_and_pushed_as_version_2(ticks):
    _, out, summaries = ticks
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
        ("max_regression.RACE", first_scores["RACE"]), ("max_regression.RTE", first_scores["RTE"]),
        ("max_regression.average", (first_scores["RACE"] + first_scores["RTE"]) / 2)]
    assert decision["skipped"] == [] and decision["blessed"] == all(c["passed"] for c in decision["checks"])
    if decision["blessed"]:  # the scores are the machine's
        with open(os.path.join(out, "gs", "albert-releases", "prod", "2", "release.json")) as f:
            assert json.load(f)["model"]["id"] == third["tasks"]["Trainer"]["artifacts"]["model"]


def test_a_version_is_pushed_once_per_blessed_model(ticks):
    _, out, summaries = ticks
    pushed = []
    for summary in summaries:
        if _blessing(summary)["blessed"]:
            pushed.append(summary["tasks"]["Trainer"]["artifacts"]["model"])
    assert _local_versions(out) == list(range(1, len(set(pushed)) + 1))


def test_a_rehearsal_writes_and_sends_nothing_outside_its_folder(ticks):
    root, out, summaries = ticks
    local = os.path.join(out, "gs", "albert-releases", "prod")
    for summary in summaries:
        assert summary["moved"] == {DESTINATION: local}
        assert summary["not_sent"] == {f"Model Registry upload to {VERTEX_MODEL}":
                                       os.path.join(out, "registry_requests.jsonl")}
    assert os.listdir(root / "gcs") == []  # nothing reached gs://
    # The compiled pipeline root moved too: nothing was written under it.
    assert sorted(os.listdir(root)) == ["data", "gcs", "out", "spec.json", "spec.json.rehearsal.json"]
    from components.release.registry import recorded_requests

    requests = recorded_requests(os.path.join(out, "registry_requests.jsonl"))
    versions = _local_versions(out)
    assert len(requests) == len(versions) >= 1
    create = requests[0]["request"]
    assert create["model_id"] == "albert" and create["parent"] == "projects/p/locations/us-central1"
    assert create["model"]["artifact_uri"] == os.path.join(local, "1")
    assert create["model"]["version_aliases"][0] == "v1"
    for request, number in zip(requests[1:], versions[1:]):  # later versions name the model as their parent
        assert request["request"]["parent_model"] == VERTEX_MODEL
        assert request["request"]["model"]["version_aliases"][0] == f"v{number}"
