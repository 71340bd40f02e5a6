"""The fine-tuning loop shared by every head, and the seed protocol around it.

Loop (:func:`fine_tune`): AdamW with the official semantics (weight decay 0.01 except LayerNorm/bias, no bias
correction, ε 1e-6), linear warmup then linear decay to 0, global-norm clipping 1.0, batches drawn from the
training arrays shuffled with the run's seed, each batch cut to its longest example where that changes no result
(dynamic padding, see :func:`dynamic_padding`). With ``selection="best"`` and ``eval_every > 0`` the model is
evaluated on dev every ``eval_every`` steps and at the end, and the weights with the best *selection score* are
kept: the official metric of the task (``metrics["selection_score"]``, see
:func:`components.evaluation.metrics.selection_metric`), as the official scripts keep the best checkpoint by it.

Protocol (:func:`fine_tune_seeds`): ``num_seeds`` runs with seeds ``seed + i``, each on a freshly restored
encoder; every random choice of a run (head initialisation, dropout, shuffling) derives from its seed. The
reported run is the *median run* by selection score (lower middle for an even count). ``init="random_init"``
runs the same protocol on the same architecture left at its (seeded) random initialisation: the "no
pretraining" baseline. Before step 0 of every run, :func:`components.evaluation.init_check.check_encoder_init`
proves the encoder is (pretrained arm) or is not (baseline) the exported checkpoint, and raises otherwise.

Precision (``benchmarks.mixed_precision``, :func:`resolve_precision`): set explicitly for every task, so fine-tuning
never inherits the Keras policy a Trainer left in the same process; ``auto`` times this task's real step in each
precision (:mod:`trainer.precision`). The policy stays set after the runs, for predictions on their weights.
"""
from __future__ import annotations

import collections
import logging
import math
import time
import weakref
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np
import tensorflow as tf
import tf_keras

from components.evaluation.heads import FEATURE_KEYS, build_encoder, load_encoder_config
from components.evaluation.init_check import ARMS, check_encoder_init
from trainer import precision as precision_lib
from trainer.formatting import eta_text
from trainer.input_pipeline import plain, short_lived
from trainer.optimization import clip_gradients, create_optimizer

log = logging.getLogger(__name__)

__all__ = ["WEIGHT_DECAY", "CLIP_NORM", "EVAL_BATCH_SIZE", "OPTIMIZER_RECORD", "PAD_MULTIPLE", "predict",
           "predict_batches", "dynamic_padding", "pad_length", "example_lengths", "trim_batch_fn", "make_train_step",
           "train_dataset", "fine_tune", "fine_tune_seeds", "median_run", "run_summary", "runs_record",
           "seed_everything", "single_class_runs", "resolve_precision"]

WEIGHT_DECAY = 0.01
CLIP_NORM = 1.0
EVAL_BATCH_SIZE = 64
OPTIMIZER_RECORD = {"name": "adamw", "weight_decay": WEIGHT_DECAY, "clip_norm": CLIP_NORM,
                    "schedule": "linear warmup then linear decay to 0", "beta_1": 0.9, "beta_2": 0.999,
                    "epsilon": 1e-6}

PAD_MULTIPLE = 8  # dynamic padding rounds a batch's length up to a multiple of this (see pad_length)

_PREDICT_FNS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # compiled steps per model
MAX_TWINS = 2  # architectures whose inference twin is kept (see _runner)
_TWINS: "collections.OrderedDict" = collections.OrderedDict()  # twin_key -> twin, most recently used last


def _input_keys(model) -> Tuple[str, ...]:
    return tuple(getattr(model, "input_keys", FEATURE_KEYS))


# ---------------------------------------------------------------------------------------------
# Dynamic padding: a batch is cut to its longest example instead of max_seq_length.
#
# Exact for a head whose outputs ignore trailing padding (``padding_invariant``, see heads.py): a padded key gets
# the additive bias -10000 in every attention softmax, whose exp underflows to exactly 0 in float32, and the
# head reads [CLS] only, so the real positions compute the same numbers (up to float summation order). Training
# batches are cut only when the encoder's dropout is 0: dropout masks are drawn per padded shape, so with dropout
# a cut batch would draw other masks (a different, equally valid run), not the same run.


