"""ONNX and LiteRT exports of a pretrained model (``albert-pipeline convert albert-to-onnx|albert-to-litert``).

What is exported: the encoder with TF Hub's names, int32 ``input_word_ids``, ``input_mask``, ``input_type_ids``
([batch, sequence], both dynamic) in, float32 ``pooled_output`` [batch, H] and ``sequence_output`` [batch, sequence,
H] out; with ``with_mlm_head`` also ``mlm_logits`` [batch, sequence, V] (the MLM head at every position, the decoder
tied to the word embeddings). The sentence (SOP) head is not exported.

ALBERT's point is its sharing, and exporters lose it (huggingface/transformers#8869: albert-base grew from 45 MB to
340 MB in ONNX). Here every variable appears once however many layers read it:

* tf2onnx freezes each shared variable into one initializer that all L layers read, but folds the tied decoder's
  ``transpose_b`` into a second, transposed copy of the V x E word embeddings (albert-base: +15 MB, +33 %).
  :func:`share_transposed_initializers` puts it back as a ``Transpose`` of the one copy (onnxruntime folds it in
  memory when the session starts; the file keeps one copy).
* The LiteRT converter keeps one buffer per distinct constant, and its ``FULLY_CONNECTED`` reads the [V, E]
  embeddings as they are, so its file holds one copy with nothing done here.

:func:`export_portable` checks both after writing: the file must be within 10 % of the exported variables' bytes
(:data:`MAX_SIZE_RATIO`) and its outputs equal to the Keras model's (:data:`TOLERANCE`) on a probe batch in
onnxruntime / ai-edge-litert's interpreter; the summary names both numbers. Sources: an albert folder (what
:func:`trainer.export.export` writes), a pushed version (``<N>/checkpoint/``) or a Trainer model (``<model>/albert/``).
The vocabulary files travel with the model file. Tokenization is not in these graphs (docs/exports.md says why).
"""
from __future__ import annotations

import importlib
import os
import posixpath
import shutil
import tempfile
import time
from typing import Any, Dict, List

import numpy as np

import trainer  # noqa: F401  (selects tf_keras before TensorFlow is imported)
import tensorflow as tf

from config.errors import InputError, MissingExtraError, MissingInputError, OutputExistsError
from trainer.convert import load_albert_dir
from trainer.files import (ALBERT_DIR, CONFIG_FILE, EXPORT_INFO_FILE, TOKENIZER_SPEC_FILE, VERSION_ALBERT_DIR,
                           VOCAB_FILES)
from trainer.modeling_albert import AlbertForPreTraining, AlbertModel

__all__ = ["KINDS", "INPUT_NAMES", "MODEL_FILES", "MAX_SIZE_RATIO", "TOLERANCE", "export_portable",
           "find_albert_dir", "encoder_function", "parameter_bytes", "to_onnx", "to_litert",
           "share_transposed_initializers", "run_onnx", "run_litert", "require_extra", "EXTRA_MODULES",
           "probe_feeds", "max_abs_diff"]

KINDS = ("albert-to-onnx", "albert-to-litert")
INPUT_NAMES = ("input_word_ids", "input_mask", "input_type_ids")  # TF Hub's BERT/ALBERT encoder inputs
MODEL_FILES = {"albert-to-onnx": "model.onnx", "albert-to-litert": "model.tflite"}
# The modules each kind needs to write and to check its file (the `export` extra of pyproject.toml).
EXTRA_MODULES = {"albert-to-onnx": ("tf2onnx", "onnx", "onnxruntime"), "albert-to-litert": ("ai_edge_litert",)}
ONNX_OPSET = 17  # LayerNormalization is an ONNX op from 17 on; onnxruntime 1.16+ runs it
MAX_SIZE_RATIO = 1.10  # the file against the bytes of the variables it holds (one copy of each)
TOLERANCE = 1e-4  # max |exported - Keras| on the probe batch


