"""Benchmark any model (issue 47, scope 3): ``mode=benchmark`` with ``train.init_from`` a model folder builds a DAG with
no corpus, vocabulary, data or pretraining nodes. ``ModelImport`` brings the model in, laid out as the Trainer's, and
the benchmarks, report, blessing and push run on it with the preset's protocol and seeds.

The end-to-end test takes a Hugging Face ALBERT (a small random ``AlbertForPreTraining`` saved with
``save_pretrained``; skipped without torch), converts it with ``albert-pipeline convert hf-to-albert``, and runs the
smallest benchmark settings (``tests/test_change_impact.py``'s GLUE RTE, a few steps, one seed; its RACE only in the
DAG test, not in the runs) locally, then compiles the same configuration and rehearses the spec.
"""
from __future__ import annotations

import json
import os
import shutil

import pytest

from tests.conftest import hf_peer
from tests.test_change_impact import BASE

# The benchmark settings of the smallest DAG (BASE less its corpus, vocabulary, data and training settings).
BENCH = [o for o in BASE if o.startswith("benchmarks.")]
PRETRAINING_NODES = {"WikipediaImporter", "BooksImporter", "CorpusGen", "VocabGen", "PretrainingDataGen", "Trainer"}
EXPECTED_NODES = {"GlueDataImporter", "RaceDataImporter", "ModelImport", "GlueBenchmark", "RaceBenchmark",
                  "BenchmarkReport", "LatestBlessedModel", "Blesser", "Pusher"}
# What the runs execute: one benchmark (RTE) is enough to score, report, bless and push, and each task of the
# rehearsal is a process start of TFX's entrypoint.
RUN = ["benchmarks.race_dir=null"]
# The raw-text folders: pushed by the encoder-only run (an encoder without its MLM head: text_model/ has embed alone),
# left out of the others' pushes (docs/release.md).
NO_RAW_TEXT = ["release.raw_text_serving=false"]
RUN_NODES = EXPECTED_NODES - {"RaceDataImporter", "RaceBenchmark"}
# The same nodes as compiled tasks: TFX's two resolver queries, and the DataSnapshot task that resolves the data at
# run start.
RUN_TASKS = (RUN_NODES - {"LatestBlessedModel"}) | {"LatestBlessedModel-model-resolver",
                                                    "LatestBlessedModel-model-blessing-resolver", "DataSnapshot"}


def _sets(model_dir, *extra):
    return ["mode=benchmark", f"train.init_from={model_dir}", *BENCH, *extra]


def _argv(command, model_dir, *flags, raw_text=False):
    """The CLI's arguments for a run's settings (RTE alone; the raw-text folders only with ``raw_text``)."""
    argv = [command, "--preset", "sample", *flags]
    for override in _sets(model_dir, *RUN, *([] if raw_text else NO_RAW_TEXT)):
        argv += ["--set", override]
    return argv


@pytest.fixture(scope="module")
def albert_folder(tmp_path_factory):
    """An albert folder of an untrained albert-tiny with the bundled 30k vocabulary (encoder only)."""
    from tests.conftest import export_untrained_albert

    return export_untrained_albert(str(tmp_path_factory.mktemp("base") / "albert"), seed=3)


