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
@pytest.mark.slow
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
def test_file_that_is_not_a_vocabulary(fails_cleanly, tmp_path):
    (tmp_path / "docs.txt").write_text("One sentence.\n")
    (tmp_path / "spm.model").write_text("not a model\n")
    fails_cleanly(["make-pretraining-data", "--input", "docs.txt", "--vocab", "spm.model", "--output", "out"],
                  ["spm.model", "is neither a SentencePiece model nor a WordPiece vocab.txt"], "out")


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
    ("model.size=albert-huge", "config model.size='albert-huge' is invalid"),
    ("language=[en,xx]", "config language=['en', 'xx'] is invalid: 'xx' is not an ISO 639-1 code"),
    ("datagen.masked_lm_prob=1.5", "config datagen.masked_lm_prob=1.5 is invalid"),
    ("train.num_train_stepz=3", "unknown config key: train.num_train_stepz"),
])
def test_bad_setting_stops_run_before_any_node(fails_cleanly, tmp_path, setting, message):
    fails_cleanly(["run", "--set", setting, "--output-dir", "out"], [message])
    assert not (tmp_path / "out" / "pipeline_root").exists() and not (tmp_path / "out" / "metadata.sqlite").exists()


# -- one family of user errors; anything else is an internal error (config/errors.py) ---------------------------
# Every class of the family, by the module that defines it (the release feature's RegistryAuthError aside). The
# test below reads the product's source for classes derived from UserError: cli._USER_ERROR_NAMES must name each.
FAMILY = {
    "config.errors": ["UserError", "InputError", "MissingInputError", "MissingExtraError", "OutputExistsError"],
    "config.schema": ["ConfigError"],
    "trainer.checkpoint_interop": ["CheckpointMismatchError"],
    "trainer.distribute": ["ClusterError"],
    "components.vocab.vocab_lib": ["VocabSizeMismatchError"],
    "components.evaluation.race.race_data": ["RaceFormatError"],
    "components.evaluation.squad.reading": ["SquadFormatError"],
    "components.text.corrupt_input": ["CorruptInputError"],
    "components.text.tokenization": ["SpecialIdError"],
    "pipeline.cloud.submit": ["CloudConfigError", "CloudAuthError"],
    "pipeline.cloud.environments": ["EnvironmentConfigError"],
    "pipeline.cloud.spec": ["SpecError"],
    "pipeline.rehearsal.rehearsal": ["RehearsalError"],
    "pipeline.local.run_lock": ["RunInProgressError"],
    "components.datagate.datagate_result": ["DataGateError"],
    "components.datagate.examples_stats": ["ExamplesGateError"],
    "components.text.segmenters": ["SegmenterError"],
}
NAMES = {name for names in FAMILY.values() for name in names}


def _family_in_source():
    """Class names the product's source derives, directly or not, from UserError (read with ``ast``)."""
    import ast

    bases = {}
    for package in ("config", "trainer", "components", "pipeline"):
        for dirpath, _, files in os.walk(os.path.join(REPO, package)):
            for name in files:
                if name.endswith(".py"):
                    with open(os.path.join(dirpath, name), encoding="utf-8") as f:
                        tree = ast.parse(f.read())
                    for node in ast.walk(tree):
                        if isinstance(node, ast.ClassDef):
                            bases.setdefault(node.name, set()).update(
                                b.attr if isinstance(b, ast.Attribute) else getattr(b, "id", "") for b in node.bases)
    family, grown = {"UserError"}, True
    while grown:
        new = {name for name, of in bases.items() if of & family} - family
        family |= new
        grown = bool(new)
    return family


def test_every_user_error_class_is_in_the_family_and_named_for_beam_text():
    import importlib

    from config import UserError, user_error_names
    from pipeline import cli as cli_module

    for module, names in FAMILY.items():
        for name in names:
            cls = getattr(importlib.import_module(module), name)
            assert issubclass(cls, UserError) and cls.__module__ == module, (module, name)
    assert NAMES <= user_error_names()
    assert NAMES <= _family_in_source()
    assert cli_module._USER_ERROR_NAMES == _family_in_source()  # the fallback for classes a process never imported


def test_family_classes_keep_their_standard_bases():
    from config import InputError, MissingInputError, OutputExistsError, UserError
    from components.text.corrupt_input import CorruptInputError
    from pipeline.cloud.submit import CloudAuthError
    from pipeline.local.run_lock import RunInProgressError

    assert issubclass(InputError, ValueError) and issubclass(CorruptInputError, ValueError)
    assert issubclass(MissingInputError, FileNotFoundError) and issubclass(OutputExistsError, FileExistsError)
    assert issubclass(CloudAuthError, UserError) and not issubclass(UserError, (ValueError, OSError))
    assert issubclass(RunInProgressError, RuntimeError)


