"""Does the gain over no pretraining depend on the fine-tuning budget? The recipe's GLUE protocol at its own step
counts and at ``--scale`` times them, both arms, same seeds, side by side in one run.

The CPU-scale recipe fine-tunes for a fraction of an epoch (its budget is 90 minutes for the whole DAG), and on
CoLA, MRPC and RTE every run of both arms predicts one class. This asks whether that is the budget: the same
pretrained ``Model`` artifact, the preset's hyper-parameters with ``train_steps`` and ``warmup_steps`` multiplied
by each scale, through the benchmark runner the GlueBenchmark node runs (``components.evaluation.run_benchmark``), with
the ``random_init`` arm, no GLUE test predictions. Printed and written (``--output``/``budget.md``, ``budget.json``)
per task and scale: both arms' median [min–max] over seeds, the paired gain, "beyond seed spread", the
majority-class floor and the one-class runs.

    .venv/bin/python -m experiments.finetune_budget --model MODEL_ARTIFACT_URI --glue-dir DIR \\
        [--tasks RTE,STS-B,SST-2] [--scales 1,3] [--preset small] [--output DIR]

``MODEL_ARTIFACT_URI`` is a Trainer ``Model`` artifact folder (``albert/`` inside). Scales run in the order given;
scale 1 is the recipe's own protocol (the same seeds and code as its GlueBenchmark node).
"""
from __future__ import annotations

import argparse
import copy
import json
import os
import sys
import time
from typing import Any, Dict, List, Optional

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from trainer.formatting import beyond_spread_text, spread_text  # noqa: E402


def scaled_overrides(config, tasks: List[str], scale: float) -> List[str]:
    """``key=value`` overrides: the tasks, no test predictions, and each task's steps and warmup times ``scale``."""
    out = [f"benchmarks.glue_tasks=[{','.join(tasks)}]"]
    for task in tasks:
        hp = config.benchmarks.hparams[task]
        out += [f"benchmarks.hparams.{task}.train_steps={max(1, round(hp.train_steps * scale))}",
                f"benchmarks.hparams.{task}.warmup_steps={round(hp.warmup_steps * scale)}"]
    return out


def budget_row(result: Dict[str, Any], task: str, scale: float, steps: int) -> Optional[Dict[str, Any]]:
    """One table row from ``run_benchmark``'s result: the gain over ``random_init`` and both arms' seconds."""
    gain = result["gain_over_baseline"]["random_init"].get(task)
    if gain is None:
        return None
    seconds = result["seconds"].get(task, 0.0) + sum(arm["seconds"].get(task, 0.0)
                                                     for arm in result["baselines"].values())
    return {"task": task, "scale": scale, "steps": steps, "gain": gain, "seconds": seconds}


def table(rows: List[Dict[str, Any]]) -> str:
    lines = ["| task | scale | steps | pretrained | random init | paired gain per seed | beyond seed spread "
             "| majority-class floor | one-class runs (pretrained / random) | seconds |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        g = r["gain"]
        one = g.get("single_class_runs") or {}
        one_text = "—" if one.get("pretrained") is None else f"{one['pretrained']} / {one['baseline']}"
        floor = g.get("majority_baseline")
        floor_text = "—" if floor is None else f"{floor:.1f}"
        lines.append(f"| {r['task']} | {r['scale']:g} | {r['steps']} | {spread_text(g['pretrained'])} | "
                     f"{spread_text(g['baseline'])} | {spread_text(g['gain_paired'], signed=True)} | "
                     f"{beyond_spread_text(g)} | {floor_text} | {one_text} | {r['seconds']:.0f} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", required=True, help="Trainer Model artifact folder (albert/ inside)")
    p.add_argument("--glue-dir", required=True, help="GLUE root holding <TASK>/train.tsv and dev.tsv")
    p.add_argument("--tasks", default="RTE,STS-B,SST-2")
    p.add_argument("--scales", default="1,3", help="comma-separated multipliers of the preset's step counts")
    p.add_argument("--preset", default="small")
    p.add_argument("--output", default=os.path.join("outputs", "finetune_budget"))
    p.add_argument("--set", dest="overrides", action="append", default=[], help="section.key=value")
    args = p.parse_args(argv)
    albert_dir = os.path.join(args.model, "albert")
    if not os.path.isdir(albert_dir):
        p.error(f"--model {args.model}: no albert/ folder (expected a Trainer Model artifact)")
    if not os.path.isdir(args.glue_dir):
        p.error(f"--glue-dir {args.glue_dir} does not exist")
    tasks = [t.strip() for t in args.tasks.split(",") if t.strip()]
    scales = [float(s) for s in args.scales.split(",")]
    os.makedirs(args.output, exist_ok=True)
    from pipeline.local import logs

    # Fine-tuning progress (per task and run) on stderr, the full log in <output>/budget.log.
    logs.setup(os.path.join(args.output, "budget.log"))
    from pipeline.settings.configs import build_config

    from components.evaluation.run_benchmark import run_benchmark

    base = build_config(args.preset, overrides=args.overrides)
    rows: List[Dict[str, Any]] = []
    for scale in scales:
        cfg = build_config(args.preset, overrides=args.overrides + scaled_overrides(base, tasks, scale) + [
            f"benchmarks.glue_dir={os.path.abspath(args.glue_dir)}", "benchmarks.baselines=[random_init]"])
        settings = copy.copy(cfg.benchmarks)  # this run's own copy: the resolved config is frozen
        settings.seed = cfg.seed if settings.seed is None else settings.seed
        settings.predict_test = False  # submission files are not what is measured here
        out = os.path.join(args.output, f"scale_{scale:g}")
        t0 = time.time()
        result = run_benchmark("glue", albert_dir, cfg.benchmarks.glue_dir, settings, out)
        for task in tasks:
            row = budget_row(result, task, scale, cfg.benchmarks.hparams[task].train_steps)
            if row is None:
                continue
            rows.append(row)
            gain = row["gain"]
            print(f"finetune_budget: {task} x{scale:g}: pretrained {spread_text(gain['pretrained'])}, random init "
                  f"{spread_text(gain['baseline'])} ({time.time() - t0:.0f} s)", file=sys.stderr, flush=True)
    text = "\n".join(["# Gain over no pretraining vs fine-tuning budget", "",
                      f"Model: `{os.path.basename(os.path.normpath(args.model))}` of preset `{args.preset}`; "
                      f"GLUE dev, headline score, median [min – max] over {base.benchmarks.seeds} seeds.", "",
                      table(rows), ""])
    with open(os.path.join(args.output, "budget.md"), "w", encoding="utf-8") as f:
        f.write(text)
    with open(os.path.join(args.output, "budget.json"), "w", encoding="utf-8") as f:
        json.dump({"tasks": tasks, "scales": scales, "rows": rows}, f, indent=2, default=str)
    print(text)
    sys.stdout.flush()
    os._exit(0)  # skip interpreter teardown (see pipeline/cli.py::_exit)


if __name__ == "__main__":
    main()
