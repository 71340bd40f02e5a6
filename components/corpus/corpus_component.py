"""The corpus node's TFX component, ``CorpusGen``: a thin shell over the Beam graph of :mod:`components.corpus.corpus_beam`.

What every node's shell shares (staged outputs, Beam counters, the local Beam runner): :mod:`components.node_shell`.
"""
import json
import logging
import posixpath

import apache_beam as beam
from tfx.dsl.component.experimental.annotations import BeamComponentParameter, InputArtifact, OutputArtifact, Parameter
from tfx.dsl.component.experimental.decorators import component

from components import artifacts
from components.corpus import corpus_beam
from components.corpus.corpus_config import CorpusConfig
from components.corpus.language_tags import LanguageTagging
from components.file_io import publish
from components.node_shell import record_counters, staged

_LOG = logging.getLogger(__name__)


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
    ``folders`` (a window of spans under the Importer's URI) are the folders read. A corpus with a span pattern also
    records each shard's documents' sources (``corpus_beam.SOURCES_DIR``), which the data gate compares location by
    location; one without (the sample presets) writes its files as before."""
    cfg = CorpusConfig.from_json(config, "corpus.")
    read = json.loads(data_snapshot) if data_snapshot else {}
    inputs = corpus_beam.list_inputs(
        wikipedia.uri if wikipedia else None, _in_folders(read.get("wikipedia"), cfg.wikipedia_glob),
        books.uri if books else None, _in_folders(read.get("books"), cfg.books_glob))
    with staged(documents.uri) as staging:
        with beam_pipeline as p:
            corpus_beam.build_corpus(p, inputs, staging, num_shards=cfg.num_shards, min_chars=cfg.min_doc_chars,
                                     dedupe=cfg.dedupe, encoding_fallback=cfg.book_encoding_fallback,
                                     wikipedia_format=cfg.wikipedia_format,
                                     sentence_splitter=cfg.sentence_splitter,
                                     tagging=LanguageTagging.from_config(cfg),
                                     record_sources=any((s or {}).get("spans") for s in read.values()))
        record_counters(p, "albert.corpus", [documents])
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
    # Documents tagged by language (a run of several): language_<code>_<documents|sentences|characters>, and the
    # documents dropped in no listed language, by the identified code: unlisted_language_<code>_documents.
    for code, c in counts.get("per_language", {}).items():
        for key, value in c.items():
            documents.set_int_custom_property(f"language_{code}_{key}", value)
    for code, value in counts.get("unlisted_languages", {}).items():
        documents.set_int_custom_property(f"unlisted_language_{code}_documents", value)


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
