"""The release on the backend path (issue 45): two rehearsals of one compiled spec in one rehearsal store, as two
runs of a pipeline on Vertex AI.

The spec is the smallest DAG that holds the release (``tests/test_change_impact.py``'s: the sample Wikipedia dump,
a 1000-piece vocabulary, 4 Trainer steps, GLUE RTE and RACE), compiled with a ``gs://`` push destination, a Model
Registry model and ``release.max_regression=0``: a criterion only the comparison with the last blessed model can
fail. The ``gs://`` stand-in (``tests/gcs_standin.py``) serves ``gs://`` in this process for the test's duration:
whatever reached ``gs://`` would land there.

* The first rehearsal finds no blessed model (its resolvers answer the compiled queries against an empty store),
  is blessed, pushes version 1 into the rehearsal's stand-in of the destination, and records (does not send) the
  registry request.
* The second, with ``num_train_steps`` one higher (a new model; everything before the Trainer a cache hit),
  resolves the first one's blessed model through the compiled queries, as Vertex would: its decision names it.
"""
from __future__ import annotations

import json
import os

import pytest

from tests.test_change_impact import BASE

DESTINATION = "gs://albert-releases/prod"
VERTEX_MODEL = "projects/p/locations/us-central1/models/albert"
RELEASE = ["release.max_regression=0", f"release.push_destination={DESTINATION}",
           f"release.vertex_model={VERTEX_MODEL}"]


@pytest.fixture(scope="module")
def rehearsals(tmp_path_factory):
    from apache_beam.io.filesystems import FileSystems

    from pipeline.cli import run_cli
    from tests.gcs_standin import GcsStandIn

    root = tmp_path_factory.mktemp("backend_release")
    gcs = root / "gcs"
    gcs.mkdir()
    GcsStandIn.root = str(gcs)
    FileSystems._FILESYSTEMS = {}  # re-read the registry (the scheme moved to the stand-in)
    try:
        spec_path = str(root / "spec.json")
        argv = ["compile", "--preset", "sample", "--output", spec_path, "--image", "img:1",
                "--pipeline-root", str(root / "compiled_root")]
        for override in BASE + RELEASE:
            argv += ["--set", override]
        assert run_cli(argv) == 0
        from pipeline import rehearsal

        out = str(root / "out")
        first = rehearsal.rehearse(spec_path, out, log=lambda line: None)
        second = rehearsal.rehearse(spec_path, out, parameter_values={"num_train_steps": 5}, log=lambda line: None)
    finally:
        GcsStandIn.root = None
        FileSystems._FILESYSTEMS = {}
    return root, out, first, second


def _blessing(summary):
    with open(os.path.join(summary["tasks"]["Blesser"]["outputs"]["blessing"], "blessing.json")) as f:
        return json.load(f)


def test_the_first_rehearsal_finds_no_blessed_model_and_pushes_version_1(rehearsals):
    root, out, first, _ = rehearsals
    outcomes = {name: t["outcome"] for name, t in first["tasks"].items()}
    assert outcomes["LatestBlessedModel-model-blessing-resolver"] == "found none"
    assert outcomes["LatestBlessedModel-model-resolver"] == "found none"
    decision = _blessing(first)
    assert (decision["blessed"], decision["reason"], decision["baseline"]) == (True, "no criteria applicable", None)
    pushed = os.path.join(out, "gs", "albert-releases", "prod", "1")
    with open(os.path.join(pushed, "release.json")) as f:
        assert json.load(f)["model"]["id"] == first["tasks"]["Trainer"]["artifacts"]["model"]


def test_the_second_rehearsal_resolves_the_first_ones_blessed_model_through_the_compiled_queries(rehearsals):
    root, out, first, second = rehearsals
    tasks = second["tasks"]
    blessing_name = first["tasks"]["Blesser"]["artifacts"]["blessing"]
    model_name = first["tasks"]["Trainer"]["artifacts"]["model"]
    assert tasks["LatestBlessedModel-model-blessing-resolver"]["outcome"] == f"found {blessing_name}"
    assert tasks["LatestBlessedModel-model-resolver"]["outcome"] == f"found {model_name}"
    # The Blesser recorded the model by the name the resolver's query matches, not TFX's hash of it.
    with open(os.path.join(out, "rehearsal_store.json")) as f:
        store = json.load(f)
    (blessing,) = [a for a in store["artifacts"] if a["name"] == blessing_name]
    assert blessing["metadata"]["current_model_id"] == model_name and blessing["metadata"]["blessed"] == 1
    decision = _blessing(second)
    first_scores = _blessing(first)["scores"]
    assert decision["baseline"] == {"model": {"id": model_name, "uri": first["tasks"]["Trainer"]["outputs"]["model"]},
                                    "scores": first_scores, "version": 1}
    # The regression gate applied (on today's backends it was skipped as "no blessed model yet").
    assert [(c["criterion"], c["threshold"]) for c in decision["checks"]] == [
        ("max_regression.RACE", first_scores["RACE"]), ("max_regression.RTE", first_scores["RTE"]),
        ("max_regression.average", (first_scores["RACE"] + first_scores["RTE"]) / 2)]
    assert decision["skipped"] == []
    assert decision["blessed"] == all(c["passed"] for c in decision["checks"])  # the scores are the machine's


def test_a_second_rehearsal_reuses_what_did_not_change_as_the_backends_cache_does(rehearsals):
    _, _, first, second = rehearsals
    outcomes = {name: t["outcome"] for name, t in second["tasks"].items()}
    for name in ("CorpusGen", "VocabGen", "PretrainingDataGen"):
        assert outcomes[name] == f"cache hit ({first['run_id']})", name
        assert second["tasks"][name]["artifacts"] == first["tasks"][name]["artifacts"]
    for name in ("Trainer", "GlueBenchmark", "RaceBenchmark", "BenchmarkReport", "Blesser", "Pusher"):
        assert outcomes[name] == "cache miss, ran", name
    for name in ("WikipediaImporter", "GlueDataImporter", "RaceDataImporter"):
        assert outcomes[name] == "reused" and first["tasks"][name]["outcome"] == "recorded", name


def test_a_rehearsal_writes_and_sends_nothing_outside_its_folder(rehearsals):
    root, out, first, second = rehearsals
    local = os.path.join(out, "gs", "albert-releases", "prod")
    for summary in (first, second):
        assert summary["moved"] == {DESTINATION: local}
        assert summary["not_sent"] == {f"Model Registry upload to {VERTEX_MODEL}":
                                       os.path.join(out, "registry_requests.jsonl")}
    assert os.listdir(root / "gcs") == []  # nothing reached gs://
    # The compiled pipeline root moved too: nothing was written under it.
    assert sorted(os.listdir(root)) == ["gcs", "out", "spec.json", "spec.json.rehearsal.json"]
    from components.release.registry import recorded_requests

    requests = recorded_requests(os.path.join(out, "registry_requests.jsonl"))
    versions = sorted(int(n) for n in os.listdir(local) if n.isdigit())
    assert len(requests) == len(versions) >= 1
    create = requests[0]["request"]
    assert create["model_id"] == "albert" and create["parent"] == "projects/p/locations/us-central1"
    assert create["model"]["artifact_uri"] == os.path.join(local, "1")
    assert create["model"]["version_aliases"][0] == "v1"
    for request, number in zip(requests[1:], versions[1:]):  # later versions name the model as their parent
        assert request["request"]["parent_model"] == VERTEX_MODEL
        assert request["request"]["model"]["version_aliases"][0] == f"v{number}"
