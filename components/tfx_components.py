"""TFX components of the ALBERT DAG: thin shells that wire the pure cores into Beam and MLMD.

Each takes the whole pipeline configuration as one JSON parameter (``config_json``): MLMD records
exactly what produced every artifact, and the cache key changes when any setting does.

Atomic outputs. TFX publishes an output artifact (state LIVE in MLMD) only when the executor returns,
so a failed execution never feeds a downstream step. On top of that, the data components build their
files in ``<artifact uri>/.staging-<random>/`` and move them into the URI only after the whole Beam
job succeeded (:func:`_staged` / :func:`_publish`, through ``tf.io.gfile`` so ``gs://`` works): an
exception removes the staging folder; a killed process (SIGKILL, preemption) leaves at most a
``.staging-*`` folder inside an *unpublished* URI, never a file named like output. A rerun writes to
new URIs (new execution id), so leftovers are never read back.
"""

import contextlib
import json
import os
import posixpath
import tempfile
import uuid

import apache_beam as beam
import tensorflow as tf
from tfx.dsl.component.experimental.annotations import (BeamComponentParameter, InputArtifact, OutputArtifact,
                                                        Parameter)
from tfx.dsl.component.experimental.decorators import component
from tfx.types import standard_artifacts

from components import artifacts
from pipeline.configs import PipelineConfig


def _config(config_json: str) -> PipelineConfig:
    return PipelineConfig.from_json(config_json)


# ------------------------------------------------------------------------------------------------
# 1. Ingestion
# ------------------------------------------------------------------------------------------------
@component(use_beam=True)
def CorpusGen(
    documents: OutputArtifact[artifacts.Documents],
    config_json: Parameter[str],
    wikipedia: InputArtifact[artifacts.RawCorpus] = None,
    books: InputArtifact[artifacts.RawCorpus] = None,
    beam_pipeline: BeamComponentParameter[beam.Pipeline] = None,
) -> None:
    """Wikipedia dumps + book folders → clean, deduplicated, sharded documents (one sentence per line)."""
    from components import corpus_beam

    cfg = _config(config_json).corpus
    inputs = corpus_beam.list_inputs(wikipedia.uri if wikipedia else None, cfg.wikipedia_glob,
                                     books.uri if books else None, cfg.books_glob)
    with _staged(documents.uri) as staging:
        with beam_pipeline as p:
            corpus_beam.build_corpus(p, inputs, staging, num_shards=cfg.num_shards, min_chars=cfg.min_doc_chars,
                                     dedupe=cfg.dedupe, encoding_fallback=cfg.book_encoding_fallback)
        _publish(staging, documents.uri)
    counts = corpus_beam.read_counts(documents.uri)
    documents.set_int_custom_property("num_documents", counts["documents"])
    documents.set_int_custom_property("num_sentences", counts["sentences"])
    documents.set_int_custom_property("num_chars", counts["characters"])
    documents.set_int_custom_property("num_input_files", counts["num_input_files"])
    for source, c in counts["per_source"].items():
        for key, value in c.items():
            documents.set_int_custom_property(f"{source}_{key}", value)
    # What was dropped on purpose (empty files, empty/short documents, duplicates): <source>_<reason>.
    for source, c in counts.get("skipped", {}).items():
        for key, value in c.items():
            documents.set_int_custom_property(f"{source}_{key}", value)


# ------------------------------------------------------------------------------------------------
# 2. Vocabulary
# ------------------------------------------------------------------------------------------------
@component
def VocabGen(
    documents: InputArtifact[artifacts.Documents],
    vocab: OutputArtifact[artifacts.SentencePieceModel],
    config_json: Parameter[str],
) -> None:
    """Train SentencePiece with ALBERT's recipe on the documents, or import ``vocab.import_model``."""
    from components import vocab_lib

    cfg = _config(config_json)
    with tempfile.TemporaryDirectory() as tmp:
        size, origin = vocab_lib.build_vocab(cfg.vocab, cfg.seed, documents.uri, tmp)
        with _staged(vocab.uri) as staging:
            _copy_tree(tmp, staging)
            _publish(staging, vocab.uri)
    vocab.set_int_custom_property("vocab_size", size)
    vocab.set_string_custom_property("origin", origin)


