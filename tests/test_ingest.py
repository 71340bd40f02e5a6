"""``albert-pipeline ingest``: CorpusGen's Beam code without TFX, on the cut fixtures of tests/fixtures/corpus (real
WikiExtractor output, plain and bz2; real gzip and bz2 books; sources in its README.md).

Real Beam (the local FnApiRunner), real files: the exact documents and counts each input gives, the CLI in a real
process, one test per class of broken input (exit 2, one line naming the file and line or byte, nothing left under the
output), and the same job on ``gs://`` paths through a local stand-in of the object store."""
import bz2
import gzip
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from components.corpus import corpus_beam
from components.corpus.ingest_tool import ingest
from components.corpus.books import read_book
from components.corpus.wiki import wiki_documents
from components.corpus.corpus_config import CorpusConfig
from config.schema import ConfigError
from tests.conftest import CLI, REPO, cli_env
from tests.reliability import fixtures
from tests.test_cli_errors import _check_clean_failure
from tests.test_text_wikiextractor import BRUNEI, CENTILLION, CONJUNCTION, DISJUNCTION

FIXTURES = Path(REPO) / "tests" / "fixtures" / "corpus"
WIKI, BOOKS = FIXTURES / "wikiextractor", FIXTURES / "books"
DICKENS = "pg924_dickens-charles__to-be-read-at-dusk-cut.txt.gz"
THOREAU = "pg71_thoreau-henry-david__on-the-duty-of-civil-disobedience-cut.txt.bz2"
XML_DUMP = Path(REPO) / "data" / "sample" / "wikipedia" / "enwiki-sample-pages-articles.xml.bz2"
ONE_SHARD = CorpusConfig(books_dir="x", num_shards=1)


def _expected_documents():
    """In shard order (sorted by id): the two books, then wiki:3663, 6563, 7498, 8528."""
    books = [read_book(BOOKS / name, BOOKS).sentences for name in (THOREAU, DICKENS)]
    return books + [BRUNEI, CONJUNCTION, CENTILLION, DISJUNCTION]


def test_fixtures_give_exactly_their_documents_and_counts(tmp_path):
    counters = {}
    counts = ingest(str(WIKI), str(BOOKS), str(tmp_path / "out"), ONE_SHARD, counters=counters)
    expected = _expected_documents()
    assert fixtures.written_documents(tmp_path / "out") == expected
    wiki, books = expected[2:], expected[:2]
    assert counts["per_source"] == {
        "wikipedia": {"documents": 4, "sentences": 54, "characters": sum(len(s) for d in wiki for s in d)},
        "books": {"documents": 2, "sentences": 16, "characters": sum(len(s) for d in books for s in d)}}
    assert counts["skipped"]["wikipedia"] == {"empty_files": 0, "short_documents": 1, "duplicate_documents": 0}
    assert counts["num_input_files"] == 4 and sorted(os.listdir(tmp_path / "out")) == [
        "counts.json", "documents-00000-of-00001.txt"]
    assert counters["wikipedia_files_wikiextractor"] == 2 and "wikipedia_files_xml" not in counters


def test_both_wikipedia_formats_in_one_folder_each_detected(tmp_path):
    wiki = tmp_path / "wiki"
    shutil.copytree(WIKI, wiki)
    shutil.copy(XML_DUMP, wiki / XML_DUMP.name)
    counters = {}
    counts = ingest(str(wiki), None, str(tmp_path / "out"), ONE_SHARD, counters=counters)
    xml_docs = list(wiki_documents(XML_DUMP))
    assert counts["per_source"]["wikipedia"]["documents"] == len(xml_docs) + 4
    assert (counters["wikipedia_files_xml"], counters["wikipedia_files_wikiextractor"]) == (1, 2)
    assert xml_docs[0].sentences in fixtures.written_documents(tmp_path / "out")
    # The named setting instead of detection: each reader refuses the other format, naming the file.
    with pytest.raises(Exception, match=r"wiki_00: not a MediaWiki export \(root element 'doc'\)"):
        ingest(str(wiki), None, str(tmp_path / "xml"), ONE_SHARD, wikipedia_format="xml")
    with pytest.raises(Exception, match=r"enwiki-sample-pages-articles.xml.bz2: text outside <doc> ... </doc> at "
                                        r"line 1"):
        ingest(str(wiki), None, str(tmp_path / "we"), ONE_SHARD, wikipedia_format="wikiextractor")
    assert not [p for p in os.listdir(tmp_path) if p.startswith(("xml", "we"))]


