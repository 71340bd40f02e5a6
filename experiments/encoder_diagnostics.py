"""Does a pretrained encoder read its context? Attention, position embeddings and a counting floor, per model.

    .venv/bin/python -m experiments.encoder_diagnostics --examples DIR --model MODEL_DIR [MODEL_DIR ...]
        [--instances 1280] [--attention-instances 64]

``DIR``: the examples the models were pretrained on (``make-pretraining-data`` output or a ``PretrainingDataGen``
artifact); ``MODEL_DIR``: a Trainer ``model`` artifact or ``albert-pipeline pretrain``'s ``<output>/model``.
Prints one JSON line for the examples (the neighbour-count table's held-out accuracy, fitted on the whole training
split, scored on the first ``--instances`` held-out instances: the floor an encoder that reads its neighbours
passes) and one per model (attention from masked positions to their neighbours, [CLS] and [SEP], per layer and
head, against the uniform distribution,
position-embedding similarity, and each encoder kernel's norm against its expected norm at initialisation). The
measures are defined in ``trainer/diagnostics.py``.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def read_instances(examples: str, split: str, limit: int = 0):
    """The split's instances as numpy arrays (files in sorted order; ``limit`` > 0: the first ``limit``)."""
    import numpy as np

    from trainer.input_pipeline import make_dataset

    info = json.load(open(os.path.join(examples, "dataset_info.json"), encoding="utf-8"))
    ds = make_dataset([os.path.join(examples, f"Split-{split}", "*")], 256, int(info["max_seq_length"]),
                      int(info["max_predictions_per_seq"]), training=False, seed=0)
    parts, seen = [], 0
    for inputs, labels in ds:
        parts.append({k: v.numpy() for k, v in {**inputs, **labels}.items()})
        seen += len(parts[-1]["input_ids"])
        if limit and seen >= limit:
            break
    out = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
    return {k: v[:limit] if limit else v for k, v in out.items()}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--examples", required=True)
    p.add_argument("--model", nargs="+", required=True)
    p.add_argument("--instances", type=int, default=1280, help="held-out instances for the counting floor")
    p.add_argument("--attention-instances", type=int, default=64, help="held-out instances for attention")
    args = p.parse_args(argv)
    for split in ("train", "eval"):
        if not os.path.isdir(os.path.join(args.examples, f"Split-{split}")):
            print(f"error: {args.examples} has no Split-{split}/", file=sys.stderr)
            return 2
    import sentencepiece as spm

    from trainer import diagnostics
    from trainer.convert import load_albert_dir

    sp = spm.SentencePieceProcessor(model_file=os.path.join(args.examples, "vocab", "spm.model"))
    heldout = read_instances(args.examples, "eval", args.instances)
    floor = diagnostics.neighbour_table_accuracy(read_instances(args.examples, "train"), heldout,
                                                 mask_id=sp.piece_to_id("[MASK]"), vocab_size=sp.get_piece_size())
    print(json.dumps({"examples": args.examples, "neighbour_table": floor}), flush=True)
    sample = {k: v[:args.attention_instances] for k, v in heldout.items()}
    length = int(sample["input_mask"].shape[1])
    for model_dir in args.model:
        model = load_albert_dir(os.path.join(model_dir, "albert"))
        layers = diagnostics.attention_profile(model, sample)
        similarity = diagnostics.position_similarity(model.albert.embeddings.position_embeddings.numpy(), length)
        growth = diagnostics.kernel_growth(model)
        print(json.dumps({"model": model_dir, "attention": layers, "position_cosine": similarity,
                          "kernel_growth": growth}), flush=True)
        for i, layer in enumerate(layers):
            heads = " | ".join(" ".join(f"{m:.3f}" for m in head) + f" H {e:.2f}"
                               for head, e in zip(layer["mass"], layer["entropy"]))
            print(f"  layer {i}: mass at offsets {layer['offsets']} per head: {heads} "
                  f"(uniform {layer['uniform_mass']:.3f}, H {layer['uniform_entropy']:.2f}); [CLS] "
                  + " ".join(f"{m:.3f}" for m in layer["cls_mass"]) + ", [SEP] "
                  + " ".join(f"{m:.3f}" for m in layer["sep_mass"])
                  + f" (uniform {layer['uniform_sep_mass']:.3f})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
