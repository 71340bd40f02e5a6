"""Optimisation for ALBERT pretraining: LR schedule, LAMB / AdamW (official semantics), gradient accumulation.

Official recipe (reference doc "Optimisation"): LAMB, peak lr 0.00176 for batch 4096, 125k steps, warmup 3125,
linear decay to 0, clip the global gradient norm at 1.0.

Official update (google-research/ALBERT ``lamb_optimizer.py``; BERT ``AdamWeightDecayOptimizer`` is the same without
the trust ratio)::

    m = b1 * m + (1 - b1) * g            # no bias correction
    v = b2 * v + (1 - b2) * g^2
    u = m / (sqrt(v) + eps)              # eps = 1e-6
    u += weight_decay * w                # unless the variable name matches exclude_from_weight_decay
    r = ||w|| / ||u|| if both > 0 else 1 # LAMB only; r = 1 for names matching exclude_from_layer_adaptation
    w -= lr * r * u

Exclusion patterns are regular expressions searched in ``variable.name`` (default ``LayerNorm``, ``layer_norm``,
``bias``), exactly as in the official code. Note that Model Garden's LAMB applies bias correction; this one does not
by default.

Deviations, each off by default (``train.*`` settings, docs/fidelity.md "Optimizer settings beyond the official recipe"):
the excluded variables get the raw learning rate with no trust ratio, so at small batches they take the largest,
noisiest steps of the model, and linear decay to 0 spends the run's second half at a quarter of the peak on average.

* ``bias_correction=True``: Adam's ``m / (1 - b1^t)`` and ``v / (1 - b2^t)`` (``t`` = this update's 1-based count)
  replace ``m`` and ``v`` in ``u`` (Model Garden's LAMB, the LAMB paper);
* ``no_decay_lr_multiplier=k``: variables matching ``exclude_from_weight_decay`` step with ``k * lr``;
* ``end_learning_rate_fraction=f`` (:class:`WarmupLinearDecay`): the decay ends at ``f * peak``, not 0 (the
  official ``polynomial_decay``'s ``end_learning_rate``, there fixed at 0).

Gradient semantics (``trainer/train_step.py``, setting ``train.gradient_semantics``):

* ``global_batch`` (default): the gradient of the *global-batch* loss is clipped once. Each micro-batch on each
  replica contributes ``sum(w * nll) / W + sum(sentence ce) / N``, where ``W`` (real masked tokens) and ``N``
  (sequences) are counted over the whole global batch (all micro-batches, all replicas); the contributions'
  gradients are summed (:meth:`GradientAccumulator.sums`), summed across replicas, and only then clipped::

      grads = replica_context.all_reduce(SUM, accumulator.sums())
      grads, global_norm = clip_gradients(grads, 1.0)      # tf.clip_by_global_norm, None-safe
      optimizer.apply_gradients(zip(grads, variables), skip_gradients_aggregation=True)

  so ``1 x batch B`` and ``grad_accum_steps=k x B/k`` (and any replica count) give the same update up to float
  summation order.
* ``per_replica``: the official TPU behaviour (``run_pretraining.py`` + ``CrossShardOptimizer``): each replica
  clips the gradient of its own mean loss (the mean over its micro-batches when accumulating, each normalised
  by its own masked-token count), and the clipped gradients are averaged across replicas.

The optimizers subclass the new-style ``tf_keras.optimizers.Optimizer`` (works in ``tf.function``, under
``tf.distribute`` strategies, with ``mixed_bfloat16`` policies — variables stay float32 — and in
``tf.train.Checkpoint``; for ``mixed_float16`` wrap in ``tf_keras.mixed_precision.LossScaleOptimizer``).
"""
from __future__ import annotations

import re
from typing import Iterable, List, Optional, Sequence

import tensorflow as tf
import tf_keras

__all__ = [
    "WarmupLinearDecay",
    "Lamb",
    "AdamWeightDecay",
    "GradientAccumulator",
    "clip_gradients",
    "create_optimizer",
    "DEFAULT_EXCLUDE_FROM_WEIGHT_DECAY",
]

DEFAULT_EXCLUDE_FROM_WEIGHT_DECAY = ("LayerNorm", "layer_norm", "bias")


