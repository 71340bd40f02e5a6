"""components/datagen/dev_documents.py: SQuAD / RACE dev documents as the pretraining dev set (bundled samples)."""
import json
import os

import pytest

from components.datagen import datagen_beam
from components.datagen.dev_documents import dev_documents, race_dev_documents, squad_dev_documents, write_documents
from components.evaluation.race.race_data import read_race
from components.text.normalize import preprocess_text


@pytest.fixture(scope="module")
def squad_file(sample_dir):
    return os.path.join(sample_dir, "squad", "dev-v1.1-sample.json")


def test_squad_articles_become_documents(squad_file):
    with open(squad_file, encoding="utf-8") as f:
        articles = json.load(f)["data"]
    docs = squad_dev_documents(squad_file)
    assert len(docs) == len(articles) > 0
    for doc, article in zip(docs, articles):
        assert doc.title == article["title"] and doc.source == "squad_dev"
        # Every context's text is there, in order, split into sentences (whitespace aside).
        joined = " ".join(doc.sentences)
        contexts = " ".join(" ".join(p["context"].split()) for p in article["paragraphs"])
        assert joined.replace(" ", "") == contexts.replace(" ", "")
        assert len(doc.sentences) > len(article["paragraphs"])


def test_race_articles_become_documents(sample_dir):
    race_dir = os.path.join(sample_dir, "race")
    docs = race_dev_documents(race_dir)
    files = {e.example_id.rsplit("-", 1)[0] for e in read_race(race_dir, split="dev")}
    assert len(docs) == len(files) == 8  # 4 middle + 4 high article files
    assert all(d.source == "race_dev" and len(d.sentences) > 2 for d in docs)
    first = read_race(race_dir, split="dev")[0]
    assert " ".join(docs[0].sentences).replace(" ", "") == "".join(first.article.split())


def test_combined_deduplicated_and_written(tmp_path, squad_file, sample_dir, tok):
    race_dir = os.path.join(sample_dir, "race")
    docs = dev_documents([squad_file, squad_file], race_dir)  # the SQuAD file twice: its articles once
    assert len(docs) == len(squad_dev_documents(squad_file)) + len(race_dev_documents(race_dir))
    path = str(tmp_path / "dev_documents.txt")
    assert write_documents(docs, path) == len(docs)
    back = [s for _, s in datagen_beam.read_documents(path)]
    assert back == [d.sentences for d in docs]
    assert all(preprocess_text(s) for d in back for s in d)
    with pytest.raises(ValueError, match="no SQuAD or RACE"):
        dev_documents([], None)