def test_the_dag_and_ingest_read_the_same_files_by_default(tmp_path):
    """CorpusGen lists its inputs with the configuration's globs (components/corpus/corpus_component.py): their defaults take
    WikiExtractor's AA/wiki_NN files and compressed books as ``ingest`` does, and ``corpus.wikipedia_format`` reaches
    both (here ``xml``, which refuses WikiExtractor output, naming the file)."""
    default = CorpusConfig(books_dir="x")
    listed = corpus_beam.list_inputs(str(WIKI), default.wikipedia_glob, str(BOOKS), default.books_glob)
    assert [(kind, os.path.relpath(path, root)) for kind, path, root in listed] == [
        ("books", THOREAU), ("books", DICKENS), ("wikipedia", "AA/wiki_00"), ("wikipedia", "AB/wiki_00.bz2")]
    assert default.wikipedia_format == "auto"
    xml = CorpusConfig(books_dir="x", num_shards=1, wikipedia_format="xml").validate()
    with pytest.raises(Exception, match=r"wiki_00: not a MediaWiki export"):
        ingest(str(WIKI), None, str(tmp_path / "xml"), xml)
    assert not os.listdir(tmp_path)


@pytest.mark.parametrize("override,message", [
    ("corpus.wikipedia_format=html", "corpus.wikipedia_format"),
    ("corpus.books_glob=[]", "at least one pattern"),
    ("corpus.wikipedia_glob=[ok/*, ../up/*]", "without '..'"),
])
def test_corpus_input_settings_are_checked(override, message):
    from pipeline.settings.configs import build_config

    with pytest.raises(ConfigError, match=message):
        build_config("sample", overrides=[override])


def test_an_empty_book_archive_is_skipped_and_counted(tmp_path):
    books = tmp_path / "books"
    shutil.copytree(BOOKS, books)
    (books / "empty.txt.gz").write_bytes(gzip.compress(b""))
    (books / "blank.txt.bz2").write_bytes(bz2.compress(b"\n \n"))
    counts = ingest(None, str(books), str(tmp_path / "out"), ONE_SHARD)
    assert counts["per_source"]["books"]["documents"] == 2
    assert counts["skipped"]["books"]["empty_files"] == 2