@tf_keras.saving.register_keras_serializable(package="albert_tfx")
class WarmupLinearDecay(tf_keras.optimizers.schedules.LearningRateSchedule):
    """Linear warmup from 0 to ``peak_learning_rate`` over ``warmup_steps``, linear decay to
    ``end_learning_rate_fraction * peak_learning_rate`` (official: 0) at ``total_steps``.

    With ``decay_over_all_steps=True`` (official ALBERT/BERT ``optimization.py``) the decay line is
    ``peak * (1 - step / total_steps)`` for every step ≥ warmup_steps, i.e. it starts counting at step 0 and the rate at
    the end of warmup is ``peak * (1 - warmup_steps / total_steps)`` (0.975 × peak for 3125 / 125000).
    With ``decay_over_all_steps=False`` the decay runs from ``peak`` at ``warmup_steps`` to 0 at ``total_steps``.
    The warmup rate is ``peak * step / warmup_steps`` (0 at step 0, as in the official code). With an end value
    ``e = end_learning_rate_fraction * peak`` the line is ``e + (peak - e) * (1 - progress)``, as in
    ``tf.train.polynomial_decay`` with ``end_learning_rate=e``.
    """

    def __init__(self, peak_learning_rate: float, warmup_steps: int, total_steps: int,
                 decay_over_all_steps: bool = True, name: Optional[str] = None,
                 end_learning_rate_fraction: float = 0.0):
        super().__init__()
        if total_steps <= 0:
            raise ValueError(f"total_steps must be > 0, got {total_steps}")
        if not 0 <= warmup_steps <= total_steps:
            raise ValueError(f"warmup_steps must be in [0, total_steps={total_steps}], got {warmup_steps}")
        if not 0.0 <= end_learning_rate_fraction <= 1.0:
            raise ValueError(f"end_learning_rate_fraction must be in [0, 1], got {end_learning_rate_fraction}")
        self.peak_learning_rate = float(peak_learning_rate)
        self.end_learning_rate_fraction = float(end_learning_rate_fraction)
        self.warmup_steps = int(warmup_steps)
        self.total_steps = int(total_steps)
        self.decay_over_all_steps = bool(decay_over_all_steps)
        self.name = name

    def __call__(self, step):
        with tf.name_scope(self.name or "WarmupLinearDecay"):
            step = tf.cast(step, tf.float32)
            peak = tf.constant(self.peak_learning_rate, tf.float32)
            total = float(self.total_steps)
            if self.decay_over_all_steps:
                progress = tf.minimum(step, total) / total
            else:
                span = max(float(self.total_steps - self.warmup_steps), 1.0)
                progress = tf.clip_by_value((step - self.warmup_steps) / span, 0.0, 1.0)
            end = peak * self.end_learning_rate_fraction
            decayed = end + (peak - end) * (1.0 - progress)
            if self.warmup_steps == 0:
                return decayed
            warmup = peak * step / float(self.warmup_steps)
            return tf.where(step < float(self.warmup_steps), warmup, decayed)

    def get_config(self):
        return {"peak_learning_rate": self.peak_learning_rate, "warmup_steps": self.warmup_steps,
                "total_steps": self.total_steps, "decay_over_all_steps": self.decay_over_all_steps,
                "name": self.name, "end_learning_rate_fraction": self.end_learning_rate_fraction}


def _matches_any(patterns: Sequence[str], name: str) -> bool:
    return any(re.search(p, name) is not None for p in patterns)


def _variable_name(variable) -> str:
    name = variable.name
    m = re.match(r"^(.*):\d+$", name)
    return m.group(1) if m else name


