"""Frozen-feature probe: do a pretrained encoder's features carry more task signal than a random encoder's?

Fine-tuning can hide the answer (a random encoder trained end to end catches up on easy cues), so this scores the
representations themselves: the encoder is frozen, each GLUE example becomes one vector (the mean of the final
hidden states over real tokens, concatenated with the pooled ``[CLS]`` output), and a linear model is fitted on
train features and scored on dev: logistic regression (accuracy; MRPC F1/accuracy mean, CoLA MCC, as the
benchmark's headline) or ridge regression for STS-B (Pearson/Spearman mean). The same architecture from random
initialisation (``--random-seeds`` draws) is the baseline.

    .venv/bin/python -m experiments.frozen_probe --model MODEL_ARTIFACT_URI --glue-dir DIR [--tasks SST-2,STS-B]

``MODEL_ARTIFACT_URI`` is a Trainer ``Model`` artifact folder (``albert/`` inside: config, encoder checkpoint and
``spm.model``). Train sets are capped at ``--max-train`` examples (the first ones, file order) to bound the time.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, Dict, List

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def features(encoder, arrays: Dict[str, Any], batch_size: int = 128):
    """[mean of final hidden states over real tokens ; pooled output] per example, float64."""
    import numpy as np
    import tensorflow as tf

    keys = ("input_ids", "input_mask", "segment_ids")
    step = tf.function(lambda x: encoder(x, training=False))
    out = []
    n = arrays["input_ids"].shape[0]
    for start in range(0, n, batch_size):
        batch = {k: tf.constant(arrays[k][start:start + batch_size]) for k in keys}
        res = step(batch)
        mask = tf.cast(batch["input_mask"], tf.float32)[:, :, None]
        mean = tf.reduce_sum(res["sequence_output"] * mask, 1) / tf.maximum(tf.reduce_sum(mask, 1), 1.0)
        out.append(np.concatenate([mean.numpy(), res["pooled_output"].numpy()], axis=1))
    return np.concatenate(out).astype(np.float64)


def score(task: str, x_train, y_train, x_dev, y_dev) -> float:
    """Headline dev score of a linear model on frozen features (the benchmark's metric for the task)."""
    import numpy as np
    from sklearn.linear_model import LogisticRegression, Ridge
    from sklearn.preprocessing import StandardScaler

    from components.evaluation.glue.run_glue import glue_scores

    scaler = StandardScaler().fit(x_train)
    x_train, x_dev = scaler.transform(x_train), scaler.transform(x_dev)
    if task == "STS-B":
        pred = Ridge(alpha=10.0).fit(x_train, y_train).predict(x_dev)
        return float(glue_scores(task, pred.reshape(-1, 1), y_dev)["score"])
    clf = LogisticRegression(C=0.1, max_iter=2000).fit(x_train, y_train)
    logits = np.log(np.clip(clf.predict_proba(x_dev), 1e-9, 1.0))
    return float(glue_scores(task, logits, y_dev)["score"])


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", required=True, help="Trainer Model artifact folder (holds albert/)")
    p.add_argument("--glue-dir", required=True)
    p.add_argument("--tasks", default="SST-2,CoLA,MRPC,RTE,STS-B")
    p.add_argument("--max-train", type=int, default=4000)
    p.add_argument("--max-seq-length", type=int, default=128)
    p.add_argument("--random-seeds", type=int, default=1)
    p.add_argument("--seed", type=int, default=12345)
    p.add_argument("--json", help="write the results here")
    args = p.parse_args(argv)

    import numpy as np

    from components.evaluation.glue import glue_data as glue_lib
    from components.evaluation.finetune import seed_everything
    from components.evaluation.heads import build_encoder
    from components.text.tokenization import AlbertTokenizer

    albert_dir = os.path.join(args.model, "albert")
    with open(os.path.join(albert_dir, "export_info.json"), encoding="utf-8") as f:
        lower = bool(json.load(f).get("do_lower_case", True))
    tokenizer = AlbertTokenizer(os.path.join(albert_dir, "spm.model"), do_lower_case=lower)
    encoders = [("pretrained", None)] + [("random_init", args.seed + i) for i in range(args.random_seeds)]
    data = {}
    for task in args.tasks.split(","):
        train = glue_lib.read_glue(task, "train", args.glue_dir)[: args.max_train]
        dev = glue_lib.read_glue(task, "dev", args.glue_dir)
        data[task] = [glue_lib.convert_glue_examples(ex, tokenizer, args.max_seq_length, task) for ex in (train, dev)]
    results: Dict[str, Dict[str, List[float]]] = {task: {} for task in data}
    for arm, seed in encoders:
        seed_everything(args.seed if seed is None else seed)
        encoder = build_encoder(albert_dir, 0.0, args.max_seq_length, restore=arm == "pretrained")
        for task, (train, dev) in data.items():
            s = score(task, features(encoder, train), train["label_ids"], features(encoder, dev), dev["label_ids"])
            results[task].setdefault(arm, []).append(s)
            print(f"{task} {arm} {'' if seed is None else f'seed {seed} '}dev score {s:.2f}", flush=True)
    summary = {task: {arm: float(np.median(v)) for arm, v in arms.items()} for task, arms in results.items()}
    print("| task | frozen pretrained | frozen random init | difference |\n|---|---|---|---|")
    for task, arms in summary.items():
        print(f"| {task} | {arms['pretrained']:.1f} | {arms['random_init']:.1f} | "
              f"{arms['pretrained'] - arms['random_init']:+.1f} |")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"args": vars(args), "runs": results, "median": summary}, f, indent=2)
    sys.stdout.flush()
    os._exit(0)  # skip interpreter teardown (see pipeline/cli.py::_exit)


if __name__ == "__main__":
    main()