def test_ingest_through_the_cli_with_two_workers(tmp_path):
    """The real command: per-source counts as JSON on stdout, the same bytes as one in-process worker."""
    done = subprocess.run([CLI, "ingest", "--wikipedia", str(WIKI), "--books", str(BOOKS), "--output", "out",
                           "--workers", "2", "--set", "corpus.num_shards=1"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=600, env=cli_env(ALBERT_TFX_LOG_DIR=str(tmp_path / "logs")))
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    summary = json.loads(done.stdout)
    assert summary["output"] == "out" and summary["documents"] == 6 and summary["sentences"] == 70
    assert {s: c["documents"] for s, c in summary["per_source"].items()} == {"wikipedia": 4, "books": 2}
    assert summary == {"output": "out", **json.loads((tmp_path / "out" / "counts.json").read_text())}
    ingest(str(WIKI), str(BOOKS), str(tmp_path / "one"), ONE_SHARD)
    name = "documents-00000-of-00001.txt"
    assert (tmp_path / "out" / name).read_bytes() == (tmp_path / "one" / name).read_bytes()


# ------------------------------------------------------------------------------- broken input, one per class
TEXT = (WIKI / "AA" / "wiki_00").read_bytes()
BOOK = gzip.decompress((BOOKS / DICKENS).read_bytes())
AT = BOOK.index(b"There were five")  # line 17 of the book


def _truncated(data):
    return data[: len(data) // 2]


def _flipped(data, at, mask=0xFF):
    data = bytearray(data)
    data[at] ^= mask
    return bytes(data)


DUMP = XML_DUMP.read_bytes()  # one bz2 stream of 200,139 bytes; its one block ends at the end of the file


CLASSES = {
    # name: (file under the input folder, its bytes, what the one line must say besides the file name)
    "truncated-wikiextractor-archive": ("wiki/AA/wiki_01.bz2", _truncated(bz2.compress(TEXT * 40)),
                                        ["truncated bz2 data: the file ends at compressed byte 964, inside stream 1 "
                                         "(no end-of-stream marker) (reading its first bytes to tell its format)"]),
    # The case: one damaged deflate header byte (the first after gzip's 10-byte header).
    "damaged-deflate-wikiextractor-gz": ("wiki/AA/wiki_01.gz", _flipped(gzip.compress(TEXT, mtime=0), 10),
                                         ["corrupt gzip data in member 1 (detected at compressed bytes 0-933): Error -3 "
                                          "while decompressing data: invalid distance too far back (reading its first "
                                          "bytes to tell its format)"]),
    "damaged-deflate-xml-dump-gz": ("wiki/enwiki-damaged-pages-articles.xml.gz",
                                    _flipped(gzip.compress(bz2.decompress(DUMP), mtime=0), 10),
                                    ["corrupt gzip data in member 1 (detected at compressed bytes 0-65536): Error -3 "
                                     "while decompressing data: invalid distance too far back"]),
    "damaged-block-xml-dump-bz2": ("wiki/enwiki-damaged-pages-articles.xml.bz2",
                                   _flipped(DUMP, len(DUMP) // 2, 0x55),
                                   ["corrupt bz2 data in stream 1 (detected at compressed bytes 196608-200139): "
                                    "Invalid data stream (reading its first bytes to tell its format)"]),
    "trailing-garbage-after-xml-dump-bz2": ("wiki/enwiki-damaged-pages-articles.xml.bz2", DUMP + b"\x00\x00junk",
                                            ["the bytes after bz2 stream 1 are not another stream (compressed byte "
                                             "200141, starting b'junk'): trailing garbage or a damaged stream header "
                                             "(after 37 pages, in page 'Ampere')"]),
    "doc-without-end": ("wiki/AA/wiki_01", TEXT[: TEXT.index(b"</doc>", TEXT.index(b'id="6563"'))],
                        ["<doc id=6563", "opened at line 15 has no </doc>"]),
    "nested-doc": ("wiki/AA/wiki_01", TEXT.replace(b"Short scale.\n", b'<doc id="5" url="u" title="T">\n', 1),
                   ["<doc> at line 5 inside <doc id=7498>"]),
    "neither-format": ("wiki/AA/wiki_01", b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n",
                       ["neither a MediaWiki XML export nor WikiExtractor output"]),
    "empty-wikipedia-archive": ("wiki/AA/wiki_01.bz2", bz2.compress(b""), ["empty input"]),
    "invalid-utf8-in-wikiextractor-archive": ("wiki/AA/wiki_01.bz2", bz2.compress(TEXT.replace(b"One centillion",
                                                                                              b"\xffOne", 1)),
                                              ["not valid UTF-8 at line 4 (byte offset 93 of the decompressed text)"]),
    "truncated-book-archive": ("books/cut.txt.gz", _truncated(gzip.compress(BOOK, mtime=0)),
                               ["truncated gzip data: the file ends at compressed byte 377, inside member 1 (no "
                                "end-of-stream marker)"]),
    "invalid-utf8-in-compressed-book": ("books/latin.txt.bz2", bz2.compress(BOOK[:AT] + b"\xe9" + BOOK[AT:]),
                                        [f"not valid UTF-8 at byte offset {AT} of the bz2-decompressed text (line 17, "
                                         "byte 0xe9)"]),
}


@pytest.mark.parametrize("case", sorted(CLASSES))
def test_each_broken_input_class_exits_2_naming_the_file_and_publishes_nothing(cli, tmp_path, monkeypatch, case):
    relative, data, details = CLASSES[case]
    shutil.copytree(WIKI, tmp_path / "wiki")  # good files beside the broken one: they must not be published either
    shutil.copytree(BOOKS, tmp_path / "books")
    (tmp_path / relative).write_bytes(data)
    monkeypatch.chdir(tmp_path)
    done = cli("ingest", "--wikipedia", "wiki", "--books", "books", "--output", "out")
    line = _check_clean_failure(done, tmp_path, [relative, *details], "out")
    assert "[while running" not in line


def test_neither_folder_nor_an_existing_output(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _check_clean_failure(cli("ingest", "--output", "out"), tmp_path, ["needs --wikipedia DIR and/or --books DIR"])
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "keep.txt").write_text("mine")
    _check_clean_failure(cli("ingest", "--books", str(BOOKS), "--output", "out"), tmp_path,
                         ["output folder out exists and is not empty"])
    assert (tmp_path / "out" / "keep.txt").read_text() == "mine"
    _check_clean_failure(cli("ingest", "--books", "no-such-dir", "--output", "new"), tmp_path,
                         ["--books no-such-dir is not a folder"], "new")


# ---------------------------------------------------------------------------------------------- gs:// paths
def test_every_reader_works_on_gs_paths(tmp_path, gcs):
    shutil.copytree(WIKI, gcs / "bkt" / "raw" / "wikipedia")
    shutil.copy(XML_DUMP, gcs / "bkt" / "raw" / "wikipedia" / XML_DUMP.name)  # the XML reader too
    shutil.copytree(BOOKS, gcs / "bkt" / "raw" / "books")
    counts = ingest("gs://bkt/raw/wikipedia", "gs://bkt/raw/books", "gs://bkt/docs", ONE_SHARD)
    local_wiki = tmp_path / "wikipedia"
    shutil.copytree(gcs / "bkt" / "raw" / "wikipedia", local_wiki)
    local = ingest(str(local_wiki), str(BOOKS), str(tmp_path / "local"), ONE_SHARD)
    assert counts == local and counts["per_source"]["books"]["documents"] == 2
    name = "documents-00000-of-00001.txt"
    assert (gcs / "bkt" / "docs" / name).read_bytes() == (tmp_path / "local" / name).read_bytes()
    assert sorted(os.listdir(gcs / "bkt")) == ["docs", "raw"]  # the staging prefix is gone
    assert sorted(os.listdir(gcs / "bkt" / "docs")) == ["counts.json", name]  # and no spill file was published
    # A failure on gs:// publishes nothing either.
    (gcs / "bkt" / "raw" / "books" / "cut.txt.gz").write_bytes(_truncated(gzip.compress(BOOK)))
    with pytest.raises(Exception, match="gs://bkt/raw/books/cut.txt.gz: truncated gzip data: the file ends at"):
        ingest("gs://bkt/raw/wikipedia", "gs://bkt/raw/books", "gs://bkt/docs2", ONE_SHARD)
    assert sorted(os.listdir(gcs / "bkt")) == ["docs", "raw"]


def test_a_failure_while_publishing_to_gs_publishes_nothing_and_leaves_no_staging(cli, tmp_path, gcs, monkeypatch):
    """gs:// has no folder rename, so ingest moves object by object: counts.json (the mark of a complete output) last,
    and a failure after the first shard removes that shard and the staging prefix; the error says so."""
    from tests.gcs_standin import GcsStandIn

    shutil.copytree(WIKI, gcs / "bkt" / "raw" / "wikipedia")
    shutil.copytree(BOOKS, gcs / "bkt" / "raw" / "books")
    moved = fixtures.fail_renames_after_the_first(monkeypatch, GcsStandIn, "injected: connection reset")
    monkeypatch.chdir(tmp_path)
    done = cli("ingest", "--wikipedia", "gs://bkt/raw/wikipedia", "--books", "gs://bkt/raw/books", "--output",
               "gs://bkt/docs", "--set", "corpus.num_shards=3")
    assert moved == ["gs://bkt/docs/documents-00000-of-00003.txt"]
    assert done.returncode == 1 and done.stdout == "" and "Traceback" not in done.stderr
    line = [ln for ln in done.stderr.splitlines() if "error" in ln]
    assert len(line) == 1 and line[0].startswith(
        "albert-pipeline ingest: internal error: PublishError: publishing gs://bkt/docs failed after moving 1 "
        f"of 4 files from gs://bkt/docs.tmp-{os.getpid()} (they were removed again: nothing is published; the staging "
        "folder was removed): OSError: injected: connection reset"), done.stderr[-2000:]
    assert sorted(os.listdir(gcs / "bkt")) == ["raw"]  # no shard, no counts.json, no staging prefix


def test_a_preset_without_corpus_folders_takes_them_from_the_flags(cli, tmp_path, monkeypatch):
    """--preset paper names no corpus folder; --books is the one, and the preset's corpus settings apply (corpus.num_shards=256)."""
    monkeypatch.chdir(tmp_path)
    done = cli("ingest", "--preset", "paper", "--books", str(BOOKS), "--output", "out")
    assert done.returncode == 0, done.stderr[-2000:]
    summary = json.loads(done.stdout)
    assert summary["num_shards"] == 256 and summary["per_source"]["books"]["documents"] == 2


# Measured with this command (AMD EPYC, 2 cores): 274 MiB; 614 MiB when documents were Beam elements grouped twice
# (benchmarks/results/ingest_large).
PEAK_RSS_BOUND_MIB = 400


def test_peak_rss_stays_under_the_bound_on_a_quarter_of_the_large_corpus(tmp_path):
    """The first quarter of ../shared/data/large (30 WikiExtractor files, 71 gzip books: 10.2 M words) through the
    real command in its own process (started by ``peak_rss``'s small launcher, so it does not inherit this pytest
    process's peak): the kernel's peak RSS stays under the bound and every document is written."""
    from benchmarks.datagen_memory import peak_rss
    from tests.conftest import shared_path

    large = Path(shared_path("large"))
    for source, pattern, take in (("wikipedia", "*/wiki_*", 30), ("books", "*.txt.gz", 71)):
        for path in sorted((large / source).glob(pattern))[:take]:
            link = tmp_path / "corpus" / source / path.relative_to(large / source)
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to(path)
    code, peak_mib = peak_rss([CLI, "--log-file", str(tmp_path / "run.log"), "ingest", "--wikipedia",
                               str(tmp_path / "corpus" / "wikipedia"), "--books", str(tmp_path / "corpus" / "books"),
                               "--output", str(tmp_path / "out")], cwd=REPO, env=cli_env(),
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    assert code == 0, (tmp_path / "run.log").read_text()[-2000:]
    assert corpus_beam.read_counts(str(tmp_path / "out"))["documents"] == 1914
    assert peak_mib < PEAK_RSS_BOUND_MIB, f"peak RSS {peak_mib:.0f} MiB (bound {PEAK_RSS_BOUND_MIB} MiB)"
