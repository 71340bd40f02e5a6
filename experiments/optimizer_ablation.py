"""Held-out ablation of the optimizer settings beyond the official recipe, on the ``small`` recipe's own examples.

    ALBERT_TFX_DATA_DIR=../shared/data .venv/bin/python -m experiments.optimizer_ablation [--steps 600]
        [--arms baseline bias_correction ...] [--output outputs/optimizer_ablation] [--set key=value ...]

1. **Examples**: the ``small`` preset's data nodes (CorpusGen → VocabGen → PretrainingDataGen) on the recipe's
   inputs (``learning_recipe.prepare_inputs``: the bundled sample plus ``--data-dir``), run as the DAG with the
   benchmarks off and one training step; the Examples artifact it publishes is what every arm reads.
2. **Arms**: ``albert-pipeline pretrain --preset small --examples <that artifact>`` (the Trainer's own entry point),
   ``--steps`` steps (warm-up a tenth of them), each arm adding its settings (:data:`ARMS`). Same seed, same
   examples in the same order: the arms differ in the optimizer alone.
3. **Score**: the held-out split of the pretraining data only (never a benchmark dev set): MLM loss, MLM and SOP
   accuracy at every ``train.eval_every`` step, from each arm's ``train_history.jsonl``; training wall time.

Writes ``<output>/ablation.json`` and ``ablation.md`` and prints the table. docs/fidelity.md, "Optimizer settings beyond the
official recipe", has the measured table.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import subprocess
import sys
import time
from typing import Any, Dict, List

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from trainer.precision import cpu_model  # noqa: E402  (imports no TensorFlow)

# Each arm's settings on top of the preset: one setting at a time, then all together.
ARMS: Dict[str, List[str]] = {
    "baseline": [],
    "bias_correction": ["train.bias_correction=true"],
    "no_decay_lr_x0.1": ["train.no_decay_lr_multiplier=0.1"],
    "end_lr_0.1": ["train.end_learning_rate_fraction=0.1"],
    "all_three": ["train.bias_correction=true", "train.no_decay_lr_multiplier=0.1",
                  "train.end_learning_rate_fraction=0.1"],
}
NO_BENCHMARKS = ["benchmarks.glue_dir=none", "benchmarks.squad_dir=none", "benchmarks.race_dir=none"]
CLI = os.path.join(os.path.dirname(sys.executable), "albert-pipeline")


def make_examples(out: str, data_dir: str, seed: int, overrides: List[str]) -> Dict[str, Any]:
    """Run the small preset's data nodes (and a one-step Trainer) once; the published Examples folder."""
    from experiments.learning_recipe import prepare_inputs

    facts = prepare_inputs(os.path.join(out, "inputs"), data_dir, seed)
    inputs = [o for o in facts["overrides"] if o.startswith("corpus.")]
    cmd = [CLI, "run", "--preset", "small", "--output-dir", os.path.join(out, "dag")] + [
        f"--set={o}" for o in inputs + NO_BENCHMARKS + ["train.num_train_steps=1", "train.num_warmup_steps=0"] + overrides]
    t0 = time.time()
    done = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"the data nodes failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    node = os.path.join(out, "dag", "pipeline_root", "PretrainingDataGen")
    newest = max(glob.glob(os.path.join(node, "examples", "*")), key=lambda p: int(os.path.basename(p)))
    with open(os.path.join(node, "statistics", os.path.basename(newest), "stats.json")) as f:
        stats = json.load(f)
    return {"examples": newest, "seconds": round(time.time() - t0, 1),
            "instances": {s: v["instances"] for s, v in stats["splits"].items()}}


def run_arm(name: str, examples: str, out: str, steps: int, overrides: List[str]) -> Dict[str, Any]:
    """One arm through ``albert-pipeline pretrain``; its held-out evaluations and wall time."""
    arm_dir = os.path.join(out, "arms", name)
    sets = [f"train.num_train_steps={steps}", f"train.num_warmup_steps={max(steps // 10, 1)}",
            f"train.eval_every={max(steps // 3, 1)}"] + overrides + ARMS[name]
    cmd = [CLI, "pretrain", "--preset", "small", "--examples", examples, "--output", arm_dir] + [
        f"--set={o}" for o in sets]
    t0 = time.time()
    done = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"arm {name} failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    with open(os.path.join(arm_dir, "model", "albert", "export_info.json")) as f:
        info = json.load(f)
    evals = []
    with open(os.path.join(arm_dir, "model_run", "train_history.jsonl")) as f:
        for line in f:
            h = json.loads(line)
            if h["split"] == "eval":
                evals.append({k: h[k] for k in ("step", "mlm_loss", "mlm_accuracy", "sentence_accuracy") if k in h})
    return {"settings": ARMS[name], "evals": evals, "wall_s": round(time.time() - t0, 1),
            "precision": info.get("precision")}


def table(result: Dict[str, Any]) -> str:
    steps = sorted({e["step"] for arm in result["arms"].values() for e in arm["evals"]})
    head = "| arm | settings | " + " | ".join(f"step {s}: MLM loss / MLM acc / SOP acc" for s in steps) + " | wall |"
    rows = [head, "|" + "---|" * (len(steps) + 3)]
    for name, arm in result["arms"].items():
        by_step = {e["step"]: e for e in arm["evals"]}
        cells = [f"{by_step[s]['mlm_loss']:.3f} / {100 * by_step[s]['mlm_accuracy']:.1f} % / "
                 f"{100 * by_step[s]['sentence_accuracy']:.1f} %" if s in by_step else "" for s in steps]
        rows.append(f"| {name} | {', '.join(arm['settings']) or 'official'} | " + " | ".join(cells)
                    + f" | {arm['wall_s']:.0f} s |")
    return "\n".join(rows)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data-dir", default=os.environ.get("ALBERT_TFX_DATA_DIR"),
                   help="the shared data folder (Wikipedia dumps, books); default $ALBERT_TFX_DATA_DIR")
    p.add_argument("--output", default=os.path.join("outputs", "optimizer_ablation"))
    p.add_argument("--steps", type=int, default=600)
    p.add_argument("--arms", nargs="+", default=list(ARMS), choices=list(ARMS))
    p.add_argument("--set", dest="overrides", action="append", default=[], help="section.key=value (every arm)")
    args = p.parse_args(argv)
    if args.data_dir and not os.path.isdir(args.data_dir):
        p.error(f"--data-dir {args.data_dir} does not exist")
    out = os.path.abspath(args.output)
    os.makedirs(out, exist_ok=True)
    from pipeline.settings.configs import build_config

    seed = build_config("small", overrides=[o for o in args.overrides if o.startswith("seed=")]).seed
    data = make_examples(out, os.path.abspath(args.data_dir) if args.data_dir else None, seed,
                         [o for o in args.overrides if not o.startswith("train.")])
    result = {"cpu": cpu_model(), "cpu_count": os.cpu_count(), "steps": args.steps, "seed": seed, "data": data,
              "overrides": args.overrides, "arms": {}}
    for name in args.arms:
        result["arms"][name] = run_arm(name, data["examples"], out, args.steps, args.overrides)
        print(f"{name}: {result['arms'][name]['evals'][-1]}", file=sys.stderr)
    with open(os.path.join(out, "ablation.json"), "w") as f:
        json.dump(result, f, indent=2)
    text = (f"{args.steps} steps of the `small` preset per arm, seed {seed}, {result['cpu']} "
            f"({result['cpu_count']} cores); held-out split of the pretraining data\n\n{table(result)}\n")
    with open(os.path.join(out, "ablation.md"), "w") as f:
        f.write(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
