"""Checkpoint conversion for the ``albert-pipeline convert`` command.

Kinds (``convert(kind, src, dst)``):

``hf-to-albert``   a Hugging Face ALBERT directory (``config.json`` + ``model.safetensors``, optional
                   ``spiece.model``) -> this project's format in ``dst``.
``albert-to-hf``   this project's albert directory -> a Hugging Face directory (``config.json``,
                   ``model.safetensors``, ``spiece.model`` + ``tokenizer_config.json`` when the SentencePiece model
                   is there) that ``transformers.AlbertForPreTraining.from_pretrained(dst)`` loads.
``tf1-to-albert``  an official TF1 release directory (``albert_config.json`` + ``model.ckpt-*``, optional
                   ``*.model`` SentencePiece file; TF-Hub ``module/`` prefixes are detected) -> this project's
                   format in ``dst``.

"This project's format" is what :func:`trainer.export.export` writes for the pipeline's ``albert`` directory:
``albert_config.json`` (official keys), ``encoder/ckpt`` (what fine-tuning restores), ``pretraining/ckpt`` (the
whole pretraining model), ``spm.model`` and ``export_info.json``; plus the serving SavedModel (token ids in;
sequence/pooled outputs, MLM and sentence logits out), written to ``dst/serving`` here (the pipeline keeps it in
``Format-Serving`` beside ``albert``).

A source that has only the encoder (a bare ``AlbertModel`` or a task model from Hugging Face, a TF1 checkpoint
without ``cls/``) converts to ``encoder/ckpt`` only: no pretraining checkpoint and no SavedModel, said in the
result. Missing or unexpected variables raise :class:`trainer.checkpoint_interop.CheckpointMismatchError` (a
``ValueError``) listing them.
"""
from __future__ import annotations

import glob
import json
import os
import re
import tempfile
from typing import Any, Dict, List, Optional, Tuple

import trainer  # noqa: F401  (selects tf_keras before TensorFlow is imported)
import tensorflow as tf

from config.errors import InputError, MissingInputError
from config.tokenizer_spec import TokenizerSpec
from trainer import checkpoint_interop as interop
from trainer.files import (CONFIG_FILE, CONVERT_SERVING_DIR, ENCODER_CKPT, EXPORT_INFO_FILE, PRETRAINING_CKPT, SPM_FILE,
                           TOKENIZER_SPEC_FILE, WORDPIECE_FILE)
from trainer.vocabulary import vocabulary_size
from trainer.modeling_albert import AlbertConfig, AlbertForPreTraining, AlbertModel, count_parameters

__all__ = ["KINDS", "convert", "hf_to_albert", "albert_to_hf", "tf1_to_albert", "write_albert_dir",
           "load_albert_dir"]

KINDS = ("hf-to-albert", "albert-to-hf", "tf1-to-albert")

SERVING_DIR = CONVERT_SERVING_DIR
HF_SPM_FILE = "spiece.model"


def convert(kind: str, src: str, dst: str) -> Dict[str, Any]:
    """Convert ``src`` to ``dst`` (see the module docstring for the kinds). Returns a JSON-able summary."""
    if kind not in KINDS:
        raise ValueError(f"Unknown conversion {kind!r}; choose one of {', '.join(KINDS)}")
    if not tf.io.gfile.isdir(src):
        raise MissingInputError(f"Source directory {src} does not exist")
    if os.path.abspath(src) == os.path.abspath(dst):
        raise InputError("SRC and DST must be different directories")
    func = {"hf-to-albert": hf_to_albert, "albert-to-hf": albert_to_hf, "tf1-to-albert": tf1_to_albert}[kind]
    try:
        result = func(src, dst)
    except interop.CheckpointMismatchError as exc:
        if "strict=False" not in str(exc):
            raise
        raise interop.CheckpointMismatchError(
            exc.what, exc.missing, exc.unexpected, exc.shape_mismatch,
            hint="(convert needs every variable: do the config and the weights in the source belong together?)"
        ) from None
    return {"kind": kind, "src": src, "dst": dst, **result}


