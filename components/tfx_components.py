"""TFX components of the ALBERT DAG: thin shells that wire the pure cores into Beam and MLMD.

Each node's ``config`` parameter is the canonical JSON of only the settings that determine its
output (``config.sections``; ``seed`` travels as its own parameter where it matters), so TFX's cache
key changes exactly when that node's output would. Facts from upstream (vocabulary size,
``do_lower_case``, sequence length) are read from the input artifacts' properties and files, which
each node records on its outputs.

Atomic outputs. TFX publishes an output artifact (state LIVE in MLMD) only when the executor returns,
so a failed execution never feeds a downstream step. On top of that, the data components build their
files in ``<artifact uri>/.staging-<random>/`` and move them into the URI only after the whole Beam
job succeeded (:func:`_staged` / :func:`components.file_io.publish`, which ``ingest`` uses too; both work on
``gs://``): an exception removes the staging folder, and a failure while moving removes what was moved, so the
URI is left empty. A killed process (SIGKILL, preemption) leaves a ``.staging-*`` folder, or during the moves part
of the files, inside an *unpublished* URI. A rerun writes to new URIs (new execution id), so leftovers are never
read back.
"""

import contextlib
import datetime
import json
import logging
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

from components import artifacts, beam_options
from components.file_io import copy_tree, publish
from components.corpus.corpus_config import CorpusConfig
from components.datagen.datagen_config import DataGenConfig
from components.evaluation.benchmark_config import BenchmarkConfig
from components.report.report_config import ReportConfig
from components.vocab.vocab_config import VocabConfig
from trainer.files import ALBERT_DIR, MODEL_SOURCE_FILE, SPM_FILE, STATS_FILE

# Every executor below runs in a process that imported this module: Beam pipelines whose args name no runner run on
# the FnApiRunner, never a PrismRunner downloaded at run time, and a local runner's step does not package TFX for
# remote workers (components/beam_options.py).
beam_options.use_local_runner_by_default()
beam_options.package_tfx_for_remote_runners_only()

_LOG = logging.getLogger(__name__)


# ------------------------------------------------------------------------------------------------
# 1. Ingestion
# ------------------------------------------------------------------------------------------------
@component(use_beam=True)
def CorpusGen(
    documents: OutputArtifact[artifacts.Documents],
    config: Parameter[str],
    wikipedia: InputArtifact[artifacts.RawCorpus] = None,
    books: InputArtifact[artifacts.RawCorpus] = None,
    data_snapshot: Parameter[str] = None,
    beam_pipeline: BeamComponentParameter[beam.Pipeline] = None,
) -> None:
    """Wikipedia dumps + book folders → clean, deduplicated, sharded documents (one sentence per line).

    ``data_snapshot``: what the run resolved each input location to when it started (``pipeline/settings/spans.py``), whose
    ``folders`` (a window of spans under the Importer's URI) are the folders read."""
    from components.corpus import corpus_beam

    cfg = CorpusConfig.from_json(config, "corpus.")
    read = json.loads(data_snapshot) if data_snapshot else {}
    inputs = corpus_beam.list_inputs(
        wikipedia.uri if wikipedia else None, _in_folders(read.get("wikipedia"), cfg.wikipedia_glob),
        books.uri if books else None, _in_folders(read.get("books"), cfg.books_glob))
    with _staged(documents.uri) as staging:
        with beam_pipeline as p:
            corpus_beam.build_corpus(p, inputs, staging, num_shards=cfg.num_shards, min_chars=cfg.min_doc_chars,
                                     dedupe=cfg.dedupe, encoding_fallback=cfg.book_encoding_fallback,
                                     wikipedia_format=cfg.wikipedia_format,
                                     sentence_splitter=cfg.sentence_splitter)
        _record_counters(p, "albert.corpus", [documents])
        publish(staging, documents.uri, last=[corpus_beam.COUNTS_FILE])
    counts = corpus_beam.read_counts(documents.uri)
    documents.set_int_custom_property("num_documents", counts["documents"])
    documents.set_int_custom_property("num_sentences", counts["sentences"])
    documents.set_int_custom_property("num_chars", counts["characters"])
    documents.set_int_custom_property("num_input_files", counts["num_input_files"])
    if data_snapshot:  # the spans and fingerprints read, for the report and the card
        documents.set_string_custom_property("data_snapshot", data_snapshot)
    for source, c in counts["per_source"].items():
        for key, value in c.items():
            documents.set_int_custom_property(f"{source}_{key}", value)
    # What was dropped on purpose (empty files, empty/short documents, duplicates): <source>_<reason>.
    for source, c in counts.get("skipped", {}).items():
        for key, value in c.items():
            documents.set_int_custom_property(f"{source}_{key}", value)


