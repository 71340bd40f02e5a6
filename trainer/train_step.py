"""The optimizer step: the model and optimizer of a run, and the ``tf.function`` that steps them.

One factory (:func:`make_train_step`) builds the step the Trainer runs and the precision probe times (and that
``benchmarks/step_profile.py`` and ``benchmarks/train_input.py`` measure), so what is timed is what trains. It
owns what makes a step exact and resumable: losses normalised over the global batch (:mod:`trainer.losses`),
gradient accumulation and global-norm clipping (:mod:`trainer.optimization`), and dropout seeded from the step
(:mod:`trainer.dropout`).
"""
from __future__ import annotations

from typing import Optional

import tensorflow as tf
import tf_keras

from trainer.trainer_config import TrainConfig
from trainer.dropout import DropoutSeeds, replica_seed, step_seed, use_stateless_dropout
from trainer.losses import METRIC_NAMES, NUM_SUMS, loss_from_sums, loss_sums, metrics_from_sums, normalisers
from trainer.modeling_albert import AlbertConfig, AlbertForPreTraining
from trainer.optimization import GradientAccumulator, clip_gradients, create_optimizer

GRADIENT_SEMANTICS = ("global_batch", "per_replica")


def build_pretraining_model(config: AlbertConfig, sentence_task: str, max_seq_length: int,
                            max_predictions_per_seq: int) -> AlbertForPreTraining:
    """The pretraining model with its variables built (a dummy batch at these shapes)."""
    model = AlbertForPreTraining(config, sentence_task=sentence_task)
    model(model.dummy_inputs(batch_size=1, seq_len=max_seq_length, num_predictions=max_predictions_per_seq))
    return model


def build_model_and_optimizer(config: AlbertConfig, train: TrainConfig, max_seq_length: int,
                              max_predictions_per_seq: int):
    """The pretraining model and its optimizer from the ``train`` settings, the optimizer built over the model's
    variables (its slots exist before any checkpoint restore or step)."""
    model = build_pretraining_model(config, train.sentence_task, max_seq_length, max_predictions_per_seq)
    optimizer = create_optimizer(train.optimizer, train.learning_rate, train.num_warmup_steps, train.num_train_steps,
                                 weight_decay=train.weight_decay, **train.optimizer_options())
    optimizer.build(model.trainable_variables)
    return model, optimizer


def resolve_jit_compile(flag: Optional[bool], strategy: tf.distribute.Strategy) -> bool:
    """``train.jit_compile``: XLA for the forward/backward pass. TPUStrategy always compiles with XLA.

    Measured on the same CPU (float32): jit_compile off 0.070 steps/s vs on 0.049 steps/s (first step 49 s vs
    44 s), so ``train.jit_compile`` defaults to off; on GPUs it may pay (set ``train.jit_compile=true``).
    """
    if isinstance(strategy, tf.distribute.TPUStrategy):
        return False  # TPUStrategy compiles the whole replica step already
    return bool(flag)


