"""Beam pipeline: raw Wikipedia dumps and book folders → deduplicated, sharded documents.

One input file is one unit of parallel work (after a Reshuffle, so Dataflow spreads the files over
workers). Documents are deduplicated by :func:`doc_fingerprint` (the lowest ``doc_id`` wins, so the
result does not depend on worker order), assigned to a shard by a hash of their id and written in the
official text format, sorted by id inside each shard: the same inputs give the same bytes however
many workers ran. All file access goes through ``apache_beam.io.filesystems`` so ``gs://`` works.

Wikipedia files are MediaWiki XML exports or WikiExtractor output (``wikipedia_format``: ``auto`` detects each file's
format from its decompressed first bytes and logs it); books are plain, gzip or bz2 text (magic bytes).
"""
from __future__ import annotations

import hashlib
import json
import logging
import posixpath
from typing import Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, Union

import apache_beam as beam
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from components.file_io import remove_tree
from components.corpus.books import book_document_from_bytes
from components.corpus.language_tags import UNLISTED_KEY, LanguageTagging
from components.corpus.compression import MAGIC_BYTES, check_archive, decompress_bytes, open_decompressed, sniff
from components.text.documents import SHARD_GLOB, Document, doc_fingerprint, shard_file_name, to_text_block
from components.text.corrupt_input import CorruptInputError
from components.corpus.wiki import iter_pages, page_to_document, sniff_wikipedia_format
from components.corpus.wikiextractor_output import extracted_to_document, iter_extracted
from config.errors import MissingInputError
from config.schema import ConfigError
from components.corpus.corpus_config import WIKIPEDIA_FORMATS

LOG = logging.getLogger(__name__)
COUNTS_FILE = "counts.json"
# With ``record_sources`` (a corpus with a span pattern: CorpusGen), beside each shard: its documents' sources in file
# order, as runs ``[[source, documents], ...]`` (the data gate's per-location statistics, docs/data.md). The shard
# format itself keeps no source; a corpus without span patterns writes none, so its files are what they were.
SOURCES_DIR = "sources"


Globs = Union[str, Sequence[str]]


def list_inputs(wikipedia_dir: Optional[str], wikipedia_glob: Globs, books_dir: Optional[str],
                books_glob: Globs) -> List[Tuple[str, str, str]]:
    """(kind, path, root) for every input file, sorted; a configured folder with no match is an error. A glob may be
    one pattern or several (a file matched by more than one is listed once)."""
    inputs: List[Tuple[str, str, str]] = []
    for kind, root, globs in (("wikipedia", wikipedia_dir, wikipedia_glob), ("books", books_dir, books_glob)):
        if not root:
            continue
        patterns = [globs] if isinstance(globs, str) else list(globs)
        paths = set()
        for pattern in patterns:
            # The glob must stay inside the imported folder: MLMD lineage records only the folder.
            if pattern.startswith("/") or "://" in pattern or ".." in pattern.split("/"):
                raise ConfigError(f"{kind} glob {pattern!r} must be relative to {root!r} without '..' segments")
            paths.update(_match(root, pattern))
        if not paths:
            shown = " or ".join(repr(posixpath.join(root, p)) for p in patterns)
            raise MissingInputError(f"no {kind} input files match {shown}")
        inputs.extend((kind, p, root) for p in sorted(paths))
    return sorted(inputs)


def _match(root: str, pattern: str) -> List[str]:
    # "**/" in a glob must also match files directly under root.
    patterns = {posixpath.join(root, pattern)}
    if pattern.startswith("**/"):
        patterns.add(posixpath.join(root, pattern[3:]))
    found = set()
    for result in FileSystems.match(sorted(patterns)):
        found.update(m.path for m in result.metadata_list if not m.path.endswith("/"))
    return sorted(found)


# What ingestion drops on purpose, per source, in ``counts.json`` ("skipped") and as MLMD properties
# ``<source>_<key>`` of the Documents artifact: nothing is dropped without being counted.
SKIP_KEYS = ("empty_files", "short_documents", "duplicate_documents")


