"""The pretraining loop: the one place that puts the trainer's pieces together.

A custom loop rather than ``model.fit`` because the recipe needs gradient accumulation (to reach a
4096 batch on small hardware), global-norm clipping of the accumulated gradient, and a step counter
that survives preemption: training always runs to exactly ``num_train_steps`` optimizer steps,
resuming from the latest checkpoint in ``checkpoint_dir`` if one exists. The pieces, one concept each
(Orbit-style): :mod:`trainer.train_step` (model, optimizer and the step), :mod:`trainer.losses`,
:mod:`trainer.dropout`, :mod:`trainer.run_state` (checkpoints, history, TensorBoard), :mod:`trainer.evaluator`,
:mod:`trainer.sequence_phases`, :mod:`trainer.precision_probe` and :mod:`trainer.export`; the job they all read,
:class:`~trainer.pretrain_job.PretrainJob`, is a module of its own.

Resume guarantee (docs/resume.md, "Resume guarantee"): a run killed anywhere and rerun is the same run. Everything
step N computes is a function of the checkpointed state and N: the batch is records ``[N*B, (N+1)*B)`` of the
seekable order (``input_pipeline.make_pretraining_dataset``), dropout masks come from stateless ops seeded by
(seed, N, micro-batch, replica, call), the learning rate from ``optimizer.iterations``, and the running
log-window sums are in the checkpoint. A resumed run cuts ``train_history.jsonl`` and the TensorBoard event
files back to the checkpoint step before it writes again. With BERT's two-phase sequence length
(``train.long_seq_from_step`` = S) steps from S on read the long examples, step N at records
``[(N-S)*B, (N-S+1)*B)`` of their own seekable stream (:class:`~trainer.sequence_phases.PhasedInput`), so a resume
on either side of the switch is the same run too.
"""
from __future__ import annotations

import dataclasses
import logging
import os
import posixpath
from typing import Any, Callable, Dict, Optional, Tuple

import tensorflow as tf
import tf_keras

from config.schema import ConfigError
from trainer.trainer_config import TrainConfig
from trainer import distribute
from trainer.evaluator import held_out_evaluator
from trainer.files import CONFIG_FILE, ENCODER_CKPT, PRETRAINING_CKPT, SPM_FILE  # noqa: F401 (tests/conftest.py reads them here)
from trainer.losses import TrainMetrics
from trainer.precision_probe import resolve_precision
from trainer.pretrain_job import PretrainJob
from trainer.run_state import Checkpoints, RunLog
from trainer.sequence_phases import PhasedInput, open_train_input
from trainer.train_step import build_model_and_optimizer, make_train_step, resolve_jit_compile

log = logging.getLogger(__name__)

RECORD_COUNTS_FILE = "record_counts.json"


def pretrain(job: PretrainJob) -> Dict[str, object]:
    """Train to exactly ``job.train.num_train_steps`` steps; returns final eval metrics and run facts.

    Runs the same loop under every strategy (:mod:`trainer.distribute`); in a cluster every task runs it in
    lockstep and only the chief writes the checkpoints, logs and history.
    """
    t = job.train
    strategy = distribute.make_strategy(t.strategy, cpu_replicas=t.cpu_replicas, peer_timeout_s=t.peer_timeout_s)
    cluster = distribute.cluster_for(t.strategy)
    chief = distribute.is_chief(cluster)
    decision = resolve_precision(job, strategy, chief)
    tf_keras.mixed_precision.set_global_policy(decision.precision)
    # Seeds Python's random, NumPy and TF: tf_keras initializers built without a seed draw theirs from Python's
    # random module, so tf.random.set_seed alone left the initial weights different on every run.
    tf_keras.utils.set_random_seed(job.seed)
    num_replicas = strategy.num_replicas_in_sync
    micro_batch = t.train_batch_size // t.grad_accum_steps
    if micro_batch % num_replicas:
        raise ValueError(f"micro-batch {micro_batch} (train_batch_size / grad_accum_steps) must divide evenly over "
                         f"{num_replicas} replicas")

    with strategy.scope():
        model, optimizer = build_model_and_optimizer(job.albert_config, t, job.max_seq_length,
                                                     job.max_predictions_per_seq)
        train_metrics = TrainMetrics()
        checkpoint = tf.train.Checkpoint(model=model, optimizer=optimizer, train_metrics=train_metrics)
    scratch = distribute.worker_scratch(cluster)
    checkpoints = Checkpoints(checkpoint, job.checkpoint_dir, scratch)
    resume_from = checkpoints.restore()
    if resume_from:
        log.info("resumed from %s at step %d", resume_from, int(optimizer.iterations.numpy()))
    elif job.init_state:  # the base's run continued: its whole state, as a resume would restore it
        state = Checkpoints(checkpoint, job.init_state).restore()
        if state is None:
            raise ConfigError(f"train.init_restore=all: {job.init_state} holds no checkpoint of the base's run; use "
                              "train.init_restore=weights")
        log.info("continuing the base's run from %s at step %d", state, int(optimizer.iterations.numpy()))
    elif job.init_checkpoint:
        warm_start(model, job.init_checkpoint)
    start_step = int(optimizer.iterations.numpy())
    if start_step > t.num_train_steps:  # never return a model trained past the count asked for (task.run_folder)
        raise ConfigError(f"{resume_from or job.init_state} is at step {start_step}, past train.num_train_steps="
                          f"{t.num_train_steps}: --set train.num_train_steps=N with N >= {start_step} to continue "
                          "that run, or use another checkpoint folder for a run of its own")

    if chief:
        tf.io.gfile.makedirs(job.checkpoint_dir)
    cache = os.path.join(job.checkpoint_dir, RECORD_COUNTS_FILE)
    train_input = open_train_input(job, strategy, micro_batch, cache, write_counts=chief)
    train_input.iterator(start_step)  # opened now: the first batch's reads overlap the set-up below
    step_fn = make_train_step(model, optimizer, strategy, grad_accum_steps=t.grad_accum_steps, clip_norm=t.clip_norm,
                              seed=job.seed, semantics=t.gradient_semantics,
                              jit_compile=resolve_jit_compile(t.jit_compile, strategy))
    evaluate = held_out_evaluator(model, strategy, job, cache, write_counts=chief)
    run_log = RunLog(job.log_dir, start_step, t.num_train_steps, t.train_batch_size, enabled=chief)
    loop = TrainLoop(train=t, step_fn=step_fn, train_input=train_input, train_metrics=train_metrics,
                     optimizer=optimizer, evaluate=evaluate, checkpoints=checkpoints, run_log=run_log, cluster=cluster)
    try:
        step, eval_metrics = loop.run(start_step)
    finally:
        run_log.close()
        if scratch:
            tf.io.gfile.rmtree(scratch)
    return {"model": model, "eval_metrics": eval_metrics, "start_step": start_step, "final_step": step,
            "precision": decision.precision, "precision_decision": decision.record(), "num_replicas": num_replicas,
            "gradient_semantics": t.gradient_semantics, "chief": chief, "strategy": strategy}


