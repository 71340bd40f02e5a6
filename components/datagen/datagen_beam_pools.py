"""The random-document pools of pretraining-data generation (``components/datagen/datagen_beam.py``): official SOP
negatives and NSP draw their other document from a deterministic sample of documents, one pool per split, drawn from
that split's documents only (so no eval text enters a training instance, nor the reverse), bounded in documents and
in characters.

A first read emits only (split, key, id, file, characters) per document; the samples are chosen from those; a
second read tokenizes just the chosen documents, in parallel, into part files that one step joins into a pool file
of compact :class:`DocumentPool` s. The tokens never pass through Beam: as elements and a side input, Beam's encoded
buffers, state copies and cache held about ten times the pool (measured: +80 to +230 MiB of peak RSS, growing with
the corpus).
"""
from __future__ import annotations

import pickle
import posixpath
import uuid
from typing import Dict, Iterator, List, Tuple

import apache_beam as beam
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from components.datagen.generate import tokenize_document
from components.datagen.pool import DocumentPool
from components.datagen.datagen_beam_input import SplitRule, _h64, _make_dirs, _Tokenizing, read_documents


def _pool_keys(path: str, seed: int, split_rule: SplitRule) -> Iterator[Tuple[str, Tuple[int, str, str, int]]]:
    """``(split, (pool key, doc_id, file, characters))`` per document: small elements, whatever the document
    size, keyed for one pool per split."""
    for doc_id, sentences in read_documents(path):
        yield split_rule(path, doc_id), (_h64("pool", seed, doc_id), doc_id, path, sum(map(len, sentences)))


def select_pool(candidates: List[Tuple[int, str, str, int]], max_chars: int) -> Dict[str, int]:
    """The pool: candidates in ascending (key, doc_id) order while their characters fit in ``max_chars``,
    but at least two (a document never draws itself, so one pooled document could serve no one). Returns
    {doc_id: key}."""
    chosen: Dict[str, int] = {}
    chars = 0
    for key, doc_id, _, n_chars in sorted(candidates, key=lambda t: (t[0], t[1])):
        if len(chosen) >= 2 and chars + n_chars > max_chars:
            break
        chosen[doc_id] = key
        chars += n_chars
    return chosen


class _TokenizeSplitPoolDocuments(_Tokenizing):
    """One file → its documents chosen for their split's pool, tokenized and written to one part file in
    ``work_dir`` as ``[(split, key, doc_id, TokenizedDocument)]``; the element emitted is only the part's path."""

    def __init__(self, vocab_path: str, tokenizer_spec, word_starts: str, work_dir: str):
        super().__init__(vocab_path, tokenizer_spec, word_starts)
        self._work_dir = work_dir

    def setup(self):
        super().setup()
        _make_dirs(self._work_dir)

    def process(self, path: str, chosen: Dict[str, Dict[str, int]]):
        prefix = posixpath.basename(path) + ":"
        wanted = {doc_id: (split, key) for split, ids in chosen.items() for doc_id, key in ids.items()
                  if doc_id.startswith(prefix)}
        if not wanted:
            return
        found = []
        for doc_id, sentences in read_documents(path):
            if doc_id in wanted:
                tokens = tokenize_document(self.tokenizer, sentences, self.vocab)
                if len(tokens):
                    split, key = wanted[doc_id]
                    found.append((split, key, doc_id, tokens))
        if found:
            yield _write_pickle(self._work_dir, "pool-part", found)


def _write_pickle(work_dir: str, prefix: str, value) -> str:
    """``value`` pickled into a new file of ``work_dir`` (a retried bundle's file is simply never read)."""
    path = posixpath.join(work_dir, f"{prefix}-{uuid.uuid4().hex}.pkl")
    with FileSystems.create(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
        f.write(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))
    return path


def _read_pickle(path: str):
    with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
        return pickle.loads(f.read())


def _build_pool(items: List[Tuple[int, str, object]]) -> DocumentPool:
    items = sorted(items, key=lambda t: (t[0], t[1]))
    return DocumentPool([doc_id for _, doc_id, _ in items], [tokens for _, _, tokens in items])


def _build_split_pools(part_paths: List[str], work_dir: str) -> str:
    """Part files → one pool file holding ``{split: DocumentPool}`` (each in (key, doc_id) order); its path."""
    by_split: Dict[str, List[Tuple[int, str, object]]] = {}
    for part in sorted(part_paths):
        for split, key, doc_id, tokens in _read_pickle(part):
            by_split.setdefault(split, []).append((key, doc_id, tokens))
    pools = {split: _build_pool(found) for split, found in sorted(by_split.items())}
    del by_split
    return _write_pickle(work_dir, "pools", pools)


def load_pools(pools_file: str) -> Dict[str, DocumentPool]:
    """The ``{split: DocumentPool}`` of a pool file written by :func:`split_document_pools`."""
    return _read_pickle(pools_file)


def split_document_pools(files: beam.PCollection, vocab_path: str, tokenizer_spec, word_starts: str, seed: int,
                         max_documents: int, max_chars: int, split_rule: SplitRule,
                         work_dir: str) -> beam.PCollection:
    """File names → the path of one pool file (in ``work_dir``) holding ``{split: DocumentPool}``: per split,
    that split's documents with the smallest pool keys, at most ``max_documents`` of them and ``max_chars``
    characters (at least two when the split has two). A split's instances draw random documents from its own
    pool only.

    Only (key, id, file, characters) tuples reach the combiner; only the chosen documents are read again and
    tokenized (in parallel, per file) into part files, and Beam carries nothing but file names: no step holds
    more than the pool itself (see the module docstring).
    """
    chosen = (
        files
        | "PoolKeys" >> beam.FlatMap(_pool_keys, seed, split_rule)
        | "SmallestKeys" >> beam.combiners.Top.SmallestPerKey(max_documents, key=lambda t: (t[0], t[1]))
        | "FitPoolBudget" >> beam.MapTuple(lambda split, found: (split, select_pool(found, max_chars)))
        | "ChosenBySplit" >> beam.combiners.ToDict()
    )
    return (
        files
        | "TokenizePool" >> beam.ParDo(_TokenizeSplitPoolDocuments(vocab_path, tokenizer_spec, word_starts, work_dir),
                                       beam.pvalue.AsSingleton(chosen))
        | "CollectPoolParts" >> beam.combiners.ToList()
        | "BuildPool" >> beam.Map(_build_split_pools, work_dir)
    )