def require_extra(kind: str) -> None:
    """A :class:`config.errors.MissingExtraError` naming ``pip install albert-tfx[export]`` when a module ``kind``
    needs is not installed (checked before TensorFlow's conversion starts)."""
    missing = []
    for name in EXTRA_MODULES[kind]:
        try:
            importlib.import_module(name)
        except ImportError:
            missing.append(name)
    if missing:
        raise MissingExtraError(f"convert {kind} needs {', '.join(missing)}: pip install albert-tfx[export] "
                                "(the export extra of pyproject.toml)")


def find_albert_dir(src: str) -> str:
    """The albert folder in ``src`` (local or ``gs://``): ``src`` itself, a pushed version's ``checkpoint/`` or a
    Trainer model's ``albert/``."""
    for candidate in (src, posixpath.join(src, VERSION_ALBERT_DIR), posixpath.join(src, ALBERT_DIR)):
        if tf.io.gfile.exists(posixpath.join(candidate, CONFIG_FILE)):
            return candidate
    raise MissingInputError(f"{src} holds no {CONFIG_FILE}: give an albert folder, a pushed version "
                            f"(<N>/{VERSION_ALBERT_DIR}/) or a Trainer model (<model>/{ALBERT_DIR}/)")


def encoder_function(model, with_mlm_head: bool = False):
    """A ``tf.function`` over ``model`` (:class:`AlbertForPreTraining`, or :class:`AlbertModel` without the
    head): :data:`INPUT_NAMES` in, ``pooled_output``, ``sequence_output`` (and ``mlm_logits``) out."""
    encoder = model.albert if isinstance(model, AlbertForPreTraining) else model
    if with_mlm_head and not isinstance(model, AlbertForPreTraining):
        raise ValueError("with_mlm_head needs an AlbertForPreTraining")

    # autograph=False: plain Python control flow (as trainer/export.py's serving signature).
    @tf.function(autograph=False, input_signature=[tf.TensorSpec([None, None], tf.int32, name=n)
                                                   for n in INPUT_NAMES])
    def encode(input_word_ids, input_mask, input_type_ids):
        outputs = encoder({"input_ids": input_word_ids, "input_mask": input_mask, "segment_ids": input_type_ids},
                          training=False)
        result = {"pooled_output": outputs["pooled_output"], "sequence_output": outputs["sequence_output"]}
        if with_mlm_head:
            result["mlm_logits"] = tf.cast(model.predictions(outputs["sequence_output"]), tf.float32)
        return result

    return encode


def parameter_bytes(model, with_mlm_head: bool = False) -> int:
    """Bytes of the distinct variables the export reads: the encoder's, plus the MLM head's own (its decoder is
    the word embeddings)."""
    encoder = model.albert if isinstance(model, AlbertForPreTraining) else model
    variables = list(encoder.variables) + (list(model.predictions.trainable_variables) if with_mlm_head else [])
    unique = {id(v): v for v in variables}.values()
    return int(sum(v.shape.num_elements() * v.dtype.size for v in unique))


# ---------------------------------------------------------------------------------------------------------------------
# ONNX
# ---------------------------------------------------------------------------------------------------------------------
def to_onnx(function, path: str) -> Dict[str, Any]:
    """Write ``function`` (from :func:`encoder_function`) as an ONNX model at ``path``; the dynamic axes are named
    ``batch`` and ``sequence``."""
    import tf2onnx  # lazy: tf2onnx, onnx (the export extra, on one branch)
    import onnx  # lazy: onnx (the export extra, on one branch)

    model_proto, _ = tf2onnx.convert.from_function(function, input_signature=function.input_signature,
                                                   opset=ONNX_OPSET)
    shared = share_transposed_initializers(model_proto)
    for value in list(model_proto.graph.input) + list(model_proto.graph.output):
        dims = value.type.tensor_type.shape.dim
        for dim, name in zip(dims, ("batch", "sequence")):
            if not dim.HasField("dim_value"):
                dim.dim_param = name
    onnx.checker.check_model(model_proto)
    onnx.save(model_proto, path)
    return {"opset": ONNX_OPSET, "transposed_copies_removed": shared}


