"""Fine-tuning and inference throughput of ALBERT-base on a GLUE batch on CPU: this implementation
(TF/tf_keras, ``components.evaluation.runner``) next to Hugging Face ``transformers``'
``AlbertForSequenceClassification`` (PyTorch), same batch, same run.

The batch is real GLUE: the first ``--batch`` MRPC sample dev pairs (``data/sample/glue``) featurised
by ``glue.convert_glue_examples`` (``[CLS] a [SEP] b [SEP]``, padded to ``--seq``), the same ids fed
to both models. Both are ALBERT-base (paper Table 1: H=768, 12 layers, E=128, all layers shared),
randomly initialised (throughput does not depend on the weights), float32, ALBERT dropout 0 and
classifier dropout 0.1 (paper Table 14), two labels.

* fine-tuning step, ours: the ``tf.function`` step of ``runner.fine_tune`` = ``ClassifierModel``
  forward (training) + cross-entropy + gradient + global-norm clip 1.0 + AdamW (weight decay 0.01,
  linear warmup/decay); torch: forward with ``labels``, ``loss.backward()``, ``clip_grad_norm_(1.0)``,
  ``torch.optim.AdamW`` step.
* inference, ours: ``tf.function(model(x, training=False))`` (what ``runner.predict`` runs); torch:
  ``model.eval()`` under ``torch.inference_mode()``.

Each framework runs in its own subprocess with the same thread count (``--threads``, default all
cores). Printed: examples/s (median over the timed steps) and the ratio ours / transformers. Without
``torch``/``transformers`` importable the transformers column is skipped with a message.

    .venv/bin/python benchmarks/finetune.py                       # ~2.5 min on 2 idle cores
    .venv/bin/python benchmarks/finetune.py --train-steps 10 --infer-steps 20 --json out.json
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Dict, List

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

HIDDEN = dict(vocab_size=30000, embedding_size=128, hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
              intermediate_size=3072, max_position_embeddings=512, type_vocab_size=2, initializer_range=0.02)


def glue_batch(seq: int, batch: int):
    from components.evaluation import glue as glue_lib
    from components.text.tokenization import AlbertTokenizer

    sample = os.path.join(REPO, "data", "sample")
    tokenizer = AlbertTokenizer(os.path.join(sample, "vocab", "30k-clean.model"))
    rows = glue_lib.read_glue("MRPC", "dev", os.path.join(sample, "glue"))
    rows = (rows * (batch // len(rows) + 1))[:batch]
    return glue_lib.convert_glue_examples(rows, tokenizer, seq, "MRPC")


def _timed(fn, warmup: int, steps: int) -> List[float]:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return times


def worker_ours(args) -> Dict[str, object]:
    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
    import numpy as np
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    tf.config.threading.set_inter_op_parallelism_threads(max(1, min(2, args.threads)))
    from components.evaluation.runner import ClassifierModel, classification_loss, make_train_step
    from trainer.modeling_albert import AlbertConfig, AlbertModel

    arrays = glue_batch(args.seq, args.batch)
    arrays["label_ids"] = (np.arange(args.batch) % 2).astype(np.int32)
    batch = {k: tf.constant(v) for k, v in arrays.items()}
    tf.random.set_seed(0)
    config = AlbertConfig.named("albert-base", hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    model = ClassifierModel(AlbertModel(config), 2, 0.1, seed=0)
    model({k: batch[k] for k in ("input_ids", "input_mask", "segment_ids")}, training=False)
    total = args.warmup + args.train_steps
    train_step = make_train_step(model, classification_loss, 2e-5, max(1, total // 10), total)  # the runner's step

    infer = tf.function(lambda b: model(b, training=False))
    feats = {k: batch[k] for k in ("input_ids", "input_mask", "segment_ids")}
    t0 = time.perf_counter()
    float(train_step(batch))
    first_train = time.perf_counter() - t0
    train = _timed(lambda: float(train_step(batch)), args.warmup, args.train_steps)
    t0 = time.perf_counter()
    infer(feats)["logits"].numpy()
    first_infer = time.perf_counter() - t0
    inference = _timed(lambda: infer(feats)["logits"].numpy(), args.warmup, args.infer_steps)
    params = int(sum(np.prod(v.shape) for v in model.trainable_variables))
    return {"train_times": train, "infer_times": inference, "first_train_step_s": first_train,
            "first_infer_step_s": first_infer, "params": params, "framework": f"tensorflow {tf.__version__}"}


def worker_torch(args) -> Dict[str, object]:
    import numpy as np
    import torch
    import transformers

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    arrays = glue_batch(args.seq, args.batch)
    config = transformers.AlbertConfig(**HIDDEN, num_hidden_groups=1, inner_group_num=1, hidden_act="gelu_new",
                                       hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
                                       classifier_dropout_prob=0.1, num_labels=2)
    model = transformers.AlbertForSequenceClassification(config)
    feed = {"input_ids": torch.tensor(arrays["input_ids"], dtype=torch.long),
            "attention_mask": torch.tensor(arrays["input_mask"], dtype=torch.long),
            "token_type_ids": torch.tensor(arrays["segment_ids"], dtype=torch.long)}
    labels = torch.tensor(np.arange(args.batch) % 2, dtype=torch.long)
    no_decay = [p for n, p in model.named_parameters() if "LayerNorm" in n or n.endswith("bias")]
    decay = [p for n, p in model.named_parameters() if not ("LayerNorm" in n or n.endswith("bias"))]
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01}, {"params": no_decay, "weight_decay": 0.0}],
                                  lr=2e-5, eps=1e-6)

    def train_step():
        model.train()
        optimizer.zero_grad(set_to_none=True)
        loss = model(**feed, labels=labels).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        return float(loss)

    def infer():
        model.eval()
        with torch.inference_mode():
            return model(**feed).logits.numpy()

    t0 = time.perf_counter()
    train_step()
    first_train = time.perf_counter() - t0
    train = _timed(train_step, args.warmup, args.train_steps)
    t0 = time.perf_counter()
    infer()
    first_infer = time.perf_counter() - t0
    inference = _timed(infer, args.warmup, args.infer_steps)
    params = int(sum(p.numel() for p in model.parameters() if p.requires_grad))
    return {"train_times": train, "infer_times": inference, "first_train_step_s": first_train,
            "first_infer_step_s": first_infer, "params": params,
            "framework": f"torch {torch.__version__} / transformers {transformers.__version__}"}


def _run_worker(name: str, args) -> Dict[str, object]:
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "result.json")
        cmd = [sys.executable, os.path.abspath(__file__), "--worker", name, "--worker-out", out,
               "--seq", str(args.seq), "--batch", str(args.batch), "--threads", str(args.threads),
               "--warmup", str(args.warmup), "--train-steps", str(args.train_steps),
               "--infer-steps", str(args.infer_steps)]
        env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", TF_USE_LEGACY_KERAS="1", CUDA_VISIBLE_DEVICES="")
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if not os.path.exists(out):
            raise RuntimeError(f"{name} worker failed (rc {proc.returncode}):\n{proc.stderr[-3000:]}")
        with open(out, encoding="utf-8") as f:
            return json.load(f)


def _torch_available() -> str:
    probe = subprocess.run([sys.executable, "-c", "import torch, transformers"], capture_output=True, text=True)
    if probe.returncode != 0:
        return (probe.stderr.strip().splitlines() or ["import failed"])[-1]
    return ""


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--train-steps", type=int, default=3)
    p.add_argument("--infer-steps", type=int, default=5)
    p.add_argument("--json", help="write the results to this file")
    p.add_argument("--worker", choices=("ours", "torch"), help=argparse.SUPPRESS)
    p.add_argument("--worker-out", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        result = (worker_ours if args.worker == "ours" else worker_torch)(args)
        with open(args.worker_out, "w", encoding="utf-8") as f:
            json.dump(result, f)
        return 0

    results: Dict[str, Dict[str, object]] = {"ours": _run_worker("ours", args)}
    missing = _torch_available()
    if missing:
        print(f"transformers column skipped: torch/transformers not importable ({missing})")
    else:
        results["transformers"] = _run_worker("torch", args)

    def rate(r, key):
        return args.batch / statistics.median(r[key])

    print(f"ALBERT-base sequence classification, GLUE MRPC batch {args.batch} x seq {args.seq}, CPU, "
          f"{args.threads} threads; median over {args.train_steps} train / {args.infer_steps} inference steps "
          f"after {args.warmup} warm-up (+1 tracing) step")
    header = f"{'':24}{'fine-tune ex/s':>16}{'inference ex/s':>16}{'params':>12}  framework"
    print(header)
    rows = {}
    for name, r in results.items():
        rows[name] = {"train_examples_per_s": rate(r, "train_times"), "infer_examples_per_s": rate(r, "infer_times"),
                      "params": r["params"], "framework": r["framework"],
                      "first_train_step_s": r["first_train_step_s"], "first_infer_step_s": r["first_infer_step_s"]}
        print(f"{name:24}{rows[name]['train_examples_per_s']:16.2f}{rows[name]['infer_examples_per_s']:16.2f}"
              f"{r['params']:12d}  {r['framework']}")
    if "transformers" in rows:
        o, t = rows["ours"], rows["transformers"]
        ratios = {"train": o["train_examples_per_s"] / t["train_examples_per_s"],
                  "infer": o["infer_examples_per_s"] / t["infer_examples_per_s"]}
        rows["ratio_ours_over_transformers"] = ratios
        print(f"{'ratio ours/transformers':24}{ratios['train']:16.2f}{ratios['infer']:16.2f}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"args": vars(args), "results": rows,
                       "raw": {k: {kk: vv for kk, vv in v.items()} for k, v in results.items()}}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
