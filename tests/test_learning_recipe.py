"""The ``small`` preset and the input preparation of ``benchmarks/learning_recipe.py`` (no pipeline run)."""
import importlib.util
import json
import os

from config import BASELINES
from pipeline.configs import SAMPLE_DATA, build_config

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _recipe():
    spec = importlib.util.spec_from_file_location("learning_recipe", os.path.join(ROOT, "benchmarks", "learning_recipe.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_small_preset_is_the_stated_recipe():
    cfg = build_config("small")
    enc = cfg.model.albert_config(cfg.vocab.vocab_size)
    assert (enc.hidden_size, enc.num_hidden_layers, enc.embedding_size, enc.sharing) == (256, 4, 128, "all")
    assert cfg.datagen.max_seq_length == 128 and cfg.vocab.import_model is None  # a trained vocabulary
    assert cfg.benchmarks.seeds == 3 and cfg.benchmarks.baselines == ["random_init"] == list(BASELINES)
    assert set(cfg.benchmarks.glue_tasks) == {"CoLA", "SST-2", "MRPC", "RTE", "STS-B"}
    params = cfg.node_parameters()
    for node in ("GlueBenchmark", "SquadBenchmark", "RaceBenchmark"):
        assert params[node]["settings"]["baselines"] == ["random_init"] and params[node]["seeds"] == 3
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
