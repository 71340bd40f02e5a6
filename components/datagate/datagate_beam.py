"""The data gate's Beam shell (issue 55): a span's documents → its statistics, the checks, and the result's files.

The measures, checks and protos are the pure core's (:mod:`components.datagate`); this module reads CorpusGen's
shards, runs the core's combiners as ``beam.CombineGlobally`` (a CombineFn's accumulators merge in any order, so
the span's statistics are the same on one worker or many), compares with the baseline and writes the result's files
(:mod:`components.datagate.datagate_result`): ``statistics.pb``, ``schema.pb``, ``anomalies.pb`` and ``gate.json``.

CorpusGen's format (one sentence per line, a blank line between documents) keeps no source per document; a corpus
with a span pattern records them beside its shards (``corpus_beam.shard_sources``), and the statistics' groups are
``<location>/<language>`` (``books/en``), else ``corpus/<language>``. :func:`gate_documents` runs the same graph on a documents folder
outside TFX (what the ``DataGate`` node runs inside its Beam pipeline).
"""
from __future__ import annotations

import hashlib
import json
import os
import posixpath
from typing import Callable, Dict, Iterator, List, Optional, Sequence, Tuple

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import PipelineOptions
from tensorflow_metadata.proto.v0 import statistics_pb2

from components.corpus import corpus_beam
from components.datagate import datagate_result
from components.datagate.checks import GateLimits, check_span
from components.datagate.contamination import ContaminationCombiner, DevNgrams
from components.datagate.document_stats import (UNKNOWN_SOURCE, SketchSettings, SpanStats, SpanStatsCombiner,
                                                sample_rate)
from components.datagate.protos import (limits_to_schema, results_to_anomalies, statistics_from_proto,
                                        statistics_to_proto)
from components.datagen.datagen_beam_input import read_documents
from components.evaluation.race.race_data import read_race
from components.evaluation.squad.reading import load_squad_json
from components.text.documents import Document, file_language

CORPUS_SOURCE = UNKNOWN_SOURCE  # the source of a document whose shard records none


def read_span_documents(path: str) -> Iterator[Document]:
    """The documents of one CorpusGen shard (ids ``<shard file>:<index>``), each with its source location when
    CorpusGen recorded them (``corpus_beam.shard_sources``: a corpus with a span pattern), else :data:`CORPUS_SOURCE`,
    and the file's language in a run of several (``file_language``; the statistics group by it then)."""
    sources = corpus_beam.shard_sources(path) or []
    language = file_language(path)  # a run of several languages: each file holds one's documents, tagged
    for i, (doc_id, sentences) in enumerate(read_documents(path)):
        source = sources[i] if i < len(sources) else CORPUS_SOURCE
        yield Document(doc_id=doc_id, source=source, title=doc_id, sentences=sentences, language=language)


def patterned_locations(data_snapshot: Optional[str]) -> Dict[str, bool]:
    """Each corpus location of a ``data_snapshot`` (data key, the documents' source) → whether it was read with a
    span pattern."""
    return {key: bool((summary or {}).get("spans"))
            for key, summary in (json.loads(data_snapshot) if data_snapshot else {}).items()}


class DevPassages(list):
    """What :func:`dev_passages` returns: its list of (passage id, text), and ``files``, the files it read them from
    (its arguments, local paths made absolute), so the contamination CombineFn pickles where the passages are rather
    than their texts (:class:`_ContaminationFn`). A plain list of passages works as well, pickled whole."""

    def __init__(self, passages: Sequence[Tuple[str, str]] = (),
                 files: Optional[tuple] = None) -> None:
        super().__init__(passages)
        self.files = files


def _absolute(path: str) -> str:
    return path if "://" in path else os.path.abspath(path)


