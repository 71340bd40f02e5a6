"""Where a pretraining step's time goes: the Trainer's step under TensorFlow's profiler, op time by kind.

    .venv/bin/python -m benchmarks.step_profile [--preset small] [--vocab 8000] [--precision mixed_bfloat16]
        [--steps 10] [--set key=value ...] [--json FILE]

Builds the preset's model, optimizer and the Trainer's own step (``trainer.train_step.make_train_step``) on a
real-shaped random batch (the precision probe's), traces and warms it up, then profiles ``--steps`` steps and
reads the profile's host plane (XPlane): every TensorFlow op event with its name scope and type. It prints the
op time per step by *kind* (matmuls, casts, the LayerNorm, GELU and softmax ops, gathers and the embedding
gradient, the optimizer update, the rest) and by *phase* (forward, backward, update), the 15 costliest op types,
and the step's wall time, so that what bf16 leaves on the table is measured, not guessed. Op times are summed
over threads: with intra-op parallelism they can exceed the wall time; their shares are what matters.
"""
from __future__ import annotations

import argparse
import collections
import glob
import json
import os
import re
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from trainer.precision import cpu_model  # noqa: E402  (imports no TensorFlow)

# Op type -> kind, matched on the type TensorFlow records (the part after ":" in an op event's name) with oneDNN's
# "_Mkl" / "_MklNative" prefix taken off (_MklEinsum is an Einsum, _MklTranspose a Transpose).
KINDS = (
    ("matmul", r"^(_?Fused)?(Batch)?MatMul(V2|V3)?$|^Einsum$"),
    ("cast", r"^Cast$"),
    ("softmax", r"Softmax"),
    ("gather / embedding gradient", r"Gather|Scatter|UnsortedSegment|OneHot|SparseSegment|DynamicStitch"),
    ("reductions (LayerNorm, norms, losses)", r"^(Mean|Sum|Max|Min|Prod|SquaredDifference|Rsqrt|RsqrtGrad|Sqrt|"
                                               r"L2Loss|FusedBatchNorm.*|LayerNorm|ArgMax)$"),
    ("elementwise (GELU, adds, scales)", r"^(_?Fused)?(Add|AddV2|AddN|Sub|Mul|RealDiv|Div|DivNoNan|Neg|Pow|Tanh|"
                                          r"TanhGrad|Exp|Log|Maximum|Minimum|Select|SelectV2|Where|Relu|Erf|Sign|"
                                          r"Square|Reciprocal|BiasAdd|BiasAddGrad|Greater|Less|Equal|MulAdd.*)$"),
    ("layout (reshape, transpose, concat, slice)", r"^(Reshape|Transpose|ConcatV2|Slice|StridedSlice|Pack|Unpack|"
                                                    r"Tile|ExpandDims|Squeeze|Fill|ZerosLike|OnesLike|Identity|"
                                                    r"BroadcastTo|StridedSliceGrad|Split|SplitV|Pad)$"),
    ("variables (reads, assigns)", r"ReadVariableOp|AssignVariableOp|AssignAddVariableOp|AssignSubVariableOp|"
                                   r"ResourceApply|VarHandleOp"),
)


def kind_of(op_type: str) -> str:
    base = re.sub(r"^_Mkl(Native)?", "", op_type)
    for kind, pattern in KINDS:
        if re.search(pattern, base):
            return kind
    return "other"


def phase_of(name: str) -> str:
    """Forward, backward or update, from the op's name scope (tf.GradientTape names gradient ops ``gradient_tape``
    / ``gradients``; the optimizer's ops sit under its name, ``apply_gradients`` or ``Lamb`` / ``AdamW``)."""
    low = name.lower()
    if "gradient_tape" in low or "gradients/" in low or low.startswith("gradients"):
        return "backward"
    if any(k in low for k in ("apply_gradients", "lamb", "adamw", "optimizer", "clip")):
        return "update"
    return "forward"


