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


def test_library_noise_is_dropped_only_where_that_library_logs_it(tmp_path, capsys):
    """pipeline/local/logs.py's LIBRARY_NOISE: TFMA's "beta" line from TFMA, TensorFlow's deprecation notice naming a
    call in TFMA's writers and Beam's relayed "No semi_persistent_directory" of its SDK worker are dropped from stderr
    and the log file; the same texts from elsewhere, and the worker's other lines, still show."""
    import logging

    from pipeline.local import logs

    beta = "Tensorflow version (%s) found. Note that TFMA support for TF 2.0 is currently in beta"
    tfma = "/venv/site-packages/tensorflow_model_analysis/"
    deprecation = "/venv/site-packages/tensorflow/python/util/deprecation.py"
    records = [("absl", tfma + "api/model_eval_lib.py", beta, ("2.21.0",)),
               ("absl", "/srv/project/mine.py", beta, ("mine",)),
               ("tensorflow", deprecation, logs._TF_DEPRECATION,
                (tfma + "writers/eval_config_writer.py:98", "tf_record_iterator", "tf_record", "soon", "use tf.data")),
               ("tensorflow", deprecation, logs._TF_DEPRECATION,
                ("/srv/project/mine.py:3", "tf_record_iterator", "tf_record", "soon", "use tf.data"))]
    # Beam's runner relaying its worker processes' records (the LogEntry's text, as Beam 2.77 formats it).
    relay, beam = "apache_beam.runners.portability.local_job_service", "/venv/site-packages/apache_beam/runners/"
    entry = ('severity: WARN timestamp {   seconds: 1795796462 } message: "{}" log_location: "{}" '
             'thread: "MainThread"').replace("{}", "%s")
    no_dir = "No semi_persistent_directory found:  User registered objects may not be effective"
    records += [(relay, beam + "portability/local_job_service.py", "Worker: %s",
                 (entry % (no_dir, beam + "worker/sdk_worker_main.py:421"),)),
                (relay, beam + "portability/local_job_service.py", "Worker: %s",
                 (entry % (no_dir, "/srv/project/mine.py:7"),)),
                (relay, beam + "portability/local_job_service.py", "Worker: %s",
                 (entry % ("Disk almost full", beam + "worker/sdk_worker_main.py:99"),))]
    root = logging.getLogger()
    capsys.readouterr()
    path = logs.setup(str(tmp_path / "x.log"))
    try:
        for name, pathname, msg, args in records:
            logging.getLogger(name).handle(logging.LogRecord(name, logging.WARNING, pathname, 1, msg, args, None))
    finally:
        for handler in [h for h in root.handlers if getattr(h, "_albert_tfx", False)]:
            root.removeHandler(handler)
            handler.close()
        logging.captureWarnings(False)
    assert capsys.readouterr().err.splitlines() == [
        "albert-pipeline: warning: Tensorflow version (mine) found. Note that TFMA support for TF 2.0 is currently "
        "in beta",
        "albert-pipeline: warning: From /srv/project/mine.py:3: tf_record_iterator (from tf_record) is deprecated and will be "
        "removed soon.",
        "albert-pipeline: warning: Worker: " + entry % (no_dir, "/srv/project/mine.py:7"),
        "albert-pipeline: warning: Worker: " + entry % ("Disk almost full", beam + "worker/sdk_worker_main.py:99")]
    with open(path, encoding="utf-8") as f:
        logged = f.read()
    assert "(mine) found" in logged and "/srv/project/mine.py:3" in logged
    assert "2.21.0" not in logged and "eval_config_writer" not in logged
    assert logged.count("No semi_persistent_directory") == 1 and "sdk_worker_main.py:421" not in logged