# ------------------------------------------------------------------------------------------------
# 1b. The data gate (issue 55)
# ------------------------------------------------------------------------------------------------
@component(use_beam=True)
def DataGate(
    documents: InputArtifact[artifacts.Documents],
    result: OutputArtifact[artifacts.DataGateResult],
    config: Parameter[str],
    baseline: InputArtifact[artifacts.DataGateResult] = None,
    acceptance: InputArtifact[artifacts.DataGateResult] = None,
    baseline_uris: Parameter[str] = None,
    squad_dev: InputArtifact[artifacts.RawCorpus] = None,
    squad2_dev: InputArtifact[artifacts.RawCorpus] = None,
    race_dev: InputArtifact[artifacts.RawCorpus] = None,
    beam_pipeline: BeamComponentParameter[beam.Pipeline] = None,
) -> None:
    """Measure the span CorpusGen made, check it, and publish the result, whether it passed or not.

    ``config``: the ``gate`` section's limits and ``accept`` (``GateConfig.params``). The span is the newest one the
    corpus read (``data_snapshot`` on the documents; 0 without a span pattern). ``baseline``: the result of the last
    span that went through the gate (the ``DataGateBaseline`` resolver of a local run; none on the first span, and
    then only the absolute limits apply, which the result says). ``acceptance``: an earlier result that accepted the
    same raw data knowingly (``gate.accept``), so a span once accepted stays accepted. ``baseline_uris``: the two
    as URIs instead, ``{"baseline": URI or null, "acceptance": URI or null}`` (a compiled spec's, chosen by its
    ``DataGateBaseline`` task by the same rule: pipeline/tasks/gate_baseline_task.py). ``squad_dev`` /
    ``squad2_dev`` / ``race_dev``: the reading benchmarks' data, whose dev passages are checked for 13-gram
    contamination.

    How a failed span stops the run: this node never fails on a bad span. It publishes its ``DataGateResult``
    (``passed`` 0, the failed checks in ``anomalies.pb``), so the anomalies are an artifact in MLMD, with lineage to
    the documents, whatever happens next; TFX publishes no output of a failed execution, so a node that raised here
    would leave only a FAILED execution. ``DataGateCheck`` reads the result and raises :class:`DataGateError` (one
    line per failed check, exit 2 from the CLI), and ``VocabGen``, the first expensive node, runs only after it
    succeeded (a dependency without artifacts, which moves no cache key: pipeline/pipeline.py)."""
    from components.corpus import corpus_beam
    from components.datagate import datagate_beam
    from components.datagate import datagate_result
    from components.datagate.checks import GateLimits

    settings = json.loads(config)
    accept = settings.pop("accept", None)
    limits = GateLimits(**settings)
    snapshot = (documents.get_string_custom_property("data_snapshot")
                if documents.has_custom_property("data_snapshot") else None)
    span = datagate_result.gate_span(snapshot)
    chosen = json.loads(baseline_uris) if baseline_uris else {}
    baseline_uri = chosen.get("baseline") or (baseline.uri if baseline is not None else None)
    acceptance_uri = chosen.get("acceptance") or (acceptance.uri if acceptance is not None else None)
    base = datagate_beam.read_statistics(baseline_uri) if baseline_uri else None
    # The local copies of gs:// dev sets stay until the pipeline has run: a worker outside this process reads the
    # passages from their files (datagate_beam._ContaminationFn).
    with tempfile.TemporaryDirectory() as copies:
        passages = _reading_dev_passages(squad_dev, squad2_dev, race_dev, copies)
        with _staged(result.uri) as staging:
            with beam_pipeline as p:
                datagate_beam.build_gate(p, corpus_beam.document_shards(documents.uri), staging, span=span,
                                         limits=limits, baseline=base, passages=passages, accept=accept,
                                         accepted_before=acceptance_uri,
                                         baseline_summary=(datagate_beam.read_summary(baseline_uri)
                                                           if baseline_uri else None))
            publish(staging, result.uri, last=[datagate_result.SUMMARY_FILE])
    summary = datagate_beam.read_summary(result.uri)
    result.set_int_custom_property("span", span)
    result.set_int_custom_property("passed", int(summary["passed"]))
    result.set_int_custom_property("accepted", int(summary["accepted"]))
    result.set_int_custom_property("documents", int(summary["documents"]))
    result.set_string_custom_property("data_fingerprint", datagate_result.data_fingerprint(snapshot))
    if summary["failed"]:
        result.set_string_custom_property("failed", ",".join(summary["failed"]))
    if baseline_uri:
        result.set_int_custom_property("baseline_span", int(summary["baseline"]["span"]))
        result.set_string_custom_property("baseline", baseline_uri)
    if summary["contamination"] is not None:
        result.set_float_custom_property("contaminated_share", float(summary["contamination"]["share"]))
        result.set_float_custom_property("total_contaminated_share", float(summary["contamination"]["total_share"]))
        for name, c in summary["contamination"]["benchmarks"].items():
            result.set_float_custom_property(f"contaminated_share_{name}", float(c["share"]))
    _LOG.info("data gate: span %d measured (%d documents, %d characters), %d of %d checks failed; result in %s",
              span, summary["documents"], summary["characters"], len(summary["failed"]), len(summary["checks"]),
              result.uri)


