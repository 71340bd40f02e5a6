"""The albert-pipeline entry point as users call it: JSON on stdout, exit code 0, one-line errors with code 2.

In this process (the ``cli`` fixture); the real process's exit code and terminal are tests/test_cli_errors.py's
subprocess test."""
import json
import os

import pytest


@pytest.mark.parametrize("size,total", [("albert-base", 11_683_584), ("bert-base", 109_081_344)])
def test_model_info_prints_parameter_counts(cli, size, total):
    done = cli("model-info", "--size", size)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["parameters"]["total"] == total


def test_model_info_takes_shape_flags(cli):
    done = cli("model-info", "--size", "albert-base", "-E", "768", "--sharing", "none")
    params = json.loads(done.stdout)["parameters"]
    assert done.returncode == 0 and params["total"] == 109_081_344  # E = H, not shared: BERT-base layout


def test_score_glue_from_files(cli, tmp_path, sample_dir):
    dev = os.path.join(sample_dir, "glue", "RTE", "dev.tsv")
    with open(dev, encoding="utf-8") as f:
        rows = [line.rstrip("\n").split("\t") for line in f][1:]
    preds = tmp_path / "RTE.tsv"
    preds.write_text("index\tprediction\n" + "".join(f"{r[0]}\t{r[-1]}\n" for r in rows))
    done = cli("score", "glue", dev, str(preds), "--task", "RTE")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["accuracy"] in (1.0, 100.0)


def test_bad_override_is_one_clear_line_and_exit_2(cli):
    done = cli("compile", "--set", "train.num_train_stepz=3")
    assert done.returncode == 2
    assert "unknown config key: train.num_train_stepz" in done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""


def test_unknown_flag_is_a_usage_error_with_exit_2(cli):
    done = cli("model-info", "--sise", "albert-base")
    assert done.returncode == 2 and "unrecognized arguments: --sise albert-base" in done.stderr
