"""TFX's two local DAG runners side by side: CPU seconds of the same small DAG under each, alternating in one process.

    .venv/bin/python -m benchmarks.dag_runners [--pairs 3] [--output-dir outputs/dag_runners]

The DAG is tests/test_change_impact.py's (the sample preset with its ``BASE`` overrides: every node, a few steps
each), run from scratch each time in a folder of its own under ``--output-dir``, after one uncounted run (a process's
first run pays one-time costs: imports, first traces). Prints JSON: each run's CPU and wall seconds, and the ratio
of the runners' CPU means.
"""
import argparse
import json
import os
import resource
import shutil
import statistics
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pairs", type=int, default=3, help="runs of each runner, alternating (default 3)")
    parser.add_argument("--output-dir", default=os.path.join("outputs", "dag_runners"))
    args = parser.parse_args()

    from pipeline.settings.configs import build_config
    from pipeline.local.local_runner import RUNNERS, run_local
    from pipeline.settings.resolve import resolve_config
    from tests.test_change_impact import BASE
    from trainer import gc_tuning

    gc_tuning.tune()
    shutil.rmtree(args.output_dir, ignore_errors=True)
    run_local(resolve_config(build_config("sample", overrides=BASE, output_dir=os.path.join(args.output_dir, "warm-up")),
                             local=True))
    runs = []
    for i in range(args.pairs):
        for runner in (RUNNERS if i % 2 == 0 else RUNNERS[::-1]):  # each runner goes first as often
            out = os.path.join(args.output_dir, f"{runner}-{i}")
            cpu, wall = _cpu(), time.monotonic()
            run_local(resolve_config(build_config("sample", overrides=BASE, output_dir=out), local=True), runner=runner)
            runs.append({"runner": runner, "cpu_s": round(_cpu() - cpu, 2), "wall_s": round(time.monotonic() - wall, 2)})
    mean = {r: statistics.mean(x["cpu_s"] for x in runs if x["runner"] == r) for r in RUNNERS}
    print(json.dumps({"runs": runs, "cpu_mean_s": mean, "cpu_ratio_beam_over_local": round(mean["beam"] / mean["local"], 3)},
                     indent=2))


if __name__ == "__main__":
    main()
