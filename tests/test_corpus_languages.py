"""Documents tagged by language (issue 63): from an XML dump's own language (``xml:lang``, else ``<dbname>``), from
a source's setting, or by the language identifier (``auto``); one documents file per language in a run of several,
ids prefixed by the language, counts per language, documents in no listed language dropped and counted, and the
run stopped above ``corpus.max_unlisted_language_share``."""
import json
import os
from pathlib import Path

import pytest

from components.corpus.corpus_beam import read_input_file
from components.corpus.corpus_config import CorpusConfig
from components.corpus.ingest_tool import ingest
from components.corpus.language_tags import LanguageTagging
from components.corpus.wiki import language_of_dbname
from components.text.documents import file_language, parse_text_blocks
from pipeline.settings.configs import build_config
from tests.conftest import REPO
from tests.test_cli_errors import _check_clean_failure

BOOKS = Path(REPO) / "data" / "sample-multi" / "books"
ZH = "自由软件是尊重用户自由的软件。用户可以运行、复制、发布、研究、修改和改进这些软件。" * 6
JA = "フリーソフトウェアは利用者の自由を尊重するソフトウェアです。利用者は実行、複製、配布、研究、変更ができます。" * 4


def _dump(dbname, text, lang_attr=None, page_id=12):
    attr = f' xml:lang="{lang_attr}"' if lang_attr else ""
    return (f'<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.10/" version="0.10"{attr}>'
            f'<siteinfo><sitename>W</sitename><dbname>{dbname}</dbname><namespaces>'
            f'<namespace key="0" case="first-letter" /></namespaces></siteinfo>'
            f'<page><title>T</title><ns>0</ns><id>{page_id}</id><revision><id>1</id>'
            f'<text xml:space="preserve">{text}</text></revision></page></mediawiki>\n')


def _wiki(tmp_path):
    """Two Wikipedias sharing page id 12: a Chinese dump that says so only by its dbname, a Japanese one by xml:lang
    (its dbname says nothing)."""
    wiki = tmp_path / "wiki"
    wiki.mkdir()
    (wiki / "zhwiki-pages-articles.xml").write_text(_dump("zhwiki", ZH), encoding="utf-8")
    (wiki / "x-pages-articles.xml").write_text(_dump("mirror", JA, lang_attr="ja"), encoding="utf-8")
    return wiki


def test_the_dump_says_its_language_and_ids_carry_it(tmp_path):
    wiki = _wiki(tmp_path)
    several = LanguageTagging(languages=("en", "zh", "ja"))
    docs = [d for name in sorted(os.listdir(wiki))
            for d in read_input_file(("wikipedia", str(wiki / name), str(wiki)), 100, None, tagging=several)]
    assert [(d.doc_id, d.language, len(d.sentences)) for d in docs] == [("ja:wiki:12", "ja", 8),
                                                                         ("zh:wiki:12", "zh", 12)]
    # One language of its own: no prefix, same ids; a setting overrides the dump.
    one = LanguageTagging(languages=("zh",))
    assert [d.doc_id for d in read_input_file(("wikipedia", str(wiki / "zhwiki-pages-articles.xml"), str(wiki)),
                                              100, None, tagging=one)] == ["wiki:12"]
    forced = LanguageTagging(languages=("en", "zh"), wikipedia_language="en")
    assert [d.language for d in read_input_file(("wikipedia", str(wiki / "zhwiki-pages-articles.xml"), str(wiki)),
                                                100, None, tagging=forced)] == ["en"]
    assert [language_of_dbname(n) for n in ("zhwiki", "simplewiki", "zh_yuewiki", "enwiktionary")] == [
        "zh", None, None, None]


