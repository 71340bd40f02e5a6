"""The data gate's cost beside PretrainingDataGen's, against corpus size (issue 55): node time and peak memory.

    .venv/bin/python -m benchmarks.data_gate [--data-dir DIR] [--fractions 0.25 0.5 1] [--documents-dir DIR]
        [--passages squad race] [--steps gate contamination datagen] [--json FILE]

``--data-dir`` (default ``$ALBERT_TFX_DATA_DIR/large``, ``../shared/data/large`` when unset) is laid out as
``benchmarks/ingest.py`` expects (``wikipedia/`` and/or ``books/``); a fraction f takes the first f of each source's
files in sorted order, so the sizes are nested. Per fraction:

1. ``albert-pipeline ingest`` (CorpusGen's Beam code, 1 worker, 4 document shards) makes the span's documents, once:
   with ``--documents-dir DIR`` they are kept in ``DIR/f<fraction>/documents`` and a later run reads them from there;
2. the gate: :func:`components.datagate.datagate_beam.gate_documents`, the ``DataGate`` node's Beam graph (statistics,
   checks, the result's files) on those documents, 1 worker (DirectRunner in memory, as ``--workers 1`` runs the
   other nodes), the default limits, no baseline (the first span: the baseline's cost is reading one small
   statistics file); then again with contamination (``gate + contamination``) against the dev passages
   ``--passages`` names from the data root (``squad``: ``squad/dev-v1.1.json``, ``race``: ``race/RACE``), as a DAG
   reading those benchmarks gives the node;
3. PretrainingDataGen: ``albert-pipeline make-pretraining-data`` (the node's Beam code, ``components.datagen.datagen_beam``)
   at the ``small`` preset (official SOP, dupe 2, L 128) with the bundled ``30k-clean.model``, 1 worker.

Steps 2 and 3 are each one process started from a small launcher, which reports that process tree's peak RSS
(``ru_maxrss``: the largest process, as in ``benchmarks/datagen_memory.py``), its CPU seconds (user + system, the
process and the children it waited for), its wall seconds and the host's load average when it ended (on a shared
host, CPU seconds are the figure to compare: wall time is also the other work's). Prints a Markdown table with the
CPU and the gate's share of datagen's wall and CPU time.
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
from typing import Dict, List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

from benchmarks.corpus_scale import input_tokens  # noqa: E402
from benchmarks.datagen_memory import cli_command  # noqa: E402
from benchmarks.ingest import cpu_description, list_files, subset, words_of  # noqa: E402

SPM_MODEL = os.path.join(ROOT, "data", "sample", "vocab", "30k-clean.model")
PASSAGES = {"squad": os.path.join("squad", "dev-v1.1.json"), "race": os.path.join("race", "RACE")}

# Started fresh, so the figures are the command's own (a child forked from a large process starts with its peak RSS).
_LAUNCHER = """import json, os, subprocess, sys
proc = subprocess.Popen(sys.argv[2:])
_, status, usage = os.wait4(proc.pid, 0)
with open(sys.argv[1], "w") as f:
    json.dump({"maxrss_kib": usage.ru_maxrss, "user_s": usage.ru_utime, "sys_s": usage.ru_stime}, f)
