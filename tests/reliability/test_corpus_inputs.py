"""Bad raw corpus input (CorpusGen's Beam job on real-looking broken copies of the bundled samples).

Policy (docs/cli.md "Failure modes"): a broken *file* stops the run with :class:`CorruptInputError` naming the
file and the position; content that is legitimately useless (empty book file, empty or too-short page or
book, duplicate) is skipped and counted in ``counts.json["skipped"]`` and the Documents artifact's MLMD
properties. Over-long lines are cut into bounded sentences.
"""
import json
import os

import apache_beam as beam
import pytest

from components.corpus import corpus_beam
from components.text.documents import MAX_SENTENCE_CHARS
from components.text.corrupt_input import CorruptInputError
from tests.reliability import fixtures


def _run(inputs, out, **kwargs):
    kwargs.setdefault("num_shards", 1)
    kwargs.setdefault("min_chars", 200)
    with beam.Pipeline() as p:  # DirectRunner, in memory
        corpus_beam.build_corpus(p, inputs, str(out), **kwargs)
    return corpus_beam.read_counts(str(out))


def _wiki(folder):
    return corpus_beam.list_inputs(str(folder), "*pages-articles*", None, "")


def _books(folder):
    return corpus_beam.list_inputs(None, "", str(folder), "**/*.txt")


def _fails_naming(inputs, out, *needles):
    with pytest.raises(Exception) as info:
        _run(inputs, out)
    message = str(info.value)
    for needle in needles:
        assert needle in message, message
    # Nothing that looks like output is left behind by the failed job.
    assert not corpus_beam.document_shards(str(out)) or not os.path.exists(os.path.join(out, "counts.json"))
    return message


# ---------------------------------------------------------------------------------------------- errors
def test_truncated_bz2_stops_naming_file_and_position(tmp_path):
    path = fixtures.truncated_bz2(tmp_path / "wiki")
    msg = _fails_naming(_wiki(tmp_path / "wiki"), tmp_path / "out", path, "truncated")
    assert msg.endswith(f"{path}: truncated bz2 data: the file ends at compressed byte 133426, inside stream 1 (no "
                        f"end-of-stream marker) (reading its first bytes to tell its format) [while running "
                        f"'ReadFiles/ParDo(_ReadFiles)']"), msg


def test_corrupt_bz2_block_stops_naming_file(tmp_path):
    path = fixtures.corrupt_bz2(tmp_path / "wiki")
    _fails_naming(_wiki(tmp_path / "wiki"), tmp_path / "out", path, "corrupt")


def test_malformed_xml_stops_naming_file_line_and_column(tmp_path):
    path = fixtures.malformed_xml(tmp_path / "wiki")
    msg = _fails_naming(_wiki(tmp_path / "wiki"), tmp_path / "out", path, "malformed", "line")
    assert "column" in msg


def test_empty_wikipedia_dump_is_an_error(tmp_path):
    path = fixtures.write(tmp_path / "wiki" / "enwiki-empty-pages-articles.xml.bz2", b"")
    _fails_naming(_wiki(tmp_path / "wiki"), tmp_path / "out", path, "empty")


def test_non_utf8_book_stops_naming_file_and_byte_offset(tmp_path):
    path = fixtures.non_utf8_book(tmp_path / "books")
    _fails_naming(_books(tmp_path / "books"), tmp_path / "out", path, "not valid UTF-8 at byte offset",
                  "; pass --set corpus.book_encoding_fallback=latin-1 to read such files as Latin-1")


def test_non_utf8_book_reads_with_explicit_fallback(tmp_path):
    fixtures.non_utf8_book(tmp_path / "books")
    counts = _run(_books(tmp_path / "books"), tmp_path / "out", encoding_fallback="cp1252")
    assert counts["documents"] == 1
    assert any("Elliôt" in s for doc in fixtures.written_documents(tmp_path / "out") for s in doc)


