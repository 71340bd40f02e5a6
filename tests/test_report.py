"""components/report/report_lib.py and components/report/: Table-2 arithmetic, missing columns, escaping, curves, summary."""
import json
import math

import pytest

from components.report import report_lib
from components.report.scores import paper_avg_check, table2_row
from pipeline.settings.configs import sample_config


def _squad(f1, em, name="SQuAD1.1"):
    return {"benchmark": "squad", "tasks": {name: {"f1": f1, "exact_match": em, "score": (f1 + em) / 2,
                                                   "num_train": 10, "num_dev": 5}},
            "protocol": {"seeds": [1], "checkpoint_selection": "last", "hparams": {}}}


def _glue(tasks):
    return {"benchmark": "glue", "tasks": tasks, "skipped": {"QQP": "no train/dev data under /x/QQP"},
            "protocol": {"seeds": [12345, 12346, 12347], "aggregation": "median run by headline score",
                         "checkpoint_selection": "best", "checkpoint_selection_effective": "best on dev",
                         "eval_every": 100, "max_eval_examples": 0,
                         "hparams": {"SST-2": {"learning_rate": 1e-5, "batch_size": 32, "train_steps": 10,
                                               "warmup_steps": 1, "max_seq_length": 64, "albert_dropout": 0.0,
                                               "classifier_dropout": 0.1}},
                         "pretrained": {"encoder_checkpoint": "/m/albert/encoder/ckpt"}}}


def _all_five():
    return {
        "squad1": _squad(88.0, 80.0),
        "squad2": _squad(79.0, 76.0, "SQuAD2.0"),
        "glue": _glue({"MNLI-m": {"accuracy": 81.0, "score": 81.0}, "MNLI-mm": {"accuracy": 82.0, "score": 82.0},
                       "SST-2": {"accuracy": 90.0, "score": 90.0, "run_scores": [89.0, 90.0, 91.0]},
                       "CoLA": {"mcc": 40.5, "accuracy": 70.0, "score": 40.5}}),
        "race": {"benchmark": "race", "tasks": {"RACE": {"middle": 70.0, "high": 60.0, "all": 63.0, "score": 63.0}}},
    }


def test_table2_avg_pairs_first(tmp_path):
    summary = report_lib.write_report(str(tmp_path), sample_config(), _all_five(), None, None, None, {})
    # By hand: SQuAD1.1 (88+80)/2 = 84, SQuAD2.0 (79+76)/2 = 77.5, MNLI 81, SST-2 90, RACE 63.
    expected = (84.0 + 77.5 + 81.0 + 90.0 + 63.0) / 5  # = 79.1
    assert math.isclose(summary["avg"], expected) and math.isclose(summary["avg"], 79.1)
    assert summary["missing_columns"] == [] and summary["avg_complete"]
    # Not the mean of all six F1/EM/acc cells:
    assert not math.isclose(summary["avg"], (88 + 80 + 79 + 76 + 81 + 90 + 63) / 7)
    md = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert "| This run | 88.0/80.0 | 79.0/76.0 | 81.0 | 90.0 | 63.0 | 79.1 |" in md
    # The paper's reference row is present and labelled as the paper's number; its Avg checks out.
    assert "paper's Table 2" in md and "89.3/82.3" in md and "80.0/77.1" in md and "| 80.1 |" in md
    assert abs(paper_avg_check() - 80.1) <= 0.05 + 1e-9  # 80.05, printed as 80.1
    # GLUE table: CoLA MCC, MNLI matched and mismatched; the skipped task is named.
    assert "| CoLA | 40.5 | 70.0 |" in md and "MNLI-mm" in md and "QQP" in md
    res = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    assert math.isclose(res["summary"]["avg"], expected)
    assert res["results"]["race"]["tasks"]["RACE"]["all"] == 63.0


def test_missing_columns_stated_not_invented(tmp_path):
    results = {"squad": _squad(50.0, 40.0), "glue": _glue({"SST-2": {"accuracy": 80.0, "score": 80.0}})}
    summary = report_lib.write_report(str(tmp_path), sample_config(), results, None, None, None, None)
    assert summary["missing_columns"] == ["SQuAD2.0", "MNLI", "RACE"]
    assert math.isclose(summary["avg"], ((50.0 + 40.0) / 2 + 80.0) / 2)  # 62.5 over 2 present columns
    assert not summary["avg_complete"]
    md = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert "| This run | 50.0/40.0 | — | — | 80.0 | — | 62.5 (2 of 5) |" in md
    assert "Missing columns" in md and "SQuAD2.0, MNLI, RACE" in md
    assert "not comparable with the paper's Avg" in md
    # Nothing at all: Avg is None, said so.
    empty = report_lib.write_report(str(tmp_path / "empty"), None, {}, None, None, None, None)
    assert empty["avg"] is None and len(empty["missing_columns"]) == 5
    assert "Avg: not computed" in (tmp_path / "empty" / "report.md").read_text(encoding="utf-8")
    # A NaN/None metric counts as missing too.
    row = table2_row({"SST-2": {"accuracy": None}, "RACE": {"all": float("nan")}})
    assert row["avg"] is None and row["missing"] == ["SQuAD1.1", "SQuAD2.0", "MNLI", "SST-2", "RACE"]