def dynamic_padding(model, training: bool = False) -> bool:
    """Whether ``model``'s batches may be cut to their longest example without changing any result."""
    if not getattr(model, "padding_invariant", False):
        return False
    if not training:
        return True
    config = model.albert.config
    return float(config.hidden_dropout_prob) == 0.0 and float(config.attention_probs_dropout_prob) == 0.0


def pad_length(longest, full_length: int, multiple: int = PAD_MULTIPLE):
    """A batch's padded length: its longest example rounded up to ``multiple`` (fewer distinct shapes for the
    kernels' per-shape caches), at least 1, at most ``full_length``. Python ints or int tensors."""
    rounded = (longest + multiple - 1) // multiple * multiple
    if isinstance(rounded, tf.Tensor):
        return tf.clip_by_value(rounded, 1, full_length)
    return int(min(max(rounded, 1), full_length))


def example_lengths(input_mask: np.ndarray) -> np.ndarray:
    """Per example (first axis): 1 + the last position any of its rows attends to (RACE: over the 4 options)."""
    mask = np.asarray(input_mask).reshape(input_mask.shape[0], -1, input_mask.shape[-1]) != 0
    positions = np.arange(1, mask.shape[-1] + 1)
    return np.where(mask, positions, 0).max(axis=(1, 2)) if mask.size else np.zeros(mask.shape[0], np.int64)


def _sequence_keys(model, arrays) -> Tuple[str, ...]:
    full = arrays["input_ids"].shape[-1]
    return tuple(k for k in _input_keys(model) if arrays[k].ndim >= 2 and arrays[k].shape[-1] == full)


def trim_batch_fn(keys: Tuple[str, ...], full_length: int, multiple: int = PAD_MULTIPLE) -> Callable:
    """``tf.data`` map: cut the ``keys`` of a batch (last axis) to :func:`pad_length` of its longest example."""
    def trim(batch):
        mask = tf.reshape(batch["input_mask"], [-1, full_length]) != 0
        positions = tf.range(1, full_length + 1, dtype=tf.int32)
        longest = tf.reduce_max(tf.where(mask, positions, tf.zeros_like(positions)))
        length = pad_length(longest, full_length, multiple)
        return {k: (v[..., :length] if k in keys else v) for k, v in batch.items()}
    return plain(trim)  # plain TF ops: traced as written (trainer/input_pipeline.py)


def _relaxed_spec(spec, keys):
    """``spec`` with the sequence axis of ``keys`` unknown: one trace serves every padded length."""
    return {k: tf.TensorSpec(s.shape[:-1].concatenate([None]) if k in keys else s.shape, s.dtype, name=k)
            for k, s in spec.items()}


def _runner(model, feats: Dict[str, np.ndarray]):
    """The model that computes ``model``'s predictions: for a head that can build a twin (heads.py), the one twin
    of its architecture, holding ``model``'s weights; else (or while ``model`` has no weights yet) ``model`` itself.

    Fine-tuning builds a model per run (and the serving check and test predictions one more each), and a traced
    function belongs to the model whose variables it captured: each would trace its own inference function, the
    same graph every time (tf.function's "triggered tf.function retracing" warning). The twin's function is
    traced once and serves them all; copying the weights in costs one assignment per variable. The last
    ``MAX_TWINS`` architectures keep their twin."""
    if not (hasattr(model, "twin") and model.built):
        return model
    key = model.twin_key()
    twin = _TWINS.pop(key, None)
    if twin is None:
        previous = tf_keras.mixed_precision.global_policy()
        tf_keras.mixed_precision.set_global_policy(model.dtype_policy)  # the twin computes in the model's precision
        try:
            twin = model.twin()
            twin({k: v[:1] for k, v in feats.items()}, training=False)
        finally:
            tf_keras.mixed_precision.set_global_policy(previous)
    _TWINS[key] = twin
    while len(_TWINS) > MAX_TWINS:
        _TWINS.popitem(last=False)
    if len(twin.weights) != len(model.weights):
        raise ValueError(f"{type(model).__name__}: {len(model.weights)} weights, its twin {len(twin.weights)}")
    for mine, theirs in zip(twin.weights, model.weights):
        mine.assign(theirs)
    return twin