class _OfficialAdamBase(tf_keras.optimizers.Optimizer):
    """Shared code of :class:`Lamb` and :class:`AdamWeightDecay` (m, v slots; bias correction and the excluded
    variables' learning-rate multiplier off by default, as officially: module docstring)."""

    _use_trust_ratio = False

    def __init__(self, learning_rate=1e-3, weight_decay_rate: float = 0.01, beta_1: float = 0.9,
                 beta_2: float = 0.999, epsilon: float = 1e-6,
                 exclude_from_weight_decay: Optional[Sequence[str]] = DEFAULT_EXCLUDE_FROM_WEIGHT_DECAY,
                 name: str = "OfficialAdam", bias_correction: bool = False, no_decay_lr_multiplier: float = 1.0,
                 **kwargs):
        # The base class' own decoupled `weight_decay` is not used: the official decay is part of the update.
        if kwargs.get("weight_decay") is not None:
            raise ValueError("Use weight_decay_rate=..., not weight_decay=...")
        kwargs.pop("weight_decay", None)
        super().__init__(name=name, **kwargs)
        self._learning_rate = self._build_learning_rate(learning_rate)
        self.weight_decay_rate = float(weight_decay_rate)
        self.beta_1 = float(beta_1)
        self.beta_2 = float(beta_2)
        self.epsilon = float(epsilon)
        self.exclude_from_weight_decay_patterns = list(exclude_from_weight_decay or [])
        self.bias_correction = bool(bias_correction)
        self.no_decay_lr_multiplier = float(no_decay_lr_multiplier)

    # ---- per-variable decisions (by name, like the official code) ------------------------------------------
    def excluded_from_weight_decay(self, variable) -> bool:
        """The name matches ``exclude_from_weight_decay`` (whatever ``weight_decay_rate`` is)."""
        return _matches_any(self.exclude_from_weight_decay_patterns, _variable_name(variable))

    def use_weight_decay(self, variable) -> bool:
        if not self.weight_decay_rate:
            return False
        return not self.excluded_from_weight_decay(variable)

    def use_layer_adaptation(self, variable) -> bool:
        return False

    # ---- slots -------------------------------------------------------------------------------------------
    def build(self, var_list):
        super().build(var_list)
        if getattr(self, "_built", False):
            return
        self._built = True
        self._momentums = []
        self._velocities = []
        for var in var_list:
            self._momentums.append(self.add_variable_from_reference(model_variable=var, variable_name="m"))
            self._velocities.append(self.add_variable_from_reference(model_variable=var, variable_name="v"))

    def update_step(self, gradient, variable):
        if isinstance(gradient, tf.IndexedSlices):
            gradient = tf.convert_to_tensor(gradient)  # the official optimizers are dense too
        dtype = variable.dtype
        gradient = tf.cast(gradient, dtype)
        lr = tf.cast(self.learning_rate, dtype)
        index = self._index_dict[self._var_key(variable)]
        m = self._momentums[index]
        v = self._velocities[index]
        next_m = self.beta_1 * m + (1.0 - self.beta_1) * gradient
        next_v = self.beta_2 * v + (1.0 - self.beta_2) * tf.square(gradient)
        if self.bias_correction:
            t = tf.cast(self.iterations + 1, dtype)  # iterations counts the updates applied before this one

            def one_minus_power(beta):  # 1 - beta^t to float32 precision (1 - float32(0.999) is 1.3e-5 off)
                return -tf.math.expm1(t * tf.math.log1p(tf.constant(-(1.0 - beta), dtype)))

            update = (next_m / one_minus_power(self.beta_1)) / (
                tf.sqrt(next_v / one_minus_power(self.beta_2)) + self.epsilon)
        else:
            update = next_m / (tf.sqrt(next_v) + self.epsilon)
        if self.use_weight_decay(variable):
            update += self.weight_decay_rate * variable
        ratio = tf.constant(1.0, dtype)
        if self._use_trust_ratio and self.use_layer_adaptation(variable):
            w_norm = tf.norm(variable, ord=2)
            u_norm = tf.norm(update, ord=2)
            ratio = tf.where(w_norm > 0.0,
                             tf.where(u_norm > 0.0, w_norm / tf.maximum(u_norm, 1e-30), tf.ones_like(w_norm)),
                             tf.ones_like(w_norm))
        if self.no_decay_lr_multiplier != 1.0 and self.excluded_from_weight_decay(variable):
            lr = lr * self.no_decay_lr_multiplier
        m.assign(next_m)
        v.assign(next_v)
        variable.assign_sub(ratio * lr * update)

    def get_config(self):
        config = super().get_config()
        config.update({
            "learning_rate": self._serialize_hyperparameter(self._learning_rate),
            "weight_decay_rate": self.weight_decay_rate,
            "beta_1": self.beta_1,
            "beta_2": self.beta_2,
            "epsilon": self.epsilon,
            "exclude_from_weight_decay": list(self.exclude_from_weight_decay_patterns),
            "bias_correction": self.bias_correction,
            "no_decay_lr_multiplier": self.no_decay_lr_multiplier,
        })
        config.pop("weight_decay", None)
        return config


