"""Versioned pushes: a destination folder holds one folder per version, ``1``, ``2``, ... (TF Serving's layout).

A version appears whole or not at all, and two pushers never share a number or a file:

* on a local destination the version is built in ``<destination>/.staging-<random>`` and renamed to its number in
  one ``rename`` (which fails when another pusher took the number first: the next number is tried);
* on ``gs://`` (no folder rename) a pusher first claims its number by creating the object ``.claims/<N>`` with a
  create-only write (:func:`create_only`: GCS's ``ifGenerationMatch=0`` precondition; of two pushers that try one
  number, exactly one succeeds and the other tries the next). It then copies every file under ``<N>/`` in
  :func:`copy_order` (the SavedModel's ``saved_model.pb`` after every other file) and :data:`RECORD_FILE` last. A
  failed push removes its own ``<N>/`` and nothing else; its claim stays, so the number is never reused. Before
  its number, a pusher claims the model itself (``.claims/model-<hash of its key>``, :func:`model_claim`): two
  overlapping runs that trained the same run push one version of it, and the second reports that version.

Either way a folder is a version only when it holds :data:`RECORD_FILE`: readers (:func:`list_versions`, the
``releases`` command) never see a partial push. Numbers are unique and only grow: the next one is above every
numbered folder, complete or not, and every claim. After the push the Pusher may add :data:`REGISTRY_FILE` (the
Model Registry's answer), written only once the upload succeeded.

Local paths go through ``tf.io.gfile``; ``gs://`` paths through Beam's ``FileSystems`` (its GCS filesystem, or
the test stand-in ``tests/gcs_standin.py`` registered for the scheme).
"""
from __future__ import annotations

import hashlib
import json
import posixpath
import re
import shutil
import time
import uuid
from typing import Any, Callable, Dict, List, Optional, Tuple

import tensorflow as tf
from google.api_core.exceptions import PreconditionFailed

from trainer.files import VERSION_RECORD_FILE

__all__ = ["RECORD_FILE", "REGISTRY_FILE", "CLAIMS_DIR", "STAGING_PREFIX", "SAVED_MODEL_FILE", "is_destination",
           "list_versions", "next_version", "publish", "find_version", "copy_order", "create_only", "write_registry",
           "ModelClaimed", "model_claim", "wait_for_model"]

RECORD_FILE = VERSION_RECORD_FILE  # written last: the folder's record, and the mark that it is complete
REGISTRY_FILE = "registry.json"  # the Model Registry's {model, version_id}, written after a successful upload
CLAIMS_DIR = ".claims"  # gs:// only: one create-only object per number ever taken
STAGING_PREFIX = ".staging-"
CLAIM_WAIT_S = 1800.0  # how long a pusher waits for the version of a model another pusher claimed (a push's copy)
SAVED_MODEL_FILE = "saved_model.pb"  # what TF Serving's loader opens first: copied after every other file
_NUMBER = re.compile(r"[0-9]+")


def _is_remote(path: str) -> bool:
    return "://" in path


# --------------------------------------------------------------------------------------- gs:// through Beam
def _objects(destination: str) -> List[str]:
    """Every object under ``destination``, as names relative to it (``3/saved_model.pb``, ``.claims/3``)."""
    from apache_beam.io.filesystems import FileSystems  # lazy: apache_beam (1.1 s)

    prefix = destination.rstrip("/") + "/"
    found = FileSystems.match([prefix + "**"])[0].metadata_list
    return sorted(m.path[len(prefix):] for m in found)


def _read_remote(path: str) -> bytes:
    from apache_beam.io.filesystem import CompressionTypes  # lazy: apache_beam (1.1 s)
    from apache_beam.io.filesystems import FileSystems  # lazy: apache_beam (1.1 s)

    with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
        return f.read()


