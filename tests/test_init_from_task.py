"""``train.init_from=latest_blessed`` in a compiled spec: the rule (pipeline/settings/continuation.py ``pick_base``, the one a
local run uses) and the InitFrom task that applies it when each run starts (pipeline/tasks/init_from_task.py), run as the
backends run it: its exact command, given an ``ExecutorInput``.

The ticks it serves (scratch and version 1; nothing new, a cache hit; a new span, continued from version 1),
rehearsed task by task in the image environment: tests/test_install_check.py.
"""
from __future__ import annotations

import json
import os
import sys

import pytest

from tests import warm_processes
from tests.conftest import REPO

SPAN_1 = {"fingerprint": "f1", "spans": [1]}
SPAN_2 = {"fingerprint": "f2", "spans": [2]}
BOOKS = {"fingerprint": "b", "spans": []}


# -- the rule ------------------------------------------------------------------------------------------------------

def _blessed(corpus, started_from="scratch"):
    from pipeline.settings.continuation import Blessed

    return Blessed(uri="/pipeline_root/Trainer/model/7", corpus=corpus, started_from=started_from, folder="/releases/3")


def test_nothing_blessed_is_scratch():
    from pipeline.settings.continuation import pick_base

    assert pick_base(None, {"wikipedia": SPAN_1}) == (
        "scratch", "no blessed model in this pipeline yet: pretraining from scratch")


def test_the_same_corpus_takes_the_blessed_models_own_start_and_a_changed_one_continues_it():
    from pipeline.settings.continuation import pick_base

    now = {"wikipedia": SPAN_1, "books": BOOKS}
    assert pick_base(_blessed(dict(now), "/releases/2"), now) == (
        "/releases/2", "the corpus is the one the latest blessed model (/pipeline_root/Trainer/model/7) was trained on: its "
                       "own start, /releases/2")
    changed = "the corpus changed since the latest blessed model: continuing it (/releases/3)"
    assert pick_base(_blessed(now), {"wikipedia": SPAN_2, "books": BOOKS}) == ("/releases/3", changed)
    assert pick_base(_blessed({"wikipedia": SPAN_1}), now) == ("/releases/3", changed)  # books added
    assert pick_base(_blessed(None), now) == ("/releases/3", changed)  # what it was trained on is not known


def test_importer_properties_and_node_summaries_give_the_same_corpus_facts(tmp_path):
    """A local run compares its Importers' properties, a compiled spec what CorpusGen is given: the same facts."""
    from pipeline.settings import spans
    from pipeline.settings.continuation import corpus_from_properties, corpus_from_summaries

    for span in (1, 2):
        (tmp_path / "wiki" / f"span-{span}").mkdir(parents=True)
        (tmp_path / "wiki" / f"span-{span}" / "a.txt").write_text(f"span {span}")
    (tmp_path / "books").mkdir()
    (tmp_path / "books" / "b.txt").write_text("book")
    snaps = spans.resolve_all({"wikipedia": ("corpus.wikipedia_dir", str(tmp_path / "wiki" / "span-{SPAN}")),
                               "books": ("corpus.books_dir", str(tmp_path / "books"))},
                              span=0, window=2, corpus_keys=["wikipedia", "books"])
    by_node = corpus_from_properties({"WikipediaImporter": snaps["wikipedia"].properties(),
                                      "BooksImporter": snaps["books"].properties()})
    by_summary = corpus_from_summaries({"wikipedia": snaps["wikipedia"].summary(), "books": snaps["books"].summary(),
                                        "glue": snaps["books"].summary()})  # a benchmark's: not the corpus
    assert by_node == by_summary == {"wikipedia": {"fingerprint": snaps["wikipedia"].fingerprint, "spans": [1, 2]},
                                     "books": {"fingerprint": snaps["books"].fingerprint, "spans": []}}