@tf_keras.saving.register_keras_serializable(package="albert_tfx")
class AdamWeightDecay(_OfficialAdamBase):
    """Official BERT/ALBERT ``AdamWeightDecayOptimizer``: Adam without bias correction, decay 0.01 added to the
    update (not to the loss), LayerNorm / bias excluded by name."""

    def __init__(self, learning_rate=1e-3, weight_decay_rate: float = 0.01, beta_1: float = 0.9,
                 beta_2: float = 0.999, epsilon: float = 1e-6,
                 exclude_from_weight_decay: Optional[Sequence[str]] = DEFAULT_EXCLUDE_FROM_WEIGHT_DECAY,
                 name: str = "AdamWeightDecay", **kwargs):
        super().__init__(learning_rate=learning_rate, weight_decay_rate=weight_decay_rate, beta_1=beta_1,
                         beta_2=beta_2, epsilon=epsilon, exclude_from_weight_decay=exclude_from_weight_decay,
                         name=name, **kwargs)


@tf_keras.saving.register_keras_serializable(package="albert_tfx")
class Lamb(_OfficialAdamBase):
    """Official ALBERT ``LAMBOptimizer``: :class:`AdamWeightDecay`'s update scaled per variable by the trust ratio
    ``||w|| / ||u||`` (1 when either norm is 0, or when the name matches ``exclude_from_layer_adaptation``, which
    defaults to ``exclude_from_weight_decay``)."""

    _use_trust_ratio = True

    def __init__(self, learning_rate=1e-3, weight_decay_rate: float = 0.01, beta_1: float = 0.9,
                 beta_2: float = 0.999, epsilon: float = 1e-6,
                 exclude_from_weight_decay: Optional[Sequence[str]] = DEFAULT_EXCLUDE_FROM_WEIGHT_DECAY,
                 exclude_from_layer_adaptation: Optional[Sequence[str]] = None,
                 name: str = "Lamb", **kwargs):
        super().__init__(learning_rate=learning_rate, weight_decay_rate=weight_decay_rate, beta_1=beta_1,
                         beta_2=beta_2, epsilon=epsilon, exclude_from_weight_decay=exclude_from_weight_decay,
                         name=name, **kwargs)
        if exclude_from_layer_adaptation is None:
            exclude_from_layer_adaptation = self.exclude_from_weight_decay_patterns
        self.exclude_from_layer_adaptation_patterns = list(exclude_from_layer_adaptation)

    def use_layer_adaptation(self, variable) -> bool:
        return not _matches_any(self.exclude_from_layer_adaptation_patterns, _variable_name(variable))

    def get_config(self):
        config = super().get_config()
        config["exclude_from_layer_adaptation"] = list(self.exclude_from_layer_adaptation_patterns)
        return config


def clip_gradients(gradients: Sequence[Optional[tf.Tensor]], clip_norm: float = 1.0):
    """``tf.clip_by_global_norm`` of the dense gradients, tolerating ``None``; returns ``(clipped, global_norm)``.

    The official recipe clips at global norm 1.0 before the optimizer step; which gradient is clipped (the global
    batch's or each replica's) is the trainer's ``gradient_semantics`` (module docstring).
    """
    present = [i for i, g in enumerate(gradients) if g is not None]
    # IndexedSlices (embedding lookups) are densified first: tf.clip_by_global_norm takes the norm of their
    # values, where a token that occurs twice is two slices, so the norm would not be the gradient's norm.
    dense = [tf.convert_to_tensor(gradients[i]) for i in present]
    clipped, global_norm = tf.clip_by_global_norm(dense, clip_norm)
    out: List[Optional[tf.Tensor]] = [None] * len(gradients)
    for i, g in zip(present, clipped):
        out[i] = g
    return out, global_norm


