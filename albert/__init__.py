"""The import namespace of the DAG's custom artifact types, as Kubeflow Pipelines v2 and Vertex AI name them.

TFX compiles a custom artifact type into the pipeline spec with its ``TYPE_NAME`` as the schema title, and the KFP
v2 container entrypoint (``tfx.orchestration.kubeflow.v2.container``) imports that title as ``<module>.<Class>``.
KFP allows one dot in a title (``namespace.Title``), so the types are named ``albert.RawCorpus``, … and this
top-level package makes each title importable wherever the project is installed (the image, a Dataflow worker, a
rehearsal): ``import_class_by_path("albert.RawCorpus") is components.artifacts.RawCorpus``.

The classes are defined once, in :mod:`components.artifacts`; this package only re-exports them. Keeping the
titles (rather than renaming the types to some importable module path) keeps every existing local MLMD store and
its cache: the MLMD type names are unchanged.
"""
from components.artifacts import (ALL_TYPES, BenchmarkReport, BenchmarkResult, DataGenStatistics, Documents,  # noqa: F401
                                  RawCorpus, SentencePieceModel)

__all__ = [cls.__name__ for cls in ALL_TYPES]