sys.exit(os.waitstatus_to_exitcode(status))
"""


def data_root() -> str:
    """The shared data folder: ``$ALBERT_TFX_DATA_DIR``, or ``../shared/data`` beside this checkout (as the tests)."""
    return os.environ.get("ALBERT_TFX_DATA_DIR") or os.path.join(os.path.dirname(ROOT), "shared", "data")


def measure(command: List[str], log: str) -> Dict[str, float]:
    """Run ``command`` (output appended to ``log``) from a fresh launcher: its wall and CPU seconds and peak RSS (MiB).
    A failure stops the benchmark, naming the log."""
    with tempfile.TemporaryDirectory() as tmp:
        result = os.path.join(tmp, "usage.json")
        t0 = time.perf_counter()
        with open(log, "ab") as out:
            code = subprocess.run([sys.executable, "-c", _LAUNCHER, result, *command], stdout=out,
                                  stderr=subprocess.STDOUT, cwd=ROOT).returncode
        wall = time.perf_counter() - t0
        if code:
            raise SystemExit(f"{' '.join(command)} failed with exit code {code}; see {log}")
        with open(result) as f:
            usage = json.load(f)
    return {"wall_s": round(wall, 1), "cpu_s": round(usage["user_s"] + usage["sys_s"], 1),
            "peak_rss_mib": round(usage["maxrss_kib"] / 1024, 1), "load_1min": round(os.getloadavg()[0], 2)}


def run_gate(documents: str, output: str, squad_files: List[str], race_dir: Optional[str]) -> None:
    """The DataGate node's work on ``documents`` (run in a child process by :func:`main`); prints the summary's
    document count and checks."""
    from components.datagate import datagate_beam
    from components.beam_options import local_args

    passages = datagate_beam.dev_passages(squad_files, race_dir) if squad_files or race_dir else []
    summary = datagate_beam.gate_documents(documents, output, span=1, passages=passages, beam_args=local_args(1))
    print(json.dumps({"documents": summary.get("documents"), "passed": summary.get("passed"),
                      "passages": len(passages)}))


def gate_command(documents: str, output: str, passages: Dict[str, str]) -> List[str]:
    command = [sys.executable, "-m", "benchmarks.data_gate", "_gate", documents, output]
    if "squad" in passages:
        command += ["--squad", passages["squad"]]
    if "race" in passages:
        command += ["--race", passages["race"]]
    return command


def datagen_command(documents: str, output: str, log: str, spm_model: str) -> List[str]:
    return cli_command() + ["--log-file", log, "make-pretraining-data", "--preset", "small", "--input", documents,
                            "--spm-model", spm_model, "--output", output, "--workers", "1"]


def ingest_command(inputs: str, chosen: Dict[str, List[str]], output: str, log: str) -> List[str]:
    sources = [a for s in ("wikipedia", "books") if s in chosen for a in (f"--{s}", os.path.join(inputs, s))]
    return cli_command() + ["--log-file", log, "ingest", *sources, "--output", output, "--workers", "1", "--set",
                            "corpus.num_shards=4"]


def main(argv=None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["_gate"]:
        ap = argparse.ArgumentParser()
        ap.add_argument("documents")
        ap.add_argument("output")
        ap.add_argument("--squad", action="append", default=[])
        ap.add_argument("--race")
        a = ap.parse_args(argv[1:])
        return run_gate(a.documents, a.output, a.squad, a.race)
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", help="folder with wikipedia/ and/or books/ (default: $ALBERT_TFX_DATA_DIR/large)")
    ap.add_argument("--fractions", type=float, nargs="+", default=[0.25, 0.5, 1.0])
    ap.add_argument("--documents-dir", help="keep each fraction's documents here, and reuse those found here")
    ap.add_argument("--passages", nargs="*", default=["squad", "race"], choices=sorted(PASSAGES),
                    help="the dev passages the gate checks for contamination, from the data root (where present)")
    ap.add_argument("--steps", nargs="+", default=["gate", "contamination", "datagen"],
                    choices=["gate", "contamination", "datagen"], help="what to measure per fraction (after ingest)")
    ap.add_argument("--spm-model", default=SPM_MODEL, help="the vocabulary datagen tokenizes with")
    ap.add_argument("--json", help="also write the rows to this JSON file")
    args = ap.parse_args(argv)
    data_dir = args.data_dir or os.path.join(data_root(), "large")
    passages = {k: os.path.join(data_root(), PASSAGES[k]) for k in args.passages
                if os.path.exists(os.path.join(data_root(), PASSAGES[k]))}
    files = list_files(data_dir)
    from components.datagate.datagate_beam import read_statistics
    work = tempfile.mkdtemp(prefix="data_gate_")
    rows: List[Dict] = []

    def record(row: Dict) -> None:
        rows.append(row)
        print(json.dumps(row), file=sys.stderr, flush=True)
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"cpu": cpu_description(), "passages": sorted(passages), "rows": rows}, f, indent=1)

    try:
        for fraction in args.fractions:
            tag = f"f{fraction:g}"
            inputs = os.path.join(work, tag, "input")
            chosen = subset(files, fraction, inputs)
            common = {"fraction": fraction, "files": sum(map(len, chosen.values())),
                      "input_words": sum(words_of(p) for paths in chosen.values() for p in paths)}
            log = os.path.join(work, tag, "log.txt")
            kept = os.path.join(args.documents_dir, tag, "documents") if args.documents_dir else None
            documents = kept or os.path.join(work, tag, "documents")
            if not (kept and os.path.exists(os.path.join(kept, "counts.json"))):
                record({"step": "ingest", **common, **measure(ingest_command(inputs, chosen, documents, log), log)})
            gates = {}
            for step, given in (("gate", {}), ("gate + contamination", passages)):
                if step.split(" + ")[-1] not in args.steps or (step != "gate" and not given):
                    continue
                out = os.path.join(work, tag, step.replace(" + ", "-"))
                gates[step] = measure(gate_command(documents, out, given), log)
                with open(os.path.join(out, "gate.json")) as f:
                    summary = json.load(f)
                stats = read_statistics(out)
                record({"step": step, **common, "documents": summary["documents"],
                        "characters": summary["characters"], "passed": summary["passed"],
                        "sample_rate": getattr(stats, "sample_rate", 1.0),
                        "measured_documents": stats.total().counts["documents"],
                        "measured_characters": stats.total().counts["characters"], **gates[step]})
            if "datagen" not in args.steps:
                continue
            out = os.path.join(work, tag, "datagen")
            datagen_log = os.path.join(work, tag, "datagen.log")
            datagen = measure(datagen_command(documents, out, datagen_log, args.spm_model), datagen_log)
            shutil.rmtree(out, ignore_errors=True)
            record({"step": "datagen", **common, "input_tokens": input_tokens(datagen_log), **datagen})
            for step, gate in gates.items():
                record({"step": f"{step} / datagen", **common, "wall": round(gate["wall_s"] / datagen["wall_s"], 3),
                        "cpu": round(gate["cpu_s"] / datagen["cpu_s"], 3)})
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"CPU: {cpu_description()}; dev passages: {', '.join(sorted(passages)) or 'none'}")
    print("| corpus | input words | step | wall (s) | CPU (s) | peak RSS (MiB) |")
    print("|---:|---:|---|---:|---:|---:|")
    for r in rows:
        if r["step"].endswith(" / datagen"):
            print(f"| {r['fraction']:g} | {r['input_words']:,} | {r['step']} | {r['wall']:.1%} | {r['cpu']:.1%} | |")
        else:
            print(f"| {r['fraction']:g} | {r['input_words']:,} | {r['step']} | {r['wall_s']} | {r['cpu_s']} | "
                  f"{r['peak_rss_mib']:,} |")


if __name__ == "__main__":
    main()
