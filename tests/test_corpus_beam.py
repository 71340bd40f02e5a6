"""Beam ingestion on the bundled real samples: output format, dedup, determinism, bad input."""
import os
import shutil

import apache_beam as beam
import pytest
from apache_beam.options.pipeline_options import PipelineOptions

from components.corpus import corpus_beam
from components.text.documents import parse_text_blocks


def _run(inputs, out, workers=1, num_shards=3):
    mode = "multi_processing" if workers > 1 else "in_memory"
    opts = PipelineOptions(["--runner=DirectRunner", f"--direct_num_workers={workers}", f"--direct_running_mode={mode}"])
    with beam.Pipeline(options=opts) as p:
        corpus_beam.build_corpus(p, inputs, str(out), num_shards=num_shards, min_chars=200)
    return corpus_beam.read_counts(str(out))


def _read_all(out):
    return {os.path.basename(p): open(p, "rb").read() for p in corpus_beam.document_shards(str(out))}


@pytest.fixture(scope="module")
def sample_inputs(sample_dir):
    return corpus_beam.list_inputs(os.path.join(sample_dir, "wikipedia"), "*pages-articles*.xml*",
                                   os.path.join(sample_dir, "books"), "**/*.txt")


def test_ingests_wikipedia_and_books_into_sharded_documents(tmp_path, sample_inputs):
    counts = _run(sample_inputs, tmp_path / "out")
    assert counts["per_source"]["books"]["documents"] == 2
    assert counts["per_source"]["wikipedia"]["documents"] >= 15
    shards = _read_all(tmp_path / "out")
    assert len(shards) == 3
    docs = [d for blob in shards.values() for d in parse_text_blocks(blob.decode().splitlines())]
    assert len(docs) == counts["documents"]
    text = "\n".join("\n".join(d) for d in docs)
    for residue in ("{{", "[[", "|}", "<ref", "&nbsp;", "#REDIRECT"):
        assert residue not in text
    assert any("anarchism" in s.lower() for d in docs for s in d[:3])


def test_same_inputs_same_bytes_with_one_or_two_workers(tmp_path, sample_inputs):
    _run(sample_inputs, tmp_path / "one", workers=1)
    _run(sample_inputs, tmp_path / "two", workers=2)
    assert _read_all(tmp_path / "one") == _read_all(tmp_path / "two")


def test_identical_documents_are_kept_once(tmp_path, sample_dir):
    books = tmp_path / "books"
    (books / "copy").mkdir(parents=True)
    src = os.path.join(sample_dir, "books", "austen-persuasion.txt")
    shutil.copy(src, books / "a.txt")
    shutil.copy(src, books / "copy" / "b.txt")
    counts = _run(corpus_beam.list_inputs(None, "", str(books), "**/*.txt"), tmp_path / "out", num_shards=1)
    assert counts["documents"] == 1


def test_truncated_bz2_fails_naming_the_file(tmp_path, sample_dir):
    data = open(os.path.join(sample_dir, "wikipedia", "enwiki-sample-pages-articles.xml.bz2"), "rb").read()
    bad = tmp_path / "wiki" / "enwiki-broken-pages-articles.xml.bz2"
    bad.parent.mkdir()
    bad.write_bytes(data[: len(data) // 2])
    # Beam re-raises a worker's exception as a RuntimeError whose text holds the original.
    with pytest.raises(RuntimeError, match=r"CorruptInputError: \S+/enwiki-broken-pages-articles\.xml\.bz2: truncated "
                                           r"bz2 data: the file ends at compressed byte 100069, inside stream 1 "):
        _run(corpus_beam.list_inputs(str(bad.parent), "*pages-articles*", None, ""), tmp_path / "out")


def test_missing_inputs_are_an_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="no books input files"):
        corpus_beam.list_inputs(None, "", str(tmp_path), "**/*.txt")


def test_shard_assignment_is_stable():
    assert corpus_beam.shard_of("wiki:12", 7) == corpus_beam.shard_of("wiki:12", 7)
    assert len({corpus_beam.shard_of(f"wiki:{i}", 4) for i in range(100)}) == 4