@pytest.mark.parametrize("error,line", [
    (KeyError("label_ids"), "internal error: KeyError: label_ids"),
    (ValueError("operands could not be broadcast"), "internal error: ValueError: operands could not be broadcast"),
    (FileNotFoundError("/tmp/x/spill-3.bin"), "internal error: FileNotFoundError: /tmp/x/spill-3.bin"),
    (UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte"),
     "internal error: UnicodeDecodeError: 'utf-8' codec can't decode byte 0xff in position 0: invalid start byte"),
])
def test_a_plain_error_in_product_code_is_an_internal_error_exit_1(cli, tmp_path, monkeypatch, error, line):
    """A bug (a plain KeyError/ValueError/OSError escaping product code) is never reported as bad input."""
    from components.evaluation import score as score_lib

    def broken(*args, **kwargs):
        raise error

    monkeypatch.setattr(score_lib, "score", broken)
    dev = os.path.join(SAMPLE, "glue", "RTE", "dev.tsv")
    log = tmp_path / "score.log"
    done = cli("--log-file", log, "score", "glue", dev, dev, "--task", "RTE")
    assert done.returncode == 1
    assert done.stdout == ""
    assert [ln for ln in done.stderr.splitlines() if "albert-pipeline" in ln] == [
        f"albert-pipeline score: {line} (full traceback: {log})"]
    assert "Traceback" not in done.stderr
    assert f"{type(error).__name__}" in log.read_text(encoding="utf-8")


def test_a_user_error_from_product_code_is_exit_2(cli, tmp_path, monkeypatch):
    from components.evaluation import score as score_lib
    from config import InputError

    def refuses(*args, **kwargs):
        raise InputError("RTE.tsv:3: GLUE RTE label 'maybe' is not one of ['entailment', 'not_entailment']")

    monkeypatch.setattr(score_lib, "score", refuses)
    dev = os.path.join(SAMPLE, "glue", "RTE", "dev.tsv")
    log = tmp_path / "score.log"
    done = cli("--log-file", log, "score", "glue", dev, dev, "--task", "RTE")
    assert (done.returncode, done.stdout) == (2, "")
    assert [ln for ln in done.stderr.splitlines() if "albert-pipeline" in ln] == [
        "albert-pipeline score: error: RTE.tsv:3: GLUE RTE label 'maybe' is not one of ['entailment', "
        f"'not_entailment'] (full traceback: {log})"]


def test_user_error_on_a_beam_worker_is_still_a_user_error_and_a_bug_is_not():
    import apache_beam as beam

    from components.text.tokenization import SpecialIdError
    from pipeline.cli import describe_error

    def check_ids(_):
        raise SpecialIdError("m.model: '<pad>' expected at id 0")

    def bug(key):
        return {}[key]

    for fn, expected in ((check_ids, ("m.model: '<pad>' expected at id 0", True)), (bug, ("KeyError: 1", False))):
        with pytest.raises(Exception) as info:
            with beam.Pipeline() as p:
                _ = p | beam.Create([1]) | "Check" >> beam.Map(fn)
        assert describe_error(info.value) == expected


@pytest.mark.parametrize("last_line,expected", [
    ("components.vocab.vocab_lib.VocabSizeMismatchError: spm.model has 3000 pieces but the config says "
     "vocab.vocab_size=30000; pass --set vocab.vocab_size=3000 (or 0 to take the model's size) "
     "[while running 'VocabGen']", ("spm.model has 3000 pieces but the config says vocab.vocab_size=30000; pass "
                                    "--set vocab.vocab_size=3000 (or 0 to take the model's size)", True)),
    ("trainer.checkpoint_interop.CheckpointMismatchError: checkpoint does not match the model:",
     ("checkpoint does not match the model:", True)),
    ("config.errors.MissingInputError: input 'docs.txt' does not exist", ("input 'docs.txt' does not exist", True)),
    ("KeyError: 'masked_lm_ids' [while running 'Generate']", ("KeyError: 'masked_lm_ids'", False)),
    ("ValueError: not enough values to unpack", ("ValueError: not enough values to unpack", False)),
    ("FileNotFoundError: [Errno 2] No such file or directory: '/tmp/spill'",
     ("FileNotFoundError: [Errno 2] No such file or directory: '/tmp/spill'", False)),
    ("UnicodeDecodeError: 'utf-8' codec can't decode byte 0xff", ("UnicodeDecodeError: 'utf-8' codec can't decode "
                                                                  "byte 0xff", False)),
])
def test_errors_re_raised_as_text_are_told_apart_by_class_name(last_line, expected):
    """A portable or multi-process Beam runner re-raises a worker's error as text: the class name decides."""
    from pipeline.cli import describe_error

    text = ("Pipeline job failed\nTraceback (most recent call last):\n  File \"apache_beam/runners/common.py\", "
            f"line 1512, in process\n{last_line}")
    assert describe_error(RuntimeError(text)) == expected


def test_a_user_error_anywhere_in_the_chain_is_the_one_reported():
    from config import MissingInputError
    from pipeline.cli import describe_error

    try:
        try:
            raise MissingInputError("--examples ex is not a folder")
        except MissingInputError as exc:
            raise RuntimeError("step failed") from exc
    except RuntimeError as exc:
        assert describe_error(exc) == ("--examples ex is not a folder", True)
    assert describe_error(RuntimeError("step failed")) == ("RuntimeError: step failed", False)


