"""The release through the real DAG (issue 39): blessing, versioned push, model card, and the registry request.

One small DAG (tests/test_change_impact.py's: the sample Wikipedia dump, a 1000-piece vocabulary, 4 Trainer
steps, GLUE RTE and RACE) in one folder, run in order: the first run pushes version 1; an unchanged rerun decides
once more against the model it blessed and pushes nothing; a model trained further with a floor above what it
reaches is NOT_BLESSED; ``force_bless`` pushes it as version 2 and says so; a push that fails midway leaves no
version and the rerun pushes version 3. The pure decision is tested on its own numbers below.
"""
from __future__ import annotations

import json
import os

import pytest
import yaml

from tests.conftest import hf_peer
from tests.test_change_impact import BASE

FLOOR = ["release.min_scores={RTE: 101}"]
MORE_STEPS = ["train.num_train_steps=6"]


def _config(root, extra=()):
    from pipeline.settings.configs import build_config
    from pipeline.settings.resolve import resolve_config

    return resolve_config(build_config("sample", overrides=BASE + list(extra), output_dir=str(root)), local=True)


def _run(root, extra=()):
    """(the config, the release of the run it made, that run's report folder)."""
    from pipeline.local.local_runner import run_local, run_release, run_report

    config = _config(root, extra)
    run_id = run_local(config)["run_id"]
    return config, run_release(config.metadata_path, run_id), run_report(config.metadata_path, run_id)


def _executed(config):
    from tests.test_change_impact import _last_run

    states, _ = _last_run(config.metadata_path)
    # Importers and the resolver record an execution in every run (they look artifacts up, they compute nothing).
    return {n for n, s in states.items() if s == "EXECUTED" and not n.endswith("Importer")} - {"LatestBlessedModel"}


def _versions(config):
    from components.release.versions import list_versions

    return list_versions(config.push_destination)


@pytest.fixture(scope="module")
def first(tmp_path_factory):
    root = tmp_path_factory.mktemp("release")
    return (root, *_run(root))


def test_the_first_run_pushes_version_1_blessed_with_no_criteria(first):
    root, config, release, _ = first
    assert release == {"blessed": True, "forced": False, "reason": "no criteria", "version": 1,
                       "path": os.path.join(config.push_destination, "1")}
    [v1] = _versions(config)
    assert v1["version"] == 1 and v1["baseline"] is None
    path = v1["path"]
    for name in ("saved_model.pb", "variables/variables.index", "checkpoint/albert_config.json",
                 "checkpoint/encoder/ckpt.index", "checkpoint/pretraining/ckpt.index", "checkpoint/spm.model",
                 "huggingface/config.json", "huggingface/model.safetensors", "huggingface/spiece.model",
                 "huggingface/README.md", "vocab/spm.model", "model_card.md", "release.json"):
        assert os.path.isfile(os.path.join(path, name)), name
    # release.raw_text_serving=false (BASE): no raw-text folder, and the card says why
    assert not {"preprocess", "encoder", "text_model"} & set(os.listdir(path))
    card = open(os.path.join(path, "model_card.md"), encoding="utf-8").read()
    assert "and no raw-text folders (pushed with `release.raw_text_serving=false`)" in card
    assert json.load(open(os.path.join(path, "model_card.json")))["raw_text_serving"] is False
    # The record lists every file but itself, with its size and digest: nothing was dropped on the way.
    import hashlib

    on_disk = sorted(os.path.relpath(os.path.join(d, n), path) for d, _, names in os.walk(path) for n in names)
    assert sorted(v1["files"]) == [f for f in on_disk if f != "release.json"]
    for rel, meta in v1["files"].items():
        data = open(os.path.join(path, rel), "rb").read()
        assert meta == {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}, rel
    assert not [n for n in os.listdir(config.push_destination) if n.startswith(".staging-")]


