"""The pretraining loop: strategy, mixed precision, accumulation, clipping, checkpoints, TensorBoard.

A custom loop rather than ``model.fit`` because the recipe needs gradient accumulation (to reach a
4096 batch on small hardware), global-norm clipping of the accumulated gradient, and a step counter
that survives preemption: training always runs to exactly ``num_train_steps`` optimizer steps,
resuming from the latest checkpoint in ``checkpoint_dir`` if one exists.
"""
from __future__ import annotations

import dataclasses
import json
import logging
import os
import time
from typing import Dict, List, Optional, Sequence

import tensorflow as tf
import tf_keras

from trainer import input_pipeline
from trainer.modeling_albert import AlbertConfig, AlbertForPreTraining, pretraining_losses
from trainer.optimization import GradientAccumulator, clip_gradients, create_optimizer

log = logging.getLogger(__name__)

METRIC_NAMES = ("loss", "mlm_loss", "sentence_loss", "mlm_accuracy", "sentence_accuracy")
HISTORY_FILE = "train_history.jsonl"


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


def make_strategy(name: str) -> tf.distribute.Strategy:
    """``auto``: TPU if a TPU cluster is configured, else Mirrored over >1 GPU, else the default strategy."""
    if name == "tpu" or (name == "auto" and (os.environ.get("TPU_NAME") or os.environ.get("CLOUD_TPU_TASK_ID")
                                             or os.path.exists("/dev/accel0") or os.path.exists("/dev/vfio/0"))):
        resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=os.environ.get("TPU_NAME", "local"))
        tf.config.experimental_connect_to_cluster(resolver)
        tf.tpu.experimental.initialize_tpu_system(resolver)
        return tf.distribute.TPUStrategy(resolver)
    if name == "multi_worker":
        return tf.distribute.MultiWorkerMirroredStrategy()
    gpus = tf.config.list_logical_devices("GPU")
    if name == "mirrored" or (name == "auto" and len(gpus) > 1):
        return tf.distribute.MirroredStrategy()
    return tf.distribute.get_strategy()


def _on_accelerator(strategy: tf.distribute.Strategy) -> bool:
    return isinstance(strategy, tf.distribute.TPUStrategy) or bool(tf.config.list_logical_devices("GPU"))


def cpu_has_bf16() -> bool:
    """Whether this host's CPU has bf16 dot-product instructions (``avx512_bf16`` or AMX ``amx_bf16``)."""
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((line.split(":", 1)[1].split() for line in f if line.startswith("flags")), [])
    except OSError:
        return False
    return "avx512_bf16" in flags or "amx_bf16" in flags


def resolve_precision(name: str, strategy: tf.distribute.Strategy) -> str:
    """``auto``: mixed_bfloat16 on TPU/GPU and on CPUs with AVX512-BF16/AMX, else float32.

    Measured with ``benchmarks/pretrain_step.py`` (albert-base, seq 128, batch 8, one LAMB step incl. clipping;
    2-core AMD EPYC with avx512_bf16, no AMX; TF oneDNN; a shared, loaded host, so absolute numbers are noisy):
    float32 0.070 steps/s (14.4 s/step) vs mixed_bfloat16 0.218 steps/s (4.6 s/step) — bf16 ~3x faster, so
    ``auto`` uses it where the CPU has bf16 instructions. The sample preset pins float32 (tests compare numbers).
    """
    if name != "auto":
        return name
    return "mixed_bfloat16" if _on_accelerator(strategy) or cpu_has_bf16() else "float32"


def resolve_jit_compile(flag: Optional[bool], strategy: tf.distribute.Strategy) -> bool:
    """``train.jit_compile``: XLA for the forward/backward pass. TPUStrategy always compiles with XLA.

    Measured on the same CPU (float32): jit_compile off 0.070 steps/s vs on 0.049 steps/s (first step 49 s vs
    44 s), so ``train.jit_compile`` defaults to off; on GPUs it may pay (set ``train.jit_compile=true``).
    """
    if isinstance(strategy, tf.distribute.TPUStrategy):
        return False  # TPUStrategy compiles the whole replica step already
    return bool(flag)