def test_the_trainer_and_vocabulary_settings_of_scratch_are_a_scratch_configs():
    """What the task hands on for ``scratch`` is exactly what a config of ``scratch`` gives those nodes."""
    from config import canonical_json
    from pipeline.settings.configs import build_config
    from pipeline.tasks.init_from_task import with_base

    def parameters(init_from):
        params = build_config("sample", overrides=[f"train.init_from={init_from}"],
                              pipeline_root="gs://b/root").node_parameters()
        return (json.dumps(params["Trainer"]["custom_config"], sort_keys=True),
                canonical_json(params["VocabGen"]["config"]))

    compiled = parameters("latest_blessed")
    assert json.loads(json.loads(compiled[0])["albert"])["train"]["init_from"] == "latest_blessed"
    scratch = parameters("scratch")
    assert with_base("scratch", *compiled) == {"trainer_config": scratch[0], "vocab_config": scratch[1],
                                               "base": "scratch"}


# -- the task, as the backends start it ------------------------------------------------------------------------------

def _pushed_version(destination, model_uri, data_read, init_from=None):
    """Version 1 at ``destination`` holding the model at ``model_uri`` (its record and card facts), and the model's
    ``export_info.json`` (with the base it continued, if any)."""
    version = os.path.join(destination, "1")
    os.makedirs(version)
    with open(os.path.join(version, "model_card.json"), "w") as f:
        json.dump({"data_read": data_read}, f)
    with open(os.path.join(version, "release.json"), "w") as f:
        json.dump({"version": 1, "model": {"id": "m", "uri": model_uri}}, f)
    os.makedirs(os.path.join(model_uri, "albert"))
    with open(os.path.join(model_uri, "albert", "export_info.json"), "w") as f:
        json.dump({"final_step": 5, **({"init_from": {"location": init_from}} if init_from else {})}, f)
    return version


def _run(tmp_path, models, corpus, destination):
    from config import canonical_json
    from pipeline.settings.configs import build_config
    from pipeline.tasks.init_from_task import MODULE

    params = build_config("sample", overrides=["train.init_from=latest_blessed"]).node_parameters()
    output_file = tmp_path / "task" / "executor_output.json"
    executor_input = {
        "inputs": {"parameterValues": {
            "corpus": json.dumps(corpus), "settings": json.dumps({"push_destination": str(destination)}),
            "trainer_config": json.dumps(params["Trainer"]["custom_config"], sort_keys=True),
            "vocab_config": canonical_json(params["VocabGen"]["config"])},
            "artifacts": {"model": {"artifacts": models}}},
        "outputs": {"outputFile": str(output_file)}}
    # The task as a backend starts it (``python -m``), forked from tests/warm_processes.py's server.
    done = warm_processes.run([sys.executable, "-m", MODULE, "--executor_input", json.dumps(executor_input)], cwd=REPO,
                              timeout=300)
    values = json.loads(output_file.read_text())["parameterValues"] if done.returncode == 0 else None
    return done, values


def _summary(fingerprint, span):
    return {"location": "/d/wiki/span-{SPAN}", "uri": f"/d/wiki/span-{span}", "folders": [""], "spans": [span],
            "version": None, "fingerprint": fingerprint, "files": 1, "bytes": 3}


def test_the_task_gives_scratch_without_a_blessed_model_and_the_blessed_models_start_on_the_same_corpus(tmp_path):
    corpus = {"wikipedia": _summary("f1", 1)}
    done, first = _run(tmp_path, [], corpus, tmp_path / "releases")
    assert done.returncode == 0, done.stderr
    assert first["base"] == "scratch"
    assert "InitFrom: train.init_from=latest_blessed: no blessed model in this pipeline yet" in done.stdout

    model = str(tmp_path / "root" / "run-1" / "Trainer" / "model")
    _pushed_version(str(tmp_path / "releases"), model, {**corpus, "glue": _summary("g", 0)})
    done, second = _run(tmp_path, [{"name": "projects/p/artifacts/1", "uri": model, "metadata": {}}], corpus,
                        tmp_path / "releases")
    assert done.returncode == 0, done.stderr
    assert second == first  # the same parameters for the Trainer and VocabGen: their cache hits
    assert f"the corpus is the one the latest blessed model ({model}) was trained on: its own start, scratch" \
        in done.stdout


