"""components/evaluation/run_benchmark.py: fine-tune a tiny random ALBERT on the bundled benchmark samples.

The encoder is exported the way ``trainer.export.export`` does (official-key config json,
``tf.train.Checkpoint(encoder=model.albert)``, the SentencePiece model). Scores on random weights
mean nothing; the tests check the structure, ranges, agreement with the prediction files written
(re-scored with ``components.evaluation.score``) and, on a synthetic task, that the loop learns.
"""
import json
import math
import os
import random

import pytest

from tests.conftest import export_untrained_albert, squad_v2_from_v1, tiny_benchmark_config

import components  # noqa: F401  (TF_USE_LEGACY_KERAS before TF)

tf = pytest.importorskip("tensorflow")

from components.evaluation.glue import glue_data as glue_lib  # noqa: E402
from components.evaluation import score as score_lib  # noqa: E402
from components.evaluation.run_benchmark import run_benchmark  # noqa: E402
from pipeline.settings.configs import SAMPLE_DATA, FinetuneHParams  # noqa: E402


pytestmark = [pytest.mark.slow, pytest.mark.longest_first(6)]


@pytest.fixture(scope="module")
def albert_dir(tmp_path_factory):
    return export_untrained_albert(str(tmp_path_factory.mktemp("albert")), seed=0)


def _cfg(steps=8, batch=8, seq=64, **bench):
    return tiny_benchmark_config(steps, batch, seq, **bench)


def _in_range(value, lo=0.0, hi=100.0):
    return value is not None and lo <= value <= hi


def _check_common(result, out_dir, benchmark, sizes):
    """``sizes``: {task: (train examples, dev examples evaluated)}, exactly."""
    with open(os.path.join(out_dir, "metrics.json"), encoding="utf-8") as f:
        on_disk = json.load(f)
    assert on_disk == result
    assert result["benchmark"] == benchmark
    p = result["protocol"]
    for key in ("seeds", "checkpoint_selection", "hparams", "pretrained", "max_eval_examples", "optimizer"):
        assert key in p
    assert p["pretrained"]["encoder_checkpoint"].endswith(os.path.join("encoder", "ckpt"))
    assert {name: (task["num_train"], task["num_dev"]) for name, task in result["tasks"].items()} == sizes
    for task in result["tasks"].values():
        # The reported score is the median run's, exactly (each test re-scores it from the predictions file).
        assert task["score"] == task["run_scores"][task["median_run"]]


def test_glue_structure_seeds_and_skip(albert_dir, tmp_path):
    cfg = _cfg(steps=6, seeds=3, glue_tasks=["CoLA", "QQP"])
    out = str(tmp_path / "glue")
    result = run_benchmark("glue", albert_dir, cfg.benchmarks.glue_dir, cfg, out)
    _check_common(result, out, "glue", {"CoLA": (200, 100)})
    assert set(result["tasks"]) == {"CoLA"}
    assert "QQP" in result["skipped"]
    cola = result["tasks"]["CoLA"]
    assert cola["num_train"] == 200 and cola["num_dev"] == 100
    assert _in_range(cola["accuracy"]) and _in_range(cola["mcc"], -100, 100)
    assert cola["score"] == cola["mcc"]
    # Median of 3 seeds: the reported run is the middle one.
    assert result["protocol"]["seeds"] == [cfg.seed, cfg.seed + 1, cfg.seed + 2]
    assert len(result["runs"]["CoLA"]) == 3
    assert cola["score"] == sorted(cola["run_scores"])[1] == cola["score_median"]
    # The dev predictions file re-scores to the reported numbers.
    rescored = score_lib.score("glue", os.path.join(cfg.benchmarks.glue_dir, "CoLA", "dev.tsv"),
                               os.path.join(out, cola["predictions"]), task="CoLA")
    assert math.isclose(100 * rescored["mcc"], cola["mcc"], abs_tol=1e-9)
    assert math.isclose(100 * rescored["accuracy"], cola["accuracy"], abs_tol=1e-9)