def share_transposed_initializers(model_proto) -> int:
    """Replace each initializer that is another's transpose (what constant folding makes of ``transpose_b``) or
    an exact copy of another by a ``Transpose`` / ``Identity`` node reading that one; returns how many."""
    from onnx import helper, numpy_helper  # lazy: onnx (the export extra, on one branch)

    graph = model_proto.graph
    arrays = {init.name: numpy_helper.to_array(init) for init in graph.initializer}
    # The variables' own initializers first (tf2onnx names folded constants const_fold_opt__N): they are kept.
    order = sorted((n for n, a in arrays.items() if a.size >= 1024), key=lambda n: (n.startswith("const_fold"), n))
    by_content: Dict[Any, str] = {}
    replaced = []
    for name in order:
        array = arrays[name]
        key = (array.dtype.str, array.shape, array.tobytes())
        transposed = ((array.dtype.str, array.T.shape, np.ascontiguousarray(array.T).tobytes())
                      if array.ndim == 2 else None)
        if key in by_content:
            replaced.append((name, helper.make_node("Identity", [by_content[key]], [name], name=f"{name}_shared")))
        elif transposed in by_content:
            replaced.append((name, helper.make_node("Transpose", [by_content[transposed]], [name], perm=[1, 0],
                                                    name=f"{name}_shared")))
        else:
            by_content[key] = name
    if not replaced:
        return 0
    names = {name for name, _ in replaced}
    kept = [init for init in graph.initializer if init.name not in names]
    del graph.initializer[:]
    graph.initializer.extend(kept)
    nodes = [node for _, node in replaced] + list(graph.node)  # producers first: the graph stays sorted
    del graph.node[:]
    graph.node.extend(nodes)
    return len(replaced)


def run_onnx(path: str, feeds: Dict[str, np.ndarray]) -> Dict[str, np.ndarray]:
    """Run the ONNX file at ``path`` in onnxruntime (CPU) on ``feeds``; outputs by name."""
    import onnxruntime  # lazy: onnxruntime (the export extra, on one branch)

    session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(names, feeds)))


# ---------------------------------------------------------------------------------------------------------------------
# LiteRT
# ---------------------------------------------------------------------------------------------------------------------
def to_litert(function, path: str, trackable) -> Dict[str, Any]:
    """Write ``function`` as a LiteRT (TFLite) flatbuffer at ``path``, builtin ops only (no TF kernels: the
    ai-edge-litert interpreter has none); dynamic batch and sequence (the signature runner resizes)."""
    converter = tf.lite.TFLiteConverter.from_concrete_functions([function.get_concrete_function()], trackable)
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
    with open(path, "wb") as f:
        f.write(converter.convert())
    return {}


def run_litert(path: str, feeds: Dict[str, np.ndarray]) -> Dict[str, np.ndarray]:
    """Run the LiteRT file at ``path`` in ai-edge-litert's interpreter (its ``serving_default`` signature)."""
    from ai_edge_litert.interpreter import Interpreter  # lazy: ai_edge_litert (the export extra, on one branch)

    runner = Interpreter(model_path=path).get_signature_runner()
    return {name: np.asarray(value) for name, value in runner(**feeds).items()}