# ---------------------------------------------------------------------------------------------------------------------
# This project's albert directory
# ---------------------------------------------------------------------------------------------------------------------
def write_albert_dir(model, dst: str, spm_model_path: Optional[str] = None, serving: bool = True,
                     extra: Optional[Dict[str, Any]] = None,
                     tokenizer_spec: Optional[TokenizerSpec] = None) -> Dict[str, Any]:
    """Write ``model`` (:class:`AlbertForPreTraining`, or :class:`AlbertModel` for encoder-only) as an albert dir.

    The files are the ones :func:`trainer.export.export` writes; the SavedModel goes to ``dst/serving``.
    ``spm_model_path``: the vocabulary file, a SentencePiece model (``spm.model``) or, with a WordPiece
    ``tokenizer_spec``, a ``vocab.txt``; a spec other than English's SentencePiece is written as ``tokenizer.json``.
    """
    pretraining = model if isinstance(model, AlbertForPreTraining) else None
    encoder = model.albert if pretraining is not None else model
    tf.io.gfile.makedirs(dst)
    files: List[str] = []
    encoder.config.to_json_file(os.path.join(dst, CONFIG_FILE), official=True)
    files.append(CONFIG_FILE)
    tf.train.Checkpoint(encoder=encoder).write(os.path.join(dst, ENCODER_CKPT))
    files.append(ENCODER_CKPT)
    if pretraining is not None:
        tf.train.Checkpoint(model=pretraining).write(os.path.join(dst, PRETRAINING_CKPT))
        files.append(PRETRAINING_CKPT)
        if serving:
            from trainer.export import ServingModule  # lazy: on one branch; trainer.export (0.001 s)

            module = ServingModule(pretraining)
            tf.saved_model.save(module, os.path.join(dst, SERVING_DIR), signatures={"serving_default": module.serve})
            files.append(SERVING_DIR)
    if spm_model_path:
        name = WORDPIECE_FILE if tokenizer_spec is not None and tokenizer_spec.kind == "wordpiece" else SPM_FILE
        tf.io.gfile.copy(spm_model_path, os.path.join(dst, name), overwrite=True)
        files.append(name)
    if tokenizer_spec is not None and tokenizer_spec.needs_file:
        with tf.io.gfile.GFile(os.path.join(dst, TOKENIZER_SPEC_FILE), "w") as f:
            f.write(tokenizer_spec.to_json())
        files.append(TOKENIZER_SPEC_FILE)
    info = dict(extra or {})
    info.update({"albert_config": encoder.config.to_dict(), "parameters": count_parameters(encoder.config),
                 "sentence_task": pretraining.sentence_task if pretraining is not None else None,
                 "encoder_only": pretraining is None})
    with tf.io.gfile.GFile(os.path.join(dst, EXPORT_INFO_FILE), "w") as f:
        f.write(json.dumps(info, indent=2, sort_keys=True, default=str))
    files.append(EXPORT_INFO_FILE)
    return {"files": files, "encoder_only": pretraining is None,
            "sentence_task": info["sentence_task"], "parameters": info["parameters"]}


def _variables(path: str) -> List[Tuple[str, List[int]]]:
    """``tf.train.list_variables`` of a checkpoint given to ``convert``; one TensorFlow cannot read (a corrupt or
    truncated index, a missing data file) is an :class:`config.InputError` naming it."""
    try:
        return tf.train.list_variables(path)
    except tf.errors.OpError as exc:
        raise InputError(f"{path}: not a readable TensorFlow checkpoint ({exc.message.splitlines()[0]})") from None


def _checkpoint_keys(path: str) -> List[str]:
    return [name for name, _ in _variables(path)]


