"""Checkpoint interoperability for :mod:`trainer.modeling_albert`.

1. **Official ALBERT TF1 checkpoints** (google-research/ALBERT, TF-Hub exports): variables are matched by *name*,
   e.g. ``bert/embeddings/word_embeddings``, ``bert/encoder/embedding_hidden_mapping_in/kernel``,
   ``bert/encoder/transformer/group_0/inner_group_0/attention_1/self/query/kernel``, ``cls/predictions/output_bias``,
   ``cls/seq_relationship/output_weights``. Any common prefix (TF-Hub: ``module/``) is detected automatically.
   Optimizer slots (``.../adam_m``, ``.../adam_v``) and ``global_step`` are ignored. Writing produces a plain
   name-based TF1 checkpoint (``SaveV2`` bundle + ``checkpoint`` state file) that the official code can
   ``init_from_checkpoint``.
2. **Hugging Face** ``transformers`` ``AlbertForPreTraining`` format: ``config.json`` + ``model.safetensors``
   (written / read with ``safetensors.numpy``, so no torch is needed). torch ``Linear`` weights are the
   transposes of the TF kernels. The tied decoder weight is not written (``transformers`` re-ties it on load).

Shapes follow the official code: q/k/v and attention-output kernels are stored 2-D (``[H, H]``), and
``cls/seq_relationship/output_weights`` is ``[2, H]`` (the transpose of our Dense kernel).

Only the sharing layouts that the official / Hugging Face code can express are supported: ``all``, ``groups`` and
``none`` (written as ``num_hidden_groups = L``). ``attention`` / ``ffn`` sharing raise ``ValueError``.

Missing or unexpected variables raise :class:`CheckpointMismatchError`, whose message lists them; with
``strict=False`` they are returned in the report instead.
"""
from __future__ import annotations

import json
import os
import re
from typing import Any, Dict, List, Mapping, Optional, Tuple, Union

import numpy as np
import tensorflow as tf
from safetensors.numpy import load_file, save_file

from config.errors import InputError, MissingInputError, UserError
from trainer.modeling_albert import AlbertConfig, AlbertForPreTraining, AlbertModel

__all__ = [
    "CheckpointMismatchError",
    "tf1_variable_map",
    "load_tf1_checkpoint",
    "save_tf1_checkpoint",
    "hf_variable_map",
    "hf_state_dict",
    "load_hf_state_dict",
    "config_to_hf_dict",
    "config_from_hf_dict",
    "save_hf_pretrained",
    "load_hf_pretrained",
    "read_hf_tensors",
    "hf_layout",
]

AnyAlbert = Union[AlbertModel, AlbertForPreTraining]

# (variable, transpose): the checkpoint tensor is variable.T when transpose is True.
VariableMap = Dict[str, Tuple[tf.Variable, bool]]

# Non-model entries found in official checkpoints (optimizer slots, step counters, loss-scale state).
_IGNORED_TF1 = [r"(^|/)global_step$", r"/adam_[mv]$", r"/lamb_[mv]$", r"/Adam(_\d+)?$", r"/Momentum$",
                r"(^|/)beta[12]_power$", r"^_CHECKPOINTABLE_OBJECT_GRAPH$", r"(^|/)(good_steps|loss_scale)$",
                r"/ExponentialMovingAverage$"]
# Non-parameter buffers found in Hugging Face state dicts.
_IGNORED_HF = [r"position_ids$", r"token_type_ids$", r"predictions\.decoder\.(weight|bias)$"]


