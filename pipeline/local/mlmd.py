"""The one way this project opens ML Metadata: the run's sqlite store, read-write for the runners, read-only for
everything that only looks (``plan``, the report lookup, benchmarks and tests).

Read-only opening matters: it never creates a store or its schema, so looking at a store that a run is writing,
or at a path with no store, cannot change anything.
"""
from __future__ import annotations


def connection_config(path: str, readonly: bool = False):
    """The ``ConnectionConfig`` of the sqlite store at ``path``; read-write creates it (what TFX's runners use)."""
    from ml_metadata.proto import metadata_store_pb2  # lazy: ml_metadata (0.1 s)

    cfg = metadata_store_pb2.ConnectionConfig()
    cfg.sqlite.filename_uri = path
    cfg.sqlite.connection_mode = (metadata_store_pb2.SqliteMetadataSourceConfig.READONLY if readonly else
                                  metadata_store_pb2.SqliteMetadataSourceConfig.READWRITE_OPENCREATE)
    return cfg


def open_readonly(path: str):
    """A ``MetadataStore`` over the existing sqlite store at ``path``, opened read-only."""
    from ml_metadata.metadata_store import metadata_store  # lazy: ml_metadata (0.1 s)

    return metadata_store.MetadataStore(connection_config(path, readonly=True))


def value(mlmd_value):
    """The Python value an MLMD ``Value`` holds (int, double, string, …), None when unset."""
    which = mlmd_value.WhichOneof("value")
    return getattr(mlmd_value, which) if which else None