class _MeanBank:
    """Running means of the loss/accuracy scalars, reset at each log point."""

    def __init__(self, prefix: str):
        self.metrics = {n: tf_keras.metrics.Mean(f"{prefix}_{n}") for n in METRIC_NAMES}

    def update(self, values: Dict[str, tf.Tensor]) -> None:
        for name, metric in self.metrics.items():
            metric.update_state(values[name])

    def result(self) -> Dict[str, float]:
        return {n: float(m.result()) for n, m in self.metrics.items()}

    def reset(self) -> None:
        for m in self.metrics.values():
            m.reset_state()


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


def pretrain(job: PretrainJob) -> Dict[str, object]:
    """Train to exactly ``job.train.num_train_steps`` steps; returns final eval metrics and run facts."""
    t = job.train
    strategy = make_strategy(t.strategy)
    precision = resolve_precision(t.mixed_precision, strategy)
    tf_keras.mixed_precision.set_global_policy(precision)
    # Seeds Python's random, NumPy and TF: tf_keras initializers built without a seed draw theirs from Python's
    # random module, so tf.random.set_seed alone left the initial weights different on every run.
    tf_keras.utils.set_random_seed(job.seed)
    num_replicas = strategy.num_replicas_in_sync
    micro_batch = t.train_batch_size // t.grad_accum_steps
    if micro_batch % num_replicas:
        raise ValueError(f"micro-batch {micro_batch} (train_batch_size / grad_accum_steps) must divide evenly over "
                         f"{num_replicas} replicas")

    with strategy.scope():
        model = build_pretraining_model(job.albert_config, t.sentence_task, job.max_seq_length,
                                        job.max_predictions_per_seq)
        optimizer = create_optimizer(t.optimizer, t.learning_rate, t.num_warmup_steps, t.num_train_steps,
                                     weight_decay=t.weight_decay)
        optimizer.build(model.trainable_variables)
        accumulator = GradientAccumulator(model.trainable_variables) if t.grad_accum_steps > 1 else None
        train_means, eval_means = _MeanBank("train"), _MeanBank("eval")
        checkpoint = tf.train.Checkpoint(model=model, optimizer=optimizer)
    manager = tf.train.CheckpointManager(checkpoint, job.checkpoint_dir, max_to_keep=3)
    resume_from = newest_checkpoint(job.checkpoint_dir, manager.latest_checkpoint)
    if resume_from:
        checkpoint.restore(resume_from).assert_existing_objects_matched()
        log.info("resumed from %s at step %d", resume_from, int(optimizer.iterations))
    start_step = int(optimizer.iterations)

    def dataset_fn(ctx: tf.distribute.InputContext) -> tf.data.Dataset:
        per_replica = ctx.get_per_replica_batch_size(micro_batch)
        return input_pipeline.make_dataset(job.train_files, per_replica, job.max_seq_length,
                                           job.max_predictions_per_seq, training=True,
                                           seed=job.seed + start_step, shuffle_buffer=t.shuffle_buffer,
                                           input_context=ctx)

    train_iter = iter(strategy.distribute_datasets_from_function(dataset_fn))
    variables = model.trainable_variables

    def forward(inputs, labels, training):
        outputs = model(inputs, training=training)
        return pretraining_losses(outputs, labels["masked_lm_ids"], labels["masked_lm_weights"],
                                  labels["next_sentence_labels"])

    def losses_and_grads(inputs, labels):
        with tf.GradientTape() as tape:
            losses = forward(inputs, labels, True)
            loss = losses["loss"] / num_replicas
        return losses, tape.gradient(loss, variables)

    jit = resolve_jit_compile(t.jit_compile, strategy)
    if jit:  # XLA-compile the forward/backward pass (the iterator and the metric updates stay outside)
        losses_and_grads = tf.function(losses_and_grads, jit_compile=True)

    def micro_step(inputs, labels):
        losses, grads = losses_and_grads(inputs, labels)
        train_means.update(losses)
        if accumulator is None:
            grads, _ = clip_gradients(grads, t.clip_norm)
            optimizer.apply_gradients(zip(grads, variables))
        else:
            accumulator.accumulate(grads)

    def apply_accumulated():
        grads, _ = clip_gradients(accumulator.gradients(), t.clip_norm)
        optimizer.apply_gradients(zip(grads, variables))
        accumulator.reset()

    @tf.function(jit_compile=None)
    def train_step(iterator):
        for _ in range(t.grad_accum_steps):  # unrolled: grad_accum_steps is a small static number
            inputs, labels = next(iterator)
            strategy.run(micro_step, args=(inputs, labels))
        if accumulator is not None:
            strategy.run(apply_accumulated)

    @tf.function
    def eval_step(inputs, labels):
        strategy.run(lambda i, l: eval_means.update(forward(i, l, False)), args=(inputs, labels))

    def evaluate() -> Dict[str, float]:
        if not job.eval_files or not input_pipeline.expand_files(job.eval_files):
            return {}
        eval_means.reset()
        ds = input_pipeline.make_dataset(job.eval_files, t.eval_batch_size, job.max_seq_length,
                                         job.max_predictions_per_seq, training=False, seed=job.seed)
        for batch_index, (inputs, labels) in enumerate(strategy.experimental_distribute_dataset(ds)):
            if batch_index >= t.eval_steps:
                break
            eval_step(inputs, labels)
        return eval_means.result()

    os.makedirs(job.log_dir, exist_ok=True) if "://" not in job.log_dir else None
    writer = tf.summary.create_file_writer(os.path.join(job.log_dir, "train"))
    eval_writer = tf.summary.create_file_writer(os.path.join(job.log_dir, "eval"))
    history_path = os.path.join(job.log_dir, HISTORY_FILE)
    step = start_step
    last_time, last_step = time.time(), step
    eval_metrics: Dict[str, float] = {}
    with tf.io.gfile.GFile(history_path, "a") as history:
        while step < t.num_train_steps:
            train_step(train_iter)
            step += 1
            if t.checkpoint_every and step % t.checkpoint_every == 0:
                manager.save(checkpoint_number=step)
            if step % t.log_every == 0 or step == t.num_train_steps:
                now = time.time()
                values = train_means.result()
                values["learning_rate"] = float(optimizer.learning_rate(step)) if callable(
                    optimizer.learning_rate) else float(optimizer.learning_rate)
                values["sequences_per_sec"] = (step - last_step) * t.train_batch_size / max(now - last_time, 1e-9)
                last_time, last_step = now, step
                train_means.reset()
                with writer.as_default(step=step):
                    for name, value in values.items():
                        tf.summary.scalar(name, value)
                history.write(json.dumps({"step": step, "split": "train", **values}) + "\n")
                history.flush()
                log.info("step %d %s", step, values)
            if (t.eval_every and step % t.eval_every == 0) or step == t.num_train_steps:
                eval_metrics = evaluate()
                if eval_metrics:
                    with eval_writer.as_default(step=step):
                        for name, value in eval_metrics.items():
                            tf.summary.scalar(name, value)
                    history.write(json.dumps({"step": step, "split": "eval", **eval_metrics}) + "\n")
                    history.flush()
                    last_time = time.time()  # keep eval time out of the throughput figure
        if step == start_step:
            eval_metrics = evaluate()
    if manager.latest_checkpoint is None or not manager.latest_checkpoint.endswith(f"-{step}"):
        manager.save(checkpoint_number=step)
    writer.flush()
    eval_writer.flush()
    return {"model": model, "eval_metrics": eval_metrics, "start_step": start_step, "final_step": step,
            "precision": precision, "num_replicas": num_replicas}


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


ENCODER_CKPT = "encoder/ckpt"
PRETRAINING_CKPT = "pretraining/ckpt"
CONFIG_FILE = "albert_config.json"
SPM_FILE = "spm.model"


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
    with tf.io.gfile.GFile(os.path.join(albert_dir, "export_info.json"), "w") as f:
        f.write(json.dumps(extra, indent=2, sort_keys=True, default=str))


def read_history(log_dir: str) -> List[Dict[str, object]]:
    path = os.path.join(log_dir, HISTORY_FILE)
    if not tf.io.gfile.exists(path):
        return []
    with tf.io.gfile.GFile(path) as f:
        return [json.loads(line) for line in f if line.strip()]
