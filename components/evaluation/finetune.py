"""The fine-tuning loop shared by every head, and the seed protocol around it.

Loop (:func:`fine_tune`): AdamW with the official semantics (weight decay 0.01 except LayerNorm/bias, no bias
correction, ε 1e-6), linear warmup then linear decay to 0, global-norm clipping 1.0, batches drawn from the
training arrays shuffled with the run's seed. With ``selection="best"`` and ``eval_every > 0`` the model is
evaluated on dev every ``eval_every`` steps and at the end, and the weights with the best *selection score* are
kept: the official metric of the task (``metrics["selection_score"]``, see
:func:`components.evaluation.metrics.selection_metric`), as the official scripts keep the best checkpoint by it.

Protocol (:func:`fine_tune_seeds`): ``num_seeds`` runs with seeds ``seed + i``, each on a freshly restored
encoder; every random choice of a run (head initialisation, dropout, shuffling) derives from its seed. The
reported run is the *median run* by selection score (lower middle for an even count). ``init="random_init"``
runs the same protocol on the same architecture left at its (seeded) random initialisation: the "no
pretraining" baseline. Before step 0 of every run, :func:`components.evaluation.init_check.check_encoder_init`
proves the encoder is (pretrained arm) or is not (baseline) the exported checkpoint, and raises otherwise.
"""
from __future__ import annotations

import logging
import math
import os
import time
import weakref
from typing import Any, Callable, Dict, List, Optional, Tuple

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")

import numpy as np
import tensorflow as tf
import tf_keras

from components.evaluation.heads import FEATURE_KEYS, build_encoder
from components.evaluation.init_check import ARMS, check_encoder_init
from trainer.optimization import clip_gradients, create_optimizer

log = logging.getLogger(__name__)

__all__ = ["WEIGHT_DECAY", "CLIP_NORM", "EVAL_BATCH_SIZE", "OPTIMIZER_RECORD", "predict", "make_train_step",
           "fine_tune", "fine_tune_seeds", "median_run", "run_summary", "runs_record", "seed_everything",
           "single_class_runs"]

WEIGHT_DECAY = 0.01
CLIP_NORM = 1.0
EVAL_BATCH_SIZE = 64
OPTIMIZER_RECORD = {"name": "adamw", "weight_decay": WEIGHT_DECAY, "clip_norm": CLIP_NORM,
                    "schedule": "linear warmup then linear decay to 0", "beta_1": 0.9, "beta_2": 0.999,
                    "epsilon": 1e-6}

_PREDICT_FNS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # one compiled step per model


def _input_keys(model) -> Tuple[str, ...]:
    return tuple(getattr(model, "input_keys", FEATURE_KEYS))


def predict(model: tf_keras.Model, arrays: Dict[str, np.ndarray], batch_size: int = EVAL_BATCH_SIZE,
            step_fn=None) -> Dict[str, np.ndarray]:
    """Model outputs (numpy) for every row of ``arrays``; the last batch is padded to a fixed shape
    so the compiled step is traced once."""
    feats = {k: arrays[k] for k in _input_keys(model)}
    n = feats["input_ids"].shape[0]
    if step_fn is None:
        step_fn = _PREDICT_FNS.get(model)
        if step_fn is None:
            step_fn = _PREDICT_FNS[model] = tf.function(lambda x: model(x, training=False))
    chunks: Dict[str, List[np.ndarray]] = {}
    for start in range(0, n, batch_size):
        batch = {k: v[start:start + batch_size] for k, v in feats.items()}
        real = batch["input_ids"].shape[0]
        if real < batch_size:
            batch = {k: np.concatenate([v, np.zeros((batch_size - real,) + v.shape[1:], v.dtype)])
                     for k, v in batch.items()}
        for key, value in step_fn(batch).items():
            chunks.setdefault(key, []).append(value.numpy()[:real])
    return {k: np.concatenate(v) for k, v in chunks.items()} if chunks else {}


