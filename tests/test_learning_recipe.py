"""The ``small`` preset and the input preparation of ``experiments.learning_recipe`` (no pipeline run)."""
import importlib
import json
import os

import pytest

from components.evaluation.benchmark_config import BASELINES
from pipeline.settings.configs import SAMPLE_DATA, build_config

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _recipe():
    return importlib.import_module("experiments.learning_recipe")


def test_small_preset_is_the_stated_recipe():
    cfg = build_config("small")
    enc = cfg.model.encoder_fields(cfg.vocab.vocab_size)
    assert (enc["hidden_size"], enc["num_hidden_layers"], enc["embedding_size"], enc["sharing"]) == (256, 4, 128, "all")
    assert cfg.datagen.max_seq_length == 128 and cfg.vocab.import_model is None  # a trained vocabulary
    assert cfg.benchmarks.seeds == 3 and cfg.benchmarks.baselines == ["random_init"] == list(BASELINES)
    assert set(cfg.benchmarks.glue_tasks) == {"CoLA", "SST-2", "MRPC", "RTE", "STS-B"}
    params = cfg.node_parameters()
    for node in ("GlueBenchmark", "SquadBenchmark", "RaceBenchmark"):
        assert params[node]["config"]["baselines"] == ["random_init"] and params[node]["seeds"] == 3
    assert all(hp.max_seq_length <= 128 for hp in cfg.benchmarks.hparams.values())


