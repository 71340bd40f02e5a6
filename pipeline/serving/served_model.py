"""What ``serve`` and ``predict`` load: a model folder as named methods that take checked instances.

Two kinds of folder (docs/serving.md, "What a model folder holds"):

* **a pushed version** (``<releases>/<N>``): its ids SavedModel at the top (``serving_default``: ``input_ids``,
  ``input_mask``, ``segment_ids``) and ``vocab/`` (``spm.model`` or ``vocab.txt``, and ``tokenizer.json``), and, in
  versions pushed with raw-text serving, ``text_model/``: a SavedModel whose signatures ``embed`` ({text} →
  {pooled_output}) and ``fill_mask`` ({text} → {tokens, scores, token_ids}, [B, masks, k]) tokenize in the graph.
  Its signatures are the version's methods. A version without ``text_model/`` gets ``embed`` and ``fill_mask`` by
  the *ids path*: the project's tokenizer (components/text) from ``vocab/`` in Python, then the ids signature; the
  answer says so (``"path": "ids"``).
* **a task model** (``<TASK>/serving_model``, or the ``<TASK>`` folder above it): a SavedModel whose
  ``serving_default`` takes raw text, with ``serving_info.json`` (``kind``: classify | answer | choose, ``inputs``,
  ``outputs``) where its exporter wrote one; without it, a model taking ``text_a`` [``text_b``] and answering
  ``class_ids`` is a classify model (the GLUE export, components/evaluation/glue/transform.py).

Every method is read from its signature's ``structured_input_signature`` (names, dtypes, shapes), so whatever those
exporters add is served without a change here. Paths go through ``tf.io.gfile``: ``gs://`` works as a folder does
(Vertex AI hands the model over as ``AIP_STORAGE_URI``, a ``gs://`` folder).
"""
from __future__ import annotations

import json
import posixpath
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import tensorflow as tf

from config.errors import InputError, MissingInputError
from pipeline.serving.serving_instances import InputSpec, RequestError, rows
from trainer.files import SPM_FILE, TOKENIZER_SPEC_FILE, VOCAB_FILES

__all__ = ["Method", "ServedModel", "Folder", "inspect", "load", "input_order", "signature_method", "TEXT_MODEL_DIR",
           "SERVING_DIR", "SERVING_INFO", "MASK_TOKEN", "TOP_K"]

TEXT_MODEL_DIR = "text_model"  # a pushed version's raw-text SavedModel (embed, fill_mask)
SERVING_DIR = "serving_model"  # <TASK>/serving_model: a task model's raw-text SavedModel
SERVING_INFO = "serving_info.json"
VOCAB_DIR = "vocab"
MASK_TOKEN = "[MASK]"  # the mask token of both vocabulary kinds (VocabGen's id 4; BERT's vocab.txt)
TOP_K = 5  # fill_mask by the ids path: the k most likely tokens per mask (TF Hub / HF fill-mask's default)
# The order positional `predict` arguments fill a method's inputs in, where serving_info.json gives none: SQuAD's
# question before its context; multiple choice's context, question, then the options (RACE's and C3's order).
INPUT_ORDER = ("text", "text_a", "text_b", "question", "context", "options")
CHOICE_ORDER = ("context", "question", "options")
_INTERNAL_SIGNATURES = ("serve_tf_examples",)  # serialized tf.Examples: not a JSON client's input


@dataclass
class Method:
    """One callable of a model: its inputs (in positional order), and ``run(batch, count)`` → ``count`` rows."""

    name: str
    inputs: Tuple[InputSpec, ...]
    run: Callable[[Dict[str, np.ndarray], int], List[Dict[str, Any]]]
    source: str  # what it runs, for /health and messages ("text_model/ signature fill_mask", "ids path")
    mask_token: Optional[str] = None  # fill_mask: every text must hold it
    # A text that does not fit the model's sequence: raises a RequestError naming the field (:func:`fits_rule`);
    # None where the model reads any length by design (SQuAD's windows over a context, RACE's truncated article).
    fits: Optional[Callable[[int, Dict[str, np.ndarray]], None]] = None

    def check(self, index: int, arrays: Dict[str, np.ndarray], truncate: bool = False) -> None:
        """Checks beyond the signature's dtypes and shapes: a fill_mask text without the mask token, and (unless
        ``truncate``: ``serve`` / ``predict --truncate``) texts whose pieces do not fit the model's sequence."""
        if self.fits is not None and not truncate:
            self.fits(index, arrays)
        if self.mask_token is None:
            return
        for name, array in arrays.items():
            for text in np.asarray(array).reshape(-1):
                if self.mask_token.encode() not in text:
                    raise RequestError(f"instances[{index}].{name}", f"no {self.mask_token} in the text: "
                                       f"{self.name} predicts the tokens at {self.mask_token}")


