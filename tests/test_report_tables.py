"""components/report/sections.py, table by table: each section builder's rows from known inputs, and the
"beyond seed spread" cell, which one seed per arm cannot fill with yes or no."""
import json

from components.report import report_lib
from components.report import sections
from components.report.document import Section, Table
from components.report.scores import table2_row
from components.evaluation.metrics import compare_arms
from config.references import REFERENCE_ROWS


def _gain_rows(md: str):
    section = md.split("## Gain over no pretraining", 1)[1].split("\n## ", 1)[0]
    return [line for line in section.splitlines() if line.startswith("| ") and not line.startswith("| Task ")]


def test_one_seed_cannot_show_beyond_spread(tmp_path):
    """The sample report's case: one seed per arm, the pretrained run above the baseline run."""
    gain = compare_arms({"RTE": {"run_scores": [60.0]}}, {"RTE": {"run_scores": [50.0]}})
    assert gain["RTE"]["beyond_spread"] is None  # not True: one run has no spread to be beyond
    results = {"glue": {"tasks": {"RTE": {"accuracy": 60.0, "score": 60.0}}, "gain_over_baseline": {"random_init": gain}}}
    report_lib.write_report(str(tmp_path), None, results, None, None, None, None)
    md = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert _gain_rows(md) == [
        "| RTE | random_init | 60.0 [60.0 – 60.0] | 50.0 [50.0 – 50.0] | +10.0 | +10.0 [+10.0 – +10.0] | "
        "cannot tell (1 seed) | 1 | — | — |"]
    # A result written before beyond_spread needed two seeds says True; the report still cannot tell.
    old = dict(gain["RTE"], beyond_spread=True)
    assert sections.gain_section({"glue": {"gain_over_baseline": {"random_init": {"RTE": old}}}}).blocks[0].rows[0][6] \
        == "cannot tell (1 seed)"


def test_two_seeds_say_yes_or_no(tmp_path):
    pre = {"SST-2": {"run_scores": [80.0, 84.0]}, "RTE": {"run_scores": [55.0, 50.0]}}
    base = {"SST-2": {"run_scores": [60.0, 70.0]}, "RTE": {"run_scores": [52.0, 58.0]}}
    gains = compare_arms(pre, base)
    section = sections.gain_section({"glue": {"gain_over_baseline": {"random_init": gains}}})
    assert section.heading == "Gain over no pretraining"
    table = section.blocks[0]
    assert isinstance(table, Table) and table.header[6] == "beyond seed spread"
    assert table.rows == [
        ["SST-2", "random_init", "82.0 [80.0 – 84.0]", "65.0 [60.0 – 70.0]", "+17.0", "+17.0 [+14.0 – +20.0]", "yes",
         "2", "—", "—"],
        ["RTE", "random_init", "52.5 [50.0 – 55.0]", "55.0 [52.0 – 58.0]", "-2.5", "-2.5 [-8.0 – +3.0]", "no",
         "2", "—", "—"]]


def test_table2_section_rows_and_avg_note():
    row = table2_row({"SQuAD1.1": {"f1": 88.0, "exact_match": 80.0}, "SST-2": {"accuracy": 90.0}})
    section = sections.table2_section(row, "albert-base-v2")
    assert section.heading == "Results in the shape of the paper's Table 2"
    blocks = section.blocks
    header, rows = blocks[0].header, blocks[0].rows
    assert header == ["Model", "SQuAD1.1 F1/EM", "SQuAD2.0 F1/EM", "MNLI", "SST-2", "RACE", "Avg"]
    assert rows[0] == ["This run", "88.0/80.0", "—", "—", "90.0", "—", "87.0 (2 of 5)"]  # (84 + 90) / 2
    assert rows[1] == [REFERENCE_ROWS["albert-base-v2"]["label"], "90.2/83.2", "82.1/79.3", "84.6", "92.9", "66.8",
                       "82.3"]
    assert blocks[1] == ("Missing columns (not run or no result; no number is shown for them): SQuAD2.0, MNLI, "
                         "RACE.")
    assert blocks[2].startswith("Avg here is over the 2 present column(s) only (SQuAD1.1, SST-2;")


