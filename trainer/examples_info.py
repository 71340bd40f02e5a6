"""``dataset_info.json``: the facts a pretraining-examples folder carries for the Trainer.

``PretrainingDataGen`` (and ``albert-pipeline make-pretraining-data``) write it next to the
``Split-*`` folders: sequence length, predictions per sequence (and those of the ``*_long`` splits when the
two-phase sequence length is on), the tokenizer's ``do_lower_case``,
vocabulary size, SOP mode and a **content fingerprint** (SHA-256 over every file's bytes). The
Trainer reads its upstream facts from here instead of from a copy of another node's settings, and
keys its checkpoints by the fingerprint, so a re-run of datagen that wrote the same bytes (new
artifact URI, same content) resumes the same pretraining run.
"""
from __future__ import annotations

import hashlib
import json
import os
import posixpath
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace
from typing import Any, Dict, Iterable, List

from config.errors import InputError, MissingInputError

INFO_FILE = "dataset_info.json"
_CHUNK = 1 << 20


def _open_local(path: str, mode: str = "r"):
    return open(path, mode) if "b" in mode else open(path, mode, encoding="utf-8")


# The local file system under ``tf.io.gfile``'s names (what the functions below call).
_LOCAL = SimpleNamespace(exists=os.path.exists, isdir=os.path.isdir, walk=os.walk, listdir=os.listdir,
                         GFile=_open_local)


def _gfile(path: str):
    """``tf.io.gfile`` for a URI (``gs://...``), else the local file system. ``make-pretraining-data`` writes
    this file and needs no TensorFlow otherwise: importing it for local paths added ~0.6 GB to its peak RSS."""
    if "://" not in path:
        return _LOCAL
    import tensorflow as tf  # lazy: tensorflow (2.8 s)

    return tf.io.gfile


def _files_under(root: str, names: Iterable[str]) -> List[str]:
    gfile = _gfile(root)
    root = root.rstrip("/")
    out = []
    for name in names:
        top = posixpath.join(root, name)
        if not gfile.exists(top):
            continue
        if not gfile.isdir(top):
            out.append(name)
            continue
        for dirpath, _, files in gfile.walk(top):
            rel = dirpath.rstrip("/")[len(root):].strip("/")
            out += [posixpath.join(rel, f) for f in files]
    return sorted(out)


def _file_digest(path: str) -> str:
    h = hashlib.sha256()
    with _gfile(path).GFile(path, "rb") as f:
        while True:
            block = f.read(_CHUNK)
            if not block:
                return h.hexdigest()
            h.update(block)


def fingerprint(root: str, names: Iterable[str], workers: int = 8) -> str:
    """SHA-256 over (relative path, file SHA-256) of every file under ``root/<name>``, in sorted order."""
    rel = _files_under(root, names)
    if not rel:
        raise MissingInputError(f"{root}: no files to fingerprint under {sorted(names)}")
    with ThreadPoolExecutor(max_workers=workers) as pool:
        digests = list(pool.map(lambda r: _file_digest(posixpath.join(root, r)), rel))
    h = hashlib.sha256()
    for r, d in zip(rel, digests):
        h.update(f"{r}\t{d}\n".encode())
    return h.hexdigest()


def make_info(datagen, do_lower_case: bool, vocab_size: int, fingerprint_hex: str) -> Dict[str, Any]:
    """The facts of an examples folder built with the ``datagen`` section (a
    ``components.datagen.datagen_config.DataGenConfig``: the writer's settings, which this module, the contract
    between the writer and the Trainer, reads by field without importing the layer above it).

    With BERT's two-phase sequence length on, also the long splits' ``long_max_seq_length`` and
    ``long_max_predictions_per_seq`` (absent otherwise, so a one-phase folder's facts are what they were)."""
    info = {"fingerprint": fingerprint_hex, "max_seq_length": int(datagen.max_seq_length),
            "max_predictions_per_seq": int(datagen.max_predictions_per_seq), "do_lower_case": bool(do_lower_case),
            "sop_mode": datagen.sop_mode, "vocab_size": int(vocab_size)}
    if datagen.long_max_seq_length:
        info["long_max_seq_length"] = int(datagen.long_max_seq_length)
        info["long_max_predictions_per_seq"] = int(datagen.long_predictions())
    return info


def write_info(root: str, info: Dict[str, Any]) -> None:
    with _gfile(root).GFile(posixpath.join(root, INFO_FILE), "w") as f:
        f.write(json.dumps(info, indent=2, sort_keys=True))


def read_info(root: str) -> Dict[str, Any]:
    """The folder's facts; a folder from before they were recorded gets its fingerprint computed now."""
    gfile = _gfile(root)
    path = posixpath.join(root, INFO_FILE)
    if gfile.exists(path):
        with gfile.GFile(path) as f:
            try:
                return json.load(f)
            except json.JSONDecodeError as exc:
                raise InputError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
            except UnicodeDecodeError as exc:
                raise InputError(f"{path}: not valid UTF-8 at byte offset {exc.start}") from None
    names = [n.rstrip("/") for n in gfile.listdir(root)] if gfile.isdir(root) else []
    splits = [n for n in names if n.startswith("Split-")]
    if not splits:
        raise MissingInputError(f"{root}: not a pretraining-examples folder (no {INFO_FILE}, no Split-* folders)")
    return {"fingerprint": fingerprint(root, splits + ["vocab"])}