# -- user mistakes that reached product code as plain errors, now named at the boundary ---------------------------
def test_missing_input_and_existing_output_of_make_pretraining_data(fails_cleanly, tmp_path):
    fails_cleanly(["make-pretraining-data", "--input", "nope.txt", "--spm-model", SPM, "--output", "out"],
                  ["input 'nope.txt' does not exist"], "out")
    (tmp_path / "docs.txt").write_text("One sentence.\n")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "keep.txt").write_text("mine")
    fails_cleanly(["make-pretraining-data", "--input", "docs.txt", "--spm-model", SPM, "--output", "full"],
                  ["output folder full exists and is not empty"])


@pytest.mark.parametrize("args,names", [
    (["--size", "albert-huge"], ["model.size (or model-info --size) 'albert-huge' is unknown"]),
    (["-H", "100", "--heads", "12"], ["invalid ALBERT configuration (model.*, or a model folder's albert_config.json): hidden_size (100) must be divisible by num_attention_heads (12)"]),
])
def test_bad_model_info_flags(fails_cleanly, args, names):
    fails_cleanly(["model-info", *args], names)


def test_glue_prediction_that_is_not_a_label(fails_cleanly, tmp_path):
    dev = os.path.join(SAMPLE, "glue", "RTE", "dev.tsv")
    with open(dev, encoding="utf-8") as f:
        first = f.read().splitlines()[1].split("\t")[0]
    (tmp_path / "RTE.tsv").write_text(f"index\tprediction\n{first}\tmaybe\n")
    fails_cleanly(["score", "glue", dev, "RTE.tsv", "--task", "RTE"],
                  ["RTE.tsv: index", "prediction 'maybe' is not one of"])


def test_hf_config_json_that_is_not_json(fails_cleanly, tmp_path):
    (tmp_path / "hf").mkdir()
    (tmp_path / "hf" / "config.json").write_text('{"model_type": "albert", ')
    fails_cleanly(["convert", "hf-to-albert", "hf", "albert"], ["hf/config.json", "not valid JSON"], "albert")


def test_albert_config_json_that_is_not_json(fails_cleanly, tmp_path):
    (tmp_path / "ckpt").mkdir()
    (tmp_path / "ckpt" / "albert_config.json").write_bytes(b"\xff\xfe not json")
    fails_cleanly(["convert", "albert-to-hf", "ckpt", "hf"], ["ckpt/albert_config.json", "not a valid JSON config"],
                  "hf")


def test_corrupt_tfrecord_file_is_named(tmp_path):
    import tensorflow as tf

    from config import InputError
    from trainer.input_pipeline import count_records

    good, bad = str(tmp_path / "a.tfrecord"), str(tmp_path / "b.tfrecord")
    with tf.io.TFRecordWriter(good) as w:
        w.write(b"record")
    with open(bad, "wb") as f:
        f.write(b"\x00" * 40)
    assert count_records([good]) == [1]
    with pytest.raises(InputError, match=r"^\S+/b\.tfrecord: not a readable TFRecord file \("):
        count_records([good, bad])


def test_corrupt_tf1_checkpoint_is_named(fails_cleanly, tmp_path):
    from trainer.modeling_albert import AlbertConfig

    src = tmp_path / "tf1"
    src.mkdir()
    (src / "albert_config.json").write_text(AlbertConfig.named("albert-tiny").to_json_string(official=True))
    (src / "model.ckpt-1.index").write_bytes(b"\x00" * 64)
    (src / "model.ckpt-1.data-00000-of-00001").write_bytes(b"")
    fails_cleanly(["convert", "tf1-to-albert", "tf1", "albert"],
                  ["tf1/model.ckpt-1: not a readable TensorFlow checkpoint"], "albert")


def test_compiled_spec_that_is_not_yaml(fails_cleanly, tmp_path):
    (tmp_path / "job.yaml").write_text("pipelineSpec: {root: [1, 2\n")
    fails_cleanly(["rehearse", "--spec", "job.yaml", "--output-dir", "out"],
                  ["job.yaml: cannot read a pipeline spec (while parsing a flow"], "out")


@pytest.mark.parametrize("index,names", [
    ('{"weight_map": ', ["hf/model.safetensors.index.json: not a safetensors index (JSONDecodeError"]),
    ('{"metadata": {}}', ["hf/model.safetensors.index.json: not a safetensors index (KeyError: 'weight_map')"]),
    ('{"weight_map": {"albert.x": "part-1.safetensors"}}', ["hf/part-1.safetensors does not exist"]),
])
def test_broken_sharded_safetensors_index(fails_cleanly, tmp_path, index, names):
    src = tmp_path / "hf"
    src.mkdir()
    (src / "config.json").write_text('{"model_type": "albert", "vocab_size": 30000, "embedding_size": 128, '
                                     '"hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12, '
                                     '"intermediate_size": 3072}')
    (src / "model.safetensors.index.json").write_text(index)
    fails_cleanly(["convert", "hf-to-albert", "hf", "albert"], names, "albert")
