"""Continued pretraining: the model a run starts from (``train.init_from``), found, described and checked.

A base is a folder of this project's model layout, local or ``gs://``:

* an **albert folder** (what ``convert tf1-to-albert`` / ``convert hf-to-albert`` write, and the Trainer's
  ``<model>/albert``): ``albert_config.json`` (official keys), ``pretraining/ckpt`` (encoder and heads) or only
  ``encoder/ckpt``, ``spm.model``, ``export_info.json``;
* a **pushed version** (``<destination>/<N>/``): the same folder as its ``checkpoint/``, and ``release.json``.

The official semantics (``--init_checkpoint`` of google-research/albert's ``run_pretraining.py``): the trainable
weights are restored, the global step, the warm-up and decay schedule and the optimizer's moments start from zero.
The configuration must be the base's and so must the vocabulary: :func:`check` names every difference.
"""
from __future__ import annotations

import hashlib
import json
import posixpath
from typing import Any, Dict, List, Mapping

from config.errors import MissingInputError
from config.schema import ConfigError
from trainer.files import (CONFIG_FILE, CONVERT_SERVING_DIR, ENCODER_CKPT, EXPORT_INFO_FILE, PRETRAINING_CKPT,
                           RUN_IDENTITY_FILE, VERSION_ALBERT_DIR, VERSION_RECORD_FILE, VOCAB_FILES)

__all__ = ["describe", "check", "config_differences", "sha256_of", "training_state", "model_files", "digest",
           "source_record", "source_text", "WARM_START_FIELDS", "SAVED_MODEL_NAMES"]

# The train fields that say how a run starts, not how it trains: left out when a run that restores a base's whole
# training state is compared with the base's run.
WARM_START_FIELDS = ("init_from", "init_restore")
# What a SavedModel folder holds (TensorFlow's layout): the serving model at the top of a pushed version.
SAVED_MODEL_NAMES = ("saved_model.pb", "saved_model.pbtxt", "fingerprint.pb", "variables", "assets", "assets.extra")


def _gfile():
    import tensorflow as tf  # lazy: tensorflow (2.8 s)

    return tf.io.gfile


def _read_json(path: str) -> Dict[str, Any]:
    with _gfile().GFile(path) as f:
        return json.loads(f.read())