class CheckpointMismatchError(UserError, ValueError):
    """The checkpoint and the model do not have the same variables (or shapes)."""

    def __init__(self, what: str, missing: List[str], unexpected: List[str], shape_mismatch: List[str],
                 hint: Optional[str] = "(pass strict=False to load what matches and get these lists back instead)"):
        self.what, self.missing, self.unexpected, self.shape_mismatch = what, missing, unexpected, shape_mismatch
        lines = [f"{what} does not match the model:"]
        for title, names in (("missing from the checkpoint", missing), ("unexpected in the checkpoint", unexpected),
                             ("shape mismatch", shape_mismatch)):
            if names:
                lines.append(f"  {len(names)} {title}:")
                lines.extend(f"    {n}" for n in names)
        if hint:
            lines.append(hint)
        super().__init__("\n".join(lines))


# ---------------------------------------------------------------------------------------------------------------------
# Shared helpers
# ---------------------------------------------------------------------------------------------------------------------
def _ensure_built(model: AnyAlbert) -> None:
    if isinstance(model, AlbertForPreTraining):
        if not (model.built and model.predictions.built):
            model(model.dummy_inputs(1, 4, 1))
    elif not model.built:
        model(model.dummy_inputs(1, 4))


def _parts(model: AnyAlbert):
    """(AlbertModel, AlbertForPreTraining or None)."""
    if isinstance(model, AlbertForPreTraining):
        return model.albert, model
    if isinstance(model, AlbertModel):
        return model, None
    raise TypeError(f"Expected AlbertModel or AlbertForPreTraining, got {type(model).__name__}")


def _check_layout(config: AlbertConfig) -> None:
    if config.layer_norm_position != "post":
        raise InputError(f"model.layer_norm_position={config.layer_norm_position} has no official / Hugging Face "
                         "checkpoint layout (both are post-LN)")
    if config.sharing not in ("all", "groups", "none"):
        raise InputError(f"model.sharing={config.sharing} has no official / Hugging Face checkpoint layout "
                         "(supported: 'all', 'groups', 'none')")


def _matches(patterns, name) -> bool:
    return any(re.search(p, name) for p in patterns)


def _assign_all(what: str, var_map: VariableMap, read, available: List[str], ignored_patterns,
                skipped_prefixes=(), strict: bool = True) -> Dict[str, Any]:
    """Assign every variable of ``var_map`` from ``read(name)``; report / raise on any mismatch."""
    available_set = set(available)
    missing = sorted(n for n in var_map if n not in available_set)
    unexpected, skipped = [], []
    for n in sorted(available_set - set(var_map)):
        if _matches(ignored_patterns, n):
            continue
        (skipped if any(n.startswith(p) for p in skipped_prefixes) else unexpected).append(n)
    values, shape_mismatch = {}, []
    for name, (var, transpose) in var_map.items():
        if name in available_set:
            value = np.asarray(read(name))
            if transpose:
                value = value.T
            if tuple(value.shape) != tuple(var.shape):
                shape_mismatch.append(f"{name}: checkpoint {tuple(np.asarray(read(name)).shape)}, "
                                      f"model {tuple(var.shape)}{' (transposed)' if transpose else ''}")
            else:
                values[name] = value
    if strict and (missing or unexpected or shape_mismatch):
        raise CheckpointMismatchError(what, missing, unexpected, shape_mismatch)
    for name, value in values.items():
        var = var_map[name][0]
        var.assign(value.astype(var.dtype.as_numpy_dtype))
    return {"loaded": sorted(values), "missing": missing, "unexpected": unexpected,
            "shape_mismatch": shape_mismatch, "skipped": skipped}