def test_html_escaped_and_self_contained(tmp_path):
    evil = "<script>alert('x')</script>"
    results = _all_five()
    results["glue"]["tasks"][evil] = {"accuracy": 50.0, "score": 50.0}
    results["glue"]["skipped"] = {"RTE": f"no data under /tmp/{evil}&co"}
    ids = {"Trainer.model": {"id": 7, "type": "Model", "uri": "/p/<model>&1"}, "report": 9}
    report_lib.write_report(str(tmp_path), sample_config(), results, None, None, None, ids)
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert evil not in page
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in page
    assert "/p/&lt;model&gt;&amp;1" in page
    assert "<script" not in page and "http://" not in page and "https://" not in page  # nothing external
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    md = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert "Trainer.model" in md and "| 7 | Model |" in md


def test_curves_params_pretraining_and_stats(tmp_path):
    model_dir = tmp_path / "model"
    (model_dir / "albert").mkdir(parents=True)
    config = {"vocab_size": 30000, "embedding_size": 128, "hidden_size": 768, "num_hidden_layers": 12,
              "num_attention_heads": 12, "intermediate_size": 3072, "hidden_act": "gelu_new",
              "hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0, "max_position_embeddings": 512,
              "type_vocab_size": 2, "initializer_range": 0.02, "num_hidden_groups": 1, "inner_group_num": 1}
    (model_dir / "albert" / "albert_config.json").write_text(json.dumps(config), encoding="utf-8")
    (model_dir / "albert" / "export_info.json").write_text(json.dumps(
        {"eval_metrics": {"mlm_accuracy": 0.123, "sentence_accuracy": 0.61, "loss": 7.5}, "final_step": 300,
         "precision": "float32"}), encoding="utf-8")
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    rows = [{"step": s, "split": "train", "loss": 9 - s / 100, "mlm_loss": 8 - s / 100, "sentence_loss": 0.69,
             "mlm_accuracy": s / 1000, "sentence_accuracy": 0.5 + s / 1000} for s in (25, 50, 75, 100)]
    rows.append({"step": 100, "split": "eval", "loss": 8.0, "mlm_loss": 7.3, "sentence_loss": 0.68,
                 "mlm_accuracy": 0.1, "sentence_accuracy": 0.55})
    (run_dir / "train_history.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n{\"step\": 1",
                                                 encoding="utf-8")  # torn last line is ignored
    stats_dir = tmp_path / "stats"
    stats_dir.mkdir()
    (stats_dir / "stats.json").write_text(json.dumps({"splits": {"train": {
        "instances": 1234, "tokens": 99999, "length_mean": 81.0, "sop_label_1_share": 0.5012,
        "masked_token_share": 0.149, "masked_per_instance": 12.1,
        "replacement_shares": {"mask": 0.8, "random": 0.1, "keep": 0.1}}}}), encoding="utf-8")
    summary = report_lib.write_report(str(tmp_path / "out"), sample_config(), _all_five(), str(model_dir),
                                      str(run_dir), str(stats_dir), {"Trainer.model": 3})
    png = tmp_path / "out" / "pretraining_curves.png"
    assert png.exists() and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert summary["files"]["pretraining_curves"] == "pretraining_curves.png"
    # ALBERT-base by hand: embeddings 30000*128 + 512*128 + 2*128 + LayerNorm 2*128 = 3,906,048; projection
    # 128*768 + 768 = 99,072; the one shared layer: Q, K, V, O 4*(768*768 + 768) + FFN 768*3072 + 3072 + 3072*768 + 768
    # + two LayerNorms 2*2*768 = 7,087,872; pooler 768*768 + 768 = 590,592. Total 11,683,584 (the paper's "12M").
    assert summary["num_parameters"] == 11_683_584
    md = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    assert "![" in md and "pretraining_curves.png" in md
    assert "1,234" in md and "50.1%" in md and "14.9%" in md and "mlm_accuracy" in md
    page = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    assert "data:image/png;base64," in page
    # No history: no PNG, and the report says so.
    summary2 = report_lib.write_report(str(tmp_path / "out2"), None, {}, None, str(tmp_path / "nope"), None, None)
    assert summary2["files"]["pretraining_curves"] is None
    assert not (tmp_path / "out2" / "pretraining_curves.png").exists()
    assert "no history found" in (tmp_path / "out2" / "report.md").read_text(encoding="utf-8")


def test_load_result(tmp_path):
    (tmp_path / "metrics.json").write_text(json.dumps(_squad(1.0, 2.0)), encoding="utf-8")
    assert report_lib.load_result(str(tmp_path))["tasks"]["SQuAD1.1"]["f1"] == 1.0
    with pytest.raises(FileNotFoundError):
        report_lib.load_result(str(tmp_path / "missing"))
