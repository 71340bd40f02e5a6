"""``albert-pipeline deploy``: a model folder in the Vertex AI Model Registry, served by this project's image, on an
endpoint.

The upload is the Model Registry upload of the release (:func:`components.release.registry.upload_request`: the
parent model, the ``v<N>`` alias, the labels), with the container spec that runs ``albert-pipeline serve`` in the
project's image instead of a prebuilt TensorFlow image (which stops at TF 2.15 and has no TF Text ops): its command,
port and routes, which Vertex AI passes back as ``AIP_HTTP_PORT``, ``AIP_HEALTH_ROUTE`` and ``AIP_PREDICT_ROUTE``,
and the model folder as ``AIP_STORAGE_URI``. Then the new version is deployed to an endpoint (``--endpoint``, or
one created under ``--endpoint-name``) with all the traffic. :func:`deploy_requests` builds every request offline
(what tests assert on); :func:`send` needs credentials and network, and is refused without credentials exactly as
``submit`` is (one line, exit 2: :func:`pipeline.cloud.submit.google_credentials`).
"""
from __future__ import annotations

import json
import posixpath
import re
import sys
from typing import Any, Dict, Optional

from components.release import registry
from pipeline.cloud.submit import CloudConfigError, google_credentials

__all__ = ["SERVE_COMMAND", "deploy_requests", "send", "add_deploy_command", "cmd_deploy"]

SERVE_COMMAND = ["albert-pipeline", "serve"]  # the image's serving entrypoint (its ENTRYPOINT is Beam's boot)
DEFAULT_MACHINE_TYPE = "n1-standard-4"
_ENDPOINT = re.compile(r"projects/[^/]+/locations/[a-z0-9-]+/endpoints/[0-9A-Za-z_-]+")


def deploy_requests(*, model_uri: str, vertex_model: str, image: str, version: int, forced: bool = False,
                    aliases=(), exists: bool = False, endpoint: Optional[str] = None,
                    endpoint_name: Optional[str] = None, machine_type: str = DEFAULT_MACHINE_TYPE,
                    min_replicas: int = 1, max_replicas: int = 1) -> Dict[str, Any]:
    """{"upload": UploadModelRequest, "endpoint": CreateEndpointRequest or None, "deploy": DeployModelRequest}
    (the deploy request's endpoint and model version are filled in by :func:`send` once they exist)."""
    from google.cloud.aiplatform_v1.types import endpoint as gca_endpoint  # lazy: google.cloud.aiplatform_v1 (0.9 s)
    from google.cloud.aiplatform_v1.types import endpoint_service  # lazy: google.cloud.aiplatform_v1 (0.9 s)
    from google.cloud.aiplatform_v1.types import machine_resources  # lazy: google.cloud.aiplatform_v1 (0.9 s)
    from google.cloud.aiplatform_v1.types import model as gca_model  # lazy: google.cloud.aiplatform_v1 (0.9 s)
    from pipeline.serving import serving_instances as contract  # lazy: numpy (0.3 s; the CLI's parser needs none)

    if not model_uri.startswith("gs://"):
        raise CloudConfigError(f"--model {model_uri}: Vertex AI reads the model from Cloud Storage, give its gs:// "
                               f"folder")
    if endpoint and not _ENDPOINT.fullmatch(endpoint):
        raise CloudConfigError(f"--endpoint {endpoint!r} must be projects/PROJECT/locations/REGION/endpoints/ID")
    if min_replicas < 1 or max_replicas < min_replicas:
        raise CloudConfigError(f"--min-replicas {min_replicas} / --max-replicas {max_replicas}: need 1 <= min <= max")
    settings = {"vertex_model": vertex_model, "vertex_serving_image": image, "vertex_version_aliases": list(aliases)}
    where = registry.parse_model(vertex_model)
    if endpoint and registry.parse_model(endpoint)["parent"] != where["parent"]:
        raise CloudConfigError(f"--endpoint {endpoint} is not in {where['parent']}, where the model is")
    upload = registry.upload_request(settings, model_uri, version,
                                     registry.version_labels(where["model_id"], version, forced), exists)
    upload.model.container_spec = gca_model.ModelContainerSpec(
        image_uri=image, command=SERVE_COMMAND, ports=[gca_model.Port(container_port=contract.DEFAULT_PORT)],
        health_route=contract.DEFAULT_HEALTH_ROUTE, predict_route=contract.DEFAULT_PREDICT_ROUTE)
    create = None
    if not endpoint:
        create = endpoint_service.CreateEndpointRequest(
            parent=where["parent"], endpoint=gca_endpoint.Endpoint(display_name=endpoint_name or where["model_id"]))
    deploy = endpoint_service.DeployModelRequest(
        endpoint=endpoint or "",
        deployed_model=gca_endpoint.DeployedModel(
            model=vertex_model, display_name=f"{where['model_id']}-v{version}",
            dedicated_resources=machine_resources.DedicatedResources(
                machine_spec=machine_resources.MachineSpec(machine_type=machine_type),
                min_replica_count=min_replicas, max_replica_count=max_replicas)),
        traffic_split={"0": 100})
    return {"upload": upload, "endpoint": create, "deploy": deploy}


