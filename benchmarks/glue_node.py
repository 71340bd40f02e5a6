"""What the sample run's GlueBenchmark node computes, in one process: CPU and wall seconds, per task.

    .venv/bin/python -m benchmarks.glue_node --albert-dir OUT/pipeline_root/Trainer/model/<id>/albert --output DIR

``run_benchmark("glue")`` with the ``sample`` preset's benchmark settings on the bundled GLUE sample (every task,
both arms, the raw-text serving export with its tf.Transform graph, TFMA), from an encoder a sample run's Trainer
exported: the node's work without the DAG around it. CPU seconds are the process's (every thread, Beam's in-process
runner included), so load from other processes counts far less than in the node's wall time; run it with
``TF_NUM_INTRAOP_THREADS=1 TF_NUM_INTEROP_THREADS=1`` as the node-time rows of docs/performance.md do. Run it on
two checkouts on the same ``--albert-dir`` to compare implementations: ``DIR/result/metrics.json`` and the
prediction files must then be equal but for paths and seconds. Library warnings go to ``DIR/glue_node.log`` and,
as ``albert-pipeline`` prints them, to stderr.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from trainer.precision import cpu_model  # noqa: E402  (imports no TensorFlow)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--albert-dir", required=True, help="a Trainer's exported albert folder (albert_config.json, ...)")
    p.add_argument("--output", required=True, help="folder for result/ (metrics, predictions) and the log")
    args = p.parse_args(argv)
    import components  # noqa: F401  (TF_USE_LEGACY_KERAS before TF)
    from pipeline.local import logs

    os.makedirs(args.output, exist_ok=True)
    logs.setup(os.path.join(args.output, "glue_node.log"))
    from components.evaluation.run_benchmark import run_benchmark
    from pipeline.settings.configs import build_config

    cfg = build_config("sample")
    cpu, wall = time.process_time(), time.time()
    metrics = run_benchmark("glue", args.albert_dir, cfg.benchmarks.glue_dir, cfg, os.path.join(args.output, "result"))
    result = {"cpu": f"{cpu_model()}, {os.cpu_count()} cores", "cpu_s": round(time.process_time() - cpu, 2),
              "wall_s": round(time.time() - wall, 2), "seconds": metrics.get("seconds")}
    print(json.dumps(result, indent=1), flush=True)
    return 0


if __name__ == "__main__":
    main()
    sys.stderr.flush()
    os._exit(0)  # skip interpreter teardown (see pipeline/cli.py::_exit)
