"""The pretraining loop: strategy, mixed precision, accumulation, clipping, checkpoints, TensorBoard.

A custom loop rather than ``model.fit`` because the recipe needs gradient accumulation (to reach a
4096 batch on small hardware), global-norm clipping of the accumulated gradient, and a step counter
that survives preemption: training always runs to exactly ``num_train_steps`` optimizer steps,
resuming from the latest checkpoint in ``checkpoint_dir`` if one exists.

Resume guarantee (README, "Resume guarantee"): a run killed anywhere and rerun is the same run. Everything
step N computes is a function of the checkpointed state and N: the batch is records ``[N*B, (N+1)*B)`` of the
seekable order (``input_pipeline.make_pretraining_dataset``), dropout masks come from stateless ops seeded by
(seed, N, micro-batch, replica, call), the learning rate from ``optimizer.iterations``, and the running
log-window sums are in the checkpoint. A resumed run cuts ``train_history.jsonl`` and the TensorBoard event
files back to the checkpoint step before it writes again. With BERT's two-phase sequence length
(``train.long_seq_from_step`` = S) steps from S on read the long examples, step N at records
``[(N-S)*B, (N-S+1)*B)`` of their own seekable stream (:class:`PhasedInput`), so a resume on either side of the
switch is the same run too.
"""
from __future__ import annotations

import dataclasses
import json
import logging
import os
import time
from typing import Dict, List, Optional, Sequence

import numpy as np
import tensorflow as tf
import tf_keras

from trainer import distribute, input_pipeline, precision
from trainer.files import (CONFIG_FILE, ENCODER_CKPT, EXPORT_INFO_FILE, HISTORY_FILE,  # noqa: F401 (re-exported)
                           PRETRAINING_CKPT, SPM_FILE)
from trainer.formatting import eta_text
from trainer.modeling_albert import AlbertConfig, AlbertForPreTraining
from trainer.optimization import GradientAccumulator, clip_gradients, create_optimizer

log = logging.getLogger(__name__)

METRIC_NAMES = ("loss", "mlm_loss", "sentence_loss", "mlm_accuracy", "sentence_accuracy")
RECORD_COUNTS_FILE = "record_counts.json"
GRADIENT_SEMANTICS = ("global_batch", "per_replica")
_DROPOUT_SALT = 0x5EED


@dataclasses.dataclass
class PretrainJob:
    """Everything one pretraining run needs (built by ``trainer.task.run_fn`` from the pipeline config)."""

    albert_config: AlbertConfig
    train: "object"  # pipeline.configs.TrainConfig (kept untyped: trainer must not import pipeline)
    seed: int
    train_files: Sequence[str]
    eval_files: Sequence[str]
    max_seq_length: int
    max_predictions_per_seq: int
    checkpoint_dir: str
    log_dir: str
    # BERT's two-phase sequence length (``train.long_seq_from_step`` > 0): the long examples the steps from the
    # switch on read, and their shapes. Empty / 0: one phase.
    long_train_files: Sequence[str] = ()
    long_max_seq_length: int = 0
    long_max_predictions_per_seq: int = 0


def progress_line(step: int, total: int, values: Dict[str, float]) -> str:
    """One operator-facing line: step, losses, accuracy, learning rate, throughput and the time left."""
    rate = values.get("sequences_per_sec") or 0.0
    steps_per_sec = rate / max(values.get("_batch", 1.0), 1.0)
    eta = f" {eta_text(total - step, steps_per_sec)}" if steps_per_sec > 0 else ""
    parts = [f"step {step}/{total}"]
    for key, label in (("loss", "loss"), ("mlm_loss", "mlm"), ("sentence_loss", "sentence"),
                       ("mlm_accuracy", "mlm_acc"), ("sentence_accuracy", "sentence_acc")):
        if key in values:
            parts.append(f"{label} {values[key]:.4f}")
    if "learning_rate" in values:
        parts.append(f"lr {values['learning_rate']:.3g}")
    parts.append(f"{rate:.1f} seq/s{eta}")
    return " ".join(parts)