_LOGGED_FORMATS = set()


def wikipedia_file_format(path: str) -> str:
    """``xml`` or ``wikiextractor``, from the first decompressed bytes of ``path`` (read through Beam's filesystems);
    an empty file, a truncated archive or a file of neither format raises :class:`CorruptInputError` naming it."""
    with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as raw:
        stream, compressed = open_decompressed(raw, path, lambda: "reading its first bytes to tell its format")
        try:
            prefix = stream.read(256)
            try:
                return sniff_wikipedia_format(prefix, path, compressed)
            except CorruptInputError:
                check_archive(stream, compressed)  # garbled text from a damaged archive: report the archive
                raise
        finally:
            if stream is not raw:
                stream.close()


def read_input_file(item: Tuple[str, str, str], min_chars: int, encoding_fallback: Optional[str],
                    skipped: Optional[Dict[str, int]] = None, wikipedia_format: str = "auto",
                    splitter: str = "english", tagging: Optional[LanguageTagging] = None) -> Iterator[Document]:
    """One raw file → documents, sentences split by ``splitter`` (``corpus.sentence_splitter``). Corrupt input raises
    :class:`CorruptInputError` naming the file. With ``tagging`` active each document carries its language and is
    split by its language's splitter (:mod:`components.corpus.language_tags`); documents in no listed language are
    yielded too (the caller drops and counts them).

    Dropped on purpose and counted in ``skipped`` (when given): an empty book file, 0 bytes or a compressed archive
    of nothing (``empty_files``), and pages/books that are empty or shorter than ``min_chars`` after cleaning
    (``short_documents``). An empty Wikipedia file is corrupt input (a dump always has a root element, WikiExtractor
    never writes a file without a ``<doc>``).
    """
    kind, path, root = item
    skipped = {} if skipped is None else skipped

    def tagged(own_language: Optional[str], make):
        if tagging is None or not tagging.active:
            return make(splitter)
        return tagging.document(kind, own_language, make)
    if kind == "wikipedia":
        if wikipedia_format not in WIKIPEDIA_FORMATS:
            raise ValueError(f"wikipedia_format must be one of {'|'.join(WIKIPEDIA_FORMATS)}, got {wikipedia_format!r}")
        fmt = wikipedia_format
        if fmt == "auto":
            fmt = wikipedia_file_format(path)
            if fmt not in _LOGGED_FORMATS:  # once per process and format; the per-format file counts are counters
                _LOGGED_FORMATS.add(fmt)
                LOG.info("%s: %s (detected from its content; counter wikipedia_files_%s counts such files)", path,
                         "WikiExtractor output" if fmt == "wikiextractor" else "MediaWiki XML export", fmt)
        _counter("wikipedia", f"files_{fmt}").inc()
        with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
            if fmt == "xml":
                docs = (tagged(page.site.language, lambda s, page=page: page_to_document(page, min_chars, splitter=s))
                        for page in iter_pages(f, name=path))
            else:
                docs = (tagged(None, lambda s, doc=doc: extracted_to_document(doc, min_chars, splitter=s))
                        for doc in iter_extracted(f, name=path))
            for doc in docs:
                if doc is None:
                    skipped["short_documents"] = skipped.get("short_documents", 0) + 1
                else:
                    yield doc
        return
    rel = path[len(root):].lstrip("/") if path.startswith(root) else posixpath.basename(path)
    with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
        data = f.read()
    compressed = sniff(data[:MAGIC_BYTES])
    data = decompress_bytes(data, path)
    if not data.strip():
        skipped["empty_files"] = skipped.get("empty_files", 0) + 1
        return
    try:
        doc = tagged(None, lambda s: book_document_from_bytes(data, rel, encoding_fallback, min_chars,
                                                              compressed=compressed or "", splitter=s))
    except CorruptInputError as exc:  # name the full path, not only the relative one
        raise CorruptInputError(path, exc.detail) from exc.__cause__
    if doc is None:
        skipped["short_documents"] = skipped.get("short_documents", 0) + 1
    else:
        yield doc


