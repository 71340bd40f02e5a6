"""Ingestion (CorpusGen's Beam code) through the real ``albert-pipeline ingest``: wall time, input words/s per core
and peak RSS, against workers and corpus size.

    .venv/bin/python -m benchmarks.ingest --data-dir ../shared/data/large [--workers 1 2] [--fractions 0.25 0.5 1]
        [--repeat 1] [--encoding-fallback latin-1] [--keep-output DIR] [--json FILE]

``--data-dir`` holds ``wikipedia/`` (``pages-articles*.xml[.bz2]`` dumps and/or WikiExtractor ``AA/wiki_NN[.bz2]``
files) and/or ``books/`` (``**/*.txt``, ``.txt.gz``, ``.txt.bz2``): ``../shared/data/large`` (41 M words) or
``../shared/data``. A fraction f takes the first f of each source's files in sorted order (symbolic links in a
scratch folder), so the sizes are nested. Each run is one ``albert-pipeline ingest`` process started from a small
launcher; its peak RSS is the kernel's ``ru_maxrss`` (with 2 workers: the largest process of the tree), as in
``benchmarks/datagen_memory.py``. Input words are the whitespace-separated words of the decompressed input files
(``wc -w``, what ``PROVENANCE.md`` counts); words/s per core divides by min(workers, cores). The best of
``--repeat`` runs is kept. Prints a Markdown table with the CPU model and its AVX-512 flags.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import sys
import tempfile
import time
from typing import Dict, List, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

from benchmarks.datagen_memory import cli_command, peak_rss_run
from components.corpus import corpus_beam
from components.corpus.compression import decompress_bytes
from components.corpus.corpus_config import BOOKS_GLOBS, WIKIPEDIA_GLOBS
from trainer import precision  # imports no TensorFlow


def cpu_description() -> str:
    flags = precision.cpu_flags()
    avx512 = sorted(f for f in _all_flags() if f.startswith("avx512")) if flags is not None else []
    return f"{precision.cpu_model()}, {os.cpu_count()} cores, flags: {' '.join(avx512) or 'no avx512'}"


def _all_flags() -> List[str]:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            return next((line.split(":", 1)[1].split() for line in f if line.startswith("flags")), [])
    except OSError:
        return []


def list_files(data_dir: str) -> Dict[str, List[Tuple[str, str]]]:
    """{source: [(path, path relative to the source folder)]}, sorted, with the ``ingest`` command's globs."""
    out: Dict[str, List[Tuple[str, str]]] = {}
    for source, globs in (("wikipedia", WIKIPEDIA_GLOBS), ("books", BOOKS_GLOBS)):
        folder = os.path.join(data_dir, source)
        if os.path.isdir(folder):
            inputs = corpus_beam.list_inputs(folder, globs, None, "") if source == "wikipedia" else \
                corpus_beam.list_inputs(None, "", folder, globs)
            out[source] = [(path, os.path.relpath(path, folder)) for _, path, _ in inputs]
    if not out:
        raise SystemExit(f"--data-dir {data_dir} has no wikipedia/ or books/ folder")
    return out


def words_of(path: str) -> int:
    with open(path, "rb") as f:
        return len(decompress_bytes(f.read(), path).split())


def subset(files: Dict[str, List[Tuple[str, str]]], fraction: float, folder: str) -> Dict[str, List[str]]:
    """Links to the first ``fraction`` of each source's files under ``folder/<source>/``; the chosen paths."""
    chosen = {}
    for source, items in files.items():
        take = items[: max(1, math.ceil(len(items) * fraction))]
        for path, rel in take:
            link = os.path.join(folder, source, rel)
            os.makedirs(os.path.dirname(link), exist_ok=True)
            os.symlink(os.path.abspath(path), link)
        chosen[source] = [path for path, _ in take]
    return chosen


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", default=os.path.join(ROOT, "data", "sample"),
                    help="folder with wikipedia/ and/or books/, e.g. ../shared/data/large")
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--fractions", type=float, nargs="+", default=[1.0], help="corpus sizes, e.g. 0.25 0.5 1")
    ap.add_argument("--repeat", type=int, default=1, help="runs per case; the fastest is reported")
    ap.add_argument("--encoding-fallback", help="e.g. latin-1 for books that are not UTF-8")
    ap.add_argument("--keep-output", help="move the last run's documents folder here (replaced if it exists)")
    ap.add_argument("--json", help="also write the rows to this JSON file")
    args = ap.parse_args(argv)
    files = list_files(args.data_dir)
    words = {path: words_of(path) for items in files.values() for path, _ in items}
    work = tempfile.mkdtemp(prefix="ingest_bench_")
    rows = []
    try:
        for fraction in sorted(args.fractions):
            corpus = os.path.join(work, f"corpus-{fraction}")
            chosen = subset(files, fraction, corpus)
            paths = [p for ps in chosen.values() for p in ps]
            sizes = {"input_files": len(paths), "input_mb": round(sum(os.path.getsize(p) for p in paths) / 1e6, 1),
                     "input_words": sum(words[p] for p in paths)}
            for workers in args.workers:
                best = None
                for k in range(args.repeat):
                    out = os.path.join(work, f"out-{fraction}-{workers}-{k}")
                    command = cli_command() + ["--log-file", os.path.join(work, "ingest.log"), "ingest",
                                               "--output", out, "--workers", str(workers)]
                    for source in chosen:
                        command += [f"--{source}", os.path.join(corpus, source)]
                    if args.encoding_fallback:
                        command += ["--set", f"corpus.book_encoding_fallback={args.encoding_fallback}"]
                    measured = peak_rss_run(command, os.path.join(work, "ingest.log"))
                    counts = corpus_beam.read_counts(out)
                    if best is None or measured["wall_s"] < best[0]["wall_s"]:
                        best = (measured, counts)
                    if args.keep_output and fraction == max(args.fractions) and workers == args.workers[-1]:
                        shutil.rmtree(args.keep_output, ignore_errors=True)
                        shutil.move(out, args.keep_output)
                    shutil.rmtree(out, ignore_errors=True)
                measured, counts = best
                cores = min(workers, os.cpu_count() or 1)
                row = {"fraction": fraction, "workers": workers, **sizes, **measured,
                       "documents": counts["documents"], "sentences": counts["sentences"],
                       "per_source": {s: c["documents"] for s, c in counts["per_source"].items()},
                       "input_words_per_s_per_core": round(sizes["input_words"] / measured["wall_s"] / cores)}
                rows.append(row)
                print(json.dumps(row), file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"albert-pipeline ingest on {os.path.abspath(args.data_dir)} ({time.strftime('%Y-%m-%d')}); "
          f"CPU: {cpu_description()}")
    print("| corpus | files | input MB (stored) | input words | workers | documents | wall (s) | "
          "input words/s per core | peak RSS (MiB) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['fraction']:g} | {r['input_files']} | {r['input_mb']} | {r['input_words']:,} | {r['workers']} | "
              f"{r['documents']:,} | {r['wall_s']} | {r['input_words_per_s_per_core']:,} | {r['peak_rss_mib']:.0f} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"cpu": cpu_description(), "data_dir": os.path.abspath(args.data_dir), "rows": rows}, f,
                      indent=2)


if __name__ == "__main__":
    main()
