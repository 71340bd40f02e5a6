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
from trainer.files import (CONFIG_FILE, ENCODER_CKPT, EXPORT_INFO_FILE, PRETRAINING_CKPT, SPM_FILE,
                           VERSION_ALBERT_DIR, VERSION_RECORD_FILE)

__all__ = ["describe", "check", "config_differences", "sha256_of", "training_state", "WARM_START_FIELDS"]

# The train fields that say how a run starts, not how it trains: left out when a run that restores a base's whole
# training state is compared with the base's run.
WARM_START_FIELDS = ("init_from", "init_restore")
IDENTITY_FILE = "run_identity.json"  # in a training checkpoint folder (trainer/task.py writes it)


def _gfile():
    import tensorflow as tf

    return tf.io.gfile


def _read_json(path: str) -> Dict[str, Any]:
    with _gfile().GFile(path) as f:
        return json.loads(f.read())


def sha256_of(path: str) -> str:
    with _gfile().GFile(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def describe(location: str) -> Dict[str, Any]:
    """What ``location`` holds: ``albert_dir``, ``checkpoint`` (the prefix to restore), ``config`` (official keys),
    ``spm_model`` and its ``spm_sha256``, ``steps`` (the steps behind it: its own ``total_steps`` when it continued
    another model, else its final step; None when its export says nothing), ``version`` (a pushed version's number,
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
    spm_model = posixpath.join(albert_dir, SPM_FILE)
    if not gfile.exists(spm_model):
        raise MissingInputError(f"train.init_from={location}: {albert_dir} has no {SPM_FILE} (the base's vocabulary)")
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
    from trainer.modeling_albert import AlbertConfig

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
    and seed. One :class:`ConfigError` otherwise, naming what differs or what is missing."""
    folder = base.get("training_checkpoints")
    where = f"train.init_from={base['location']} with train.init_restore=all"
    gfile = _gfile()
    if not folder or not gfile.exists(posixpath.join(folder, IDENTITY_FILE)):
        raise ConfigError(f"{where}: the base holds no training checkpoints (optimizer and step) where its "
                          f"{EXPORT_INFO_FILE} says ({folder}); use train.init_restore=weights")
    theirs = _read_json(posixpath.join(folder, IDENTITY_FILE))

    def comparable(ident: Mapping[str, Any]) -> Dict[str, Any]:
        train = {k: v for k, v in ident["train"].items() if k not in WARM_START_FIELDS}
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
