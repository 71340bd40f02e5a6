"""Each node's parameters are exactly the settings that determine its output (issue 13), and the layering
that lets components and the Trainer read them: ``config`` is importable without ``pipeline``."""
import json
import os
import re
import subprocess
import sys

import pytest

from config import ConfigError, ModelConfig, TrainConfig
from pipeline.configs import apply_overrides, build_config

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _changed_nodes(override):
    base = build_config("sample").node_parameters()
    new = build_config("sample", overrides=[override]).node_parameters()
    return {node for node in base if base[node] != new.get(node)}


@pytest.mark.parametrize("override,nodes", [
    ("benchmarks.hparams.RTE.learning_rate=0.001", {"GlueBenchmark"}),
    ("benchmarks.hparams.RACE.train_steps=7", {"RaceBenchmark"}),
    ("benchmarks.hparams.SQuAD1.1.batch_size=4", {"SquadBenchmark"}),
    ("benchmarks.doc_stride=32", {"SquadBenchmark"}),
    ("benchmarks.tfma=false", {"GlueBenchmark"}),
    ("benchmarks.seeds=3", {"GlueBenchmark", "SquadBenchmark", "RaceBenchmark"}),
    ("benchmarks.seed=99", {"GlueBenchmark", "SquadBenchmark", "RaceBenchmark"}),
    ("report.title=x", {"BenchmarkReport"}),
    ("train.num_train_steps=400", {"Trainer"}),
    ("model.size=albert-base", {"Trainer"}),
    ("datagen.dupe_factor=3", {"PretrainingDataGen"}),
    ("vocab.vocab_size=2000", {"VocabGen"}),
    ("corpus.min_doc_chars=10", {"CorpusGen"}),
    ("seed=1", {"VocabGen", "PretrainingDataGen", "Trainer", "GlueBenchmark", "SquadBenchmark", "RaceBenchmark"}),
    # Orchestration settings and input folders are nobody's parameter (folders enter as Importer artifacts).
    ("pipeline_root=/elsewhere", set()),
    ("beam_args=--direct_num_workers=2", set()),
    ("corpus.books_dir=/other/books", set()),
    ("benchmarks.glue_dir=/other/glue", set()),
])
def test_a_setting_reaches_only_the_nodes_it_determines(override, nodes):
    assert _changed_nodes(override) == nodes


def test_upstream_facts_are_not_copied_into_downstream_parameters():
    params = build_config("sample").node_parameters()
    assert "do_lower_case" not in json.dumps(params["PretrainingDataGen"])  # from the vocab artifact
    trainer = json.dumps(params["Trainer"])
    assert "max_seq_length" not in trainer and "vocab_size" not in trainer  # from the examples artifact
    assert set(params["GlueBenchmark"]["settings"]["hparams"]) == {"CoLA", "SST-2", "MRPC", "RTE"}
    assert set(params["RaceBenchmark"]["settings"]["hparams"]) == {"RACE"}


def test_squad_both_versions_are_two_nodes_with_their_own_files():
    cfg = build_config("sample", overrides=["benchmarks.squad_v2_dir=/x/squad2"])
    nodes = cfg.benchmarks.nodes()
    assert nodes["squad"].endswith("data/sample/squad") and nodes["squad2"] == "/x/squad2"
    v1 = cfg.node_parameters()["SquadBenchmark"]["settings"]
    v2 = cfg.node_parameters()["Squad2Benchmark"]["settings"]
    assert (v1["squad_version"], list(v1["hparams"])) == ("1.1", ["SQuAD1.1"])
    assert (v2["squad_version"], list(v2["hparams"]), v2["squad_dev_file"]) == ("2.0", ["SQuAD2.0"], "dev-v2.0.json")


def test_sharing_none_is_a_value_not_null():
    cfg = apply_overrides(build_config("sample"), ["model.sharing=none"])
    assert cfg.model.sharing == "none"
    assert cfg.validate().model.albert_config(100).sharing == "none"
    assert apply_overrides(cfg, ["model.sharing=null"]).model.sharing is None
    assert apply_overrides(cfg, ["vocab.import_model=none"]).vocab.import_model is None


@pytest.mark.parametrize("override,needle", [
    ("model.size=albert-huge", "albert-huge"),
    ("model.sharing=some", "model.sharing"),
    ("model.hidden_size=101", "divisible"),
    ("model.dropout=1.5", "model.dropout"),
    ("train.learning_rate=0", "train.learning_rate"),
    ("benchmarks.hparams.RTE.max_seq_length=4096", "benchmarks.hparams.RTE.max_seq_length"),
    ("datagen.max_predictions_per_seq=0", "datagen.max_predictions_per_seq"),
    ("corpus.book_encoding_fallback=klingon", "corpus.book_encoding_fallback"),
])
def test_every_section_is_validated_before_anything_runs(override, needle):
    with pytest.raises(ConfigError, match=needle):
        build_config("sample", overrides=[override])


def test_train_identity_leaves_out_only_schedule_and_cadence():
    t = TrainConfig()
    ident = t.identity()
    assert "num_train_steps" not in ident and "log_every" not in ident and "checkpoint_every" not in ident
    assert {"learning_rate", "optimizer", "train_batch_size", "grad_accum_steps", "num_warmup_steps",
            "mixed_precision", "shuffle_buffer"} <= set(ident)
    assert ModelConfig.from_json(ModelConfig(size="albert-tiny").to_json()) == ModelConfig(size="albert-tiny")


