"""The Trainer node's TFX components: the local Trainer and the Vertex AI Training one, both publishing the final eval
metrics.

Both run the same ``trainer.task.run_fn``. With ``vertex_training.enabled`` the node is
``tfx.extensions.google_cloud_ai_platform.Trainer``: its executor submits a Vertex AI CustomJob whose
worker pools (:func:`worker_pool_specs`: a chief, and with ``replica_count`` > 1 a pool of workers) run the
pipeline's container image, where TFX's ``GenericExecutor`` calls ``run_fn`` on every machine — on TPU v2/v3
(``cloud-tpu`` + TPU_V3 x 8), a TPU v4/v5e slice (``ct4p-``/``ct5lp-`` machine + ``tpu_topology``) or GPUs
(machine + NVIDIA_* x count, several machines with ``train.strategy=multi_worker``).

Metrics: ``run_fn`` writes ``eval_metrics.json`` into the ``model_run`` artifact, but a ``run_fn``
cannot set artifact properties. The executors here (:class:`MetricsGenericExecutor` locally,
:class:`VertexMetricsGenericExecutor` for Vertex, where the metrics file is read back from the
job's ``model_run`` URI after the job succeeded) run the usual executor, then read that file and set
float custom properties (``eval_mlm_accuracy``, ``eval_sentence_accuracy``, ``final_step`` ...) on the
``model_run`` and ``model`` output artifacts; the orchestrator publishes them to MLMD with the artifacts.

Imports: TFX's own modules, not ``tfx.v1`` (which imports every standard component and extension), and
TFX's Vertex executor (``google.cloud.aiplatform``, ~7 s) only inside the Vertex executor's ``Do``, so that
``run``/``plan``/``compile`` import neither when Vertex is not used.
"""
from __future__ import annotations

import json
import logging
import posixpath
from typing import Any, Dict, List, Optional

import tensorflow as tf
from google.protobuf import json_format
from tfx import types as tfx_types
from tfx.components.trainer import executor as trainer_executor
from tfx.dsl.components.base import base_component, base_executor, executor_spec
from tfx.extensions.google_cloud_ai_platform import constants as vertex_constants
from tfx.proto import trainer_pb2
from tfx.types import standard_artifacts, standard_component_specs
from tfx.types.component_spec import ExecutionParameter
from tfx.utils import json_utils

from config.schema import ConfigError
from trainer.trainer_config import VertexTrainingConfig

log = logging.getLogger(__name__)

EVAL_METRICS_FILE = "eval_metrics.json"
NUM_STEPS_KEY = "num_train_steps"
METRIC_PREFIX = "eval_"
RUN_FACTS = ("start_step", "final_step", "num_replicas")
# tfx.extensions.google_cloud_ai_platform.TRAINING_ARGS_KEY: defined only in TFX's Vertex trainer executor module,
# which imports google.cloud.aiplatform (tests/test_vertex_training.py checks the two agree).
TRAINING_ARGS_KEY = "ai_platform_training_args"


# ------------------------------------------------------------------------------------------------
# Worker pool / CustomJob spec (pure functions)
# ------------------------------------------------------------------------------------------------

def machine_spec(cfg: VertexTrainingConfig) -> Dict[str, Any]:
    """Vertex ``MachineSpec`` (REST field names) for the config's TPU, GPU or CPU machine."""
    spec: Dict[str, Any] = {"machine_type": cfg.machine_type}
    if cfg.accelerator_type:
        spec["accelerator_type"] = cfg.accelerator_type.upper()
    if cfg.accelerator_count:
        spec["accelerator_count"] = int(cfg.accelerator_count)
    if cfg.tpu_topology:
        spec["tpu_topology"] = cfg.tpu_topology
    return spec