def _predict_fn(model, feats: Dict[str, np.ndarray]):
    """The model's compiled inference step for this input structure, traced once (batch and length unknown)."""
    spec = {k: tf.TensorSpec([None] * v.ndim, tf.as_dtype(v.dtype), name=k) for k, v in feats.items()}
    key = tuple(sorted((k, s.dtype.name, s.shape.rank) for k, s in spec.items()))
    fns = _PREDICT_FNS.setdefault(model, {})
    if key not in fns:
        ref = weakref.ref(model)  # a strong reference here would keep every run's model alive in the cache
        fns[key] = tf.function(lambda x: ref()(x, training=False), input_signature=[spec], autograph=False)
    return fns[key]


def predict_batches(lengths: Optional[np.ndarray], n: int, batch_size: int, full_length: int,
                    multiple: int = PAD_MULTIPLE) -> List[Tuple[np.ndarray, int]]:
    """Inference batches as (row indices, padded length). With ``lengths`` (dynamic padding) rows are taken in
    order of length (stable) so each batch holds similar lengths; outputs are put back in row order, so this
    changes no result. Without: rows in order, every batch at ``full_length``."""
    if lengths is None:
        return [(np.arange(s, min(s + batch_size, n)), full_length) for s in range(0, n, batch_size)]
    order = np.argsort(lengths, kind="stable")
    return [(order[s:s + batch_size], pad_length(int(lengths[order[s:s + batch_size]].max()), full_length,
                                                 multiple)) for s in range(0, n, batch_size)]


def predict(model: tf_keras.Model, arrays: Dict[str, np.ndarray], batch_size: int = EVAL_BATCH_SIZE,
            dynamic: bool = True) -> Dict[str, np.ndarray]:
    """Model outputs (numpy) for every row of ``arrays``, in row order. ``dynamic`` (default, exact; see
    :func:`dynamic_padding`): batches of similar length, each cut to its longest example."""
    feats = {k: arrays[k] for k in _input_keys(model)}
    n, full = feats["input_ids"].shape[0], feats["input_ids"].shape[-1]
    step_fn = _predict_fn(_runner(model, feats), feats)
    keys = _sequence_keys(model, feats)
    lengths = example_lengths(feats["input_mask"]) if dynamic and dynamic_padding(model) else None
    outputs: Dict[str, np.ndarray] = {}
    for rows, length in predict_batches(lengths, n, batch_size, full):
        batch = {k: (v[rows][..., :length] if k in keys else v[rows]) for k, v in feats.items()}
        for key, value in step_fn(batch).items():
            value = value.numpy()
            if key not in outputs:
                outputs[key] = np.zeros((n,) + value.shape[1:], value.dtype)
            outputs[key][rows] = value
    return outputs


def make_train_step(model: tf_keras.Model, loss_fn: Callable, learning_rate: float, warmup_steps: int,
                    total_steps: int, batch_spec=None) -> Callable:
    """The compiled fine-tuning step (AdamW + warmup/linear decay, weight decay 0.01, clip 1.0) for ``model``;
    ``benchmarks/finetune.py`` times this same function. ``batch_spec`` (a dict of ``tf.TensorSpec``, e.g. with
    an unknown sequence length) makes it the input signature: one trace for every batch it admits."""
    optimizer = create_optimizer("adamw", learning_rate, warmup_steps, total_steps, weight_decay=WEIGHT_DECAY)
    variables = model.trainable_variables
    optimizer.build(variables)

    @tf.function(input_signature=None if batch_spec is None else [batch_spec], autograph=False)  # plain Python
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