def test_the_benchmark_only_dag_has_exactly_the_benchmark_and_release_nodes(albert_folder, tmp_path):
    from pipeline.settings.configs import build_config
    from pipeline.pipeline import create_pipeline
    from pipeline.settings.resolve import resolve_config
    from trainer import base_model

    def local(overrides):
        return resolve_config(build_config("sample", overrides=overrides, output_dir=str(tmp_path)), local=True)

    config = local(_sets(albert_folder))
    assert {c.id for c in create_pipeline(config).components} == EXPECTED_NODES
    params = config.node_parameters()
    assert set(params) == EXPECTED_NODES - {"LatestBlessedModel"}
    digest = base_model.digest(base_model.model_files(base_model.describe(albert_folder)))
    assert params["ModelImport"] == {"location": albert_folder, "digest": digest}
    assert config.parameter_settings()["ModelImport"] == {"location": "train.init_from", "digest": "train.init_from"}
    # The benchmark nodes receive what they receive in the whole DAG: the same protocol and seeds.
    whole = local(BENCH).node_parameters()
    for node in ("GlueBenchmark", "RaceBenchmark", "BenchmarkReport", "Blesser", "Pusher", "GlueDataImporter"):
        assert params[node] == whole[node], node
    # A changed model folder is a changed ModelImport parameter (never served from the cache).
    with open(os.path.join(albert_folder, "spm.model"), "ab") as f:
        f.write(b"\0")
    try:
        changed = local(_sets(albert_folder))
        assert changed.node_parameters()["ModelImport"]["digest"] != digest
    finally:
        shutil.copy(os.path.join(os.path.dirname(__file__), "..", "data", "sample", "vocab", "30k-clean.model"),
                    os.path.join(albert_folder, "spm.model"))


def test_from_a_pushed_version_it_takes_the_checkpoint_folder_and_the_savedmodel_at_the_top(albert_folder, tmp_path):
    from trainer import base_model

    version = tmp_path / "releases" / "3"
    shutil.copytree(albert_folder, version / "checkpoint")
    for name in ("saved_model.pb", "variables/variables.index", "huggingface/config.json", "vocab/spm.model",
                 "model_card.md"):
        (version / name).parent.mkdir(parents=True, exist_ok=True)
        (version / name).write_text(name)
    (version / "release.json").write_text(json.dumps({"version": 3}))
    base = base_model.describe(str(version))
    files = base_model.model_files(base)
    assert files["albert"] == {rel: str(version / "checkpoint" / rel) for rel in base_model.model_files(
        base_model.describe(albert_folder))["albert"]}
    assert files["serving"] == {"saved_model.pb": str(version / "saved_model.pb"),
                                "variables/variables.index": str(version / "variables" / "variables.index")}
    record = base_model.source_record(base, "ab" * 32, serving=True)
    assert base_model.source_text(record) == (f"version 3 at {version} (pretraining steps not recorded; files sha256 "
                                              "abababababab…)")


@pytest.mark.parametrize("sets, message", [
    (["mode=benchmark"], "config mode='benchmark' is invalid: expected pretrain unless train.init_from names the "
                         "model to benchmark"),
    (["mode=benchmarks"], "config mode='benchmarks' is invalid: expected pretrain|benchmark"),
    (["mode=benchmark", "train.init_from=latest_blessed"], "config train.init_from='latest_blessed' is invalid: "
                                                            "expected a model folder with mode=benchmark"),
])
def test_a_benchmark_only_run_without_a_model_ends_with_one_line_before_any_node_runs(cli, tmp_path, sets, message):
    argv = ["run", "--preset", "sample", "--output-dir", str(tmp_path / "out")]
    for override in sets:
        argv += ["--set", override]
    result = cli(*argv)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and message in result.stderr, result.stderr
    assert not (tmp_path / "out").exists()


def test_a_benchmark_only_run_on_a_folder_that_is_no_model_names_it(cli, tmp_path):
    (tmp_path / "empty").mkdir()
    result = cli(*_argv("run", tmp_path / "empty", "--output-dir", str(tmp_path / "out")))
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and f"train.init_from={tmp_path / 'empty'} is not a model folder" \
        in result.stderr, result.stderr


def test_a_benchmark_only_spec_whose_model_the_cloud_cannot_read_is_refused(albert_folder, tmp_path):
    from pipeline.cloud import submit as cloud
    from pipeline.settings.configs import build_config
    from pipeline.cloud.kubeflow_v2_runner import compile_pipeline
    from pipeline.settings.resolve import resolve_config

    config = resolve_config(build_config("sample", pipeline_root="gs://b/root", overrides=_sets(albert_folder)),
                            local=False)
    path = compile_pipeline(config, str(tmp_path / "spec.json"), image="gcr.io/p/albert:1")
    data = {"glue_dir": "gs://b/data/glue", "race_dir": "gs://b/data/race"}
    with pytest.raises(cloud.CloudConfigError) as caught:
        cloud.check_spec_paths(path, "Vertex AI", data)
    assert str(caught.value) == (f"{path} cannot run on Vertex AI (paths must be gs://): train.init_from={albert_folder}; "
                                 "fix: recompile with --set train.init_from=gs://BUCKET/PATH")


