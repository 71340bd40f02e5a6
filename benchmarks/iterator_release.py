"""How long does dropping a fine-tuning run's input iterator take, with tf.data's autotuner and without?

A fine-tuning node opens one iterator per run and drops it when the run ends. Left to the autotuner, the drop
waits until the tuner's thread wakes from its current sleep, and that sleep grows with the iterator's age: the
`small` recipe's runs started 0-60 s late (README, "Measured numbers"). ``trainer.input_pipeline.short_lived``
turns the tuner off for such pipelines. This times the drop of the real fine-tuning pipeline
(``components.evaluation.finetune.train_dataset``, RACE-shaped rows) after it fed batches at a step's pace for
each ``--ages`` seconds, with the tuner on (TensorFlow's default) and off, side by side.

    .venv/bin/python benchmarks/iterator_release.py [--ages 10,25,40,60] [--pace 0.4]
"""
from __future__ import annotations

import argparse
import os
import platform
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def drop_seconds(ds, age: float, pace: float) -> float:
    """Seconds that ``del iterator`` takes after the iterator fed one batch per ``pace`` seconds for ``age``."""
    iterator = iter(ds)
    start = time.time()
    while time.time() - start < age:
        next(iterator)
        time.sleep(pace)
    t = time.time()
    del iterator
    return time.time() - t


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ages", default="10,25,40,60", help="seconds each iterator is used before it is dropped")
    p.add_argument("--pace", type=float, default=0.4, help="seconds between batches (a fine-tuning step)")
    args = p.parse_args(argv)
    import numpy as np
    import tensorflow as tf

    from components.evaluation.finetune import train_dataset
    from trainer.precision import cpu_model

    rng = np.random.default_rng(0)
    rows = {"input_ids": rng.integers(5, 8000, (3000, 4, 128)).astype(np.int32),
            "input_mask": np.ones((3000, 4, 128), np.int32), "segment_ids": np.zeros((3000, 4, 128), np.int32),
            "label_ids": rng.integers(0, 4, 3000).astype(np.int32)}
    print(f"CPU: {cpu_model()} ({platform.machine()}, {os.cpu_count()} cores); TensorFlow {tf.__version__}")
    print("| iterator age | drop with the autotuner (TF default) | drop with `short_lived` |")
    print("|---|---|---|")
    for age in [float(a) for a in args.ages.split(",")]:
        on = drop_seconds(train_dataset(None, rows, 8, seed=0, dynamic=False, autotune=True)[0], age, args.pace)
        off = drop_seconds(train_dataset(None, rows, 8, seed=0, dynamic=False)[0], age, args.pace)
        print(f"| {age:.0f} s | {on:.2f} s | {off:.2f} s |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