# ------------------------------------------------------------------------------------------------
# 3. Pretraining data
# ------------------------------------------------------------------------------------------------
@component(use_beam=True)
def PretrainingDataGen(
    documents: InputArtifact[artifacts.Documents],
    vocab: InputArtifact[artifacts.SentencePieceModel],
    examples: OutputArtifact[standard_artifacts.Examples],
    statistics: OutputArtifact[artifacts.DataGenStatistics],
    config_json: Parameter[str],
    beam_pipeline: BeamComponentParameter[beam.Pipeline] = None,
) -> None:
    """Documents → ``[CLS] A [SEP] B [SEP]`` SOP instances with n-gram masking, as sharded TFRecords."""
    from components import corpus_beam, datagen_beam

    cfg = _config(config_json)
    d = cfg.datagen
    spm_src = posixpath.join(vocab.uri, "spm.model")
    with _staged(examples.uri) as ex_staging, _staged(statistics.uri) as st_staging:
        # The vocabulary travels with the data so the Trainer (whose inputs TFX fixes) can find it.
        tf.io.gfile.makedirs(posixpath.join(ex_staging, "vocab"))
        tf.io.gfile.copy(spm_src, posixpath.join(ex_staging, "vocab", "spm.model"), overwrite=True)
        output_dirs = {s: posixpath.join(ex_staging, f"Split-{s}") for s in datagen_beam.SPLITS}
        for path in output_dirs.values():
            tf.io.gfile.makedirs(path)
        with beam_pipeline as p:
            datagen_beam.build_pretraining_data(
                p, corpus_beam.document_shards(documents.uri), spm_src, output_dirs,
                posixpath.join(st_staging, datagen_beam.STATS_FILE), params=datagen_beam.instance_params(d),
                seed=cfg.seed, dupe_factor=d.dupe_factor, num_shards=d.num_shards, eval_fraction=d.eval_fraction,
                compression=d.compression, compression_level=d.compression_level,
                do_lower_case=cfg.vocab.do_lower_case, random_pool_size=d.random_pool_documents,
                random_pool_max_chars=d.random_pool_max_chars)
        # Only the outputs move; the spill folder (normally already removed) stays behind and is deleted.
        _publish(ex_staging, examples.uri, names=["vocab"] + [f"Split-{s}" for s in datagen_beam.SPLITS])
        _publish(st_staging, statistics.uri, names=[datagen_beam.STATS_FILE])
    examples.split_names = json.dumps(list(datagen_beam.SPLITS))
    examples.set_string_custom_property("payload_format", "FORMAT_TF_EXAMPLE")
    with tf.io.gfile.GFile(posixpath.join(statistics.uri, datagen_beam.STATS_FILE)) as f:
        stats = json.load(f)
    for split, s in stats["splits"].items():
        examples.set_int_custom_property(f"{split}_instances", int(s["instances"]))
        statistics.set_int_custom_property(f"{split}_instances", int(s["instances"]))
    examples.set_string_custom_property("feature_spec", "official ALBERT (input_ids, input_mask, segment_ids, "
                                        "token_boundary, masked_lm_*, next_sentence_labels)")
    examples.set_int_custom_property("max_seq_length", d.max_seq_length)
    examples.set_int_custom_property("max_predictions_per_seq", d.max_predictions_per_seq)