def _write_remote(path: str, source) -> None:
    """Write the bytes of the open binary file ``source`` (or ``bytes``) as the object ``path``."""
    from apache_beam.io.filesystem import CompressionTypes  # lazy: apache_beam (1.1 s)
    from apache_beam.io.filesystems import FileSystems  # lazy: apache_beam (1.1 s)

    with FileSystems.create(path, mime_type="application/octet-stream",
                            compression_type=CompressionTypes.UNCOMPRESSED) as out:
        if isinstance(source, bytes):
            out.write(source)
        else:
            shutil.copyfileobj(source, out, 1 << 20)


def _remove_remote_folder(path: str) -> None:
    """Delete every object under ``path/`` (this push's folder; ``3/`` never matches ``30/``)."""
    from apache_beam.io.filesystems import FileSystems  # lazy: apache_beam (1.1 s)

    if _objects(path):
        FileSystems.delete([path.rstrip("/") + "/"])


def _remove_remote_object(path: str) -> None:
    from apache_beam.io.filesystems import FileSystems  # lazy: apache_beam (1.1 s)

    FileSystems.delete([path])


def create_only(path: str, data: bytes = b"") -> bool:
    """Create the object ``path`` unless it exists; True when this call created it, False when it was there.

    The seam is the filesystem Beam has registered for the path's scheme: one that offers ``create_only(path,
    data)`` (the test stand-in, with ``os.O_EXCL``) answers itself. Otherwise ``gs://`` is written through
    google-cloud-storage with the precondition ``if_generation_match=0`` (GCS refuses the write with 412 when any
    generation of the object exists), using the client and credentials Beam's GCS filesystem uses. A write retried
    after a lost reply may answer False for an object this call created: the number is then skipped, never shared.
    """
    from apache_beam.io.filesystems import FileSystems  # lazy: apache_beam (1.1 s)

    own = getattr(FileSystems.get_filesystem(path), "create_only", None)
    if own is not None:
        return own(path, data)
    if not path.startswith("gs://"):
        raise ValueError(f"{path}: create-only writes are implemented for gs:// only")
    from apache_beam.io.gcp import gcsio  # lazy: apache_beam (1.1 s)
    from apache_beam.options.pipeline_options import PipelineOptions  # lazy: apache_beam (1.1 s)

    bucket, name = gcsio.parse_gcs_path(path)
    blob = gcsio.create_storage_client(PipelineOptions()).bucket(bucket).blob(name)
    try:
        blob.upload_from_string(data, content_type="application/octet-stream", if_generation_match=0)
    except PreconditionFailed:
        return False
    return True


# --------------------------------------------------------------------------------------------------- readers
def is_destination(destination: str) -> bool:
    """Whether ``destination`` exists: a local folder, or a ``gs://`` prefix holding at least one object."""
    return bool(_objects(destination)) if _is_remote(destination) else tf.io.gfile.isdir(destination)


def _layout(destination: str) -> Tuple[List[int], List[int], Dict[int, set]]:
    """(numbered folders, claimed numbers, {number: names directly in its folder}) of ``destination``."""
    if not _is_remote(destination):
        if not tf.io.gfile.isdir(destination):
            return [], [], {}
        names = (n.rstrip("/") for n in tf.io.gfile.listdir(destination))
        numbers = sorted(int(n) for n in names
                         if _NUMBER.fullmatch(n) and tf.io.gfile.isdir(posixpath.join(destination, n)))
        inside = {n: {m.rstrip("/") for m in tf.io.gfile.listdir(posixpath.join(destination, str(n)))}
                  for n in numbers}
        return numbers, [], inside
    inside: Dict[int, set] = {}
    claims = []
    for name in _objects(destination):
        head, _, rest = name.partition("/")
        if _NUMBER.fullmatch(head) and rest:
            inside.setdefault(int(head), set()).add(rest.split("/", 1)[0])
        elif head == CLAIMS_DIR and _NUMBER.fullmatch(rest):
            claims.append(int(rest))
    return sorted(inside), sorted(claims), inside


