"""Bad input through the CLI, one test per class: exit code 2, one line naming the file (or setting), no traceback,
the traceback in the log file that line names, nothing left under the output path.

The classes run in this process (``cli`` fixture: ``run_cli`` with capsys); the real terminal, which only a process
has (the exit status, C++ and Beam-worker writes to file descriptor 2), is checked once by a subprocess."""
import os
import re
import subprocess

import pytest

from tests.conftest import CLI, REPO, cli_env

SAMPLE = os.path.join(REPO, "data", "sample")
SPM = os.path.join(SAMPLE, "vocab", "30k-clean.model")
SQUAD = os.path.join(SAMPLE, "squad", "dev-v1.1-sample.json")


def _check_clean_failure(done, tmp_path, names, output=None):
    """The clean-failure contract on a finished command (in-process or real); returns the error line."""
    err = done.stderr
    assert done.returncode == 2, (done.returncode, err[-2000:])
    assert "Traceback" not in err, err[-2000:]
    assert done.stdout == "", done.stdout[-500:]
    line = [ln for ln in err.splitlines() if ": error: " in ln]
    assert len(line) == 1, err[-2000:]
    for name in names:
        assert str(name) in line[0], (name, line[0])
    log = re.search(r"full traceback: (\S+\.log)\)", line[0]).group(1)
    assert log.startswith(str(tmp_path / "logs")) and "Traceback" in open(log, encoding="utf-8").read()
    if output is not None:
        leftovers = [p for p in os.listdir(tmp_path) if p.startswith(os.path.basename(str(output)))]
        assert leftovers == [], leftovers
    return line[0]


@pytest.fixture
def fails_cleanly(cli, tmp_path, monkeypatch):
    """``fails_cleanly(args, names, output=None)``: run the CLI in ``tmp_path``, assert the contract."""
    monkeypatch.chdir(tmp_path)

    def check(args, names, output=None):
        return _check_clean_failure(cli(*args), tmp_path, names, output)

    return check