def _restore_object_checkpoint(path: str, what: str, **objects) -> None:
    """Restore a ``tf.train.Checkpoint`` (object-based) into ``objects``; first compare the variables it holds
    with the ones the model would write, and fail listing missing / unexpected / mis-shaped ones."""
    def shapes(prefix: str, variables=_variables) -> Dict[str, Tuple[int, ...]]:
        suffix = "/.ATTRIBUTES/VARIABLE_VALUE"
        return {n[: -len(suffix)]: tuple(s) for n, s in variables(prefix)
                if n.endswith(suffix) and not n.startswith("save_counter/")}

    with tempfile.TemporaryDirectory() as tmp:
        expected = shapes(tf.train.Checkpoint(**objects).write(os.path.join(tmp, "ckpt")), tf.train.list_variables)
    found = shapes(path)
    missing = sorted(set(expected) - set(found))
    unexpected = sorted(set(found) - set(expected))
    mismatch = sorted(f"{n}: checkpoint {found[n]}, model {expected[n]}" for n in set(expected) & set(found)
                      if expected[n] != found[n])
    if missing or unexpected or mismatch:
        raise interop.CheckpointMismatchError(
            f"{what} {path!r} (albert_config.json says {_config_summary(objects)})", missing, unexpected, mismatch,
            hint="(is albert_config.json the one the checkpoint was trained with?)")
    tf.train.Checkpoint(**objects).read(path).assert_existing_objects_matched()


def _config_summary(objects) -> str:
    model = next(iter(objects.values()))
    c = model.config
    return (f"E={c.embedding_size} H={c.hidden_size} L={c.num_hidden_layers} sharing={c.sharing} "
            f"groups={c.num_hidden_groups} inner={c.inner_group_num}")


def load_albert_dir(src: str):
    """Load an albert dir: an :class:`AlbertForPreTraining` from ``pretraining/ckpt`` (sentence head as found in
    the checkpoint), or an :class:`AlbertModel` from ``encoder/ckpt`` when there is no pretraining checkpoint."""
    config_path = os.path.join(src, CONFIG_FILE)
    if not tf.io.gfile.exists(config_path):
        raise MissingInputError(f"{src} is not an albert directory: no {CONFIG_FILE}")
    config = AlbertConfig.from_json_file(config_path)
    pretraining_path = os.path.join(src, PRETRAINING_CKPT)
    encoder_path = os.path.join(src, ENCODER_CKPT)
    if tf.io.gfile.exists(pretraining_path + ".index"):
        keys = _checkpoint_keys(pretraining_path)
        sentence_task = "sop" if any(k.startswith("model/seq_relationship/") for k in keys) else None
        model = AlbertForPreTraining(config, sentence_task=sentence_task)
        model(model.dummy_inputs(1, 4, 1))
        _restore_object_checkpoint(pretraining_path, "pretraining checkpoint", model=model)
        return model
    if tf.io.gfile.exists(encoder_path + ".index"):
        model = AlbertModel(config)
        model(model.dummy_inputs(1, 4))
        _restore_object_checkpoint(encoder_path, "encoder checkpoint", encoder=model)
        return model
    raise MissingInputError(f"{src} has neither {PRETRAINING_CKPT} nor {ENCODER_CKPT} (.index)")


# ---------------------------------------------------------------------------------------------------------------------
# Hugging Face
# ---------------------------------------------------------------------------------------------------------------------
def hf_to_albert(src: str, dst: str) -> Dict[str, Any]:
    config_path = os.path.join(src, "config.json")
    if not os.path.exists(config_path):
        raise MissingInputError(f"{src} is not a Hugging Face model directory: no config.json")
    try:
        with open(config_path, encoding="utf-8") as f:
            hf_config = json.load(f)
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError
        raise InputError(f"{config_path}: not valid JSON ({exc})") from None
    if not isinstance(hf_config, dict):
        raise InputError(f"{config_path}: must be a JSON object, got {type(hf_config).__name__}")
    if hf_config.get("model_type", "albert") != "albert":
        raise InputError(f"{src} holds a {hf_config.get('model_type')!r} model, not ALBERT")
    try:
        config = interop.config_from_hf_dict(hf_config)
    except KeyError as exc:
        raise InputError(f"{config_path}: no {exc.args[0]!r} (not an ALBERT config.json)") from None
    except (TypeError, ValueError) as exc:
        raise InputError(f"{config_path}: not a usable ALBERT config: {exc}") from exc
    tensors = interop.read_hf_tensors(src)
    layout = interop.hf_layout(tensors)
    skipped: List[str] = []
    if layout["prefix"] == "albert." and layout["mlm"]:
        model = AlbertForPreTraining(config, sentence_task=layout["sentence_task"])
        if layout["other"]:
            raise interop.CheckpointMismatchError(f"Hugging Face checkpoint {src!r}", [], layout["other"], [],
                                                  hint="(tensors of a head that AlbertForPreTraining does not have)")
        report = interop.load_hf_state_dict(model, tensors)
    else:
        # Encoder only: a bare AlbertModel, or a task model (sequence classification, QA ...) whose head is not
        # ALBERT's and is left out.
        prefix = layout["prefix"]
        encoder_tensors = {n[len(prefix):]: v for n, v in tensors.items() if n.startswith(prefix)
                           and not n.startswith(("predictions.", "sop_classifier."))} if prefix else dict(tensors)
        skipped = sorted(set(tensors) - {prefix + n for n in encoder_tensors})
        model = AlbertModel(config)
        report = interop.load_hf_state_dict(model, encoder_tensors)
    spm_path = os.path.join(src, HF_SPM_FILE)
    result = write_albert_dir(model, dst, spm_path if os.path.exists(spm_path) else None,
                              extra={"converted_from": os.path.abspath(src), "kind": "hf-to-albert"})
    result["loaded_tensors"] = len(report["loaded"])
    result["skipped_tensors"] = skipped
    return result