def _read(path: str) -> bytes:
    if _is_remote(path):
        return _read_remote(path)
    with tf.io.gfile.GFile(path, "rb") as f:
        return f.read()


def next_version(destination: str) -> int:
    """1 + the highest number in ``destination``: numbered folders (complete or not) and, on ``gs://``, claims;
    1 for an empty or new destination."""
    numbers, claims, _ = _layout(destination)
    return max(numbers + claims, default=0) + 1


def list_versions(destination: str) -> List[Dict[str, Any]]:
    """Every complete version, oldest first: its record plus ``path`` and ``registry`` (the content of
    :data:`REGISTRY_FILE`; None when no Model Registry upload succeeded for it)."""
    numbers, _, inside = _layout(destination)
    out = []
    for number in numbers:
        if RECORD_FILE not in inside[number]:
            continue
        path = posixpath.join(destination, str(number))
        registry = (json.loads(_read(posixpath.join(path, REGISTRY_FILE))) if REGISTRY_FILE in inside[number]
                    else None)
        out.append({**json.loads(_read(posixpath.join(path, RECORD_FILE))), "path": path, "registry": registry})
    return out


def find_version(destination: str, model_uri: str, model_key: Optional[str] = None) -> Optional[Dict[str, Any]]:
    """The newest complete version that holds the model at ``model_uri``, or the same model (``model_key``, see
    :func:`components.release.package.model_key`) from another artifact; None if none does."""
    found = [v for v in list_versions(destination) if (v.get("model") or {}).get("uri") == model_uri
             or (model_key is not None and v.get("model_key") == model_key)]
    return found[-1] if found else None


class ModelClaimed(RuntimeError):
    """Another pusher claimed this model on the ``gs://`` destination (:func:`publish`): it is pushing it, or has."""

    def __init__(self, claim: str):
        super().__init__(f"{claim}: another pusher holds this model's claim")
        self.claim = claim


def model_claim(destination: str, model_key: str) -> str:
    """The create-only object that one pusher of the model ``model_key`` holds on a ``gs://`` destination."""
    return posixpath.join(destination, CLAIMS_DIR, "model-" + hashlib.sha256(model_key.encode()).hexdigest()[:16])


def wait_for_model(destination: str, model_key: str, timeout_s: float, poll_s: float = 10.0) -> Dict[str, Any]:
    """The version of ``model_key`` another pusher is pushing, once it is complete. Raises :class:`RuntimeError`
    naming the claim when none appears within ``timeout_s`` (that push died: remove the claim, then rerun)."""
    deadline = time.monotonic() + timeout_s
    while True:
        found = [v for v in list_versions(destination) if v.get("model_key") == model_key]
        if found:
            return found[-1]
        if time.monotonic() >= deadline:
            raise RuntimeError(f"{model_claim(destination, model_key)} claims model {model_key}, but no version of it "
                               f"appeared in {timeout_s:.0f} s: if no other run is pushing it, delete that object "
                               f"and rerun")
        time.sleep(poll_s)


# ---------------------------------------------------------------------------------------------------- writers
def copy_file(src: str, dst: str) -> None:
    """One file of a push, from this machine to the destination (the seam a test uses to make a push fail
    midway)."""
    if _is_remote(dst):
        with open(src, "rb") as f:
            _write_remote(dst, f)
    else:
        tf.io.gfile.copy(src, dst, overwrite=True)


def _files(folder: str) -> List[str]:
    """Every file under ``folder``, as paths relative to it, sorted."""
    out = []
    for dirpath, _, names in tf.io.gfile.walk(folder):
        rel = posixpath.relpath(dirpath, folder) if dirpath != folder else ""
        out.extend(posixpath.join(rel, n) if rel else n for n in names)
    return sorted(out)


