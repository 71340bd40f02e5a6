"""What the fine-tuning Transform graph costs: its size, one trace, tf.Transform's Beam build, one load.

    .venv/bin/python -m benchmarks.transform_graph [--length 64] [--rounds 3] [--rows N]

For a sentence-pair task (MRPC) and a single-sentence one (CoLA) of the bundled GLUE sample (100 dev rows each)
and the bundled 30k vocabulary: the number of ops in the traced ``preprocessing_fn``, the CPU seconds of tracing
it, of ``transform.analyze_and_transform`` (tf.Transform's AnalyzeAndTransformDataset on Beam, writing the
transform function) and of loading that function back as a SavedModel. Every GLUE task with a serving export pays
these (once per input shape for tf.Transform) and TFMA loads the graph again. Each number is the median of
``--rounds`` rounds in one process (the first Beam pipeline of a process also pays Beam's start-up); CPU seconds,
so load from other processes does not count. Run it on two checkouts to compare two implementations side by side.
``--rows N``: the dev rows repeated to N rows (a full GLUE dev set is 0.3k-10k rows, QQP's 40k), which is where
the cost of handing rows to tf.Transform and reading them back shows.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import statistics
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from trainer.precision import cpu_model  # noqa: E402  (imports no TensorFlow)

TASKS = (("MRPC", True), ("CoLA", False))


def measure(task: str, pair: bool, length: int, proto: bytes, n_rows: int = 0) -> dict:
    import tensorflow as tf

    from components.evaluation.glue import glue_data as glue_lib
    from components.evaluation.glue import transform

    rows = [{"text_a": e.text_a, **({"text_b": e.text_b} if pair else {})}
            for e in glue_lib.read_glue(task, "dev", os.path.join(REPO, "data", "sample", "glue"))]
    if n_rows:
        rows = (rows * (n_rows // len(rows) + 1))[:n_rows]
    fn = transform.make_preprocessing_fn(proto, length, has_text_b=pair)
    spec = {k: tf.TensorSpec([None], tf.string) for k in transform.text_keys(pair)}
    start = time.process_time()
    graph = tf.function(fn, autograph=False).get_concrete_function(spec).graph
    traced = time.process_time() - start
    out = tempfile.mkdtemp(prefix="transform_graph_")
    start = time.process_time()
    transformed = transform.analyze_and_transform(rows, fn, has_text_b=pair,
                                                  transform_output_dir=os.path.join(out, "transform"),
                                                  temp_dir=os.path.join(out, "tmp"))
    assert len(transformed) == len(rows)
    built = time.process_time() - start
    start = time.process_time()
    tf.saved_model.load(glob.glob(os.path.join(out, "transform", "transform_fn"))[0])
    return {"ops": len(graph.get_operations()), "trace_s": traced, "analyze_and_transform_s": built,
            "load_s": time.process_time() - start}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--length", type=int, default=64, help="max_seq_length of the graph (the sample preset's GLUE)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--rows", type=int, default=0, help="repeat the dev rows to this many (default: as they are)")
    args = p.parse_args(argv)
    import components  # noqa: F401  (TF_USE_LEGACY_KERAS before TF)

    with open(os.path.join(REPO, "data", "sample", "vocab", "30k-clean.model"), "rb") as f:
        proto = f.read()
    result = {"cpu": f"{cpu_model()}, {os.cpu_count()} cores", "length": args.length, "rounds": args.rounds,
              "rows": args.rows or "dev"}
    for task, pair in TASKS:
        rounds = [measure(task, pair, args.length, proto, args.rows) for _ in range(args.rounds)]
        result[task] = {k: round(statistics.median(r[k] for r in rounds), 3) for k in rounds[0]}
    print(json.dumps(result, indent=1), flush=True)
    return 0


if __name__ == "__main__":
    main()
    sys.stderr.flush()
    os._exit(0)  # skip interpreter teardown (see pipeline/cli.py::_exit)