def test_the_model_card_numbers_are_those_of_results_json(first):
    from components.release.blessing import task_scores
    from trainer.formatting import number_text

    _, config, release, report = first
    results = json.load(open(os.path.join(report, "results.json")))
    scores = task_scores(results)
    assert sorted(scores) == ["RACE", "RTE"]
    card = open(os.path.join(release["path"], "model_card.md"), encoding="utf-8").read()
    head, body = card.split("---\n", 2)[1:]
    meta = yaml.safe_load(head)
    assert meta["license"] == "apache-2.0" and meta["library_name"] == "transformers"
    assert meta["language"] == ["en"]  # the run's language (sample-zh's card says zh: tests/test_sample_zh.py)
    index = {r["dataset"]["name"]: r["metrics"][0]["value"] for r in meta["model-index"][0]["results"]}
    assert index == {"RACE": scores["RACE"], "GLUE RTE": scores["RTE"]}
    for task, score in scores.items():
        assert f"| {task} | accuracy | {number_text(score, 2)} |" in body
    export = json.load(open(os.path.join(release["path"], "checkpoint", "export_info.json")))
    assert f"| steps | {export['final_step']} |" in body and export["final_step"] == 4
    assert f"{export['parameters']['total']:,} parameters" in body
    for key, value in export["eval_metrics"].items():
        assert f"| held-out {key} | {number_text(value, 4)} |" in body
    summary = results["summary"]
    assert f"| tokens (train split) | {summary['datagen']['train']['tokens']} |" in body
    assert "BLESSED: no criteria. Baseline: none" in body
    # One language: no languages table in the summary or the card (tests/test_sample_multi.py: a run of several)
    assert "languages" not in summary and "\n## Languages\n" not in body


def test_an_unchanged_rerun_pushes_nothing_new(first):
    root, config, _, _ = first
    # The second run resolves the model the first one blessed as its baseline (the first had none), so the
    # Blesser decides once more; the Pusher finds the model already pushed. From then on everything is cached.
    _, release, _ = _run(root)
    assert _executed(config) == {"Blesser", "Pusher"}
    assert release["version"] == 1
    _, release, _ = _run(root)
    assert _executed(config) == set() and release["version"] == 1
    assert [v["version"] for v in _versions(config)] == [1]


def test_a_floor_above_the_score_is_not_blessed_and_nothing_is_pushed(first):
    root, config, _, _ = first
    first_model = _versions(config)[0]["model"]
    config, release, _ = _run(root, MORE_STEPS + FLOOR)
    assert release == {"blessed": False, "forced": False,
                       "reason": f"failed: min_scores.RTE (RTE scored {_rte(config):.2f}, floor 101.00)"}
    decision = _decision(config)
    assert decision["checks"] == [{"criterion": "min_scores.RTE", "passed": False, "measured": _rte(config),
                                   "threshold": 101.0,
                                   "detail": f"RTE scored {_rte(config):.2f}, floor 101.00"}]
    assert decision["baseline"]["model"]["uri"] == first_model["uri"] and decision["baseline"]["version"] == 1
    assert [v["version"] for v in _versions(config)] == [1]


def test_force_bless_pushes_the_model_and_says_so(first):
    root, config, _, _ = first
    config, release, _ = _run(root, MORE_STEPS + FLOOR + ["release.force_bless=true"])
    assert _executed(config) == {"Blesser", "Pusher"}
    assert release["blessed"] and release["forced"] and release["version"] == 2
    assert release["reason"].startswith("forced by release.force_bless (criteria failed: min_scores.RTE")
    card = open(os.path.join(release["path"], "model_card.md"), encoding="utf-8").read()
    assert "BLESSED (forced by release.force_bless)" in card
    assert "| min_scores.RTE |" in card and "| no |" in card
    v2 = _versions(config)[-1]
    assert v2["forced"] is True and v2["model"]["uri"] != _versions(config)[0]["model"]["uri"]


