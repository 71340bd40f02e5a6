"""Throughput of the pure data-generation core on one core: tokenize → instances → serialized bytes.

Reads every ``*.txt`` under ``--data-dir`` in the official input format (one sentence per line, blank
line between documents; hard-wrapped book text works too, each line then counts as a sentence) and
reports input tokens per second of CPU time of this single process (best and median of ``--repeat``
runs, as shared machines are noisy) plus peak RSS. Issue 4's goal is >= 1,000,000 input tokens/s per
core at L=512, dupe_factor 1.

    .venv/bin/python -m benchmarks.datagen_core --data-dir ../shared/data/books/gutenberg

(``../shared/data`` stands for ``$ALBERT_TFX_DATA_DIR``, the shared data folder; see README.md.)
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import resource
import sys
import time
from typing import List

import numpy as np


from components.datagen.generate import generate_for_document, tokenize_document  # noqa: E402
from components.datagen.instances import InstanceParams, VocabInfo  # noqa: E402
from components.datagen.stats import InstanceStats  # noqa: E402
from components.text.tokenization import AlbertTokenizer  # noqa: E402


def read_documents(data_dir: str, max_chars: int, doc_lines: int = 0) -> List[List[str]]:
    """Documents split at blank lines, or every ``doc_lines`` non-empty lines when > 0 (book text has a
    blank line per paragraph; BookCorpus documents are whole books)."""
    docs: List[List[str]] = [[]]
    chars = 0
    for path in sorted(glob.glob(os.path.join(data_dir, "**", "*.txt"), recursive=True)):
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                line = line.strip()
                if not line:
                    if docs[-1] and not doc_lines:
                        docs.append([])
                    continue
                docs[-1].append(line)
                if doc_lines and len(docs[-1]) >= doc_lines:
                    docs.append([])
                chars += len(line)
                if max_chars and chars >= max_chars:
                    return [d for d in docs if d]
        docs.append([])
    return [d for d in docs if d]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", default="data/sample/books", help="the pretraining-text part of data/sample")
    ap.add_argument("--spm-model", default="data/sample/vocab/30k-clean.model")
    ap.add_argument("--max-seq-length", type=int, default=512)
    ap.add_argument("--max-predictions", type=int, default=20)
    ap.add_argument("--dupe-factor", type=int, default=1)
    ap.add_argument("--sop-mode", default="official")
    ap.add_argument("--max-chars", type=int, default=20_000_000, help="stop reading after this many characters")
    ap.add_argument("--doc-lines", type=int, default=0,
                    help="make a document of every N non-empty lines instead of splitting at blank lines")
    ap.add_argument("--seed", type=int, default=12345)
    ap.add_argument("--repeat", type=int, default=3, help="timed runs; the best and the median are reported")
    args = ap.parse_args()

    docs_text = read_documents(args.data_dir, args.max_chars, args.doc_lines)
    if not docs_text:
        sys.exit(f"no text found under {args.data_dir!r} (*.txt, one sentence per line, blank line between "
                 f"documents); try --data-dir $ALBERT_TFX_DATA_DIR/books/gutenberg or tests/fixtures")
    tok = AlbertTokenizer(args.spm_model)
    vocab = VocabInfo.from_tokenizer(tok)
    params = InstanceParams(max_seq_length=args.max_seq_length, max_predictions_per_seq=args.max_predictions,
                            sop_mode=args.sop_mode)

    def one_run():
        c0 = time.process_time()
        docs_ids = [tokenize_document(tok, d, vocab) for d in docs_text]
        c1 = time.process_time()

        # Random documents drawn from the tokenized corpus with the pass's own generator (the DoFn would
        # use a side-input sample); may hit the document itself, which does not matter for speed.
        def random_document(rng: np.random.Generator):
            return docs_ids[int(rng.integers(len(docs_ids)))]

        stats = InstanceStats()
        out_bytes = 0
        for i, d in enumerate(docs_ids):
            for payload, inst in generate_for_document(f"doc-{i}", d, args.seed, args.dupe_factor, params, vocab,
                                                       random_document):
                out_bytes += len(payload)
                stats.add(inst)
        c2 = time.process_time()
        input_tokens = sum(int(s.shape[0]) for d in docs_ids for s in d)
        return c1 - c0, c2 - c1, input_tokens, out_bytes, stats

    runs = [one_run() for _ in range(args.repeat)]
    best = min(runs, key=lambda r: r[0] + r[1])
    tok_s, gen_s, input_tokens, out_bytes, stats = best
    totals = sorted(r[0] + r[1] for r in runs)
    summary = stats.to_dict()
    rate = input_tokens * args.dupe_factor
    report = {
        "documents": len(docs_text),
        "input_tokens": input_tokens,
        "instances": summary["instances"],
        "output_bytes": out_bytes,
        "repeats": args.repeat,
        "best_cpu_s": round(tok_s + gen_s, 3),
        "best_cpu_s_tokenize": round(tok_s, 3),
        "best_cpu_s_instances_and_serialize": round(gen_s, 3),
        "input_tokens_per_cpu_s_best": round(rate / (tok_s + gen_s)),
        "input_tokens_per_cpu_s_median": round(rate / totals[len(totals) // 2]),
        "input_tokens_per_cpu_s_tokenize_only": round(input_tokens / tok_s),
        "input_tokens_per_cpu_s_excluding_tokenize": round(rate / gen_s),
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "length_mean": round(summary["length_mean"], 1),
        "sop_label_1_share": round(summary["sop_label_1_share"], 4),
        "masked_per_instance": round(summary["masked_per_instance"], 2),
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