def worker_pool_specs(cfg: VertexTrainingConfig, image: str) -> List[Dict[str, Any]]:
    """Worker pools running ``image``; TFX's Vertex runner fills in the container command and args.

    Pool 0 is the chief (one machine); with ``replica_count`` N > 1, pool 1 holds the other N - 1 machines, the
    same machine and image. Vertex AI describes the pools to every machine in ``CLUSTER_SPEC``, which
    ``train.strategy=multi_worker`` reads (``trainer/distribute.py``). TPU v3:
    ``[{"machine_spec": {"machine_type": "cloud-tpu", "accelerator_type": "TPU_V3", "accelerator_count": 8},
    "replica_count": 1, "container_spec": {"image_uri": image}}]``.
    """
    if not image:
        raise ConfigError("config vertex_training.image is invalid: expected a container image URI "
                          "(the pipeline image with this package installed)")

    def pool(replicas: int) -> Dict[str, Any]:
        spec: Dict[str, Any] = {"machine_spec": machine_spec(cfg), "replica_count": replicas,
                                "container_spec": {"image_uri": image}}
        if not cfg.is_tpu():  # TPU VMs come with their own boot disk
            spec["disk_spec"] = {"boot_disk_type": "pd-ssd", "boot_disk_size_gb": int(cfg.boot_disk_size_gb)}
        return spec

    pools = [pool(1)]
    if cfg.replica_count > 1:
        pools.append(pool(int(cfg.replica_count) - 1))
    return pools


def training_job_spec(cfg: VertexTrainingConfig, image: str) -> Dict[str, Any]:
    """The ``ai_platform_training_args`` of the Vertex Trainer: a CustomJob ``job_spec`` plus project."""
    job_spec: Dict[str, Any] = {"worker_pool_specs": worker_pool_specs(cfg, image)}
    if cfg.service_account:
        job_spec["service_account"] = cfg.service_account
    return {"project": cfg.project, "job_spec": job_spec}


def vertex_settings(cfg: VertexTrainingConfig, image: Optional[str] = None) -> Dict[str, Any]:
    """The keys TFX's Vertex Trainer reads from ``custom_config`` (next to the ``run_fn`` keys, see
    ``PipelineConfig.node_parameters``); ``image``: the pipeline's image, used when ``cfg.image`` is unset."""
    return {
        vertex_constants.ENABLE_VERTEX_KEY: True,
        vertex_constants.VERTEX_REGION_KEY: cfg.region,
        TRAINING_ARGS_KEY: training_job_spec(cfg, cfg.image or image),
    }


# ------------------------------------------------------------------------------------------------
# Executors that publish eval metrics as artifact properties
# ------------------------------------------------------------------------------------------------

def read_eval_metrics(model_run_uri: str) -> Dict[str, float]:
    """``eval_metrics.json`` (written by ``run_fn``) → flat float properties; {} when absent."""
    path = posixpath.join(model_run_uri, EVAL_METRICS_FILE)
    if not tf.io.gfile.exists(path):
        return {}
    with tf.io.gfile.GFile(path) as f:
        info = json.load(f)
    props = {METRIC_PREFIX + k: float(v) for k, v in (info.get("eval_metrics") or {}).items()}
    props.update({k: float(info[k]) for k in RUN_FACTS if isinstance(info.get(k), (int, float))})
    return props


def publish_eval_metrics(output_dict: Dict[str, List[Any]]) -> Dict[str, float]:
    """Set the metrics as float custom properties on the ``model_run`` and ``model`` output artifacts."""
    runs = output_dict.get("model_run") or []
    if not runs:
        return {}
    props = read_eval_metrics(runs[0].uri)
    for key in ("model_run", "model"):
        for artifact in output_dict.get(key) or []:
            for name, value in props.items():
                artifact.set_float_custom_property(name, value)
    if props:
        log.info("published eval metrics to MLMD: %s", props)
    return props


def apply_num_train_steps(exec_properties: Dict[str, Any]) -> Dict[str, Any]:
    """``num_train_steps`` (a plain int parameter, so it can be a pipeline runtime parameter: a proto
    field inside ``train_args`` cannot) becomes ``train_args.num_steps``, which ``run_fn`` reads."""
    props = dict(exec_properties)
    steps = props.pop(NUM_STEPS_KEY, None)
    if steps is None:
        return props
    args = props.get(standard_component_specs.TRAIN_ARGS_KEY)
    message = trainer_pb2.TrainArgs()
    if isinstance(args, trainer_pb2.TrainArgs):
        message.CopyFrom(args)
    elif args:
        json_format.Parse(args, message)
    message.num_steps = int(steps)
    props[standard_component_specs.TRAIN_ARGS_KEY] = json_format.MessageToJson(message, sort_keys=True)
    return props