def fits_rule(count: Callable[[List[bytes]], Sequence[int]], limit: int, fields: Sequence[str], specials: int,
              what: str, mask_token: Optional[str] = None) -> Callable[[int, Dict[str, np.ndarray]], None]:
    """A check that the pieces of ``fields`` (those present), counted by ``count`` (the model's own tokenizer), plus
    ``specials`` ([CLS], [SEP]) fit ``limit`` (``what`` names it); a ``mask_token`` counts as one piece."""
    def pieces(text: bytes) -> int:
        if mask_token is None:
            return int(count([text])[0])
        parts = text.split(mask_token.encode())
        return len(parts) - 1 + sum(int(n) for n in count([p for p in parts if p.strip()])) if parts else 0

    def fits(index: int, arrays: Dict[str, np.ndarray]) -> None:
        present = [f for f in fields if f in arrays]
        total = specials + sum(pieces(t) for f in present for t in np.asarray(arrays[f]).reshape(-1))
        if total > limit:
            raise RequestError(f"instances[{index}].{'+'.join(present)}",
                               f"{total} pieces (with {specials} special tokens) do not fit the model's {what} of "
                               f"{limit}; shorten the text, or serve/predict with --truncate to cut it as "
                               "training does")
    return fits


def graph_counter(saved) -> Optional[Callable[[List[bytes]], Sequence[int]]]:
    """Pieces per text by the SavedModel's own tokenizer (``saved.tokenizer.tokenize``: every raw-text model this
    project exports saves its GraphTokenizer), or None for a model without one."""
    tokenize = getattr(getattr(saved, "tokenizer", None), "tokenize", None)
    if tokenize is None:
        return None
    return lambda texts: tokenize(tf.constant(texts, tf.string)).row_lengths().numpy() if texts else []


def _task_fits(kind: str, info: Dict[str, Any], count) -> Optional[Callable[[int, Dict[str, np.ndarray]], None]]:
    """The length rule of a task model: a classification pair must fit ``max_seq_length`` as in fine-tuning; a
    question its ``max_query_length``. Contexts of answer and choose models are read at any length (windows,
    truncation of the article), as the benchmarks read them."""
    if count is None:
        return None
    if kind == "classify" and info.get("max_seq_length"):
        return _pair_rule(count, int(info["max_seq_length"]))
    if kind == "answer" and info.get("max_query_length"):
        return fits_rule(count, int(info["max_query_length"]), ("question",), 0, "max_query_length")
    return None


def _pair_rule(count, seq: int):
    single, pair = (fits_rule(count, seq, ("text_a", "text_b"), n, "max_seq_length") for n in (2, 3))
    return lambda index, arrays: (pair if "text_b" in arrays else single)(index, arrays)


@dataclass
class ServedModel:
    path: str
    kind: str  # "version" | "classify" | "answer" | "choose" | "saved_model"
    methods: Dict[str, Method]
    default: str
    info: Dict[str, Any] = field(default_factory=dict)

    def method(self, name: Optional[str]) -> Method:
        name = name or self.default
        if name not in self.methods:
            raise RequestError("signature_name", f"{name!r} is not served (this model serves "
                               f"{', '.join(sorted(self.methods))})")
        return self.methods[name]

    def describe(self) -> Dict[str, Any]:
        return {"model": self.path, "kind": self.kind, "default": self.default,
                "methods": {name: {"inputs": [i.describe() for i in m.inputs], "source": m.source}
                            for name, m in sorted(self.methods.items())}}