def resolve_precision(job: "PretrainJob", strategy: tf.distribute.Strategy, chief: bool) -> precision.Decision:
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
    semantics = getattr(t, "gradient_semantics", "global_batch")
    shape = {"albert_config": job.albert_config.to_dict(), "batch": per_replica, "seq": job.max_seq_length,
             "predictions": job.max_predictions_per_seq, "optimizer": t.optimizer, "sentence_task": t.sentence_task,
             "jit_compile": jit}

    def build_step(_precision: str):
        model, optimizer = build_model_and_optimizer(job.albert_config, t, job.max_seq_length,
                                                     job.max_predictions_per_seq)
        step = make_train_step(model, optimizer, tf.distribute.get_strategy(), grad_accum_steps=1,
                               clip_norm=t.clip_norm, seed=precision.PROBE_SEED, semantics=semantics, jit_compile=jit)
        batch = _probe_batch(per_replica, job.max_seq_length, job.max_predictions_per_seq,
                             job.albert_config.vocab_size)
        iterator = iter(input_pipeline.short_lived(tf.data.Dataset.from_tensors(batch).repeat()))
        return lambda: step(iterator)

    combine = _mean_over_tasks(strategy) if distribute.is_multi_worker(strategy) else None
    decision = precision.resolve(t.mixed_precision, kind="pretrain", shape=shape, build_step=build_step,
                                 strategy=strategy, combine=combine)
    if chief and t.mixed_precision == "auto":
        precision.record(job.checkpoint_dir, decision)
    return decision


def _probe_batch(batch: int, seq: int, preds: int, vocab: int):
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


def resolve_jit_compile(flag: Optional[bool], strategy: tf.distribute.Strategy) -> bool:
    """``train.jit_compile``: XLA for the forward/backward pass. TPUStrategy always compiles with XLA.

    Measured on the same CPU (float32): jit_compile off 0.070 steps/s vs on 0.049 steps/s (first step 49 s vs
    44 s), so ``train.jit_compile`` defaults to off; on GPUs it may pay (set ``train.jit_compile=true``).
    """
    if isinstance(strategy, tf.distribute.TPUStrategy):
        return False  # TPUStrategy compiles the whole replica step already
    return bool(flag)


class TrainMetrics(tf.Module):
    """Sums of the per-step global-batch metrics since the last log point.

    Checkpointed with the model: a run resumed between two log points logs the same window mean as the
    uninterrupted run. Plain (mirrored) variables updated in cross-replica context, once per optimizer step.
    """

    def __init__(self):
        super().__init__(name="train_metrics")
        self.total = tf.Variable(tf.zeros([len(METRIC_NAMES)], tf.float32), trainable=False, name="total")
        self.count = tf.Variable(0.0, trainable=False, name="count")

    def update(self, values: tf.Tensor, count: int = 1) -> None:
        """Add ``count`` steps whose summed metric values are ``values``."""
        self.total.assign_add(values)
        self.count.assign_add(float(count))

    def result(self) -> Dict[str, float]:
        means = (self.total / tf.maximum(self.count, 1.0)).numpy()
        return {n: float(v) for n, v in zip(METRIC_NAMES, means)}

    def reset(self) -> None:
        self.total.assign(tf.zeros_like(self.total))
        self.count.assign(0.0)


# Indices into the per-micro-batch sums computed by loss_sums.
_MLM_NLL, _MLM_CORRECT, _MLM_WEIGHT, _SENT_CE, _SENT_CORRECT, _SENT_COUNT = range(6)


