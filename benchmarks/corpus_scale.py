"""The data nodes at corpus scale: ingest, VocabGen and datagen against corpus size and workers, with the official
``create_pretraining_data.py`` as the memory anchor.

    .venv/bin/python -m benchmarks.corpus_scale --data-dir ../shared/data/large [--fractions 0.25 0.5 1]
        [--workers 1 2] [--official-albert DIR [--official-timeout 1200]] [--json FILE]

``--data-dir`` is laid out as ``benchmarks/ingest.py`` expects (``wikipedia/`` and/or ``books/``); a fraction f takes
the first f of each source's files in sorted order, so the sizes are nested. For each fraction, each step is one
process started from a small launcher, so its peak RSS is the kernel's ``ru_maxrss`` for that process tree (the
largest process of it), as in ``benchmarks/datagen_memory.py``:

1. ``albert-pipeline ingest`` (4 document shards, so that 2 datagen workers have work to share);
2. VocabGen's training code (``components.vocab.vocab_lib.build_vocab``) on those documents with ALBERT's recipe: a 30k
   unigram model over at most ``--input-sentence-size`` sampled sentences (10 M, the official ``spm_train``
   setting: the whole of this corpus), single-threaded as VocabGen runs it (the same seed gives the same model);
3. ``albert-pipeline make-pretraining-data`` at the ``small`` preset's L 128 and at L 512 (official SOP, dupe 2);
4. with ``--official-albert DIR`` (a checkout of google-research/albert holding ``create_pretraining_data.py`` and
   ``tokenization.py``, in a folder named ``albert``: the official code imports itself as ``from albert import
   tokenization``, so the checkout's parent is put on ``PYTHONPATH``; nothing of this project is named ``albert``, so
   the order does not matter; its ``tokenization.py`` imports ``tensorflow_hub``, which needs a
   release that imports under TF 2.16+, e.g. 0.16.1, and ``pkg_resources``: install those into a folder of your
   own and add it to ``PYTHONPATH`` rather than into this project's venv), that script on the same documents with the same L 512 settings, killed after
   ``--official-timeout`` seconds: it holds every document and every instance in memory, so its RSS against size is
   the anchor. Its output and peak RSS are reported even when it was killed (marked so).

Workers: every fraction runs 1 worker; the full corpus also runs each of ``--workers``. Input words are the
whitespace-separated words of the decompressed inputs (``wc -w``); input tokens are datagen's ``input_tokens``
counter (SentencePiece pieces of the documents, with ``--spm-model``). Rates per core divide by
min(workers, cores). Prints Markdown tables with the CPU model and its AVX-512 flags.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
from typing import Dict, List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

from benchmarks.datagen_memory import cli_command, peak_rss_run  # noqa: E402
from benchmarks.ingest import cpu_description, list_files, subset, words_of  # noqa: E402

SPM_MODEL = os.path.join(ROOT, "data", "sample", "vocab", "30k-clean.model")
DATAGEN_CASES = {"L128": ["datagen.max_seq_length=128"], "L512": ["datagen.max_seq_length=512"]}
_COUNTER = re.compile(r"input_tokens ([\d,]+)")


def input_tokens(log: str) -> Optional[int]:
    """Datagen's ``input_tokens`` counter, from the last ``datagen:`` counters line of its log."""
    with open(log, encoding="utf-8", errors="replace") as f:
        found = _COUNTER.findall(f.read())
    return int(found[-1].replace(",", "")) if found else None


def train_vocab(documents: str, output: str, vocab_size: int, input_sentence_size: int) -> None:
    """VocabGen's own training call, outside TFX (run in a child process by :func:`main`)."""
    from components.vocab import vocab_lib
    from components.vocab.vocab_config import VocabConfig

    cfg = VocabConfig(vocab_size=vocab_size, input_sentence_size=input_sentence_size).validate()
    size, origin = vocab_lib.build_vocab(cfg, 12345, documents, output)
    print(json.dumps({"vocab_size": size, "origin": origin}))


