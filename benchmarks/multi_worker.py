"""Pretraining on 1 process vs 2 workers (``train.strategy=multi_worker``, loopback), same global batch, side by side.

Both arms are ``albert-pipeline pretrain`` on the same masked examples (a folder laid out like the Examples
artifact: ``albert-pipeline make-pretraining-data`` writes one). The 2-worker arm starts two processes with
``TF_CONFIG`` on 127.0.0.1 ports; each computes half of every global batch and all-reduces the gradients. Printed:
steps/s of each arm (median over the logged windows after the first, which holds tracing), the ratio, wall time,
and the largest relative difference between the two arms' logged losses (the runs are the same run)::

    python -m benchmarks.multi_worker --examples outputs/examples --steps 60 --batch 32 --output outputs/mw

On one machine the two workers share its cores, so this measures correctness and the all-reduce overhead, not a
speed-up; docs/running-at-scale.md "Running at scale" turns gradient bytes into all-reduce time for real interconnects.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
from trainer.distribute import free_loopback_addresses  # noqa: E402  (imports no TensorFlow)
from trainer.precision import cpu_model  # noqa: E402  (imports no TensorFlow)


def command(examples: str, output: str, overrides) -> list:
    exe = os.path.join(os.path.dirname(sys.executable), "albert-pipeline")
    return [exe, "pretrain", "--examples", examples, "--output", output] + [f"--set={o}" for o in overrides]


def history(output: str):
    with open(os.path.join(output, "model_run", "train_history.jsonl")) as f:
        return [r for r in map(json.loads, f) if r["split"] == "train"]


def run_arm(examples: str, output: str, overrides, workers: int) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("TF_CONFIG", "CLUSTER_SPEC")}
    env.update(PYTHONPATH=REPO, TF_CPP_MIN_LOG_LEVEL="2", TF_USE_LEGACY_KERAS="1")
    start = time.time()
    if workers == 1:
        procs = [subprocess.Popen(command(examples, output, overrides + ["train.strategy=cpu"]), env=env,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)]
    else:
        addresses = free_loopback_addresses(workers)
        procs = [subprocess.Popen(
            command(examples, output, overrides + ["train.strategy=multi_worker"]),
            env={**env, "TF_CONFIG": json.dumps({"cluster": {"worker": addresses},
                                                 "task": {"type": "worker", "index": i}})},
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True) for i in range(workers)]
    for p in procs:
        _, err = p.communicate()
        if p.returncode != 0:
            raise SystemExit(f"{workers}-process arm failed (rc {p.returncode}): {err[-2000:]}")
    wall = time.time() - start
    lines = history(output)
    batch = next(int(o.split("=", 1)[1]) for o in overrides if o.startswith("train.train_batch_size="))
    rates = [r["sequences_per_sec"] / batch for r in lines[1:]] or [lines[0]["sequences_per_sec"] / batch]
    return {"processes": workers, "steps_per_sec": statistics.median(rates), "wall_s": wall,
            "losses": [r["loss"] for r in lines]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--examples", help="masked examples folder (Split-train/, Split-eval/, vocab/spm.model)")
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--batch", type=int, default=32, help="global batch (each of 2 workers computes half)")
    ap.add_argument("--log-every", type=int, default=10)
    ap.add_argument("--set", dest="overrides", action="append", default=[], metavar="SECTION.KEY=VALUE",
                    help="more pretrain settings, e.g. --set model.size=albert-base")
    ap.add_argument("--output", default=os.path.join("outputs", "multi_worker"))
    args = ap.parse_args(argv)
    if not args.examples or not os.path.isdir(os.path.join(args.examples, "Split-train")):
        print(f"multi_worker.py: error: --examples {args.examples or '(missing)'} is not a masked examples folder "
              "(with Split-train/; `albert-pipeline make-pretraining-data` writes one)", file=sys.stderr)
        return 2
    overrides = [f"train.num_train_steps={args.steps}", f"train.train_batch_size={args.batch}",
                 f"train.log_every={args.log_every}", "train.eval_every=0", "train.checkpoint_every=0",
                 "train.eval_steps=1", "train.eval_batch_size=8", "train.num_warmup_steps=5",
                 "model.dropout=0.0"] + args.overrides
    shutil.rmtree(args.output, ignore_errors=True)
    arms = [run_arm(args.examples, os.path.join(args.output, f"{n}proc"), overrides, n) for n in (1, 2)]
    one, two = arms
    drift = max(abs(a - b) / abs(a) for a, b in zip(one["losses"], two["losses"]))
    result = {"cpu": cpu_model(), "cores": os.cpu_count(), "steps": args.steps, "global_batch": args.batch,
              "overrides": args.overrides, "arms": [{k: v for k, v in a.items() if k != "losses"} for a in arms],
              "two_over_one": two["steps_per_sec"] / one["steps_per_sec"], "max_loss_rel_diff": drift}
    print(f"{result['cpu']}, {result['cores']} cores; {args.steps} steps of global batch {args.batch}")
    print("| processes | steps/s | wall s |")
    print("|---|---|---|")
    for a in arms:
        print(f"| {a['processes']} | {a['steps_per_sec']:.3f} | {a['wall_s']:.1f} |")
    print(f"2 workers / 1 process: {result['two_over_one']:.2f}x; largest relative loss difference {drift:.2e}")
    os.makedirs(args.output, exist_ok=True)
    with open(os.path.join(args.output, "multi_worker.json"), "w") as f:
        json.dump(result, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