# -- the real terminal ------------------------------------------------------------------------------------------
def test_real_terminal_gets_one_line_and_exit_code_2(tmp_path):
    """A Beam job that fails on a worker, in a real process: the exit status is 2 and nothing but the one line
    reaches file descriptor 2 (no worker traceback, no TensorFlow start-up banner)."""
    (tmp_path / "docs.txt").write_bytes(b"A good sentence.\nA bad \xff byte.\n\nAnother document.\n")
    done = subprocess.run([CLI, "make-pretraining-data", "--input", "docs.txt", "--spm-model", SPM, "--output", "out"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=600,
                          env=cli_env(ALBERT_TFX_LOG_DIR=str(tmp_path / "logs")))
    line = _check_clean_failure(done, tmp_path, ["docs.txt", "not valid UTF-8", "byte offset 23"], "out")
    assert done.stderr == line + "\n", done.stderr[-2000:]


# -- text encodings ---------------------------------------------------------------------------------------------
def test_invalid_utf8_document_names_file_line_and_offset(fails_cleanly, tmp_path):
    (tmp_path / "docs.txt").write_bytes(b"A good sentence.\nA bad \xff byte.\n\nAnother document.\n")
    line = fails_cleanly(["make-pretraining-data", "--input", "docs.txt", "--spm-model", SPM, "--output", "out"],
                         ["docs.txt", "not valid UTF-8", "byte offset 23"], "out")
    assert "[while running" not in line


# -- not-a-model files ------------------------------------------------------------------------------------------
def test_file_that_is_not_a_sentencepiece_model(fails_cleanly, tmp_path):
    (tmp_path / "docs.txt").write_text("One sentence.\n")
    (tmp_path / "spm.model").write_text("not a model\n")
    fails_cleanly(["make-pretraining-data", "--input", "docs.txt", "--spm-model", "spm.model", "--output", "out"],
                  ["spm.model", "is not a SentencePiece model"], "out")


# -- empty inputs -----------------------------------------------------------------------------------------------
def test_empty_input_documents(fails_cleanly, tmp_path):
    (tmp_path / "empty.txt").write_text("\n  \n")
    fails_cleanly(["make-pretraining-data", "--input", "empty.txt", "--spm-model", SPM, "--output", "out"],
                  ["empty.txt", "empty input"], "out")


def test_empty_predictions_file(fails_cleanly, tmp_path):
    (tmp_path / "pred.json").write_text("")
    fails_cleanly(["score", "squad", SQUAD, "pred.json"], ["pred.json"])


# -- invalid JSON / TSV in datasets and predictions -------------------------------------------------------------
def test_truncated_squad_dataset(fails_cleanly, tmp_path):
    with open(SQUAD, encoding="utf-8") as f:
        (tmp_path / "dev.json").write_text(f.read()[:300])
    fails_cleanly(["score", "squad", "dev.json", "dev.json"], ["dev.json", "not valid JSON", "line 1"])


def test_truncated_predictions_json(fails_cleanly, tmp_path):
    (tmp_path / "pred.json").write_text('{"56be4db0acb8001400a502ec": "Denver')
    fails_cleanly(["score", "squad", SQUAD, "pred.json"], ["pred.json", "not valid JSON"])


def test_glue_predictions_tsv_with_missing_column(fails_cleanly, tmp_path):
    (tmp_path / "RTE.tsv").write_text("index\tprediction\n0\n")
    fails_cleanly(["score", "glue", os.path.join(SAMPLE, "glue", "RTE", "dev.tsv"), "RTE.tsv", "--task", "RTE"],
                  ["RTE.tsv:2"])


# -- dataset / prediction files of the wrong shape --------------------------------------------------------------
def test_squad_predictions_of_the_wrong_shape(fails_cleanly, tmp_path):
    (tmp_path / "pred.json").write_text('["Denver Broncos"]')
    fails_cleanly(["score", "squad", SQUAD, "pred.json"], ["pred.json", "must be a JSON object"])


def test_squad_dataset_of_the_wrong_shape(fails_cleanly, tmp_path):
    (tmp_path / "dev.json").write_text('{"version": "1.1", "data": {"title": "x"}}')
    (tmp_path / "pred.json").write_text("{}")
    fails_cleanly(["score", "squad", "dev.json", "pred.json"], ["dev.json", "SQuAD dataset must be"])


# -- empty or foreign folders as examples or checkpoints --------------------------------------------------------
def test_foreign_folder_as_pretraining_examples(fails_cleanly, tmp_path):
    (tmp_path / "photos").mkdir()
    (tmp_path / "photos" / "cat.jpg").write_bytes(b"\xff\xd8\xff")
    fails_cleanly(["pretrain", "--examples", "photos", "--output", "model"],
                  ["photos", "holds no pretraining examples"], "model")


def test_empty_folder_as_checkpoint(fails_cleanly, tmp_path):
    (tmp_path / "ckpt").mkdir()
    fails_cleanly(["convert", "albert-to-hf", "ckpt", "hf"], ["ckpt", "not an albert directory"], "hf")


# -- corrupt checkpoint files -----------------------------------------------------------------------------------
def test_corrupt_model_safetensors(fails_cleanly, tmp_path):
    src = tmp_path / "hf"
    src.mkdir()
    (src / "config.json").write_text('{"model_type": "albert", "vocab_size": 30000, "embedding_size": 128, '
                                     '"hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12, '
                                     '"intermediate_size": 3072}')
    (src / "model.safetensors").write_bytes(os.urandom(1000))
    fails_cleanly(["convert", "hf-to-albert", "hf", "albert"], ["hf/model.safetensors", "not a valid safetensors file"],
                  "albert")


# -- unknown or out-of-range settings, before anything runs ------------------------------------------------------
@pytest.mark.parametrize("setting,message", [
    ("model.size=albert-huge", "config model (size='albert-huge') is invalid"),
    ("datagen.masked_lm_prob=1.5", "config datagen.masked_lm_prob=1.5 is invalid"),
    ("train.num_train_stepz=3", "unknown config key: train.num_train_stepz"),
])
def test_bad_setting_stops_run_before_any_node(fails_cleanly, tmp_path, setting, message):
    fails_cleanly(["run", "--set", setting, "--output-dir", "out"], [message])
    assert not (tmp_path / "out" / "pipeline_root").exists() and not (tmp_path / "out" / "metadata.sqlite").exists()