def warm_start(model, albert_dir: str) -> None:
    """The official ``--init_checkpoint``: the weights of the base in ``albert_dir``, nothing of its optimizer or
    step. The pretraining checkpoint gives the encoder and whichever heads it holds (a head it lacks starts fresh);
    the encoder checkpoint, where there is one, must then match the encoder whole. A run that resumes its own
    checkpoints never comes here."""
    pretraining, encoder = (posixpath.join(albert_dir, c) for c in (PRETRAINING_CKPT, ENCODER_CKPT))
    if tf.io.gfile.exists(pretraining + ".index"):
        tf.train.Checkpoint(model=model).read(pretraining).expect_partial()
    if tf.io.gfile.exists(encoder + ".index"):
        tf.train.Checkpoint(encoder=model.albert).read(encoder).assert_existing_objects_matched()
    log.info("initial weights from %s (optimizer, step and schedule fresh)", albert_dir)


@dataclasses.dataclass(frozen=True)
class TrainLoop:
    """What the loop drives: the step, its input, the metric window, and where logs, evaluations and checkpoints go.

    ``train_input``: a :class:`PhasedInput`; with two sequence phases every training log line also says the
    ``max_seq_length`` of its window's last step. ``cluster``: the multi-worker cluster (None: one task), in which
    a collective that fails because another task died becomes one :class:`distribute.ClusterError`.
    """

    train: TrainConfig
    step_fn: Callable  # make_train_step's: step_fn(iterator), step_fn.steps(iterator, n)
    train_input: PhasedInput
    train_metrics: TrainMetrics
    optimizer: Any
    evaluate: Callable[[], Dict[str, float]]
    checkpoints: Checkpoints
    run_log: RunLog
    cluster: Optional[Dict[str, Any]] = None

    def run(self, step: int) -> Tuple[int, Dict[str, float]]:
        """Steps, logs, evaluations and checkpoints from ``step`` to ``train.num_train_steps``; (final step, final
        eval metrics)."""
        t, start_step, eval_metrics = self.train, step, {}
        try:
            while step < t.num_train_steps:
                n = min(max(t.steps_per_loop, 1), _next_stop(step, t) - step)
                batches = self.train_input.iterator(step)
                if n == 1:
                    self.train_metrics.update(self.step_fn(batches))
                else:
                    self.train_metrics.update(self.step_fn.steps(batches, tf.constant(n)), count=n)
                step += n
                if step % t.log_every == 0 or step == t.num_train_steps:
                    self.run_log.train(step, self._window(step))
                if (t.eval_every and step % t.eval_every == 0) or step == t.num_train_steps:
                    eval_metrics = self.evaluate()
                    if eval_metrics:
                        self.run_log.eval(step, eval_metrics)
                # After logging: the checkpoint then covers everything logged up to its step (what resume keeps).
                if t.checkpoint_every and step % t.checkpoint_every == 0:
                    self.checkpoints.save(step)
            if step == start_step:
                eval_metrics = self.evaluate()
            elif not (t.checkpoint_every and step % t.checkpoint_every == 0):
                self.checkpoints.save(step)  # the same decision on every task: saves are collective in a cluster
        except distribute.peer_errors() as exc:
            if self.cluster is None:
                raise
            raise distribute.peer_lost(self.cluster, step, exc) from exc
        return step, eval_metrics

    def _window(self, step: int) -> Dict[str, float]:
        """The log window's mean metrics, the learning rate of the last update (and, with two phases, the sequence
        length); starts the next window."""
        values = self.train_metrics.result()
        values["learning_rate"] = learning_rate_now(self.optimizer)
        if len(self.train_input.phases) > 1:
            values["max_seq_length"] = self.train_input.max_seq_length(step)
        self.train_metrics.reset()
        return values


def _next_stop(step: int, t: TrainConfig) -> int:
    """The next step after ``step`` at which the loop must stop to log, evaluate, checkpoint or switch to the long
    sequences (``train.long_seq_from_step``)."""
    stops = [t.num_train_steps]
    for every in (t.log_every, t.eval_every, t.checkpoint_every):
        if every:
            stops.append((step // every + 1) * every)
    if t.long_seq_from_step > step:
        stops.append(t.long_seq_from_step)
    return min(stops)


def learning_rate_now(optimizer) -> float:
    """The learning rate of the last update (a plain or distributed variable, or a number)."""
    lr = optimizer.learning_rate
    return float(lr.numpy()) if hasattr(lr, "numpy") else float(lr)