# ---------------------------------------------------------------------------------------------------------------------
# The command
# ---------------------------------------------------------------------------------------------------------------------
def probe_feeds(vocab_size: int, batch: int, length: int, seed: int = 0) -> Dict[str, np.ndarray]:
    """Random ids with a padded tail in the second row and two segments: the inputs a check runs."""
    rng = np.random.RandomState(seed)
    ids = rng.randint(0, vocab_size, size=(batch, length)).astype(np.int32)
    mask = np.ones_like(ids)
    if batch > 1 and length > 2:
        mask[1, length // 2:] = 0
    types = np.zeros_like(ids)
    types[:, length // 2:] = 1
    return {"input_word_ids": ids, "input_mask": mask, "input_type_ids": types}


def max_abs_diff(function, feeds: Dict[str, np.ndarray], outputs: Dict[str, np.ndarray]) -> Dict[str, float]:
    """max |exported - Keras| per output."""
    reference = function(**{k: tf.constant(v) for k, v in feeds.items()})
    return {name: float(np.max(np.abs(outputs[name] - reference[name].numpy()))) for name in reference}


def export_portable(kind: str, src: str, dst: str, with_mlm_head: bool = False) -> Dict[str, Any]:
    """Export the model in ``src`` (see :func:`find_albert_dir`) to ``dst`` (a new or empty local folder) as
    :data:`MODEL_FILES`\\ [kind] plus the vocabulary files; checks size and outputs (module docstring) and
    returns a JSON-able summary. Nothing is left in ``dst`` when it fails."""
    if kind not in KINDS:
        raise ValueError(f"Unknown export {kind!r}; choose one of {', '.join(KINDS)}")
    require_extra(kind)
    if os.path.exists(dst) and (not os.path.isdir(dst) or os.listdir(dst)):
        raise OutputExistsError(f"DST {dst} exists and is not an empty folder")
    albert_dir = find_albert_dir(src)
    model = load_albert_dir(albert_dir)
    if with_mlm_head and not isinstance(model, AlbertForPreTraining):
        raise InputError(f"{albert_dir} has an encoder checkpoint only (no pretraining/ckpt): export it without "
                         "--with-mlm-head")
    function = encoder_function(model, with_mlm_head)
    parent = os.path.dirname(os.path.abspath(dst))
    os.makedirs(parent, exist_ok=True)
    work = tempfile.mkdtemp(prefix=".portable-", dir=parent)
    try:
        path = os.path.join(work, MODEL_FILES[kind])
        start = time.perf_counter()
        details = to_onnx(function, path) if kind == "albert-to-onnx" else to_litert(function, path, model)
        seconds = time.perf_counter() - start
        file_bytes = os.path.getsize(path)
        weights = parameter_bytes(model, with_mlm_head)
        if file_bytes > MAX_SIZE_RATIO * weights:
            raise RuntimeError(f"{MODEL_FILES[kind]} is {file_bytes} bytes for {weights} bytes of variables "
                               f"(more than {MAX_SIZE_RATIO:g} x): a shared weight was copied")
        feeds = probe_feeds(model.config.vocab_size, 2, 9)
        outputs = (run_onnx if kind == "albert-to-onnx" else run_litert)(path, feeds)
        diffs = max_abs_diff(function, feeds, outputs)
        if max(diffs.values()) > TOLERANCE:
            raise RuntimeError(f"{MODEL_FILES[kind]} differs from the Keras model by {diffs} (> {TOLERANCE:g})")
        files = [MODEL_FILES[kind]] + _copy_vocabulary(albert_dir, work)
        if os.path.isdir(dst):
            os.rmdir(dst)
        os.replace(work, dst)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return {"kind": kind, "src": src, "dst": dst, "albert_dir": albert_dir, "files": files,
            "outputs": sorted(diffs), "inputs": list(INPUT_NAMES), "file_bytes": file_bytes,
            "parameter_bytes": weights, "size_ratio": round(file_bytes / weights, 4),
            "max_abs_diff": diffs, "conversion_seconds": round(seconds, 2), **details}


def _copy_vocabulary(albert_dir: str, dst: str) -> List[str]:
    """The vocabulary (``spm.model`` / ``vocab.txt``, ``tokenizer.json``), ``albert_config.json`` and
    ``export_info.json`` beside the model file: what a client needs to make the ids."""
    copied = []
    for name in VOCAB_FILES + (TOKENIZER_SPEC_FILE, CONFIG_FILE, EXPORT_INFO_FILE):
        if tf.io.gfile.exists(posixpath.join(albert_dir, name)):
            tf.io.gfile.copy(posixpath.join(albert_dir, name), os.path.join(dst, name))
            copied.append(name)
    return copied
