"""End-to-end pretraining-data throughput: documents → tokenize → instances → sharded TFRecords, through the
Beam pipeline (``make_pretraining_data``, DirectRunner) at 1 and 2 workers, with peak RSS of the whole
process tree (multi-process DirectRunner workers are child processes).

    .venv/bin/python -m benchmarks.datagen --data-dir outputs/bench-docs [--workers 1 2] [--scale 1 4] [--repeat 1]
        [--vocab FILE] [--language CODE]

``--data-dir``: a documents folder (``documents-*.txt`` from ingestion) or any folder of ``*.txt`` in the
official format (one sentence per line, blank line between documents). ``--scale 1 4`` also runs on the
input repeated 4 times (as differently named files, so they are distinct documents) to show that peak
memory does not grow with the corpus. Input tokens are counted once, by tokenizing the input outside
the timed run; tokens/s per core = input tokens × dupe_factor / wall seconds / min(workers, cores).
Output tokens are the pieces of the written instances ([CLS]/[SEP] included, padding not: ``stats.json``'s
``tokens``). ``--vocab`` (alias ``--spm-model``): a SentencePiece model or a WordPiece ``vocab.txt``, read as
``make-pretraining-data --vocab`` reads it; ``--language`` sets ``language=`` (e.g. ``zh``: its profile's
``datagen.word_starts``), English's settings when not given.
Issue 4's goal: >= 1,000,000 input tokens/s per core at L=512, P=20, dupe_factor 1.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import resource
import shutil
import sys
import tempfile
import threading
import time
from typing import Dict, List

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from components.datagen.generate import tokenize_document  # noqa: E402
from components.datagen.instances import VocabInfo  # noqa: E402
from components.datagen.datagen_beam import RANDOM_POOL_MAX_CHARS, RANDOM_POOL_SIZE  # noqa: E402
from components.datagen.datagen_tool import expand_inputs, make_pretraining_data  # noqa: E402
from components.text.documents import parse_text_blocks  # noqa: E402
from components.text.tokenizers import TokenizerSpec, load_tokenizer  # noqa: E402
from components.text.vocab_files import vocabulary_kind  # noqa: E402
from pipeline.settings.configs import build_config  # noqa: E402

try:
    import psutil
except ImportError:  # pragma: no cover - psutil is in the environment; /proc fallback otherwise
    psutil = None


class TreeRssSampler:
    """Samples the summed RSS of this process and all its descendants every ``interval`` seconds and keeps
    the peak (RUSAGE_CHILDREN only reports the single largest child, not the sum). Also the CPU seconds
    (user + system) the tree spent meanwhile: this process's own, plus each child's last sample or, for
    children already reaped, RUSAGE_CHILDREN, whichever is larger."""

    def __init__(self, interval: float = 0.05):
        self.interval = interval
        self.peak = 0
        self.cpu_s = 0.0
        self._child_cpu: Dict[int, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _tree_rss(self) -> int:
        if psutil is None:
            with open("/proc/self/status") as f:
                return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmRSS"))
        me = psutil.Process()
        total = 0
        for p in [me] + me.children(recursive=True):
            try:
                total += p.memory_info().rss
                if p.pid != me.pid:
                    t = p.cpu_times()
                    self._child_cpu[p.pid] = t.user + t.system
            except psutil.Error:
                pass
        return total

    @staticmethod
    def _times():
        t = os.times()
        return t.user + t.system, t.children_user + t.children_system

    def _run(self):
        while not self._stop.is_set():
            self.peak = max(self.peak, self._tree_rss())
            self._stop.wait(self.interval)

    def __enter__(self):
        self._t0 = self._times()
        self.peak = self._tree_rss()
        self._child_cpu.clear()
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self._tree_rss())
        own, reaped = (b - a for a, b in zip(self._t0, self._times()))
        self.cpu_s = own + max(reaped, sum(self._child_cpu.values()))


def count_input_tokens(files: List[str], spm_model: str, config) -> Dict[str, int]:
    """Documents and pieces of the input, tokenized as ``make-pretraining-data`` tokenizes with ``config``."""
    with open(spm_model, "rb") as f:
        data = f.read()
    tok = load_tokenizer(data, TokenizerSpec.for_vocab(vocabulary_kind(data, spm_model), config.vocab), spm_model)
    vocab = VocabInfo.from_tokenizer(tok, config.datagen.word_starts or "official")
    docs = tokens = 0
    for path in files:
        with open(path, encoding="utf-8") as f:
            for sentences in parse_text_blocks(f):
                ids = tokenize_document(tok, sentences, vocab)
                if ids:
                    docs += 1
                    tokens += sum(int(s.shape[0]) for s in ids)
    return {"documents": docs, "input_tokens": tokens}


def scaled_inputs(files: List[str], scale: int, workdir: str) -> List[str]:
    """The input files repeated ``scale`` times under distinct names (distinct document ids)."""
    if scale == 1:
        return files
    out = []
    for k in range(scale):
        for path in files:
            link = os.path.join(workdir, f"copy{k}-{os.path.basename(path)}")
            if not os.path.exists(link):
                os.symlink(os.path.abspath(path), link)
            out.append(link)
    return out


def run_once(files: List[str], spm_model: str, config, workers: int, workdir: str):
    out = tempfile.mkdtemp(prefix="out-", dir=workdir)
    os.rmdir(out)
    with TreeRssSampler() as rss:
        t0 = time.perf_counter()
        stats = make_pretraining_data(files, spm_model, out, config, workers=workers)
        seconds = time.perf_counter() - t0
    out_bytes = sum(os.path.getsize(p) for p in glob.glob(os.path.join(out, "Split-*", "*")))
    shutil.rmtree(out, ignore_errors=True)
    instances = sum(s["instances"] for s in stats["splits"].values())
    out_tokens = sum(s.get("tokens", 0) for s in stats["splits"].values())
    return seconds, rss.cpu_s, rss.peak, instances, out_bytes, out_tokens


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", required=True, help="documents folder or folder of official-format *.txt")
    ap.add_argument("--spm-model", "--vocab", dest="spm_model", default="data/sample/vocab/30k-clean.model",
                    help="SentencePiece model or WordPiece vocab.txt")
    ap.add_argument("--language", help="set language= (e.g. zh); default: English's settings")
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--scale", type=int, nargs="+", default=[1, 4],
                    help="corpus multiples to run (peak memory should not grow with it)")
    ap.add_argument("--max-seq-length", type=int, default=512)
    ap.add_argument("--max-predictions", type=int, default=20)
    ap.add_argument("--dupe-factor", type=int, default=1)
    ap.add_argument("--sop-mode", default="official")
    ap.add_argument("--num-shards", type=int, default=8)
    ap.add_argument("--compression", default="GZIP", choices=["GZIP", ""])
    ap.add_argument("--compression-level", type=int, default=6, help="zlib level for GZIP (6: the default)")
    ap.add_argument("--pool-size", type=int, default=RANDOM_POOL_SIZE,
                    help="most documents in the random-document pool (official/nsp; the pipeline's default)")
    ap.add_argument("--pool-max-chars", type=int, default=RANDOM_POOL_MAX_CHARS,
                    help="most characters in the random-document pool (the pipeline's default); memory grows "
                         "with the corpus until the pool reaches one of the two bounds")
    ap.add_argument("--repeat", type=int, default=1, help="runs per setting; the fastest is reported")
    args = ap.parse_args()

    files = expand_inputs([args.data_dir])
    config = build_config("sample", overrides=[
        f"datagen.max_seq_length={args.max_seq_length}", f"datagen.max_predictions_per_seq={args.max_predictions}",
        f"datagen.dupe_factor={args.dupe_factor}", f"datagen.sop_mode={args.sop_mode}",
        f"datagen.num_shards={args.num_shards}", f"datagen.compression={args.compression}",
        f"datagen.compression_level={args.compression_level}", f"datagen.random_pool_documents={args.pool_size}",
        f"datagen.random_pool_max_chars={args.pool_max_chars}", "datagen.eval_fraction=0.01"]
        + ([f"language={args.language}"] if args.language else []))
    counted = count_input_tokens(files, args.spm_model, config)
    cores = os.cpu_count() or 1
    runs = []
    workdir = tempfile.mkdtemp(prefix="datagen_bench_")
    try:
        for scale in args.scale:
            inputs = scaled_inputs(files, scale, workdir)
            tokens = counted["input_tokens"] * scale
            for workers in args.workers:
                seconds, cpu_s, peak, instances, out_bytes, out_tokens = min(
                    (run_once(inputs, args.spm_model, config, workers, workdir)
                     for _ in range(args.repeat)), key=lambda r: r[1])
                used_cores = min(workers, cores)
                work = tokens * args.dupe_factor
                runs.append({
                    "scale": scale, "workers": workers, "wall_s": round(seconds, 2), "cpu_s": round(cpu_s, 2),
                    "input_tokens": tokens, "instances": instances, "output_mb": round(out_bytes / 1e6, 1),
                    "output_tokens": out_tokens,
                    "output_tokens_per_s_per_core_wall": round(out_tokens / seconds / used_cores),
                    "output_tokens_per_cpu_s": round(out_tokens / cpu_s),
                    "input_tokens_per_s": round(work / seconds),
                    "input_tokens_per_s_per_core_wall": round(work / seconds / used_cores),
                    "input_tokens_per_cpu_s": round(work / cpu_s),
                    "peak_rss_tree_mib": round(peak / 2**20, 1),
                })
                print(json.dumps(runs[-1]), file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    # Marginal rate between the smallest and largest corpus: removes the fixed cost (Beam pipeline
    # construction and runner start-up, worker start-up, tokenizer load), which does not grow with the corpus.
    marginal = []
    for workers in args.workers:
        rs = sorted((r for r in runs if r["workers"] == workers), key=lambda r: r["scale"])
        if len(rs) >= 2 and rs[-1]["cpu_s"] > rs[0]["cpu_s"]:
            extra = (rs[-1]["input_tokens"] - rs[0]["input_tokens"]) * args.dupe_factor
            marginal.append({"workers": workers, "scales": [rs[0]["scale"], rs[-1]["scale"]],
                             "input_tokens_per_cpu_s": round(extra / (rs[-1]["cpu_s"] - rs[0]["cpu_s"])),
                             "input_tokens_per_s_per_core_wall": round(
                                 extra / max(rs[-1]["wall_s"] - rs[0]["wall_s"], 1e-9) / min(workers, cores)),
                             "output_tokens_per_cpu_s": round((rs[-1]["output_tokens"] - rs[0]["output_tokens"])
                                                              / (rs[-1]["cpu_s"] - rs[0]["cpu_s"])),
                             "fixed_cpu_s_estimate": round(rs[0]["cpu_s"] - rs[0]["input_tokens"] * args.dupe_factor
                                                           * (rs[-1]["cpu_s"] - rs[0]["cpu_s"]) / extra, 2)})
    print(json.dumps({
        "data_dir": os.path.abspath(args.data_dir), "input_files": len(files), **counted, "cpu_count": cores,
        "vocab": args.spm_model, "language": args.language or "en (default settings)",
        "max_seq_length": args.max_seq_length, "max_predictions_per_seq": args.max_predictions,
        "dupe_factor": args.dupe_factor, "sop_mode": args.sop_mode, "compression": args.compression or "none",
        "compression_level": args.compression_level, "random_pool_documents": args.pool_size,
        "random_pool_max_chars": args.pool_max_chars,
        "peak_rss_self_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "runs": runs, "marginal": marginal}, indent=2))


if __name__ == "__main__":
    main()