def official_command(albert_dir: str, documents: str, output: str, spm_model: str) -> List[str]:
    """The official generator on every shard of ``documents``, at the ``small`` preset's datagen settings and L 512."""
    shards = sorted(os.path.join(documents, n) for n in os.listdir(documents) if n.endswith(".txt"))
    # --vocab_file is a required flag, but with --spm_model_file the official tokenizer builds its vocabulary from
    # the SentencePiece model and never opens it.
    vocab = spm_model
    return [sys.executable, os.path.join(albert_dir, "create_pretraining_data.py"), f"--input_file={','.join(shards)}",
            f"--output_file={output}", f"--spm_model_file={spm_model}", f"--vocab_file={vocab}",
            "--max_seq_length=512", "--max_predictions_per_seq=20", "--dupe_factor=2", "--random_seed=12345"]


def official_env(albert_dir: str, environ=None) -> dict:
    """The environment the official script runs in: the checkout's parent (where ``import albert`` finds it), the
    checkout, then the caller's ``PYTHONPATH`` (e.g. the folder holding ``tensorflow_hub``)."""
    environ = dict(os.environ if environ is None else environ)
    checkout = os.path.abspath(albert_dir)
    environ["PYTHONPATH"] = os.pathsep.join(
        p for p in (os.path.dirname(checkout), checkout, environ.get("PYTHONPATH")) if p)
    return environ


def per_core(amount: Optional[int], wall: float, workers: int) -> Optional[int]:
    return round(amount / wall / min(workers, os.cpu_count() or 1)) if amount else None