def test_squad_v1_structure_and_consistency(albert_dir, tmp_path):
    cfg = _cfg(steps=6, seq=128, max_eval_examples=40)
    out = str(tmp_path / "squad")
    result = run_benchmark("squad", albert_dir, cfg.benchmarks.squad_dir, cfg, out)
    _check_common(result, out, "squad", {"SQuAD1.1": (122, 40)})
    sq = result["tasks"]["SQuAD1.1"]
    assert sq["num_dev"] == 40 and sq["num_train"] == 122
    assert sq["num_dev_features"] >= 40
    assert _in_range(sq["f1"]) and _in_range(sq["exact_match"]) and sq["exact_match"] <= sq["f1"]
    assert math.isclose(sq["score"], (sq["f1"] + sq["exact_match"]) / 2)
    with open(os.path.join(out, sq["predictions"]), encoding="utf-8") as f:
        preds = json.load(f)
    assert len(preds) == 40
    rescored = score_lib.score("squad", os.path.join(out, sq["dev_subset"]), os.path.join(out, sq["predictions"]))
    assert math.isclose(rescored["f1"], sq["f1"]) and math.isclose(rescored["exact_match"], sq["exact_match"])


def test_squad_v2_answerability_head(albert_dir, tmp_path):
    # A v2 file from the v1 sample: every third question becomes unanswerable.
    data = squad_v2_from_v1(os.path.join(SAMPLE_DATA, "squad", "dev-v1.1-sample.json"))
    squad_dir = tmp_path / "squad2"
    squad_dir.mkdir()
    (squad_dir / "train-v2.0.json").write_text(json.dumps(data), encoding="utf-8")
    (squad_dir / "dev-v2.0.json").write_text(json.dumps(data), encoding="utf-8")
    cfg = _cfg(steps=4, seq=128, squad_version="2.0", squad_train_file="train-v2.0.json",
               squad_dev_file="dev-v2.0.json", max_eval_examples=30)
    out = str(tmp_path / "out")
    result = run_benchmark("squad", albert_dir, str(squad_dir), cfg, out)
    questions = sum(len(par["qas"]) for art in data["data"] for par in art["paragraphs"])
    _check_common(result, out, "squad", {"SQuAD2.0": (questions, 30)})
    sq = result["tasks"]["SQuAD2.0"]
    for key in ("f1", "exact_match", "HasAns_f1", "NoAns_f1", "best_f1"):
        assert _in_range(sq[key]), key
    assert sq["selection_metric"] == "f1" and sq["selection_score"] == sq["f1"]
    assert result["protocol"]["squad"]["start_n_top"] == 5 and result["protocol"]["selection_metrics"] == {"SQuAD2.0": "f1"}
    # The null-odds file holds the official values: min over windows of the answerability logit.
    with open(os.path.join(out, sq["na_prob"]), encoding="utf-8") as f:
        null_odds = json.load(f)
    assert len(null_odds) == 30 and all(math.isfinite(v) for v in null_odds.values())
    # Final predictions: answered exactly where null odds < the tuned threshold (official decoder rule), each
    # answer a non-empty span of its question's context.
    with open(os.path.join(out, sq["predictions"]), encoding="utf-8") as f:
        preds = json.load(f)
    assert set(preds) == set(null_odds)
    answered = {q for q, v in null_odds.items() if v < sq["null_threshold"]}
    assert {q for q, p in preds.items() if p != ""} == answered
    contexts = {qa["id"]: par["context"] for art in data["data"] for par in art["paragraphs"] for qa in par["qas"]}
    assert all(preds[q].strip() == preds[q] and preds[q] in contexts[q] for q in answered)
    # The official v2.0 script on these files (na-prob-thresh 1.0) gives the reported exact/f1.
    rescored = score_lib.score("squad2", os.path.join(out, sq["dev_subset"]), os.path.join(out, sq["predictions"]),
                               na_prob_path=os.path.join(out, sq["na_prob"]))
    assert math.isclose(rescored["f1"], sq["f1"]) and math.isclose(rescored["exact"], sq["exact"])


