"""Vertex AI Model Registry: each pushed version becomes a new version of ``release.vertex_model``.

Split like ``pipeline/cloud/submit.py``: :func:`upload_request` builds the request offline (what a test asserts on) and
:func:`upload` sends it (credentials and network). The first upload creates the model under its id; later ones
name it as ``parent_model``, which is how Vertex AI adds a version (kubeflow/pipelines#8257). Every version gets the
alias ``v<N>`` of its pushed folder, plus ``release.vertex_version_aliases`` (Vertex AI moves an alias to the newest
version that claims it, e.g. ``production``).

The upload follows the push and can fail on its own (credentials, quota, a timeout): :func:`register` records a
successful upload in the version folder (``registry.json``, :func:`components.release.versions.write_registry`), and
the Pusher's rerun, finding the model already pushed without that record, uploads then. One pushed version gets one
registry version: a recorded upload is not sent again, and an upload whose record was lost (the process died
between the two) is found by its alias ``v<N>`` and recorded instead of sent twice.

Missing or unusable credentials are a user error (:class:`RegistryAuthError`) saying how to authenticate, as for
``submit``.

With :data:`RECORD_VAR` set (``albert-pipeline rehearse`` sets it for every task it starts), :func:`upload` sends
nothing: it appends the request it would send to that file, one JSON line each, and answers as the registry would,
with the model and ``recorded-<n>`` as the version id.
"""
from __future__ import annotations

import json
import os
from typing import Any, Dict, Mapping

from components.cloud_auth import google_credentials
from config.errors import UserError

__all__ = ["RECORD_VAR", "RegistryAuthError", "parse_model", "version_labels", "upload_request", "upload", "register",
           "recorded_requests"]

RECORD_VAR = "ALBERT_TFX_REGISTRY_RECORD"  # a file: record the requests there, send nothing


class RegistryAuthError(UserError, ValueError):
    """No usable Google Cloud credentials for the Model Registry upload."""


def parse_model(resource: str) -> Dict[str, str]:
    """``projects/P/locations/R/models/M`` → {project, region, model_id, parent}."""
    parts = resource.split("/")
    return {"project": parts[1], "region": parts[3], "model_id": parts[5], "parent": "/".join(parts[:4])}


def version_labels(model_name: str, version: int, forced: bool) -> Dict[str, str]:
    """The registry version's labels: the pipeline, the pushed version and whether its blessing was forced."""
    pipeline = "".join(c if c.isalnum() or c in "-_" else "-" for c in model_name.lower())[:63]  # a label value
    return {"pipeline": pipeline, "version": str(version), "blessing": "forced" if forced else "blessed"}


def upload_request(settings: Mapping[str, Any], artifact_uri: str, version: int, labels: Mapping[str, str],
                   exists: bool):
    """The ``UploadModelRequest`` for pushed version ``version`` at ``artifact_uri`` (a ``gs://`` folder holding
    the SavedModel). ``exists``: whether the parent model is already in the registry."""
    from google.cloud.aiplatform_v1.types import model as gca_model  # lazy: google.cloud.aiplatform_v1 (0.9 s)
    from google.cloud.aiplatform_v1.types import model_service  # lazy: google.cloud.aiplatform_v1 (0.9 s)

    where = parse_model(settings["vertex_model"])
    model = gca_model.Model(
        display_name=where["model_id"],
        artifact_uri=artifact_uri,
        container_spec=gca_model.ModelContainerSpec(image_uri=settings["vertex_serving_image"]),
        version_aliases=[f"v{version}", *settings.get("vertex_version_aliases", [])],
        version_description=f"pushed version {version}: {artifact_uri}",
        labels=dict(labels),
    )
    request = model_service.UploadModelRequest(parent=where["parent"], model=model)
    if exists:
        request.parent_model = settings["vertex_model"]
    else:
        request.model_id = where["model_id"]
    return request


def _client(region: str, credentials=None):
    from google.cloud.aiplatform_v1.services.model_service import ModelServiceClient  # lazy: google.cloud.aiplatform_v1 (0.9 s)

    return ModelServiceClient(credentials=credentials,
                              client_options={"api_endpoint": f"{region}-aiplatform.googleapis.com"})


def upload(settings: Mapping[str, Any], artifact_uri: str, version: int, labels: Mapping[str, str],
           credentials=None, timeout: float = 1800) -> Dict[str, str]:
    """Upload the version (network), unless the registry already holds it: a version of the model with the alias
    ``v<version>`` and this ``artifact_uri`` (GetModel accepts ``MODEL@ALIAS``). Returns {model, version_id} of
    the registry's version. With :data:`RECORD_VAR` set, records the request instead of sending it."""
    if os.environ.get(RECORD_VAR):
        return _record(os.environ[RECORD_VAR], settings, artifact_uri, version, labels)
    from google.api_core import exceptions as api_exceptions  # lazy: google.api_core (0.09 s)

    where = parse_model(settings["vertex_model"])
    with google_credentials(RegistryAuthError, " for the Model Registry upload"):
        client = _client(where["region"], credentials)
        try:
            client.get_model(name=settings["vertex_model"])
            exists = True
        except api_exceptions.NotFound:
            exists = False
        if exists:
            try:
                held = client.get_model(name=f"{settings['vertex_model']}@v{version}")
            except api_exceptions.NotFound:
                held = None
            if held is not None and held.artifact_uri == artifact_uri:
                return {"model": settings["vertex_model"], "version_id": held.version_id}
        request = upload_request(settings, artifact_uri, version, labels, exists)
        response = client.upload_model(request=request).result(timeout=timeout)
    return {"model": response.model, "version_id": response.model_version_id}


def register(settings: Mapping[str, Any], version: Mapping[str, Any], credentials=None) -> Dict[str, str]:
    """The Model Registry version of the pushed ``version`` (an entry of
    :func:`components.release.versions.list_versions`): the one its folder records, else uploaded now and then
    recorded there. Raises what the upload raised, recording nothing: the next call uploads again."""
    from components.release import versions  # lazy: tensorflow (2.9 s)

    if version.get("registry"):
        return dict(version["registry"])
    uploaded = upload(settings, version["path"], version["version"],
                      version_labels(settings["model_name"], version["version"], version["forced"]), credentials)
    versions.write_registry(version["path"], uploaded)
    return uploaded


def recorded_requests(path: str) -> list:
    """The requests recorded in ``path`` (see :data:`RECORD_VAR`), oldest first: {model, request}."""
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def _record(path: str, settings: Mapping[str, Any], artifact_uri: str, version: int,
            labels: Mapping[str, str]) -> Dict[str, str]:
    earlier = [r for r in recorded_requests(path) if r["model"] == settings["vertex_model"]]
    request = upload_request(settings, artifact_uri, version, labels, exists=bool(earlier))
    with open(path, "a") as f:
        f.write(json.dumps({"model": settings["vertex_model"], "request": type(request).to_dict(request)},
                           sort_keys=True) + "\n")
    return {"model": settings["vertex_model"], "version_id": f"recorded-{len(earlier) + 1}"}
