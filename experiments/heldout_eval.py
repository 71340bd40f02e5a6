"""Held-out MLM and sentence-order accuracy of pretrained models on one split of an examples folder.

    .venv/bin/python -m experiments.heldout_eval --examples DIR [--split eval_long] [--instances 1280]
        --model MODEL_DIR [MODEL_DIR ...]

``MODEL_DIR``: a Trainer ``model`` artifact or ``albert-pipeline pretrain``'s ``<output>/model`` (it holds
``albert/``, whose full pretraining checkpoint, heads included, is scored). ``--split eval_long`` scores the
two-phase schedule's long held-out instances at their own length, which the Trainer's periodic evaluation does not
read (it stays on the short split so that curves compare across the switch): this is how a run with a long phase
is compared with one without on the sequences the long phase is for. Prints one JSON line per model.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--examples", required=True, help="make-pretraining-data output or Examples artifact folder")
    p.add_argument("--split", default="eval", help="eval (default) or eval_long")
    p.add_argument("--instances", type=int, default=1280, help="score the first N instances of the split")
    p.add_argument("--sentence-task", default="sop", choices=["sop", "nsp"])
    p.add_argument("--model", nargs="+", required=True)
    args = p.parse_args(argv)
    if not os.path.isdir(os.path.join(args.examples, f"Split-{args.split}")):
        print(f"error: {args.examples} has no Split-{args.split}/", file=sys.stderr)
        return 2
    from experiments.learning_recipe import sentence_eval

    for model in args.model:
        scores = sentence_eval(model, args.sentence_task, args.examples, args.instances, split=args.split)
        print(json.dumps({"model": model, "split": args.split, **scores}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