# Live progress in the Dataflow UI / the runner's metrics (namespace "albert.corpus", per source): input files,
# documents read, documents kept after dedupe, sentences and characters written, and every skip reason of
# SKIP_KEYS. The same numbers end up in counts.json and on the Documents artifact.
def _counter(source: str, name: str):
    return beam.metrics.Metrics.counter("albert.corpus", f"{source}_{name}")


# Documents never travel as Beam elements: a runner that keeps grouped elements in memory (the DirectRunner of
# `albert-pipeline ingest` and of local DAG runs) then held the whole corpus, several times over as Python objects
# (1.76 GB peak at the 41 M words of ../shared/data/large; reading alone: 271 MB, benchmarks/results/ingest_large).
# Each input file's documents go to spill files, one per (input file, shard) under SPILL_DIR, already in the
# official format; only a small record per document (fingerprint, id, source, shard, spill file, sizes) is grouped,
# for deduplication and to tell each shard's writer which spill files and ids it takes. A writer holds one shard's
# text (as bytes), so memory follows corpus / num_shards, not the corpus.
SPILL_DIR = ".spill"
_SPILL_HEADER = "{doc_id}\t{length}\n"  # then `length` bytes: the document in the official format


def _spill_path(spill_dir: str, shard: int, file_key: str) -> str:
    return posixpath.join(spill_dir, f"shard-{shard:05d}", f"{file_key}.txt")


class _ReadFiles(beam.DoFn):
    """Writes each input file's documents to per-shard spill files; emits one small record per document
    ``(fingerprint, (doc_id, file_key, source, shard, sentences, characters, language))`` as the main output and
    per-file skip counts ({source: {key: n}}) on the "skipped" output. A tagged document in no listed language is
    counted (``unlisted_language_documents``, and ``unlisted_language:<code>``) instead."""

    def __init__(self, min_chars: int, encoding_fallback: Optional[str], wikipedia_format: str = "auto",
                 spill_dir: str = "", num_shards: int = 1, splitter: str = "english",
                 tagging: Optional[LanguageTagging] = None):
        self._tagging = tagging
        self._min_chars = min_chars
        self._splitter = splitter
        self._encoding_fallback = encoding_fallback
        self._wikipedia_format = wikipedia_format
        self._spill_dir = spill_dir
        self._num_shards = num_shards

    def process(self, item: Tuple[str, str, str]):
        skipped: Dict[str, int] = {}
        source, path, _ = item
        file_key = hashlib.sha1(path.encode("utf-8")).hexdigest()[:20]
        documents = _counter(source, "documents_read")
        spills: Dict[int, object] = {}  # opened on first use: a book touches one shard, a dump file many
        records = []
        try:
            for doc in read_input_file(item, self._min_chars, self._encoding_fallback, skipped,
                                       self._wikipedia_format, self._splitter, self._tagging):
                documents.inc()
                if self._tagging is not None and self._tagging.active and not self._tagging.listed(doc):
                    for key in (UNLISTED_KEY, f"unlisted_language:{doc.language}"):
                        skipped[key] = skipped.get(key, 0) + 1
                    continue
                shard = shard_of(doc.doc_id, self._num_shards)
                if shard not in spills:
                    spills[shard] = FileSystems.create(_spill_path(self._spill_dir, shard, file_key))
                block = to_text_block(doc).encode("utf-8")
                spills[shard].write(_SPILL_HEADER.format(doc_id=doc.doc_id, length=len(block)).encode("utf-8"))
                spills[shard].write(block)
                records.append((doc_fingerprint(doc), (doc.doc_id, file_key, source, shard, len(doc.sentences),
                                                       doc.num_chars, doc.language)))
        finally:
            for f in spills.values():
                f.close()
        yield from records  # after the spills are closed: a record never names a spill still being written
        _counter(source, "files").inc()
        for key, n in skipped.items():
            if ":" not in key:
                _counter(source, f"skipped_{key}").inc(n)
        if skipped:
            yield beam.pvalue.TaggedOutput("skipped", {source: skipped})


