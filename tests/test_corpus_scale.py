"""``benchmarks/corpus_scale.py`` on the cut fixtures of tests/fixtures/corpus: each row comes from a real run of the
product's own command (``ingest``, ``make-pretraining-data``, VocabGen's training call) in its own process, and the
counts it reports are the exact counts of its input."""
import json
import os
import shutil
import subprocess

import pytest

from benchmarks import corpus_scale
from benchmarks.ingest import words_of
from components.datagen.generate import tokenize_document
from components.datagen.instances import VocabInfo
from components.corpus.ingest_tool import ingest
from components.text.tokenization import AlbertTokenizer
from components.corpus.corpus_config import CorpusConfig
from tests.reliability import fixtures
from tests.test_ingest import BOOKS, WIKI


def test_each_row_is_a_real_run_with_the_exact_input_counts(tmp_path):
    data = tmp_path / "data"
    shutil.copytree(WIKI, data / "wikipedia")
    shutil.copytree(BOOKS, data / "books")
    rows_file = tmp_path / "rows.json"
    corpus_scale.main(["--data-dir", str(data), "--fractions", "1", "--workers", "1", "--vocab-size", "300",
                       "--steps", "ingest", "datagen", "vocab", "--json", str(rows_file)])
    rows = json.loads(rows_file.read_text())["rows"]
    assert [r["step"] for r in rows] == ["ingest", "datagen L128", "datagen L512", "vocab"]
    words = sum(words_of(str(p)) for p in sorted(data.rglob("*")) if p.is_file())
    assert {(r["files"], r["input_words"], r["workers"], r["killed"]) for r in rows} == {(4, words, 1, False)}
    # The benchmark's input tokens are datagen's counter: the pieces of the documents ingest writes.
    ingest(str(data / "wikipedia"), str(data / "books"), str(tmp_path / "docs"), CorpusConfig(books_dir="x"))
    tok = AlbertTokenizer(corpus_scale.SPM_MODEL)
    vocab = VocabInfo.from_tokenizer(tok)
    tokens = sum(tokenize_document(tok, d, vocab).num_tokens for d in fixtures.written_documents(tmp_path / "docs"))
    assert rows[1]["input_tokens"] == rows[2]["input_tokens"] == rows[3]["input_tokens"] == tokens
    assert rows[1]["train_instances"] > rows[2]["train_instances"] > 0  # L 128 cuts more, shorter instances
    assert all(r["peak_rss_mib"] > 50 for r in rows)


def test_the_official_script_imports_its_own_albert_package_beside_the_project(tmp_path):
    """``--official-albert``: the official script's ``from albert import tokenization`` imports the checkout, in the
    environment where this project is installed (nothing of the project is named ``albert``); a checkout that is not
    in a folder named ``albert`` is refused before anything runs."""
    from tests.official_albert import make_official_albert

    checkout = make_official_albert(str(tmp_path / "official"))
    documents = tmp_path / "docs"
    documents.mkdir()
    (documents / "part-0.txt").write_text("One sentence.\n")
    out = tmp_path / "official.tfrecord"
    command = corpus_scale.official_command(checkout, str(documents), str(out), corpus_scale.SPM_MODEL)
    done = subprocess.run(command, env=corpus_scale.official_env(checkout), cwd=str(tmp_path), capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert out.read_text() == os.path.join(checkout, "tokenization.py")

    elsewhere = tmp_path / "elsewhere"
    shutil.copytree(checkout, elsewhere)
    with pytest.raises(SystemExit):
        corpus_scale.main(["--data-dir", str(tmp_path), "--steps", "official", "--official-albert", str(elsewhere)])