def test_a_base_that_is_no_model_fails_the_task_with_one_line(tmp_path):
    """Span 2 came: the task continues the latest blessed model's pushed version, whose files are checked as a
    local run checks them; here the version holds no model, so the task fails naming it, exit 2."""
    model = str(tmp_path / "root" / "run-1" / "Trainer" / "model")
    version = _pushed_version(str(tmp_path / "releases"), model, {"wikipedia": _summary("f1", 1)})
    done, _ = _run(tmp_path, [{"name": "projects/p/artifacts/1", "uri": model, "metadata": {}}],
                   {"wikipedia": _summary("f2", 2)}, tmp_path / "releases")
    assert done.returncode == 2, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.startswith("InitFrom: ")]  # TensorFlow logs aside
    assert lines == [f"InitFrom: train.init_from={version} is not a model folder: neither {version}/albert_config.json "
                     f"nor {version}/checkpoint/albert_config.json exists (a pushed version, or what "
                     "`albert-pipeline convert` writes)"]


# -- the compiled spec ------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    from pipeline.settings.configs import build_config
    from pipeline.cloud.kubeflow_v2_runner import compile_pipeline
    from pipeline.settings.resolve import resolve_config

    root = tmp_path_factory.mktemp("init_from")
    config = resolve_config(build_config("sample", overrides=["train.init_from=latest_blessed",
                                                              "release.push_destination=gs://r/prod"],
                                         pipeline_root="gs://b/root"), local=False)
    path = compile_pipeline(config, str(root / "spec.json"), image="img:1")
    with open(path) as f:
        return path, json.load(f)


def test_compile_wires_the_resolvers_model_through_the_task_into_the_trainer_and_vocabgen(compiled):
    from pipeline.cloud import submit as cloud

    path, spec = compiled
    tasks = spec["pipelineSpec"]["root"]["dag"]["tasks"]
    task = tasks["InitFrom"]
    assert task["cachingOptions"] == {"enableCache": False}
    assert task["inputs"]["artifacts"]["model"] == tasks["Blesser"]["inputs"]["artifacts"]["baseline_model"] == {
        "taskOutputArtifact": {"outputArtifactKey": "model", "producerTask": "LatestBlessedModel-model-resolver"}}
    assert task["inputs"]["parameters"]["corpus"] == {
        "taskOutputParameter": {"producerTask": "DataSnapshot", "outputParameterKey": "CorpusGen_data"}}
    for node, param, key in (("Trainer", "custom_config", "trainer_config"), ("VocabGen", "config", "vocab_config")):
        assert tasks[node]["inputs"]["parameters"][param] == {
            "taskOutputParameter": {"producerTask": "InitFrom", "outputParameterKey": key}}
        assert "InitFrom" in tasks[node]["dependentTasks"]
    trainer = json.loads(task["inputs"]["parameters"]["trainer_config"]["runtimeValue"]["constant"])
    assert json.loads(trainer["albert"])["train"]["init_from"] == "latest_blessed"
    executor = spec["pipelineSpec"]["deploymentSpec"]["executors"]["InitFrom_executor"]["container"]
    assert executor == {"image": "img:1", "command": ["python", "-m", "pipeline.tasks.init_from_task"],
                        "args": ["--executor_input", "{{$}}"]}
    # The Trainer's checkpoint root is still found where the spec keeps it (the refusal of local folders, the
    # rehearsal's moves).
    assert cloud.lasting_folders(path) == {"Trainer checkpoint_root": "gs://b/root/_checkpoints",
                                           "Pusher push_destination": "gs://r/prod"}


def test_plan_says_what_the_trainer_will_start_from(cli, tmp_path):
    """``plan`` with ``latest_blessed``: the base the run would resolve, and why (a first run: scratch)."""
    done = cli("plan", "--preset", "sample", "--output-dir", tmp_path / "out",
               "--set", "train.init_from=latest_blessed")
    assert done.returncode == 0, done.stderr[-2000:]
    why = "no blessed model in this pipeline yet: pretraining from scratch"
    assert f"Trainer base (train.init_from=latest_blessed): scratch: {why}" in done.stderr.splitlines()
    assert json.loads(done.stdout)["init_from"] == {"setting": "latest_blessed", "base": "scratch", "why": why}
    done = cli("plan", "--preset", "sample", "--output-dir", tmp_path / "out")
    assert done.returncode == 0 and "init_from" not in json.loads(done.stdout)