@dataclass(frozen=True)
class Folder:
    """What a model folder is, read from its files alone (no graph loaded): ``kind`` ("version", or a task
    model's ``serving_info.json`` kind, "" when it has none), the folder to load, its serving_info.json."""

    path: str
    kind: str
    info: Dict[str, Any]


def inspect(path: str) -> Folder:
    """The folder ``path`` as :class:`Folder`, or a MissingInputError naming what is missing (before any load)."""
    path = path.rstrip("/")
    if not tf.io.gfile.isdir(path):
        raise MissingInputError(f"--model {path} is not a folder (a pushed version or a <TASK>/serving_model)")
    if _exists(path, SERVING_DIR, "saved_model.pb"):
        path = posixpath.join(path, SERVING_DIR)
    if _exists(path, VOCAB_DIR) or _exists(path, TEXT_MODEL_DIR) or _exists(path, "release.json"):
        _vocabulary(path)
        if not _exists(path, "saved_model.pb") and not _exists(path, TEXT_MODEL_DIR, "saved_model.pb"):
            raise MissingInputError(f"--model {path} holds neither the ids SavedModel (saved_model.pb) nor "
                                    f"{TEXT_MODEL_DIR}/: is it a pushed version folder?")
        return Folder(path, "version", {})
    if not _exists(path, "saved_model.pb"):
        raise MissingInputError(f"--model {path} holds no SavedModel (saved_model.pb), no {TEXT_MODEL_DIR}/ and no "
                                f"{SERVING_DIR}/: give a pushed version folder or a task's {SERVING_DIR}")
    info = _read_json(posixpath.join(path, SERVING_INFO)) if _exists(path, SERVING_INFO) else {}
    return Folder(path, str(info.get("kind") or ""), info)


def load(path: str) -> ServedModel:
    """The model folder ``path`` (a pushed version or a task model), or a MissingInputError naming what is missing."""
    import tensorflow_text  # noqa: F401  # lazy: tensorflow_text (registers the tokenizer ops a text graph holds)

    folder = inspect(path)
    return _version(folder.path) if folder.kind == "version" else _task_model(folder.path, folder.info)


def _exists(*parts: str) -> bool:
    return tf.io.gfile.exists(posixpath.join(*parts))


def _read_json(path: str) -> Dict[str, Any]:
    try:
        with tf.io.gfile.GFile(path) as f:
            return json.load(f)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: not a JSON file ({exc})") from None


def _task_model(path: str, info: Dict[str, Any]) -> ServedModel:
    saved = tf.saved_model.load(path)
    order = input_order(info)
    methods = {name: signature_method(name, fn, f"signature {name}", order)
               for name, fn in saved.signatures.items() if name not in _INTERNAL_SIGNATURES}
    if "serving_default" not in methods:
        raise MissingInputError(f"--model {path}: its SavedModel has no serving_default signature")
    kind = info.get("kind") or _infer_kind(saved.signatures["serving_default"])
    methods["serving_default"].fits = _task_fits(kind, info, graph_counter(saved))
    model = ServedModel(path, kind, methods, "serving_default", info)
    model._saved = saved  # keeps the graph's resources alive as long as the methods
    return model


def _infer_kind(fn) -> str:
    inputs = set(fn.structured_input_signature[1])
    outputs = set(fn.structured_outputs)
    if inputs and inputs <= {"text_a", "text_b"} and "class_ids" in outputs:
        return "classify"
    return "saved_model"


def input_order(info: Dict[str, Any]) -> List[str]:
    """The inputs' order: serving_info.json's ``inputs`` (names, or objects with a ``name``), then the fallback."""
    declared = info.get("inputs") or []
    if isinstance(declared, dict):
        declared = list(declared)
    names = [d["name"] if isinstance(d, dict) else str(d) for d in declared]
    fallback = CHOICE_ORDER + INPUT_ORDER if info.get("kind") == "choose" else INPUT_ORDER
    return names + [n for n in dict.fromkeys(fallback) if n not in names]


