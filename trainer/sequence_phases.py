"""BERT's two-phase sequence length: which examples, at which shapes, each step reads.

Off by default (ALBERT trains one phase). With ``train.long_seq_from_step`` = S, steps from S on read the long
examples. Each phase has its own seekable stream, step N at records ``[(N - first) * B, (N - first + 1) * B)`` of
it (:mod:`trainer.input_pipeline`), so the batch of a step is a function of the step alone and a run resumed on
either side of the switch reads what the uninterrupted run read.
"""
from __future__ import annotations

import dataclasses
import logging
from typing import List, Optional, Sequence

import tensorflow as tf

from trainer import input_pipeline
from trainer.pretrain_job import PretrainJob

log = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class SequencePhase:
    """The steps ``[first_step, next phase's first_step)`` read ``files`` at these shapes; step s reads records
    ``[(s - first_step) * B, (s - first_step + 1) * B)`` of their seekable stream."""

    first_step: int
    files: Sequence[str]
    max_seq_length: int
    max_predictions_per_seq: int


def sequence_phases(job: PretrainJob) -> List[SequencePhase]:
    """One phase at ``max_seq_length``; with ``train.long_seq_from_step`` (BERT's two-phase sequence length), a
    second one from that step on the long examples."""
    phases = [SequencePhase(0, tuple(job.train_files), job.max_seq_length, job.max_predictions_per_seq)]
    switch = job.train.long_seq_from_step
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


def open_train_input(job: PretrainJob, strategy: tf.distribute.Strategy, micro_batch: int, counts_cache: str,
                     write_counts: bool) -> PhasedInput:
    """The run's training batches: each phase's stream distributed over ``strategy`` in micro-batches of
    ``micro_batch`` examples, opened at a step's position on first use. Record counts are cached in
    ``counts_cache`` (written by the chief alone)."""
    t = job.train

    def open_iterator(phase: SequencePhase, step: int):
        counts = input_pipeline.record_counts(input_pipeline.expand_files(phase.files), counts_cache,
                                              write=write_counts)

        def dataset_fn(ctx: tf.distribute.InputContext) -> tf.data.Dataset:
            return input_pipeline.make_pretraining_dataset(
                phase.files, ctx.get_per_replica_batch_size(micro_batch), phase.max_seq_length,
                phase.max_predictions_per_seq, seed=job.seed, start=(step - phase.first_step) * t.train_batch_size,
                shuffle_block=t.shuffle_buffer, input_context=ctx, counts=counts)

        return iter(strategy.distribute_datasets_from_function(dataset_fn))

    return PhasedInput(sequence_phases(job), open_iterator)
