"""Training-step throughput of ALBERT-base on CPU: this implementation (TF/tf_keras) next to Hugging Face
``transformers``' ``AlbertForPreTraining`` (PyTorch), same batch, same run.

For each (sequence length, batch) case both frameworks train on the same random batch (token ids, a padded tail,
two segments, ``P`` masked positions, SOP labels), float32, dropout 0 (ALBERT v2), one optimizer step per batch with
global-norm clipping 1.0:

* ours: ``tf.function`` train step = forward + ``pretraining_losses`` + gradient + clip + LAMB (or AdamW) update,
  the step ``trainer.train_lib`` runs; ``--jit`` adds a run with ``jit_compile=True`` (XLA).
* torch: ``AlbertForPreTraining(input_ids, attention_mask, token_type_ids, labels, sentence_order_label)``,
  ``loss.backward()``, ``clip_grad_norm_``, ``torch.optim.AdamW``.

Each framework runs each case in its own subprocess (its own thread pools and memory), ours then torch case by
case, with the same number of threads (``--threads``, default all cores). Printed: steps/s and sequences/s (median over the timed
steps) per framework and the ratio ours / torch; ``--json`` writes them to a file.

Note on the work done: the MLM head here (as in the official code) computes logits only at the ``P`` masked
positions; ``transformers`` computes them at every position (``[B, T, V]``) and ignores the unmasked ones in the
loss. This is part of what is being compared: the same training step, each as its library implements it.

    .venv/bin/python benchmarks/model_step.py                 # ~3 min on 2 cores
    .venv/bin/python benchmarks/model_step.py --jit --steps 5 --cases 128x8,512x2
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from typing import Dict, List, Tuple

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
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
    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    sys.path.insert(0, REPO)
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    tf.config.threading.set_inter_op_parallelism_threads(args.threads)
    import tf_keras

    from trainer.modeling_albert import AlbertConfig, AlbertForPreTraining, pretraining_losses
    from trainer.optimization import clip_gradients, create_optimizer

    tf_keras.mixed_precision.set_global_policy("float32")
    tf_keras.utils.set_random_seed(0)
    config = AlbertConfig.named(args.size)
    results = {}
    for seq_len, batch in args.case_list:
        data = make_batch(seq_len, batch, config.vocab_size)
        model = AlbertForPreTraining(config)
        model(model.dummy_inputs(1, seq_len, MAX_PREDICTIONS.get(seq_len, 1)))
        optimizer = create_optimizer(args.optimizer, 1e-4, 10, 1000)
        variables = model.trainable_variables
        optimizer.build(variables)
        inputs = {k: tf.constant(data[k]) for k in ("input_ids", "input_mask", "segment_ids", "masked_lm_positions")}
        labels = {k: tf.constant(data[k]) for k in ("masked_lm_ids", "masked_lm_weights", "next_sentence_labels")}

        def step_fn(inputs, labels):
            with tf.GradientTape() as tape:
                outputs = model(inputs, training=True)
                losses = pretraining_losses(outputs, labels["masked_lm_ids"], labels["masked_lm_weights"],
                                            labels["next_sentence_labels"])
            grads = tape.gradient(losses["loss"], variables)
            grads, _ = clip_gradients(grads, 1.0)
            optimizer.apply_gradients(zip(grads, variables))
            return losses["loss"]

        for variant in args.variants:
            fn = tf.function(step_fn, jit_compile=(variant == "xla"))
            loss = []
            times, warm = _timed(lambda: loss.append(float(fn(inputs, labels))), args.warmup, args.steps)
            results[f"{seq_len}x{batch}/{variant}"] = {"times": times, "warmup_s": warm, "final_loss": loss[-1]}
    return results


def worker_torch(args) -> Dict[str, object]:
    import torch
    import transformers

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    c = BASE_CONFIGS[args.size]
    config = transformers.AlbertConfig(
        vocab_size=30000, embedding_size=c["E"], hidden_size=c["H"], num_hidden_layers=c["L"],
        num_attention_heads=c["heads"], intermediate_size=4 * c["H"], hidden_act="gelu_new",
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

        def step():
            optimizer.zero_grad(set_to_none=True)
            out = model(**kwargs)
            out.loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            loss.append(float(out.loss))

        times, warm = _timed(step, args.warmup, args.steps)
        results[f"{seq_len}x{batch}/torch"] = {"times": times, "warmup_s": warm, "final_loss": loss[-1],
                                               "attn_implementation": getattr(config, "_attn_implementation", None)}
    return results


# Paper Table 1 shapes (kept here so the torch worker does not import TensorFlow).
BASE_CONFIGS = {"albert-base": dict(E=128, H=768, L=12, heads=12), "albert-large": dict(E=128, H=1024, L=24, heads=16)}


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
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", which] + argv
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
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--optimizer", default="lamb", choices=["lamb", "adamw"], help="ours (torch: AdamW)")
    parser.add_argument("--jit", action="store_true", help="also time ours with jit_compile=True (XLA)")
    parser.add_argument("--only-xla", action="store_true", help="time ours with jit_compile=True only")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--json", help="write the results here")
    parser.add_argument("--worker", choices=["ours", "torch"], help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.case_list = parse_cases(args.cases)
    args.variants = ["xla"] if args.only_xla else (["graph", "xla"] if args.jit else ["graph"])

    if args.worker:
        result = worker_ours(args) if args.worker == "ours" else worker_torch(args)
        print("RESULT " + json.dumps(result))
        return 0

    passthrough = ["--size", args.size, "--warmup", str(args.warmup), "--steps",
                   str(args.steps), "--optimizer", args.optimizer, "--threads", str(args.threads)]
    if args.jit:
        passthrough.append("--jit")
    if args.only_xla:
        passthrough.append("--only-xla")
    t0 = time.time()
    load_before = os.getloadavg()
    ours, theirs = {}, {}
    rows = []
    print(f"{args.size}, float32, {args.threads} threads, {args.warmup} warmup + {args.steps} timed steps "
          f"(median); ours: {args.optimizer.upper()}, torch {_version('torch')} / transformers "
          f"{_version('transformers')}: AdamW")
    print(f"{'case':<12}{'impl':<16}{'steps/s':>9}{'seq/s':>9}{'ratio':>8}", flush=True)
    for seq_len, batch in args.case_list:  # interleaved, so both see the same machine load
        case = f"{seq_len}x{batch}"
        case_args = passthrough + ["--cases", case]
        ours.update(run_worker("ours", case_args))
        theirs.update(run_worker("torch", case_args))
        ref = summarize(theirs[f"{case}/torch"]["times"], batch)
        print(f"{case:<12}{'torch':<16}{ref['steps_per_s']:>9.3f}{ref['sequences_per_s']:>9.2f}{'1.00':>8}")
        rows.append({"case": case, "impl": "torch", **ref})
        for variant in args.variants:
            s = summarize(ours[f"{case}/{variant}"]["times"], batch)
            ratio = s["steps_per_s"] / ref["steps_per_s"]
            name = f"ours ({variant})"
            print(f"{case:<12}{name:<16}{s['steps_per_s']:>9.3f}{s['sequences_per_s']:>9.2f}{ratio:>8.2f}", flush=True)
            rows.append({"case": case, "impl": name, "ratio_vs_torch": ratio, **s})
    load_after = os.getloadavg()
    print(f"total wall time {time.time() - t0:.0f}s; 1-min load average {load_before[0]:.1f} before, "
          f"{load_after[0]:.1f} after ({os.cpu_count()} cores: other processes skew the numbers)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"args": {k: v for k, v in vars(args).items() if k != "case_list"}, "rows": rows,
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