def sha256_of(path: str) -> str:
    with _gfile().GFile(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def describe(location: str) -> Dict[str, Any]:
    """What ``location`` holds: ``albert_dir``, ``checkpoint`` (the prefix to restore), ``config`` (official keys),
    ``spm_model`` (its vocabulary file: ``spm.model`` or ``vocab.txt``) and its ``spm_sha256``, ``steps`` (the
    steps behind it: its own ``total_steps`` when it continued another model, else its final step; None when its export says nothing), ``version`` (a pushed version's number,
    else None). Raises :class:`MissingInputError` naming the location when it is neither layout."""
    gfile = _gfile()
    location = location.rstrip("/")
    candidates = [location, posixpath.join(location, VERSION_ALBERT_DIR)]
    albert_dir = next((d for d in candidates if gfile.exists(posixpath.join(d, CONFIG_FILE))), None)
    if albert_dir is None:
        raise MissingInputError(f"train.init_from={location} is not a model folder: neither {candidates[0]}/"
                                f"{CONFIG_FILE} nor {candidates[1]}/{CONFIG_FILE} exists (a pushed version, or what "
                                "`albert-pipeline convert` writes)")
    checkpoint = next((posixpath.join(albert_dir, c) for c in (PRETRAINING_CKPT, ENCODER_CKPT)
                       if gfile.exists(posixpath.join(albert_dir, c) + ".index")), None)
    if checkpoint is None:
        raise MissingInputError(f"train.init_from={location}: {albert_dir} has neither {PRETRAINING_CKPT} nor "
                                f"{ENCODER_CKPT} (.index)")
    spm_model = next((posixpath.join(albert_dir, name) for name in VOCAB_FILES
                      if gfile.exists(posixpath.join(albert_dir, name))), None)
    if spm_model is None:
        raise MissingInputError(f"train.init_from={location}: {albert_dir} has no {' or '.join(VOCAB_FILES)} (the "
                                "base's vocabulary)")
    export_info = {}
    if gfile.exists(posixpath.join(albert_dir, EXPORT_INFO_FILE)):
        export_info = _read_json(posixpath.join(albert_dir, EXPORT_INFO_FILE))
    record = posixpath.join(location, VERSION_RECORD_FILE)
    version = _read_json(record).get("version") if albert_dir != location and gfile.exists(record) else None
    steps = export_info.get("total_steps", export_info.get("final_step"))
    return {"location": location, "albert_dir": albert_dir, "checkpoint": checkpoint,
            "training_checkpoints": export_info.get("checkpoint_dir"),
            "config": _read_json(posixpath.join(albert_dir, CONFIG_FILE)), "spm_model": spm_model,
            "spm_sha256": sha256_of(spm_model), "steps": None if steps is None else int(steps), "version": version}


def config_differences(base_config: Mapping[str, Any], ours: Mapping[str, Any]) -> List[str]:
    """``key ours (base theirs)`` for every encoder field that differs, both as ``AlbertConfig.to_dict()``."""
    return [f"{key} {ours.get(key)!r} (base {base_config.get(key)!r})" for key in sorted(set(base_config) | set(ours))
            if base_config.get(key) != ours.get(key)]


def check(base: Mapping[str, Any], albert_config: Mapping[str, Any], spm_sha256: str) -> None:
    """The run's encoder (``AlbertConfig.to_dict()``) and vocabulary must be the base's: one
    :class:`ConfigError` naming each differing key, or both vocabularies' hashes."""
    from trainer.modeling_albert import AlbertConfig  # lazy: tensorflow (2.8 s)

    theirs = AlbertConfig.from_dict(dict(base["config"])).to_dict()
    differences = config_differences(theirs, dict(albert_config))
    if differences:
        raise ConfigError(f"train.init_from={base['location']}: this run's model configuration differs from the "
                          f"base's: {'; '.join(differences)}")
    if spm_sha256 != base["spm_sha256"]:
        raise ConfigError(f"train.init_from={base['location']}: the vocabulary is not the base's (spm.model sha256 "
                          f"{spm_sha256[:12]}… here, {base['spm_sha256'][:12]}… in the base); leave vocab.import_model "
                          f"unset (VocabGen then takes {base['spm_model']}) or point it there")


def training_state(base: Mapping[str, Any], identity: Mapping[str, Any]) -> str:
    """``train.init_restore=all``: the folder of the base's training checkpoints (model, optimizer, step, loss
    window), whose run must be this run but for the data and how it starts: the same encoder, ``train`` identity
    (its step count aside) and seed. One :class:`ConfigError` otherwise, naming what differs or what is missing."""
    folder = base.get("training_checkpoints")
    where = f"train.init_from={base['location']} with train.init_restore=all"
    gfile = _gfile()
    if not folder or not gfile.exists(posixpath.join(folder, RUN_IDENTITY_FILE)):
        raise ConfigError(f"{where}: the base holds no training checkpoints (optimizer and step) where its "
                          f"{EXPORT_INFO_FILE} says ({folder}); use train.init_restore=weights")
    theirs = _read_json(posixpath.join(folder, RUN_IDENTITY_FILE))

    def comparable(ident: Mapping[str, Any]) -> Dict[str, Any]:
        # A base trained with a lowered step count has the count in its identity (trainer/task.run_folder); the
        # count never decides whether a run can be continued, only from which step.
        train = {k: v for k, v in ident["train"].items() if k not in WARM_START_FIELDS + ("num_train_steps",)}
        return {"albert_config": ident["albert_config"], "train": train, "seed": ident["seed"]}

    ours, base_run = comparable(identity), comparable(theirs)
    differences = [f"{section}.{key}" for section in ("albert_config", "train")
                   for key in sorted(set(ours[section]) | set(base_run[section]))
                   if ours[section].get(key) != base_run[section].get(key)]
    differences += ["seed"] if ours["seed"] != base_run["seed"] else []
    if differences:
        raise ConfigError(f"{where}: this run is not the base's run continued (differs in {', '.join(differences)}); "
                          "use train.init_restore=weights to start a new run from its weights")
    return folder


def _walk(folder: str, names=None) -> List[str]:
    """The files under ``folder`` (only under its entries ``names`` when given), as paths relative to it, sorted."""
    gfile = _gfile()
    out = []
    for name in sorted(n.rstrip("/") for n in gfile.listdir(folder)):
        if names is not None and name not in names:
            continue
        path = posixpath.join(folder, name)
        if gfile.isdir(path):
            out += [posixpath.join(name, sub) for sub in _walk(path)]
        else:
            out.append(name)
    return out


def model_files(base: Mapping[str, Any]) -> Dict[str, Dict[str, str]]:
    """What a benchmark-only run takes from a base (:func:`describe`'s result): ``{"albert": {relative path: source
    file}, "serving": {...}}``: the albert folder's files (less a conversion's ``serving/``), and the serving
    SavedModel's: a conversion's ``serving/``, or the SavedModel at the top of a pushed version (empty when the base
    has none, e.g. an encoder-only conversion)."""
    albert_dir, location = base["albert_dir"], base["location"]
    gfile = _gfile()
    albert = {rel: posixpath.join(albert_dir, rel) for rel in _walk(albert_dir)
              if rel.split("/", 1)[0] != CONVERT_SERVING_DIR}
    serving: Dict[str, str] = {}
    if gfile.isdir(posixpath.join(albert_dir, CONVERT_SERVING_DIR)):
        root = posixpath.join(albert_dir, CONVERT_SERVING_DIR)
        serving = {rel: posixpath.join(root, rel) for rel in _walk(root)}
    elif albert_dir != location and gfile.exists(posixpath.join(location, SAVED_MODEL_NAMES[0])):
        serving = {rel: posixpath.join(location, rel) for rel in _walk(location, SAVED_MODEL_NAMES)}
    return {"albert": albert, "serving": serving}


def digest(files: Mapping[str, Mapping[str, str]]) -> str:
    """One sha256 over :func:`model_files`' files: each one's part, relative path and content hash."""
    lines = [f"{part}/{rel} {sha256_of(src)}" for part, entries in sorted(files.items())
             for rel, src in sorted(entries.items())]
    return hashlib.sha256("\n".join(lines).encode("utf-8")).hexdigest()


def source_record(base: Mapping[str, Any], files_digest: str, serving: bool) -> Dict[str, Any]:
    """What a benchmark-only run's model is (``model_source.json``): the location, its pushed version (or None),
    the steps behind it (None when its export says nothing), what ``convert`` made it from (or None), the files'
    digest and whether it came with a serving SavedModel."""
    export_info = {}
    path = posixpath.join(base["albert_dir"], EXPORT_INFO_FILE)
    if _gfile().exists(path):
        export_info = _read_json(path)
    return {"location": base["location"], "version": base["version"], "steps": base["steps"],
            "converted_from": export_info.get("converted_from"), "conversion": export_info.get("kind"),
            "encoder_only": bool(export_info.get("encoder_only", False)), "digest": files_digest,
            "serving_model": serving}


def source_text(record: Mapping[str, Any]) -> str:
    """One line naming a benchmark-only run's model (:func:`source_record`), for the report and the model card."""
    what = f"version {record['version']} at " if record.get("version") is not None else ""
    facts = [f"{record['steps']} pretraining steps" if record.get("steps") is not None else "pretraining steps "
             "not recorded"]
    if record.get("converted_from"):
        facts.append(f"`{record['conversion']}` of {record['converted_from']}")
    facts.append(f"files sha256 {record['digest'][:12]}…")
    return f"{what}{record['location']} ({'; '.join(facts)})"
