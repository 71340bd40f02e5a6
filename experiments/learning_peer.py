"""The project's Trainer beside a peer: Hugging Face ``AlbertForPreTraining`` (PyTorch) on the same examples.

    .venv/bin/python -m experiments.learning_peer --examples DIR [--preset small] [--set key=value ...]
        [--seeds 1] [--threads N] [--output DIR]

``DIR`` is a ``make-pretraining-data`` output (or a pipeline Examples artifact). For each seed:

* **ours**: ``albert-pipeline pretrain --examples DIR`` (the Trainer's own entry point) with the preset and
  ``--set`` overrides; its ``train_history.jsonl`` gives held-out metrics at every ``train.eval_every`` step and
  the training time of every log window (eval time excluded, the first window includes tracing).
* **peer**: ``transformers.AlbertForPreTraining`` in a process of its own, with the same number of threads,
  started from the *same initial weights* (our model built with the same seed and converted by
  ``trainer.checkpoint_interop.hf_state_dict``), fed the *same batches in the same order* (the Trainer's own
  ``input_pipeline.make_pretraining_dataset``), with the official LAMB restated in PyTorch (no bias correction, trust
  ratio and weight decay on every variable but LayerNorm/bias), the same warmup + linear decay, global-norm
  clipping at ``train.clip_norm``, and evaluated on the same held-out records with the same token-weighted
  metrics. Only its optimizer steps are timed (its input is read outside the clock, which favours the peer).
  It computes in the precision our run used (``precision`` in our ``eval_metrics.json``; ``auto`` measures it):
  for ``mixed_bfloat16``, float32 weights and optimizer with the forward pass under
  ``torch.autocast("cpu", torch.bfloat16)``, as Keras's policy keeps float32 variables and computes in bf16.

Printed (and written to ``<output>/peer.md`` / ``peer.json``): held-out MLM and sentence-order accuracy at equal
steps, and at equal wall time (each side's last evaluation whose cumulative training time is within the shorter
run's total), with steps/s. With ``--seeds N`` the spread over seeds shows what "within seed noise" means.
Random choices: ``--seed`` (the pipeline seed) + seed index.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from typing import Any, Dict, List

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from trainer.precision import cpu_model  # noqa: E402  (imports no TensorFlow)

EXCLUDE = ("LayerNorm", "layer_norm", "bias")  # the official exclusion patterns, searched in the variable name


# ---------------------------------------------------------------------------------------------------------------
# The peer (runs in its own process: `--role peer`)


def learning_rate(step: int, peak: float, warmup: int, total: int) -> float:
    """The Trainer's default schedule (official ``optimization.py``): warmup, then ``peak * (1 - step/total)``."""
    if warmup and step < warmup:
        return peak * step / warmup
    return peak * (1.0 - min(step, total) / total)


class Lamb:
    """The official LAMB (``lamb_optimizer.py``) on torch tensors: no bias correction; variables whose name matches
    an exclusion pattern get neither weight decay nor the trust ratio."""

    def __init__(self, named_params, weight_decay: float, beta_1=0.9, beta_2=0.999, eps=1e-6):
        import torch

        self.params = [(n, p) for n, p in named_params if p.requires_grad]
        self.wd, self.b1, self.b2, self.eps = weight_decay, beta_1, beta_2, eps
        self.m = {n: torch.zeros_like(p) for n, p in self.params}
        self.v = {n: torch.zeros_like(p) for n, p in self.params}
        self.excluded = {n for n, _ in self.params if any(re.search(e, n) for e in EXCLUDE)}

    def step(self, lr: float) -> None:
        import torch

        with torch.no_grad():
            for n, p in self.params:
                if p.grad is None:
                    continue
                m, v, g = self.m[n], self.v[n], p.grad
                m.mul_(self.b1).add_(g, alpha=1 - self.b1)
                v.mul_(self.b2).addcmul_(g, g, value=1 - self.b2)
                u = m / (v.sqrt() + self.eps)
                ratio = 1.0
                if n not in self.excluded:
                    u = u + self.wd * p
                    w_norm, u_norm = p.norm(), u.norm()
                    ratio = torch.where((w_norm > 0) & (u_norm > 0), w_norm / u_norm, torch.ones_like(w_norm))
                p.sub_(lr * ratio * u)