def read_spill(path: str) -> Iterator[Tuple[str, bytes]]:
    """(doc_id, the document's bytes in the official format) of one spill file, in the order written."""
    with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
        while True:
            header = f.readline()
            if not header:
                return
            doc_id, length = header.decode("utf-8").rstrip("\n").rsplit("\t", 1)
            yield doc_id, f.read(int(length))


def shard_of(doc_id: str, num_shards: int) -> int:
    """Stable shard index (sha1, not Python's salted ``hash``)."""
    return int.from_bytes(hashlib.sha1(doc_id.encode("utf-8")).digest()[:8], "big") % num_shards


class _WriteShard(beam.DoFn):
    """Writes one shard file from its spill files (the kept documents, sorted by id) and emits its per-source
    counts; in a run of several languages one file per language (``documents-<code>-NNNNN-of-NNNNN.txt``), and
    with tagging its per-language counts under ``language:<code>``."""

    def __init__(self, output_dir: str, num_shards: int, spill_dir: str, several: bool = False,
                 record_sources: bool = False):
        self._output_dir = output_dir
        self._num_shards = num_shards
        self._spill_dir = spill_dir
        self._several = several
        self._record_sources = record_sources

    @staticmethod
    def _write_sources(path: str, sources: List[str]) -> None:
        """The sources of a shard file's documents, in file order, as runs (:data:`SOURCES_DIR`)."""
        runs: List[List] = []
        for source in sources:
            if runs and runs[-1][0] == source:
                runs[-1][1] += 1
            else:
                runs.append([source, 1])
        with FileSystems.create(sources_path(path)) as f:
            f.write(json.dumps(runs).encode("utf-8"))

    def process(self, element: Tuple[int, Iterable[Tuple]]) -> Iterator[Dict[str, Dict[str, int]]]:
        shard, records = element
        counts: Dict[str, Dict[str, int]] = {}
        kept: Dict[str, Dict[str, Optional[str]]] = {}  # spill file key -> ids kept from it -> their language
        sources: Dict[Tuple[str, str], str] = {}  # (doc id, spill file key) -> source
        for doc_id, file_key, source, _, sentences, characters, language in records:
            kept.setdefault(file_key, {})[doc_id] = language
            sources[doc_id, file_key] = source
            for key in (source,) + ((f"language:{language}",) if language is not None else ()):
                c = counts.setdefault(key, {"documents": 0, "sentences": 0, "characters": 0})
                c["documents"] += 1
                c["sentences"] += sentences
                c["characters"] += characters
        blocks = []
        for file_key in sorted(kept):
            ids = kept[file_key]
            blocks.extend((doc_id, file_key, block, ids[doc_id]) for doc_id, block in
                          read_spill(_spill_path(self._spill_dir, shard, file_key)) if doc_id in ids)
        blocks.sort(key=lambda b: (b[0], b[1]))  # by id; one id in two files (two dumps of a page): by file
        files: Dict[Optional[str], List[Tuple[str, str, bytes]]] = {}
        for doc_id, file_key, block, language in blocks:
            files.setdefault(language if self._several else None, []).append((doc_id, file_key, block))
        for language, parts in sorted(files.items(), key=lambda kv: kv[0] or "") or [(None, [])]:
            path = posixpath.join(self._output_dir, shard_file_name(shard, self._num_shards, language))
            with FileSystems.create(path) as f:
                for _, _, block in parts:
                    f.write(block)
            if self._record_sources:
                self._write_sources(path, [sources[doc_id, file_key] for doc_id, file_key, block in parts if block])
        for source, c in counts.items():
            if not source.startswith("language:"):
                for key, n in c.items():
                    _counter(source, key).inc(n)
        yield counts