def test_glue_qa_and_multiple_choice_sections_split_the_tasks():
    tasks = {"CoLA": {"mcc": 40.5, "accuracy": 70.0, "score": 40.5, "num_train": 200, "num_dev": 100},
             "MNLI-m": {"accuracy": 81.04, "score": 81.04, "run_scores": [80.0, 81.04, 82.0], "selected_step": 300},
             "SQuAD2.0": {"f1": 79.0, "exact_match": 76.0, "score": 77.5, "HasAns_f1": 70.0, "NoAns_f1": 88.0,
                          "null_threshold": -1.2345},
             "RACE": {"middle": 70.0, "high": 60.0, "all": 63.0, "score": 63.0}}
    results = {"glue": {"skipped": {"QQP": "no train/dev data"}}}
    section = sections.glue_section(tasks, results)
    assert section.heading == "GLUE (dev)"
    blocks = section.blocks
    header, rows = blocks[0].header, blocks[0].rows
    assert header == ["Task", "mcc", "accuracy", "score", "runs (median of)", "selected step", "train / dev examples"]
    assert rows == [["CoLA", "40.5", "70.0", "40.5", "1", "—", "200 / 100"],
                    ["MNLI-m", "", "81.0", "81.0", "3", "300", "— / —"]]
    assert blocks[-1] == "Skipped: QQP (no train/dev data)."
    section = sections.qa_section(tasks)
    assert section.heading == "Question answering (dev)"
    assert section.blocks[0].rows == [
        ["SQuAD2.0", "F1 79.0, EM 76.0, HasAns F1 70.0, NoAns F1 88.0, null threshold -1.234", "77.5", "—", "— / —"]]
    section = sections.multiple_choice_section(tasks)
    assert section.heading == "Multiple choice (dev)"
    assert section.blocks[0].rows == [["RACE", "middle 70.0, high 60.0, all 63.0", "63.0", "—", "— / —"]]
    assert sections.qa_section({"CoLA": tasks["CoLA"]}) is None
    assert sections.multiple_choice_section({"CoLA": tasks["CoLA"]}) is None
    assert sections.glue_section({"RACE": tasks["RACE"]}, {}) is None


# A Chinese and a cross-lingual run's tasks, as the benchmark nodes record them (components/evaluation/glue/run_glue.py:
# a cross-lingual task's languages under <task>-<code> with "cross_lingual", its mean under its name with "languages").
FAMILY_TASKS = {
    "AFQMC": {"accuracy": 70.0, "score": 70.0, "num_train": 4, "num_dev": 3},
    "YNAT": {"macro_f1": 40.0, "accuracy": 50.0, "score": 45.0, "selection_metric": "macro_f1"},
    "PAWS-X-en": {"accuracy": 75.0, "score": 75.0, "num_train": 32, "num_dev": 16, "selection_metric": "accuracy",
                  "cross_lingual": {"task": "PAWS-X", "language": "en", "train_language": "en"}},
    "PAWS-X-de": {"accuracy": 62.5, "score": 62.5, "num_train": 32, "num_dev": 16, "selection_metric": "accuracy",
                  "cross_lingual": {"task": "PAWS-X", "language": "de", "train_language": "en"}},
    "PAWS-X-zh": {"accuracy": 50.0, "score": 50.0, "num_train": 32, "num_dev": 16, "selection_metric": "accuracy",
                  "cross_lingual": {"task": "PAWS-X", "language": "zh", "train_language": "en"}},
    "PAWS-X": {"accuracy": 62.5, "score": 62.5, "num_train": 32, "num_dev": 48, "selection_metric": "accuracy",
               "languages": ["en", "de", "zh"], "train_language": "en",
               "language_results": ["PAWS-X-en", "PAWS-X-de", "PAWS-X-zh"]},
    "CMRC2018": {"f1": 80.0, "exact_match": 60.0, "score": 70.0},
    "C3": {"d": 50.0, "m": 100.0, "all": 60.0, "score": 60.0},
}