def _hf_converted(root):
    """A Hugging Face ALBERT saved with ``save_pretrained`` (small, random), then ``convert hf-to-albert``."""
    torch, transformers = hf_peer()
    from pipeline.cli import run_cli
    from pipeline.settings.configs import SAMPLE_DATA

    torch.manual_seed(0)
    config = transformers.AlbertConfig(vocab_size=30000, embedding_size=32, hidden_size=64, num_hidden_layers=2,
                                       num_attention_heads=2, intermediate_size=128, hidden_act="gelu_new",
                                       max_position_embeddings=512)
    hf = root / "hf"
    transformers.AlbertForPreTraining(config).eval().save_pretrained(str(hf), safe_serialization=True)
    shutil.copy(os.path.join(SAMPLE_DATA, "vocab", "30k-clean.model"), hf / "spiece.model")
    converted = root / "albert"
    assert run_cli(["convert", "hf-to-albert", str(hf), str(converted)]) == 0
    return str(converted)


@pytest.mark.slow
def test_a_benchmark_only_run_scores_every_task_and_pushes_a_version_naming_its_source(cli, tmp_path):
    from pipeline.rehearsal import rehearsal
    from tests.test_change_impact import _last_run

    model_dir = _hf_converted(tmp_path)
    out = tmp_path / "out"
    result = cli(*_argv("run", model_dir, "--output-dir", str(out)))
    assert result.returncode == 0, result.stderr

    # The local run: exactly the benchmark-only nodes executed, nothing of pretraining.
    states, _ = _last_run(str(out / "metadata.sqlite"))
    assert set(states) == RUN_NODES - {"LatestBlessedModel"}
    assert set(states.values()) == {"EXECUTED"}
    root = out / "pipeline_root"
    assert not PRETRAINING_NODES & {p.name for p in root.iterdir()}
    (report_dir,) = (root / "BenchmarkReport" / "report").iterdir()
    with open(report_dir / "results.json") as f:
        results = json.load(f)
    scores = {task: m["score"] for r in results["results"].values() for task, m in r["tasks"].items()}
    assert set(scores) == {"RTE"} and all(isinstance(v, float) for v in scores.values()), scores
    source = results["summary"]["model_source"]
    assert (source["location"], source["conversion"], source["converted_from"], source["version"],
            source["serving_model"]) == (model_dir, "hf-to-albert", str(tmp_path / "hf"), None, True)
    report_md = (report_dir / "report.md").read_text()
    assert f"Model source: {model_dir} (pretraining steps not recorded; `hf-to-albert` of {tmp_path / 'hf'}; " \
           f"files sha256 {source['digest'][:12]}…)" in report_md

    # The push: version 1, its card names the source, its files are the converted model's.
    version = root / "releases" / "1"
    with open(version / "model_card.json") as f:
        card = json.load(f)
    assert card["source"] == source
    assert card["benchmarks"]["scores"] == scores
    card_md = (version / "model_card.md").read_text()
    assert f"benchmarked by the `albert-tfx-sample` pipeline (version 1; source: {model_dir} (pretraining steps not " \
           f"recorded; `hf-to-albert` of {tmp_path / 'hf'}; files sha256 {source['digest'][:12]}…))" in card_md
    assert (version / "saved_model.pb").is_file() and (version / "huggingface" / "model.safetensors").is_file()
    assert (version / "checkpoint" / "spm.model").read_bytes() == (tmp_path / "hf" / "spiece.model").read_bytes()
    assert not (version / "checkpoint" / "serving").exists()
    with open(version / "release.json") as f:
        assert set(json.load(f)["artifacts"]) == {"model", "report", "blessing"}

    assert f"Release: BLESSED: no criteria; version 1: {version}" in result.stderr

    # `plan`: as in the whole DAG, a rerun decides once more (the baseline moved to this model) and nothing else
    # runs; a changed model folder reruns ModelImport and all that follows.
    from pipeline.settings.configs import build_config
    from pipeline.local.plan import plan
    from pipeline.settings.resolve import resolve_config

    config = resolve_config(build_config("sample", overrides=_sets(model_dir, *RUN), output_dir=str(out)), local=True)
    assert {r.node for r in plan(config) if r.status == "WILL RUN"} == {"Blesser", "Pusher"}
    with open(os.path.join(model_dir, "export_info.json"), "a") as f:
        f.write("\n")
    config = resolve_config(build_config("sample", overrides=_sets(model_dir, *RUN), output_dir=str(out)), local=True)
    assert {r.node for r in plan(config) if r.status == "WILL RUN"} == RUN_NODES - {
        "GlueDataImporter", "LatestBlessedModel"}

    # The compiled spec holds the same nodes, and its rehearsal runs them.
    spec_path = str(tmp_path / "spec.json")
    compiled = cli(*_argv("compile", model_dir, "--output", spec_path, "--image", "img:1", "--pipeline-root",
                          str(tmp_path / "compiled_root")))
    assert compiled.returncode == 0, compiled.stderr
    with open(spec_path) as f:
        tasks = set(json.load(f)["pipelineSpec"]["root"]["dag"]["tasks"])
    assert tasks == RUN_TASKS
    rehearsed = rehearsal.rehearse(spec_path, str(tmp_path / "rehearsal"), log=lambda line: None)
    assert set(rehearsed["tasks"]) == RUN_TASKS
    with open(tmp_path / "rehearsal" / "pipeline_root" / "releases" / "1" / "model_card.json") as f:
        assert json.load(f)["source"] == {**source, "digest": config.model_digest}


