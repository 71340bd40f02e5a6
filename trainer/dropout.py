"""Stateless dropout: masks drawn from (run seed, step, micro-batch, replica, call), so a resumed run draws the same.

Keras' stateful dropout RNG restarts from its initial state in a new process: a run resumed from a checkpoint
would draw other masks than the uninterrupted run, and "a killed and rerun run is the same run"
(docs/resume.md) would not hold once dropout is on. tf_keras has no public hook for the seed of a ``Dropout`` layer, so
:func:`use_stateless_dropout` replaces each layer's private ``_random_generator`` (whose only use in ``Dropout`` is
``dropout(inputs, rate, noise_shape)``) with one that calls ``tf.nn.experimental.stateless_dropout``.
"""
from __future__ import annotations

from typing import Optional

import tensorflow as tf
import tf_keras

_DROPOUT_SALT = 0x5EED


class DropoutSeeds:
    """Seeds for the model's dropout layers: stateless, from (run seed, step, micro-batch, replica, call index).

    ``begin`` is called at the start of every training forward pass (Python, i.e. at trace time); each dropout call
    then folds its position in the pass into the seed, so the layers that ALBERT shares across depth still draw a
    different mask at each depth.
    """

    def __init__(self):
        self.seed: Optional[tf.Tensor] = None
        self.calls = 0

    def begin(self, seed: tf.Tensor) -> None:
        self.seed, self.calls = seed, 0

    def end(self) -> None:
        self.seed, self.calls = None, 0

    def next(self) -> tf.Tensor:
        self.calls += 1
        if self.seed is None:  # a trace outside training (e.g. SavedModel export tracing training=True)
            return tf.constant([0, self.calls], tf.int64)
        return tf.random.experimental.stateless_fold_in(self.seed, self.calls)


class _StatelessDropout(tf.__internal__.tracking.AutoTrackable):
    """Stands in for a Keras ``Dropout`` layer's ``_random_generator`` (its only use there is ``dropout``)."""

    def __init__(self, seeds: DropoutSeeds):
        self._seeds = seeds

    def dropout(self, inputs, rate, noise_shape=None):
        return tf.nn.experimental.stateless_dropout(inputs, rate=rate, seed=self._seeds.next(),
                                                    noise_shape=noise_shape)


def use_stateless_dropout(model: tf_keras.Model, seeds: DropoutSeeds) -> int:
    """Route every ``Dropout`` layer of ``model`` through ``seeds``; returns how many layers were changed."""
    layers = [layer for layer in model._flatten_layers(include_self=False)
              if isinstance(layer, tf_keras.layers.Dropout)]
    for layer in layers:
        layer._random_generator = _StatelessDropout(seeds)
    return len(layers)


def step_seed(seed: int, step: tf.Tensor, micro: int) -> tf.Tensor:
    """The dropout seed of one micro-batch of one optimizer step (the replica id is folded in per replica)."""
    base = tf.constant([seed, _DROPOUT_SALT], tf.int64)
    return tf.random.experimental.stateless_fold_in(
        tf.random.experimental.stateless_fold_in(base, tf.cast(step, tf.int64)), micro)


def replica_seed(seed: tf.Tensor) -> tf.Tensor:
    """``seed`` with this replica's id folded in (call in replica context)."""
    replica = tf.distribute.get_replica_context().replica_id_in_sync_group
    return tf.random.experimental.stateless_fold_in(seed, tf.cast(replica, tf.int64))