def signature_method(name: str, fn, source: str, order: Sequence[str] = INPUT_ORDER,
                     mask_token: Optional[str] = None) -> Method:
    """A method calling the concrete function ``fn``, its inputs read from ``structured_input_signature``."""
    _, kwargs = fn.structured_input_signature
    specs = []
    for key, spec in kwargs.items():
        shape = tuple(spec.shape.as_list()[1:]) if spec.shape.rank else ()
        specs.append(InputSpec(key, spec.dtype.name, shape))
    rank = {n: i for i, n in enumerate(order)}
    specs.sort(key=lambda s: (rank.get(s.name, len(rank)), s.name))

    def run(batch: Dict[str, np.ndarray], count: int) -> List[Dict[str, Any]]:
        outputs = fn(**{key: tf.constant(value, dtype=kwargs[key].dtype) for key, value in batch.items()})
        out = rows({k: v.numpy() for k, v in outputs.items()}, count)
        if mask_token is not None:  # [B, M, K] padded to the batch's most masks: each text keeps its own
            for row, text in zip(out, next(iter(batch.values()))):
                masks = text.count(mask_token.encode())
                for key in ("tokens", "scores", "token_ids"):
                    if isinstance(row.get(key), list):
                        row[key] = row[key][:masks]
        return out

    return Method(name, tuple(specs), run, source, mask_token)


# -- a pushed version -------------------------------------------------------------------------------------------
def _version(path: str) -> ServedModel:
    tokenizer = _tokenizer(path)
    methods: Dict[str, Method] = {}
    if _exists(path, "saved_model.pb"):
        ids_model = tf.saved_model.load(path)
        ids_fn = ids_model.signatures["serving_default"]
        methods["serving_default"] = signature_method("serving_default", ids_fn, "ids SavedModel serving_default")
        seq = _sequence_length(path)
        methods["embed"] = _ids_embed(ids_fn, tokenizer, seq)
        methods["fill_mask"] = _ids_fill_mask(ids_fn, tokenizer, seq)
        count = lambda texts: [len(tokenizer.encode(t.decode("utf-8"))) for t in texts]  # noqa: E731
        methods["embed"].fits = fits_rule(count, seq, ("text",), 2, "sequence")
        methods["fill_mask"].fits = fits_rule(count, seq, ("text",), 2, "sequence", MASK_TOKEN)
    else:
        ids_model = None
    text_model = None
    if _exists(path, TEXT_MODEL_DIR, "saved_model.pb"):
        text_model = tf.saved_model.load(posixpath.join(path, TEXT_MODEL_DIR))
        count = graph_counter(text_model)
        length = getattr(text_model, "seq_length", None)
        for name, fn in text_model.signatures.items():
            mask = MASK_TOKEN if name == "fill_mask" else None
            methods[name] = signature_method(name, fn, f"{TEXT_MODEL_DIR}/ signature {name}", mask_token=mask)
            if count is not None and length is not None:
                methods[name].fits = fits_rule(count, int(length.numpy()), ("text",), 2, "sequence", mask)
    model = ServedModel(path, "version", methods, "embed" if "embed" in methods else sorted(methods)[0])
    model._saved = (ids_model, text_model)
    return model


def _vocabulary(path: str) -> str:
    """The version's vocabulary file (``vocab/spm.model`` or ``vocab/vocab.txt``), or a MissingInputError."""
    folder = posixpath.join(path, VOCAB_DIR)
    for name in VOCAB_FILES:
        vocab = posixpath.join(folder, name)
        if tf.io.gfile.exists(vocab):
            return vocab
    raise MissingInputError(f"--model {path}: {folder} holds no vocabulary ({' or '.join(VOCAB_FILES)}); a "
                            f"pushed version carries the one it was trained with")


