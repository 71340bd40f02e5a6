"""What a run leaves on disk and finds again on resume: checkpoints, ``train_history.jsonl``, TensorBoard events.

A killed run rerun is the same run (docs/resume.md, "Resume guarantee"). The model, optimizer and running metric sums
come back from the newest complete checkpoint (:class:`Checkpoints`, :func:`newest_checkpoint`); what a killed
attempt logged past that checkpoint is cut from the history and the event files before anything new is written
(:class:`RunLog`), so a resumed run's logs are those of the uninterrupted run. :func:`read_history` is the one
reader of the history file, and it tolerates the torn last line a kill leaves.
"""
from __future__ import annotations

import json
import logging
import os
import time
from typing import Dict, List, Optional, Tuple

import tensorflow as tf
from tensorboard.compat.proto import event_pb2

from trainer.files import HISTORY_FILE
from trainer.formatting import eta_text

log = logging.getLogger(__name__)


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


def _history_records(path: str) -> Tuple[List[Dict[str, object]], int]:
    """The JSON records of a history file in file order, and how many lines were not JSON (blank, or torn by a
    kill mid-write); ([], 0) without the file."""
    if not tf.io.gfile.exists(path):
        return [], 0
    records, unreadable = [], 0
    with tf.io.gfile.GFile(path) as f:
        for line in f:
            try:
                records.append(json.loads(line))
            except ValueError:
                unreadable += 1
    return records, unreadable


def read_history(log_dir: str) -> List[Dict[str, object]]:
    """The records of ``log_dir``'s ``train_history.jsonl`` (``{"step", "split", metric: value}``), [] without one.
    A torn last line (a run killed mid-write) is left out."""
    return _history_records(os.path.join(log_dir, HISTORY_FILE))[0]


def truncate_history(path: str, last_step: int) -> int:
    """Keep only the ``train_history.jsonl`` lines of steps <= ``last_step`` (atomic rewrite); returns lines kept.

    A resumed run restarts at its checkpoint step, so lines a killed attempt wrote past it would otherwise be
    duplicated. A torn last line (killed mid-write) is dropped.
    """
    records, dropped = _history_records(path)
    kept = [json.dumps(record) + "\n" for record in records if int(record["step"]) <= last_step]
    dropped += len(records) - len(kept)
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
