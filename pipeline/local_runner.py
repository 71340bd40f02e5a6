"""Local orchestration: TFX's BeamDagRunner or LocalDagRunner with the embedded sqlite MLMD store.

The runners are imported from their modules, not through ``tfx.v1`` (see ``pipeline/pipeline.py``).
"""
from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from typing import Dict, Iterator

from tfx.orchestration.beam.beam_dag_runner import BeamDagRunner
from tfx.orchestration.local.local_dag_runner import LocalDagRunner
from tfx.orchestration.portable import launcher as tfx_launcher

from components.artifacts import BenchmarkReport
from pipeline import mlmd
from pipeline.configs import PipelineConfig
from pipeline.pipeline import create_pipeline

RUNNERS = ("beam", "local")


def run_local(config: PipelineConfig, runner: str = "beam") -> Dict[str, str]:
    """Run the whole DAG in this process; returns the pipeline root and the MLMD sqlite path.

    ``config`` comes from ``build_config(..., local=True)``: its input paths were checked (missing inputs fail
    there, before TFX starts, naming the config key) and every path is absolute."""
    if runner not in RUNNERS:
        raise ValueError(f"runner must be one of {RUNNERS}, got {runner!r}")
    if not (config.frozen and config.is_local()):
        raise ValueError("run_local needs the configuration of build_config(..., local=True)")
    os.makedirs(os.path.dirname(config.metadata_path), exist_ok=True)
    pipeline = create_pipeline(config, metadata_connection_config=mlmd.connection_config(config.metadata_path))
    with node_progress():
        if runner == "beam":
            BeamDagRunner().run(pipeline)
        else:
            LocalDagRunner().run(pipeline)
    return {"pipeline_root": config.pipeline_root, "metadata_path": config.metadata_path}


PROGRESS = logging.getLogger("albert_tfx.progress")


class ProgressLauncher(tfx_launcher.Launcher):
    """TFX's node launcher, reporting each node: started, CACHED, finished in N s, or failed with the reason.

    Both local runners build one ``tfx.orchestration.portable.launcher.Launcher`` per node and call ``launch()``;
    whether the node ran or was served from the MLMD cache is what ``_prepare_execution`` decided.
    """

    def _prepare_execution(self):
        result = super()._prepare_execution()
        self._albert_needed = result.is_execution_needed
        if result.is_execution_needed:
            PROGRESS.info("%s: started (execution %d)", self._node_name(), result.execution_info.execution_id)
        return result

    def _node_name(self) -> str:
        return self._pipeline_node.node_info.id

    def launch(self):
        start = time.monotonic()
        self._albert_needed = None
        try:
            info = super().launch()
        except BaseException as exc:
            reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            PROGRESS.error("%s: failed after %.1f s: %s", self._node_name(), time.monotonic() - start, reason[:300])
            raise
        elapsed = time.monotonic() - start
        if self._albert_needed is False:
            PROGRESS.info("%s: CACHED", self._node_name())
        elif self._albert_needed is None:  # a system node (Importer, Resolver): no executor to run
            PROGRESS.info("%s: done in %.1f s", self._node_name(), elapsed)
        else:
            PROGRESS.info("%s: finished in %.1f s", self._node_name(), elapsed)
        return info


_SWAP_LOCK = threading.Lock()


@contextlib.contextmanager
def node_progress() -> Iterator[None]:
    """While active, the runners' ``launcher.Launcher`` is :class:`ProgressLauncher`."""
    with _SWAP_LOCK:
        original = tfx_launcher.Launcher
        tfx_launcher.Launcher = ProgressLauncher
    try:
        yield
    finally:
        with _SWAP_LOCK:
            tfx_launcher.Launcher = original


def latest_report(metadata_path: str, pipeline_name: str) -> str:
    """URI of the newest BenchmarkReport artifact recorded in MLMD for ``pipeline_name``."""
    from ml_metadata.proto import metadata_store_pb2

    store = mlmd.open_readonly(metadata_path)
    reports = [a for a in store.get_artifacts_by_type(BenchmarkReport.TYPE_NAME)
               if a.state == metadata_store_pb2.Artifact.LIVE]
    if not reports:
        raise RuntimeError(f"no BenchmarkReport artifact in {metadata_path}")
    contexts = {c.id for c in store.get_contexts_by_type("pipeline") if c.name == pipeline_name}
    if contexts:
        in_pipeline = set()
        for ctx in contexts:
            in_pipeline.update(a.id for a in store.get_artifacts_by_context(ctx))
        reports = [a for a in reports if a.id in in_pipeline] or reports
    return max(reports, key=lambda a: (a.create_time_since_epoch, a.id)).uri


def latest_release(metadata_path: str, pipeline_name: str) -> Dict[str, object]:
    """The release of the newest run of ``pipeline_name``: its Blesser's decision and its Pusher's result (executed
    in that run or served from the cache), read from MLMD. Empty when that run has no Blesser."""
    store = mlmd.open_readonly(metadata_path)
    pipeline_ids = {c.id for c in store.get_contexts_by_type("pipeline") if c.name == pipeline_name}
    in_pipeline = {e.id for ctx in pipeline_ids for e in store.get_executions_by_context(ctx)}
    runs = sorted(store.get_contexts_by_type("pipeline_run"), key=lambda c: (c.create_time_since_epoch, c.id))
    executions = []
    for run in reversed(runs):  # the newest run of this pipeline
        executions = [e for e in store.get_executions_by_context(run.id) if e.id in in_pipeline]
        if executions:
            break
    outputs: Dict[str, object] = {}
    for execution in executions:
        nodes = [c.name.rsplit(".", 1)[-1] for c in store.get_contexts_by_execution(execution.id)
                 if store.get_context_types_by_id([c.type_id])[0].name == "node"]
        if nodes and nodes[0] in ("Blesser", "Pusher"):
            ids = [e.artifact_id for e in store.get_events_by_execution_ids([execution.id]) if e.type == e.OUTPUT]
            if ids:
                outputs[nodes[0]] = store.get_artifacts_by_id(ids)[0]
    if "Blesser" not in outputs:
        return {}
    blessing = outputs["Blesser"].custom_properties
    release: Dict[str, object] = {"blessed": bool(blessing["blessed"].int_value),
                                  "forced": bool(blessing["forced"].int_value),
                                  "reason": blessing["reason"].string_value}
    pushed = outputs.get("Pusher")
    if pushed is not None and pushed.custom_properties["pushed"].int_value:
        release.update(version=pushed.custom_properties["pushed_version"].int_value,
                       path=pushed.custom_properties["pushed_path"].string_value)
    return release
