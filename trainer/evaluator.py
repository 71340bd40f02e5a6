"""The held-out evaluation: the official pretraining metrics of the first records of the eval split.

One evaluator for every layout: it sums :func:`trainer.losses.loss_sums` over replicas and hosts and divides once,
so 1 device, k replicas or a cluster report the same numbers, and padding rows (the set is padded to whole global
batches so that every replica runs the same number of steps) count nowhere.
"""
from __future__ import annotations

from typing import Callable, Dict, Sequence

import numpy as np
import tensorflow as tf

from trainer import input_pipeline
from trainer.losses import METRIC_NAMES, NUM_SUMS, loss_sums, metrics_from_sums
from trainer.pretrain_job import PretrainJob


def make_evaluator(model, strategy: tf.distribute.Strategy, eval_files: Sequence[str], *, num_records: int,
                   batch_size: int, max_seq_length: int, max_predictions_per_seq: int):
    """``evaluate() -> metrics`` of the first ``num_records`` held-out records (file order), {} if none.

    The official eval metrics (token-weighted MLM loss and accuracy over the whole set, sentence loss and
    accuracy over its sequences), from sums reduced over replicas and hosts: the same numbers for any layout.
    """
    if num_records <= 0:
        return lambda: {}
    if batch_size % strategy.num_replicas_in_sync:
        raise ValueError(f"train.eval_batch_size {batch_size} must divide evenly over "
                         f"{strategy.num_replicas_in_sync} replicas")

    def dataset_fn(ctx: tf.distribute.InputContext) -> tf.data.Dataset:
        return input_pipeline.make_eval_dataset(eval_files, ctx.get_per_replica_batch_size(batch_size),
                                                max_seq_length, max_predictions_per_seq, num_records=num_records,
                                                global_batch_size=batch_size, input_context=ctx)

    def replica_sums(inputs, labels):
        return loss_sums(model(inputs, training=False), labels, labels["row_weights"])

    @tf.function(autograph=False)
    def eval_step(iterator):
        inputs, labels = next(iterator)
        return strategy.reduce(tf.distribute.ReduceOp.SUM, strategy.run(replica_sums, args=(inputs, labels)),
                               axis=None)

    steps = -(-num_records // batch_size)

    def evaluate() -> Dict[str, float]:
        iterator = iter(strategy.distribute_datasets_from_function(dataset_fn))
        sums = np.zeros([NUM_SUMS], np.float64)
        for _ in range(steps):
            sums += eval_step(iterator).numpy()
        values = metrics_from_sums(tf.constant(sums, tf.float32)).numpy()
        return {n: float(v) for n, v in zip(METRIC_NAMES, values)}

    return evaluate


def held_out_evaluator(model, strategy: tf.distribute.Strategy, job: PretrainJob, counts_cache: str,
                       write_counts: bool) -> Callable[[], Dict[str, float]]:
    """The run's evaluator: up to ``train.eval_steps * train.eval_batch_size`` records of ``job.eval_files`` at the
    first phase's shapes (the short eval split in both sequence phases, so curves stay comparable across the
    switch); {} when there are none. Record counts are cached in ``counts_cache`` (written by the chief alone)."""
    t = job.train
    eval_files = input_pipeline.expand_files(job.eval_files) if job.eval_files else []
    num_eval = min(sum(input_pipeline.record_counts(eval_files, counts_cache, write=write_counts)),
                   t.eval_steps * t.eval_batch_size) if eval_files else 0
    return make_evaluator(model, strategy, eval_files, num_records=num_eval, batch_size=t.eval_batch_size,
                          max_seq_length=job.max_seq_length, max_predictions_per_seq=job.max_predictions_per_seq)