def test_a_push_that_fails_midway_leaves_no_version_and_a_rerun_pushes(first, monkeypatch):
    from components.release import versions

    root, config, _, _ = first
    extra = ["train.num_train_steps=8"]  # a new model, blessed (no criteria), so the Pusher pushes it
    copied = []
    real_copy = versions.copy_file

    def failing_copy(src, dst):
        if len(copied) == 5:
            raise OSError(28, "No space left on device (injected)")
        copied.append(dst)
        real_copy(src, dst)

    monkeypatch.setattr(versions, "copy_file", failing_copy)
    with pytest.raises(Exception, match="injected"):
        _run(root, extra)
    assert len(copied) == 5
    assert sorted(os.listdir(config.push_destination)) == ["1", "2"]  # no version 3, no staging folder left
    monkeypatch.setattr(versions, "copy_file", real_copy)
    config, release, _ = _run(root, extra)
    # Everything before the Pusher is cached, except the Blesser: its baseline moved to this model, which the
    # failed run blessed.
    assert _executed(config) == {"Blesser", "Pusher"}
    assert release["version"] == 3 and sorted(os.listdir(config.push_destination)) == ["1", "2", "3"]
    assert _versions(config)[-1]["model"]["uri"] not in {v["model"]["uri"] for v in _versions(config)[:2]}


def test_the_pushed_hugging_face_folder_gives_the_savedmodel_outputs(first):
    torch, transformers = hf_peer()
    import numpy as np
    import tensorflow as tf

    _, config, release, _ = first
    path = release["path"]
    ids = np.array([[2, 15, 27, 99, 3, 41, 8, 3], [2, 7, 19, 3, 64, 3, 0, 0]], dtype=np.int32)
    mask = (ids > 0).astype(np.int32)
    segments = np.array([[0, 0, 0, 0, 0, 1, 1, 1], [0, 0, 0, 0, 1, 1, 0, 0]], dtype=np.int32)
    served = tf.saved_model.load(path).signatures["serving_default"](
        input_ids=tf.constant(ids), input_mask=tf.constant(mask), segment_ids=tf.constant(segments))
    model = transformers.AlbertModel.from_pretrained(os.path.join(path, "huggingface")).eval()
    with torch.no_grad():
        out = model(input_ids=torch.tensor(ids, dtype=torch.long), attention_mask=torch.tensor(mask),
                    token_type_ids=torch.tensor(segments, dtype=torch.long))
    np.testing.assert_allclose(out.last_hidden_state.numpy(), served["sequence_output"].numpy(), atol=1e-5, rtol=0)
    np.testing.assert_allclose(out.pooler_output.numpy(), served["pooled_output"].numpy(), atol=1e-5, rtol=0)


def test_releases_command_lists_the_versions(first, cli):
    root, config, _, _ = first
    done = cli("releases", "--destination", config.push_destination)
    assert done.returncode == 0
    listed = json.loads(done.stdout)
    assert listed["destination"] == config.push_destination
    assert [v["version"] for v in listed["versions"]] == [v["version"] for v in _versions(config)]
    assert listed["versions"][0]["reason"] == "no criteria"
    done = cli("releases", "--destination", str(root / "nowhere"))
    assert done.returncode == 2 and f"{root / 'nowhere'}: no such release destination" in done.stderr


def _decision(config):
    from tests.reliability.mlmd import live_artifacts, open_store

    blessings = live_artifacts(open_store(config.metadata_path))["ModelBlessing"]
    newest = max(blessings, key=lambda a: a.id)
    return json.load(open(os.path.join(newest.uri, "blessing.json")))


def _rte(config):
    return _decision(config)["scores"]["RTE"]


# ---------------------------------------------------------------------------------------------------- pure decision
ARMS = {"RTE": {"beyond_spread": True}, "MRPC": {"beyond_spread": False}, "CoLA": {"beyond_spread": None}}


def _settings(**changes):
    base = {"min_scores": {}, "min_tasks_beating_arm": 0, "baseline_arm": "random_init", "max_regression": None,
            "force_bless": False}
    return {**base, **changes}


def test_no_criteria_is_a_recorded_blessing():
    from components.release.blessing import decide

    d = decide(_settings(), {"RTE": 55.0}, ARMS, None)
    assert (d["blessed"], d["forced"], d["reason"], d["checks"], d["skipped"]) == (True, False, "no criteria", [], [])