def main(argv=None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["_vocab"]:
        return train_vocab(argv[1], argv[2], int(argv[3]), int(argv[4]))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", required=True, help="folder with wikipedia/ and/or books/, e.g. ../shared/data/large")
    ap.add_argument("--fractions", type=float, nargs="+", default=[0.25, 0.5, 1.0])
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2], help="worker counts run on the full corpus")
    ap.add_argument("--steps", nargs="+", default=["ingest", "vocab", "datagen", "official"],
                    choices=["ingest", "vocab", "datagen", "official"])
    ap.add_argument("--spm-model", default=SPM_MODEL, help="the vocabulary datagen tokenizes with")
    ap.add_argument("--vocab-size", type=int, default=30000)
    ap.add_argument("--input-sentence-size", type=int, default=10_000_000)
    ap.add_argument("--official-albert", help="checkout of google-research/albert (create_pretraining_data.py)")
    ap.add_argument("--official-timeout", type=float, default=1200, help="seconds before the official run is killed")
    ap.add_argument("--official-fractions", type=float, nargs="+", help="fractions for the official run (default all)")
    ap.add_argument("--json", help="also write the rows to this JSON file")
    args = ap.parse_args(argv)
    if "official" in args.steps and not args.official_albert:
        args.steps = [s for s in args.steps if s != "official"]
    if args.official_albert and not os.path.exists(os.path.join(args.official_albert, "create_pretraining_data.py")):
        ap.error(f"--official-albert {args.official_albert} holds no create_pretraining_data.py")
    if args.official_albert and os.path.basename(os.path.abspath(args.official_albert)) != "albert":
        ap.error(f"--official-albert {args.official_albert}: the official code imports itself as `from albert import "
                 "tokenization`: put the checkout in a folder named albert")
    files = list_files(args.data_dir)
    work = tempfile.mkdtemp(prefix="corpus_scale_")
    rows: List[Dict] = []

    def record(row: Dict) -> None:
        rows.append(row)
        print(json.dumps(row), file=sys.stderr, flush=True)
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"cpu": cpu_description(), "rows": rows}, f, indent=1)

    try:
        for fraction in args.fractions:
            tag = f"f{fraction:g}"
            chosen = subset(files, fraction, os.path.join(work, tag, "input"))
            words = sum(words_of(p) for paths in chosen.values() for p in paths)
            common = {"fraction": fraction, "files": sum(map(len, chosen.values())), "input_words": words}
            workers_here = args.workers if fraction == max(args.fractions) else [1]
            documents = os.path.join(work, tag, "documents")
            log = os.path.join(work, tag, "log.txt")
            for workers in sorted(set(workers_here) | {1}) if "ingest" in args.steps else [1]:
                out = documents if workers == 1 else os.path.join(work, tag, f"documents-w{workers}")
                sources = [a for s in ("wikipedia", "books") if s in chosen
                           for a in (f"--{s}", os.path.join(work, tag, "input", s))]
                command = cli_command() + ["--log-file", log, "ingest", *sources, "--output", out, "--workers",
                                           str(workers), "--set", "corpus.num_shards=4"]
                m = {**peak_rss_run(command, log), "killed": False}
                if workers != 1:
                    shutil.rmtree(out, ignore_errors=True)
                if "ingest" in args.steps:
                    record({"step": "ingest", **common, "workers": workers, **m,
                            "words_per_s_per_core": per_core(words, m["wall_s"], workers)})
            tokens = None
            if "datagen" in args.steps:
                for case, overrides in DATAGEN_CASES.items():
                    for workers in workers_here:
                        out = os.path.join(work, tag, f"{case}-w{workers}")
                        case_log = os.path.join(work, tag, f"{case}-w{workers}.log")
                        command = cli_command() + ["--log-file", case_log, "make-pretraining-data", "--preset",
                                                   "small", "--input", documents, "--spm-model", args.spm_model,
                                                   "--output", out, "--workers", str(workers)]
                        for item in overrides:
                            command += ["--set", item]
                        m = {**peak_rss_run(command, case_log), "killed": False}
                        tokens = input_tokens(case_log) or tokens
                        with open(os.path.join(out, "stats.json")) as f:
                            instances = json.load(f)["splits"]["train"]["instances"]
                        shutil.rmtree(out, ignore_errors=True)
                        record({"step": f"datagen {case}", **common, "input_tokens": tokens, "workers": workers,
                                "train_instances": instances, **m,
                                "tokens_per_s_per_core": per_core(tokens, m["wall_s"], workers)})
            if "vocab" in args.steps:
                out = os.path.join(work, tag, "vocab")
                command = [sys.executable, "-m", "benchmarks.corpus_scale", "_vocab", documents, out,
                           str(args.vocab_size), str(args.input_sentence_size)]
                m = {**peak_rss_run(command, log), "killed": False}
                shutil.rmtree(out, ignore_errors=True)
                record({"step": "vocab", **common, "input_tokens": tokens, "workers": 1, **m,
                        "words_per_s_per_core": per_core(words, m["wall_s"], 1)})
            if "official" in args.steps and (args.official_fractions is None or fraction in args.official_fractions):
                out = os.path.join(work, tag, "official.tfrecord")
                m = peak_rss_run(official_command(args.official_albert, documents, out, args.spm_model),
                                 os.path.join(work, tag, "official.log"), timeout=args.official_timeout,
                                 env=official_env(args.official_albert))
                done = os.path.exists(out) and not m["killed"]
                if os.path.exists(out):
                    os.remove(out)
                record({"step": "official L512", **common, "input_tokens": tokens, "workers": 1, **m,
                        "finished": done, "tokens_per_s_per_core": per_core(tokens, m["wall_s"], 1) if done else None})
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"CPU: {cpu_description()}")
    print("| step | corpus | input words | input tokens | workers | wall (s) | per core /s | peak RSS (MiB) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        rate = r.get("tokens_per_s_per_core") or r.get("words_per_s_per_core")
        unit = "tokens" if r.get("tokens_per_s_per_core") else "words"
        wall = f"{r['wall_s']}" + (" (killed)" if r.get("killed") else "")
        tokens = f"{r['input_tokens']:,}" if r.get("input_tokens") else "-"
        print(f"| {r['step']} | {r['fraction']:g} | {r['input_words']:,} | {tokens} | "
              f"{r['workers']} | {wall} | {f'{rate:,} {unit}' if rate else '-'} | {r['peak_rss_mib']:,} |")


if __name__ == "__main__":
    main()