def test_components_and_trainer_never_import_pipeline():
    """Importing every component and trainer module pulls in no ``pipeline`` module."""
    modules = ["config", "components.tfx_components", "components.evaluation.runner", "components.report_lib",
               "components.datagen_tool", "trainer.task", "trainer.train_lib"]
    code = ("import sys, importlib, json\n"
            f"for m in {modules!r}: importlib.import_module(m)\n"
            "print(json.dumps(sorted(m for m in sys.modules if m == 'pipeline' or m.startswith('pipeline.'))))")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []
    for folder in ("components", "trainer", "config"):
        for dirpath, _, files in os.walk(os.path.join(ROOT, folder)):
            for name in files:
                if name.endswith(".py"):
                    text = open(os.path.join(dirpath, name), encoding="utf-8").read()
                    assert not re.search(r"^\s*(from pipeline[ .]|import pipeline)", text, re.M), name


def test_paper_presets_match_the_rows_they_are_compared_with():
    from config import PAPER_FINETUNE, RELEASE_V2_RACE

    corpus = ["corpus.books_dir=/books"]
    v1, v2, paper = (build_config(p, overrides=corpus) for p in ("paper-v1", "paper-v2", "paper"))
    enc1, enc2 = v1.model.albert_config(30000), v2.model.albert_config(30000)
    assert (enc1.hidden_dropout_prob, enc1.attention_probs_dropout_prob) == (0.1, 0.1)  # Table 2 is the v1 model
    assert (enc2.hidden_dropout_prob, enc2.attention_probs_dropout_prob) == (0.0, 0.0)
    assert paper.model == v1.model and paper.benchmarks == v1.benchmarks and paper.report == v1.report
    assert v1.benchmarks.hparams["RACE"] == PAPER_FINETUNE["RACE"]
    assert (PAPER_FINETUNE["RACE"].learning_rate, PAPER_FINETUNE["RACE"].albert_dropout) == (2e-5, 0.1)  # Table 14
    assert v2.benchmarks.hparams["RACE"] == RELEASE_V2_RACE
    assert (RELEASE_V2_RACE.learning_rate, RELEASE_V2_RACE.albert_dropout) == (1e-5, 0.0)  # release README
    assert (v1.report.reference, v2.report.reference) == ("albert-base-v1", "albert-base-v2")
    assert v1.benchmarks.eval_every == 1000 and v1.benchmarks.checkpoint_selection == "best"


def test_paper_preset_dag_has_both_squad_nodes(tmp_path):
    """With SQuAD 1.1 and 2.0 data given, the compiled paper DAG scores both (all five Table 2 columns)."""
    from pipeline.kubeflow_v2_runner import compile_pipeline, spec_summary

    for name in ("wiki", "squad1", "squad2", "race", "glue"):
        (tmp_path / name).mkdir()
    cfg = build_config("paper-v2", overrides=[
        f"corpus.wikipedia_dir={tmp_path / 'wiki'}", f"benchmarks.squad_dir={tmp_path / 'squad1'}",
        f"benchmarks.squad_v2_dir={tmp_path / 'squad2'}", f"benchmarks.race_dir={tmp_path / 'race'}",
        f"benchmarks.glue_dir={tmp_path / 'glue'}", "datagen.eval_source=benchmark_dev"])
    summary = spec_summary(compile_pipeline(cfg, str(tmp_path / "spec.json"), image="img"))
    tasks = summary["tasks"]
    assert {"SquadBenchmark", "Squad2Benchmark", "RaceBenchmark", "GlueBenchmark"} <= set(tasks)
    assert set(tasks["BenchmarkReport"]) >= {"SquadBenchmark", "Squad2Benchmark", "RaceBenchmark", "GlueBenchmark"}
    # The paper's pretraining dev set: datagen reads the SQuAD and RACE dev articles.
    assert {"SquadDataImporter", "RaceDataImporter"} <= set(tasks["PretrainingDataGen"])
    assert "squad_v2_dir" in summary["parameters"]
    params = cfg.node_parameters()
    assert params["Squad2Benchmark"]["settings"]["hparams"]["SQuAD2.0"]["max_seq_length"] == 512
    assert params["SquadBenchmark"]["settings"]["hparams"]["SQuAD1.1"]["max_seq_length"] == 384


def test_benchmark_dev_eval_source_needs_benchmark_data():
    with pytest.raises(ConfigError, match="datagen.eval_source"):
        build_config("sample", overrides=["datagen.eval_source=benchmark_dev", "benchmarks.squad_dir=null",
                                          "benchmarks.race_dir=null"])


def test_plan_names_changed_settings_by_their_config_keys():
    """plan's reasons translate node parameters back to the keys users pass to --set."""
    from pipeline.plan import _param_diff
    from trainer.task import trainer_settings

    base = build_config("sample")
    lr = build_config("sample", overrides=["train.learning_rate=0.01", "model.sharing=none"])

    def trainer_params(cfg):
        return {"custom_config": json.dumps({"albert": trainer_settings(cfg.model, cfg.train, cfg.seed),
                                             "checkpoint_root": "/r"}), "num_train_steps": cfg.train.num_train_steps}

    reasons = _param_diff("Trainer", trainer_params(base), trainer_params(lr))
    assert reasons == ["setting model.sharing: None → 'none'", "setting train.learning_rate: 0.005 → 0.01"]
    glue = _param_diff("GlueBenchmark", {"config": build_config("sample").node_json("GlueBenchmark", "settings"),
                                         "seeds": 1},
                       {"config": build_config("sample", overrides=["benchmarks.tfma=false"]).node_json(
                           "GlueBenchmark", "settings"), "seeds": 3})
    assert glue == ["setting benchmarks.tfma: True → False", "setting benchmarks.seeds: 1 → 3"]
    assert _param_diff("VocabGen", {"seed": 1}, {"seed": 2}) == ["setting seed: 1 → 2"]