def test_race_structure_and_consistency(albert_dir, tmp_path):
    from collections import Counter

    from components.evaluation.race import race_data as race_lib

    cfg = _cfg(steps=4, batch=4, seq=96)
    out = str(tmp_path / "race")
    result = run_benchmark("race", albert_dir, cfg.benchmarks.race_dir, cfg, out)
    train_ex = race_lib.read_race(cfg.benchmarks.race_dir, split="train")
    dev_ex = race_lib.read_race(cfg.benchmarks.race_dir, split="dev")
    _check_common(result, out, "race", {"RACE": (len(train_ex), len(dev_ex))})
    race = result["tasks"]["RACE"]
    assert race["n_middle"] + race["n_high"] == race["n_all"] == race["num_dev"]
    for key in ("middle", "high", "all"):
        assert _in_range(race[key])
    assert race["score"] == race["all"]
    rescored = score_lib.score("race", os.path.join(cfg.benchmarks.race_dir, "dev"), os.path.join(out, race["predictions"]))
    assert math.isclose(100 * rescored["all"], race["all"])
    assert math.isclose(100 * rescored["middle"], race["middle"])
    # The floor: always the training set's most frequent answer letter, recomputed from the sample files.
    train = Counter(e.label for e in train_ex)
    top = min(k for k, v in train.items() if v == max(train.values()))
    dev = [e.label for e in dev_ex]
    assert race["majority_baseline"] == pytest.approx(100.0 * sum(label == top for label in dev) / len(dev))
    one_class = [r["metrics"]["majority_share"] == 100.0 for r in result["runs"]["RACE"]]
    assert race["single_class_runs"] == sum(one_class)


