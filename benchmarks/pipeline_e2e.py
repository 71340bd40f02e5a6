"""Time the whole sample DAG end to end (LocalDagRunner by default, fresh pipeline root, no cache).

    .venv/bin/python -m benchmarks.pipeline_e2e [--preset sample] [--set key=value ...] [--runner local|beam]

Prints the wall time of the run and each node's execution time as recorded by ML Metadata.
"""
import argparse
import json
import os
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def node_times(metadata_path):
    from pipeline.local import mlmd

    store = mlmd.open_readonly(metadata_path)
    out = {}
    for execution in store.get_executions():
        nodes = [c.name.split(".")[-1] for c in store.get_contexts_by_execution(execution.id)
                 if store.get_context_types_by_id([c.type_id])[0].name == "node"]
        seconds = (execution.last_update_time_since_epoch - execution.create_time_since_epoch) / 1000.0
        out[nodes[0] if nodes else str(execution.id)] = round(seconds, 1)
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--preset", default="sample")
    parser.add_argument("--set", dest="overrides", action="append", default=[])
    parser.add_argument("--runner", default="local", choices=["local", "beam"])
    args = parser.parse_args()

    from pipeline.settings.configs import build_config
    from pipeline.settings.resolve import resolve_config

    tmp = tempfile.mkdtemp(prefix="albert_e2e_")
    config = resolve_config(build_config(args.preset, overrides=args.overrides, output_dir=tmp), local=True)
    t0 = time.time()
    from pipeline.local.local_runner import run_local  # TFX import counted separately

    t_import = time.time() - t0
    t1 = time.time()
    run_local(config, runner=args.runner)
    total = time.time() - t1
    print(json.dumps({"preset": args.preset, "runner": args.runner, "cpu_count": os.cpu_count(),
                      "tfx_import_s": round(t_import, 1), "pipeline_wall_s": round(total, 1),
                      "node_s": node_times(config.metadata_path), "output": tmp}, indent=2))
    sys.stdout.flush()
    os._exit(0)  # skip interpreter teardown (see pipeline/cli.py::_exit)


if __name__ == "__main__":
    main()