# ---------------------------------------------------------------------------------------------------------------------
# Official TF1 checkpoints
# ---------------------------------------------------------------------------------------------------------------------
def tf1_variable_map(model: AnyAlbert) -> VariableMap:
    """Official TF1 variable name -> (model variable, transpose) for every model variable."""
    _ensure_built(model)
    albert, pretraining = _parts(model)
    config = albert.config
    _check_layout(config)
    m: VariableMap = {}

    def dense(prefix, layer, transpose=False):
        m[f"{prefix}/kernel"] = (layer.kernel, transpose)
        m[f"{prefix}/bias"] = (layer.bias, False)

    def layer_norm(prefix, layer):
        m[f"{prefix}/gamma"] = (layer.gamma, False)
        m[f"{prefix}/beta"] = (layer.beta, False)

    emb = albert.embeddings
    m["bert/embeddings/word_embeddings"] = (emb.word_embeddings, False)
    m["bert/embeddings/token_type_embeddings"] = (emb.token_type_embeddings, False)
    m["bert/embeddings/position_embeddings"] = (emb.position_embeddings, False)
    layer_norm("bert/embeddings/LayerNorm", emb.LayerNorm)
    if emb.embedding_hidden_mapping_in is not None:
        dense("bert/encoder/embedding_hidden_mapping_in", emb.embedding_hidden_mapping_in)
    for g, group in enumerate(albert.encoder.groups):
        for j, block in enumerate(group.blocks):
            p = f"bert/encoder/transformer/group_{g}/inner_group_{j}"
            att, ffn = block.attention, block.ffn
            for part in ("query", "key", "value"):
                dense(f"{p}/attention_1/self/{part}", getattr(att, part))
            dense(f"{p}/attention_1/output/dense", att.dense)
            layer_norm(f"{p}/LayerNorm", att.LayerNorm)
            dense(f"{p}/ffn_1/intermediate/dense", ffn.intermediate)
            dense(f"{p}/ffn_1/intermediate/output/dense", ffn.output_dense)
            layer_norm(f"{p}/LayerNorm_1", ffn.LayerNorm_1)
    dense("bert/pooler/dense", albert.pooler)
    if pretraining is not None:
        head = pretraining.predictions
        dense("cls/predictions/transform/dense", head.dense)
        layer_norm("cls/predictions/transform/LayerNorm", head.LayerNorm)
        m["cls/predictions/output_bias"] = (head.output_bias, False)
        if pretraining.seq_relationship is not None:
            m["cls/seq_relationship/output_weights"] = (pretraining.seq_relationship.kernel, True)
            m["cls/seq_relationship/output_bias"] = (pretraining.seq_relationship.bias, False)
    return m


def _detect_prefix(names: List[str]) -> str:
    anchor = "bert/embeddings/word_embeddings"
    for n in sorted(names, key=len):
        if n.endswith(anchor):
            return n[: -len(anchor)]
    return ""


def load_tf1_checkpoint(model: AnyAlbert, checkpoint_path: str, strict: bool = True,
                        prefix: Optional[str] = None) -> Dict[str, Any]:
    """Load an official (or :func:`save_tf1_checkpoint`) TF1 checkpoint into ``model`` by variable name.

    ``checkpoint_path``: a checkpoint prefix (``.../model.ckpt-125000``) or a directory with a ``checkpoint`` file.
    ``prefix``: name prefix in the checkpoint (``"module/"`` for TF-Hub); detected when None.
    Loading into an :class:`AlbertModel` skips the ``cls/`` heads. Returns a report dict
    (``loaded``, ``missing``, ``unexpected``, ``shape_mismatch``, ``skipped``, ``prefix``).
    """
    if tf.io.gfile.isdir(checkpoint_path):
        latest = tf.train.latest_checkpoint(checkpoint_path)
        if latest is None:
            raise MissingInputError(f"No checkpoint found in directory {checkpoint_path}")
        checkpoint_path = latest
    try:
        reader = tf.train.load_checkpoint(checkpoint_path)
    except tf.errors.OpError as exc:  # a corrupt or truncated index, a missing data file
        raise InputError(f"{checkpoint_path}: not a readable TensorFlow checkpoint ({exc.message.splitlines()[0]})"
                         ) from None
    names = list(reader.get_variable_to_shape_map())
    if prefix is None:
        prefix = _detect_prefix(names)
    var_map = tf1_variable_map(model)
    stripped = [n[len(prefix):] for n in names if n.startswith(prefix)]
    other = [n for n in names if not n.startswith(prefix)]
    report = _assign_all(f"TF1 checkpoint {checkpoint_path!r} (prefix {prefix!r})", var_map,
                         lambda n: reader.get_tensor(prefix + n), stripped + other, _IGNORED_TF1,
                         skipped_prefixes=("cls/",) if isinstance(model, AlbertModel) else (), strict=strict)
    report["prefix"] = prefix
    return report