def _sum_counts(parts: Iterable[Dict[str, Dict[str, int]]]) -> Dict[str, Dict[str, int]]:
    """Sum {source: {key: n}} dictionaries (any keys)."""
    total: Dict[str, Dict[str, int]] = {}
    for part in parts:
        for source, c in part.items():
            t = total.setdefault(source, {})
            for k, v in c.items():
                t[k] = t.get(k, 0) + v
    return total


def _dedupe(element: Tuple[str, Iterable[Tuple]]):
    """Keep the lowest id (then the lowest spill file key, so the choice never depends on worker order); the others
    are counted as ``duplicate_documents`` of their own source."""
    _, records = element
    records = sorted(records, key=lambda r: (r[0], r[1]))
    yield records[0]
    dropped: Dict[str, Dict[str, int]] = {}
    for record in records[1:]:
        source = record[2]
        c = dropped.setdefault(source, {"duplicate_documents": 0})
        c["duplicate_documents"] += 1
        _counter(source, "skipped_duplicate_documents").inc()
    if dropped:
        yield beam.pvalue.TaggedOutput("skipped", dropped)


def build_corpus(pipeline: beam.Pipeline, inputs: List[Tuple[str, str, str]], output_dir: str, *,
                 num_shards: int, min_chars: int, dedupe: bool = True,
                 encoding_fallback: Optional[str] = None, wikipedia_format: str = "auto",
                 sentence_splitter: Optional[str] = None, tagging: Optional[LanguageTagging] = None,
                 record_sources: bool = False) -> None:
    """Add the ingestion stages to ``pipeline``; writes shards and ``counts.json`` under ``output_dir`` (spill files
    under ``output_dir/.spill`` while it runs, deleted at the end). ``wikipedia_format``: one of
    :data:`components.corpus.corpus_config.WIKIPEDIA_FORMATS` (``auto``: per file, from its content); ``sentence_splitter``:
    ``corpus.sentence_splitter`` (None: English's); ``tagging``: documents tagged by language
    (:class:`components.corpus.language_tags.LanguageTagging`, ``from_config``), None or inactive in a
    single-language run; ``record_sources``: write each shard's documents' sources beside it (:data:`SOURCES_DIR`,
    :func:`shard_sources`)."""
    if num_shards < 1:
        raise ValueError(f"num_shards must be >= 1, got {num_shards}")
    if wikipedia_format not in WIKIPEDIA_FORMATS:
        raise ValueError(f"wikipedia_format must be one of {'|'.join(WIKIPEDIA_FORMATS)}, got {wikipedia_format!r}")
    spill_dir = posixpath.join(output_dir, SPILL_DIR)
    read = (
        pipeline
        | "ListFiles" >> beam.Create(inputs)
        | "SpreadFiles" >> beam.Reshuffle()
        | "ReadFiles" >> beam.ParDo(_ReadFiles(min_chars, encoding_fallback, wikipedia_format, spill_dir,
                                               num_shards, sentence_splitter or "english", tagging)
                                    ).with_outputs("skipped", main="docs")
    )
    records, skipped_parts = read.docs, [read.skipped]
    if dedupe:
        kept = (
            records
            | "GroupDuplicates" >> beam.GroupByKey()
            | "KeepLowestId" >> beam.FlatMap(_dedupe).with_outputs("skipped", main="docs")
        )
        records = kept.docs
        skipped_parts.append(kept.skipped)
    else:
        records = records | "DropFingerprints" >> beam.Values()
    skipped = (
        skipped_parts
        | "FlattenSkipped" >> beam.Flatten()
        | "SumSkipped" >> beam.CombineGlobally(_sum_counts)
    )
    counts = (
        records
        | "KeyByShard" >> beam.Map(lambda r: (r[3], r))
        | "GroupShards" >> beam.GroupByKey()
        | "WriteShards" >> beam.ParDo(_WriteShard(output_dir, num_shards, spill_dir,
                                                  tagging is not None and tagging.several, record_sources))
        | "SumCounts" >> beam.CombineGlobally(_sum_counts)
    )
    sources = sorted({kind for kind, _, _ in inputs})
    extra = (tagging,) if tagging is not None and tagging.active else ()
    _ = counts | "WriteCounts" >> beam.Map(_write_counts, output_dir, num_shards, len(inputs),
                                           beam.pvalue.AsSingleton(skipped), sources, *extra)


