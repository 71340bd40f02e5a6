"""``train.mixed_precision=auto`` for pretraining: what the precision probe times, and how a cluster agrees.

:mod:`trainer.precision` decides (host facts, caches, the timing rule) and knows nothing of the model; this
module gives it the real thing to time: the Trainer's own step (:func:`trainer.train_step.make_train_step`) on a
throwaway model at the run's per-replica micro-batch, fed a real-shaped batch (:func:`probe_batch`). In a cluster
every task averages its times over all tasks, so all pick the same precision. A resumed run keeps the precision
recorded in its checkpoint folder.
"""
from __future__ import annotations

import logging
from typing import Dict

import numpy as np
import tensorflow as tf

from trainer import distribute, input_pipeline, precision
from trainer.pretrain_job import PretrainJob
from trainer.train_step import build_model_and_optimizer, make_train_step, resolve_jit_compile

log = logging.getLogger(__name__)


def resolve_precision(job: PretrainJob, strategy: tf.distribute.Strategy, chief: bool) -> precision.Decision:
    """``train.mixed_precision`` of this run (``auto``: measured, :mod:`trainer.precision`).

    A resumed run keeps the precision recorded in its checkpoint folder (``auto`` may measure differently on
    another day or machine, and the run must stay the run it resumes). The probe times the real step on a
    throwaway model with the per-replica micro-batch; in a cluster every task averages the times over all tasks,
    so all pick the same precision. Called before the run is seeded (the probe reseeds for its own model).
    """
    t = job.train
    if t.mixed_precision == "auto":
        kept = precision.recorded(job.checkpoint_dir)
        if kept is not None:
            log.info("mixed_precision=auto: %s, as recorded by the run this one resumes", kept.precision)
            return kept
    per_replica = t.train_batch_size // t.grad_accum_steps // strategy.num_replicas_in_sync
    jit = resolve_jit_compile(t.jit_compile, strategy)
    shape = {"albert_config": job.albert_config.to_dict(), "batch": per_replica, "seq": job.max_seq_length,
             "predictions": job.max_predictions_per_seq, "optimizer": t.optimizer, "sentence_task": t.sentence_task,
             "jit_compile": jit}

    def build_step(_precision: str):
        model, optimizer = build_model_and_optimizer(job.albert_config, t, job.max_seq_length,
                                                     job.max_predictions_per_seq)
        step = make_train_step(model, optimizer, tf.distribute.get_strategy(), grad_accum_steps=1,
                               clip_norm=t.clip_norm, seed=precision.PROBE_SEED, semantics=t.gradient_semantics,
                               jit_compile=jit)
        batch = probe_batch(per_replica, job.max_seq_length, job.max_predictions_per_seq, job.albert_config.vocab_size)
        iterator = iter(input_pipeline.short_lived(tf.data.Dataset.from_tensors(batch).repeat()))
        return lambda: step(iterator)

    combine = _mean_over_tasks(strategy) if distribute.is_multi_worker(strategy) else None
    decision = precision.resolve(t.mixed_precision, kind="pretrain", shape=shape, build_step=build_step,
                                 strategy=strategy, combine=combine)
    if chief and t.mixed_precision == "auto":
        precision.record(job.checkpoint_dir, decision)
    return decision


def probe_batch(batch: int, seq: int, preds: int, vocab: int):
    """A real-shaped (inputs, labels) batch of random ids from the probe's own seed."""
    rng = np.random.default_rng(precision.PROBE_SEED)
    inputs = {"input_ids": rng.integers(5, vocab, (batch, seq)).astype(np.int32),
              "input_mask": np.ones((batch, seq), np.int32),
              "segment_ids": (np.arange(seq)[None, :] >= seq // 2).repeat(batch, 0).astype(np.int32),
              "masked_lm_positions": np.sort(rng.permuted(np.tile(np.arange(1, seq), (batch, 1)), axis=1)[:, :preds],
                                             1).astype(np.int32)}
    labels = {"masked_lm_ids": rng.integers(5, vocab, (batch, preds)).astype(np.int32),
              "masked_lm_weights": np.ones((batch, preds), np.float32),
              "next_sentence_labels": rng.integers(0, 2, (batch, 1)).astype(np.int32)}
    return inputs, labels


def _mean_over_tasks(strategy: tf.distribute.Strategy):
    """Step times averaged over every replica of the cluster (one all-reduce)."""
    def combine(seconds: Dict[str, float]) -> Dict[str, float]:
        local = tf.constant([seconds[p] for p in precision.PRECISIONS], tf.float32)

        @tf.function(autograph=False)
        def all_tasks():
            return strategy.reduce(tf.distribute.ReduceOp.SUM, strategy.run(lambda: local), axis=None)

        total = all_tasks().numpy() / strategy.num_replicas_in_sync
        return {p: float(v) for p, v in zip(precision.PRECISIONS, total)}

    return combine
