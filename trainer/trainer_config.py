"""The Trainer's settings: the model (``model.*``), pretraining (``train.*``) and the Trainer as a Vertex AI
Training job (``vertex_training.*``)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, Optional

from config.encoder import LAYER_NORM_CHOICES, POSITION_INIT_CHOICES, SHARING_CHOICES, encoder_errors, named_fields
from config.schema import ConfigError, Section, check, without_defaults

@dataclass
class ModelConfig(Section):
    """A named ALBERT/BERT size plus overrides; vocab_size always comes from the SentencePiece model."""

    size: str = "albert-base"
    embedding_size: Optional[int] = None
    hidden_size: Optional[int] = None
    num_hidden_layers: Optional[int] = None
    num_attention_heads: Optional[int] = None
    intermediate_size: Optional[int] = None
    # "none" is a strategy (the paper's not-shared ablation), not null: see ``field_choices``.
    sharing: Optional[str] = field(default=None, metadata={"choices": SHARING_CHOICES})
    num_hidden_groups: Optional[int] = None
    inner_group_num: Optional[int] = None
    dropout: Optional[float] = None  # hidden and attention dropout (v1 models: 0.1, v2 release: 0)
    # Named deviations (docs/fidelity.md "Encoder settings beyond the official model"), left out of the section's JSON at
    # their official values, so a model that does not set them keeps its cache key and its checkpoint folder.
    layer_norm_position: str = field(default="post", metadata={"choices": LAYER_NORM_CHOICES})
    position_embedding_init: str = field(default="normal", metadata={"choices": POSITION_INIT_CHOICES})

    def to_dict(self) -> Dict[str, Any]:
        return without_defaults(self, super().to_dict(), ("layer_norm_position", "position_embedding_init"))

    def overrides(self) -> Dict[str, Any]:
        """The AlbertConfig fields this section sets (None = the named size's value)."""
        keys = ("embedding_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
                "sharing", "num_hidden_groups", "inner_group_num", "layer_norm_position",
                "position_embedding_init")
        out = {k: getattr(self, k) for k in keys if getattr(self, k) is not None}
        if self.dropout is not None:
            out["hidden_dropout_prob"] = self.dropout
            out["attention_probs_dropout_prob"] = self.dropout
        return out

    def encoder_fields(self, vocab_size: int = 30000) -> Dict[str, Any]:
        """The encoder's fields: the named size's (``config/encoder.py``), these overrides and ``vocab_size``;
        ``trainer.modeling_albert.AlbertConfig(**fields)`` is the model."""
        return {**named_fields(self.size), **self.overrides(), "vocab_size": vocab_size}

    def validate(self) -> "ModelConfig":
        """Checks the size name and the encoder it gives, so a bad model fails before any node runs."""
        check(self.sharing is None or self.sharing in SHARING_CHOICES, "model.sharing", self.sharing,
              "|".join(SHARING_CHOICES))
        check(self.layer_norm_position in LAYER_NORM_CHOICES,
              "model.layer_norm_position", self.layer_norm_position, "|".join(LAYER_NORM_CHOICES))
        check(self.position_embedding_init in POSITION_INIT_CHOICES,
              "model.position_embedding_init", self.position_embedding_init, "|".join(POSITION_INIT_CHOICES))
        check(self.dropout is None or 0 <= self.dropout < 1, "model.dropout", self.dropout, "in [0, 1)")
        try:
            errors = encoder_errors(self.encoder_fields())
        except ValueError as exc:  # an unknown size name
            errors = [exc.args[0]]
        else:
            errors = ["the model.* settings conflict: " + "; ".join(errors)] if errors else []
        if errors:
            raise ConfigError(f"config model.size={self.size!r} is invalid: {errors[0]}")
        return self


# Fields of ``train`` left out of a pretraining run's identity (checkpoint folder key), so changing them resumes the
# same run. All but ``num_train_steps`` leave the trained weights' trajectory as it is; the step count ends the
# learning-rate decay, so raising it continues the run with the schedule changed at the resume point (said in the
# log), and a count below the run's newest checkpoint is a run of its own (trainer/task.run_folder).
TRAIN_SCHEDULE_ONLY = ("num_train_steps", "checkpoint_every", "eval_every", "eval_steps", "eval_batch_size",
                       "log_every", "strategy", "jit_compile", "cpu_replicas", "steps_per_loop", "peer_timeout_s")
# Optimizer deviations from the official recipe (docs/fidelity.md "Optimizer settings beyond the official recipe"), named as
# ``trainer.optimization.create_optimizer``'s keywords. Left out of the section's JSON while at their official
# defaults, so a Trainer that does not set them keeps its cache key and its checkpoint folder.
OPTIMIZER_OPTIONS = ("bias_correction", "no_decay_lr_multiplier", "end_learning_rate_fraction", "beta_1")
TRAIN_LONG_PHASE_OPTIONS = ("long_seq_from_step",)
# Continued pretraining (docs/model.md "Continue from a model"): off ("scratch") at the default and then left out of
# the section's JSON the same way.
WARM_START_OPTIONS = ("init_from", "init_restore")
INIT_FROM_SCRATCH = "scratch"
INIT_RESTORE_CHOICES = ("weights", "all")


@dataclass
class TrainConfig(Section):
    """Pretraining (TFX ``Trainer`` with ``trainer.task.run_fn``)."""

    train_batch_size: int = 4096
    eval_batch_size: int = 64
    num_train_steps: int = 125_000
    num_warmup_steps: int = 3125
    learning_rate: float = 0.00176
    optimizer: str = "lamb"  # lamb | adamw
    weight_decay: float = 0.01
    clip_norm: float = 1.0
    grad_accum_steps: int = 1  # micro-batches per optimizer step (global batch = train_batch_size)
    # global_batch: losses normalised over the global batch, the summed gradient clipped once (after the cross-replica
    # sum and accumulation; 1 x B equals k x B/k). per_replica: the official per-shard clipping, then averaging.
    gradient_semantics: str = "global_batch"
    sentence_task: str = "sop"  # sop | nsp (the paper's ablation)
    checkpoint_every: int = 5000
    eval_every: int = 10_000
    eval_steps: int = 100
    log_every: int = 100
    shuffle_buffer: int = 10_000
    strategy: str = "auto"  # auto | cpu | mirrored | multi_worker | tpu (trainer/distribute.py)
    cpu_replicas: int = 1  # mirrored on a CPU host: split the CPU into this many replicas (the multi-GPU twin)
    steps_per_loop: int = 1  # optimizer steps per call into the device (TPU: >1 keeps the host out of the loop)
    peer_timeout_s: float = 600.0  # multi_worker: give up (exit 2, naming the address) if peers do not join
    mixed_precision: str = "auto"  # auto | float32 | mixed_bfloat16 (auto: the faster, measured; trainer/precision.py)
    jit_compile: bool = False  # XLA for forward/backward; off: slower on the measured CPU (benchmarks/pretrain_step.py)
    bias_correction: bool = False  # LAMB/AdamW with Adam's m/(1-b1^t), v/(1-b2^t) (official: none)
    no_decay_lr_multiplier: float = 1.0  # lr multiplier of the variables excluded from weight decay (LayerNorm, biases)
    end_learning_rate_fraction: float = 0.0  # the linear decay ends at this fraction of the peak (official: 0)
    beta_1: float = 0.9  # Adam's first-moment decay (official 0.9); higher averages batch-32 gradient noise longer
    # BERT's two-phase sequence length: 0 = one phase (ALBERT). N > 0: steps [N, num_train_steps) read the long
    # examples (``datagen.long_max_seq_length``), step s at records [(s - N) * B, (s - N + 1) * B) of their stream.
    long_seq_from_step: int = 0
    # Where the weights start: "scratch" (random, the default), or a model location: a pushed version folder or a
    # folder `convert tf1-to-albert` / `convert hf-to-albert` wrote, local or gs://. The official
    # --init_checkpoint semantics: the encoder's and pretraining heads' weights restored; the step, the warm-up and
    # decay schedule and the optimizer's moments start fresh (trainer/base_model.py).
    init_from: str = INIT_FROM_SCRATCH
    # What of the base a run restores: "weights" (official) or "all": the base's last training checkpoint, with its
    # optimizer moments, step and loss window, so the run continues the base's run as a resume would (the base must
    # be this project's Trainer output whose training checkpoints are still where its export_info.json says).
    init_restore: str = "weights"

    def to_dict(self) -> Dict[str, Any]:
        """Every field, less the ``OPTIMIZER_OPTIONS``, ``TRAIN_LONG_PHASE_OPTIONS`` and ``WARM_START_OPTIONS`` at
        their defaults."""
        return without_defaults(self, super().to_dict(),
                                 OPTIMIZER_OPTIONS + TRAIN_LONG_PHASE_OPTIONS + WARM_START_OPTIONS)

    def optimizer_options(self) -> Dict[str, Any]:
        """The ``OPTIMIZER_OPTIONS`` as keywords of ``create_optimizer``."""
        return {k: getattr(self, k) for k in OPTIMIZER_OPTIONS}

    def identity(self) -> Dict[str, Any]:
        """The run's identity: the fields that define the optimisation trajectory, the step count aside (see
        ``TRAIN_SCHEDULE_ONLY``)."""
        return {k: v for k, v in self.to_dict().items() if k not in TRAIN_SCHEDULE_ONLY}

    def validate(self) -> "TrainConfig":
        t = self
        check(t.optimizer in ("lamb", "adamw"), "train.optimizer", t.optimizer, "lamb|adamw")
        check(t.sentence_task in ("sop", "nsp"), "train.sentence_task", t.sentence_task, "sop|nsp")
        check(t.gradient_semantics in ("global_batch", "per_replica"), "train.gradient_semantics",
              t.gradient_semantics, "global_batch|per_replica")
        check(t.strategy in ("auto", "cpu", "mirrored", "multi_worker", "tpu"), "train.strategy", t.strategy,
              "auto|cpu|mirrored|multi_worker|tpu")
        check(t.cpu_replicas >= 1, "train.cpu_replicas", t.cpu_replicas, ">= 1")
        check(t.cpu_replicas == 1 or t.strategy == "mirrored", "train.cpu_replicas", t.cpu_replicas,
              "1 unless train.strategy=mirrored")
        check(t.steps_per_loop >= 1, "train.steps_per_loop", t.steps_per_loop, ">= 1")
        check(t.peer_timeout_s > 0, "train.peer_timeout_s", t.peer_timeout_s, "> 0")
        check(t.mixed_precision in ("auto", "float32", "mixed_bfloat16"), "train.mixed_precision",
              t.mixed_precision, "auto|float32|mixed_bfloat16")
        check(t.train_batch_size >= 1, "train.train_batch_size", t.train_batch_size, ">= 1")
        check(t.eval_batch_size >= 1, "train.eval_batch_size", t.eval_batch_size, ">= 1")
        check(t.num_train_steps >= 1, "train.num_train_steps", t.num_train_steps, ">= 1")
        check(0 <= t.num_warmup_steps <= t.num_train_steps, "train.num_warmup_steps", t.num_warmup_steps,
              "in [0, train.num_train_steps]")
        check(t.learning_rate > 0, "train.learning_rate", t.learning_rate, "> 0")
        check(t.weight_decay >= 0, "train.weight_decay", t.weight_decay, ">= 0")
        check(t.clip_norm > 0, "train.clip_norm", t.clip_norm, "> 0")
        check(t.no_decay_lr_multiplier > 0, "train.no_decay_lr_multiplier", t.no_decay_lr_multiplier, "> 0")
        check(0 <= t.beta_1 < 1, "train.beta_1", t.beta_1, "in [0, 1)")
        check(0 <= t.end_learning_rate_fraction <= 1, "train.end_learning_rate_fraction",
              t.end_learning_rate_fraction, "in [0, 1]")
        check(t.grad_accum_steps >= 1 and t.train_batch_size % t.grad_accum_steps == 0, "train.grad_accum_steps",
              t.grad_accum_steps, f">= 1 and dividing train.train_batch_size={t.train_batch_size}")
        for name in ("checkpoint_every", "eval_every"):  # 0: only at the end
            check(getattr(t, name) >= 0, f"train.{name}", getattr(t, name), ">= 0 (0: only at the end)")
        check(t.log_every >= 1, "train.log_every", t.log_every, ">= 1")
        check(t.eval_steps >= 0, "train.eval_steps", t.eval_steps, ">= 0")
        check(t.shuffle_buffer >= 1, "train.shuffle_buffer", t.shuffle_buffer, ">= 1")
        check(t.long_seq_from_step == 0 or 0 < t.long_seq_from_step < t.num_train_steps, "train.long_seq_from_step",
              t.long_seq_from_step, f"0 (one phase) or a step in (0, train.num_train_steps={t.num_train_steps})")
        check(isinstance(t.init_from, str) and t.init_from.strip() != "", "train.init_from", t.init_from,
              f"{INIT_FROM_SCRATCH} or a model folder (a pushed version, or what `convert` wrote)")
        check(t.init_restore in INIT_RESTORE_CHOICES, "train.init_restore", t.init_restore,
              "|".join(INIT_RESTORE_CHOICES))
        check(t.init_restore == "weights" or t.init_from != INIT_FROM_SCRATCH, "train.init_restore", t.init_restore,
              f"weights unless train.init_from names a model (it is {INIT_FROM_SCRATCH})")
        return self


# Vertex AI CustomJob machine shapes (https://cloud.google.com/vertex-ai/docs/training/configure-compute):
# TPU v2/v3 are requested as machine type ``cloud-tpu`` + accelerator TPU_V2/TPU_V3 x 8 (one host, 8 cores);
# TPU v4/v5e as a ``ct4p-*``/``ct5lp-*`` machine type with a slice ``tpu_topology`` (e.g. 2x2x1, 4x4).
TPU_ACCELERATORS = ("TPU_V2", "TPU_V3", "TPU_V4_POD", "TPU_V5_LITEPOD")
TPU_MACHINE_PREFIXES = ("cloud-tpu", "ct4p-", "ct5lp-", "ct5p-", "ct6e-")


@dataclass
class VertexTrainingConfig(Section):
    """Run the Trainer's ``run_fn`` as a Vertex AI Training CustomJob (``google_cloud_ai_platform.Trainer``).

    Off by default (the Trainer then runs where the orchestrator runs it). Enabled, the job runs the
    pipeline's container image (or ``image``) with one worker pool built from these fields by
    :func:`trainer.trainer_component.worker_pool_specs`: a TPU (``machine_type`` ``cloud-tpu`` with
    ``accelerator_type`` TPU_V2/TPU_V3 and ``accelerator_count`` 8, or a ``ct4p-``/``ct5lp-`` machine
    with ``tpu_topology``) or a GPU machine (``accelerator_type`` NVIDIA_*, ``accelerator_count`` GPUs).
    """

    enabled: bool = False
    project: Optional[str] = None  # GCP project of the CustomJob (required when enabled)
    region: str = "us-central1"
    machine_type: str = "n1-standard-8"
    accelerator_type: Optional[str] = None  # TPU_V3 | TPU_V4_POD | TPU_V5_LITEPOD | NVIDIA_TESLA_V100 | ...; None: CPU
    accelerator_count: int = 0  # TPU_V2/V3: 8 (cores of one host); GPUs per replica; 0 with tpu_topology
    tpu_topology: Optional[str] = None  # TPU v4/v5e slice shape, e.g. "2x2x1" (v4) or "2x2", "4x4" (v5e)
    replica_count: int = 1  # machines: 1 chief (pool 0) + replica_count - 1 workers (pool 1); >1: multi_worker
    image: Optional[str] = None  # None: the pipeline's container image
    service_account: Optional[str] = None
    boot_disk_size_gb: int = 100

    def is_tpu(self) -> bool:
        return (self.accelerator_type or "").upper() in TPU_ACCELERATORS or \
            self.machine_type.startswith(TPU_MACHINE_PREFIXES)

    def validate(self) -> "VertexTrainingConfig":
        if not self.enabled:
            return self
        check(bool(self.project), "vertex_training.project", self.project, "a GCP project id when enabled")
        check(bool(self.region), "vertex_training.region", self.region, "a Vertex AI region, e.g. us-central1")
        check(bool(self.machine_type), "vertex_training.machine_type", self.machine_type, "a machine type")
        check(self.replica_count >= 1, "vertex_training.replica_count", self.replica_count, ">= 1")
        check(self.replica_count == 1 or not self.is_tpu(), "vertex_training.replica_count", self.replica_count,
              "1 with a TPU machine (a slice's hosts come with vertex_training.tpu_topology)")
        check(self.boot_disk_size_gb >= 10, "vertex_training.boot_disk_size_gb", self.boot_disk_size_gb, ">= 10")
        check(self.accelerator_count >= 0, "vertex_training.accelerator_count", self.accelerator_count, ">= 0")
        acc = (self.accelerator_type or "").upper()
        if self.tpu_topology is not None:
            check(all(p.isdigit() and int(p) > 0 for p in self.tpu_topology.split("x")) and "x" in self.tpu_topology,
                  "vertex_training.tpu_topology", self.tpu_topology, "chips per dimension like 2x2 or 2x2x1")
        if self.machine_type == "cloud-tpu":
            check(acc in ("TPU_V2", "TPU_V3"), "vertex_training.accelerator_type", self.accelerator_type,
                  "TPU_V2 or TPU_V3 with vertex_training.machine_type=cloud-tpu")
            check(self.accelerator_count == 8, "vertex_training.accelerator_count", self.accelerator_count,
                  "8 (the cores of one TPU v2/v3 host) with vertex_training.machine_type=cloud-tpu")
            check(self.tpu_topology is None, "vertex_training.tpu_topology", self.tpu_topology,
                  "unset with vertex_training.machine_type=cloud-tpu (v2/v3 are sized by vertex_training.accelerator_count)")
        elif self.machine_type.startswith(TPU_MACHINE_PREFIXES):
            check(bool(self.tpu_topology), "vertex_training.tpu_topology", self.tpu_topology,
                  f"a slice shape (e.g. 2x2) with the TPU vertex_training.machine_type={self.machine_type}")
            check(acc in ("", "TPU_V4_POD", "TPU_V5_LITEPOD", "TPU_V5P", "TPU_V6E"), "vertex_training.accelerator_type",
                  self.accelerator_type, "unset or the TPU type of the machine (TPU_V4_POD, TPU_V5_LITEPOD)")
        else:
            check(not acc.startswith("TPU"), "vertex_training.accelerator_type", self.accelerator_type,
                  "TPU types only with a TPU vertex_training.machine_type (cloud-tpu, ct4p-*, ct5lp-*)")
            check(self.tpu_topology is None, "vertex_training.tpu_topology", self.tpu_topology,
                  "unset for a non-TPU vertex_training.machine_type")
            if acc:
                check(self.accelerator_count >= 1, "vertex_training.accelerator_count", self.accelerator_count,
                      f">= 1 with vertex_training.accelerator_type={self.accelerator_type}")
            else:
                check(self.accelerator_count == 0, "vertex_training.accelerator_count", self.accelerator_count,
                      "0 without vertex_training.accelerator_type")
        return self