@component
def DataGateCheck(result: InputArtifact[artifacts.DataGateResult]) -> None:
    """Stop the run on a span that failed the data gate and was not accepted: :class:`DataGateError`, whose message
    has one line per failed check ("span N: check X = value, limit L"). ``VocabGen`` depends on this node, so
    nothing expensive runs on such a span; a span that passed, or was accepted with ``gate.accept``, goes through."""
    from components.datagate import datagate_beam
    from components.datagate import datagate_result

    summary = datagate_beam.read_summary(result.uri)
    line = datagate_result.verdict(summary, result.uri)  # raises DataGateError on a span that does not go through
    (_LOG.warning if summary["accepted"] else _LOG.info)(line)


def _reading_dev_passages(squad, squad2, race, tmp: str):
    """The dev passages of the reading benchmarks' data artifacts (SQuAD ``dev*.json`` paragraphs, RACE ``dev/``
    articles): read where they are when local (an error names the file), from local copies under ``tmp`` on
    ``gs://``."""
    from components.datagate import datagate_beam

    squad_files = {"squad": [], "squad2": []}
    for key, artifact in (("squad", squad), ("squad2", squad2)):
        if artifact is None:
            continue
        for name in sorted(n.rstrip("/") for n in tf.io.gfile.listdir(artifact.uri)):
            if name.startswith("dev") and name.endswith(".json"):
                path = posixpath.join(artifact.uri, name)
                if "://" in path:
                    local = os.path.join(tmp, key, name)
                    os.makedirs(os.path.dirname(local), exist_ok=True)
                    tf.io.gfile.copy(path, local)
                    path = local
                squad_files[key].append(path)
    race_dir = None
    if race is not None and tf.io.gfile.isdir(posixpath.join(race.uri, "dev")):
        race_dir = race.uri
        if "://" in race_dir:
            race_dir = os.path.join(tmp, "race")
            copy_tree(posixpath.join(race.uri, "dev"), os.path.join(race_dir, "dev"))
    return datagate_beam.dev_passages(squad_files["squad"], race_dir, squad2_files=squad_files["squad2"])


