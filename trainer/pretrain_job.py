"""The pretraining job: everything one pretraining run needs, built by ``trainer.task.run_fn`` from the pipeline
config and read by :mod:`trainer.train_lib` and its pieces (:mod:`trainer.evaluator`,
:mod:`trainer.sequence_phases`, :mod:`trainer.precision_probe`), which import it from here.
"""
from __future__ import annotations

import dataclasses
from typing import Sequence

from trainer.trainer_config import TrainConfig
from trainer.modeling_albert import AlbertConfig


@dataclasses.dataclass
class PretrainJob:
    """Everything one pretraining run needs (built by ``trainer.task.run_fn`` from the pipeline config)."""

    albert_config: AlbertConfig
    train: TrainConfig
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
    # Continued pretraining (``train.init_from``): the base's albert folder, whose weights a new run starts from.
    # Empty: random initial weights.
    init_checkpoint: str = ""
    # ``train.init_restore=all``: the base run's training checkpoint folder, restored whole (model, optimizer, step,
    # loss window) instead of the weights alone.
    init_state: str = ""
