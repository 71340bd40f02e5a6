"""The [UNK] rate, pieces per character and vocabulary coverage of bundled text under the official English
30k-clean.model (components/datagate/examples_stats.py): what ``gate.max_unk_rate``'s default is chosen from.

    .venv/bin/python -m benchmarks.examples_gate_unk

Results: benchmarks/results/data_gate/2026-11-28-examples.md.
"""
import glob
import os
import time

from components.corpus.books import book_documents
from components.corpus.wiki import wiki_documents
from components.datagate.examples_stats import measure_language
from components.text.tokenization import AlbertTokenizer

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _lines(path):
    with open(path, encoding="utf-8") as f:
        return [line.strip() for line in f if line.strip()]


def main() -> None:
    tokenizer = AlbertTokenizer(os.path.join(REPO, "data", "sample", "vocab", "30k-clean.model"))
    sets = {
        "data/sample books (en)": [s for d in book_documents(os.path.join(REPO, "data", "sample", "books"))
                                   for s in d.sentences],
        "data/sample Wikipedia (en)": [s for d in wiki_documents(os.path.join(
            REPO, "data", "sample", "wikipedia", "enwiki-sample-pages-articles.xml.bz2")) for s in d.sentences],
    }
    for folder in ("data/sample-zh/books", "data/sample-multi/books", "tests/fixtures/multilingual"):
        for path in sorted(glob.glob(os.path.join(REPO, folder, "*.txt"))):
            sets[f"{folder}/{os.path.basename(path)}"] = _lines(path)
    print("| text | characters | pieces | [UNK] rate | pieces per character | vocabulary coverage | CPU s |")
    print("|---|---|---|---|---|---|---|")
    for name, sentences in sets.items():
        start = time.process_time()
        m = measure_language(name, sentences, tokenizer)
        print(f"| {name} | {m.characters:,} | {m.pieces:,} | {m.unk_rate:.4f} | {m.pieces_per_character:.3f} | "
              f"{m.vocabulary_coverage:.4f} | {time.process_time() - start:.2f} |")


if __name__ == "__main__":
    main()