# ------------------------------------------------------------------------------------------------
# 2. Vocabulary
# ------------------------------------------------------------------------------------------------
@component
def VocabGen(
    documents: InputArtifact[artifacts.Documents],
    vocab: OutputArtifact[artifacts.SentencePieceModel],
    config: Parameter[str],
    seed: Parameter[int],
) -> None:
    """Train SentencePiece with ALBERT's recipe on the documents, or import ``vocab.import_model``.

    Records on the artifact what downstream nodes need: ``vocab_size``, ``do_lower_case`` (the
    tokenizer setting that goes with this model) and the model file's ``sha256``.
    """
    import hashlib

    from components.vocab import vocab_lib
    from components.text.tokenizers import vocab_file_name
    from components.vocab.vocab_lib import vocab_folder_spec

    cfg = VocabConfig.from_json(config, "vocab.")
    with tempfile.TemporaryDirectory() as tmp:
        size, origin = vocab_lib.build_vocab(cfg, seed, documents.uri, tmp)
        spec = vocab_folder_spec(tmp, cfg.do_lower_case)
        with open(os.path.join(tmp, vocab_file_name(spec)), "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()
        with _staged(vocab.uri) as staging:
            copy_tree(tmp, staging)
            publish(staging, vocab.uri)
    vocab.set_int_custom_property("vocab_size", size)
    vocab.set_int_custom_property("do_lower_case", int(cfg.do_lower_case))
    vocab.set_string_custom_property("origin", origin)
    vocab.set_string_custom_property("sha256", digest)
    if spec.needs_file:  # English's SentencePiece vocabularies keep the properties they always had
        vocab.set_string_custom_property("kind", spec.kind)


# ------------------------------------------------------------------------------------------------
# 3. Pretraining data
# ------------------------------------------------------------------------------------------------
@component(use_beam=True)
def PretrainingDataGen(
    documents: InputArtifact[artifacts.Documents],
    vocab: InputArtifact[artifacts.SentencePieceModel],
    examples: OutputArtifact[standard_artifacts.Examples],
    statistics: OutputArtifact[artifacts.DataGenStatistics],
    config: Parameter[str],
    seed: Parameter[int],
    squad_dev: InputArtifact[artifacts.RawCorpus] = None,
    race_dev: InputArtifact[artifacts.RawCorpus] = None,
    data_snapshot: Parameter[str] = None,
    beam_pipeline: BeamComponentParameter[beam.Pipeline] = None,
) -> None:
    """Documents → ``[CLS] A [SEP] B [SEP]`` SOP instances with n-gram masking, as sharded TFRecords.

    With ``datagen.eval_source=benchmark_dev`` the eval split is built from the SQuAD (``dev*.json``) and
    RACE (``dev/``) articles of ``squad_dev`` / ``race_dev``, the paper's pretraining dev set.
    With ``datagen.long_max_seq_length`` (BERT's two-phase sequence length) the same documents' long instances
    are the ``train_long`` / ``eval_long`` splits of the same artifact.

    ``do_lower_case`` comes from the vocabulary artifact. The examples carry ``dataset_info.json``
    (and the same facts as properties) with a content fingerprint that keys the Trainer's checkpoints.
    """
    from components.corpus import corpus_beam
    from components.datagen import datagen_beam
    from components.text.tokenizers import SPEC_FILE, vocab_file_name
    from components.vocab.vocab_lib import vocab_folder_spec
    from trainer import examples_info

    d = DataGenConfig.from_json(config, "datagen.")
    do_lower_case = bool(vocab.get_int_custom_property("do_lower_case")) if \
        vocab.has_custom_property("do_lower_case") else True
    spec = vocab_folder_spec(vocab.uri, do_lower_case)
    spm_src = posixpath.join(vocab.uri, vocab_file_name(spec))
    with _staged(examples.uri) as ex_staging, _staged(statistics.uri) as st_staging:
        # The vocabulary travels with the data so the Trainer (whose inputs TFX fixes) can find it.
        tf.io.gfile.makedirs(posixpath.join(ex_staging, "vocab"))
        for name in [vocab_file_name(spec)] + ([SPEC_FILE] if spec.needs_file else []):
            tf.io.gfile.copy(posixpath.join(vocab.uri, name), posixpath.join(ex_staging, "vocab", name),
                             overwrite=True)
        long_params = datagen_beam.long_instance_params(d)  # BERT's two-phase sequence length (None: off)
        splits = datagen_beam.output_splits(long_params is not None)
        output_dirs = {s: posixpath.join(ex_staging, f"Split-{s}") for s in splits}
        for path in output_dirs.values():
            tf.io.gfile.makedirs(path)
        eval_files = None
        if d.eval_source == "benchmark_dev":
            eval_files = [_dev_documents_file(squad_dev, race_dev, posixpath.join(ex_staging, ".dev-documents"))]
        with beam_pipeline as p:
            datagen_beam.build_pretraining_data(
                p, corpus_beam.document_shards(documents.uri), spm_src, output_dirs,
                posixpath.join(st_staging, STATS_FILE), params=datagen_beam.instance_params(d),
                seed=seed, dupe_factor=d.dupe_factor, num_shards=d.num_shards, eval_fraction=d.eval_fraction,
                compression=d.compression, compression_level=d.compression_level,
                tokenizer_spec=spec, word_starts=d.word_starts or "official", random_pool_size=d.random_pool_documents,
                random_pool_max_chars=d.random_pool_max_chars, eval_document_files=eval_files,
                long_params=long_params)
        _record_counters(p, "albert.datagen", [examples, statistics])
        names = ["vocab"] + [f"Split-{s}" for s in splits]
        vocab_size = vocab.get_int_custom_property("vocab_size") if vocab.has_custom_property("vocab_size") else 0
        info = examples_info.make_info(d, do_lower_case, vocab_size, examples_info.fingerprint(ex_staging, names))
        examples_info.write_info(ex_staging, info)
        # Only the outputs move; the spill folder (normally already removed) stays behind and is deleted.
        publish(ex_staging, examples.uri, names=names + [examples_info.INFO_FILE], last=[examples_info.INFO_FILE])
        publish(st_staging, statistics.uri, names=[STATS_FILE])
    examples.split_names = json.dumps(list(splits))
    examples.set_string_custom_property("payload_format", "FORMAT_TF_EXAMPLE")
    with tf.io.gfile.GFile(posixpath.join(statistics.uri, STATS_FILE)) as f:
        stats = json.load(f)
    for split, s in stats["splits"].items():
        examples.set_int_custom_property(f"{split}_instances", int(s["instances"]))
        statistics.set_int_custom_property(f"{split}_instances", int(s["instances"]))
    examples.set_string_custom_property("feature_spec", "official ALBERT (input_ids, input_mask, segment_ids, "
                                        "token_boundary, masked_lm_*, next_sentence_labels)")
    for key, value in info.items():
        if isinstance(value, bool) or isinstance(value, int):
            examples.set_int_custom_property(key, int(value))
        else:
            examples.set_string_custom_property(key, str(value))


# ------------------------------------------------------------------------------------------------
# 4b. A given model (mode=benchmark: no corpus, vocabulary, data or pretraining nodes)
# ------------------------------------------------------------------------------------------------
@component
def ModelImport(
    model: OutputArtifact[standard_artifacts.Model],
    location: Parameter[str],
    digest: Parameter[str],
) -> None:
    """The model at ``location`` (``train.init_from``: a pushed version, or a folder ``albert-pipeline convert``
    wrote; local or ``gs://``) as a Model artifact laid out as the Trainer's: ``albert/`` (its albert folder) and
    ``Format-Serving/`` (its serving SavedModel, where it has one), plus ``model_source.json``, which the report and
    the model card read. ``digest``: the sha256 of those files when the configuration was resolved
    (:func:`trainer.base_model.digest`); the copies must have it, else the node fails naming the location, so a
    changed folder is never scored under the old digest's cache key.
    """
    from components.release.package import SERVING_DIR
    from config.errors import InputError
    from trainer import base_model

    base = base_model.describe(location)
    sources = base_model.model_files(base)
    with _staged(model.uri) as staging:
        copies: dict = {}
        for part, folder in (("albert", ALBERT_DIR), ("serving", SERVING_DIR)):
            copies[part] = {}
            for rel, src in sources[part].items():
                dst = posixpath.join(staging, folder, rel)
                tf.io.gfile.makedirs(posixpath.dirname(dst))
                tf.io.gfile.copy(src, dst, overwrite=True)
                copies[part][rel] = dst
        found = base_model.digest(copies)
        if found != digest:
            raise InputError(f"train.init_from={location} changed after the run's configuration was resolved "
                             f"(files sha256 {found[:12]}… now, {digest[:12]}… then); run or compile again")
        record = base_model.source_record(base, found, serving=bool(copies["serving"]))
        with tf.io.gfile.GFile(posixpath.join(staging, MODEL_SOURCE_FILE), "w") as f:
            f.write(json.dumps(record, indent=2, sort_keys=True))
        publish(staging, model.uri, last=[MODEL_SOURCE_FILE])
    model.set_string_custom_property("source_location", record["location"])
    model.set_string_custom_property("source_digest", found)
    for key in ("version", "steps"):
        if record.get(key) is not None:
            model.set_int_custom_property(f"source_{key}", int(record[key]))


# ------------------------------------------------------------------------------------------------
# 5. Benchmarks and report
# ------------------------------------------------------------------------------------------------
@component
def BenchmarkEval(
    model: InputArtifact[standard_artifacts.Model],
    dataset: InputArtifact[artifacts.RawCorpus],
    result: OutputArtifact[artifacts.BenchmarkResult],
    config: Parameter[str],
    seeds: Parameter[int],
    benchmark: Parameter[str],
    data_snapshot: Parameter[str] = None,
) -> None:
    """Fine-tune the pretrained encoder on one benchmark family (glue | squad | race) and score dev.

    ``config``: this benchmark's own settings (``BenchmarkConfig.node_settings``); ``seeds``: how many
    fine-tuning seeds (a pipeline runtime parameter when compiled for Vertex / KFP); ``data_snapshot``: the
    dataset's folder and fingerprint as the run resolved them when it started, recorded on the result.
    """
    from components.evaluation.run_benchmark import run_benchmark

    settings = BenchmarkConfig.from_node_settings(json.loads(config), seeds)
    albert_dir = posixpath.join(model.uri, ALBERT_DIR)
    metrics = run_benchmark(benchmark, albert_dir, dataset.uri, settings, result.uri)
    result.set_string_custom_property("benchmark", benchmark)
    result.set_string_custom_property("settings", config)
    result.set_int_custom_property("seeds", int(seeds))
    if data_snapshot:
        result.set_string_custom_property("data_snapshot", data_snapshot)
    for task, values in metrics.get("tasks", {}).items():
        if values.get("score") is not None:  # NaN metrics are stored as null
            result.set_float_custom_property(f"{task}_score", float(values["score"]))
        if values.get("serving_model"):
            result.set_string_custom_property(f"{task}_serving_model", posixpath.join(result.uri, values["serving_model"]))
        acc = (values.get("tfma") or {}).get("metrics", {}).get("accuracy")
        if acc is not None:
            result.set_float_custom_property(f"{task}_tfma_accuracy", float(acc))
    # Baseline arms (benchmarks.baselines): the selected run's score and the gain of the medians, queryable in MLMD.
    for name, arm in (metrics.get("baselines") or {}).items():
        for task, values in arm.get("tasks", {}).items():
            if values.get("score") is not None:
                result.set_float_custom_property(f"{task}_{name}_score", float(values["score"]))
        for task, gain in (metrics.get("gain_over_baseline") or {}).get(name, {}).items():
            if gain.get("gain_median") is not None:
                result.set_float_custom_property(f"{task}_gain_over_{name}", float(gain["gain_median"]))
    check = metrics.get("init_check") or {}
    if check.get("runs_checked"):
        result.set_int_custom_property("init_check_variables", int(check["variables_compared"]))
        result.set_float_custom_property("init_check_max_abs_diff", float(check["max_abs_diff"]))


@component
def BenchmarkReport(
    model: InputArtifact[standard_artifacts.Model],
    report: OutputArtifact[artifacts.BenchmarkReport],
    config: Parameter[str],
    model_run: InputArtifact[standard_artifacts.ModelRun] = None,
    statistics: InputArtifact[artifacts.DataGenStatistics] = None,
    glue: InputArtifact[artifacts.BenchmarkResult] = None,
    squad: InputArtifact[artifacts.BenchmarkResult] = None,
    squad2: InputArtifact[artifacts.BenchmarkResult] = None,
    race: InputArtifact[artifacts.BenchmarkResult] = None,
    documents: InputArtifact[artifacts.Documents] = None,
    data_gate: InputArtifact[artifacts.DataGateResult] = None,
) -> None:
    """Markdown + HTML report in the shape of the paper's Table 2, with curves and MLMD artifact ids.

    ``config``: presentation settings only; the run's settings shown in the report are read from the
    artifacts (the Trainer's ``run_config.json``, each benchmark result's ``settings``). A benchmark-only DAG
    (``mode=benchmark``) has no ``model_run`` or ``statistics``: the report names the model's source
    (``model_source.json``) and says that the pretraining facts are not this run's. The "Data read" section is
    what ``documents`` and the results recorded of the raw data they read (their ``data_snapshot``). ``data_gate``:
    the DataGate's result for the span pretrained on (its ``gate.json``: the "Data gate" section, with the baseline's
    statistics and the benchmarks' contamination); none without a gate (``mode=benchmark``, ``gate.enabled=false``),
    and the section says so.
    """
    from components import backend_names
    from components.report import report_lib

    cfg = ReportConfig.from_json(config, "report.")
    # On Kubeflow / Vertex AI an artifact is known by the backend's resource name, not by TFX's hashed id.
    names = backend_names.artifact_names()
    results = {name: art for name, art in (("glue", glue), ("squad", squad), ("squad2", squad2), ("race", race))
               if art is not None}
    summary = report_lib.write_report(
        report.uri, cfg,
        results={name: report_lib.load_result(art.uri) for name, art in results.items()},
        model_dir=model.uri, model_run_dir=model_run.uri if model_run else None,
        stats_dir=statistics.uri if statistics else None,
        artifact_ids={name: {"id": names.get(art.id, art.id), "type": art.type_name, "uri": art.uri}
                      for name, art in (("model", model), ("model_run", model_run), ("statistics", statistics),
                                        ("data_gate", data_gate), *results.items()) if art is not None},
        data_read=_data_read(documents, results), gate_dir=data_gate.uri if data_gate else None)
    if summary.get("avg") is not None:
        report.set_float_custom_property("avg", float(summary["avg"]))


# ------------------------------------------------------------------------------------------------
# 6. Release
# ------------------------------------------------------------------------------------------------
@component
def Blesser(
    model: InputArtifact[standard_artifacts.Model],
    report: InputArtifact[artifacts.BenchmarkReport],
    blessing: OutputArtifact[standard_artifacts.ModelBlessing],
    config: Parameter[str],
    baseline_model: InputArtifact[standard_artifacts.Model] = None,
) -> None:
    """BLESSED or NOT_BLESSED, always written: TFX's ``ModelBlessing`` (marker file, ``blessed`` and
    ``current_model_id`` properties, which ``LatestBlessedModelStrategy`` reads) plus ``blessing.json`` with every
    criterion's measured value, threshold and verdict (:mod:`components.release.blessing`).

    ``baseline_model``: the latest blessed model of this pipeline (the ``LatestBlessedModel`` resolver; none on the
    first run). Its scores are those its pushed version recorded in the push destination. The node takes the
    resolver's model and not its blessing, as TFX's Evaluator does: a rerun of an unchanged pipeline then resolves
    the same inputs and is served from the cache, where a new blessing of the same model would make every rerun
    decide (and push) again.
    """
    from components import backend_names
    from components.report import report_lib
    from components.release import blessing as blessing_lib
    from components.release import versions
    from components.release.package import read_json

    settings = json.loads(config)
    destination = settings.pop("push_destination")
    results = read_json(posixpath.join(report.uri, report_lib.RESULTS_JSON))
    names = backend_names.artifact_names()
    baseline = None
    if baseline_model is not None:
        pushed = versions.find_version(destination, baseline_model.uri)
        baseline = {"model": {"id": names.get(baseline_model.id, baseline_model.id), "uri": baseline_model.uri},
                    "scores": None if pushed is None else pushed.get("scores"),
                    "version": None if pushed is None else pushed["version"], "same_model": baseline_model.uri == model.uri}
    decision = blessing_lib.decide(settings, blessing_lib.task_scores(results),
                                   blessing_lib.arm_comparisons(results, settings["baseline_arm"]), baseline)
    decision["model"] = {"id": names.get(model.id, model.id), "uri": model.uri}
    marker = "BLESSED" if decision["blessed"] else "NOT_BLESSED"
    with _staged(blessing.uri) as staging:
        with tf.io.gfile.GFile(posixpath.join(staging, blessing_lib.BLESSING_FILE), "w") as f:
            f.write(json.dumps(decision, indent=2, sort_keys=True))
        with tf.io.gfile.GFile(posixpath.join(staging, marker), "w") as f:
            f.write("")
        publish(staging, blessing.uri)
    # TFX's ModelBlessing convention (tfx/components/evaluator/constants.py), so TFX's resolvers work on it.
    blessing.set_int_custom_property("blessed", int(decision["blessed"]))
    blessing.set_int_custom_property("forced", int(decision["forced"]))
    blessing.set_string_custom_property("current_model", model.uri)
    _set_model_id(blessing, "current_model_id", model, names)
    blessing.set_string_custom_property("reason", decision["reason"][:1000])
    if baseline_model is not None:
        blessing.set_string_custom_property("baseline_model", baseline_model.uri)
        _set_model_id(blessing, "baseline_model_id", baseline_model, names)
    _LOG.info("release decision: %s%s: %s", marker, " (forced)" if decision["forced"] else "", decision["reason"])


@component
def Pusher(
    model: InputArtifact[standard_artifacts.Model],
    report: InputArtifact[artifacts.BenchmarkReport],
    blessing: InputArtifact[standard_artifacts.ModelBlessing],
    pushed_model: OutputArtifact[standard_artifacts.PushedModel],
    config: Parameter[str],
    model_run: InputArtifact[standard_artifacts.ModelRun] = None,
    documents: InputArtifact[artifacts.Documents] = None,
) -> None:
    """Push a blessed model as the destination's next version, whole or not at all, with its model card
    (:mod:`components.release`); with ``vertex_model`` set, also upload it as a new Model Registry version.

    A model that is not blessed is not pushed (``pushed`` 0, as TFX's Pusher records it). A model the destination
    already holds is not pushed again: the same artifact, or the same model from another run (the same pretraining
    run at the same step, :func:`components.release.package.model_key`: two overlapping runs of the same data push
    one version; on ``gs://`` the model is claimed create-only first). The record names the version that holds it.
    With ``vertex_model`` set, a version whose registry upload has not succeeded yet (no ``registry.json`` in its folder: the upload failed
    after the push) is uploaded by this rerun; one that has is not uploaded again. A benchmark-only DAG
    (``mode=benchmark``) has no ``model_run`` or ``documents``: the card names the model's source instead of this
    pipeline's pretraining.
    """
    from components import backend_names
    from components.report import report_lib
    from components.release import blessing as blessing_lib
    from components.release import package, registry, versions

    settings = json.loads(config)
    destination = settings["push_destination"]
    decision = package.read_json(posixpath.join(blessing.uri, blessing_lib.BLESSING_FILE))
    pushed_model.set_string_custom_property("pushed_destination", destination)
    if not decision["blessed"]:
        pushed_model.set_int_custom_property("pushed", 0)
        _LOG.info("release: not pushed (NOT_BLESSED: %s)", decision["reason"])
        return
    export_info = package.export_info(model.uri)
    model_key = package.model_key(export_info)
    version = versions.find_version(destination, model.uri, model_key)
    if version is not None:  # e.g. the decision was taken again after the baseline moved
        _LOG.info("release: already pushed as version %s: %s", version["version"], version["path"])
    else:
        names = backend_names.artifact_names()
        ids = {name: {"id": names.get(a.id, a.id), "type": a.type_name, "uri": a.uri}
               for name, a in (("model", model), ("model_run", model_run), ("report", report),
                               ("documents", documents), ("blessing", blessing)) if a is not None}
        results = package.read_json(posixpath.join(report.uri, report_lib.RESULTS_JSON))
        documents_facts = _int_facts(documents) if documents is not None else {}
        with tempfile.TemporaryDirectory() as built:
            hf_note = package.build(model.uri, export_info, built)

            def finish(number: int) -> dict:
                facts = package.card_facts(
                    name=settings["model_name"], license=settings["license"], version=number, results=results,
                    export_info=export_info, run_config=package.run_config(model_run.uri) if model_run else {},
                    decision=decision, documents=documents_facts, artifacts=ids,
                    arm=decision["settings"]["baseline_arm"], hf_note=hf_note, source=package.model_source(model.uri))
                package.write_card(built, facts)
                return {"version": number, "model": ids["model"], "model_key": model_key, "blessed": True,
                        "forced": decision["forced"],
                        "reason": decision["reason"], "baseline": decision["baseline"], "scores": decision["scores"],
                        "artifacts": ids, "pushed_at": datetime.datetime.now(datetime.timezone.utc).isoformat(),
                        "files": package.file_digests(built)}

            try:
                number, path = versions.publish(built, destination, finish, model_key=model_key)
            except versions.ModelClaimed as claimed:  # an overlapping run trained the same run: one version of it
                _LOG.info("release: %s; waiting for its version", claimed)
                version = versions.wait_for_model(destination, model_key, versions.CLAIM_WAIT_S)
                _LOG.info("release: already pushed as version %s by another run: %s", version["version"],
                          version["path"])
                number = None
        if number is not None:
            version = {"version": number, "path": path, "forced": decision["forced"], "registry": None}
            _LOG.info("release: pushed version %d: %s", number, path)
    pushed_model.set_int_custom_property("pushed", 1)
    pushed_model.set_int_custom_property("pushed_version", int(version["version"]))
    pushed_model.set_string_custom_property("pushed_path", version["path"])
    if settings.get("vertex_model"):
        uploaded = registry.register(settings, version)
        pushed_model.set_string_custom_property("vertex_model", uploaded["model"])
        pushed_model.set_string_custom_property("vertex_model_version", str(uploaded["version_id"]))


def _data_read(documents, results) -> dict:
    """{data key: what was read of it}, from the ``data_snapshot`` properties CorpusGen (its corpus locations) and
    each benchmark (its dataset) recorded."""
    out = {}
    if documents is not None and documents.has_custom_property("data_snapshot"):
        out.update(json.loads(documents.get_string_custom_property("data_snapshot")))
    for name, result in results.items():
        if result.has_custom_property("data_snapshot"):
            out[name] = json.loads(result.get_string_custom_property("data_snapshot"))["dataset"]
    return out


def _in_folders(snapshot, globs):
    """The globs of a data location under the folders the run resolved it to (``folders`` of its ``data_snapshot``
    entry: a window of spans, relative to the Importer's URI, pipeline/settings/spans.py); the globs themselves for one
    folder."""
    folders = [f for f in (snapshot or {}).get("folders", []) if f]
    if not folders:
        return globs
    patterns = [globs] if isinstance(globs, str) else list(globs)
    out = []
    for folder in folders:
        for pattern in patterns:
            out.append(posixpath.join(folder, pattern))
            if pattern.startswith("**/"):  # "**/" also matches files directly under the folder
                out.append(posixpath.join(folder, pattern[3:]))
    return out


def _set_model_id(blessing, key: str, model, names) -> None:
    """``current_model_id`` / ``baseline_model_id`` as the pipeline's resolver matches them: locally the model's MLMD
    id (``LatestBlessedModelStrategy`` compares ids); on Kubeflow / Vertex AI its resource name, which the compiled
    model resolver's query compares with the artifact's ``name`` (TFX rewrites the id so for its own Evaluator
    only: ``kubeflow_v2_entrypoint_utils.refactor_model_blessing``)."""
    if model.id in names:
        blessing.set_string_custom_property(key, names[model.id])
    else:
        blessing.set_int_custom_property(key, model.id)


def _int_facts(artifact) -> dict:
    """An artifact's integer custom properties, however they arrived: ``int_value`` from a local MLMD store, a
    whole number in ``struct_value`` from the Kubeflow / Vertex AI entrypoint (which passes metadata as JSON)."""
    facts = {}
    for key, value in artifact.mlmd_artifact.custom_properties.items():
        if value.HasField("int_value"):
            facts[key] = value.int_value
        elif value.HasField("struct_value"):
            number = artifact.get_json_value_custom_property(key)
            if isinstance(number, float) and number.is_integer():
                facts[key] = int(number)
    return facts


def _record_counters(pipeline, namespace: str, outputs) -> None:
    """The Beam counters Dataflow showed live (documents, sentences, skips by reason, instances, tokens) become
    ``beam_<name>`` int properties of the output artifacts, so MLMD keeps them with the data."""
    from components.datagen.datagen_tool import beam_counters

    result = getattr(pipeline, "result", None)
    if result is None:
        return
    for name, value in sorted(beam_counters(result, namespace).items()):
        for artifact in outputs:
            artifact.set_int_custom_property(f"beam_{name}", int(value))


def _dev_documents_file(squad, race, folder: str) -> str:
    """SQuAD ``dev*.json`` and RACE ``dev/`` articles → one documents file in ``folder`` (the eval split)."""
    from components.datagen import dev_documents

    with tempfile.TemporaryDirectory() as tmp:
        squad_files = []
        if squad is not None:
            for name in sorted(n.rstrip("/") for n in tf.io.gfile.listdir(squad.uri)):
                if name.startswith("dev") and name.endswith(".json"):
                    local = os.path.join(tmp, name)
                    tf.io.gfile.copy(posixpath.join(squad.uri, name), local)
                    squad_files.append(local)
        race_dir = None
        if race is not None and tf.io.gfile.isdir(posixpath.join(race.uri, "dev")):
            race_dir = os.path.join(tmp, "race")
            copy_tree(posixpath.join(race.uri, "dev"), os.path.join(race_dir, "dev"))
        docs = dev_documents.dev_documents(squad_files, race_dir)
        tf.io.gfile.makedirs(folder)
        local_out = os.path.join(tmp, "dev-documents.txt")
        dev_documents.write_documents(docs, local_out)
        out = posixpath.join(folder, "dev-documents.txt")
        tf.io.gfile.copy(local_out, out, overwrite=True)
    return out


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


__all__ = ["CorpusGen", "DataGate", "DataGateCheck", "VocabGen", "PretrainingDataGen", "ModelImport", "BenchmarkEval", "BenchmarkReport", "Blesser",
           "Pusher"]