# ----------------------------------------------------------------------------------- skipped and counted
def test_empty_files_and_empty_documents_are_skipped_and_counted(tmp_path):
    books = tmp_path / "books"
    fixtures.write(books / "austen.txt", fixtures.book_text())
    fixtures.write(books / "empty.txt", b"")  # a failed download
    fixtures.write(books / "blank.txt", b"\n\n  \r\n")  # whitespace only
    fixtures.write(books / "boilerplate-only.txt",  # a Gutenberg wrapper around nothing
                   "*** START OF THE PROJECT GUTENBERG EBOOK X ***\n\nCHAPTER I\n\n*** END OF THE PROJECT GUTENBERG EBOOK X ***\n")
    wiki = tmp_path / "wiki"
    fixtures.dump_with_pages(wiki, "enwiki-extra-pages-articles.xml.bz2",
                             fixtures.page_xml(990001, "Empty page", ""),
                             fixtures.page_xml(990002, "Stub page", "A stub. It is short."))
    inputs = sorted(_books(books) + _wiki(wiki))
    counts = _run(inputs, tmp_path / "out", num_shards=2)
    baseline = _run(_wiki(os.path.dirname(fixtures.WIKI_DUMP)), tmp_path / "baseline", num_shards=2)

    assert counts["per_source"]["books"]["documents"] == 1
    assert counts["skipped"]["books"]["empty_files"] == 2
    assert counts["skipped"]["books"]["short_documents"] == 1
    # The two extra pages are dropped as empty/short on top of the sample's own stubs.
    assert counts["skipped"]["wikipedia"]["short_documents"] == baseline["skipped"]["wikipedia"]["short_documents"] + 2
    assert counts["per_source"]["wikipedia"]["documents"] == baseline["per_source"]["wikipedia"]["documents"]
    # Every document written is non-empty (the format has no empty documents).
    docs = fixtures.written_documents(tmp_path / "out")
    assert len(docs) == counts["documents"] and all(docs)


def test_duplicates_are_skipped_and_counted(tmp_path):
    books = tmp_path / "books"
    fixtures.write(books / "a.txt", fixtures.book_text())
    fixtures.write(books / "mirror" / "a-copy.txt", fixtures.book_text().replace("\n", "\r\n"))  # CRLF mirror
    counts = _run(_books(books), tmp_path / "out")
    assert counts["documents"] == 1
    assert counts["skipped"]["books"]["duplicate_documents"] == 1


def test_only_empty_inputs_is_an_error_not_an_empty_corpus(tmp_path):
    fixtures.write(tmp_path / "books" / "empty.txt", b"")
    with pytest.raises(Exception, match="no documents survived ingestion"):
        _run(_books(tmp_path / "books"), tmp_path / "out")


# ----------------------------------------------------------------------------------------- 10 MB lines
def test_single_10mb_line_book_and_wiki_page_are_cut_into_bounded_sentences(tmp_path):
    # The book keeps NLTK's "[Title by Author Year]" opening, now glued to 10 MB of text: this used to
    # make the title regex backtrack for hours.
    fixtures.write(tmp_path / "books" / "one-line.txt", fixtures.ten_mb_line("[Persuasion by Jane Austen 1818]"))
    fixtures.write(tmp_path / "books" / "no-spaces.txt", "x" * fixtures.TEN_MB)  # a binary blob saved as .txt
    fixtures.dump_with_pages(tmp_path / "wiki", "enwiki-long-pages-articles.xml.bz2",
                             fixtures.page_xml(990003, "One line", fixtures.ten_mb_line()), keep_sample=False)
    counts = _run(sorted(_books(tmp_path / "books") + _wiki(tmp_path / "wiki")), tmp_path / "out", dedupe=False)
    assert counts["per_source"]["books"]["documents"] == 1
    assert counts["per_source"]["wikipedia"]["documents"] == 1
    assert counts["skipped"]["books"]["short_documents"] == 1  # the blob has no sentence in it
    assert counts["characters"] > 1.9 * fixtures.TEN_MB * 0.95  # nothing silently lost
    for path in corpus_beam.document_shards(str(tmp_path / "out")):
        with open(path, encoding="utf-8") as f:
            assert max(len(line) for line in f) <= MAX_SENTENCE_CHARS + 1


def test_corrupt_input_error_survives_pickling_across_workers():
    import pickle

    err = pickle.loads(pickle.dumps(CorruptInputError("/data/x.xml.bz2", "truncated at byte 5")))
    assert err.path == "/data/x.xml.bz2" and "truncated at byte 5" in str(err)


def test_counts_json_lists_every_skip_reason(tmp_path):
    fixtures.write(tmp_path / "books" / "a.txt", fixtures.book_text())
    counts = _run(_books(tmp_path / "books"), tmp_path / "out")
    stored = json.load(open(tmp_path / "out" / "counts.json"))
    assert stored == counts
    assert set(corpus_beam.SKIP_KEYS) == {"empty_files", "short_documents", "duplicate_documents"}