def test_floors_and_arm_criteria_with_their_numbers():
    from components.release.blessing import decide

    d = decide(_settings(min_scores={"RTE": 50, "SST-2": 80}, min_tasks_beating_arm=2), {"RTE": 55.0}, ARMS, None)
    assert not d["blessed"]
    assert [(c["criterion"], c["passed"], c["measured"], c["threshold"]) for c in d["checks"]] == [
        ("min_scores.RTE", True, 55.0, 50), ("min_scores.SST-2", False, None, 80),
        ("min_tasks_beating_arm", False, 1, 2)]
    assert d["checks"][2]["detail"] == ("1 of 3 tasks beat random_init beyond the seed spread (RTE); undefined with "
                                        "fewer than 2 seeds: CoLA")
    assert d["reason"] == ("failed: min_scores.SST-2 (SST-2 has no score in this run's report); min_tasks_beating_arm "
                           "(1 of 3 tasks beat random_init beyond the seed spread (RTE); undefined with fewer than 2 "
                           "seeds: CoLA)")


def test_regression_against_the_baseline_and_when_it_is_skipped():
    from components.release.blessing import decide

    baseline = {"model": {"id": 7, "uri": "m7"}, "scores": {"RTE": 60.0, "MRPC": 70.0, "CoLA": 10.0}, "version": 3,
                "same_model": False}
    d = decide(_settings(max_regression=1.0), {"RTE": 59.5, "MRPC": 68.0, "SST-2": 80.0}, {}, baseline)
    assert [(c["criterion"], c["passed"], c["measured"], c["threshold"]) for c in d["checks"]] == [
        ("max_regression.MRPC", False, 68.0, 69.0), ("max_regression.RTE", True, 59.5, 59.0),
        ("max_regression.average", False, 63.75, 65.0)]
    assert d["baseline"] == {"model": {"id": 7, "uri": "m7"}, "scores": baseline["scores"], "version": 3}
    first = decide(_settings(max_regression=1.0), {"RTE": 1.0}, {}, None)
    assert first["blessed"] and first["reason"] == "no criteria applicable"
    assert first["skipped"] == [{"criterion": "max_regression", "why": "no blessed model in this pipeline yet"}]
    same = decide(_settings(max_regression=1.0), {"RTE": 1.0}, {}, {**baseline, "same_model": True})
    assert same["skipped"] == [{"criterion": "max_regression", "why": "the latest blessed model is this model"}]
    forced = decide(_settings(max_regression=1.0, force_bless=True), {"RTE": 59.5, "MRPC": 68.0}, {}, baseline)
    assert forced["blessed"] and forced["forced"] and not forced["criteria_passed"]
    assert forced["reason"].startswith("forced by release.force_bless (criteria failed: max_regression.MRPC")


# ------------------------------------------------------------------------------------------- Vertex Model Registry
MODEL = "projects/p-albert/locations/europe-west4/models/albert-sample"


@pytest.fixture(scope="module")
def registry_settings(tmp_path_factory):
    """The Pusher's settings as ``compile`` wrote them into a Vertex spec with ``release.vertex_model`` set."""
    from pipeline.cloud import spec
    from pipeline.settings.configs import build_config
    from pipeline.cloud.kubeflow_v2_runner import compile_pipeline

    config = build_config("sample", pipeline_root="gs://b/root",
                          overrides=[f"release.vertex_model={MODEL}", "release.vertex_version_aliases=[production]"])
    path = compile_pipeline(config, str(tmp_path_factory.mktemp("vertex") / "spec.json"), image="gcr.io/p/albert:1")
    _, pipeline_spec = spec.load(path)
    pusher = pipeline_spec["root"]["dag"]["tasks"]["Pusher"]
    return json.loads(spec.constant(pusher["inputs"]["parameters"]["config"]))


@pytest.fixture
def model_rpcs(monkeypatch):
    """Stub the Model Service's gapic methods (the last step before the wire) and record their requests."""
    from google.api_core import exceptions
    from google.cloud.aiplatform_v1.services.model_service import ModelServiceClient
    from google.cloud.aiplatform_v1.types import model as gca_model
    from google.cloud.aiplatform_v1.types import model_service

    calls, registry = [], {}

    def get_model(self, name=None, **kwargs):
        calls.append(("get_model", name))
        if name not in registry:
            raise exceptions.NotFound(f"{name} not found")
        return registry[name]

    def upload_model(self, request=None, **kwargs):
        calls.append(("upload_model", request))
        registry[f"{request.parent}/models/albert-sample"] = True
        version = sum(1 for c in calls if c[0] == "upload_model")
        for alias in request.model.version_aliases:  # GetModel answers MODEL@ALIAS with that version
            registry[f"{MODEL}@{alias}"] = gca_model.Model(artifact_uri=request.model.artifact_uri,
                                                           version_id=str(version))

        class Operation:
            def result(self, timeout=None):
                return model_service.UploadModelResponse(model=MODEL, model_version_id=str(version))

        return Operation()

    monkeypatch.setattr(ModelServiceClient, "get_model", get_model)
    monkeypatch.setattr(ModelServiceClient, "upload_model", upload_model)
    return calls


