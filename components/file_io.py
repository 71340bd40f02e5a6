"""File helpers for paths that may be local or remote (``gs://...``), and strict JSON for what we write.

Local paths go through ``open()``; a path with a scheme goes through ``tf.io.gfile``. TensorFlow is imported only
when a remote path or a tree copy needs it, so light modules (the report) stay free of it.
"""
from __future__ import annotations

import json
import math
import os
import posixpath
from typing import Any, Optional

__all__ = ["is_uri", "join", "exists", "read_text", "read_bytes", "read_json", "write", "makedirs", "copy_tree", "json_safe"]


def is_uri(path: str) -> bool:
    """Whether ``path`` names a remote file system (``gs://bucket/...``), which ``open()`` cannot read."""
    return "://" in str(path)


def join(*parts: str) -> str:
    """``os.path.join`` for local paths; ``/``-joined for URIs."""
    if is_uri(parts[0]):
        return "/".join([parts[0].rstrip("/")] + [p.strip("/") for p in parts[1:]])
    return os.path.join(*parts)


def exists(path: str) -> bool:
    if is_uri(path):
        import tensorflow as tf
        return tf.io.gfile.exists(path)
    return os.path.exists(path)


def read_text(path: str) -> str:
    if is_uri(path):
        import tensorflow as tf
        with tf.io.gfile.GFile(path, "r") as f:
            return f.read()
    with open(path, encoding="utf-8") as f:
        return f.read()


def read_bytes(path: str) -> bytes:
    if is_uri(path):
        import tensorflow as tf
        with tf.io.gfile.GFile(path, "rb") as f:
            return f.read()
    with open(path, "rb") as f:
        return f.read()


def read_json(path: Optional[str]) -> Optional[Any]:
    """The parsed file, or None when ``path`` is empty or names no file."""
    if not path or not exists(path):
        return None
    return json.loads(read_text(path))


def write(path: str, data, binary: bool = False) -> None:
    if is_uri(path):
        import tensorflow as tf
        with tf.io.gfile.GFile(path, "wb" if binary else "w") as f:
            f.write(data)
        return
    with open(path, "wb" if binary else "w", **({} if binary else {"encoding": "utf-8"})) as f:
        f.write(data)


def makedirs(path: str) -> None:
    if is_uri(path):
        import tensorflow as tf
        tf.io.gfile.makedirs(path)
    else:
        os.makedirs(path, exist_ok=True)


def copy_tree(src: str, dst: str) -> None:
    """Copy a folder tree through ``tf.io.gfile``, so either side may be local or ``gs://``."""
    import tensorflow as tf

    tf.io.gfile.makedirs(dst)
    for name in sorted(n.rstrip("/") for n in tf.io.gfile.listdir(src)):
        path = posixpath.join(src, name)
        if tf.io.gfile.isdir(path):
            copy_tree(path, posixpath.join(dst, name))
        else:
            tf.io.gfile.copy(path, posixpath.join(dst, name), overwrite=True)


def json_safe(obj):
    """Strict JSON values: NaN/inf → None, NumPy scalars and arrays → Python numbers and lists."""
    if isinstance(obj, dict):
        return {str(k): json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_safe(v) for v in obj]
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if hasattr(obj, "tolist") and not isinstance(obj, (str, bytes)):  # NumPy scalar or array
        return json_safe(obj.tolist())
    return obj
