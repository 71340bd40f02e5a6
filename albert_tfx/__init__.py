"""The import namespace of the DAG's custom artifact types, as Kubeflow Pipelines v2 and Vertex AI name them.

TFX compiles a custom artifact type into the pipeline spec with its ``TYPE_NAME`` as the schema title, and the KFP
v2 container entrypoint (``tfx.orchestration.kubeflow.v2.container``) imports that title as ``<module>.<Class>``.
KFP allows one dot in a title (``namespace.Title``), so the types are named ``albert_tfx.RawCorpus``, … and this
top-level package makes each title importable wherever the project is installed (the image, a Dataflow worker, a
rehearsal): ``import_class_by_path("albert_tfx.RawCorpus") is components.artifacts.RawCorpus``.

The name is the project's own (its distribution is ``albert-tfx``): the official ALBERT code imports as ``albert``
(``from albert import tokenization``, installed by ``albert-tensorflow`` or run from a checkout), so a package of
that name here would shadow it, or be shadowed by it. Until 2026-11-26 this package was ``albert`` and the types
``albert.RawCorpus``, …: TFX uses ``TYPE_NAME`` as the MLMD type name too, so an existing local store reruns every
node once (docs/architecture.md, "Artifact types").

The classes are defined once, in :mod:`components.artifacts`; this package only re-exports them.
"""
from components.artifacts import (ALL_TYPES, BenchmarkReport, BenchmarkResult, DataGateResult,  # noqa: F401
                                  DataGenStatistics, Documents, RawCorpus, SentencePieceModel)

__all__ = [cls.__name__ for cls in ALL_TYPES]