def save_tf1_checkpoint(model: AnyAlbert, checkpoint_prefix: str, prefix: str = "",
                        global_step: Optional[int] = None, write_config: bool = True) -> str:
    """Write ``model`` as a name-based TF1 checkpoint (official names, optional ``prefix`` such as ``module/``).

    Writes ``<checkpoint_prefix>.index`` / ``.data-00000-of-00001``, updates the directory's ``checkpoint`` state
    file (so ``tf.train.latest_checkpoint`` finds it) and, if ``write_config``, ``albert_config.json`` (official
    keys) next to it. Returns ``checkpoint_prefix``.
    """
    var_map = tf1_variable_map(model)
    names = sorted(var_map)
    tensors = []
    for n in names:
        var, transpose = var_map[n]
        value = tf.convert_to_tensor(var)
        tensors.append(tf.transpose(value) if transpose else value)
    full_names = [prefix + n for n in names]
    if global_step is not None:
        full_names.append("global_step")
        tensors.append(tf.constant(global_step, tf.int64))
    directory = os.path.dirname(checkpoint_prefix) or "."
    tf.io.gfile.makedirs(directory)
    tf.raw_ops.SaveV2(prefix=checkpoint_prefix, tensor_names=full_names,
                      shape_and_slices=[""] * len(full_names), tensors=tensors)
    tf.compat.v1.train.update_checkpoint_state(directory, os.path.basename(checkpoint_prefix))
    if write_config:
        _parts(model)[0].config.to_json_file(os.path.join(directory, "albert_config.json"), official=True)
    return checkpoint_prefix


# ---------------------------------------------------------------------------------------------------------------------
# Hugging Face (transformers AlbertForPreTraining) format
# ---------------------------------------------------------------------------------------------------------------------
_HF_ACT_FROM_OURS = {"gelu_new": "gelu_new", "gelu": "gelu_new", "gelu_tanh": "gelu_new", "gelu_exact": "gelu",
                     "relu": "relu", "tanh": "tanh", "linear": "linear"}
_HF_ACT_TO_OURS = {"gelu_new": "gelu_new", "gelu_pytorch_tanh": "gelu_new", "gelu_fast": "gelu_new",
                   "gelu": "gelu_exact", "relu": "relu", "tanh": "tanh", "linear": "linear"}


