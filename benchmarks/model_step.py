"""Training-step throughput on CPU: this implementation (TF/tf_keras) next to Hugging Face ``transformers``'
``AlbertForPreTraining`` (PyTorch), same shape, same batch, same run, in float32 and bf16, each as a fraction of the
measured matmul peak of this CPU in that precision.

For each (sequence length, batch) case both frameworks train on the same random batch (token ids, a padded tail,
two segments, ``P`` masked positions, SOP labels), float32, dropout 0 (ALBERT v2), one optimizer step per batch with
global-norm clipping 1.0:

* ours: the Trainer's own step, ``trainer.train_step.make_train_step`` (forward with stateless dropout, MLM + SOP
  losses normalised over the global batch, gradient, clip, LAMB or AdamW update); ``--jit`` adds a run with
  ``jit_compile=True`` (XLA for the forward/backward pass, as the Trainer applies it).
* torch: ``AlbertForPreTraining(input_ids, attention_mask, token_type_ids, labels, sentence_order_label)``,
  ``loss.backward()``, ``clip_grad_norm_``, ``torch.optim.AdamW``.

Precisions (``--precisions``): ``float32``; ``bf16`` = ours under the ``mixed_bfloat16`` Keras policy (what
``train.mixed_precision`` selects), torch under ``torch.autocast("cpu", dtype=torch.bfloat16)``. Shapes
(``--size``): ``albert-base`` (vocab 30k) and ``small`` (the ``small`` preset's encoder: H 256, L 4, E 128, 4 heads,
FFN 1024, vocab 8k).

The physical limit is measured, not looked up: a TF matmul of 2048 x 2048 in each precision, best of several runs,
in its own process with the same threads, once before the first case and again after each case; the best reading
is the peak (a host that slows down for a while, as shared VMs do, lowers a reading, never raises it), and every
reading is kept in ``--json``. The useful work of a step is counted analytically as the matmul FLOPs of
the official step (3 x forward; encoder per layer ``4 H^2 + 2 H F`` MACs per token plus ``2 T H`` for attention,
the embedding projection, the MLM head at the ``P`` masked positions, the pooler), the same count for both
frameworks, so "% of peak" says how much of the step's necessary work ran at matmul speed.

Each framework runs each case in its own subprocess (its own thread pools and memory), ours then torch case by
case, with the same number of threads (``--threads``, default all cores). Printed: steps/s and sequences/s (median over the timed
steps) per framework and the ratio ours / torch; ``--json`` writes them to a file.

Note on the work done: the MLM head here (as in the official code) computes logits only at the ``P`` masked
positions; ``transformers`` computes them at every position (``[B, T, V]``) and ignores the unmasked ones in the
loss. This is part of what is being compared: the same training step, each as its library implements it.

    .venv/bin/python -m benchmarks.model_step                 # ~3 min on 2 cores
    .venv/bin/python -m benchmarks.model_step --size small --cases 128x32 --precisions float32,bf16
    .venv/bin/python -m benchmarks.model_step --jit --steps 5 --cases 128x8,512x2
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import time
from typing import Dict, List, Tuple

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
from trainer.precision import cpu_model  # noqa: E402  (imports no TensorFlow)

MAX_PREDICTIONS = {128: 20, 512: 76}  # the official max_predictions_per_seq for these lengths


def make_batch(seq_len: int, batch: int, vocab: int, seed: int = 0) -> Dict[str, "object"]:
    import numpy as np

    rng = np.random.RandomState(seed)
    p = MAX_PREDICTIONS.get(seq_len, max(1, int(round(seq_len * 0.15))))
    ids = rng.randint(5, vocab, size=(batch, seq_len)).astype(np.int32)
    mask = np.ones_like(ids)
    segment = np.zeros_like(ids)
    for b in range(batch):
        length = seq_len - (seq_len // 8 if b % 2 else 0)  # every other row has a padded tail
        mask[b, length:] = 0
        ids[b, length:] = 0
        segment[b, length // 2:length] = 1
        ids[b, 0] = 2
    positions = np.stack([np.sort(rng.choice(np.arange(1, seq_len - seq_len // 8), p, replace=False))
                          for _ in range(batch)]).astype(np.int32)
    labels = rng.randint(5, vocab, size=(batch, p)).astype(np.int32)
    sop = rng.randint(0, 2, size=(batch,)).astype(np.int32)
    return {"input_ids": ids, "input_mask": mask, "segment_ids": segment, "masked_lm_positions": positions,
            "masked_lm_ids": labels, "masked_lm_weights": np.ones((batch, p), np.float32),
            "next_sentence_labels": sop}


def _timed(step, warmup: int, steps: int) -> Tuple[List[float], float]:
    t0 = time.perf_counter()
    for _ in range(warmup):
        step()
    warm = time.perf_counter() - t0
    times = []
    for _ in range(steps):
        t = time.perf_counter()
        step()
        times.append(time.perf_counter() - t)
    return times, warm


# ---------------------------------------------------------------------------------------------------------------------
# Workers (one framework per process)
# ---------------------------------------------------------------------------------------------------------------------
def worker_ours(args) -> Dict[str, object]:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    tf.config.threading.set_inter_op_parallelism_threads(args.threads)
    import tf_keras

    from trainer.modeling_albert import AlbertConfig, AlbertForPreTraining
    from trainer.optimization import create_optimizer
    from trainer.train_step import make_train_step

    tf_keras.mixed_precision.set_global_policy("mixed_bfloat16" if args.precision == "bf16" else "float32")
    tf_keras.utils.set_random_seed(0)
    c = BASE_CONFIGS[args.size]
    config = AlbertConfig.named("albert-base", vocab_size=c["V"], embedding_size=c["E"], hidden_size=c["H"],
                                num_hidden_layers=c["L"], num_attention_heads=c["heads"], intermediate_size=c["F"])
    results = {}
    for seq_len, batch in args.case_list:
        data = make_batch(seq_len, batch, config.vocab_size)
        model = AlbertForPreTraining(config)
        model(model.dummy_inputs(1, seq_len, MAX_PREDICTIONS.get(seq_len, 1)))
        optimizer = create_optimizer(args.optimizer, 1e-4, 10, 1000)
        inputs = {k: tf.constant(data[k]) for k in ("input_ids", "input_mask", "segment_ids", "masked_lm_positions")}
        labels = {k: tf.constant(data[k]) for k in ("masked_lm_ids", "masked_lm_weights", "next_sentence_labels")}

        feed = iter(tf.data.Dataset.from_tensors((inputs, labels)).repeat())
        for variant in args.variants:
            # The Trainer's own step (stateless dropout, global-batch normalisation, clipping 1.0, the update),
            # built afresh per variant as the Trainer builds it once per run; metric 0 is the loss.
            fn = make_train_step(model, optimizer, tf.distribute.get_strategy(), grad_accum_steps=1, clip_norm=1.0,
                                 seed=0, jit_compile=(variant == "xla"))
            loss = []
            times, warm = _timed(lambda: loss.append(float(fn(feed)[0])), args.warmup, args.steps)
            results[f"{seq_len}x{batch}/{args.precision}/{variant}"] = {"times": times, "warmup_s": warm, "final_loss": loss[-1]}
    return results


def worker_torch(args) -> Dict[str, object]:
    from benchmarks import hf_packages

    hf_packages.use()
    import torch
    import transformers

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    c = BASE_CONFIGS[args.size]
    config = transformers.AlbertConfig(
        vocab_size=c["V"], embedding_size=c["E"], hidden_size=c["H"], num_hidden_layers=c["L"],
        num_attention_heads=c["heads"], intermediate_size=c["F"], hidden_act="gelu_new",
        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, classifier_dropout_prob=0.0,
        max_position_embeddings=512, type_vocab_size=2, layer_norm_eps=1e-12)
    results = {}
    for seq_len, batch in args.case_list:
        data = make_batch(seq_len, batch, config.vocab_size)
        model = transformers.AlbertForPreTraining(config).train()
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01, eps=1e-6)
        labels = torch.full((batch, seq_len), -100, dtype=torch.long)
        positions = torch.as_tensor(data["masked_lm_positions"], dtype=torch.long)
        labels.scatter_(1, positions, torch.as_tensor(data["masked_lm_ids"], dtype=torch.long))
        kwargs = dict(input_ids=torch.as_tensor(data["input_ids"], dtype=torch.long),
                      attention_mask=torch.as_tensor(data["input_mask"], dtype=torch.long),
                      token_type_ids=torch.as_tensor(data["segment_ids"], dtype=torch.long),
                      labels=labels,
                      sentence_order_label=torch.as_tensor(data["next_sentence_labels"], dtype=torch.long))
        loss = []

        autocast = (torch.autocast("cpu", dtype=torch.bfloat16) if args.precision == "bf16"
                    else contextlib.nullcontext())

        def step():
            optimizer.zero_grad(set_to_none=True)
            with autocast:
                out = model(**kwargs)
            out.loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            loss.append(float(out.loss))

        times, warm = _timed(step, args.warmup, args.steps)
        results[f"{seq_len}x{batch}/{args.precision}/torch"] = {"times": times, "warmup_s": warm, "final_loss": loss[-1],
                                               "attn_implementation": getattr(config, "_attn_implementation", None)}
    return results


def worker_peak(args) -> Dict[str, float]:
    """Best GFLOP/s of a 2048 x 2048 TF matmul in each precision: this CPU's physical limit for the step's matmuls."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    tf.config.threading.set_inter_op_parallelism_threads(args.threads)
    n, out = 2048, {}
    for name, dtype in (("float32", tf.float32), ("bf16", tf.bfloat16)):
        a = tf.cast(tf.random.stateless_normal([n, n], seed=[0, 1]), dtype)
        b = tf.cast(tf.random.stateless_normal([n, n], seed=[0, 2]), dtype)
        matmul = tf.function(lambda x, y: tf.matmul(x, y))
        matmul(a, b).numpy()
        best = min(_timed(lambda: matmul(a, b).numpy(), 0, 8)[0])
        out[name] = 2 * n ** 3 / best / 1e9
    return out