def _synthetic_glue(root, rng):
    """SST-2-format task: label 1 iff the sentence contains "banana"."""
    words = ("the quick brown fox jumps over a lazy dog while red birds sing in green trees near old houses "
             "and small children play with yellow kites under blue sky").split()
    task_dir = root / "SST-2"
    task_dir.mkdir(parents=True)

    def sentence(positive):
        toks = rng.sample(words, rng.randint(5, 9))
        if positive:
            toks.insert(rng.randint(0, len(toks)), "banana")
        return " ".join(toks)

    for split, n in (("train", 240), ("dev", 80)):
        rows = ["sentence\tlabel"]
        for i in range(n):
            label = i % 2
            rows.append(f"{sentence(label)}\t{label}")
        (task_dir / f"{split}.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    rows = ["index\tsentence"] + [f"{i}\t{sentence(i % 2)}" for i in range(10)]
    (task_dir / "test.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")


def test_classifier_learns_synthetic_task(albert_dir, tmp_path):
    _synthetic_glue(tmp_path / "glue", random.Random(7))
    cfg = _cfg(steps=60, batch=16, seq=24, glue_tasks=["SST-2"], checkpoint_selection="best", eval_every=20,
               export_serving_model=True, tfma=True)
    # lr 5e-4: from random weights this tiny post-LN model does not learn at >= 1e-3 in 60 steps.
    cfg.benchmarks.hparams["SST-2"] = FinetuneHParams(5e-4, 16, 0.0, 0.1, train_steps=60, warmup_steps=6,
                                                      max_seq_length=24)
    out = str(tmp_path / "out")
    result = run_benchmark("glue", albert_dir, str(tmp_path / "glue"), cfg, out)
    sst = result["tasks"]["SST-2"]
    assert sst["accuracy"] >= 90.0, result["runs"]["SST-2"]
    # "best" selection: evaluated at steps 20, 40, 60 and the reported step is the best one.
    history = result["runs"]["SST-2"][0]["history"]
    assert [h["step"] for h in history] == [20, 40, 60]
    best = max(history, key=lambda h: h["score"])
    assert sst["score"] == best["score"] and sst["selected_step"] == best["step"]
    # GLUE submission file for the test split, written with the selected weights.
    preds = glue_lib.read_glue_predictions(os.path.join(out, sst["test_predictions"]))
    assert sorted(preds, key=int) == [str(i) for i in range(10)]
    assert set(preds.values()) <= {"0", "1"}
    assert sum(preds[str(i)] == str(i % 2) for i in range(10)) >= 8
    # The exported raw-text model (Transform graph + selected classifier) predicts, on the raw dev
    # strings, what the in-memory model predicted (the dev predictions file).
    assert sst["serving_model"] == os.path.join("SST-2", "serving_model")
    assert sst["transform_check"]["rows_equal_python_featurisation"] == sst["transform_check"]["rows"] == 80
    assert sst["serving_check"]["max_abs_logit_diff"] < 1e-3 and sst["serving_check"]["same_predictions"] == 80
    dev = glue_lib.read_glue("SST-2", "dev", str(tmp_path / "glue"))
    serve = tf.saved_model.load(os.path.join(out, sst["serving_model"])).signatures["serving_default"]
    served = serve(text_a=tf.constant([e.text_a for e in dev]))["class_ids"].numpy()
    in_memory = glue_lib.read_glue_predictions(os.path.join(out, sst["predictions"]))
    assert [str(int(c)) for c in served] == [in_memory[e.guid.split("-")[-1]] for e in dev]
    # TFMA (run on the exported model) agrees with our accuracy on the same predictions.
    tfma = sst["tfma"]
    assert tfma["mode"] == "model" and tfma["metrics"]["example_count"] == 80
    assert math.isclose(100 * tfma["metrics"]["accuracy"], sst["accuracy"], abs_tol=1e-4)
    for key in ("auc", "f1_score", "matthews_correlation_coefficient"):
        assert key in tfma["metrics"], tfma["metrics"]
    with open(os.path.join(out, "metrics.json"), encoding="utf-8") as f:
        assert json.load(f)["tasks"]["SST-2"]["tfma"] == tfma


def test_glue_mnli_two_dev_sets_and_stsb_regression(albert_dir, tmp_path):
    rng = random.Random(3)
    words = "alpha beta gamma delta epsilon zeta eta theta iota kappa".split()

    def sent():
        return " ".join(rng.sample(words, 4))

    labels = ("contradiction", "entailment", "neutral")
    mnli = tmp_path / "glue" / "MNLI"
    mnli.mkdir(parents=True)
    head = "index\tpromptID\tpairID\tgenre\tb1\tb2\tp1\tp2\tsentence1\tsentence2"
    rows = [head + "\tlabel1\tgold_label"] + [f"{i}\t0\t0\tg\tx\tx\tx\tx\t{sent()}\t{sent()}\t{labels[i % 3]}\t"
                                              f"{labels[i % 3]}" for i in range(24)]
    (mnli / "train.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    for split, n in (("dev_matched", 9), ("dev_mismatched", 6)):
        rows = [head + "\tlabel1\tlabel2\tlabel3\tlabel4\tlabel5\tgold_label"] + [
            f"{i}\t0\t0\tg\tx\tx\tx\tx\t{sent()}\t{sent()}" + f"\t{labels[i % 3]}" * 6 for i in range(n)]
        (mnli / f"{split}.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    rows = [head] + [f"{i}\t0\t0\tg\tx\tx\tx\tx\t{sent()}\t{sent()}" for i in range(5)]
    (mnli / "test_matched.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    sts = tmp_path / "glue" / "STS-B"
    sts.mkdir()
    head = "index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2"
    for split, n in (("train", 24), ("dev", 12)):
        rows = [head + "\tscore"] + [f"{i}\tg\tf\t2012\t{i}\ts\ts\t{sent()}\t{sent()}\t{(i % 6) * 1.0:.3f}"
                                     for i in range(n)]
        (sts / f"{split}.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    cfg = _cfg(steps=3, batch=8, seq=24, glue_tasks=["MNLI", "STS-B"], max_eval_examples=0)
    out = str(tmp_path / "out")
    result = run_benchmark("glue", albert_dir, str(tmp_path / "glue"), cfg, out)
    _check_common(result, out, "glue", {"MNLI-m": (24, 9), "MNLI-mm": (24, 6), "STS-B": (24, 12)})
    tasks = result["tasks"]
    assert set(tasks) == {"MNLI-m", "MNLI-mm", "STS-B"}
    assert tasks["MNLI-m"]["num_dev"] == 9 and tasks["MNLI-mm"]["num_dev"] == 6
    assert tasks["MNLI-m"]["score"] == tasks["MNLI-m"]["accuracy"]
    assert tasks["MNLI-m"]["test_predictions"].endswith("MNLI-m.tsv")
    preds = glue_lib.read_glue_predictions(os.path.join(out, tasks["MNLI-m"]["test_predictions"]))
    assert len(preds) == 5 and set(preds.values()) <= set(labels)
    stsb = tasks["STS-B"]
    assert "pearson" in stsb and "spearman" in stsb
    rescored = score_lib.score("glue", str(sts / "dev.tsv"), os.path.join(out, stsb["predictions"]), task="STS-B")
    if stsb["pearson"] is not None:  # the file holds scores to 6 decimals; near-constant outputs move r a bit
        # 6-decimal rounding of near-constant outputs moves r by ~0.06 points (seen under load, where CPU float
        # order varies); a wrong or misordered file moves it by tens of points.
        assert math.isclose(100 * rescored["pearson"], stsb["pearson"], abs_tol=0.5)
