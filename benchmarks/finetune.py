"""Fine-tuning and inference throughput of ALBERT-base on a GLUE batch on CPU: this implementation
(TF/tf_keras, ``components.evaluation``) next to Hugging Face ``transformers``'
``AlbertForSequenceClassification`` (PyTorch), same batch, same run.

The batch is real GLUE: the first ``--batch`` MRPC sample dev pairs (``data/sample/glue``) featurised
by ``glue.convert_glue_examples`` (``[CLS] a [SEP] b [SEP]``, padded to ``--seq``), the same ids fed
to both models. Both are ALBERT-base (paper Table 1: H=768, 12 layers, E=128, all layers shared),
randomly initialised (throughput does not depend on the weights), float32, ALBERT dropout 0 and
classifier dropout 0.1 (paper Table 14), two labels.

* fine-tuning step, ours: the ``tf.function`` step of ``finetune.fine_tune`` = ``ClassifierModel``
  forward (training) + cross-entropy + gradient + global-norm clip 1.0 + AdamW (weight decay 0.01,
  linear warmup/decay); torch: forward with ``labels``, ``loss.backward()``, ``clip_grad_norm_(1.0)``,
  ``torch.optim.AdamW`` step.
* inference, ours: ``tf.function(model(x, training=False))`` (what ``finetune.predict`` runs); torch:
  ``model.eval()`` under ``torch.inference_mode()``.

Each framework runs in its own subprocess with the same thread count (``--threads``, default all
cores). Printed: examples/s (median over the timed steps) and the ratio ours / transformers. Without
``torch``/``transformers`` importable the transformers column is skipped with a message.

    .venv/bin/python -m benchmarks.finetune                       # ~2.5 min on 2 idle cores
    .venv/bin/python -m benchmarks.finetune --train-steps 10 --infer-steps 20 --json out.json

``--padding``: what dynamic padding saves (:func:`components.evaluation.finetune.dynamic_padding`). Whole
``fine_tune`` runs (training + the final dev evaluation, as the ``small`` preset's GLUE node runs them) of the
``small`` preset's encoder shape (H 256, 4 shared layers, E 128, 4 heads, FFN 1024, vocabulary 8000, ALBERT
dropout 0) with that preset's hyper-parameters for ``--task``, on ``$ALBERT_TFX_DATA_DIR/glue_data`` (else the
bundled sample), every batch at ``max_seq_length`` vs cut to its longest example, alternating arms, same seed;
prints both arms' medians and dev scores (equal up to float tolerance). Randomly initialised (time does not
depend on the weights); text is tokenised with the bundled 30k vocabulary and ids folded into 8000 (lengths as
the 30k vocabulary splits; the recipe's own 8k vocabulary splits somewhat finer).

    .venv/bin/python -m benchmarks.finetune --padding --task CoLA --repeats 3    # ~6 min on 2 idle cores
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

HIDDEN = dict(vocab_size=30000, embedding_size=128, hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
              intermediate_size=3072, max_position_embeddings=512, type_vocab_size=2, initializer_range=0.02)


def glue_batch(seq: int, batch: int):
    from components.evaluation.glue import glue_data as glue_lib
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
    import numpy as np
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    tf.config.threading.set_inter_op_parallelism_threads(max(1, min(2, args.threads)))
    from components.evaluation.finetune import make_train_step
    from components.evaluation.heads import ClassifierModel, classification_loss
    from trainer.modeling_albert import AlbertConfig, AlbertModel

    arrays = glue_batch(args.seq, args.batch)
    arrays["label_ids"] = (np.arange(args.batch) % 2).astype(np.int32)
    batch = {k: tf.constant(v) for k, v in arrays.items()}
    tf.random.set_seed(0)
    config = AlbertConfig.named("albert-base", hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    model = ClassifierModel(AlbertModel(config), 2, 0.1, seed=0)
    model({k: batch[k] for k in ("input_ids", "input_mask", "segment_ids")}, training=False)
    total = args.warmup + args.train_steps
    train_step = make_train_step(model, classification_loss, 2e-5, max(1, total // 10), total)  # fine_tune's step

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

    from benchmarks import hf_packages

    hf_packages.use()
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


SMALL_SHAPE = dict(vocab_size=8000, hidden_size=256, num_hidden_layers=4, embedding_size=128, num_attention_heads=4,
                   intermediate_size=1024, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)


def padding_comparison(args) -> Dict[str, object]:
    """Padded vs dynamic-padded ``fine_tune`` runs, interleaved; per-run seconds, mean lengths and dev scores."""
    import numpy as np
    import tf_keras

    from components.evaluation.glue import glue_data as glue_lib
    from components.evaluation.finetune import fine_tune, predict, seed_everything
    from components.evaluation.heads import ClassifierModel, classification_loss, regression_loss
    from components.evaluation.glue.run_glue import glue_scores
    from components.text.tokenization import AlbertTokenizer
    from pipeline.settings.configs import small_config
    from trainer.modeling_albert import AlbertConfig, AlbertModel

    shared = os.path.join(os.environ.get("ALBERT_TFX_DATA_DIR") or os.path.join(os.path.dirname(REPO), "shared",
                                                                                "data"), "glue_data")
    glue_dir = args.glue_dir or (shared if os.path.isdir(shared) else os.path.join(REPO, "data", "sample", "glue"))
    task = glue_lib.get_task(args.task)
    hp = small_config().benchmarks.hparams[task.name]
    tokenizer = AlbertTokenizer(os.path.join(REPO, "data", "sample", "vocab", "30k-clean.model"))

    def arrays(split):
        out = glue_lib.convert_glue_examples(glue_lib.read_glue(task.name, split, glue_dir), tokenizer,
                                             hp.max_seq_length, task.name)
        out["input_ids"] = out["input_ids"] % SMALL_SHAPE["vocab_size"]
        return out

    train, dev = arrays("train"), arrays("dev")
    loss_fn = regression_loss if task.is_regression else classification_loss

    def evaluate(model):
        logits = predict(model, dev)["logits"]
        return glue_scores(task.name, logits, dev["label_ids"]), None

    runs: List[Dict[str, object]] = []
    infer: Dict[bool, List[float]] = {False: [], True: []}
    for i in range(args.repeats):
        for dynamic in ((False, True) if i % 2 == 0 else (True, False)):
            seed_everything(args.seed)
            model = ClassifierModel(AlbertModel(AlbertConfig(**SMALL_SHAPE)), task.num_labels,
                                    hp.classifier_dropout, args.seed)
            model({k: train[k][:1] for k in model.input_keys}, training=False)
            t0 = time.perf_counter()
            res = fine_tune(model, loss_fn, train, hp, args.seed, evaluate, dynamic=dynamic)
            runs.append({"dynamic": dynamic, "seconds": time.perf_counter() - t0, "train_s": res["train_seconds"],
                         "eval_s": res["eval_seconds"], "mean_train_length": res["mean_train_length"],
                         "score": res["metrics"]["score"], "final_loss": res["final_loss"]})
            print(f"  run {len(runs)}: {'dynamic' if dynamic else 'padded '} {runs[-1]['seconds']:.1f} s "
                  f"(train {res['train_seconds']:.1f}, eval {res['eval_seconds']:.1f}), mean length "
                  f"{res['mean_train_length']:.1f}, dev {res['metrics']['score']:.4f}", flush=True)
            if i == args.repeats - 1 and dynamic:  # dev inference alone, traced model, both ways alternating
                for _ in range(3):
                    for d in (False, True):
                        t1 = time.perf_counter()
                        predict(model, dev, dynamic=d)
                        infer[d].append(time.perf_counter() - t1)
            del model
            tf_keras.backend.clear_session()
    lengths = {split: float(np.mean(a["input_mask"].sum(-1))) for split, a in (("train", train), ("dev", dev))}
    return {"task": task.name, "glue_dir": glue_dir, "hparams": dict(vars(hp)), "num_train": len(train["label_ids"]),
            "num_dev": len(dev["label_ids"]), "mean_example_length": lengths, "runs": runs,
            "dev_inference_s": {"padded": infer[False], "dynamic": infer[True]}}


def _print_padding(result: Dict[str, object]) -> Dict[str, object]:
    hp = result["hparams"]
    print(f"{result['task']} fine-tuning, small-preset shape, {hp['train_steps']} steps x batch {hp['batch_size']} at "
          f"max_seq_length {hp['max_seq_length']} + dev evaluation ({result['num_dev']} examples); mean example length "
          f"train {result['mean_example_length']['train']:.1f}, dev {result['mean_example_length']['dev']:.1f}")
    print(f"{'':10}{'runs':>6}{'total s':>10}{'train s':>10}{'eval s':>10}{'batch len':>11}{'dev score':>11}")
    summary = {}
    for name, dynamic in (("padded", False), ("dynamic", True)):
        rs = [r for r in result["runs"] if r["dynamic"] == dynamic]
        summary[name] = {k: statistics.median(r[k] for r in rs)
                         for k in ("seconds", "train_s", "eval_s", "mean_train_length")}
        summary[name]["scores"] = sorted({round(r["score"], 6) for r in rs})
        m = summary[name]
        print(f"{name:10}{len(rs):6d}{m['seconds']:10.1f}{m['train_s']:10.1f}{m['eval_s']:10.1f}"
              f"{m['mean_train_length']:11.1f}{', '.join(f'{s:.4f}' for s in m['scores']):>11}")
    summary["speedup"] = {k: summary["padded"][k] / summary["dynamic"][k] for k in ("seconds", "train_s", "eval_s")}
    print(f"{'speed-up':10}{'':6}{summary['speedup']['seconds']:9.2f}x{summary['speedup']['train_s']:9.2f}x"
          f"{summary['speedup']['eval_s']:9.2f}x   (medians, padded / dynamic)")
    infer = {k: statistics.median(v) for k, v in result["dev_inference_s"].items()}
    summary["dev_inference_s"] = infer
    print(f"dev inference alone (traced, median of 3): padded {infer['padded']:.2f} s, dynamic {infer['dynamic']:.2f} s"
          f" ({infer['padded'] / infer['dynamic']:.2f}x)")
    return summary


def _run_worker(name: str, args) -> Dict[str, object]:
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "result.json")
        cmd = [sys.executable, "-m", __spec__.name, "--worker", name, "--worker-out", out,
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
    probe = subprocess.run([sys.executable, "-c", "from benchmarks import hf_packages; hf_packages.use(); "
                            "import torch, transformers"], capture_output=True, text=True)
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
    p.add_argument("--padding", action="store_true",
                   help="compare whole fine-tuning runs padded to max_seq_length vs dynamic padding")
    p.add_argument("--task", default="CoLA", help="--padding: the GLUE task (default CoLA)")
    p.add_argument("--repeats", type=int, default=3, choices=range(1, 100), metavar="N",
                   help="--padding: runs per arm, alternating (default 3)")
    p.add_argument("--seed", type=int, default=0, help="--padding: the runs' seed")
    p.add_argument("--glue-dir", help="--padding: GLUE folder (default $ALBERT_TFX_DATA_DIR/glue_data, "
                                      "else the bundled sample)")
    p.add_argument("--worker", choices=("ours", "torch"), help=argparse.SUPPRESS)
    p.add_argument("--worker-out", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        result = (worker_ours if args.worker == "ours" else worker_torch)(args)
        with open(args.worker_out, "w", encoding="utf-8") as f:
            json.dump(result, f)
        return 0

    if args.padding:
        result = padding_comparison(args)
        result["summary"] = _print_padding(result)
        if args.json:
            with open(args.json, "w", encoding="utf-8") as f:
                json.dump({"args": vars(args), **result}, f, indent=2)
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
