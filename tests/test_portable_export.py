"""``convert albert-to-onnx`` / ``albert-to-litert`` (trainer/portable_export.py) on a small shared-layer model: one
copy of every shared weight (the file within 10 % of the variables' bytes), dynamic batch and sequence, outputs equal
to the Keras model's within 1e-4 in onnxruntime and in ai-edge-litert's interpreter, and bad input refused in one line.

One conversion per format for the module (each costs seconds of CPU): ONNX through the command on a pushed version's
layout (``<N>/checkpoint/``), LiteRT through :func:`export_portable` on a Trainer model's (``<model>/albert/``).
"""
import contextlib
import io
import json
import logging
import os
import sys

import numpy as np
import pytest

import trainer  # noqa: F401  (tf_keras)
import tensorflow as tf

from trainer.convert import write_albert_dir
from trainer.files import ALBERT_DIR, CONFIG_FILE, VERSION_ALBERT_DIR
from trainer.modeling_albert import AlbertConfig, AlbertForPreTraining, AlbertModel, count_parameters
from trainer.portable_export import (INPUT_NAMES, encoder_function, export_portable, max_abs_diff, probe_feeds,
                                     run_litert, run_onnx)

# albert-tiny with three layers sharing one block and a small vocabulary: a copy of the block per layer (+0.8 MB
# each) or a second copy of the word embeddings (+0.26 MB) puts the file far past 1.1 x its 1.32 MB of variables.
CONFIG = AlbertConfig.named("albert-tiny", vocab_size=1000, num_hidden_layers=3)
SHAPES = ((1, 5), (3, 16))  # two batch sizes x two sequence lengths (a padded row in the batch of 3)


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """{"model", "onnx": (summary, folder), "litert": (summary, folder)}: both formats, with the MLM head."""
    from pipeline import cli as cli_module

    tmp = tmp_path_factory.mktemp("portable")
    tf.random.set_seed(7)
    model = AlbertForPreTraining(CONFIG)
    model(model.dummy_inputs(1, 4, 1))
    version = tmp / "releases" / "1"
    write_albert_dir(model, str(version / VERSION_ALBERT_DIR), serving=False)
    trainer_model = tmp / "model"
    write_albert_dir(model, str(trainer_model / ALBERT_DIR), serving=False)
    out = io.StringIO()
    root = logging.getLogger()
    level, handlers = root.level, list(root.handlers)
    try:
        with contextlib.redirect_stdout(out):
            code = cli_module.run_cli(["--log-file", str(tmp / "convert.log"), "convert", "albert-to-onnx",
                                       str(version), str(tmp / "onnx"), "--with-mlm-head"])
    finally:
        for handler in [h for h in root.handlers if h not in handlers]:
            root.removeHandler(handler)
            handler.close()
        root.setLevel(level)
        logging.captureWarnings(False)
    assert code == 0, out.getvalue()
    onnx_summary = json.loads(out.getvalue())
    litert_summary = export_portable("albert-to-litert", str(trainer_model), str(tmp / "litert"), with_mlm_head=True)
    return {"model": model, "onnx": (onnx_summary, tmp / "onnx"), "litert": (litert_summary, tmp / "litert")}


def _variable_bytes(with_head: bool) -> int:
    """The exported variables, counted from the config: encoder + pooler (+ MLM transform, LayerNorm, output bias;
    the decoder is the word embeddings), float32."""
    counts = count_parameters(CONFIG, include_heads=True)
    sentence_head = CONFIG.hidden_size * 2 + 2
    return 4 * (counts["total"] - (sentence_head if with_head else counts["heads"]))


@pytest.mark.parametrize("fmt", ["onnx", "litert"])
def test_one_copy_of_the_shared_weights(exported, fmt):
    summary, folder = exported[fmt]
    assert summary["parameter_bytes"] == _variable_bytes(with_head=True) == 1318048
    path = folder / summary["files"][0]
    assert summary["file_bytes"] == os.path.getsize(path)
    # One copy of the block read by three layers, one of the embeddings read by the lookup and the tied decoder.
    assert summary["file_bytes"] <= 1.10 * summary["parameter_bytes"], summary
    assert sorted(summary["files"]) == sorted([path.name, CONFIG_FILE, "export_info.json"])