def _write_counts(counts: Dict[str, Dict[str, int]], output_dir: str, num_shards: int, num_inputs: int,
                 skipped: Optional[Dict[str, Dict[str, int]]] = None, sources: Iterable[str] = (),
                 tagging: Optional[LanguageTagging] = None) -> None:
    total = _sum_counts([counts])
    per_language = {key.split(":", 1)[1]: total.pop(key) for key in sorted(total) if key.startswith("language:")}
    skipped = _sum_counts([skipped or {}, {source: {} for source in sources}])
    keys = SKIP_KEYS + ((UNLISTED_KEY,) if tagging is not None else ())
    summary = {
        "skipped": {source: {k: c.get(k, 0) for k in keys} for source, c in sorted(skipped.items())},
        "per_source": total,
        "documents": sum(c["documents"] for c in total.values()),
        "sentences": sum(c["sentences"] for c in total.values()),
        "characters": sum(c["characters"] for c in total.values()),
        "num_shards": num_shards,
        "num_input_files": num_inputs,
    }
    if tagging is not None:  # documents tagged by language: their counts, what was dropped, and the limit
        unlisted: Dict[str, int] = {}
        for c in skipped.values():
            for key, n in c.items():
                if key.startswith("unlisted_language:"):
                    unlisted[key.split(":", 1)[1]] = unlisted.get(key.split(":", 1)[1], 0) + n
        summary["per_language"] = {code: per_language.get(code, {"documents": 0, "sentences": 0, "characters": 0})
                                   for code in tagging.languages}
        summary["unlisted_languages"] = dict(sorted(unlisted.items()))
        tagging.check_unlisted(sum(unlisted.values()), summary["documents"], output_dir)
    if summary["documents"] == 0:
        raise CorruptInputError(output_dir, "no documents survived ingestion (inputs empty or all too short; "
                                f"skipped: {json.dumps(summary['skipped'], sort_keys=True)})")
    # Shards that received no document still exist (empty) so readers can rely on the full set.
    for shard in range(num_shards):
        for language in (tagging.languages if tagging is not None and tagging.several else (None,)):
            path = posixpath.join(output_dir, shard_file_name(shard, num_shards, language))
            if not FileSystems.exists(path):
                with FileSystems.create(path):
                    pass
    with FileSystems.create(posixpath.join(output_dir, COUNTS_FILE)) as f:
        f.write(json.dumps(summary, indent=2, sort_keys=True).encode("utf-8"))
    remove_tree(posixpath.join(output_dir, SPILL_DIR))  # the spill folder, gone from the output


def read_counts(output_dir: str) -> Dict:
    with FileSystems.open(posixpath.join(output_dir, COUNTS_FILE)) as f:
        return json.loads(f.read().decode("utf-8"))


def document_shards(documents_dir: str) -> List[str]:
    """The shard files of a documents folder, in order."""
    result = FileSystems.match([posixpath.join(documents_dir, SHARD_GLOB)])[0]
    return sorted(m.path for m in result.metadata_list)


def sources_path(shard_path: str) -> str:
    """Where the sources of a shard's documents are written (:data:`SOURCES_DIR`)."""
    folder, name = posixpath.split(shard_path)
    return posixpath.join(folder, SOURCES_DIR, posixpath.splitext(name)[0] + ".json")


def shard_sources(shard_path: str) -> Optional[List[str]]:
    """The source of each document of a shard, in file order; None when the corpus recorded none (no span pattern,
    or a folder written before sources were recorded)."""
    path = sources_path(shard_path)
    if not FileSystems.exists(path):
        return None
    with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
        runs = json.loads(f.read().decode("utf-8"))
    return [source for source, n in runs for _ in range(n)]