# ------------------------------------------------------------------------------------------------
# 5. Benchmarks and report
# ------------------------------------------------------------------------------------------------
@component
def BenchmarkEval(
    model: InputArtifact[standard_artifacts.Model],
    dataset: InputArtifact[artifacts.RawCorpus],
    result: OutputArtifact[artifacts.BenchmarkResult],
    config_json: Parameter[str],
    benchmark: Parameter[str],
) -> None:
    """Fine-tune the pretrained encoder on one benchmark family (glue | squad | race) and score dev."""
    from components.evaluation import runner

    cfg = _config(config_json)
    albert_dir = posixpath.join(model.uri, "albert")
    metrics = runner.run_benchmark(benchmark, albert_dir, dataset.uri, cfg, result.uri)
    result.set_string_custom_property("benchmark", benchmark)
    for task, values in metrics.get("tasks", {}).items():
        if values.get("score") is not None:  # NaN metrics are stored as null
            result.set_float_custom_property(f"{task}_score", float(values["score"]))
        if values.get("serving_model"):
            result.set_string_custom_property(f"{task}_serving_model", posixpath.join(result.uri, values["serving_model"]))
        acc = (values.get("tfma") or {}).get("metrics", {}).get("accuracy")
        if acc is not None:
            result.set_float_custom_property(f"{task}_tfma_accuracy", float(acc))


@component
def BenchmarkReport(
    model: InputArtifact[standard_artifacts.Model],
    model_run: InputArtifact[standard_artifacts.ModelRun],
    statistics: InputArtifact[artifacts.DataGenStatistics],
    report: OutputArtifact[artifacts.BenchmarkReport],
    config_json: Parameter[str],
    glue: InputArtifact[artifacts.BenchmarkResult] = None,
    squad: InputArtifact[artifacts.BenchmarkResult] = None,
    race: InputArtifact[artifacts.BenchmarkResult] = None,
) -> None:
    """Markdown + HTML report in the shape of the paper's Table 2, with curves and MLMD artifact ids."""
    from components import report_lib

    cfg = _config(config_json)
    results = {name: art for name, art in (("glue", glue), ("squad", squad), ("race", race)) if art is not None}
    summary = report_lib.write_report(
        report.uri, cfg,
        results={name: report_lib.load_result(art.uri) for name, art in results.items()},
        model_dir=model.uri, model_run_dir=model_run.uri, stats_dir=statistics.uri,
        artifact_ids={name: {"id": art.id, "type": art.type_name, "uri": art.uri} for name, art in (
            ("model", model), ("model_run", model_run), ("statistics", statistics), *results.items())})
    if summary.get("avg") is not None:
        report.set_float_custom_property("avg", float(summary["avg"]))


def _copy_tree(src: str, dst: str) -> None:
    tf.io.gfile.makedirs(dst)
    for name in sorted(os.listdir(src)):
        path = os.path.join(src, name)
        if os.path.isdir(path):
            _copy_tree(path, posixpath.join(dst, name))
        else:
            tf.io.gfile.copy(path, posixpath.join(dst, name), overwrite=True)


STAGING_PREFIX = ".staging-"


@contextlib.contextmanager
def _staged(uri: str):
    """A fresh ``<uri>/.staging-<random>`` folder; removed when the block raises (or after publishing)."""
    staging = posixpath.join(uri, STAGING_PREFIX + uuid.uuid4().hex[:12])
    tf.io.gfile.makedirs(staging)
    try:
        yield staging
    finally:
        if tf.io.gfile.exists(staging):
            tf.io.gfile.rmtree(staging)


def _publish(staging: str, uri: str, names=None) -> None:
    """Move ``names`` (default: everything) from ``staging`` into ``uri``, file by file (``gs://`` has no
    directory rename), then delete ``staging``. Runs only after the producing job has fully succeeded."""
    names = sorted(n.rstrip("/") for n in tf.io.gfile.listdir(staging)) if names is None else names
    for name in names:
        src = posixpath.join(staging, name)
        if tf.io.gfile.exists(src):
            _move(src, posixpath.join(uri, name))
    tf.io.gfile.rmtree(staging)


def _move(src: str, dst: str) -> None:
    if tf.io.gfile.isdir(src):
        tf.io.gfile.makedirs(dst)
        for child in sorted(tf.io.gfile.listdir(src)):
            child = child.rstrip("/")
            _move(posixpath.join(src, child), posixpath.join(dst, child))
    else:
        tf.io.gfile.rename(src, dst, overwrite=True)


__all__ = ["CorpusGen", "VocabGen", "PretrainingDataGen", "BenchmarkEval", "BenchmarkReport"]