def copy_order(files: List[str]) -> List[str]:
    """The order a push copies ``files`` (paths relative to the version folder): every other file, sorted, then each
    SavedModel's :data:`SAVED_MODEL_FILE` (the version's own last; ``preprocess/``, ``encoder/`` and ``text_model/``
    hold theirs). A loader that opens a ``saved_model.pb`` thus finds the variables it names already there.
    :data:`RECORD_FILE` is not among them: it is written after all of them."""
    last = [f for f in files if posixpath.basename(f) == SAVED_MODEL_FILE]
    return sorted(f for f in files if f not in last) + sorted(last, key=lambda f: (f == SAVED_MODEL_FILE, f))


def _copy_tree(src: str, dst: str) -> None:
    for rel in copy_order(_files(src)):
        target = posixpath.join(dst, rel)
        if not _is_remote(target):
            tf.io.gfile.makedirs(posixpath.dirname(target))
        copy_file(posixpath.join(src, rel), target)


def _record_bytes(record: Dict[str, Any]) -> bytes:
    return json.dumps(record, indent=2, sort_keys=True).encode("utf-8")


def _write(path: str, data: bytes) -> None:
    if _is_remote(path):
        _write_remote(path, data)
    else:
        with tf.io.gfile.GFile(path, "wb") as f:
            f.write(data)


def write_registry(path: str, uploaded: Dict[str, Any]) -> None:
    """Record in the version folder ``path`` that its Model Registry upload succeeded (:data:`REGISTRY_FILE`)."""
    _write(posixpath.join(path, REGISTRY_FILE), _record_bytes(uploaded))


def _claim(destination: str, attempts: int) -> int:
    """A number no other pusher holds: the first of ``next_version``, +1, ... whose claim this call created."""
    number = next_version(destination)
    for _ in range(attempts):
        if create_only(posixpath.join(destination, CLAIMS_DIR, str(number))):
            return number
        number += 1  # another pusher holds it
    raise RuntimeError(f"{destination}: {attempts} version numbers were taken while pushing; try again")


def publish(built: str, destination: str, finish: Callable[[int], Dict[str, Any]],
            attempts: int = 5, model_key: Optional[str] = None) -> Tuple[int, str]:
    """Push the folder ``built`` (on this machine) to ``destination`` as its next version.

    ``finish(number)`` writes the files that name the version (the model card) into ``built`` and returns the
    version's :data:`RECORD_FILE` content. Returns (number, path). Raises whatever a write raised, after removing
    what this push wrote (and only that).

    ``model_key`` (``gs://``): the model's claim (:func:`model_claim`) is taken create-only before a number, so of
    two pushers of one model (two overlapping runs that trained the same run) one pushes and the other gets
    :class:`ModelClaimed`; a failed push gives its model claim back."""
    if _is_remote(destination):
        claim = model_claim(destination, model_key) if model_key else None
        if claim and not create_only(claim, model_key.encode()):
            raise ModelClaimed(claim)
        number = None
        try:
            number = _claim(destination, attempts)
            path = posixpath.join(destination, str(number))
            record = finish(number)
            _copy_tree(built, path)
            _write(posixpath.join(path, RECORD_FILE), _record_bytes(record))  # last: from here on it is a version
        except BaseException:
            if number is not None:
                _remove_remote_folder(posixpath.join(destination, str(number)))  # its number claim stays
            if claim:
                _remove_remote_object(claim)  # the model may be pushed by a rerun
            raise
        return number, path
    tf.io.gfile.makedirs(destination)
    staging = posixpath.join(destination, STAGING_PREFIX + uuid.uuid4().hex[:12])
    try:
        for _ in range(attempts):
            number = next_version(destination)
            path = posixpath.join(destination, str(number))
            record = finish(number)
            if tf.io.gfile.exists(staging):
                tf.io.gfile.rmtree(staging)
            _copy_tree(built, staging)
            _write(posixpath.join(staging, RECORD_FILE), _record_bytes(record))
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