def hf_variable_map(model: AnyAlbert) -> VariableMap:
    """``transformers`` parameter name -> (model variable, transpose). Without a projection (E == H, official
    layout) ``albert.encoder.embedding_hidden_mapping_in`` is absent here; :func:`hf_state_dict` writes an
    identity for it because ``transformers`` always has one."""
    _ensure_built(model)
    albert, pretraining = _parts(model)
    _check_layout(albert.config)
    base = "albert." if pretraining is not None else ""
    m: VariableMap = {}

    def linear(prefix, layer):
        m[f"{prefix}.weight"] = (layer.kernel, True)
        m[f"{prefix}.bias"] = (layer.bias, False)

    def layer_norm(prefix, layer):
        m[f"{prefix}.weight"] = (layer.gamma, False)
        m[f"{prefix}.bias"] = (layer.beta, False)

    emb = albert.embeddings
    m[f"{base}embeddings.word_embeddings.weight"] = (emb.word_embeddings, False)
    m[f"{base}embeddings.position_embeddings.weight"] = (emb.position_embeddings, False)
    m[f"{base}embeddings.token_type_embeddings.weight"] = (emb.token_type_embeddings, False)
    layer_norm(f"{base}embeddings.LayerNorm", emb.LayerNorm)
    if emb.embedding_hidden_mapping_in is not None:
        linear(f"{base}encoder.embedding_hidden_mapping_in", emb.embedding_hidden_mapping_in)
    for g, group in enumerate(albert.encoder.groups):
        for j, block in enumerate(group.blocks):
            p = f"{base}encoder.albert_layer_groups.{g}.albert_layers.{j}"
            att, ffn = block.attention, block.ffn
            for part in ("query", "key", "value", "dense"):
                linear(f"{p}.attention.{part}", getattr(att, part))
            layer_norm(f"{p}.attention.LayerNorm", att.LayerNorm)
            linear(f"{p}.ffn", ffn.intermediate)
            linear(f"{p}.ffn_output", ffn.output_dense)
            layer_norm(f"{p}.full_layer_layer_norm", ffn.LayerNorm_1)
    linear(f"{base}pooler", albert.pooler)
    if pretraining is not None:
        head = pretraining.predictions
        linear("predictions.dense", head.dense)
        layer_norm("predictions.LayerNorm", head.LayerNorm)
        m["predictions.bias"] = (head.output_bias, False)
        if pretraining.seq_relationship is not None:
            linear("sop_classifier.classifier", pretraining.seq_relationship)
    return m


def hf_state_dict(model: AnyAlbert) -> Dict[str, np.ndarray]:
    """float32 numpy state dict with ``transformers`` names (contiguous arrays, ready for safetensors)."""
    out = {}
    for name, (var, transpose) in hf_variable_map(model).items():
        value = var.numpy()
        out[name] = np.ascontiguousarray(value.T if transpose else value, dtype=np.float32)
    albert, pretraining = _parts(model)
    if albert.embeddings.embedding_hidden_mapping_in is None:
        base = "albert." if pretraining is not None else ""
        h = albert.config.hidden_size
        out[f"{base}encoder.embedding_hidden_mapping_in.weight"] = np.eye(h, dtype=np.float32)
        out[f"{base}encoder.embedding_hidden_mapping_in.bias"] = np.zeros(h, np.float32)
    return out


def load_hf_state_dict(model: AnyAlbert, tensors: Mapping[str, np.ndarray], strict: bool = True) -> Dict[str, Any]:
    """Assign a ``transformers``-named state dict (numpy arrays) to ``model``. Returns the load report."""
    var_map = hf_variable_map(model)
    albert, pretraining = _parts(model)
    ignored = list(_IGNORED_HF)
    if albert.embeddings.embedding_hidden_mapping_in is None:
        # Accept an identity projection (what hf_state_dict writes for E == H without projection).
        base = "albert." if pretraining is not None else ""
        w = tensors.get(f"{base}encoder.embedding_hidden_mapping_in.weight")
        b = tensors.get(f"{base}encoder.embedding_hidden_mapping_in.bias")
        if w is not None:
            if not (np.array_equal(w, np.eye(w.shape[0], dtype=w.dtype)) and b is not None and not np.any(b)):
                raise InputError("The checkpoint has a non-identity embedding_hidden_mapping_in but the model has no "
                                 "projection; set \"embedding_projection\": true in its albert_config.json")
            ignored.append(r"encoder\.embedding_hidden_mapping_in\.(weight|bias)$")
    report = _assign_all("Hugging Face state dict", var_map, lambda n: tensors[n], list(tensors), ignored,
                         skipped_prefixes=("predictions.", "sop_classifier.") if pretraining is None else (),
                         strict=strict)
    decoder = tensors.get("predictions.decoder.weight")
    if pretraining is not None and decoder is not None and not np.allclose(
            decoder, albert.embeddings.word_embeddings.numpy(), rtol=0, atol=0):
        raise InputError("model.safetensors: predictions.decoder.weight differs from the word embeddings; this model "
                         "ties them")
    return report


