"""File helpers for paths that may be local or remote (``gs://...``), and strict JSON for what we write.

Local paths go through ``open()``; a path with a scheme goes through ``tf.io.gfile``. TensorFlow is imported only
when a remote path or a tree copy needs it, so light modules (the report) stay free of it.

Publishing a staged output (:func:`publish`, :func:`remove_tree`) goes through Beam's filesystems instead, as the Beam
jobs that write those outputs do: ``ingest`` then needs no TensorFlow, and the ``gs://`` stand-in of the tests
(tests/gcs_standin.py) serves it.
"""
from __future__ import annotations

import json
import math
import os
import posixpath
from typing import Any, Iterable, List, Optional

__all__ = ["is_uri", "join", "exists", "read_text", "read_bytes", "read_json", "write", "makedirs", "copy_tree", "json_safe",
           "PublishError", "publish", "remove_tree"]


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
        import tensorflow as tf  # lazy: tensorflow (2.8 s)
        return tf.io.gfile.exists(path)
    return os.path.exists(path)


def read_text(path: str) -> str:
    if is_uri(path):
        import tensorflow as tf  # lazy: tensorflow (2.8 s)
        with tf.io.gfile.GFile(path, "r") as f:
            return f.read()
    with open(path, encoding="utf-8") as f:
        return f.read()


def read_bytes(path: str) -> bytes:
    if is_uri(path):
        import tensorflow as tf  # lazy: tensorflow (2.8 s)
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
        import tensorflow as tf  # lazy: tensorflow (2.8 s)
        with tf.io.gfile.GFile(path, "wb" if binary else "w") as f:
            f.write(data)
        return
    with open(path, "wb" if binary else "w", **({} if binary else {"encoding": "utf-8"})) as f:
        f.write(data)


def makedirs(path: str) -> None:
    if is_uri(path):
        import tensorflow as tf  # lazy: tensorflow (2.8 s)
        tf.io.gfile.makedirs(path)
    else:
        os.makedirs(path, exist_ok=True)


def copy_tree(src: str, dst: str) -> None:
    """Copy a folder tree through ``tf.io.gfile``, so either side may be local or ``gs://``."""
    import tensorflow as tf  # lazy: tensorflow (2.8 s)

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


# ------------------------------------------------------------------------------------ publishing a staged output
class PublishError(OSError):
    """Moving a finished output out of its staging folder failed (a storage or network fault, not bad input): what had
    been moved was removed again, and so was the staging folder."""


def _is_local(path: str) -> bool:
    from apache_beam.io.filesystems import FileSystems  # lazy: apache_beam (1.7 s)

    return FileSystems.get_scheme(path) in (None, "file")


def remove_tree(path: str) -> None:
    """``path`` and everything under it: a local folder as a whole, on an object store every object under the
    prefix ``path/`` (nested too). Nothing there is no error."""
    from apache_beam.io.filesystems import FileSystems  # lazy: apache_beam (1.7 s)

    path = path.rstrip("/")
    if _is_local(path):
        if os.path.lexists(path):
            FileSystems.delete([path])
    elif FileSystems.match([path + "/**"])[0].metadata_list:
        FileSystems.delete([path + "/"])


def publish(staging: str, output: str, names: Optional[Iterable[str]] = None, last: Iterable[str] = ()) -> None:
    """Move the finished files under ``staging`` to the same relative paths under ``output``, all or nothing, and
    remove ``staging``.

    ``names``: the top-level entries of ``staging`` to publish (default: all; a name not there is skipped); ``last``:
    the completion markers (``counts.json``, an info file): moved after everything else, so a reader that waits for
    them never sees part of the output. A local ``staging`` beside an ``output`` that does not exist or is an empty
    folder is renamed in one atomic step; otherwise (object stores have no folder rename, and a staging folder inside
    its output cannot be renamed onto it) file by file. If a move fails, every file already moved and every local
    folder created for them is removed, ``staging`` too, and :class:`PublishError` says so: ``output`` is left as it
    was (a killed process can still leave part of it, but never the markers before the rest)."""
    from apache_beam.io.filesystems import FileSystems  # lazy: apache_beam (1.7 s)

    staging, output = staging.rstrip("/"), output.rstrip("/")
    local = _is_local(staging) and _is_local(output)
    whole = names is None and local and posixpath.dirname(os.path.abspath(staging)) != os.path.abspath(output)
    if whole and (not os.path.exists(output) or (os.path.isdir(output) and not os.listdir(output))):
        try:
            os.replace(staging, output)  # an empty folder is replaced too (POSIX rename)
        except OSError as exc:
            remove_tree(staging)
            raise PublishError(f"publishing {output} failed: renaming {staging} to it: {exc} (the staging folder was "
                               "removed; nothing is published)") from exc
        return
    wanted = None if names is None else {n.strip("/") for n in names}
    found = sorted(m.path[len(staging) + 1:] for m in FileSystems.match([staging + "/**"])[0].metadata_list
                   if not m.path.endswith("/"))
    rels = [r for r in found if wanted is None or r.split("/", 1)[0] in wanted]
    markers = {n.strip("/") for n in last}
    rels = [r for r in rels if r not in markers] + [r for r in rels if r in markers]
    moved: List[str] = []
    created: List[str] = []
    try:
        for rel in rels:
            dst = posixpath.join(output, rel)
            parent = os.path.dirname(dst)
            if local and not os.path.isdir(parent):
                missing = parent
                while missing and not os.path.isdir(missing):  # the folders this move creates, outermost last
                    created.append(missing)
                    missing = os.path.dirname(missing)
                os.makedirs(parent)
            FileSystems.rename([posixpath.join(staging, rel)], [dst])
            moved.append(dst)
    except BaseException as exc:  # Ctrl-C too: undo, then let it through as it is
        undone = _undo(moved, created)
        remove_tree(staging)
        if not isinstance(exc, Exception):
            raise
        raise PublishError(f"publishing {output} failed after moving {len(moved)} of {len(rels)} files from {staging}"
                           f" ({undone}; the staging folder was removed): {type(exc).__name__}: {exc}") from exc
    remove_tree(staging)


def _undo(moved: List[str], created: List[str]) -> str:
    """Remove what a failed :func:`publish` moved; says what it did."""
    from apache_beam.io.filesystems import FileSystems  # lazy: apache_beam (1.7 s)

    left = []
    for path in reversed(moved):
        try:
            FileSystems.delete([path])
        except Exception:  # noqa: BLE001 - keep undoing; the caller reports the first fault
            left.append(path)
    for folder in sorted(set(created), key=len, reverse=True):
        try:
            os.rmdir(folder)
        except OSError:
            pass
    if left:
        return f"{len(left)} of them could not be removed again: {', '.join(left)}"
    return f"{'they were removed again' if moved else 'none had been moved'}: nothing is published"
