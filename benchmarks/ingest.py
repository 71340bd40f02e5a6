"""Ingestion throughput: raw Wikipedia dumps + book folders → sharded documents, with 1 and 2 Beam workers.

    .venv/bin/python benchmarks/ingest.py [--data-dir data/sample] [--workers 1 2] [--repeat 1] [--keep-output DIR]

``--data-dir`` must hold ``wikipedia/`` (pages-articles*.xml[.bz2]) and/or ``books/`` (``**/*.txt``),
e.g. ``../shared/data`` (its books live in ``books/gutenberg``). Prints documents/s and input MB/s
(compressed bytes as stored) per worker count, measured around the whole Beam pipeline (DirectRunner).
``--keep-output DIR`` keeps the last run's documents there (4 shards), e.g. as ``benchmarks/datagen.py`` input.
"""
import argparse
import json
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import apache_beam as beam  # noqa: E402
from apache_beam.options.pipeline_options import PipelineOptions  # noqa: E402

from components import corpus_beam  # noqa: E402


def run_once(inputs, workers, encoding_fallback=None, keep_output=None):
    out = tempfile.mkdtemp(prefix="ingest_bench_")
    mode = "multi_processing" if workers > 1 else "in_memory"
    options = PipelineOptions(["--runner=DirectRunner", f"--direct_num_workers={workers}",
                               f"--direct_running_mode={mode}"])
    t0 = time.perf_counter()
    with beam.Pipeline(options=options) as p:
        corpus_beam.build_corpus(p, inputs, out, num_shards=4 if keep_output else max(2, workers), min_chars=200,
                                 encoding_fallback=encoding_fallback)
    seconds = time.perf_counter() - t0
    counts = corpus_beam.read_counts(out)
    if keep_output:
        shutil.rmtree(keep_output, ignore_errors=True)
        shutil.move(out, keep_output)
    shutil.rmtree(out, ignore_errors=True)
    return seconds, counts


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", default=os.path.join(os.path.dirname(__file__), "..", "data", "sample"))
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--encoding-fallback", help="e.g. latin-1 for books that are not UTF-8")
    parser.add_argument("--repeat", type=int, default=1, help="runs per worker count; the best is reported")
    parser.add_argument("--keep-output", help="move the last run's documents folder here (replaced if it exists)")
    args = parser.parse_args()
    wiki = os.path.join(args.data_dir, "wikipedia")
    books = os.path.join(args.data_dir, "books")
    inputs = corpus_beam.list_inputs(wiki if os.path.isdir(wiki) else None, "*pages-articles*.xml*",
                                     books if os.path.isdir(books) else None, "**/*.txt")
    input_mb = sum(os.path.getsize(path) for _, path, _ in inputs) / 1e6
    results = []
    for workers in args.workers:
        seconds, counts = min((run_once(inputs, workers, args.encoding_fallback, args.keep_output)
                               for _ in range(args.repeat)), key=lambda r: r[0])
        results.append({"workers": workers, "seconds": round(seconds, 2), "documents": counts["documents"],
                        "documents_per_s": round(counts["documents"] / seconds, 1),
                        "input_mb_per_s": round(input_mb / seconds, 2)})
    print(json.dumps({"data_dir": os.path.abspath(args.data_dir), "input_files": len(inputs),
                      "input_mb": round(input_mb, 2), "cpu_count": os.cpu_count(), "runs": results}, indent=2))


if __name__ == "__main__":
    main()