def config_to_hf_dict(config: AlbertConfig) -> Dict[str, Any]:
    """``transformers`` ``AlbertConfig`` dict (``config.json``); our own config is kept under ``albert_tfx``."""
    _check_layout(config)
    if config.hidden_act not in _HF_ACT_FROM_OURS:
        raise InputError(f"albert_config.json: hidden_act {config.hidden_act!r} has no Hugging Face name")
    return {
        "architectures": ["AlbertForPreTraining"],
        "model_type": "albert",
        "vocab_size": config.vocab_size,
        "embedding_size": config.embedding_size,
        "hidden_size": config.hidden_size,
        "num_hidden_layers": config.num_hidden_layers,
        "num_hidden_groups": config.num_groups,
        "num_attention_heads": config.num_attention_heads,
        "intermediate_size": config.intermediate_size,
        "inner_group_num": config.inner_group_num,
        "hidden_act": _HF_ACT_FROM_OURS[config.hidden_act],
        "hidden_dropout_prob": config.hidden_dropout_prob,
        "attention_probs_dropout_prob": config.attention_probs_dropout_prob,
        "max_position_embeddings": config.max_position_embeddings,
        "type_vocab_size": config.type_vocab_size,
        "initializer_range": config.initializer_range,
        "layer_norm_eps": config.layer_norm_eps,
        "classifier_dropout_prob": 0.1,
        "position_embedding_type": "absolute",
        "pad_token_id": 0,
        "bos_token_id": 2,
        "eos_token_id": 3,
        "albert_tfx": config.to_dict(),
    }


def config_from_hf_dict(d: Mapping[str, Any]) -> AlbertConfig:
    """Our config from a ``transformers`` ``config.json`` dict (exact when written by :func:`config_to_hf_dict`).

    A foreign file always gets ``embedding_projection=True`` (transformers always projects)."""
    if "albert_tfx" in d:
        return AlbertConfig.from_dict(d["albert_tfx"])
    groups, layers = int(d.get("num_hidden_groups", 1)), int(d["num_hidden_layers"])
    act = d.get("hidden_act", "gelu_new")
    if act not in _HF_ACT_TO_OURS:
        raise InputError(f"config.json: unsupported Hugging Face hidden_act {act!r}")
    if d.get("position_embedding_type", "absolute") != "absolute":
        raise InputError(f"config.json: unsupported position_embedding_type {d['position_embedding_type']!r}")
    return AlbertConfig(
        vocab_size=int(d["vocab_size"]), embedding_size=int(d["embedding_size"]), hidden_size=int(d["hidden_size"]),
        num_hidden_layers=layers, num_attention_heads=int(d["num_attention_heads"]),
        intermediate_size=int(d["intermediate_size"]), hidden_act=_HF_ACT_TO_OURS[act],
        hidden_dropout_prob=float(d.get("hidden_dropout_prob", 0.0)),
        attention_probs_dropout_prob=float(d.get("attention_probs_dropout_prob", 0.0)),
        max_position_embeddings=int(d.get("max_position_embeddings", 512)),
        type_vocab_size=int(d.get("type_vocab_size", 2)), initializer_range=float(d.get("initializer_range", 0.02)),
        layer_norm_eps=float(d.get("layer_norm_eps", 1e-12)),
        sharing="all" if groups == 1 else "groups", num_hidden_groups=groups,
        inner_group_num=int(d.get("inner_group_num", 1)), embedding_projection=True)


def save_hf_pretrained(model: AnyAlbert, directory: str) -> Dict[str, str]:
    """Write ``config.json`` + ``model.safetensors`` (``transformers`` names, float32, metadata format "pt")."""
    tensors = hf_state_dict(model)  # first: a model with no Hugging Face layout fails before any file is written
    hf_config = config_to_hf_dict(_parts(model)[0].config)
    tf.io.gfile.makedirs(directory)
    config_path = os.path.join(directory, "config.json")
    weights_path = os.path.join(directory, "model.safetensors")
    with open(config_path, "w") as f:
        json.dump(hf_config, f, indent=2, sort_keys=True)
        f.write("\n")
    save_file(tensors, weights_path, metadata={"format": "pt"})
    return {"config": config_path, "weights": weights_path}