def _hf_wordpiece_tokenizer_config(spec: TokenizerSpec) -> Dict[str, Any]:
    # A WordPiece ALBERT (the official Chinese models): BERT's tokenizer, as the community's zh/ko ALBERTs declare
    # it (transformers' AlbertTokenizer reads SentencePiece models only: huggingface/transformers#2530).
    return {"tokenizer_class": "BertTokenizer", "do_lower_case": spec.do_lower_case, "tokenize_chinese_chars": True,
            "model_max_length": 512, "unk_token": "[UNK]", "sep_token": "[SEP]", "pad_token": "[PAD]",
            "cls_token": "[CLS]", "mask_token": "[MASK]"}


def _hf_tokenizer_config() -> Dict[str, Any]:
    # ALBERT's preprocessing: lower case, accents stripped, spaces collapsed (the official FullTokenizer).
    return {"tokenizer_class": "AlbertTokenizer", "do_lower_case": True, "keep_accents": False,
            "remove_space": True, "model_max_length": 512, "bos_token": "[CLS]", "eos_token": "[SEP]",
            "unk_token": "<unk>", "sep_token": "[SEP]", "pad_token": "<pad>", "cls_token": "[CLS]",
            "mask_token": "[MASK]"}


def albert_to_hf(src: str, dst: str) -> Dict[str, Any]:
    model = load_albert_dir(src)
    config = model.config
    if config.sharing not in ("all", "groups", "none"):
        raise InputError(f"model.sharing={config.sharing} cannot be written in the Hugging Face layout "
                         "(transformers has only whole-layer groups: 'all', 'groups', 'none')")
    paths = interop.save_hf_pretrained(model, dst)
    files = ["config.json", "model.safetensors"]
    encoder_only = isinstance(model, AlbertModel)
    if encoder_only or model.sentence_task is None:
        with open(paths["config"]) as f:
            hf_config = json.load(f)
        hf_config["architectures"] = ["AlbertModel"] if encoder_only else ["AlbertForMaskedLM"]
        with open(paths["config"], "w") as f:
            json.dump(hf_config, f, indent=2, sort_keys=True)
            f.write("\n")
    spm_path = os.path.join(src, SPM_FILE)
    wordpiece_path = os.path.join(src, WORDPIECE_FILE)
    if tf.io.gfile.exists(spm_path):
        tf.io.gfile.copy(spm_path, os.path.join(dst, HF_SPM_FILE), overwrite=True)
        with open(os.path.join(dst, "tokenizer_config.json"), "w") as f:
            json.dump(_hf_tokenizer_config(), f, indent=2, sort_keys=True)
            f.write("\n")
        files += [HF_SPM_FILE, "tokenizer_config.json"]
    elif tf.io.gfile.exists(wordpiece_path):
        spec_path = os.path.join(src, TOKENIZER_SPEC_FILE)
        spec = TokenizerSpec(kind="wordpiece", normalization="none")
        if tf.io.gfile.exists(spec_path):
            with tf.io.gfile.GFile(spec_path) as f:
                spec = TokenizerSpec.from_json(f.read())
        tf.io.gfile.copy(wordpiece_path, os.path.join(dst, WORDPIECE_FILE), overwrite=True)
        tokenizer_config = _hf_wordpiece_tokenizer_config(spec)
        with open(os.path.join(dst, "tokenizer_config.json"), "w") as f:
            json.dump(tokenizer_config, f, indent=2, sort_keys=True)
            f.write("\n")
        with open(paths["config"]) as f:
            hf_config = json.load(f)
        hf_config["tokenizer_class"] = tokenizer_config["tokenizer_class"]
        with open(paths["config"], "w") as f:
            json.dump(hf_config, f, indent=2, sort_keys=True)
            f.write("\n")
        files += [WORDPIECE_FILE, "tokenizer_config.json"]
    return {"files": files, "encoder_only": encoder_only,
            "sentence_task": None if encoder_only else model.sentence_task,
            "parameters": count_parameters(config)}