def make_train_step(model: tf_keras.Model, loss_fn: Callable, learning_rate: float, warmup_steps: int,
                    total_steps: int) -> Callable:
    """The compiled fine-tuning step (AdamW + warmup/linear decay, weight decay 0.01, clip 1.0) for ``model``;
    ``benchmarks/finetune.py`` times this same function."""
    optimizer = create_optimizer("adamw", learning_rate, warmup_steps, total_steps, weight_decay=WEIGHT_DECAY)
    variables = model.trainable_variables
    optimizer.build(variables)

    @tf.function
    def train_step(batch):
        with tf.GradientTape() as tape:
            loss = loss_fn(model(batch, training=True), batch)
        grads = tape.gradient(loss, variables)
        grads, _ = clip_gradients(grads, CLIP_NORM)
        # Unused variables (e.g. the pooler under the SQuAD heads) have no gradient.
        optimizer.apply_gradients([(g, v) for g, v in zip(grads, variables) if g is not None])
        return loss

    return train_step


def _selection(metrics: Dict[str, Any]):
    return metrics.get("selection_score", metrics.get("score"))


def _better(score, best_score) -> bool:
    if score is None or (isinstance(score, float) and math.isnan(score)):
        return False
    if best_score is None or (isinstance(best_score, float) and math.isnan(best_score)):
        return True
    return score > best_score


