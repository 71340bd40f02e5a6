"""``albert-pipeline ingest``: CorpusGen's Beam code (``components/corpus/corpus_beam.py``) outside TFX.

Reads Wikipedia (pages-articles XML dumps or WikiExtractor output, plain or compressed) and book folders (plain,
gzip or bz2 text) and writes the documents in the official format (one sentence per line, a blank line after each
document) as ``documents-NNNNN-of-NNNNN.txt`` shards with ``counts.json``: the layout of the DAG's ``Documents``
artifact, so ``make-pretraining-data --input`` takes the folder as it is.

Nothing partial is published: the job writes into a sibling staging folder (``<output>.tmp-<pid>``) that is moved into
place only when the whole job succeeded (:func:`components.file_io.publish`: one rename locally; on ``gs://`` object by
object with ``counts.json`` last, and a failure midway removes what was moved), and deleted when anything fails. Local folders and ``gs://`` URIs both go
through Beam's filesystems, so the same command runs on Dataflow with ``--beam-arg=--runner=DataflowRunner ...``
instead of the local runner.
"""
from __future__ import annotations

import logging
import os
from typing import Dict, List, Optional, Sequence

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import PipelineOptions

from components import beam_options
from components.corpus import corpus_beam
from components.corpus.language_tags import LanguageTagging
from components.file_io import publish, remove_tree
from config.errors import MissingInputError, OutputExistsError
from config.schema import ConfigError

LOG = logging.getLogger(__name__)


def _is_uri(path: str) -> bool:
    return "://" in path


def _is_nonempty_folder(path: str) -> bool:
    if not _is_uri(path):
        return os.path.exists(path) and (not os.path.isdir(path) or bool(os.listdir(path)))
    return bool(FileSystems.match([path.rstrip("/") + "/**"])[0].metadata_list)


def pipeline_options(workers: int, beam_args: Sequence[str] = ()) -> PipelineOptions:
    """The local runner (``components/beam_options.py``) on ``workers`` processes, unless ``beam_args`` name a runner
    (Dataflow, Flink...)."""
    args = list(beam_args)
    if not any(a.startswith("--runner") for a in args):
        args = beam_options.local_args(workers) + args
    return PipelineOptions(args)


def ingest(wikipedia: Optional[str], books: Optional[str], output: str, corpus, *, workers: int = 1,
           wikipedia_format: Optional[str] = None, wikipedia_globs: Optional[Sequence[str]] = None,
           books_globs: Optional[Sequence[str]] = None, beam_args: Sequence[str] = (),
           counters: Optional[Dict[str, int]] = None) -> Dict:
    """Run the ingestion job; returns ``counts.json`` (per-source documents, sentences, characters and skips; with
    documents tagged by language, ``per_language`` and ``unlisted_languages`` too).

    ``corpus``: a :class:`config.CorpusConfig`, read as CorpusGen reads it (``min_doc_chars``, ``dedupe``,
    ``num_shards``, ``book_encoding_fallback``, ``wikipedia_format`` and the globs, whose defaults cover both
    Wikipedia formats and plain or compressed books); its folders are replaced by ``wikipedia`` / ``books``, and
    ``wikipedia_format`` and the globs by these arguments when given.
    """
    if not wikipedia and not books:
        raise ConfigError("ingest needs --wikipedia DIR and/or --books DIR")
    if workers < 1:
        raise ConfigError(f"--workers must be >= 1, got {workers}")
    output = output.rstrip("/") or output
    if _is_nonempty_folder(output):
        raise OutputExistsError(f"output folder {output} exists and is not empty")
    for flag, folder in (("--wikipedia", wikipedia), ("--books", books)):
        if folder and not _is_uri(folder) and not os.path.isdir(folder):
            raise MissingInputError(f"{flag} {folder} is not a folder")
    inputs = corpus_beam.list_inputs(wikipedia, list(wikipedia_globs or corpus.wikipedia_glob),
                                     books, list(books_globs or corpus.books_glob))
    LOG.info("ingest: %d input files (%d Wikipedia, %d books)", len(inputs),
             sum(kind == "wikipedia" for kind, _, _ in inputs), sum(kind == "books" for kind, _, _ in inputs))
    staging = f"{output}.tmp-{os.getpid()}"
    remove_tree(staging)
    try:
        p = beam.Pipeline(options=pipeline_options(workers, beam_args))
        corpus_beam.build_corpus(p, inputs, staging, num_shards=corpus.num_shards, min_chars=corpus.min_doc_chars,
                                 dedupe=corpus.dedupe, encoding_fallback=corpus.book_encoding_fallback,
                                 wikipedia_format=wikipedia_format or corpus.wikipedia_format,
                                 sentence_splitter=corpus.sentence_splitter,
                                 tagging=LanguageTagging.from_config(corpus))
        result = p.run()
        result.wait_until_finish()
        # All or nothing, counts.json (the mark of a complete output) last; a failure removes what was moved.
        publish(staging, output, last=[corpus_beam.COUNTS_FILE])
    except BaseException:
        remove_tree(staging)  # publish has removed it already where it ran
        raise
    from components.datagen.datagen_tool import beam_counters  # lazy: components.datagen.datagen_tool, sentencepiece (0.02 s)

    found = beam_counters(result, "albert.corpus")
    LOG.info("ingest: %s", ", ".join(f"{k} {v:,}" for k, v in sorted(found.items())))
    if counters is not None:
        counters.update(found)
    return corpus_beam.read_counts(output)