def send(requests: Dict[str, Any], credentials=None, timeout: float = 3600) -> Dict[str, str]:
    """Upload, create the endpoint if asked, deploy (network); {model, version_id, endpoint}."""
    from google.api_core import exceptions as api_exceptions  # lazy: google.api_core (0.09 s)
    from google.cloud.aiplatform_v1.services.endpoint_service import EndpointServiceClient  # lazy: google.cloud.aiplatform_v1 (0.9 s)
    from google.cloud.aiplatform_v1.services.model_service import ModelServiceClient  # lazy: google.cloud.aiplatform_v1 (0.9 s)

    region = registry.parse_model(requests["upload"].parent + "/models/x")["region"]
    options = {"api_endpoint": f"{region}-aiplatform.googleapis.com"}
    with google_credentials():
        models = ModelServiceClient(credentials=credentials, client_options=options)
        endpoints = EndpointServiceClient(credentials=credentials, client_options=options)
        upload = requests["upload"]
        try:  # a later version names the registry's model as its parent (components/release/registry.py)
            models.get_model(name=requests["deploy"].deployed_model.model)
            upload.parent_model, upload.model_id = requests["deploy"].deployed_model.model, ""
        except api_exceptions.NotFound:
            pass
        uploaded = models.upload_model(request=requests["upload"]).result(timeout=timeout)
        deploy = requests["deploy"]
        if requests["endpoint"] is not None:
            deploy.endpoint = endpoints.create_endpoint(request=requests["endpoint"]).result(timeout=timeout).name
        deploy.deployed_model.model = f"{uploaded.model}@{uploaded.model_version_id}"
        endpoints.deploy_model(request=deploy).result(timeout=timeout)
    return {"model": uploaded.model, "version_id": uploaded.model_version_id, "endpoint": deploy.endpoint}


def add_deploy_command(sub, add_config_args) -> None:
    p = sub.add_parser("deploy", help="upload a model folder to the Vertex AI Model Registry with the serving "
                                      "container (`albert-pipeline serve` in IMAGE) and deploy it to an endpoint")
    add_config_args(p)  # release.vertex_model, release.vertex_version_aliases
    p.add_argument("--model", required=True, help="the gs:// folder of a pushed version or a task model")
    p.add_argument("--image", required=True, help="the project's image (infra/Dockerfile), serving with "
                                                  "`albert-pipeline serve`")
    p.add_argument("--vertex-model", help="projects/P/locations/R/models/M (default: release.vertex_model)")
    p.add_argument("--version", type=int, help="the version number of the v<N> alias (default: the folder's name)")
    p.add_argument("--endpoint", help="projects/P/locations/R/endpoints/ID to deploy to (default: a new endpoint)")
    p.add_argument("--endpoint-name", help="display name of the new endpoint (default: the model id)")
    p.add_argument("--machine-type", default=DEFAULT_MACHINE_TYPE)
    p.add_argument("--min-replicas", type=int, default=1)
    p.add_argument("--max-replicas", type=int, default=1)
    p.add_argument("--dry-run", action="store_true", help="print the requests as JSON, send nothing")
    p.set_defaults(func=cmd_deploy)


def cmd_deploy(args) -> int:
    from pipeline.settings.resolve import config_from_args  # lazy: the configuration (0.02 s)

    release = config_from_args(args).release
    vertex_model = args.vertex_model or release.vertex_model
    if not vertex_model:
        raise CloudConfigError("deploy needs --vertex-model projects/P/locations/R/models/M (or release.vertex_model)")
    if not re.fullmatch(r"projects/[^/]+/locations/[a-z0-9-]+/models/[A-Za-z0-9_-]+", vertex_model):
        raise CloudConfigError(f"--vertex-model {vertex_model!r} must be projects/PROJECT/locations/REGION/models/ID")
    version = args.version
    if version is None:
        name = posixpath.basename(args.model.rstrip("/"))
        if not name.isdigit():
            raise CloudConfigError(f"--model {args.model}: its folder is not a pushed version number; give --version N")
        version = int(name)
    requests = deploy_requests(model_uri=args.model.rstrip("/"), vertex_model=vertex_model, image=args.image,
                               version=version, aliases=release.vertex_version_aliases, endpoint=args.endpoint,
                               endpoint_name=args.endpoint_name, machine_type=args.machine_type,
                               min_replicas=args.min_replicas, max_replicas=args.max_replicas)
    if args.dry_run:
        print(json.dumps({k: type(v).to_dict(v) for k, v in requests.items() if v is not None}, indent=2,
                         sort_keys=True))
        return 0
    result = send(requests)
    print(json.dumps(result, indent=2))
    print(f"albert-pipeline deploy: {result['model']} version {result['version_id']} serves on {result['endpoint']}",
          file=sys.stderr)
    return 0