def glue_dev_passages(glue_dir: str, specs: Optional[Dict[str, dict]] = None) -> List[Tuple[str, str]]:
    """(passage id, text) of every dev example of the GLUE node's tasks found in ``glue_dir``: each sub-folder named
    after a GLUE task, a CLUE classification task or a spec of ``benchmarks.tasks`` (``specs``, as the GLUE node's
    parameters give them), read with the GLUE node's readers (``components.evaluation.glue.glue_tasks``); a folder
    of no task, or a dev split without its file, is skipped. One passage per example, its sentence(s) joined (id
    ``glue:<task>:<split>:<guid>``). GLUE's sentences are short: most have no 13-gram and count as ``short``."""
    from components.evaluation.glue import glue_tasks  # lazy: the GLUE readers (only with GLUE data)
    from components.evaluation.glue.task_spec_reader import specs_from_config  # lazy: as above
    from config.errors import MissingInputError  # lazy: as above
    from config.schema import ConfigError  # lazy: as above

    parsed = specs_from_config(specs) if specs else {}
    out: List[Tuple[str, str]] = []
    for name in sorted(n.rstrip("/") for n in os.listdir(glue_dir) if os.path.isdir(os.path.join(glue_dir, n))):
        try:
            task = glue_tasks.resolve_task(name, parsed)
        except ConfigError:
            continue  # not a task's folder
        for split in glue_tasks.dev_splits(task):
            try:
                examples = glue_tasks.read_split(task, split, glue_dir)
            except MissingInputError:
                continue
            out.extend((f"glue:{name}:{split}:{ex.guid}", ex.text_a if ex.text_b is None else
                        f"{ex.text_a} {ex.text_b}") for ex in examples)
    return out


def dev_passages(squad_files: Sequence[str] = (), race_dir: Optional[str] = None,
                 squad2_files: Sequence[str] = (), glue_dir: Optional[str] = None,
                 glue_specs: Optional[Dict[str, dict]] = None) -> DevPassages:
    """(passage id, text) of the reading benchmarks' dev sets, local files: each SQuAD v1.1 (``squad_files``) and
    v2.0 (``squad2_files``) paragraph (its ``context``, id ``squad:<file>:<article>:<paragraph>``, ``squad2:…``)
    and each RACE dev article (id ``race:<file id>``, once however many questions it has). An id starts with its
    benchmark's data key (``contamination.benchmark_of``), so contamination is counted per benchmark. The list
    names the files it came from (:class:`DevPassages`). ``glue_dir``: the GLUE node's data, whose every task's dev
    examples are passages too (:func:`glue_dev_passages`)."""
    out: List[Tuple[str, str]] = []
    for benchmark, files in (("squad", squad_files), ("squad2", squad2_files)):
        for path in files:
            name = os.path.basename(path)
            for i, article in enumerate(load_squad_json(path)):
                for j, paragraph in enumerate(article.get("paragraphs", [])):
                    out.append((f"{benchmark}:{name}:{i}:{j}", paragraph.get("context", "")))
    if race_dir is not None:
        seen = set()
        for ex in read_race(race_dir, split="dev"):
            file_id = ex.example_id.rsplit("-", 1)[0]
            if file_id not in seen:
                seen.add(file_id)
                out.append((f"race:{file_id}", ex.article))
    if glue_dir is not None:
        out.extend(glue_dev_passages(glue_dir, glue_specs))
    return DevPassages(out, files=(tuple(map(_absolute, squad_files)),
                                   None if race_dir is None else _absolute(race_dir),
                                   tuple(map(_absolute, squad2_files)),
                                   None if glue_dir is None else _absolute(glue_dir), glue_specs))


def passages_digest(passages: Sequence[Tuple[str, str]]) -> str:
    """SHA-256 of the passages' ids and texts, in order (each part length-prefixed): what identifies them in a
    process's caches (:func:`_dev_ngrams`) and checks a worker's own reading of their files."""
    digest = hashlib.sha256()
    for passage in passages:
        for part in passage:
            data = part.encode("utf-8", "surrogatepass")
            digest.update(len(data).to_bytes(8, "little"))
            digest.update(data)
    return digest.hexdigest()


class _SpanStatsFn(beam.CombineFn):
    """:class:`components.datagate.document_stats.SpanStatsCombiner` as a Beam CombineFn."""

    def __init__(self, span: int, sample_rate: float = 1.0):
        self._combiner = SpanStatsCombiner(span, sample_rate=sample_rate)

    def create_accumulator(self):
        return self._combiner.create_accumulator()

    def add_input(self, acc, doc):
        return self._combiner.add_input(acc, doc)

    def merge_accumulators(self, accumulators):
        return self._combiner.merge_accumulators(accumulators)

    def extract_output(self, acc):
        return self._combiner.extract_output(acc)


# The passages the last contamination CombineFn made in this process was given, and the last DevNgrams built here,
# each by its passages' digest (passages_digest).
_PASSAGES: Dict[str, List[Tuple[str, str]]] = {}
_DEV_NGRAMS: Dict[str, DevNgrams] = {}