@pytest.mark.slow
def test_an_encoder_only_model_is_benchmarked_and_pushed_without_a_serving_model(cli, tmp_path):
    """A folder ``convert`` writes for an encoder-only source (a bare ``AlbertModel``: no pretraining heads, so no
    serving SavedModel): every task scored, a version pushed whose card says it has no SavedModel."""
    import tf_keras

    from pipeline.settings.configs import SAMPLE_DATA
    from trainer.convert import write_albert_dir
    from trainer.modeling_albert import AlbertConfig, AlbertModel

    tf_keras.utils.set_random_seed(5)
    encoder = AlbertModel(AlbertConfig.named("albert-tiny", vocab_size=30000))
    encoder(encoder.dummy_inputs(1, 4))
    model_dir = str(tmp_path / "albert")
    write_albert_dir(encoder, model_dir, os.path.join(SAMPLE_DATA, "vocab", "30k-clean.model"))
    out = tmp_path / "out"
    result = cli(*_argv("run", model_dir, "--output-dir", str(out), raw_text=True))
    assert result.returncode == 0, result.stderr
    version = out / "pipeline_root" / "releases" / "1"
    with open(version / "model_card.json") as f:
        card = json.load(f)
    assert set(card["benchmarks"]["scores"]) == {"RTE"}
    assert (card["source"]["encoder_only"], card["source"]["serving_model"]) == (True, False)
    # Raw text in all the same: TF Hub's pair, and text_model/ with embed alone (no MLM head to fill a mask with)
    import tensorflow as tf

    assert (version / "preprocess" / "saved_model.pb").exists() and (version / "encoder" / "saved_model.pb").exists()
    assert sorted(tf.saved_model.load(str(version / "text_model")).signatures) == ["embed"]
    assert "No serving SavedModel: the model holds only the encoder (no pretraining heads), so this version has no " \
           "saved_model.pb." in card["limitations"]
    assert not (version / "saved_model.pb").exists()
    assert "Files: `checkpoint/`" in (version / "model_card.md").read_text()
    with open(version / "huggingface" / "config.json") as f:
        assert json.load(f)["architectures"] == ["AlbertModel"]
