"""The data gate's TFX components, ``DataGate`` (a Beam shell over :mod:`components.datagate.datagate_beam`) and
``DataGateCheck`` (the verdict that stops the run), and its second stage, ``ExamplesGate`` (the examples' statistics
per language, :mod:`components.datagate.examples_stats`, before the Trainer).

What every node's shell shares (staged outputs, Beam counters, the local Beam runner): :mod:`components.node_shell`.
"""
import json
import logging
import os
import posixpath
import tempfile

import apache_beam as beam
import tensorflow as tf
from tfx.dsl.component.experimental.annotations import BeamComponentParameter, InputArtifact, OutputArtifact, Parameter
from tfx.dsl.component.experimental.decorators import component

from components import artifacts
from components.corpus import corpus_beam
from components.datagate import datagate_beam, datagate_result
from components.datagate import examples_stats
from components.datagate.checks import GateLimits
from components.datagen.datagen_beam_input import read_documents
from components.text import documents as text_documents
from components.text.tokenizers import load_tokenizer, vocab_file_name
from components.vocab.vocab_lib import vocab_folder_spec
from trainer.files import STATS_FILE
from components.file_io import copy_tree, publish
from components.node_shell import staged

_LOG = logging.getLogger(__name__)


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
    glue_dev: InputArtifact[artifacts.RawCorpus] = None,
    glue_tasks: Parameter[str] = None,
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
    ``squad2_dev`` / ``race_dev`` / ``glue_dev``: the benchmarks' data, whose dev passages (the GLUE node's tasks'
    dev examples too; ``glue_tasks``: its specs of ``benchmarks.tasks``, JSON, when it has any) are checked for
    13-gram contamination.

    How a failed span stops the run: this node never fails on a bad span. It publishes its ``DataGateResult``
    (``passed`` 0, the failed checks in ``anomalies.pb``), so the anomalies are an artifact in MLMD, with lineage to
    the documents, whatever happens next; TFX publishes no output of a failed execution, so a node that raised here
    would leave only a FAILED execution. ``DataGateCheck`` reads the result and raises :class:`DataGateError` (one
    line per failed check, exit 2 from the CLI), and ``VocabGen``, the first expensive node, runs only after it
    succeeded (a dependency without artifacts, which moves no cache key: pipeline/pipeline.py)."""
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
        passages = _reading_dev_passages(squad_dev, squad2_dev, race_dev, copies, glue_dev,
                                         json.loads(glue_tasks) if glue_tasks else None)
        with staged(result.uri) as staging:
            with beam_pipeline as p:
                datagate_beam.build_gate(p, corpus_beam.document_shards(documents.uri), staging, span=span,
                                         limits=limits, baseline=base, passages=passages, accept=accept,
                                         accepted_before=acceptance_uri,
                                         baseline_summary=(datagate_beam.read_summary(baseline_uri)
                                                           if baseline_uri else None),
                                         patterned=datagate_beam.patterned_locations(snapshot))
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
    summary = datagate_beam.read_summary(result.uri)
    line = datagate_result.verdict(summary, result.uri)  # raises DataGateError on a span that does not go through
    (_LOG.warning if summary["accepted"] else _LOG.info)(line)


def _reading_dev_passages(squad, squad2, race, tmp: str, glue=None, glue_specs=None):
    """The dev passages of the benchmarks' data artifacts (SQuAD ``dev*.json`` paragraphs, RACE ``dev/`` articles,
    the GLUE node's tasks' dev examples): read where they are when local (an error names the file), from local
    copies under ``tmp`` on ``gs://``."""
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
    glue_dir = None
    if glue is not None:
        glue_dir = glue.uri
        if "://" in glue_dir:
            glue_dir = os.path.join(tmp, "glue")
            copy_tree(glue.uri, glue_dir)
    return datagate_beam.dev_passages(squad_files["squad"], race_dir, squad2_files=squad_files["squad2"],
                                      glue_dir=glue_dir, glue_specs=glue_specs)


@component
def ExamplesGate(
    documents: InputArtifact[artifacts.Documents],
    vocab: InputArtifact[artifacts.SentencePieceModel],
    statistics: InputArtifact[artifacts.DataGenStatistics],
    config: Parameter[str],
    languages: Parameter[str],
    seed: Parameter[int],
) -> None:
    """The examples' statistics per language (:mod:`components.datagate.examples_stats`): a seeded sample of each
    language's sentences tokenized with the run's vocabulary (``[UNK]`` rate, pieces per character, vocabulary
    coverage) and datagen's padding and masked shares, logged one line per language; raises
    :class:`~components.datagate.examples_stats.ExamplesGateError` when one of the run's languages has no training
    instance (``check_instances``) or a language's ``[UNK]`` rate is above ``gate.max_unk_rate``. The ``Trainer``
    depends on this node (a dependency without artifacts: no cache key moves), so it never trains on a vocabulary
    that cannot write one of the run's languages, nor without one of them.

    ``config``: ``GateConfig.examples_params``; ``languages``: the run's languages (JSON list). With one, every
    document is of it; with several, each documents file holds one language's (``file_language`` of
    :mod:`components.text.documents`), and a file of none is not measured."""
    limits = json.loads(config)
    run_languages = json.loads(languages)
    with tf.io.gfile.GFile(posixpath.join(statistics.uri, STATS_FILE)) as f:
        stats = json.load(f)
    missing = examples_stats.check_instances(stats, run_languages)
    if missing:  # a listed language would not be trained at all
        raise examples_stats.ExamplesGateError(
            f"the examples gate stopped the run before the Trainer: {len(missing)} of the run's {len(run_languages)} "
            f"languages have no training instance (lower datagen.eval_fraction, add their documents, or remove them "
            f"from the language setting)\n" + "\n".join(missing))
    do_lower_case = (bool(vocab.get_int_custom_property("do_lower_case"))
                     if vocab.has_custom_property("do_lower_case") else True)
    spec = vocab_folder_spec(vocab.uri, do_lower_case)
    path = posixpath.join(vocab.uri, vocab_file_name(spec))
    with tf.io.gfile.GFile(path, "rb") as f:
        tokenizer = load_tokenizer(f.read(), spec, path)
    files: dict = {}
    for shard in corpus_beam.document_shards(documents.uri):
        language = run_languages[0] if len(run_languages) == 1 else text_documents.file_language(shard)
        if language in run_languages:
            files.setdefault(language, []).append(shard)
    measures = {}
    for language, shards in sorted(files.items()):
        size = sum(tf.io.gfile.stat(s).length for s in shards)
        sentences = (s for shard in shards for _, doc in read_documents(shard) for s in doc)
        measures[language] = examples_stats.measure_language(
            language, examples_stats.sampled(sentences, examples_stats.sample_rate(size), seed), tokenizer)
        shares = examples_stats.instance_shares(stats, language if len(run_languages) > 1 else None)
        _LOG.info("examples gate: %s", examples_stats.summary_line(measures[language], shares))
    lines = examples_stats.check_examples(measures, float(limits["max_unk_rate"]))
    if lines:
        raise examples_stats.ExamplesGateError(
            f"the examples gate stopped the run before the Trainer: the vocabulary at {vocab.uri} cannot write "
            f"{len(lines)} of the run's {len(run_languages)} languages ([UNK] rate above gate.max_unk_rate; a "
            f"vocabulary trained on the run's documents, or vocab.import_model of one that covers them, can)\n"
            + "\n".join(lines))
    _LOG.info("examples gate: %d language(s) within gate.max_unk_rate=%g", len(measures), limits["max_unk_rate"])
