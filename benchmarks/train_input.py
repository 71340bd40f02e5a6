"""Does the training input cost step time? The Trainer's step fed by its real input pipeline vs one constant batch.

    .venv/bin/python -m benchmarks.train_input --examples DIR [--preset small] [--precision mixed_bfloat16]
        [--windows 4] [--steps 40] [--set key=value ...]

``DIR``: a ``make-pretraining-data`` output or a pipeline Examples artifact. One process builds the preset's model
and optimizer and the Trainer's own step (``trainer.train_step.make_train_step``), then alternates windows of
``--steps`` steps fed by (a) ``input_pipeline.make_pretraining_dataset`` (the seekable, block-shuffled GZIP stream
the Trainer reads) and (b) one batch of it repeated from memory, so machine load falls on both. It prints the
seconds per step of every window, the medians, and the input pipeline alone (batches per second drawn with no
step running). If (a) equals (b), a loop slower than the precision probe is the step's own sustained speed, not
the input. On 2 cores the tf.data threads share the cores with the step, so this also shows their contention.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from trainer.precision import cpu_model  # noqa: E402  (imports no TensorFlow)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--examples", required=True, help="make-pretraining-data output folder")
    p.add_argument("--preset", default="small")
    p.add_argument("--precision", default="mixed_bfloat16", choices=["float32", "mixed_bfloat16"])
    p.add_argument("--windows", type=int, default=4, help="windows per feed, alternating")
    p.add_argument("--steps", type=int, default=40, help="steps per window")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    args = p.parse_args(argv)
    if not os.path.isdir(os.path.join(args.examples, "Split-train")):
        print(f"error: {args.examples} has no Split-train/: give a make-pretraining-data output", file=sys.stderr)
        return 2

    import sentencepiece as spm
    import tensorflow as tf
    import tf_keras

    from pipeline.settings.configs import build_config
    from trainer import examples_info, input_pipeline
    from trainer.modeling_albert import AlbertConfig
    from trainer.train_step import build_model_and_optimizer, make_train_step

    config = build_config(args.preset, None, args.overrides)
    t = config.train
    info = examples_info.read_info(args.examples)
    seq, preds = int(info["max_seq_length"]), int(info["max_predictions_per_seq"])
    vocab = spm.SentencePieceProcessor(model_file=os.path.join(args.examples, "vocab", "spm.model")).get_piece_size()
    tf_keras.mixed_precision.set_global_policy(args.precision)
    tf_keras.utils.set_random_seed(config.seed)
    model, optimizer = build_model_and_optimizer(AlbertConfig(**config.model.encoder_fields(vocab)), t, seq, preds)
    step = make_train_step(model, optimizer, tf.distribute.get_strategy(), grad_accum_steps=1,
                           clip_norm=t.clip_norm, seed=config.seed)
    files = input_pipeline.expand_files([os.path.join(args.examples, "Split-train", "*")])
    counts = input_pipeline.record_counts(files)

    def stream():
        return input_pipeline.make_pretraining_dataset(files, t.train_batch_size, seq, preds, seed=config.seed,
                                                       shuffle_block=t.shuffle_buffer, counts=counts)

    feeds = {"input pipeline": iter(stream()),
             "constant batch": iter(tf.data.Dataset.from_tensors(next(iter(stream()))).repeat())}
    for feed in feeds.values():  # tracing and first touch, untimed
        step(feed).numpy()
    seconds = {name: [] for name in feeds}
    for _ in range(args.windows):
        for name, feed in feeds.items():
            start = time.perf_counter()
            for _ in range(args.steps):
                values = step(feed)
            values.numpy()
            seconds[name].append((time.perf_counter() - start) / args.steps)
    start, n = time.perf_counter(), 200
    for _ in range(n):
        next(feeds["input pipeline"])
    alone = (time.perf_counter() - start) / n
    result = {"cpu": cpu_model(), "threads": os.cpu_count(), "precision": args.precision,
              "shape": {"batch": t.train_batch_size, "seq": seq, "predictions": preds, "vocab": vocab},
              "seconds_per_step": {k: [round(x, 4) for x in v] for k, v in seconds.items()},
              "median_seconds_per_step": {k: round(statistics.median(v), 4) for k, v in seconds.items()},
              "input_alone_seconds_per_batch": round(alone, 5)}
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