def test_each_family_has_its_own_section_and_a_cross_lingual_task_a_row_per_language(tmp_path):
    results = {"glue": {"tasks": {k: v for k, v in FAMILY_TASKS.items() if k not in ("CMRC2018", "C3")},
                        "skipped": {"TNEWS": "no train/dev data"}},
               "squad": {"tasks": {"CMRC2018": FAMILY_TASKS["CMRC2018"]}},
               "race": {"tasks": {"C3": FAMILY_TASKS["C3"]}}}
    built = sections.family_sections(FAMILY_TASKS, results)
    assert [s.heading for s in built] == ["CLUE (dev)", "Tasks by spec (dev)", "Cross-lingual (dev)",
                                          "Question answering (dev)", "Multiple choice (dev)"]
    clue, spec, xling = built[0], built[1], built[2]
    assert clue.blocks[0].rows == [["AFQMC", "70.0", "70.0", "1", "—", "4 / 3"]]
    assert clue.blocks[-1] == "Skipped: TNEWS (no train/dev data)."  # no GLUE section: the first one says it
    assert spec.blocks[0].header[:4] == ["Task", "accuracy", "score", "runs (median of)"]
    assert xling.blocks[0].rows == [
        ["PAWS-X", "en (fine-tuned in)", "75.0", "75.0", "1", "—", "32 / 16"],
        ["PAWS-X", "de", "62.5", "62.5", "1", "—", "32 / 16"],
        ["PAWS-X", "zh", "50.0", "50.0", "1", "—", "32 / 16"],
        ["PAWS-X", "mean of 3", "62.5", "62.5", "1", "—", "32 / 48"]]
    assert built[3].blocks[0].rows == [["CMRC2018", "F1 80.0, EM 60.0", "70.0", "—", "— / —"]]
    assert built[4].blocks[0].rows == [["C3", "dialogue 50.0, mixed-genre 100.0, all 60.0", "60.0", "—", "— / —"]]
    # The suite row in Table 2's shape takes a cross-lingual task by its mean, not each language.
    summary = report_lib.write_report(str(tmp_path), None, results, None, None, None, None)
    assert summary["suite"]["columns"] == ["AFQMC", "CMRC2018", "C3", "PAWS-X", "YNAT"]
    md = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert "| PAWS-X | de | 62.5 | 62.5 | 1 | — | 32 / 16 |" in md and "## GLUE (dev)" not in md


def test_init_check_protocol_data_and_artifact_sections():
    results = {"glue": {"init_check": {"runs_checked": 3, "variables_compared": 25, "values_compared": 123456,
                                       "max_abs_diff": 0.0, "equal_informative_variables_max": 25, "passed": True},
                        "baselines": {"random_init": {"init_check": {
                            "runs_checked": 3, "variables_compared": 25, "values_compared": 123456,
                            "max_abs_diff": 0.51, "equal_informative_variables_max": 0, "passed": False}}},
                        "protocol": {"seeds": [7, 8], "aggregation": "median", "checkpoint_selection": "best",
                                     "checkpoint_selection_effective": "best on dev", "eval_every": 10,
                                     "max_eval_examples": 0,
                                     "hparams": {"RTE": {"learning_rate": 3e-5, "batch_size": 32, "train_steps": 800,
                                                         "warmup_steps": 200, "max_seq_length": 512,
                                                         "albert_dropout": 0.1, "classifier_dropout": 0.1}},
                                     "pretrained": {"encoder_checkpoint": "m/albert/encoder/ckpt"}}}}
    blocks = sections.init_check_section(results).blocks
    assert blocks[0].rows == [["glue", "pretrained", "3", "25", "123,456", "0.000", "25", "passed"],
                              ["glue", "random_init", "3", "25", "123,456", "0.510", "0", "FAILED"]]
    section = sections.protocol_section(results, {"seed": 1, "model": {"size": "albert-base"},
                                                  "train": {"num_train_steps": 125000}})
    assert section.heading == "Protocol"
    blocks = section.blocks
    assert blocks[0].rows == [["glue", "7, 8", "median", "best (effective: best on dev, eval_every 10)", "all",
                               "RTE: lr 3e-05, batch 32, steps 800, warmup 200, seq 512, dropout 0.1/0.1",
                               "m/albert/encoder/ckpt"]]
    assert blocks[-1] == "Pretraining: seed 1, model albert-base, 125000 steps."
    assert sections.protocol_section({}, {}).blocks == ["No benchmark results were given."]
    blocks = sections.data_section({"train": {"instances": 1234, "tokens": 99999, "length_mean": 81.0,
                                              "sop_label_1_share": 0.5012, "masked_token_share": 0.149,
                                              "masked_per_instance": 12.1,
                                              "replacement_shares": {"mask": 0.8, "random": 0.1}}}).blocks
    assert blocks[0].rows == [["train", "1,234", "99,999", "81.0", "—", "50.1%", "14.9%", "12.10",
                               "mask: 80.0%, random: 10.0%", "—"]]
    assert sections.data_section({}) == Section("Pretraining data (datagen statistics)", ["stats.json not found."])
    blocks = sections.artifacts_section({"model": {"id": 3, "type": "Model", "uri": "root/m"}, "stats": 5}).blocks
    assert blocks[0].rows == [["model", "3", "Model", "root/m"], ["stats", "5", "", ""]]
    assert sections.artifacts_section({}) is None