def _dev_ngrams(digest: str, passages: Callable[[], Sequence[Tuple[str, str]]]) -> DevNgrams:
    """``DevNgrams(passages())`` for the passages of ``digest``, built once per process: a runner deserializes the
    CombineFn once per stage (adding inputs, merging, extracting), and each copy would otherwise hash every dev
    passage again (~0.6 CPU-s for SQuAD and RACE)."""
    if digest not in _DEV_NGRAMS:
        dev = DevNgrams(passages())
        _DEV_NGRAMS.clear()
        _DEV_NGRAMS[digest] = dev
    return _DEV_NGRAMS[digest]


class _ContaminationFn(beam.CombineFn):
    """:class:`components.datagate.contamination.ContaminationCombiner` as a Beam CombineFn.

    Its pickled state is small: Beam pickles a CombineFn (bz2, level 9) several times while it builds and runs the
    pipeline and unpickles it once per stage, and with SQuAD v1.1 + RACE dev's 3.8 M characters in it that cost
    ~3 CPU-s, whatever the corpus. It holds the passages' digest and, for :class:`DevPassages`, their files instead
    of their texts: a worker in the process that built the pipeline (the in-memory runner) takes the passages from
    ``_PASSAGES``, another reads the files again (the same digest, or an error); a plain list is pickled whole.
    The dev n-grams are built once per process either way (:func:`_dev_ngrams`)."""

    def __init__(self, passages: Sequence[Tuple[str, str]], earlier: Sequence[str] = ()):
        self._passages: Optional[List[Tuple[str, str]]] = list(passages)
        self._files = getattr(passages, "files", None)
        self._digest = passages_digest(self._passages)
        self._earlier = list(earlier)
        self._combiner = None
        _PASSAGES.clear()
        _PASSAGES[self._digest] = self._passages

    def _read(self) -> Sequence[Tuple[str, str]]:
        if self._passages is not None:
            return self._passages
        if self._digest in _PASSAGES:
            return _PASSAGES[self._digest]
        squad_files, race_dir, squad2_files, glue_dir, glue_specs = self._files
        passages = dev_passages(squad_files, race_dir, squad2_files=squad2_files, glue_dir=glue_dir,
                                glue_specs=glue_specs)
        if passages_digest(passages) != self._digest:
            raise ValueError("the dev passages changed since the data gate's pipeline was built: "
                             f"SQuAD {list(squad_files)}, RACE {race_dir}, SQuAD 2.0 {list(squad2_files)}, "
                             f"GLUE {glue_dir}")
        return passages

    def _get(self) -> ContaminationCombiner:
        if self._combiner is None:  # the dev n-grams, built once per worker process
            self._combiner = ContaminationCombiner(_dev_ngrams(self._digest, self._read), self._earlier)
        return self._combiner

    def __getstate__(self):
        return {"_passages": self._passages if self._files is None else None, "_files": self._files,
                "_digest": self._digest, "_earlier": self._earlier, "_combiner": None}

    def create_accumulator(self):
        return self._get().create_accumulator()

    def add_input(self, acc, doc):
        return self._get().add_input(acc, doc)

    def merge_accumulators(self, accumulators):
        return self._get().merge_accumulators(accumulators)

    def extract_output(self, acc):
        return self._get().extract_output(acc)


def _write(path: str, data: bytes) -> None:
    with FileSystems.create(path) as f:
        f.write(data)


def write_result(output_dir: str, stats: SpanStats, limits: GateLimits, baseline: Optional[SpanStats],
                 accept: Optional[int], contamination=None, accepted_before: Optional[str] = None,
                 earlier_spans: Sequence[int] = (), patterned: Optional[Dict[str, bool]] = None) -> dict:
    """Check ``stats`` (against ``baseline``, None: absolute limits only) and write the result's four files under
    ``output_dir``; returns the summary (``gate.json``; ``accept``, ``accepted_before`` and ``earlier_spans`` as
    :func:`components.datagate.datagate_result.summarize` takes them; ``patterned`` as ``check_span``)."""
    results = check_span(stats, baseline, limits, contamination, patterned)
    total = stats.read_counts()  # every document, measured or not
    summary = datagate_result.summarize(
        stats.span, results, documents=total["documents"], characters=total["characters"], accept=accept,
        baseline_span=None if baseline is None else baseline.span, contamination=contamination,
        accepted_before=accepted_before, statistics=stats.summary(),
        baseline_statistics=None if baseline is None else baseline.summary(), earlier_spans=earlier_spans)
    schema = limits_to_schema(limits)
    _write(posixpath.join(output_dir, datagate_result.STATISTICS_FILE), statistics_to_proto(stats).SerializeToString())
    _write(posixpath.join(output_dir, datagate_result.SCHEMA_FILE), schema.SerializeToString())
    _write(posixpath.join(output_dir, datagate_result.ANOMALIES_FILE),
           results_to_anomalies(results, schema).SerializeToString())
    _write(posixpath.join(output_dir, datagate_result.SUMMARY_FILE),
           json.dumps(summary, indent=2, sort_keys=True).encode("utf-8"))
    return summary