def _tokenizer(path: str):
    """The project's tokenizer of the version's ``vocab/`` (its spec from ``tokenizer.json``, else English's)."""
    from components.text.tokenizers import TokenizerSpec, load_tokenizer  # lazy: sentencepiece (0.01 s)

    vocab = _vocabulary(path)
    folder = posixpath.dirname(vocab)
    spec_path = posixpath.join(folder, TOKENIZER_SPEC_FILE)
    spec_text = tf.io.gfile.GFile(spec_path).read() if tf.io.gfile.exists(spec_path) else None
    export_info = posixpath.join(path, "checkpoint", "export_info.json")
    lower = _read_json(export_info).get("do_lower_case", True) if tf.io.gfile.exists(export_info) else True
    spec = TokenizerSpec.from_json(spec_text, do_lower_case=lower)
    if spec_text is None and posixpath.basename(vocab) != SPM_FILE:
        spec = TokenizerSpec(kind="wordpiece", do_lower_case=bool(lower), normalization="none")
    with tf.io.gfile.GFile(vocab, "rb") as f:
        return load_tokenizer(f.read(), spec, vocab)


def _sequence_length(path: str) -> int:
    """The ids path's sequence: the model's position embeddings (512 unless its config says otherwise)."""
    config = posixpath.join(path, "checkpoint", "albert_config.json")
    return int(_read_json(config).get("max_position_embeddings", 512)) if tf.io.gfile.exists(config) else 512


def _pack(tokenizer, texts: Sequence[bytes], seq: int, mask: bool) -> Tuple[np.ndarray, np.ndarray]:
    """[CLS] ids [SEP] per text (truncated to ``seq``; ``mask``: ``[MASK]`` spelled out becomes the mask id),
    padded to the batch's longest: (input_ids, input_mask)."""
    cls, sep = tokenizer.piece_to_id("[CLS]"), tokenizer.piece_to_id("[SEP]")
    mask_id = tokenizer.piece_to_id(MASK_TOKEN)
    packed = []
    for raw in texts:
        text = raw.decode("utf-8")
        parts = text.split(MASK_TOKEN) if mask else [text]
        ids: List[int] = []
        for i, part in enumerate(parts):
            if i:
                ids.append(mask_id)
            ids += tokenizer.encode(part) if part.strip() else []
        packed.append([cls] + ids[:seq - 2] + [sep])
    width = max(len(p) for p in packed)
    input_ids = np.zeros((len(packed), width), np.int32)
    input_mask = np.zeros((len(packed), width), np.int32)
    for i, p in enumerate(packed):
        input_ids[i, :len(p)] = p
        input_mask[i, :len(p)] = 1
    return input_ids, input_mask


def _call_ids(ids_fn, input_ids, input_mask) -> Dict[str, np.ndarray]:
    out = ids_fn(input_ids=tf.constant(input_ids), input_mask=tf.constant(input_mask),
                 segment_ids=tf.zeros_like(tf.constant(input_ids)))
    return {k: v.numpy() for k, v in out.items()}


def _ids_embed(ids_fn, tokenizer, seq: int) -> Method:
    def run(batch, count):
        input_ids, input_mask = _pack(tokenizer, batch["text"], seq, mask=False)
        pooled = _call_ids(ids_fn, input_ids, input_mask)["pooled_output"]
        return [{"pooled_output": pooled[i].tolist(), "path": "ids"} for i in range(count)]

    return Method("embed", (InputSpec("text", "string"),), run, "ids path: vocab/ tokenizer + ids SavedModel")


def _ids_fill_mask(ids_fn, tokenizer, seq: int) -> Method:
    mask_id = tokenizer.piece_to_id(MASK_TOKEN)

    def run(batch, count):
        input_ids, input_mask = _pack(tokenizer, batch["text"], seq, mask=True)
        logits = _call_ids(ids_fn, input_ids, input_mask)["mlm_logits"]
        out = []
        for i in range(count):
            positions = np.flatnonzero(input_ids[i] == mask_id)
            probs = tf.nn.softmax(logits[i, positions], axis=-1).numpy()
            top = np.argsort(-probs, axis=-1, kind="stable")[:, :TOP_K]
            out.append({"tokens": [tokenizer.convert_ids_to_pieces(row.tolist()) for row in top],
                        "scores": [probs[m, row].tolist() for m, row in enumerate(top)],
                        "token_ids": top.tolist(), "path": "ids"})
        return out

    return Method("fill_mask", (InputSpec("text", "string"),), run, "ids path: vocab/ tokenizer + ids SavedModel",
                  mask_token=MASK_TOKEN)