def loss_sums(outputs: Dict[str, tf.Tensor], labels: Dict[str, tf.Tensor],
              row_weights: Optional[tf.Tensor] = None) -> tf.Tensor:
    """[6] float32 sums over a batch: weighted MLM nll, weighted MLM hits, MLM weight, sentence ce, hits, count.

    Sums, not means, so micro-batches and replicas add up to the global batch exactly
    (``metrics_from_sums`` of one batch's sums equals ``pretraining_losses`` of that batch). ``row_weights`` [B]
    (1 real, 0 padding) leaves padded rows out of every sum: evaluation pads the held-out set to whole global
    batches so that every replica of every host runs the same number of steps.
    """
    logits = tf.cast(outputs["mlm_logits"], tf.float32)
    ids = tf.cast(labels["masked_lm_ids"], tf.int32)
    weights = tf.cast(labels["masked_lm_weights"], tf.float32)
    if row_weights is not None:
        row_weights = tf.cast(row_weights, tf.float32)
        weights = weights * row_weights[:, tf.newaxis]
    nll = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=ids, logits=logits)
    hits = tf.cast(tf.equal(tf.argmax(logits, axis=-1, output_type=tf.int32), ids), tf.float32)
    sentence_logits = outputs.get("sentence_logits")
    if sentence_logits is not None:
        sentence_logits = tf.cast(sentence_logits, tf.float32)
        sl = tf.reshape(tf.cast(labels["next_sentence_labels"], tf.int32), [-1])
        rows = tf.ones_like(sl, tf.float32) if row_weights is None else row_weights
        ce = tf.reduce_sum(rows * tf.nn.sparse_softmax_cross_entropy_with_logits(labels=sl, logits=sentence_logits))
        s_hits = tf.reduce_sum(rows * tf.cast(tf.equal(tf.argmax(sentence_logits, -1, output_type=tf.int32), sl),
                                              tf.float32))
        count = tf.reduce_sum(rows)
    else:
        ce = s_hits = count = tf.constant(0.0)
    return tf.stack([tf.reduce_sum(weights * nll), tf.reduce_sum(weights * hits), tf.reduce_sum(weights),
                     ce, s_hits, count])


def normalisers(labels: Dict[str, tf.Tensor]) -> tf.Tensor:
    """[2]: real masked tokens and sequences of a batch (summed over the global batch before any forward pass)."""
    return tf.stack([tf.reduce_sum(tf.cast(labels["masked_lm_weights"], tf.float32)),
                     tf.cast(tf.shape(labels["next_sentence_labels"])[0], tf.float32)])


def loss_from_sums(sums: tf.Tensor, norm: tf.Tensor) -> tf.Tensor:
    """This batch's share of the loss of a batch whose masked-token / sequence counts are ``norm``
    (the official ``sum(w * nll) / (sum(w) + 1e-5)`` MLM loss plus the mean sentence loss)."""
    return sums[_MLM_NLL] / (norm[0] + 1e-5) + sums[_SENT_CE] / tf.maximum(norm[1], 1.0)


def metrics_from_sums(sums: tf.Tensor) -> tf.Tensor:
    """[len(METRIC_NAMES)] metric values of the batch whose summed ``loss_sums`` are ``sums``."""
    denominator = sums[_MLM_WEIGHT] + 1e-5
    count = tf.maximum(sums[_SENT_COUNT], 1.0)
    mlm, sentence = sums[_MLM_NLL] / denominator, sums[_SENT_CE] / count
    return tf.stack([mlm + sentence, mlm, sentence, sums[_MLM_CORRECT] / denominator, sums[_SENT_CORRECT] / count])