def test_the_compiled_pusher_uploads_each_version_under_the_parent_model(registry_settings, model_rpcs):
    from google.auth.credentials import AnonymousCredentials

    from components.release import registry

    assert registry_settings["push_destination"] == "gs://b/root/releases"
    assert registry_settings["vertex_model"] == MODEL
    labels = {"pipeline": "albert-tfx-sample", "version": "1", "blessing": "blessed"}
    first = registry.upload(registry_settings, "gs://b/root/releases/1", 1, labels, credentials=AnonymousCredentials())
    labels = {**labels, "version": "2"}
    second = registry.upload(registry_settings, "gs://b/root/releases/2", 2, labels, credentials=AnonymousCredentials())
    assert (first, second) == ({"model": MODEL, "version_id": "1"}, {"model": MODEL, "version_id": "2"})
    uploads = [request for name, request in model_rpcs if name == "upload_model"]
    # The first upload creates the model under its id; the second adds a version to it (parent_model).
    assert [(u.parent, u.model_id, u.parent_model) for u in uploads] == [
        ("projects/p-albert/locations/europe-west4", "albert-sample", ""),
        ("projects/p-albert/locations/europe-west4", "", MODEL)]
    for number, upload in enumerate(uploads, 1):
        assert upload.model.artifact_uri == f"gs://b/root/releases/{number}"
        assert list(upload.model.version_aliases) == [f"v{number}", "production"]
        assert upload.model.container_spec.image_uri == registry_settings["vertex_serving_image"]
        assert dict(upload.model.labels) == {"pipeline": "albert-tfx-sample", "version": str(number),
                                             "blessing": "blessed"}


def test_the_registry_upload_without_credentials_says_how_to_authenticate(registry_settings, model_rpcs,
                                                                            monkeypatch, tmp_path):
    from components.release import registry
    from config import UserError

    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "missing-key.json"))
    with pytest.raises(registry.RegistryAuthError, match="gcloud auth application-default login") as raised:
        registry.upload(registry_settings, "gs://b/root/releases/1", 1, {})
    assert isinstance(raised.value, UserError) and model_rpcs == []


def _pusher_inputs(config):
    """The first run's Pusher inputs, as TFX artifacts read back from MLMD."""
    from tfx.types import artifact_utils

    from tests.reliability.mlmd import node_of, open_store

    store = open_store(config.metadata_path)
    [execution] = [e for e in store.get_executions() if node_of(store, e) == "Pusher"][:1]
    inputs = {}
    for event in store.get_events_by_execution_ids([execution.id]):
        if event.type == event.INPUT:
            [artifact] = store.get_artifacts_by_id([event.artifact_id])
            [kind] = store.get_artifact_types_by_id([artifact.type_id])
            inputs[event.path.steps[0].key] = artifact_utils.deserialize_artifact(kind, artifact)
    return inputs


