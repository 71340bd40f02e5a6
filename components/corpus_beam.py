"""Beam pipeline: raw Wikipedia dumps and book folders → deduplicated, sharded documents.

One input file is one unit of parallel work (after a Reshuffle, so Dataflow spreads the files over
workers). Documents are deduplicated by :func:`doc_fingerprint` (the lowest ``doc_id`` wins, so the
result does not depend on worker order), assigned to a shard by a hash of their id and written in the
official text format, sorted by id inside each shard: the same inputs give the same bytes however
many workers ran. All file access goes through ``apache_beam.io.filesystems`` so ``gs://`` works.
"""
from __future__ import annotations

import hashlib
import json
import posixpath
from typing import Dict, Iterable, Iterator, List, Optional, Tuple

import apache_beam as beam
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from components.text.books import book_document_from_bytes
from components.text.documents import Document, doc_fingerprint, to_text_block
from components.text.errors import CorruptInputError
from components.text.wiki import wiki_documents

SHARD_PATTERN = "documents-{:05d}-of-{:05d}.txt"
COUNTS_FILE = "counts.json"


def list_inputs(wikipedia_dir: Optional[str], wikipedia_glob: str, books_dir: Optional[str],
                books_glob: str) -> List[Tuple[str, str, str]]:
    """(kind, path, root) for every input file, sorted; a configured folder with no match is an error."""
    inputs: List[Tuple[str, str, str]] = []
    for kind, root, pattern in (("wikipedia", wikipedia_dir, wikipedia_glob), ("books", books_dir, books_glob)):
        if not root:
            continue
        paths = _match(root, pattern)
        if not paths:
            raise FileNotFoundError(f"no {kind} input files match {posixpath.join(root, pattern)!r}")
        inputs.extend((kind, p, root) for p in paths)
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


def read_input_file(item: Tuple[str, str, str], min_chars: int,
                    encoding_fallback: Optional[str]) -> Iterator[Document]:
    """One raw file → documents. Corrupt input raises :class:`CorruptInputError` naming the file."""
    kind, path, root = item
    with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
        if kind == "wikipedia":
            yield from wiki_documents(f, min_chars=min_chars, name=path)
        else:
            rel = path[len(root):].lstrip("/") if path.startswith(root) else posixpath.basename(path)
            doc = book_document_from_bytes(f.read(), rel, encoding_fallback, min_chars)
            if doc is not None:
                yield doc


def shard_of(doc_id: str, num_shards: int) -> int:
    """Stable shard index (sha1, not Python's salted ``hash``)."""
    return int.from_bytes(hashlib.sha1(doc_id.encode("utf-8")).digest()[:8], "big") % num_shards


class _WriteShard(beam.DoFn):
    """Writes one shard file (documents sorted by id) and emits its per-source counts."""

    def __init__(self, output_dir: str, num_shards: int):
        self._output_dir = output_dir
        self._num_shards = num_shards

    def process(self, element: Tuple[int, Iterable[Document]]) -> Iterator[Dict[str, Dict[str, int]]]:
        shard, docs = element
        docs = sorted(docs, key=lambda d: d.doc_id)
        path = posixpath.join(self._output_dir, SHARD_PATTERN.format(shard, self._num_shards))
        counts: Dict[str, Dict[str, int]] = {}
        with FileSystems.create(path) as f:
            for doc in docs:
                f.write(to_text_block(doc).encode("utf-8"))
                c = counts.setdefault(doc.source, {"documents": 0, "sentences": 0, "characters": 0})
                c["documents"] += 1
                c["sentences"] += len(doc.sentences)
                c["characters"] += doc.num_chars
        yield counts


def _sum_counts(parts: Iterable[Dict[str, Dict[str, int]]]) -> Dict[str, Dict[str, int]]:
    total: Dict[str, Dict[str, int]] = {}
    for part in parts:
        for source, c in part.items():
            t = total.setdefault(source, {"documents": 0, "sentences": 0, "characters": 0})
            for k, v in c.items():
                t[k] += v
    return total


def _dedupe(element: Tuple[str, Iterable[Document]]) -> Document:
    _, docs = element
    return min(docs, key=lambda d: d.doc_id)


def build_corpus(pipeline: beam.Pipeline, inputs: List[Tuple[str, str, str]], output_dir: str, *,
                 num_shards: int, min_chars: int, dedupe: bool = True,
                 encoding_fallback: Optional[str] = None) -> None:
    """Add the ingestion stages to ``pipeline``; writes shards and ``counts.json`` under ``output_dir``."""
    if num_shards < 1:
        raise ValueError(f"num_shards must be >= 1, got {num_shards}")
    docs = (
        pipeline
        | "ListFiles" >> beam.Create(inputs)
        | "SpreadFiles" >> beam.Reshuffle()
        | "ReadFiles" >> beam.FlatMap(read_input_file, min_chars, encoding_fallback)
    )
    if dedupe:
        docs = (
            docs
            | "KeyByFingerprint" >> beam.Map(lambda d: (doc_fingerprint(d), d))
            | "GroupDuplicates" >> beam.GroupByKey()
            | "KeepLowestId" >> beam.Map(_dedupe)
        )
    counts = (
        docs
        | "KeyByShard" >> beam.Map(lambda d: (shard_of(d.doc_id, num_shards), d))
        | "GroupShards" >> beam.GroupByKey()
        | "WriteShards" >> beam.ParDo(_WriteShard(output_dir, num_shards))
        | "SumCounts" >> beam.CombineGlobally(_sum_counts)
    )
    _ = counts | "WriteCounts" >> beam.Map(_write_counts, output_dir, num_shards, len(inputs))


def _write_counts(counts: Dict[str, Dict[str, int]], output_dir: str, num_shards: int, num_inputs: int) -> None:
    total = _sum_counts([counts])
    summary = {
        "per_source": total,
        "documents": sum(c["documents"] for c in total.values()),
        "sentences": sum(c["sentences"] for c in total.values()),
        "characters": sum(c["characters"] for c in total.values()),
        "num_shards": num_shards,
        "num_input_files": num_inputs,
    }
    if summary["documents"] == 0:
        raise CorruptInputError(output_dir, "no documents survived ingestion (inputs empty or all too short)")
    # Shards that received no document still exist (empty) so readers can rely on the full set.
    for shard in range(num_shards):
        path = posixpath.join(output_dir, SHARD_PATTERN.format(shard, num_shards))
        if not FileSystems.exists(path):
            with FileSystems.create(path):
                pass
    with FileSystems.create(posixpath.join(output_dir, COUNTS_FILE)) as f:
        f.write(json.dumps(summary, indent=2, sort_keys=True).encode("utf-8"))


def read_counts(output_dir: str) -> Dict:
    with FileSystems.open(posixpath.join(output_dir, COUNTS_FILE)) as f:
        return json.loads(f.read().decode("utf-8"))


def document_shards(documents_dir: str) -> List[str]:
    """The shard files of a documents folder, in order."""
    result = FileSystems.match([posixpath.join(documents_dir, "documents-*-of-*.txt")])[0]
    return sorted(m.path for m in result.metadata_list)