class DropoutSeeds:
    """Seeds for the model's dropout layers: stateless, from (run seed, step, micro-batch, replica, call index).

    Keras' stateful dropout RNG restarts from its initial state in a new process, so a resumed run would draw
    other masks than the uninterrupted one. ``begin`` is called at the start of every training forward pass
    (Python, i.e. at trace time); each dropout call then folds its position in the pass into the seed, so the
    layers that ALBERT shares across depth still draw a different mask at each depth.
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


def _replica_seed(seed: tf.Tensor) -> tf.Tensor:
    replica = tf.distribute.get_replica_context().replica_id_in_sync_group
    return tf.random.experimental.stateless_fold_in(seed, tf.cast(replica, tf.int64))


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
        sums, grads = losses_and_grads(inputs, labels, norm, _replica_seed(dropout_seed))
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
        sums = tf.zeros([6])
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


def newest_checkpoint(checkpoint_dir: str, recorded: Optional[str]) -> Optional[str]:
    """The newest complete checkpoint in ``checkpoint_dir``, even if the state file does not list it yet.

    ``CheckpointManager`` writes ``ckpt-N.index``/``.data-*`` first and updates its ``checkpoint`` state file
    afterwards; a process killed in between would otherwise resume from the previous checkpoint (or from
    scratch). A V2 checkpoint's ``.index`` is written last, when its shards are merged, so an index file with
    its data shards present marks a complete checkpoint.
    """
    best_step, best = -1, recorded
    if recorded:
        best_step = int(recorded.rsplit("-", 1)[1])
    for index in tf.io.gfile.glob(os.path.join(checkpoint_dir, "ckpt-*.index")):
        prefix = index[: -len(".index")]
        try:
            step = int(prefix.rsplit("-", 1)[1])
        except ValueError:
            continue
        if step > best_step and tf.io.gfile.glob(prefix + ".data-*"):
            best_step, best = step, prefix
    return best


def build_pretraining_model(config: AlbertConfig, sentence_task: str, max_seq_length: int,
                            max_predictions_per_seq: int) -> AlbertForPreTraining:
    model = AlbertForPreTraining(config, sentence_task=sentence_task)
    model(model.dummy_inputs(batch_size=1, seq_len=max_seq_length, num_predictions=max_predictions_per_seq))
    return model


def build_model_and_optimizer(config: AlbertConfig, train, max_seq_length: int, max_predictions_per_seq: int):
    """The pretraining model and its optimizer from the ``train`` settings, the optimizer built over the model's
    variables (its slots exist before any checkpoint restore or step)."""
    model = build_pretraining_model(config, train.sentence_task, max_seq_length, max_predictions_per_seq)
    optimizer = create_optimizer(train.optimizer, train.learning_rate, train.num_warmup_steps, train.num_train_steps,
                                 weight_decay=train.weight_decay, **train.optimizer_options())
    optimizer.build(model.trainable_variables)
    return model, optimizer


def truncate_history(path: str, last_step: int) -> int:
    """Keep only the ``train_history.jsonl`` lines of steps <= ``last_step`` (atomic rewrite); returns lines kept.

    A resumed run restarts at its checkpoint step, so lines a killed attempt wrote past it would otherwise be
    duplicated. A torn last line (killed mid-write) is dropped.
    """
    if not tf.io.gfile.exists(path):
        return 0
    kept, dropped = [], 0
    with tf.io.gfile.GFile(path) as f:
        for line in f:
            try:
                record = json.loads(line)
            except ValueError:
                dropped += 1
                continue
            if int(record["step"]) <= last_step:
                kept.append(json.dumps(record) + "\n")
            else:
                dropped += 1
    if dropped:
        tmp = path + ".tmp"
        with tf.io.gfile.GFile(tmp, "w") as f:
            f.write("".join(kept))
        tf.io.gfile.rename(tmp, path, overwrite=True)
    return len(kept)


def truncate_event_files(folder: str, last_step: int) -> None:
    """Merge a folder's TensorBoard event files into one holding only the events of steps <= ``last_step``.

    TF2 summary writers start a new file per process, and TensorBoard would plot both the killed attempt's
    steps past the checkpoint and the resumed run's. Kill-safe: the merged file replaces the oldest file by an
    atomic rename, then the others are deleted; a kill in between leaves duplicates that the next resume merges
    again (events are keyed by (step, tags), the newest file's copy wins).
    """
    files = sorted(tf.io.gfile.glob(os.path.join(folder, "events.out.tfevents.*")))
    if not files:
        return
    from tensorboard.compat.proto import event_pb2

    events: Dict[tuple, object] = {}
    first_wall_time, dropped = None, False
    for path in files:
        try:
            for raw in tf.data.TFRecordDataset(path):
                event = event_pb2.Event.FromString(raw.numpy())
                if event.HasField("file_version"):
                    first_wall_time = event.wall_time if first_wall_time is None else first_wall_time
                    continue
                if event.step > last_step:
                    dropped = True
                    continue
                events[(event.step, tuple(v.tag for v in event.summary.value))] = event
        except tf.errors.DataLossError:  # a record torn by the kill
            dropped = True
    if not dropped and len(files) == 1:
        return
    tmp = os.path.join(folder, "merged.tmp")
    with tf.io.TFRecordWriter(tmp) as writer:
        writer.write(event_pb2.Event(wall_time=first_wall_time or time.time(),
                                     file_version="brain.Event:2").SerializeToString())
        for key in sorted(events, key=lambda k: (k[0], k[1])):
            writer.write(events[key].SerializeToString())
    tf.io.gfile.rename(tmp, files[0], overwrite=True)
    for path in files[1:]:
        tf.io.gfile.remove(path)


class Checkpoints:
    """The run's checkpoints in ``directory``, written by the chief; a cluster's other tasks write their share of
    each (collective) save into ``scratch`` and delete it at once. Every task restores from ``directory``."""

    def __init__(self, checkpoint: tf.train.Checkpoint, directory: str, scratch: Optional[str] = None):
        self.checkpoint, self.directory, self.scratch = checkpoint, directory, scratch
        self.manager = tf.train.CheckpointManager(checkpoint, scratch or directory, max_to_keep=1 if scratch else 3)

    def restore(self) -> Optional[str]:
        path = newest_checkpoint(self.directory, tf.train.latest_checkpoint(self.directory))
        if path:
            self.checkpoint.restore(path).assert_existing_objects_matched()
        return path

    def save(self, step: int) -> None:
        self.manager.save(checkpoint_number=step)
        if self.scratch:
            for path in tf.io.gfile.glob(os.path.join(self.scratch, "*")):
                tf.io.gfile.remove(path)


class RunLog:
    """``train_history.jsonl`` and TensorBoard events in ``log_dir``, cut back to ``start_step`` first (resume).

    ``enabled=False`` (a cluster's non-chief tasks) writes nothing.
    """

    def __init__(self, log_dir: str, start_step: int, total_steps: int, batch_size: int, enabled: bool = True):
        self.log_dir, self.total_steps, self.batch_size, self.enabled = log_dir, total_steps, batch_size, enabled
        self.last_time, self.last_step = time.time(), start_step
        if not enabled:
            return
        tf.io.gfile.makedirs(log_dir)
        history_path = os.path.join(log_dir, HISTORY_FILE)
        # Cut what a killed attempt logged past the checkpoint we resume from (before the writers open new files).
        truncate_history(history_path, start_step)
        for sub in ("train", "eval"):
            truncate_event_files(os.path.join(log_dir, sub), start_step)
        self.writers = {sub: tf.summary.create_file_writer(os.path.join(log_dir, sub)) for sub in ("train", "eval")}
        self.history = tf.io.gfile.GFile(history_path, "a")

    def train(self, step: int, values: Dict[str, float]) -> None:
        now = time.time()
        values["sequences_per_sec"] = (step - self.last_step) * self.batch_size / max(now - self.last_time, 1e-9)
        self.last_time, self.last_step = now, step
        self._write("train", step, values)
        log.info("%s", progress_line(step, self.total_steps, {**values, "_batch": self.batch_size}))

    def eval(self, step: int, values: Dict[str, float]) -> None:
        self._write("eval", step, values)
        self.last_time = time.time()  # keep eval time out of the throughput figure

    def _write(self, split: str, step: int, values: Dict[str, float]) -> None:
        if not self.enabled:
            return
        with self.writers[split].as_default(step=step):
            for name, value in values.items():
                tf.summary.scalar(name, value)
        self.writers[split].flush()
        self.history.write(json.dumps({"step": step, "split": split, **values}) + "\n")
        self.history.flush()

    def close(self) -> None:
        if self.enabled:
            self.history.close()
            for writer in self.writers.values():
                writer.close()


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
        sums = np.zeros([6], np.float64)
        for _ in range(steps):
            sums += eval_step(iterator).numpy()
        values = metrics_from_sums(tf.constant(sums, tf.float32)).numpy()
        return {n: float(v) for n, v in zip(METRIC_NAMES, values)}

    return evaluate


def _boundaries(step: int, t) -> int:
    """The next step after ``step`` at which the loop must stop to log, evaluate, checkpoint or switch to the long
    sequences (``train.long_seq_from_step``)."""
    stops = [t.num_train_steps]
    for every in (t.log_every, t.eval_every, t.checkpoint_every):
        if every:
            stops.append((step // every + 1) * every)
    switch = getattr(t, "long_seq_from_step", 0)
    if switch and switch > step:
        stops.append(switch)
    return min(stops)


@dataclasses.dataclass(frozen=True)
class SequencePhase:
    """The steps ``[first_step, next phase's first_step)`` read ``files`` at these shapes; step s reads records
    ``[(s - first_step) * B, (s - first_step + 1) * B)`` of their seekable stream."""

    first_step: int
    files: Sequence[str]
    max_seq_length: int
    max_predictions_per_seq: int


def sequence_phases(job: "PretrainJob") -> List[SequencePhase]:
    """One phase at ``max_seq_length``; with ``train.long_seq_from_step`` (BERT's two-phase sequence length), a
    second one from that step on the long examples."""
    phases = [SequencePhase(0, tuple(job.train_files), job.max_seq_length, job.max_predictions_per_seq)]
    switch = int(getattr(job.train, "long_seq_from_step", 0) or 0)
    if switch:
        if not job.long_train_files or not job.long_max_seq_length or not job.long_max_predictions_per_seq:
            raise ValueError(f"train.long_seq_from_step={switch} needs the long examples (long_train_files, "
                             "long_max_seq_length, long_max_predictions_per_seq)")
        phases.append(SequencePhase(switch, tuple(job.long_train_files), job.long_max_seq_length,
                                    job.long_max_predictions_per_seq))
    return phases


class PhasedInput:
    """The training batches of every step, phase by phase: :meth:`iterator` gives the iterator of the phase
    ``step`` is in, opened on first use at the position of ``step`` in that phase's stream (so a run resumed at
    any step, before or after a switch, reads what the uninterrupted run read). The train step retraces once for
    the new shapes; the model, optimizer state and learning-rate schedule carry on unchanged."""

    def __init__(self, phases: Sequence[SequencePhase], open_iterator):
        self.phases, self._open = list(phases), open_iterator
        self._index: Optional[int] = None
        self._iterator = None

    def phase_index(self, step: int) -> int:
        return max(i for i, p in enumerate(self.phases) if p.first_step <= step)

    def iterator(self, step: int):
        index = self.phase_index(step)
        if index != self._index:
            phase = self.phases[index]
            if self._index is not None:
                before = self.phases[self._index]
                log.info("step %d: switching to the long sequences: max_seq_length %d -> %d, "
                         "max_predictions_per_seq %d -> %d", step, before.max_seq_length, phase.max_seq_length,
                         before.max_predictions_per_seq, phase.max_predictions_per_seq)
            elif index > 0:
                log.info("step %d: in the long-sequence phase (from step %d, max_seq_length %d)", step,
                         phase.first_step, phase.max_seq_length)
            self._iterator, self._index = self._open(phase, step), index
        return self._iterator

    def max_seq_length(self, step: int) -> int:
        """The sequence length step ``step`` (1-based, as logged: the step just done) trained on."""
        return self.phases[self.phase_index(max(step - 1, 0))].max_seq_length


def learning_rate_now(optimizer) -> float:
    """The learning rate of the last update (a plain or distributed variable, or a number)."""
    lr = optimizer.learning_rate
    return float(lr.numpy()) if hasattr(lr, "numpy") else float(lr)


def pretrain(job: PretrainJob) -> Dict[str, object]:
    """Train to exactly ``job.train.num_train_steps`` steps; returns final eval metrics and run facts.

    Runs the same loop under every strategy (:mod:`trainer.distribute`); in a cluster every task runs it in
    lockstep and only the chief writes the checkpoints, logs and history.
    """
    t = job.train
    semantics = getattr(t, "gradient_semantics", "global_batch")
    strategy = distribute.make_strategy(t.strategy, cpu_replicas=getattr(t, "cpu_replicas", 1),
                                        peer_timeout_s=getattr(t, "peer_timeout_s", 600))
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
    start_step = int(optimizer.iterations.numpy())
    if resume_from:
        log.info("resumed from %s at step %d", resume_from, start_step)

    # The data order is a function of the record position alone: step N reads records [N*B, (N+1)*B) (of its
    # phase's stream, from the phase's first step: see PhasedInput).
    if chief:
        tf.io.gfile.makedirs(job.checkpoint_dir)
    cache = os.path.join(job.checkpoint_dir, RECORD_COUNTS_FILE)

    def open_iterator(phase: SequencePhase, step: int):
        counts = input_pipeline.record_counts(input_pipeline.expand_files(phase.files), cache, write=chief)

        def dataset_fn(ctx: tf.distribute.InputContext) -> tf.data.Dataset:
            return input_pipeline.make_pretraining_dataset(
                phase.files, ctx.get_per_replica_batch_size(micro_batch), phase.max_seq_length,
                phase.max_predictions_per_seq, seed=job.seed, start=(step - phase.first_step) * t.train_batch_size,
                shuffle_block=t.shuffle_buffer, input_context=ctx, counts=counts)

        return iter(strategy.distribute_datasets_from_function(dataset_fn))

    train_input = PhasedInput(sequence_phases(job), open_iterator)
    train_input.iterator(start_step)  # opened now: the first batch's reads overlap the set-up below
    train_step = make_train_step(model, optimizer, strategy, grad_accum_steps=t.grad_accum_steps,
                                 clip_norm=t.clip_norm, seed=job.seed, semantics=semantics,
                                 jit_compile=resolve_jit_compile(t.jit_compile, strategy))
    # The held-out evaluation reads the short eval split in both phases: curves stay comparable across the switch.
    eval_files = input_pipeline.expand_files(job.eval_files) if job.eval_files else []
    num_eval = min(sum(input_pipeline.record_counts(eval_files, cache, write=chief)),
                   t.eval_steps * t.eval_batch_size) if eval_files else 0
    evaluate = make_evaluator(model, strategy, eval_files, num_records=num_eval, batch_size=t.eval_batch_size,
                              max_seq_length=job.max_seq_length, max_predictions_per_seq=job.max_predictions_per_seq)

    steps_per_loop = max(int(getattr(t, "steps_per_loop", 1)), 1)
    run_log = RunLog(job.log_dir, start_step, t.num_train_steps, t.train_batch_size, enabled=chief)
    step = start_step
    try:
        step, eval_metrics = _train_loop(t, step, train_step, train_input, train_metrics, optimizer, run_log,
                                         evaluate, checkpoints, steps_per_loop, start_step, cluster)
    finally:
        run_log.close()
        if scratch:
            tf.io.gfile.rmtree(scratch)
    return {"model": model, "eval_metrics": eval_metrics, "start_step": start_step, "final_step": step,
            "precision": decision.precision, "precision_decision": decision.record(), "num_replicas": num_replicas,
            "gradient_semantics": semantics, "chief": chief, "strategy": strategy}


def _train_loop(t, step, train_step, train_input, train_metrics, optimizer, run_log, evaluate, checkpoints,
                steps_per_loop, start_step, cluster):
    """Steps, logs, evaluations and checkpoints from ``step`` to ``t.num_train_steps``; (final step, eval metrics).

    ``train_input``: a :class:`PhasedInput`. With two sequence phases, every training log line also says the
    ``max_seq_length`` of its window's last step. In a cluster, a collective that fails because another task died
    becomes one :class:`distribute.ClusterError`.
    """
    eval_metrics: Dict[str, float] = {}
    two_phases = len(train_input.phases) > 1
    try:
        while step < t.num_train_steps:
            n = min(steps_per_loop, _boundaries(step, t) - step)
            train_iter = train_input.iterator(step)
            if n == 1:
                train_metrics.update(train_step(train_iter))
            else:
                train_metrics.update(train_step.steps(train_iter, tf.constant(n)), count=n)
            step += n
            if step % t.log_every == 0 or step == t.num_train_steps:
                values = train_metrics.result()
                values["learning_rate"] = learning_rate_now(optimizer)
                if two_phases:
                    values["max_seq_length"] = train_input.max_seq_length(step)
                train_metrics.reset()
                run_log.train(step, values)
            if (t.eval_every and step % t.eval_every == 0) or step == t.num_train_steps:
                eval_metrics = evaluate()
                if eval_metrics:
                    run_log.eval(step, eval_metrics)
            # After logging: the checkpoint then covers everything logged up to its step (what resume keeps).
            if t.checkpoint_every and step % t.checkpoint_every == 0:
                checkpoints.save(step)
        if step == start_step:
            eval_metrics = evaluate()
        elif not (t.checkpoint_every and step % t.checkpoint_every == 0):
            checkpoints.save(step)  # the same decision on every task: saves are collective in a cluster
    except distribute.peer_errors() as exc:
        if cluster is None:
            raise
        raise distribute.peer_lost(cluster, step, exc) from exc
    return step, eval_metrics


class ServingModule(tf.Module):
    """SavedModel with one signature: token ids in, sequence/pooled outputs and MLM/sentence logits out."""

    def __init__(self, model: AlbertForPreTraining):
        super().__init__()
        self.model = model

    @tf.function(input_signature=[
        tf.TensorSpec([None, None], tf.int32, name="input_ids"),
        tf.TensorSpec([None, None], tf.int32, name="input_mask"),
        tf.TensorSpec([None, None], tf.int32, name="segment_ids"),
    ])
    def serve(self, input_ids, input_mask, segment_ids):
        batch, length = tf.shape(input_ids)[0], tf.shape(input_ids)[1]
        positions = tf.tile(tf.range(length)[tf.newaxis, :], [batch, 1])
        outputs = self.model({"input_ids": input_ids, "input_mask": input_mask, "segment_ids": segment_ids,
                              "masked_lm_positions": positions}, training=False)
        result = {"sequence_output": tf.cast(outputs["sequence_output"], tf.float32),
                  "pooled_output": tf.cast(outputs["pooled_output"], tf.float32),
                  "mlm_logits": tf.cast(outputs["mlm_logits"], tf.float32)}
        if "sentence_logits" in outputs:
            result["sentence_logits"] = tf.cast(outputs["sentence_logits"], tf.float32)
        return result


def export(model: AlbertForPreTraining, serving_dir: str, albert_dir: str, spm_model_path: Optional[str],
           extra: Dict[str, object]) -> None:
    """Write the serving SavedModel and the raw artifacts fine-tuning and interop need.

    ``albert_dir`` holds ``albert_config.json`` (official key names), the encoder-only checkpoint that
    the benchmark components restore, the full pretraining checkpoint, the SentencePiece model and
    ``export_info.json``.
    """
    module = ServingModule(model)
    tf.saved_model.save(module, serving_dir, signatures={"serving_default": module.serve})
    tf.io.gfile.makedirs(albert_dir)
    model.config.to_json_file(os.path.join(albert_dir, CONFIG_FILE), official=True)
    tf.train.Checkpoint(encoder=model.albert).write(os.path.join(albert_dir, ENCODER_CKPT))
    tf.train.Checkpoint(model=model).write(os.path.join(albert_dir, PRETRAINING_CKPT))
    if spm_model_path:
        tf.io.gfile.copy(spm_model_path, os.path.join(albert_dir, SPM_FILE), overwrite=True)
    with tf.io.gfile.GFile(os.path.join(albert_dir, EXPORT_INFO_FILE), "w") as f:
        f.write(json.dumps(extra, indent=2, sort_keys=True, default=str))


def read_history(log_dir: str) -> List[Dict[str, object]]:
    path = os.path.join(log_dir, HISTORY_FILE)
    if not tf.io.gfile.exists(path):
        return []
    with tf.io.gfile.GFile(path) as f:
        return [json.loads(line) for line in f if line.strip()]