def step_flops(size: str, seq_len: int, batch: int) -> float:
    """Matmul FLOPs of one official training step (forward + backward = 3 x forward; module docstring)."""
    c = BASE_CONFIGS[size]
    H, E, F, L, V = c["H"], c["E"], c["F"], c["L"], c["V"]
    p = MAX_PREDICTIONS.get(seq_len, max(1, int(round(seq_len * 0.15))))
    tokens = batch * seq_len
    macs = tokens * (E * H + L * (4 * H * H + 2 * H * F + 2 * seq_len * H))  # projection, layers, attention
    macs += batch * p * (H * E + E * V) + batch * (H * H + 2 * H)  # MLM head at the masked positions, pooler + SOP
    return 3 * 2 * macs


# Paper Table 1 shapes and the `small` preset's encoder (kept here so the torch worker does not import TensorFlow).
BASE_CONFIGS = {
    "albert-base": dict(E=128, H=768, L=12, heads=12, F=3072, V=30000),
    "albert-large": dict(E=128, H=1024, L=24, heads=16, F=4096, V=30000),
    "small": dict(E=128, H=256, L=4, heads=4, F=1024, V=8000),
}


# ---------------------------------------------------------------------------------------------------------------------
# Driver
# ---------------------------------------------------------------------------------------------------------------------
def parse_cases(text: str) -> List[Tuple[int, int]]:
    out = []
    for item in text.split(","):
        seq, batch = item.lower().split("x")
        out.append((int(seq), int(batch)))
    return out


