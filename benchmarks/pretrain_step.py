"""Pretraining train-step throughput: float32 vs mixed_bfloat16, XLA (jit_compile) on vs off.

The step is the Trainer's own (``trainer.train_step.make_train_step``: forward with stateless dropout, MLM + SOP
losses normalised over the global batch, gradients, global-norm clipping, LAMB update) on random ids of the
configured shape. Every variant runs in its
own subprocess (the Keras precision policy is process-global) and reports steps/s after warm-up::

    python -m benchmarks.pretrain_step --size albert-base --seq 128 --batch 8 --steps 5
    python -m benchmarks.pretrain_step --variants float32:0,mixed_bfloat16:0 --json out.json

CPU flags that matter for bf16 are printed (``avx512_bf16``, ``amx_bf16``): without AMX, TF's oneDNN
runs bf16 matmuls through AVX512-BF16 dot products only, and at small widths the casts around every op
cost more than they save. ``train.mixed_precision: auto`` makes this float32-vs-bf16 comparison itself at
run time, on the run's own shape (``trainer/precision.py``); these measurements set ``train.jit_compile``
(``trainer.train_step.resolve_jit_compile``).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def cpu_flags() -> dict:
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((line.split(":", 1)[1].split() for line in f if line.startswith("flags")), [])
        with open("/proc/cpuinfo") as f:
            model = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), "?")
    except OSError:
        return {}
    return {"model": model, "cores": os.cpu_count(),
            **{k: k in flags for k in ("avx512f", "avx512_bf16", "amx_bf16", "amx_tile")}}


def run_variant(size: str, seq: int, batch: int, preds: int, steps: int, warmup: int, precision: str,
                jit: bool) -> dict:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf
    import tf_keras

    from trainer.modeling_albert import AlbertConfig
    from trainer.optimization import create_optimizer
    from trainer.train_step import build_pretraining_model, make_train_step

    tf_keras.mixed_precision.set_global_policy(precision)
    tf.random.set_seed(0)
    config = AlbertConfig.named(size, vocab_size=30000)
    model = build_pretraining_model(config, "sop", seq, preds)
    optimizer = create_optimizer("lamb", 0.00176, 10, 1000)
    inputs = {"input_ids": tf.random.uniform([batch, seq], 5, 30000, tf.int32),
              "input_mask": tf.ones([batch, seq], tf.int32),
              "segment_ids": tf.concat([tf.zeros([batch, seq // 2], tf.int32), tf.ones([batch, seq - seq // 2], tf.int32)], 1),
              "masked_lm_positions": tf.random.uniform([batch, preds], 1, seq, tf.int32)}
    labels = {"masked_lm_ids": tf.random.uniform([batch, preds], 5, 30000, tf.int32),
              "masked_lm_weights": tf.ones([batch, preds]),
              "next_sentence_labels": tf.random.uniform([batch, 1], 0, 2, tf.int32)}
    # The Trainer's own step (stateless dropout, global-batch normalisation, clipping 1.0, the LAMB update), fed
    # the same batch again and again; metric 0 is the loss.
    train_step = make_train_step(model, optimizer, tf.distribute.get_strategy(), grad_accum_steps=1, clip_norm=1.0,
                                 seed=0, jit_compile=jit)
    feed = iter(tf.data.Dataset.from_tensors((inputs, labels)).repeat())

    def step(inputs, labels):
        return train_step(feed)[0]

    t0 = time.perf_counter()
    step(inputs, labels).numpy()
    first = time.perf_counter() - t0
    for _ in range(warmup):
        step(inputs, labels).numpy()
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        loss = float(step(inputs, labels).numpy())
        times.append(time.perf_counter() - t0)
    times.sort()
    median = times[len(times) // 2]
    return {"precision": precision, "jit_compile": jit, "size": size, "seq": seq, "batch": batch,
            "first_step_s": round(first, 2), "median_step_s": round(median, 4),
            "steps_per_sec": round(1.0 / median, 3), "sequences_per_sec": round(batch / median, 2),
            "loss_finite": loss == loss}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--size", default="albert-base")
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--preds", type=int, default=20)
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--variants", default="float32:0,mixed_bfloat16:0,float32:1,mixed_bfloat16:1",
                   help="precision:jit pairs")
    p.add_argument("--json", help="also write the results here")
    p.add_argument("--worker", nargs=2, metavar=("PRECISION", "JIT"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        print("RESULT " + json.dumps(run_variant(args.size, args.seq, args.batch, args.preds, args.steps,
                                                 args.warmup, args.worker[0], args.worker[1] == "1")))
        return 0
    results = {"cpu": cpu_flags(), "variants": []}
    print(json.dumps(results["cpu"]))
    for variant in args.variants.split(","):
        precision, jit = variant.split(":")
        cmd = [sys.executable, "-m", __spec__.name, "--size", args.size, "--seq", str(args.seq), "--batch",
               str(args.batch), "--preds", str(args.preds), "--steps", str(args.steps), "--warmup",
               str(args.warmup), "--worker", precision, jit]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
        row = json.loads(lines[-1][7:]) if lines else {"precision": precision, "jit_compile": jit == "1",
                                                          "error": proc.stderr[-800:]}
        results["variants"].append(row)
        print(json.dumps(row), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
