"""Custom artifact types of the ALBERT DAG.

Each type names what a directory holds, so MLMD lineage reads like the paper's pipeline:
RawCorpus → Documents (→ DataGateResult, the data gate's verdict on them) → SentencePieceModel → Examples (masked
TFRecords) → Model → BenchmarkResult → BenchmarkReport. Pretraining data uses TFX's standard ``Examples`` so the stock Trainer takes it.

Each ``TYPE_NAME`` is also the type's schema title in a compiled Kubeflow v2 / Vertex spec, which the container
entrypoint imports as ``<module>.<Class>``: the top-level package :mod:`albert_tfx` re-exports these classes under
those titles (``tests/test_install_check.py`` resolves every title in an installed environment). It is also the type's
MLMD type name (``albert.RawCorpus``, … before 2026-11-26, when the package was ``albert``).

Values about an artifact (counts, vocabulary size, benchmark name) are MLMD *custom* properties:
the Kubeflow v2 compiler only accepts schema-less custom types.
"""
from tfx.types import artifact


class RawCorpus(artifact.Artifact):
    """A folder of raw input files (Wikipedia dumps, books, GLUE/SQuAD/RACE data) brought in by an Importer."""

    TYPE_NAME = "albert_tfx.RawCorpus"


class Documents(artifact.Artifact):
    """Clean documents, one sentence per line, blank line between documents, sharded text files."""

    TYPE_NAME = "albert_tfx.Documents"


class DataGateResult(artifact.Artifact):
    """The data gate's result on one span of documents (``components/datagate/datagate_beam.py``): ``statistics.pb``
    (``DatasetFeatureStatisticsList``: the span's statistics, the next span's baseline), ``schema.pb`` (the limits),
    ``anomalies.pb`` (the failed checks; empty when the span passed) and ``gate.json`` (span, every check's value and
    limit, passed, accepted, the baseline's span). Custom properties ``span``, ``passed`` and ``accepted`` (0/1)."""

    TYPE_NAME = "albert_tfx.DataGateResult"


class SentencePieceModel(artifact.Artifact):
    """``spm.model`` (+ ``spm.vocab``) with ALBERT's special ids: pad 0, unk 1, [CLS] 2, [SEP] 3, [MASK] 4."""

    TYPE_NAME = "albert_tfx.SentencePieceModel"


class DataGenStatistics(artifact.Artifact):
    """``stats.json`` of the pretraining data: lengths, SOP balance, masking shares, n-gram histogram."""

    TYPE_NAME = "albert_tfx.DataGenStatistics"


class BenchmarkResult(artifact.Artifact):
    """``metrics.json`` (+ predictions in the official formats) of one benchmark family."""

    TYPE_NAME = "albert_tfx.BenchmarkResult"


class BenchmarkReport(artifact.Artifact):
    """``report.md`` / ``report.html`` / ``results.json`` / curves in the shape of the paper's Table 2."""

    TYPE_NAME = "albert_tfx.BenchmarkReport"


# Every custom type, in DAG order (the package ``albert_tfx`` re-exports exactly these).
ALL_TYPES = (RawCorpus, Documents, DataGateResult, SentencePieceModel, DataGenStatistics, BenchmarkResult,
             BenchmarkReport)
