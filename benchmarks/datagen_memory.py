"""Peak memory of pretraining-data generation against corpus size, through the real entry point.

Each corpus size runs ``albert-pipeline make-pretraining-data`` in its own process (one worker by default), and
its peak RSS is the kernel's (``wait4``'s ``ru_maxrss``: what ``/usr/bin/time -v`` reports as "Maximum resident
set size"; with more workers, the largest process of the tree).

    .venv/bin/python -m benchmarks.datagen_memory --data-dir ../shared/data/books/gutenberg [--scale 1 4 16]

The corpus: every ``*.txt`` under ``--data-dir`` cut into documents of ``--doc-lines`` lines (as
``benchmarks/datagen_core.py`` does; the Gutenberg books at 500 lines: 224 documents, 1.45 M tokens), written once
in the official format; scale N gives the command N copies under distinct file names (distinct documents).
Settings: the ``sample`` preset with ``datagen.max_seq_length=512`` (official SOP, its random-document pool at the
default bounds), plus any ``--set``. Prints a table of input tokens vs peak RSS and wall time, with the CPU model.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Dict, List, Optional, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

from benchmarks.datagen_core import read_documents  # noqa: E402
from trainer import precision  # noqa: E402  (imports no TensorFlow)


def cpu_model() -> str:
    """The CPU model as ``lscpu`` names it, and the core count."""
    return f"{precision.cpu_model()}, {os.cpu_count()} cores"


def cli_command() -> List[str]:
    """The installed ``albert-pipeline`` console script beside this interpreter, else the same ``main``."""
    script = os.path.join(os.path.dirname(sys.executable), "albert-pipeline")
    return [script] if os.path.exists(script) else [sys.executable, "-m", "pipeline.cli"]


def write_corpus(docs: List[List[str]], folder: str) -> str:
    os.makedirs(folder)
    path = os.path.join(folder, "documents-00000.txt")
    with open(path, "w", encoding="utf-8") as f:
        for d in docs:
            f.write("\n".join(d) + "\n\n")
    return path


def scaled(base: str, scale: int, folder: str) -> str:
    """A folder of ``scale`` links to ``base`` under distinct names (so distinct document ids)."""
    os.makedirs(folder)
    for k in range(scale):
        os.symlink(base, os.path.join(folder, f"documents-{k:05d}.txt"))
    return folder


def count_tokens(docs: List[List[str]], spm_model: str) -> int:
    from components.datagen.generate import tokenize_document
    from components.datagen.instances import VocabInfo
    from components.text.tokenization import AlbertTokenizer

    tok = AlbertTokenizer(spm_model)
    vocab = VocabInfo.from_tokenizer(tok)
    return sum(tokenize_document(tok, d, vocab).num_tokens for d in docs)


# Linux keeps a process's peak RSS across exec: a child forked from a large process (a pytest session that has
# loaded TensorFlow) starts with the parent's peak. So the command is started from a fresh, small launcher, and
# the launcher reports the kernel's figure for its one child.
_LAUNCHER = """import os, subprocess, sys
proc = subprocess.Popen(sys.argv[2:])
_, status, usage = os.wait4(proc.pid, 0)
with open(sys.argv[1], "w") as f:
    f.write(str(usage.ru_maxrss))
sys.exit(os.waitstatus_to_exitcode(status))
"""


def peak_rss(command: List[str], **popen) -> Tuple[int, float]:
    """Run ``command`` to its end; (exit code, its peak RSS in MiB as the kernel counts it: ``ru_maxrss``)."""
    with tempfile.TemporaryDirectory() as tmp:
        result = os.path.join(tmp, "maxrss")
        code = subprocess.run([sys.executable, "-c", _LAUNCHER, result, *command], **popen).returncode
        with open(result) as f:
            return code, int(f.read()) / 1024


def peak_rss_run(command: List[str], log: str, timeout: Optional[float] = None,
                 env: Optional[Dict[str, str]] = None) -> Dict[str, float]:
    """Run ``command`` (output appended to ``log``, environment ``env`` or this one); its peak RSS in MiB from the
    kernel, and its wall seconds. With ``timeout`` the command is killed after that many seconds, and the result
    says whether it was (``killed``). A failure other than that kill stops the benchmark, naming the log."""
    if timeout:
        command = ["timeout", "-s", "KILL", str(int(timeout)), *command]
    t0 = time.perf_counter()
    with open(log, "ab") as out:
        code, mib = peak_rss(command, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT, env=env)
    killed = bool(timeout) and code in (124, 137, -9)
    if code and not killed:
        raise SystemExit(f"{' '.join(command)} failed with exit code {code}; see {log}")
    result = {"peak_rss_mib": round(mib, 1), "wall_s": round(time.perf_counter() - t0, 1)}
    return {**result, "killed": killed} if timeout else result


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", required=True, help="folder of *.txt, e.g. ../shared/data/books/gutenberg")
    ap.add_argument("--doc-lines", type=int, default=500, help="lines per document (0: split at blank lines)")
    ap.add_argument("--max-chars", type=int, default=20_000_000, help="stop reading after this many characters")
    ap.add_argument("--scale", type=int, nargs="+", default=[1, 4, 16], help="corpus copies per run")
    ap.add_argument("--spm-model", default=os.path.join(ROOT, "data", "sample", "vocab", "30k-clean.model"))
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--set", dest="overrides", action="append", default=[], help="section.key=value (repeatable)")
    ap.add_argument("--json", help="also write the rows to this JSON file")
    args = ap.parse_args(argv)
    if not os.path.isdir(args.data_dir):
        ap.error(f"--data-dir {args.data_dir} does not exist")  # before anything is written
    docs = read_documents(args.data_dir, args.max_chars, args.doc_lines)
    if not docs:
        ap.error(f"--data-dir {args.data_dir} holds no *.txt text")
    overrides = ["datagen.max_seq_length=512"] + args.overrides
    tokens = count_tokens(docs, args.spm_model)
    work = tempfile.mkdtemp(prefix="datagen_memory_")
    rows = []
    try:
        base = write_corpus(docs, os.path.join(work, "corpus"))
        for scale in args.scale:
            inputs = scaled(base, scale, os.path.join(work, f"x{scale}"))
            command = cli_command() + ["--log-file", os.path.join(work, f"x{scale}.log"), "make-pretraining-data",
                                       "--preset", "sample", "--input", inputs, "--spm-model", args.spm_model,
                                       "--output", os.path.join(work, f"out-x{scale}"), "--workers",
                                       str(args.workers)]
            for item in overrides:
                command += ["--set", item]
            row = {"scale": scale, "documents": len(docs) * scale, "input_tokens": tokens * scale,
                   **peak_rss_run(command, os.path.join(work, f"x{scale}.log"))}
            shutil.rmtree(os.path.join(work, f"out-x{scale}"), ignore_errors=True)
            rows.append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"make-pretraining-data, --preset sample --set {' --set '.join(overrides)}, {args.workers} worker(s); "
          f"CPU: {cpu_model()}")
    print("| corpus | documents | input tokens | peak RSS (MiB) | wall (s) |")
    print("|---|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['scale']}x | {r['documents']:,} | {r['input_tokens']:,} | {r['peak_rss_mib']:.0f} | "
              f"{r['wall_s']:.0f} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"cpu": cpu_model(), "overrides": overrides, "workers": args.workers, "rows": rows}, f,
                      indent=2)


if __name__ == "__main__":
    main()