def test_the_pushers_rerun_uploads_a_version_whose_upload_failed_and_never_twice(
        first, registry_settings, model_rpcs, gcs, monkeypatch):
    """The Pusher itself, on the first run's model, to a gs:// destination (the stand-in) with ``vertex_model``
    set: the upload fails once after the push; the rerun finds the model pushed and uploads it; later reruns send
    nothing, also when the record of the upload was lost."""
    import google.auth
    from google.api_core import exceptions
    from google.auth.credentials import AnonymousCredentials
    from google.cloud.aiplatform_v1.services.model_service import ModelServiceClient
    from tfx.types import standard_artifacts

    from components.release import versions
    from components.release.release_component import Pusher

    _, config, _, _ = first
    inputs = _pusher_inputs(config)
    destination = registry_settings["push_destination"]
    monkeypatch.setattr(google.auth, "default", lambda *a, **k: (AnonymousCredentials(), "p-albert"))
    sent = []
    stub = ModelServiceClient.upload_model

    def upload_model(self, request=None, **kwargs):
        sent.append(request)
        if len(sent) == 1:
            raise exceptions.ServiceUnavailable("quota exceeded (injected)")
        return stub(self, request=request, **kwargs)

    monkeypatch.setattr(ModelServiceClient, "upload_model", upload_model)

    def pusher(tmp):
        out = standard_artifacts.PushedModel()
        out.uri = str(gcs.parent / tmp)
        Pusher.EXECUTOR_SPEC.executor_class._FUNCTION(pushed_model=out, config=json.dumps(registry_settings),
                                                       **inputs)
        return {k: getattr(v, v.WhichOneof("value")) for k, v in out.mlmd_artifact.custom_properties.items()}

    with pytest.raises(exceptions.ServiceUnavailable, match="injected"):
        pusher("pushed-1")
    [v1] = versions.list_versions(destination)
    assert (v1["version"], v1["path"], v1["registry"]) == (1, f"{destination}/1", None)
    pushed = pusher("pushed-2")  # the rerun: the model is already pushed, its upload is not recorded
    assert pushed == {"pushed": 1, "pushed_version": 1, "pushed_path": f"{destination}/1",
                      "pushed_destination": destination, "vertex_model": MODEL, "vertex_model_version": "1"}
    assert [(r.model_id, r.model.artifact_uri, list(r.model.version_aliases), dict(r.model.labels)) for r in sent] == [
        ("albert-sample", f"{destination}/1", ["v1", "production"],
         {"pipeline": "albert-tfx-sample", "version": "1", "blessing": "blessed"})] * 2
    [v1] = versions.list_versions(destination)
    assert v1["registry"] == {"model": MODEL, "version_id": "1"}
    assert pusher("pushed-3") == pushed and len(sent) == 2  # recorded: not sent again
    os.remove(gcs / "b" / "root" / "releases" / "1" / versions.REGISTRY_FILE)  # the process died before recording
    assert pusher("pushed-4") == pushed and len(sent) == 2  # found by its alias v1, recorded, not sent
    assert versions.list_versions(destination)[0]["registry"] == {"model": MODEL, "version_id": "1"}
    assert [v["version"] for v in versions.list_versions(destination)] == [1]


def test_a_registry_model_needs_a_destination_it_can_read():
    from config import ConfigError
    from pipeline.settings.configs import build_config

    with pytest.raises(ConfigError, match="release.vertex_model=.* unset unless the push destination is a gs://"):
        build_config("sample", overrides=[f"release.vertex_model={MODEL}"])
    with pytest.raises(ConfigError, match="release.vertex_model="):
        build_config("sample", pipeline_root="gs://b/root", overrides=["release.vertex_model=albert"])


def test_a_spec_pushing_to_a_folder_of_the_compiling_machine_is_refused(tmp_path):
    from pipeline.cloud import submit as cloud
    from pipeline.settings.configs import build_config
    from pipeline.cloud.kubeflow_v2_runner import compile_pipeline

    config = build_config("sample", pipeline_root="gs://b/root", overrides=["release.push_destination=/srv/releases"])
    path = compile_pipeline(config, str(tmp_path / "spec.json"), image="gcr.io/p/albert:1")
    data = {name: f"gs://b/data/{name}" for name in ("books_dir", "glue_dir", "race_dir", "squad_dir", "wikipedia_dir")}
    with pytest.raises(cloud.CloudConfigError, match=r"\(paths must be gs://\): Pusher push_destination=/srv/releases; "
                                                     r"fix: recompile"):
        cloud.check_spec_paths(path, "Vertex AI", data)
    cloud.check_spec_paths(compile_pipeline(build_config("sample", pipeline_root="gs://b/root"),
                                            str(tmp_path / "ok.json"), image="gcr.io/p/albert:1"), "Vertex AI", data)