def fine_tune(model: tf_keras.Model, loss_fn: Callable, train_arrays: Dict[str, np.ndarray], hp, seed: int,
              evaluate: Callable[[tf_keras.Model], Tuple[Dict[str, Any], Any]], selection: str = "last",
              eval_every: int = 0, label: str = "fine-tuning") -> Dict[str, Any]:
    """One fine-tuning run (see the module docstring).

    ``hp``: ``learning_rate``, ``warmup_steps``, ``train_steps``, ``batch_size``. ``evaluate(model) ->
    (metrics, payload)``, metrics holding ``score`` (the headline) and ``selection_score`` (the official
    selection metric; ``score`` when absent). Returns ``{"metrics", "payload", "step", "history",
    "train_seconds", "eval_seconds", "final_loss"}``.
    """
    n = int(next(iter(train_arrays.values())).shape[0])
    if n == 0:
        raise ValueError("no training examples")
    steps = int(hp.train_steps)
    ds = (tf.data.Dataset.from_tensor_slices(train_arrays)
          .shuffle(n, seed=seed, reshuffle_each_iteration=True)
          .repeat()
          .batch(int(hp.batch_size), drop_remainder=True)
          .prefetch(2))
    train_step = make_train_step(model, loss_fn, float(hp.learning_rate), int(hp.warmup_steps), steps)

    periodic = selection == "best" and eval_every > 0
    best: Optional[Dict[str, Any]] = None
    history: List[Dict[str, Any]] = []
    train_seconds = eval_seconds = 0.0
    losses: List[float] = []
    iterator = iter(ds)
    t0 = time.time()
    log_every = max(1, steps // 10)
    started = time.time()
    for step in range(1, steps + 1):
        losses.append(float(train_step(next(iterator))))
        if step % log_every == 0 or step == steps:
            log.info("%s", finetune_progress(label, step, steps, losses, time.time() - started))
        if (periodic and step % eval_every == 0) or step == steps:
            train_seconds += time.time() - t0
            t1 = time.time()
            metrics, payload = evaluate(model)
            eval_seconds += time.time() - t1
            window = losses[-min(len(losses), 10):]
            history.append({"step": step, "score": metrics.get("score"), "selection_score": _selection(metrics),
                            "train_loss": float(np.mean(window))})
            log.info("%s: dev at step %d: score %s, %s %s", label, step, _fmt(metrics.get("score")),
                     metrics.get("selection_metric", "selection"), _fmt(_selection(metrics)))
            if best is None or not periodic or _better(_selection(metrics), _selection(best["metrics"])):
                best = {"metrics": metrics, "payload": payload, "step": step,
                        "weights": model.get_weights() if periodic and step != steps else None}
            t0 = time.time()
    if not math.isfinite(losses[-1]):
        log.warning("fine-tuning loss is not finite at the last step: %s", losses[-1])
    if best["weights"] is not None:
        model.set_weights(best["weights"])  # the best checkpoint on dev, for test predictions
    return {"metrics": best["metrics"], "payload": best["payload"], "step": best["step"], "history": history,
            "train_seconds": train_seconds, "eval_seconds": eval_seconds, "final_loss": losses[-1]}


def finetune_progress(label: str, step: int, steps: int, losses: List[float], elapsed: float) -> str:
    """``RTE pretrained seed 12345: step 60/600 loss 0.6931 3.2 steps/s ETA 0:02:48`` (loss: mean of the last 10)."""
    rate = step / elapsed if elapsed > 0 else 0.0
    left = int((steps - step) / rate) if rate > 0 else 0
    window = losses[-min(len(losses), 10):]
    return (f"{label}: step {step}/{steps} loss {float(np.mean(window)):.4f} {rate:.1f} steps/s "
            f"ETA {left // 3600}:{left % 3600 // 60:02d}:{left % 60:02d}")


def _fmt(value) -> str:
    return "n/a" if value is None else f"{float(value):.2f}"


def seed_everything(seed: int) -> None:
    tf_keras.utils.set_random_seed(seed)  # python, numpy and TF global seeds


def fine_tune_seeds(albert_dir: str, hp, train: Dict[str, np.ndarray],
                    make_head: Callable[[tf_keras.Model, int], tf_keras.Model], loss_fn: Callable,
                    evaluate: Callable, *, seed: int, num_seeds: int, selection: str, eval_every: int,
                    after_run: Optional[Callable] = None, init: str = "pretrained",
                    task: str = "") -> Tuple[List[Dict[str, Any]], int]:
    """One :func:`fine_tune` run per seed ``seed + i`` (i < ``num_seeds``) on a freshly restored encoder (or, with
    ``init="random_init"``, a freshly initialised one); returns the runs and the index of the median one.
    ``after_run(model, result)`` sees each trained model. Each run records its step-0 ``init_check``."""
    if init not in ARMS:
        raise ValueError(f"init must be one of {ARMS}, got {init!r}")
    runs: List[Dict[str, Any]] = []
    for i in range(num_seeds):
        run_seed = seed + i
        seed_everything(run_seed)
        encoder = build_encoder(albert_dir, hp.albert_dropout, hp.max_seq_length, restore=init == "pretrained")
        model = make_head(encoder, run_seed)
        model({k: train[k][:1] for k in _input_keys(model)}, training=False)
        init_check = check_encoder_init(encoder, albert_dir, init)  # step 0: raises if the arm is not what it says
        label = f"{task or 'fine-tuning'} {init} seed {run_seed} ({i + 1}/{num_seeds})"
        res = fine_tune(model, loss_fn, train, hp, run_seed, evaluate, selection, eval_every, label=label)
        res["seed"] = run_seed
        res["init_check"] = init_check
        if after_run is not None:
            after_run(model, res)
        runs.append(res)
        del model, encoder
    return runs, median_run(runs)


def median_run(run_results: List[Dict[str, Any]]) -> int:
    """Index of the run whose selection score is the median (lower middle for an even count; NaN last)."""
    def key(i):
        s = _selection(run_results[i]["metrics"])
        return (s is None or (isinstance(s, float) and math.isnan(s)), s if s is not None else 0.0, i)
    order = sorted(range(len(run_results)), key=key)
    return order[(len(order) - 1) // 2]


def run_summary(run_results, chosen: int, pick: Callable) -> Dict[str, Any]:
    """Spread of the headline over the runs (``pick(metrics)`` gives the dict holding ``score``)."""
    scores = [pick(r["metrics"]).get("score") for r in run_results]
    finite = [s for s in scores if s is not None and not (isinstance(s, float) and math.isnan(s))]
    return {
        "score_median": float(np.median(finite)) if finite else None,
        "score_mean": float(np.mean(finite)) if finite else None,
        "score_std": float(np.std(finite)) if finite else None,
        "run_scores": scores,
        "median_run": chosen,
        "seed": run_results[chosen]["seed"],
        "selected_step": run_results[chosen]["step"],
    }


def single_class_runs(run_results, pick: Callable) -> int:
    """How many runs predicted one class for every evaluated example (``pick(metrics)`` gives the dict holding
    ``majority_share``): their score is the majority-class floor's, whatever the encoder."""
    return sum(1 for r in run_results if (pick(r["metrics"]).get("majority_share") or 0.0) >= 100.0)


def runs_record(run_results) -> List[Dict[str, Any]]:
    return [{"seed": r["seed"], "selected_step": r["step"], "metrics": r["metrics"], "history": r["history"],
             "final_train_loss": r["final_loss"], "train_seconds": round(r["train_seconds"], 3),
             "eval_seconds": round(r["eval_seconds"], 3), "init_check": r.get("init_check")} for r in run_results]
