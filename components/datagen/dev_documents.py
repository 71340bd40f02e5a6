"""The paper's pretraining dev set: documents of the SQuAD and RACE dev sets (pure, no Beam/TF).

ALBERT monitors MLM and SOP accuracy on instances built from the SQuAD and RACE dev documents (paper §4.1), text
the corpus does not contain and a downstream reader will see. This module turns those files into documents in
the pretraining format of :mod:`components.text.documents` (one sentence per line, a blank line after each
document), which ``datagen_beam.build_pretraining_data(..., eval_document_files=[...])`` takes as its eval
split:

* SQuAD (v1.1 or v2.0 JSON): one document per article, its paragraph contexts in order;
* RACE (``<root>/dev/{middle,high}/*.txt``): one document per article file, its paragraphs from line breaks.

Sentences are split and cleaned as the corpus is (:func:`components.text.documents.make_document`); documents
equal after normalisation are kept once (first seen), so an article present in both sets or twice in one
counts once. Order is deterministic: SQuAD articles in file order, then RACE middle then high, files sorted.
"""
from __future__ import annotations

from typing import Dict, Iterable, List, Optional, Sequence, Union

from components.evaluation.race.race_data import read_race
from components.evaluation.squad.reading import load_squad_json
from components.text.documents import Document, doc_fingerprint, make_document, to_text_block

__all__ = ["squad_dev_documents", "race_dev_documents", "dev_documents", "write_documents"]


def squad_dev_documents(dataset: Union[str, Dict, List]) -> List[Document]:
    """One document per SQuAD article (path, parsed JSON or its "data" list)."""
    docs = []
    for i, article in enumerate(load_squad_json(dataset)):
        title = str(article.get("title", f"article-{i}"))
        contexts = [p.get("context", "") for p in article.get("paragraphs", [])]
        docs.append(make_document(f"squad_dev:{i}", "squad_dev", title, contexts))
    return [d for d in docs if d.sentences]


def race_dev_documents(race_dir: str, split: str = "dev") -> List[Document]:
    """One document per RACE article file under ``race_dir/<split>/{middle,high}``."""
    docs: List[Document] = []
    seen_files = set()
    for ex in read_race(race_dir, split=split):
        file_id = ex.example_id.rsplit("-", 1)[0]
        if file_id in seen_files:
            continue
        seen_files.add(file_id)
        doc = make_document(f"race_{split}:{file_id}", f"race_{split}", file_id, ex.article.split("\n"))
        if doc.sentences:
            docs.append(doc)
    return docs


def _dedupe(documents: Iterable[Document]) -> List[Document]:
    seen, out = set(), []
    for doc in documents:
        key = doc_fingerprint(doc)
        if key not in seen:
            seen.add(key)
            out.append(doc)
    return out


def dev_documents(squad_dev_files: Sequence[str] = (), race_dir: Optional[str] = None) -> List[Document]:
    """SQuAD articles of each dev file, then RACE dev articles; duplicates (after normalisation) once."""
    docs: List[Document] = []
    for path in squad_dev_files:
        docs.extend(squad_dev_documents(path))
    if race_dir:
        docs.extend(race_dev_documents(race_dir))
    if not docs:
        raise ValueError("no SQuAD or RACE dev documents found: give a SQuAD dev file and/or a RACE folder")
    return _dedupe(docs)


def write_documents(documents: Iterable[Document], path: str) -> int:
    """Write ``documents`` in the pretraining format; returns how many were written."""
    n = 0
    with open(path, "w", encoding="utf-8") as f:
        for doc in documents:
            block = to_text_block(doc)
            if block:
                f.write(block)
                n += 1
    return n
