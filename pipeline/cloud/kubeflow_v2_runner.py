"""Kubeflow Pipelines v2 / Vertex AI Pipelines: compile the DAG to a pipeline spec JSON.

The spec names a container image that has this package installed (``infra/Dockerfile``); every
component, the Trainer's ``run_fn`` included, is referenced by module path inside that image.
The runner is imported from its module, not through ``tfx.v1`` (see ``pipeline/pipeline.py``).
"""
from __future__ import annotations

import json
import os
from typing import Dict

from tfx.orchestration.kubeflow.v2.kubeflow_v2_dag_runner import KubeflowV2DagRunner, KubeflowV2DagRunnerConfig

from pipeline.tasks import gate_baseline_task
from pipeline.tasks import init_from_task
from pipeline.tasks import snapshot_task
from pipeline.cloud import spec
from pipeline.settings.configs import CORPUS_KEYS, IMPORTERS, LATEST_BLESSED, PipelineConfig
from pipeline.pipeline import create_pipeline, runtime_parameter_values

DEFAULT_IMAGE = "gcr.io/YOUR_PROJECT/albert-tfx:latest"


def compile_pipeline(config: PipelineConfig, output_path: str, image: str = DEFAULT_IMAGE) -> str:
    """Write the KFP v2 / Vertex pipeline spec JSON for ``config`` (from ``build_config``, with the pipeline root
    and Beam args it runs with) to ``output_path``; returns the path."""
    # Schema 2.1: parameters travel as typed `parameterValues`, the only field the open-source KFP v2 driver fills
    # (with 2.0 its tasks get none); Vertex AI runs both.
    runner_config = KubeflowV2DagRunnerConfig(default_image=image, use_pipeline_spec_2_1=True)
    os.makedirs(os.path.dirname(os.path.abspath(output_path)), exist_ok=True)
    runner = KubeflowV2DagRunner(
        config=runner_config, output_dir=os.path.dirname(os.path.abspath(output_path)),
        output_filename=os.path.basename(output_path))
    pipeline = create_pipeline(config, image=image, runtime_parameters=True)
    # The config's values become the spec's runtimeConfig defaults; `submit --parameters` overrides them.
    runner.run(pipeline, parameter_values=runtime_parameter_values(config, image), write_out=True)
    data, pipeline_spec = spec.load(output_path)
    # Each data location is resolved when a run starts, by a task that runs on every tick (pipeline/tasks/snapshot_task.py).
    snapshot_task.wire(data, pipeline_spec, importers={key: IMPORTERS[key] for key in config.data_inputs()},
                       consumers=config.data_consumers(), span=config.data.span, window=config.data.span_window,
                       corpus_keys=list(CORPUS_KEYS))
    if config.mode != "benchmark" and config.gate.enabled:
        # The data gate's baseline is chosen when a run starts, by the local rule (pipeline/tasks/gate_baseline_task.py).
        gate_baseline_task.wire(pipeline_spec)
    if config.mode != "benchmark" and config.train.init_from == LATEST_BLESSED:
        # The last blessed model is resolved when a run starts too, by the local rule (pipeline/tasks/init_from_task.py).
        init_from_task.wire(pipeline_spec, push_destination=config.push_destination)
    if config.task_resources:
        spec.set_task_resources(pipeline_spec, {node: (r.cpu_limit, r.memory_limit)
                                                for node, r in config.task_resources.items()}, output_path)
    with open(output_path, "w") as f:
        json.dump(data, f, indent=2, sort_keys=True)
    return output_path


def spec_summary(path: str) -> Dict[str, object]:
    """Tasks, their upstream tasks, and images of a compiled spec (for checks and ``compile`` output)."""
    _, pipeline_spec = spec.load(path)
    tasks = pipeline_spec["root"]["dag"]["tasks"]
    executors = pipeline_spec["deploymentSpec"]["executors"]
    declared = pipeline_spec["root"].get("inputDefinitions", {}).get("parameters", {})
    return {
        "name": pipeline_spec["pipelineInfo"]["name"],
        "schema_version": spec.schema_version(pipeline_spec),
        "parameters": sorted(declared),
        "tasks": {name: sorted(t.get("dependentTasks", [])) for name, t in tasks.items()},
        "images": sorted({e["container"]["image"] for e in executors.values() if "container" in e}),
    }