def test_a_run_of_several_languages_writes_one_file_per_language_and_counts_them(tmp_path):
    wiki = _wiki(tmp_path)
    corpus = build_config("sample", overrides=["language=[en,zh,ja,ko,de]", f"corpus.books_dir={BOOKS}",
                                               f"corpus.wikipedia_dir={wiki}", "corpus.num_shards=1"]).corpus
    assert (corpus.languages, corpus.books_language, corpus.sentence_splitter) == (
        ["en", "zh", "ja", "ko", "de"], None, None)
    counts = ingest(str(wiki), str(BOOKS), str(tmp_path / "out"), corpus)
    files = sorted(os.listdir(tmp_path / "out"))
    assert files == ["counts.json"] + [f"documents-{c}-00000-of-00001.txt" for c in ("de", "en", "ja", "ko", "zh")]
    assert {c: v["documents"] for c, v in counts["per_language"].items()} == {"en": 1, "zh": 2, "ja": 2, "ko": 1,
                                                                              "de": 1}
    assert counts["unlisted_languages"] == {} and counts["skipped"]["books"]["unlisted_language_documents"] == 0
    assert sum(v["characters"] for v in counts["per_language"].values()) == counts["characters"]
    for name in files[1:]:
        with open(tmp_path / "out" / name, encoding="utf-8") as f:
            docs = list(parse_text_blocks(f))
        assert len(docs) == counts["per_language"][file_language(name)]["documents"]
    # Each document split by its own language's splitter: the Chinese FAQ cut at 。, the English one by English rules.
    with open(tmp_path / "out" / "documents-zh-00000-of-00001.txt", encoding="utf-8") as f:
        zh = list(parse_text_blocks(f))
    assert len(zh[1]) == 12 and all(s.endswith("。") for s in zh[1])  # the dump's page (wiki:12)
    assert json.loads((tmp_path / "out" / "counts.json").read_text())["per_language"] == counts["per_language"]


def test_unlisted_documents_are_dropped_and_counted_below_the_limit(tmp_path):
    corpus = CorpusConfig(books_dir=str(BOOKS), num_shards=1, languages=["en", "zh", "ja", "ko"],
                          max_unlisted_language_share=0.25)
    counts = ingest(None, str(BOOKS), str(tmp_path / "out"), corpus)
    assert counts["unlisted_languages"] == {"de": 1} and counts["documents"] == 4
    assert counts["skipped"]["books"]["unlisted_language_documents"] == 1


def test_above_the_limit_the_run_stops_naming_the_setting_and_leaves_nothing(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    done = cli("ingest", "--books", str(BOOKS), "--output", "out", "--set", "language=[en,zh,ja,ko]")
    line = _check_clean_failure(done, tmp_path, ["1 of 5 documents (20.0%) are in no language of",
                                                 "corpus.max_unlisted_language_share=0.05"], "out")
    assert "[while running" not in line


@pytest.mark.parametrize("overrides,message", [
    (["language=[en,zh]", "corpus.books_language=ru"],
     "config corpus.books_language='ru' is invalid: expected auto or one of the run's languages "
     "(language=['en', 'zh'])"),
    (["corpus.wikipedia_language=zh"],
     "config corpus.wikipedia_language='zh' is invalid: expected auto or one of the run's languages "
     "(language=['en'])"),
    (["language=[en,zh]", "corpus.max_unlisted_language_share=1.5"],
     "config corpus.max_unlisted_language_share=1.5 is invalid"),
    (["corpus.languages=[en,zh]"], "config corpus.languages=['en', 'zh'] is invalid: it is filled from language"),
])
def test_a_source_marked_with_a_language_the_run_does_not_list(cli, tmp_path, monkeypatch, overrides, message):
    monkeypatch.chdir(tmp_path)
    args = [a for o in overrides for a in ("--set", o)]
    _check_clean_failure(cli("run", "--preset", "sample", *args, "--output-dir", "out"), tmp_path, [message], "out")


def test_a_single_language_run_tags_nothing_and_keeps_its_json():
    sample = build_config("sample")
    assert sample.corpus.languages is None and "languages" not in json.loads(sample.corpus.to_json())
    assert LanguageTagging.from_config(sample.corpus).active is False
    marked = build_config("sample", overrides=["corpus.books_language=auto"])
    assert marked.corpus.languages == ["en"] and json.loads(marked.corpus.to_json())["books_language"] == "auto"
