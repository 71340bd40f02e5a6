"""Versioned pushes: a destination folder holds one folder per version, ``1``, ``2``, ... (TF Serving's layout).

A version appears whole or not at all:

* on a local destination the version is built in ``<destination>/.staging-<random>`` and renamed to its number in
  one ``rename`` (which fails when another pusher took the number first: the next number is tried);
* on ``gs://`` (no folder rename) every file is copied under the number first and :data:`RECORD_FILE` last.

Either way a folder is a version only when it holds :data:`RECORD_FILE`: readers (:func:`list_versions`, the
``releases`` command) never see a partial push, and a push that fails midway removes what it wrote. Numbers are
unique and only grow: the next one is above every numbered folder, complete or not, so an abandoned partial folder
is never reused. All file access goes through ``tf.io.gfile`` (local paths and ``gs://``).
"""
from __future__ import annotations

import json
import posixpath
import re
import uuid
from typing import Any, Callable, Dict, List, Optional, Tuple

import tensorflow as tf

__all__ = ["RECORD_FILE", "STAGING_PREFIX", "list_versions", "next_version", "publish", "find_version"]

RECORD_FILE = "release.json"  # written last: the folder's record, and the mark that it is complete
STAGING_PREFIX = ".staging-"
_NUMBER = re.compile(r"[0-9]+")


def _is_remote(path: str) -> bool:
    return "://" in path


def _numbers(destination: str) -> List[int]:
    if not tf.io.gfile.isdir(destination):
        return []
    names = (n.rstrip("/") for n in tf.io.gfile.listdir(destination))
    return sorted(int(n) for n in names if _NUMBER.fullmatch(n))


def next_version(destination: str) -> int:
    """1 + the highest numbered folder in ``destination`` (complete or not); 1 for an empty or new one."""
    numbers = _numbers(destination)
    return numbers[-1] + 1 if numbers else 1


def list_versions(destination: str) -> List[Dict[str, Any]]:
    """Every complete version, oldest first: its record plus ``path``."""
    out = []
    for number in _numbers(destination):
        path = posixpath.join(destination, str(number))
        record = posixpath.join(path, RECORD_FILE)
        if tf.io.gfile.exists(record):
            with tf.io.gfile.GFile(record) as f:
                out.append({**json.loads(f.read()), "path": path})
    return out


def find_version(destination: str, model_uri: str) -> Optional[Dict[str, Any]]:
    """The newest complete version that holds the model at ``model_uri`` (None if none does)."""
    found = [v for v in list_versions(destination) if (v.get("model") or {}).get("uri") == model_uri]
    return found[-1] if found else None


def copy_file(src: str, dst: str) -> None:
    """One file of a push (the seam a test uses to make a push fail midway)."""
    tf.io.gfile.copy(src, dst, overwrite=True)


def _files(folder: str) -> List[str]:
    """Every file under ``folder``, as paths relative to it, sorted."""
    out = []
    for dirpath, _, names in tf.io.gfile.walk(folder):
        rel = posixpath.relpath(dirpath, folder) if dirpath != folder else ""
        out.extend(posixpath.join(rel, n) if rel else n for n in names)
    return sorted(out)


def _copy_tree(src: str, dst: str) -> None:
    for rel in _files(src):
        target = posixpath.join(dst, rel)
        tf.io.gfile.makedirs(posixpath.dirname(target))
        copy_file(posixpath.join(src, rel), target)


def _write_record(folder: str, record: Dict[str, Any]) -> None:
    with tf.io.gfile.GFile(posixpath.join(folder, RECORD_FILE), "w") as f:
        f.write(json.dumps(record, indent=2, sort_keys=True))


def publish(built: str, destination: str, finish: Callable[[int], Dict[str, Any]],
            attempts: int = 5) -> Tuple[int, str]:
    """Push the folder ``built`` (on this machine) to ``destination`` as its next version.

    ``finish(number)`` writes the files that name the version (the model card) into ``built`` and returns the
    version's :data:`RECORD_FILE` content. Returns (number, path). Raises whatever a write raised, after removing
    what this push wrote."""
    tf.io.gfile.makedirs(destination)
    if _is_remote(destination):
        number = next_version(destination)
        path = posixpath.join(destination, str(number))
        record = finish(number)
        try:
            _copy_tree(built, path)
            _write_record(path, record)  # last: from here on it is a version
        except BaseException:
            if tf.io.gfile.exists(path) and not tf.io.gfile.exists(posixpath.join(path, RECORD_FILE)):
                tf.io.gfile.rmtree(path)
            raise
        return number, path
    staging = posixpath.join(destination, STAGING_PREFIX + uuid.uuid4().hex[:12])
    try:
        for _ in range(attempts):
            number = next_version(destination)
            path = posixpath.join(destination, str(number))
            record = finish(number)
            if tf.io.gfile.exists(staging):
                tf.io.gfile.rmtree(staging)
            _copy_tree(built, staging)
            _write_record(staging, record)
            try:
                tf.io.gfile.rename(staging, path)  # one step: the whole version appears at once
                return number, path
            except tf.errors.OpError:
                if not tf.io.gfile.exists(path):
                    raise
                # another push took the number: take the next
        raise RuntimeError(f"{destination}: {attempts} version numbers were taken while pushing; try again")
    finally:
        if tf.io.gfile.exists(staging):
            tf.io.gfile.rmtree(staging)