def read_ops(logdir: str):
    """(op name, op type, duration ps) of every TensorFlow op event on the host plane of the profile in ``logdir``."""
    from tensorflow.tsl.profiler.protobuf import xplane_pb2

    paths = glob.glob(os.path.join(logdir, "**", "*.xplane.pb"), recursive=True)
    if not paths:
        raise SystemExit(f"no profile written under {logdir}")
    space = xplane_pb2.XSpace()
    with open(paths[0], "rb") as f:
        space.ParseFromString(f.read())
    for plane in space.planes:
        if not plane.name.startswith("/host:CPU"):
            continue
        metadata = {k: v.name for k, v in plane.event_metadata.items()}
        for line in plane.lines:
            for event in line.events:
                name = metadata.get(event.metadata_id, "")
                if ":" not in name or name.startswith("__inference") or "::" in name:
                    continue  # not a TF op event (function calls, executor and runtime scopes)
                op_name, op_type = name.rsplit(":", 1)
                if not re.fullmatch(r"_?[A-Z][A-Za-z0-9_]*", op_type):
                    continue
                yield op_name, op_type, event.duration_ps


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--preset", default="small")
    p.add_argument("--vocab", type=int, default=8000, help="vocabulary size (the small preset trains 8k)")
    p.add_argument("--precision", default="mixed_bfloat16", choices=["float32", "mixed_bfloat16"])
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--predictions", type=int, default=20)
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--json", help="also write the result here")
    args = p.parse_args(argv)

    import tensorflow as tf
    import tf_keras

    from pipeline.settings.configs import build_config
    from trainer.modeling_albert import AlbertConfig
    from trainer.precision_probe import probe_batch as _probe_batch
    from trainer.train_step import build_model_and_optimizer, make_train_step

    config = build_config(args.preset, None, args.overrides)
    t = config.train
    tf_keras.mixed_precision.set_global_policy(args.precision)
    tf_keras.utils.set_random_seed(config.seed)
    albert = AlbertConfig(**config.model.encoder_fields(args.vocab))
    model, optimizer = build_model_and_optimizer(albert, t, args.seq, args.predictions)
    step = make_train_step(model, optimizer, tf.distribute.get_strategy(), grad_accum_steps=1,
                           clip_norm=t.clip_norm, seed=config.seed)
    batch = _probe_batch(t.train_batch_size, args.seq, args.predictions, args.vocab)
    feed = iter(tf.data.Dataset.from_tensors(batch).repeat())
    for _ in range(3):  # tracing, first touch
        step(feed).numpy()
    start = time.perf_counter()
    for _ in range(args.steps):
        step(feed).numpy()
    wall = (time.perf_counter() - start) / args.steps

    logdir = tempfile.mkdtemp(prefix="albert-profile-")
    tf.profiler.experimental.start(logdir)
    for _ in range(args.steps):
        step(feed).numpy()
    tf.profiler.experimental.stop()

    by_kind, by_phase, by_type = (collections.Counter() for _ in range(3))
    for op_name, op_type, ps in read_ops(logdir):
        ms = ps / 1e9 / args.steps
        by_kind[kind_of(op_type)] += ms
        by_phase[phase_of(op_name)] += ms
        by_type[op_type] += ms
    total = sum(by_kind.values())
    share = lambda c: {k: {"ms": round(v, 2), "share": round(v / total, 3)} for k, v in c.most_common()}  # noqa: E731
    result = {"cpu": cpu_model(), "threads": os.cpu_count(), "precision": args.precision,
              "shape": {"size": config.model.size, "hidden": albert.hidden_size, "layers": albert.num_hidden_layers,
                        "vocab": args.vocab, "batch": t.train_batch_size, "seq": args.seq},
              "optimizer": t.optimizer, "wall_ms_per_step": round(wall * 1000, 1),
              "op_ms_per_step": round(total, 1), "by_kind": share(by_kind), "by_phase": share(by_phase),
              "top_op_types": share(collections.Counter(dict(by_type.most_common(15))))}
    print(json.dumps(result, indent=1))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