def test_sections_in_order_and_the_reference_row_styled(tmp_path):
    results = {"glue": {"tasks": {"SST-2": {"accuracy": 90.0, "score": 90.0}}}}
    report_lib.write_report(str(tmp_path), {"reference": "albert-base-v1"}, results, None, None, None, {"m": 1})
    md = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert [line[3:] for line in md.splitlines() if line.startswith("## ")] == [
        "Results in the shape of the paper's Table 2", "GLUE (dev)", "Protocol", "Pretrained model", "Data gate",
        "Pretraining data (datagen statistics)", "MLMD artifacts"]
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert page.count('<tr class="paper">') == 1
    assert '<tr class="paper"><td>ALBERT base v1 — paper&#x27;s Table 2' in page
    summary = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))["summary"]
    assert summary["reference"]["values"] == REFERENCE_ROWS["albert-base-v1"]["values"]


def test_a_run_beyond_english_gets_its_suite_in_table_2s_shape(tmp_path):
    """CLUE's tasks (and spec tasks) are columns of their own row in Table 2's shape, in CLUE's order, with Avg over
    their headlines; with no English column the paper's Table 2 is not shown, and C3 / CMRC2018 are detailed beside
    SQuAD and RACE, not in the classification table."""
    results = {"glue": {"tasks": {"TOPICS": {"macro_f1": 40.0, "accuracy": 50.0, "score": 45.0},
                                  "AFQMC": {"accuracy": 70.0, "score": 70.0}}},
               "squad": {"tasks": {"CMRC2018": {"f1": 80.0, "exact_match": 60.0, "score": 70.0}}},
               "race": {"tasks": {"C3": {"d": 50.0, "m": 100.0, "all": 60.0, "score": 60.0}}}}
    summary = report_lib.write_report(str(tmp_path), None, results, None, None, None, None)
    assert summary["suite"] == {
        "columns": ["AFQMC", "CMRC2018", "C3", "TOPICS"], "avg": 61.25,
        "cells": {"AFQMC": 70.0, "CMRC2018": {"f1": 80.0, "exact_match": 60.0}, "C3": 60.0, "TOPICS": 45.0},
        "headline": {"AFQMC": 70.0, "CMRC2018": 70.0, "C3": 60.0, "TOPICS": 45.0}}
    assert set(summary["glue"]) == {"AFQMC", "TOPICS"}
    md = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert "## Results in the shape of the paper's Table 2\n" not in md
    assert ("| Model | AFQMC | CMRC2018 F1/EM | C3 | TOPICS | Avg |\n|---|---|---|---|---|---|\n"
            "| This run | 70.0 | 80.0/60.0 | 60.0 | 45.0 | 61.2 |") in md
    assert "| C3 | dialogue 50.0, mixed-genre 100.0, all 60.0 |" in md
    # An English run's report has no such row.
    english = report_lib.write_report(str(tmp_path / "en"), None, {"glue": {"tasks": {"RTE": {"accuracy": 60.0,
                                                                                               "score": 60.0}}}},
                                      None, None, None, None)
    assert "suite" not in english