def test_squad_and_race_cuts_are_seeded_and_disjoint(tmp_path):
    recipe = _recipe()
    dev = os.path.join(SAMPLE_DATA, "squad", "dev-v1.1-sample.json")
    counts = recipe.cut_squad(dev, str(tmp_path / "a"), seed=7)
    recipe.cut_squad(dev, str(tmp_path / "b"), seed=7)
    for name in ("train-v1.1-cut.json", "dev-v1.1-cut.json"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()  # same seed, same cut

    def titles(name):
        return {a["title"] for a in json.loads((tmp_path / "a" / name).read_text(encoding="utf-8"))["data"]}

    train, dev_titles = titles("train-v1.1-cut.json"), titles("dev-v1.1-cut.json")
    with open(dev, encoding="utf-8") as f:
        everything = {a["title"] for a in json.load(f)["data"]}
    assert train.isdisjoint(dev_titles) and train | dev_titles == everything and dev_titles
    assert counts["dev-v1.1-cut.json"]["articles"] == max(1, round(0.2 * len(everything)))

    race = recipe.cut_race(os.path.join(SAMPLE_DATA, "race", "dev"), str(tmp_path / "race"), seed=7)
    for level in ("middle", "high"):
        tr = set(os.listdir(tmp_path / "race" / "train" / level))
        dv = set(os.listdir(tmp_path / "race" / "dev" / level))
        assert tr.isdisjoint(dv) and tr | dv == set(os.listdir(os.path.join(SAMPLE_DATA, "race", "dev", level)))
        assert race[f"dev/{level}"] == len(dv) >= 1


def test_the_large_corpus_is_linked_file_by_file_with_globs_that_read_it(tmp_path):
    """``--corpus large``: WikiExtractor folders AA/, AB/ hold the same ``wiki_NN`` names; each file gets its own
    link, and the globs take both the dumps and the WikiExtractor files, plain and compressed books."""
    recipe = _recipe()
    data = tmp_path / "data"
    for sub in ("AA", "AB"):
        (data / "large" / "wikipedia" / sub).mkdir(parents=True)
        (data / "large" / "wikipedia" / sub / "wiki_00.bz2").write_bytes(b"BZh9")
    (data / "large" / "books").mkdir(parents=True)
    (data / "large" / "books" / "pg1_a.txt.gz").write_bytes(b"\x1f\x8b")
    facts = recipe.prepare_inputs(str(tmp_path / "work"), str(data), seed=7, corpus="large")
    wiki = sorted(os.listdir(tmp_path / "work" / "corpus" / "wikipedia"))
    assert [n for n in wiki if n.startswith("large-")] == ["large-AA-wiki_00.bz2", "large-AB-wiki_00.bz2"]
    assert "large-pg1_a.txt.gz" in os.listdir(tmp_path / "work" / "corpus" / "books")
    assert {"corpus.wikipedia_glob=*", "corpus.books_glob=**/*.txt*"} <= set(facts["overrides"])
    assert facts["corpus"] == "large"
    with pytest.raises(SystemExit, match="large does not exist"):
        recipe.prepare_inputs(str(tmp_path / "w2"), str(tmp_path), seed=7, corpus="large")


def test_write_up_tables(tmp_path):
    """recipe.md: node times, the gain row with signed paired gains, and the SOP/NSP row, from a recipe record."""
    recipe = _recipe()
    spread = {"median": 7.8, "min": 6.4, "max": 8.4}
    record = {
        "quick": False, "command": ".venv/bin/python -m experiments.learning_recipe", "cpu_count": 2,
        "seconds": {"total": 100.0, "sop_pipeline": 60.0, "nsp_pipeline": 30.0, "sentence_eval": 10.0},
        "node_seconds": {"sop": {"Trainer": {"state": "COMPLETE", "seconds": 42.4},
                                 "CorpusGen": {"state": "CACHED", "seconds": 0.1}}},
        "gains": {"STS-B": {"pretrained": spread, "baseline": {"median": 5.3, "min": 4.8, "max": 5.9},
                            "gain_median": 2.5, "gain_paired": {"median": 2.5, "min": -1.6, "max": 2.5},
                            "beyond_spread": True},
                  "MRPC": {"pretrained": {"median": 74.8, "min": 73.9, "max": 76.0, "n": 3},
                           "baseline": {"median": 74.8, "min": 74.8, "max": 74.8, "n": 3}, "gain_median": 0.0,
                           "gain_paired": {"median": 0.0, "min": -0.9, "max": 1.2}, "beyond_spread": False,
                           "majority_baseline": 74.80253, "single_class_runs": {"pretrained": 2, "baseline": 3}}},
        "sop_nsp": {"instances": [2098], "sop": {"on_sop": {"sentence_accuracy": 55.2, "mlm_accuracy": 14.6,
                                                            "label_1_share": 50.6},
                                                 "on_nsp": {"sentence_accuracy": 61.0, "mlm_accuracy": 14.1,
                                                            "label_1_share": 50.0}}},
        "report_md": str(tmp_path / "pipeline_root" / "report.md"),
    }
    text = recipe.write_up(str(tmp_path), record)
    assert (tmp_path / "recipe.md").read_text(encoding="utf-8") == text
    assert "SOP pipeline nodes: Trainer 42 s, CorpusGen 0 s (cached)." in text
    assert "| STS-B | 7.8 [6.4 – 8.4] | 5.3 [4.8 – 5.9] | +2.5 | +2.5 [-1.6 – +2.5] | yes | — | — |" in text
    assert ("| MRPC | 74.8 [73.9 – 76.0] | 74.8 [74.8 – 74.8] | +0.0 | +0.0 [-0.9 – +1.2] | no | 74.8 | 2 / 3 of 3 |"
            in text)
    assert "| SOP | 55.2 | 61.0 | 14.6 | 14.1 |" in text and "| NSP | — | — | — | — |" in text
    assert "Report: `pipeline_root/report.md`" in text  # relative to the output folder: no machine paths
    data = os.path.join(os.getcwd(), "data_here")
    assert (recipe.command_line(["--output", "o"], data) ==
            "ALBERT_TFX_DATA_DIR=data_here .venv/bin/python -m experiments.learning_recipe --output o")
    assert recipe.command_line(["--data-dir", data], data).startswith(".venv/bin/python -m experiments.learning_recipe")


def test_finetune_budget_scales_the_preset_steps_and_tabulates():
    budget = importlib.import_module("experiments.finetune_budget")
    base = build_config("small")
    over = budget.scaled_overrides(base, ["RTE", "SST-2"], 3)
    cfg = build_config("small", overrides=over)
    assert cfg.benchmarks.glue_tasks == ["RTE", "SST-2"]
    for task in ("RTE", "SST-2"):
        hp, hp0 = cfg.benchmarks.hparams[task], base.benchmarks.hparams[task]
        assert (hp.train_steps, hp.warmup_steps) == (3 * hp0.train_steps, 3 * hp0.warmup_steps)
        assert (hp.learning_rate, hp.batch_size, hp.max_seq_length) == (hp0.learning_rate, hp0.batch_size,
                                                                         hp0.max_seq_length)
    assert cfg.benchmarks.hparams["MRPC"] == base.benchmarks.hparams["MRPC"]  # other tasks untouched
    row = {"task": "RTE", "scale": 3.0, "steps": 240, "seconds": 612.4, "gain": {
        "pretrained": {"median": 55.2, "min": 53.1, "max": 56.0}, "baseline": {"median": 52.7, "min": 47.3, "max": 53.1},
        "gain_paired": {"median": 2.5, "min": -0.4, "max": 5.8}, "beyond_spread": False, "majority_baseline": 47.29,
        "single_class_runs": {"pretrained": 0, "baseline": 1}}}
    assert ("| RTE | 3 | 240 | 55.2 [53.1 – 56.0] | 52.7 [47.3 – 53.1] | +2.5 [-0.4 – +5.8] | no | 47.3 | 0 / 1 | 612 |"
            in budget.table([row]))
    # A row's seconds are both arms' (the runner times each arm separately); a task without a gain has no row.
    result = {"gain_over_baseline": {"random_init": {"RTE": row["gain"]}}, "seconds": {"RTE": 300.5, "total": 301.0},
              "baselines": {"random_init": {"seconds": {"RTE": 311.9, "total": 312.0}}}}
    made = budget.budget_row(result, "RTE", 3.0, 240)
    assert made["seconds"] == 612.4 and made["gain"] is row["gain"] and made["steps"] == 240
    assert budget.budget_row(result, "SST-2", 3.0, 450) is None


def test_benchmark_scripts_refuse_a_missing_folder_with_exit_2_and_write_nothing(tmp_path):
    """A mistyped data or model folder is a usage error: exit 2, one line naming it, no traceback, no output."""
    import subprocess
    import sys

    missing = str(tmp_path / "no-such-folder")
    cases = [("experiments.learning_recipe", ["--data-dir", missing, "--output", str(tmp_path / "recipe")], "recipe"),
             ("experiments.finetune_budget", ["--model", missing, "--glue-dir", str(tmp_path), "--output",
                                              str(tmp_path / "budget")], "budget"),
             ("experiments.finetune_budget", ["--model", str(tmp_path), "--glue-dir", missing], None),
             ("benchmarks.multi_worker", ["--examples", missing, "--output", str(tmp_path / "mw")], "mw")]
    (tmp_path / "albert").mkdir()  # the third case's --model is a valid artifact folder
    for script, args, out in cases:
        proc = subprocess.run([sys.executable, "-m", script] + args, capture_output=True, text=True, cwd=ROOT,
                              timeout=120)
        assert proc.returncode == 2, (script, proc.stderr)
        assert missing in proc.stderr and "Traceback" not in proc.stderr
        assert out is None or not (tmp_path / out).exists()