# ---------------------------------------------------------------------------------------------------------------------
# Official TF1 release
# ---------------------------------------------------------------------------------------------------------------------
def _find_tf1_checkpoint(src: str) -> str:
    latest = tf.train.latest_checkpoint(src)
    if latest:
        return latest
    indexes = sorted(glob.glob(os.path.join(src, "*.ckpt*.index")) + glob.glob(os.path.join(src, "*.ckpt.index")))
    prefixes = sorted({p[: -len(".index")] for p in indexes})
    if not prefixes:
        raise MissingInputError(f"No TF1 checkpoint (model.ckpt-*.index) in {src}")

    def step(p: str) -> Tuple[int, str]:
        m = re.search(r"-(\d+)$", p)
        return (int(m.group(1)) if m else -1, p)

    return max(prefixes, key=step)


def _tf1_vocabulary(src: str, config: AlbertConfig) -> Tuple[Optional[str], Optional[TokenizerSpec]]:
    """The release's vocabulary: its SentencePiece ``*.model`` (the English models) or its WordPiece ``vocab*.txt``
    (the Chinese ``albert_*_zh`` models, read lower-cased as the official fine-tuning scripts default), or none; a
    vocabulary whose size is not the checkpoint's ``vocab_size`` is refused (it belongs to another model)."""
    spm_files = sorted(glob.glob(os.path.join(src, "*.model")))
    txt_files = sorted(glob.glob(os.path.join(src, "vocab*.txt")))
    if spm_files:
        path, spec = spm_files[0], None
    elif txt_files:
        path, spec = txt_files[0], TokenizerSpec(kind="wordpiece", normalization="none", do_lower_case=True)
    else:
        return None, None
    size = vocabulary_size(path) if spec is not None else None
    if size is not None and size != config.vocab_size:
        raise InputError(f"{path} holds {size} tokens but {os.path.join(src, CONFIG_FILE)} says \"vocab_size\": "
                         f"{config.vocab_size}: not this checkpoint's vocabulary")
    return path, spec


def tf1_to_albert(src: str, dst: str) -> Dict[str, Any]:
    config_path = os.path.join(src, CONFIG_FILE)
    if not tf.io.gfile.exists(config_path):
        raise MissingInputError(f"No {CONFIG_FILE} in {src} (official releases ship one next to the checkpoint)")
    config = AlbertConfig.from_json_file(config_path)
    checkpoint = _find_tf1_checkpoint(src)
    names = _checkpoint_keys(checkpoint)
    prefix = interop._detect_prefix(names)
    has_mlm = any(n.startswith(prefix + "cls/predictions/") for n in names)
    has_sentence = any(n.startswith(prefix + "cls/seq_relationship/") for n in names)
    if has_mlm:
        model = AlbertForPreTraining(config, sentence_task="sop" if has_sentence else None)
    else:
        model = AlbertModel(config)
    report = interop.load_tf1_checkpoint(model, checkpoint, prefix=prefix)
    vocab, spec = _tf1_vocabulary(src, config)
    result = write_albert_dir(model, dst, vocab, tokenizer_spec=spec,
                              extra={"converted_from": os.path.abspath(checkpoint), "kind": "tf1-to-albert"})
    result["checkpoint"] = checkpoint
    result["prefix"] = prefix
    result["loaded_variables"] = len(report["loaded"])
    result["skipped_variables"] = report["skipped"]
    return result
