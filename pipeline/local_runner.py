"""Local orchestration: TFX's BeamDagRunner or LocalDagRunner with the embedded sqlite MLMD store."""
from __future__ import annotations

import os
from typing import Dict

from tfx import v1 as tfx
from tfx.orchestration.beam.beam_dag_runner import BeamDagRunner

from pipeline.configs import PipelineConfig
from pipeline.pipeline import create_pipeline

RUNNERS = ("beam", "local")


def run_local(config: PipelineConfig, runner: str = "beam") -> Dict[str, str]:
    """Run the whole DAG in this process; returns the pipeline root and the MLMD sqlite path."""
    if runner not in RUNNERS:
        raise ValueError(f"runner must be one of {RUNNERS}, got {runner!r}")
    config.check_paths()  # missing inputs fail here, before TFX starts, naming the config key
    config.pipeline_root = os.path.abspath(config.pipeline_root)
    config.metadata_path = os.path.abspath(config.metadata_path)
    os.makedirs(os.path.dirname(config.metadata_path), exist_ok=True)
    metadata = tfx.orchestration.metadata.sqlite_metadata_connection_config(config.metadata_path)
    pipeline = create_pipeline(config, metadata_connection_config=metadata)
    if runner == "beam":
        BeamDagRunner().run(pipeline)
    else:
        tfx.orchestration.LocalDagRunner().run(pipeline)
    return {"pipeline_root": config.pipeline_root, "metadata_path": config.metadata_path}


def latest_report(metadata_path: str, pipeline_name: str) -> str:
    """URI of the newest BenchmarkReport artifact recorded in MLMD for ``pipeline_name``."""
    from ml_metadata.metadata_store import metadata_store
    from ml_metadata.proto import metadata_store_pb2

    cfg = metadata_store_pb2.ConnectionConfig()
    cfg.sqlite.filename_uri = metadata_path
    cfg.sqlite.connection_mode = metadata_store_pb2.SqliteMetadataSourceConfig.READONLY
    store = metadata_store.MetadataStore(cfg)
    reports = [a for a in store.get_artifacts_by_type("albert.BenchmarkReport")
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