def build_gate(pipeline: beam.Pipeline, shards: Sequence[str], output_dir: str, *, span: int, limits: GateLimits,
               baseline: Optional[SpanStats] = None, passages: Sequence[Tuple[str, str]] = (),
               accept: Optional[int] = None, accepted_before: Optional[str] = None,
               baseline_summary: Optional[dict] = None, patterned: Optional[Dict[str, bool]] = None) -> None:
    """Add the gate's stages to ``pipeline``: statistics of the documents in ``shards`` (and, with dev
    ``passages``, their contamination, its total carried forward from ``baseline_summary``, the baseline's
    ``gate.json``), then :func:`write_result` under ``output_dir`` (``patterned``: :func:`patterned_locations`)."""
    earlier_ids, earlier_spans = datagate_result.carried_contamination(baseline_summary)
    docs = (pipeline
            | "ListShards" >> beam.Create(list(shards))
            | "ReadDocuments" >> beam.FlatMap(read_span_documents))
    stats = docs | "SpanStatistics" >> beam.CombineGlobally(_SpanStatsFn(span, measured_rate(shards)))
    contamination = None
    if passages:
        contamination = beam.pvalue.AsSingleton(
            docs | "Contamination" >> beam.CombineGlobally(_ContaminationFn(passages, earlier_ids)))
    _ = stats | "WriteResult" >> beam.Map(_write_span_result, output_dir, limits, baseline, accept, contamination,
                                          accepted_before, earlier_spans, patterned)


def measured_rate(shards: Sequence[str], measured_characters: int = SketchSettings().measured_characters) -> float:
    """The share of the span's documents the statistics measure (``document_stats``: "The measured sample"): the
    budget over the shards' size in bytes (about their characters: CorpusGen writes UTF-8), 1 for a small span."""
    size = sum(m.size_in_bytes for r in FileSystems.match(list(shards)) for m in r.metadata_list) if shards else 0
    return sample_rate(size, measured_characters)


def _write_span_result(stats, output_dir, limits, baseline, accept, contamination, accepted_before,
                       earlier_spans, patterned) -> None:
    write_result(output_dir, stats, limits, baseline, accept, contamination, accepted_before, earlier_spans,
                 patterned)


def read_summary(result_dir: str) -> dict:
    """A result's ``gate.json``."""
    with FileSystems.open(posixpath.join(result_dir, datagate_result.SUMMARY_FILE)) as f:
        return json.loads(f.read().decode("utf-8"))


def read_statistics(result_dir: str) -> SpanStats:
    """A result's statistics (the baseline of a later span)."""
    with FileSystems.open(posixpath.join(result_dir, datagate_result.STATISTICS_FILE)) as f:
        return statistics_from_proto(statistics_pb2.DatasetFeatureStatisticsList.FromString(f.read()))


def gate_documents(documents_dir: str, output_dir: str, *, span: int, limits: GateLimits = GateLimits(),
                   baseline_dir: Optional[str] = None, passages: Sequence[Tuple[str, str]] = (),
                   accept: Optional[int] = None, beam_args: Sequence[str] = ()) -> dict:
    """The DataGate node's work on a documents folder (CorpusGen's output) outside TFX: runs the graph of
    :func:`build_gate` and returns the summary it wrote to ``output_dir``. ``baseline_dir``: an earlier result's
    folder, whose statistics are the baseline (None: the absolute limits only)."""
    baseline = read_statistics(baseline_dir) if baseline_dir else None
    if not FileSystems.exists(output_dir):
        FileSystems.mkdirs(output_dir)
    with beam.Pipeline(options=PipelineOptions(list(beam_args))) as p:
        build_gate(p, corpus_beam.document_shards(documents_dir), output_dir, span=span, limits=limits,
                   baseline=baseline, passages=passages, accept=accept,
                   baseline_summary=read_summary(baseline_dir) if baseline_dir else None)
    return read_summary(output_dir)