class GradientAccumulator(tf.Module):
    """Sums gradients of k micro-batches in per-variable ``tf.Variable`` s; :meth:`gradients` returns their mean,
    :meth:`sums` the sums.

    With micro-batches of equal size and a loss that is a mean over examples, the mean of the k micro-batch
    gradients equals the gradient of the k-times larger batch. (The official MLM loss divides by the number of
    real masked tokens, so for it the equality holds only when every micro-batch has the same number; the trainer
    therefore normalises each micro-batch by the global batch's count and uses :meth:`sums`.)

    Create it outside ``tf.function`` with ``build(model.trainable_variables)`` (or let the first ``accumulate``
    build it from the gradient shapes, which must then be static). Under a ``tf.distribute`` strategy create it in
    ``strategy.scope()``; its variables are ON_READ (per replica), like Hugging Face's accumulator.
    """

    def __init__(self, variables: Optional[Iterable[tf.Variable]] = None, name: str = "gradient_accumulator"):
        super().__init__(name=name)
        self._accumulators: Optional[List[tf.Variable]] = None
        self._step: Optional[tf.Variable] = None
        if variables is not None:
            self.build(variables)

    def build(self, variables_or_shapes) -> None:
        if self._accumulators is not None:
            return
        with tf.init_scope():
            self._accumulators = [
                tf.Variable(tf.zeros(getattr(v, "shape", v), dtype=tf.float32), trainable=False,
                            synchronization=tf.VariableSynchronization.ON_READ,
                            aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA, name=f"accum_{i}")
                for i, v in enumerate(variables_or_shapes)]
            self._step = tf.Variable(0, dtype=tf.int64, trainable=False,
                                     synchronization=tf.VariableSynchronization.ON_READ,
                                     aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA, name="accum_step")

    @property
    def step(self) -> tf.Variable:
        """Number of micro-batches accumulated since the last reset."""
        if self._step is None:
            raise ValueError("GradientAccumulator is not built yet")
        return self._step

    def accumulate(self, gradients: Sequence[Optional[tf.Tensor]]):
        if self._accumulators is None:
            shapes = []
            for g in gradients:
                if g is None:
                    raise ValueError("Cannot build a GradientAccumulator from a None gradient; call build(variables)")
                shape = g.dense_shape if isinstance(g, tf.IndexedSlices) else g.shape
                shapes.append(tf.TensorShape(tf.get_static_value(shape) if isinstance(shape, tf.Tensor) else shape))
            self.build(shapes)
        if len(gradients) != len(self._accumulators):
            raise ValueError(f"Expected {len(self._accumulators)} gradients, got {len(gradients)}")
        for acc, g in zip(self._accumulators, gradients):
            if g is not None:
                acc.assign_add(tf.cast(tf.convert_to_tensor(g), acc.dtype))
        self._step.assign_add(1)

    def sums(self) -> List[tf.Tensor]:
        """The accumulated gradients as summed (for losses already normalised over the global batch)."""
        if self._accumulators is None:
            raise ValueError("GradientAccumulator is not built yet")
        return [acc.value() for acc in self._accumulators]

    def gradients(self) -> List[tf.Tensor]:
        """Mean of the accumulated gradients (zeros when nothing was accumulated)."""
        if self._accumulators is None:
            raise ValueError("GradientAccumulator is not built yet")
        count = tf.cast(self._step, tf.float32)
        return [tf.math.divide_no_nan(acc.value(), count) for acc in self._accumulators]

    def reset(self) -> None:
        if self._accumulators is None:
            return
        for acc in self._accumulators:
            acc.assign(tf.zeros_like(acc))
        self._step.assign(0)


def create_optimizer(name: str = "lamb", peak_lr: float = 0.00176, warmup_steps: int = 3125,
                     total_steps: int = 125000, weight_decay: float = 0.01, beta_1: float = 0.9,
                     beta_2: float = 0.999, epsilon: float = 1e-6, decay_over_all_steps: bool = True,
                     end_learning_rate_fraction: float = 0.0, **kwargs) -> _OfficialAdamBase:
    """LAMB (``"lamb"``) or AdamW (``"adamw"``) with :class:`WarmupLinearDecay`; defaults = official pretraining.

    Extra ``kwargs`` go to the optimizer (e.g. ``jit_compile=False``, ``exclude_from_weight_decay=[...]``,
    ``bias_correction=True``, ``no_decay_lr_multiplier=0.1``).
    """
    schedule = WarmupLinearDecay(peak_lr, warmup_steps, total_steps, decay_over_all_steps=decay_over_all_steps,
                                 end_learning_rate_fraction=end_learning_rate_fraction)
    key = name.lower().replace("_", "").replace("-", "")
    if key == "lamb":
        cls = Lamb
    elif key in ("adamw", "adamweightdecay", "adam"):
        cls = AdamWeightDecay
    else:
        raise ValueError(f"Unknown optimizer {name!r}; use 'lamb' or 'adamw'")
    return cls(learning_rate=schedule, weight_decay_rate=weight_decay, beta_1=beta_1, beta_2=beta_2,
               epsilon=epsilon, **kwargs)