def _torch_batch(inputs, labels):
    """The Trainer's (inputs, labels) batch as ``AlbertForPreTraining`` arguments (-100: not a masked position),
    with the masked positions, ids and weights for scoring."""
    import numpy as np
    import torch

    ids = inputs["input_ids"].numpy()
    positions = inputs["masked_lm_positions"].numpy()
    targets, weights = labels["masked_lm_ids"].numpy(), labels["masked_lm_weights"].numpy()
    mlm = np.full(ids.shape, -100, np.int64)
    rows = np.repeat(np.arange(ids.shape[0])[:, None], positions.shape[1], 1)
    real = weights > 0
    mlm[rows[real], positions[real]] = targets[real]
    return {
        "input_ids": torch.from_numpy(ids.astype(np.int64)),
        "attention_mask": torch.from_numpy(inputs["input_mask"].numpy().astype(np.int64)),
        "token_type_ids": torch.from_numpy(inputs["segment_ids"].numpy().astype(np.int64)),
        "labels": torch.from_numpy(mlm),
        "sentence_order_label": torch.from_numpy(labels["next_sentence_labels"].numpy().reshape(-1).astype(np.int64)),
    }, positions, targets, weights


def run_peer(args) -> None:
    import numpy as np
    import tensorflow as tf
    import tf_keras

    from benchmarks import hf_packages

    hf_packages.use()
    import torch
    import transformers

    from pipeline.settings.configs import build_config
    from trainer import examples_info, input_pipeline
    from trainer.checkpoint_interop import config_to_hf_dict, hf_state_dict
    from trainer.modeling_albert import AlbertConfig
    from trainer.train_step import build_pretraining_model

    tf.config.threading.set_inter_op_parallelism_threads(1)
    tf.config.threading.set_intra_op_parallelism_threads(1)
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    config = build_config(args.preset, None, args.overrides)
    t = config.train
    if t.optimizer.lower() != "lamb" or t.sentence_task != "sop":
        raise SystemExit("the peer restates LAMB with SOP only (train.optimizer=lamb, train.sentence_task=sop)")
    albert = AlbertConfig.from_json_file(os.path.join(args.ours, "model", "albert", "albert_config.json"))
    info = examples_info.read_info(args.examples)
    seq_len, preds = int(info["max_seq_length"]), int(info["max_predictions_per_seq"])

    # Same initial weights: the Trainer seeds everything with the run seed, then builds the model.
    tf_keras.utils.set_random_seed(args.seed)
    ours = build_pretraining_model(albert, "sop", seq_len, preds)
    hf = transformers.AlbertForPreTraining(transformers.AlbertConfig(**config_to_hf_dict(albert)))
    missing, unexpected = hf.load_state_dict({k: torch.from_numpy(np.array(v)) for k, v in hf_state_dict(ours).items()},
                                             strict=False)
    tied = ("predictions.decoder.weight", "predictions.decoder.bias")  # tied to the word embeddings / MLM bias
    if [k for k in missing if k not in tied and not k.endswith("position_ids")] or unexpected:
        raise SystemExit(f"weights do not map: missing {missing}, unexpected {unexpected}")
    if not torch.equal(hf.predictions.decoder.weight, hf.albert.embeddings.word_embeddings.weight):
        raise SystemExit("the peer's MLM decoder is not tied to its word embeddings")
    del ours
    optimizer = Lamb(hf.named_parameters(), t.weight_decay)
    precision = our_precision(args.ours)
    if precision not in ("float32", "mixed_bfloat16"):
        raise SystemExit(f"the peer runs float32 or mixed_bfloat16, not {precision!r}")
    autocast = lambda: torch.autocast("cpu", dtype=torch.bfloat16, enabled=precision == "mixed_bfloat16")  # noqa: E731
    print(f"peer precision: {precision} (our run's)", file=sys.stderr, flush=True)

    train = input_pipeline.make_pretraining_dataset(
        [os.path.join(args.examples, "Split-train", "*")], t.train_batch_size, seq_len, preds, seed=args.seed,
        shuffle_block=t.shuffle_buffer)
    eval_files = input_pipeline.expand_files([os.path.join(args.examples, "Split-eval", "*")])
    num_eval = min(sum(input_pipeline.record_counts(eval_files, None, write=False)), t.eval_steps * t.eval_batch_size)
    eval_batches = [_torch_batch(i, lab) for i, lab in input_pipeline.make_eval_dataset(
        eval_files, t.eval_batch_size, seq_len, preds, num_records=num_eval, global_batch_size=t.eval_batch_size)]

    def evaluate() -> Dict[str, float]:
        hf.eval()
        hits = weight = s_hits = s_count = 0.0
        with torch.no_grad(), autocast():
            for batch, pos, ids, w in eval_batches:
                out = hf(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                         token_type_ids=batch["token_type_ids"])
                logits = out.prediction_logits.float().numpy()
                rows = np.arange(pos.shape[0])[:, None]
                predicted = logits[rows, pos].argmax(-1)
                real = batch["attention_mask"].numpy()[:, 0] > 0  # padding rows of the last batch are all zero
                wr = w * real[:, None]
                hits += float((wr * (predicted == ids)).sum())
                weight += float(wr.sum())
                s_pred = out.sop_logits.float().numpy().argmax(-1)
                s_hits += float((real * (s_pred == batch["sentence_order_label"].numpy())).sum())
                s_count += float(real.sum())
        hf.train()
        return {"mlm_accuracy": hits / (weight + 1e-5), "sentence_accuracy": s_hits / max(s_count, 1.0)}

    history: List[Dict[str, Any]] = []
    seconds = 0.0
    iterator = iter(train)
    hf.train()
    for step in range(1, t.num_train_steps + 1):
        inputs, labels = next(iterator)
        batch = _torch_batch(inputs, labels)[0]
        start = time.perf_counter()
        lr = learning_rate(step - 1, t.learning_rate, t.num_warmup_steps, t.num_train_steps)
        with autocast():
            loss = hf(**batch).loss
        hf.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(hf.parameters(), t.clip_norm)
        optimizer.step(lr)
        seconds += time.perf_counter() - start
        if t.eval_every and (step % t.eval_every == 0 or step == t.num_train_steps):
            history.append({"step": step, "train_seconds": seconds, "loss": loss.item(), **evaluate()})
            print(json.dumps(history[-1]), file=sys.stderr, flush=True)
    with open(args.peer_out, "w") as f:
        json.dump(history, f)