def train_dataset(model: tf_keras.Model, train_arrays: Dict[str, np.ndarray], batch_size: int, seed: int,
                  dynamic: bool = True) -> Tuple[tf.data.Dataset, Optional[Dict[str, tf.TensorSpec]]]:
    """A run's endless training batches (shuffled with its seed; cut to the longest example when ``dynamic``
    changes nothing) and the train step's input signature (None: the full static shape). Without tf.data's
    autotuner (``short_lived``): the run drops the iterator at its end, at once."""
    n = int(next(iter(train_arrays.values())).shape[0])
    ds = (tf.data.Dataset.from_tensor_slices(train_arrays)
          .shuffle(n, seed=seed, reshuffle_each_iteration=True)
          .repeat()
          .batch(batch_size, drop_remainder=True))
    batch_spec = None
    if dynamic and dynamic_padding(model, training=True):
        keys = _sequence_keys(model, train_arrays)
        ds = ds.map(trim_batch_fn(keys, int(train_arrays["input_ids"].shape[-1])))
        batch_spec = _relaxed_spec(ds.element_spec, keys)
    return short_lived(ds.prefetch(2)), batch_spec


def fine_tune(model: tf_keras.Model, loss_fn: Callable, train_arrays: Dict[str, np.ndarray], hp, seed: int,
              evaluate: Callable[[tf_keras.Model], Tuple[Dict[str, Any], Any]], selection: str = "last",
              eval_every: int = 0, label: str = "fine-tuning", dynamic: bool = True) -> Dict[str, Any]:
    """One fine-tuning run (see the module docstring).

    ``hp``: ``learning_rate``, ``warmup_steps``, ``train_steps``, ``batch_size``. ``evaluate(model) ->
    (metrics, payload)``, metrics holding ``score`` (the headline) and ``selection_score`` (the official
    selection metric; ``score`` when absent). ``dynamic``: cut each training batch to its longest example where
    that changes nothing (:func:`dynamic_padding`); same examples in the same order either way. Returns
    ``{"metrics", "payload", "step", "history", "train_seconds", "eval_seconds", "final_loss",
    "mean_train_length", "overhead_seconds"}``: the training batches' mean padded length, and the seconds spent
    outside the steps: building the input pipeline and step, the first step (its trace) and dropping the input
    iterator at the end (``short_lived`` says why that is timed).
    """
    n = int(next(iter(train_arrays.values())).shape[0])
    if n == 0:
        raise ValueError("no training examples")
    t_input = time.time()
    steps = int(hp.train_steps)
    ds, batch_spec = train_dataset(model, train_arrays, int(hp.batch_size), seed, dynamic)
    train_step = make_train_step(model, loss_fn, float(hp.learning_rate), int(hp.warmup_steps), steps, batch_spec)

    periodic = selection == "best" and eval_every > 0
    best: Optional[Dict[str, Any]] = None
    history: List[Dict[str, Any]] = []
    train_seconds = eval_seconds = 0.0
    losses: List[float] = []
    iterator = iter(ds)
    overhead = {"input_and_step": time.time() - t_input}
    t0 = time.time()
    log_every = max(1, steps // 10)
    started = time.time()
    lengths: List[int] = []  # each training batch's padded length
    for step in range(1, steps + 1):
        batch = next(iterator)
        lengths.append(int(batch["input_ids"].shape[-1]))
        losses.append(float(train_step(batch)))
        if step == 1:
            overhead["first_step"] = time.time() - t0  # tracing the step, and the first batch
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
    t_release = time.time()
    del iterator, ds
    overhead["input_release"] = time.time() - t_release
    return {"metrics": best["metrics"], "payload": best["payload"], "step": best["step"], "history": history,
            "train_seconds": train_seconds, "eval_seconds": eval_seconds, "final_loss": losses[-1],
            "mean_train_length": float(np.mean(lengths)), "overhead_seconds": overhead}


def finetune_progress(label: str, step: int, steps: int, losses: List[float], elapsed: float) -> str:
    """``RTE pretrained seed 12345: step 60/600 loss 0.6931 3.2 steps/s ETA 0:02:48`` (loss: mean of the last 10)."""
    rate = step / elapsed if elapsed > 0 else 0.0
    window = losses[-min(len(losses), 10):]
    return (f"{label}: step {step}/{steps} loss {float(np.mean(window)):.4f} {rate:.1f} steps/s "
            f"{eta_text(steps - step, rate)}")


def _fmt(value) -> str:
    return "n/a" if value is None else f"{float(value):.2f}"


def seed_everything(seed: int) -> None:
    tf_keras.utils.set_random_seed(seed)  # python, numpy and TF global seeds


def fine_tune_seeds(albert_dir: str, hp, train: Dict[str, np.ndarray],
                    make_head: Callable[[tf_keras.Model, int], tf_keras.Model], loss_fn: Callable,
                    evaluate: Callable, *, seed: int, num_seeds: int, selection: str, eval_every: int,
                    after_run: Optional[Callable] = None, init: str = "pretrained",
                    task: str = "", precision: str = "float32") -> Tuple[List[Dict[str, Any]], int]:
    """One :func:`fine_tune` run per seed ``seed + i`` (i < ``num_seeds``) on a freshly restored encoder (or, with
    ``init="random_init"``, a freshly initialised one); returns the runs and the index of the median one.
    ``after_run(model, result)`` sees each trained model. Each run records its step-0 ``init_check`` and its
    ``precision`` (``float32`` | ``mixed_bfloat16`` | ``auto``, see :func:`resolve_precision`)."""
    if init not in ARMS:
        raise ValueError(f"init must be one of {ARMS}, got {init!r}")
    decision = resolve_precision(precision, albert_dir, hp, train, make_head, loss_fn, task)
    tf_keras.mixed_precision.set_global_policy(decision.precision)  # before any run is seeded and built
    runs: List[Dict[str, Any]] = []
    for i in range(num_seeds):
        run_seed = seed + i
        t0 = time.time()
        seed_everything(run_seed)
        encoder = build_encoder(albert_dir, hp.albert_dropout, hp.max_seq_length, restore=init == "pretrained")
        model = make_head(encoder, run_seed)
        model({k: train[k][:1] for k in _input_keys(model)}, training=False)
        t1 = time.time()
        init_check = check_encoder_init(encoder, albert_dir, init)  # step 0: raises if the arm is not what it says
        label = f"{task or 'fine-tuning'} {init} seed {run_seed} ({i + 1}/{num_seeds})"
        built = {"build": t1 - t0, "init_check": time.time() - t1}
        res = fine_tune(model, loss_fn, train, hp, run_seed, evaluate, selection, eval_every, label=label)
        res["overhead_seconds"] = {**built, **res["overhead_seconds"]}
        log.info("%s: outside the steps: %s", label,
                 ", ".join(f"{k} {v:.1f} s" for k, v in res["overhead_seconds"].items()))
        res["seed"] = run_seed
        res["init_check"] = init_check
        res["precision"] = decision.record()
        if after_run is not None:
            after_run(model, res)
        runs.append(res)
        del model, encoder
    return runs, median_run(runs)


def resolve_precision(setting: str, albert_dir: str, hp, train: Dict[str, np.ndarray],
                      make_head: Callable[[tf_keras.Model, int], tf_keras.Model], loss_fn: Callable,
                      task: str = "") -> precision_lib.Decision:
    """The fine-tuning precision of one task. ``auto`` probes :func:`make_train_step` on a throwaway, randomly
    initialised encoder + head with ``hp.batch_size`` training rows at ``hp.max_seq_length`` (the longest batch)."""
    n = int(next(iter(train.values())).shape[0])
    rows = np.arange(int(hp.batch_size)) % max(n, 1)
    config = load_encoder_config(albert_dir).to_dict()
    shape = {"task": task, "albert_config": config, "albert_dropout": float(hp.albert_dropout),
             "batch": int(hp.batch_size), "seq": int(hp.max_seq_length)}

    def build_step(_precision: str):
        model = make_head(build_encoder(albert_dir, hp.albert_dropout, hp.max_seq_length, restore=False),
                          precision_lib.PROBE_SEED)
        batch = {k: tf.constant(v[rows]) for k, v in train.items()}
        model({k: batch[k][:1] for k in _input_keys(model)}, training=False)  # build eagerly, as a run does
        step = make_train_step(model, loss_fn, float(hp.learning_rate), int(hp.warmup_steps), int(hp.train_steps))
        return lambda: step(batch)

    return precision_lib.resolve(setting, kind="finetune", shape=shape, build_step=build_step)


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
             "eval_seconds": round(r["eval_seconds"], 3), "init_check": r.get("init_check"),
             "overhead_seconds": {k: round(v, 3) for k, v in r.get("overhead_seconds", {}).items()},
             "precision": r.get("precision")} for r in run_results]