def make_train_step(model: tf_keras.Model, optimizer, strategy: tf.distribute.Strategy, *, grad_accum_steps: int,
                    clip_norm: float, seed: int, semantics: str = "global_batch", jit_compile: bool = False):
    """A ``tf.function`` doing one optimizer step from ``grad_accum_steps`` micro-batches of ``iterator``.

    Returns ``train_step(iterator) -> [len(METRIC_NAMES)]`` metric values of the global batch, and as
    ``train_step.steps(iterator, n)`` the sum of those values over ``n`` steps run in one call. ``semantics``:
    see ``trainer/optimization.py`` (``global_batch``: clip the global-batch gradient once, losses normalised
    over the global batch; ``per_replica``: the official per-shard clipping of per-micro-batch mean losses).
    Routes the model's dropout layers through step-derived stateless seeds (:func:`use_stateless_dropout`).
    """
    if semantics not in GRADIENT_SEMANTICS:
        raise ValueError(f"gradient_semantics {semantics!r}: use one of {GRADIENT_SEMANTICS}")
    k = int(grad_accum_steps)
    num_replicas = strategy.num_replicas_in_sync
    variables = model.trainable_variables
    with strategy.scope():
        accumulator = GradientAccumulator(variables) if k > 1 else None
    seeds = DropoutSeeds()
    use_stateless_dropout(model, seeds)
    global_batch = semantics == "global_batch"

    def losses_and_grads(inputs, labels, norm, dropout_seed):
        with tf.GradientTape() as tape:
            seeds.begin(dropout_seed)
            try:
                outputs = model(inputs, training=True)
            finally:
                seeds.end()
            sums = loss_sums(outputs, labels)
            loss = loss_from_sums(sums, norm if global_batch else normalisers(labels))
        return sums, tape.gradient(loss, variables)

    if jit_compile:  # XLA for the forward/backward pass (the iterator, the all-reduce and the update stay outside)
        losses_and_grads = tf.function(losses_and_grads, jit_compile=True)

    def sum_over_replicas(grads):
        if num_replicas == 1:  # nothing to add (and one-device MirroredStrategy cannot batch-reduce unplaced reads)
            return grads
        return tf.distribute.get_replica_context().all_reduce(tf.distribute.ReduceOp.SUM, grads)

    def apply(grads):
        if global_batch:  # sum over replicas first, then clip the global-batch gradient
            grads, _ = clip_gradients(sum_over_replicas(grads), clip_norm)
        else:  # official: clip this replica's gradient, then average over replicas
            grads, _ = clip_gradients(grads, clip_norm)
            grads = sum_over_replicas([None if g is None else g / num_replicas for g in grads])
        optimizer.apply_gradients(zip(grads, variables), skip_gradients_aggregation=True)

    def micro_step(inputs, labels, norm, dropout_seed):
        sums, grads = losses_and_grads(inputs, labels, norm, replica_seed(dropout_seed))
        if accumulator is None:
            apply(grads)
        else:
            accumulator.accumulate(grads)
        return sums

    def apply_accumulated():
        apply(accumulator.sums() if global_batch else accumulator.gradients())
        accumulator.reset()

    def one_step(iterator):
        step = optimizer.iterations.read_value()
        batches = [next(iterator) for _ in range(k)]  # unrolled: grad_accum_steps is a small static number
        norm = tf.zeros([2])
        if global_batch:  # masked tokens and sequences of the whole global batch, before any gradient
            for _, labels in batches:
                norm += strategy.reduce(tf.distribute.ReduceOp.SUM, strategy.run(normalisers, args=(labels,)),
                                        axis=None)
        sums = tf.zeros([NUM_SUMS])
        for micro, (inputs, labels) in enumerate(batches):
            per_replica = strategy.run(micro_step, args=(inputs, labels, norm, step_seed(seed, step, micro)))
            sums += strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica, axis=None)
        if accumulator is not None:
            strategy.run(apply_accumulated)
        return metrics_from_sums(sums)

    @tf.function(autograph=False)  # plain Python control flow; autograph only cost tracing time
    def train_step(iterator):
        return one_step(iterator)

    @tf.function(autograph=False)
    def train_steps(iterator, n):
        """``n`` optimizer steps in one call (``train.steps_per_loop``): the summed metrics of those steps.

        One call per step leaves a TPU idle while the host dispatches the next one; a loop on the device does not.
        Each iteration's update runs before the next reads ``optimizer.iterations`` (while_v2 orders the body's
        stateful ops), so n steps per call are the n steps of n calls.
        """
        def body(i, total):
            return i + 1, total + one_step(iterator)

        _, total = tf.while_loop(lambda i, _: i < n, body, (tf.constant(0), tf.zeros([len(METRIC_NAMES)])))
        return total

    train_step.steps = train_steps
    return train_step