def test_onnx_initializers_are_the_variables_once(exported):
    import onnx

    summary, folder = exported["onnx"]
    assert summary["transposed_copies_removed"] == 1  # the tied decoder's folded transpose of the embeddings
    model = onnx.load(str(folder / "model.onnx"))
    big = sorted(tuple(i.dims) for i in model.graph.initializer if np.prod(i.dims) >= 1024)
    h, e, f, v = CONFIG.hidden_size, CONFIG.embedding_size, CONFIG.intermediate_size, CONFIG.vocab_size
    # word embeddings, positions (tf2onnx keeps them as the [1, P, E] table the slice reads), E->H projection,
    # q/k/v/dense, FFN in/out, pooler, MLM dense: each once although three layers read the block.
    assert big == sorted([(v, e), (1, CONFIG.max_position_embeddings, e), (e, h), (h, h), (h, h), (h, h), (h, h),
                          (h, f), (f, h), (h, h), (h, e)])
    dims = {value.name: [d.dim_param or d.dim_value for d in value.type.tensor_type.shape.dim]
            for value in list(model.graph.input) + list(model.graph.output)}
    assert dims == {"input_word_ids": ["batch", "sequence"], "input_mask": ["batch", "sequence"],
                    "input_type_ids": ["batch", "sequence"], "pooled_output": ["batch", h],
                    "sequence_output": ["batch", "sequence", h], "mlm_logits": ["batch", "sequence", v]}


@pytest.mark.parametrize("fmt", ["onnx", "litert"])
def test_outputs_equal_the_keras_model_for_any_batch_and_length(exported, fmt):
    summary, folder = exported[fmt]
    run = run_onnx if fmt == "onnx" else run_litert
    function = encoder_function(exported["model"], with_mlm_head=True)
    for batch, length in SHAPES:
        feeds = probe_feeds(CONFIG.vocab_size, batch, length, seed=length)
        outputs = run(str(folder / summary["files"][0]), feeds)
        assert outputs["mlm_logits"].shape == (batch, length, CONFIG.vocab_size)
        assert outputs["sequence_output"].shape == (batch, length, CONFIG.hidden_size)
        diffs = max_abs_diff(function, feeds, outputs)
        assert set(diffs) == {"pooled_output", "sequence_output", "mlm_logits"}
        assert max(diffs.values()) <= 1e-4, (fmt, batch, length, diffs)
    assert summary["inputs"] == list(INPUT_NAMES) and max(summary["max_abs_diff"].values()) <= 1e-4


# -- bad input: one line, exit 2, nothing left behind (the classes of tests/test_cli_errors.py) ------------------
def test_missing_extra_names_the_pip_install(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setitem(sys.modules, "tf2onnx", None)  # as if the export extra were not installed
    os.makedirs("albert")
    done = cli("convert", "albert-to-onnx", "albert", "out")
    assert done.returncode == 2 and done.stdout == "", done
    line = [ln for ln in done.stderr.splitlines() if ": error: " in ln]
    assert len(line) == 1 and "needs tf2onnx: pip install albert-tfx[export]" in line[0], done.stderr
    assert not os.path.exists("out")


@pytest.mark.parametrize("case", ["no_config", "encoder_only_with_head", "dst_not_empty", "head_flag_elsewhere"])
def test_bad_input_is_one_line(cli, tmp_path, monkeypatch, case):
    monkeypatch.chdir(tmp_path)
    args, names = None, None
    if case == "no_config":
        os.makedirs("empty")
        args, names = ["albert-to-onnx", "empty", "out"], ["empty holds no albert_config.json", "pushed version"]
    elif case == "encoder_only_with_head":
        encoder = AlbertModel(CONFIG)
        encoder(encoder.dummy_inputs(1, 4))
        write_albert_dir(encoder, "enc")
        args, names = ["albert-to-litert", "enc", "out", "--with-mlm-head"], ["enc has an encoder checkpoint only",
                                                                              "without --with-mlm-head"]
    elif case == "dst_not_empty":
        os.makedirs("out")
        open("out/keep.txt", "w").close()
        args, names = ["albert-to-onnx", ".", "out"], ["DST out exists and is not an empty folder"]
    else:
        os.makedirs("hf")
        args, names = ["hf-to-albert", "hf", "out", "--with-mlm-head"], ["--with-mlm-head is for albert-to-onnx"]
    done = cli("convert", *args)
    assert done.returncode == 2 and done.stdout == "", done
    line = [ln for ln in done.stderr.splitlines() if ": error: " in ln]
    assert len(line) == 1 and "Traceback" not in done.stderr, done.stderr
    for name in names:
        assert name in line[0], (name, line[0])
    assert not [n for n in os.listdir(".") if n.startswith(".portable-")]
    if case != "dst_not_empty":
        assert not os.path.exists("out")