# ---------------------------------------------------------------------------------------------------------------
# Ours, from its history


def our_precision(run_dir: str) -> str:
    """The precision our run trained in (``auto`` resolved), from its ``eval_metrics.json``."""
    with open(os.path.join(run_dir, "model_run", "eval_metrics.json")) as f:
        return json.load(f)["precision"]


def ours_history(run_dir: str, batch_size: int) -> List[Dict[str, Any]]:
    """Eval points of the Trainer's ``train_history.jsonl`` with the cumulative training time at each."""
    with open(os.path.join(run_dir, "model_run", "train_history.jsonl")) as f:
        lines = [json.loads(line) for line in f if line.strip()]
    seconds, last_step, out = 0.0, 0, []
    for rec in lines:
        if rec["split"] == "train":
            seconds += (rec["step"] - last_step) * batch_size / max(rec["sequences_per_sec"], 1e-9)
            last_step = rec["step"]
        elif rec["split"] == "eval":
            out.append({"step": rec["step"], "train_seconds": seconds, "mlm_accuracy": rec["mlm_accuracy"],
                        "sentence_accuracy": rec["sentence_accuracy"]})
    return out


def at_time(history: List[Dict[str, Any]], seconds: float) -> Dict[str, Any]:
    """The last evaluation reached within ``seconds`` of training (the first one if none is)."""
    within = [h for h in history if h["train_seconds"] <= seconds * 1.0001]
    return within[-1] if within else history[0]


def compare(ours: List[Dict[str, Any]], peer: List[Dict[str, Any]]) -> Dict[str, Any]:
    peer_at = {h["step"]: h for h in peer}
    steps = [{"step": o["step"], "ours": o, "peer": peer_at[o["step"]]} for o in ours if o["step"] in peer_at]
    wall = min(ours[-1]["train_seconds"], peer[-1]["train_seconds"])
    return {"equal_steps": steps, "equal_time": {"seconds": wall, "ours": at_time(ours, wall),
                                                  "peer": at_time(peer, wall)},
            "steps_per_sec": {"ours": ours[-1]["step"] / ours[-1]["train_seconds"],
                              "peer": peer[-1]["step"] / peer[-1]["train_seconds"]}}


