"""Inputs of the language-sampling measurements (benchmarks/results/datagen/2026-11-28-languages.md): the English
Gutenberg books of ../shared/data and its multilingual zh, ja and ko cuts as documents files named by language (cut
into documents of about 6,000 characters), and one 8,000-piece SentencePiece vocabulary (NFKC, coverage 0.9995)
trained on all of them.

    .venv/bin/python -m benchmarks.language_sampling_inputs OUT_DIR [--data-dir ../shared/data]
"""
from __future__ import annotations

import argparse
import glob
import os

from components.corpus.books import book_document_from_bytes
from components.text.documents import Document, shard_file_name, to_text_block
from components.vocab.vocab_lib import iter_sentences, train_sentencepiece

SOURCES = {"en": "books/gutenberg/*.txt", "zh": "multilingual/zh/*.txt", "ja": "multilingual/ja/*.txt",
           "ko": "multilingual/ko/*.txt"}


def write_documents(data_dir: str, out: str, chars: int = 6000) -> None:
    os.makedirs(out, exist_ok=True)
    for lang, pattern in SOURCES.items():
        path_out = os.path.join(out, shard_file_name(0, 1, lang))
        n = 0
        with open(path_out, "w", encoding="utf-8") as f:
            for path in sorted(glob.glob(os.path.join(data_dir, pattern))):
                with open(path, "rb") as src:
                    doc = book_document_from_bytes(src.read(), os.path.basename(path), encoding_fallback="latin-1",
                                                   min_chars=1, splitter="english" if lang == "en" else "multilingual")
                chunk, size = [], 0
                for sentence in doc.sentences + [None]:
                    if sentence is None or size >= chars:
                        if chunk:
                            f.write(to_text_block(Document(f"{lang}:{n}", "books", "", chunk)))
                            n += 1
                        chunk, size = [], 0
                    if sentence is not None:
                        chunk.append(sentence)
                        size += len(sentence)
        print(lang, n, "documents", os.path.getsize(path_out), "bytes")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--data-dir", default=os.path.join("..", "shared", "data"))
    args = parser.parse_args()
    docs = os.path.join(args.out, "docs")
    write_documents(args.data_dir, docs)
    files = sorted(glob.glob(os.path.join(docs, "documents-*.txt")))
    train_sentencepiece(iter_sentences(files), os.path.join(args.out, "vocab"), vocab_size=8000,
                        character_coverage=0.9995, input_sentence_size=200_000, do_lower_case=True, seed=12345,
                        normalization="nfkc", strip_accents=False)


if __name__ == "__main__":
    main()
