"""Local orchestration: TFX's LocalDagRunner (the default) or BeamDagRunner with the embedded sqlite MLMD store.

The runners are imported from their modules, not through ``tfx.v1`` (see ``pipeline/pipeline.py``).
"""
from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from typing import Dict, Iterator, List

from tfx.orchestration.beam.beam_dag_runner import BeamDagRunner
from tfx.orchestration.local.local_dag_runner import LocalDagRunner
from tfx.orchestration.portable import launcher as tfx_launcher

from pipeline.local import mlmd
from pipeline.local import run_lock
from pipeline.settings.configs import PipelineConfig
from pipeline.pipeline import create_pipeline

RUNNERS = ("local", "beam")  # the first is the default (docs/cli.md)


def run_local(config: PipelineConfig, runner: str = RUNNERS[0]) -> Dict[str, str]:
    """Run the whole DAG in this process; returns the pipeline root, the MLMD sqlite path and ``run_id``, the name
    of the ``pipeline_run`` context this run created in MLMD (what :func:`run_report` and :func:`run_release` read).

    ``config`` comes from ``resolve_config(build_config(...), local=True)``: its input paths were checked (missing
    inputs fail there, before TFX starts, naming the config key) and every path is absolute. The run holds the
    store's lock (``pipeline/local/run_lock.py``) until its last node has finished; while another run holds it, this one
    refuses at once with :class:`pipeline.local.run_lock.RunInProgressError` naming that run. It never waits: ``config``
    was resolved before the lock, so after a wait it could name spans and a latest blessed model the other run has
    replaced. ``albert-pipeline run --wait`` takes the lock first and resolves under it (:func:`run_locked`)."""
    with run_lock.exclusive_run(config.metadata_path):
        return run_locked(config, runner)


def run_locked(config: PipelineConfig, runner: str = RUNNERS[0]) -> Dict[str, str]:
    """:func:`run_local` for a caller that holds the store's lock already (``albert-pipeline run`` takes it before
    it resolves the configuration: ``pipeline/cli.py``)."""
    if runner not in RUNNERS:
        raise ValueError(f"runner must be one of {RUNNERS}, got {runner!r}")
    if not (config.frozen and config.is_local()):
        raise ValueError("run_local needs the configuration of resolve_config(..., local=True)")
    before = _run_contexts(config.metadata_path)
    pipeline = create_pipeline(config, metadata_connection_config=mlmd.connection_config(config.metadata_path))
    with node_progress():
        if runner == "beam":
            BeamDagRunner().run(pipeline)
        else:
            LocalDagRunner().run(pipeline)
    created = sorted(set(_run_contexts(config.metadata_path)) - set(before))
    if len(created) != 1:  # under the lock no other run can add one
        raise RuntimeError(f"expected this run to create one pipeline_run context in {config.metadata_path}, "
                           f"found {created}")
    return {"pipeline_root": config.pipeline_root, "metadata_path": config.metadata_path, "run_id": created[0]}


def _run_contexts(metadata_path: str) -> List[str]:
    """Names of the ``pipeline_run`` contexts in the store (none while there is no store)."""
    if not os.path.exists(metadata_path):
        return []
    return [c.name for c in mlmd.open_readonly(metadata_path).get_contexts_by_type("pipeline_run")]


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


def _run_outputs(metadata_path: str, run_id: str) -> Dict[str, object]:
    """Node id → the output artifact its execution in run ``run_id`` recorded (executed in that run or served from
    the cache: a cached execution records the reused artifact as its output), for the nodes with one output that
    a run reports: ``BenchmarkReport``, ``Blesser``, ``Pusher``."""
    store = mlmd.open_readonly(metadata_path)
    run = store.get_context_by_type_and_name("pipeline_run", run_id)
    if run is None:
        raise RuntimeError(f"no pipeline run {run_id!r} in {metadata_path}")
    outputs: Dict[str, object] = {}
    for execution in store.get_executions_by_context(run.id):
        nodes = [c.name.rsplit(".", 1)[-1] for c in store.get_contexts_by_execution(execution.id)
                 if store.get_context_types_by_id([c.type_id])[0].name == "node"]
        if nodes and nodes[0] in ("BenchmarkReport", "Blesser", "Pusher"):
            ids = [e.artifact_id for e in store.get_events_by_execution_ids([execution.id]) if e.type == e.OUTPUT]
            if ids:
                outputs[nodes[0]] = store.get_artifacts_by_id(ids)[0]
    return outputs


def run_report(metadata_path: str, run_id: str) -> str:
    """URI of the BenchmarkReport artifact of run ``run_id`` (made by it or served to it from the cache)."""
    report = _run_outputs(metadata_path, run_id).get("BenchmarkReport")
    if report is None:
        raise RuntimeError(f"pipeline run {run_id!r} in {metadata_path} has no BenchmarkReport output")
    return report.uri


def run_release(metadata_path: str, run_id: str) -> Dict[str, object]:
    """The release of run ``run_id``: its Blesser's decision and its Pusher's result (executed in that run or served
    from the cache), read from MLMD. Empty when that run has no Blesser."""
    outputs = _run_outputs(metadata_path, run_id)
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