def run_worker(which: str, argv: List[str]) -> Dict[str, object]:
    cmd = [sys.executable, "-m", __spec__.name, "--worker", which] + argv
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode:
        sys.stderr.write(proc.stderr[-5000:])
        raise SystemExit(f"{which} worker failed ({proc.returncode})")
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    sys.stderr.write(proc.stdout[-3000:] + proc.stderr[-3000:])
    raise SystemExit(f"{which} worker printed no result")


def summarize(times: List[float], batch: int) -> Dict[str, float]:
    median = statistics.median(times)
    return {"steps_per_s": 1.0 / median, "sequences_per_s": batch / median, "median_step_s": median,
            "min_step_s": min(times)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", default="albert-base", choices=sorted(BASE_CONFIGS))
    parser.add_argument("--cases", default="128x8,512x2", help="comma-separated SEQxBATCH")
    parser.add_argument("--precisions", default="float32", help="comma-separated: float32, bf16")
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--optimizer", default="lamb", choices=["lamb", "adamw"], help="ours (torch: AdamW)")
    parser.add_argument("--jit", action="store_true", help="also time ours with jit_compile=True (XLA)")
    parser.add_argument("--only-xla", action="store_true", help="time ours with jit_compile=True only")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--json", help="write the results here")
    parser.add_argument("--worker", choices=["ours", "torch", "peak"], help=argparse.SUPPRESS)
    parser.add_argument("--precision", default="float32", choices=["float32", "bf16"], help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.case_list = parse_cases(args.cases)
    args.variants = ["xla"] if args.only_xla else (["graph", "xla"] if args.jit else ["graph"])
    precisions = [p.strip() for p in args.precisions.split(",") if p.strip()]
    if not precisions or set(precisions) - {"float32", "bf16"}:
        parser.error(f"--precisions takes float32 and/or bf16, got {args.precisions!r}")

    if args.worker:
        workers = {"ours": worker_ours, "torch": worker_torch, "peak": worker_peak}
        print("RESULT " + json.dumps(workers[args.worker](args)))
        return 0

    passthrough = ["--size", args.size, "--warmup", str(args.warmup), "--steps",
                   str(args.steps), "--optimizer", args.optimizer, "--threads", str(args.threads)]
    if args.jit:
        passthrough.append("--jit")
    if args.only_xla:
        passthrough.append("--only-xla")
    t0 = time.time()
    load_before = os.getloadavg()
    peak_readings = [run_worker("peak", passthrough)]
    ours, theirs = {}, {}
    rows = []
    print(f"{args.size} on {cpu_model()}, {args.threads} threads, {args.warmup} warmup + {args.steps} timed steps "
          f"(median); ours: {args.optimizer.upper()}, torch {_version('torch')} / transformers "
          f"{_version('transformers')}: AdamW", flush=True)
    for seq_len, batch in args.case_list:  # interleaved, so both see the same machine load
        case = f"{seq_len}x{batch}"
        flops = step_flops(args.size, seq_len, batch)
        for precision in precisions:
            case_args = passthrough + ["--cases", case, "--precision", precision]
            ours.update(run_worker("ours", case_args))
            theirs.update(run_worker("torch", case_args))
            ref = summarize(theirs[f"{case}/{precision}/torch"]["times"], batch)
            impls = [("torch", ref)] + [(f"ours ({v})", summarize(ours[f"{case}/{precision}/{v}"]["times"], batch))
                                        for v in args.variants]
            for name, s in impls:
                rows.append({"case": case, "precision": precision, "impl": name, **s,
                             "gflop_per_s": flops * s["steps_per_s"] / 1e9,
                             "ratio_vs_torch": s["steps_per_s"] / ref["steps_per_s"]})
                print(f"  {case} {precision} {name}: {s['steps_per_s']:.3f} steps/s", flush=True)
        peak_readings.append(run_worker("peak", passthrough))
    peak = {p: max(r[p] for r in peak_readings) for p in peak_readings[0]}
    print(f"matmul peak (TF, 2048^2, best of {len(peak_readings)} readings): "
          + ", ".join(f"{p} {v:.0f} GFLOP/s (readings {'/'.join(f'{r[p]:.0f}' for r in peak_readings)})"
                      for p, v in peak.items()))
    print(f"{'case':<10}{'precision':<10}{'impl':<16}{'steps/s':>9}{'seq/s':>9}{'GFLOP/s':>9}{'% peak':>8}"
          f"{'vs torch':>9}")
    for row in rows:
        row["fraction_of_peak"] = row["gflop_per_s"] / peak[row["precision"]]
        print(f"{row['case']:<10}{row['precision']:<10}{row['impl']:<16}{row['steps_per_s']:>9.3f}"
              f"{row['sequences_per_s']:>9.2f}{row['gflop_per_s']:>9.0f}{100 * row['fraction_of_peak']:>7.1f}%"
              f"{row['ratio_vs_torch']:>8.2f}x")
    for precision in precisions[1:]:
        for r in rows:
            if r["precision"] == precision:
                base = next(b for b in rows if b["precision"] == precisions[0] and b["case"] == r["case"]
                            and b["impl"] == r["impl"])
                print(f"{r['case']} {r['impl']}: {precision} / {precisions[0]} = "
                      f"{r['steps_per_s'] / base['steps_per_s']:.2f}x")
    load_after = os.getloadavg()
    print(f"total wall time {time.time() - t0:.0f}s; 1-min load average {load_before[0]:.1f} before, "
          f"{load_after[0]:.1f} after ({os.cpu_count()} cores: other processes skew the numbers)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"args": {k: v for k, v in vars(args).items() if k != "case_list"}, "cpu": cpu_model(),
                       "matmul_peak_gflop_per_s": peak, "matmul_peak_readings": peak_readings, "rows": rows,
                       "load_average": [load_before, load_after],
                       "raw": {"ours": ours, "torch": theirs}}, f, indent=2)
    return 0


def _version(package: str) -> str:
    try:
        from importlib.metadata import version

        return version(package)
    except Exception:  # pragma: no cover
        return "?"


if __name__ == "__main__":
    raise SystemExit(main())