def read_hf_tensors(directory: str) -> Dict[str, np.ndarray]:
    """All tensors of a Hugging Face model directory: ``model.safetensors`` or a sharded
    ``model.safetensors.index.json``. A directory with only ``pytorch_model.bin`` gets a clear error (reading it
    would need torch)."""
    def load(path: str) -> Dict[str, np.ndarray]:
        if not os.path.exists(path):
            raise MissingInputError(f"{path} does not exist (named by {index})")
        try:
            return load_file(path)
        except Exception as exc:  # SafetensorError has no stable import path across versions
            raise InputError(f"{path}: not a valid safetensors file ({exc})") from None

    single = os.path.join(directory, "model.safetensors")
    index = os.path.join(directory, "model.safetensors.index.json")
    if os.path.exists(single):
        return load(single)
    if os.path.exists(index):
        try:
            with open(index, encoding="utf-8") as f:
                shards = sorted(set(json.load(f)["weight_map"].values()))
        except (ValueError, KeyError, TypeError, AttributeError) as exc:  # not JSON / UTF-8, no weight_map object
            raise InputError(f"{index}: not a safetensors index ({type(exc).__name__}: {exc})") from None
        tensors: Dict[str, np.ndarray] = {}
        for shard in shards:
            tensors.update(load(os.path.join(directory, shard)))
        return tensors
    if os.path.exists(os.path.join(directory, "pytorch_model.bin")):
        raise MissingInputError(f"{directory} has only pytorch_model.bin; re-save it with safetensors first "
                                "(transformers: `model.save_pretrained(dir, safe_serialization=True)`)")
    raise MissingInputError(f"No model.safetensors (or model.safetensors.index.json) in {directory}")


def hf_layout(tensors: Mapping[str, np.ndarray]) -> Dict[str, Any]:
    """What a ``transformers`` ALBERT state dict holds: ``prefix`` of the encoder (``"albert."`` for task models,
    ``""`` for a bare ``AlbertModel``), ``mlm`` (``predictions.*`` present), ``sentence_task`` (``"sop"`` when
    ``sop_classifier.*`` is present, else None) and ``other`` (tensors of other task heads)."""
    prefixed = any(n.startswith("albert.") for n in tensors)
    mlm = any(n.startswith("predictions.") for n in tensors)
    sop = any(n.startswith("sop_classifier.") for n in tensors)
    known = ("albert.", "predictions.", "sop_classifier.") if prefixed else ("embeddings.", "encoder.", "pooler.")
    other = sorted(n for n in tensors if not n.startswith(known))
    return {"prefix": "albert." if prefixed else "", "mlm": mlm, "sentence_task": "sop" if sop else None,
            "other": other}


def load_hf_pretrained(directory: str, model: Optional[AnyAlbert] = None, sentence_task: Optional[str] = "sop",
                       strict: bool = True) -> AnyAlbert:
    """Read ``config.json`` + ``model.safetensors`` from ``directory`` into ``model`` (or a new
    :class:`AlbertForPreTraining` built from the config). ``sentence_task="auto"``: an SOP head iff the file has
    ``sop_classifier.*`` (Hugging Face's ``AlbertForMaskedLM`` checkpoints have none). Returns the model."""
    with open(os.path.join(directory, "config.json")) as f:
        config = config_from_hf_dict(json.load(f))
    tensors = read_hf_tensors(directory)
    if model is None:
        if sentence_task == "auto":
            sentence_task = hf_layout(tensors)["sentence_task"]
        model = AlbertForPreTraining(config, sentence_task=sentence_task)
    load_hf_state_dict(model, tensors, strict=strict)
    return model