def markdown(results: List[Dict[str, Any]], command: str) -> str:
    pct = lambda x: f"{100 * x:.1f} %"  # noqa: E731
    lines = ["# Trainer beside Hugging Face AlbertForPreTraining (torch), same data, init, LAMB and schedule", "",
             f"CPU: {cpu_model()}; command: `{command}`", ""]
    for r in results:
        c = r["comparison"]
        lines += [f"## seed {r['seed']} (both in {r.get('precision', 'float32')})", "",
                  "| step | MLM acc ours | MLM acc peer | SOP acc ours | SOP acc peer |",
                  "|---:|---:|---:|---:|---:|"]
        for s in c["equal_steps"]:
            lines.append(f"| {s['step']} | {pct(s['ours']['mlm_accuracy'])} | {pct(s['peer']['mlm_accuracy'])} | "
                         f"{pct(s['ours']['sentence_accuracy'])} | {pct(s['peer']['sentence_accuracy'])} |")
        t = c["equal_time"]
        lines += ["", f"Training steps/s: ours {c['steps_per_sec']['ours']:.3f}, peer {c['steps_per_sec']['peer']:.3f} "
                  f"({c['steps_per_sec']['ours'] / c['steps_per_sec']['peer']:.2f}x).",
                  f"At equal wall time ({t['seconds']:.0f} s of training): ours at step {t['ours']['step']} "
                  f"MLM {pct(t['ours']['mlm_accuracy'])} SOP {pct(t['ours']['sentence_accuracy'])}; peer at step "
                  f"{t['peer']['step']} MLM {pct(t['peer']['mlm_accuracy'])} SOP {pct(t['peer']['sentence_accuracy'])}.",
                  ""]
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--examples", required=True, help="make-pretraining-data output folder")
    p.add_argument("--preset", default="small")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--seed", type=int, default=None, help="first seed (default: the preset's)")
    p.add_argument("--seeds", type=int, default=1)
    p.add_argument("--threads", type=int, default=os.cpu_count())
    p.add_argument("--output", default="outputs/learning_peer")
    p.add_argument("--role", default="main", choices=["main", "peer"], help=argparse.SUPPRESS)
    p.add_argument("--ours", help=argparse.SUPPRESS)
    p.add_argument("--peer-out", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.role == "peer":
        run_peer(args)
        return 0
    if not os.path.isdir(os.path.join(args.examples, "Split-train")):
        print(f"error: {args.examples} has no Split-train/: give a make-pretraining-data output", file=sys.stderr)
        return 2
    from pipeline.settings.configs import build_config

    config = build_config(args.preset, None, args.overrides)
    first = config.seed if args.seed is None else args.seed
    results = []
    for seed in range(first, first + args.seeds):
        overrides = [*args.overrides, f"seed={seed}"]
        run = os.path.join(args.output, f"seed{seed}")
        sets = [a for o in overrides for a in ("--set", o)]
        env = {**os.environ, "OMP_NUM_THREADS": str(args.threads)}
        subprocess.run([sys.executable, "-m", "pipeline.cli", "pretrain", "--preset", args.preset, "--examples",
                        args.examples, "--output", os.path.join(run, "ours"), *sets], check=True, cwd=REPO, env=env)
        peer_out = os.path.join(run, "peer_history.json")
        subprocess.run([sys.executable, "-m", __spec__.name, "--role", "peer", "--examples", args.examples,
                        "--preset", args.preset, *sets, "--seed", str(seed), "--threads", str(args.threads),
                        "--ours", os.path.join(run, "ours"), "--peer-out", peer_out], check=True, env=env)
        with open(peer_out) as f:
            peer = json.load(f)
        ours = ours_history(os.path.join(run, "ours"), config.train.train_batch_size)
        results.append({"seed": seed, "precision": our_precision(os.path.join(run, "ours")), "ours": ours, "peer": peer,
                        "comparison": compare(ours, peer)})
    command = " ".join(["-m", "experiments.learning_peer", *sys.argv[1:]])
    report = markdown(results, command)
    with open(os.path.join(args.output, "peer.md"), "w") as f:
        f.write(report)
    with open(os.path.join(args.output, "peer.json"), "w") as f:
        json.dump({"cpu": cpu_model(), "command": command, "results": results}, f, indent=1)
    print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