class MetricsGenericExecutor(trainer_executor.GenericExecutor):
    """TFX's GenericExecutor (calls ``run_fn``), then publishes ``eval_metrics.json`` as properties."""

    def Do(self, input_dict, output_dict, exec_properties):
        result = super().Do(input_dict, output_dict, apply_num_train_steps(exec_properties))
        publish_eval_metrics(output_dict)
        return result


class VertexMetricsGenericExecutor(base_executor.BaseExecutor):
    """Submits the Vertex CustomJob through TFX's Vertex ``GenericExecutor`` (the job runs TFX's GenericExecutor →
    ``run_fn`` in the image) and, once it has succeeded, publishes ``eval_metrics.json`` from the job's
    ``model_run`` URI.

    It wraps that executor instead of subclassing it so that importing this module does not import
    ``google.cloud.aiplatform``; the class path recorded in compiled specs stays this module's.
    """

    def Do(self, input_dict, output_dict, exec_properties):
        from tfx.extensions.google_cloud_ai_platform.trainer import executor as vertex_executor  # lazy: tfx (1.8 s)

        result = vertex_executor.GenericExecutor(self._context).Do(
            input_dict, output_dict, apply_num_train_steps(exec_properties))
        publish_eval_metrics(output_dict)
        return result


class AlbertTrainerSpec(standard_component_specs.TrainerSpec):
    """TFX's TrainerSpec plus ``num_train_steps`` as its own int parameter."""

    PARAMETERS = {**standard_component_specs.TrainerSpec.PARAMETERS,
                  NUM_STEPS_KEY: ExecutionParameter(type=int, optional=True)}


class AlbertTrainer(base_component.BaseComponent):
    """TFX's Trainer (GenericExecutor → ``run_fn``) whose step count is a plain parameter.

    Same inputs, outputs and executor contract as ``tfx.components.Trainer``; ``num_train_steps``
    overrides ``train_args.num_steps`` in the executor (:func:`apply_num_train_steps`).
    """

    SPEC_CLASS = AlbertTrainerSpec
    EXECUTOR_SPEC = executor_spec.ExecutorClassSpec(MetricsGenericExecutor)

    def __init__(self, *, examples, run_fn: str, custom_config: Dict[str, Any], num_train_steps: Any,
                 eval_args: Dict[str, Any], train_args: Dict[str, Any]):
        spec = AlbertTrainerSpec(
            examples=examples, run_fn=run_fn, custom_config=json_utils.dumps(custom_config),
            train_args=trainer_pb2.TrainArgs(**train_args), eval_args=trainer_pb2.EvalArgs(**eval_args),
            num_train_steps=num_train_steps,
            model=tfx_types.Channel(type=standard_artifacts.Model),
            model_run=tfx_types.Channel(type=standard_artifacts.ModelRun))
        super().__init__(spec=spec)


class VertexTrainer(AlbertTrainer):
    """The same Trainer run as a Vertex AI Training CustomJob, with the metrics-publishing executor."""

    EXECUTOR_SPEC = executor_spec.ExecutorClassSpec(VertexMetricsGenericExecutor)


# ------------------------------------------------------------------------------------------------
# Node factory
# ------------------------------------------------------------------------------------------------

def create_trainer(parameters: Dict[str, Any], examples):
    """The Trainer node with ``parameters`` (``PipelineConfig.node_parameters()["Trainer"]``, whose
    ``num_train_steps`` may be a ``RuntimeParameter``): Vertex AI Training when its ``custom_config`` holds the
    Vertex keys (``vertex_training.enabled``), else the local Trainer."""
    vertex = parameters["custom_config"].get(vertex_constants.ENABLE_VERTEX_KEY)
    return (VertexTrainer if vertex else AlbertTrainer)(examples=examples, **parameters)
