"""``run_fn`` for TFX's Trainer (GenericExecutor): ALBERT pretraining from the masked TFRecords.

Referenced by name (``run_fn="trainer.task.run_fn"``) so the same code runs in the local
orchestrators and, installed in the container image, on Vertex AI Training.

What the Trainer depends on, and nothing else:
  ``fn_args.custom_config["albert"]``: JSON ``{"model", "train", "seed"}`` (``trainer/trainer_settings.py``;
  ``train`` without ``num_train_steps``, which is ``fn_args.train_steps`` — ``TrainArgs``, a pipeline
  runtime parameter when compiled); the examples artifact, whose ``dataset_info.json`` gives the sequence length,
  predictions per sequence, ``do_lower_case`` and a content fingerprint; and ``vocab/spm.model`` (or ``vocab.txt``)
  inside it (the vocabulary size).

Checkpoints live under ``custom_config["checkpoint_root"]`` (a folder that outlives executions) in
``<run key>/``, the run key being a hash of the run's identity: examples fingerprint, resolved
encoder config, the trajectory-defining ``train`` fields (not the step count or cadences) and the
seed. A rerun of an equivalent Trainer — after a preemption, or after an upstream node re-ran and
wrote the same bytes to a new URI — finds its checkpoints and resumes; a different model, optimizer
or data gets a fresh folder (said in the log). ``run_identity.json`` in the folder is checked, so a
checkpoint of another identity is never loaded silently. Raising ``num_train_steps`` continues the
run: training goes on from the newest checkpoint to the new total, and the learning-rate schedule
is re-evaluated with the new total (warm-up unchanged, the polynomial decay stretched to the new
end), so the learning rate steps up at the resume point to where the longer schedule would be; a warning
names the step and both counts (``schedule.json`` in the folder records the count each stretch of steps was
trained toward). A count below the newest checkpoint's step (or equal to it when that checkpoint was trained toward
a larger count) cannot continue the run and must not return its model: it is a run of its own, with the count in
its identity and so a folder of its own (:func:`run_folder`, said in the log).

BERT's two-phase sequence length (``train.long_seq_from_step`` > 0, off by default): the steps from there on
read the examples' ``Split-train_long`` (length and predictions per sequence from ``dataset_info.json``); the
switch step is part of ``train``'s identity and the long examples of the fingerprint, so either change gives a
new run.
"""
from __future__ import annotations

import hashlib
import json
import logging
import posixpath
import shutil
import tempfile
import time
from typing import Any, Dict, List, Optional, Tuple

import tensorflow as tf

from config.errors import InputError
from config.schema import ConfigError, canonical_json
from trainer.trainer_config import TrainConfig
from trainer.trainer_config import INIT_FROM_SCRATCH
from trainer.trainer_settings import parse_settings, trainer_settings
from trainer import base_model, distribute, examples_info, vocabulary
from trainer.export import export
from trainer.files import RUN_CONFIG_FILE, RUN_IDENTITY_FILE, TRAIN_LONG_SPLIT
from trainer.modeling_albert import AlbertConfig, count_parameters
from trainer.precision import cpu_model
from trainer.pretrain_job import PretrainJob
from trainer.run_state import newest_checkpoint
from trainer.sequence_phases import sequence_phases
from trainer.train_lib import pretrain

log = logging.getLogger(__name__)

IDENTITY_FILE = RUN_IDENTITY_FILE


def _examples_root(train_files):
    # train_files look like <examples uri>/Split-train/*
    return posixpath.dirname(posixpath.dirname(train_files[0].rstrip("*").rstrip("/") + "/x"))


def run_identity(fingerprint: str, albert_config, train: TrainConfig, seed: int) -> Dict[str, Any]:
    return {"examples_fingerprint": fingerprint, "albert_config": albert_config.to_dict(),
            "train": train.identity(), "seed": int(seed)}


def checkpoint_dir_for(checkpoint_root: str, identity: Dict[str, Any]) -> str:
    """``<root>/<16 hex of sha256(identity)>``: the same run finds the same folder from any URI."""
    key = hashlib.sha256(canonical_json(identity).encode()).hexdigest()[:16]
    return posixpath.join(checkpoint_root, key)


def claim_checkpoint_dir(checkpoint_dir: str, identity: Dict[str, Any]) -> bool:
    """Write or check ``run_identity.json``; True when the folder already held this run's checkpoints."""
    path = posixpath.join(checkpoint_dir, IDENTITY_FILE)
    if tf.io.gfile.exists(path):
        with tf.io.gfile.GFile(path) as f:
            found = json.load(f)
        if found != json.loads(canonical_json(identity)):
            changed = sorted(k for k in set(found) | set(identity) if found.get(k) != identity.get(k))
            raise ConfigError(f"{checkpoint_dir} holds checkpoints of another pretraining run (differs in "
                              f"{', '.join(changed)}); refusing to load them. Remove the folder or use another "
                              "checkpoint root.")
        return True
    tf.io.gfile.makedirs(checkpoint_dir)
    with tf.io.gfile.GFile(path, "w") as f:
        f.write(json.dumps(identity, indent=2, sort_keys=True))
    return False


# In a run's checkpoint folder: the step counts its checkpoints were trained toward, as a list of
# {"from_step", "num_train_steps"}, one entry per count, from the step where that count took over.
SCHEDULE_FILE = "schedule.json"


def checkpoint_step(checkpoint_dir: str) -> int:
    """The step of the newest complete checkpoint in ``checkpoint_dir``; 0 without one (or without the folder)."""
    path = newest_checkpoint(checkpoint_dir, tf.train.latest_checkpoint(checkpoint_dir))
    return int(path.rsplit("-", 1)[1]) if path else 0


def read_schedule(checkpoint_dir: str) -> List[Dict[str, int]]:
    """The folder's ``schedule.json`` entries; [] without one (a new folder, or one written before the record)."""
    path = posixpath.join(checkpoint_dir, SCHEDULE_FILE)
    if not tf.io.gfile.exists(path):
        return []
    with tf.io.gfile.GFile(path) as f:
        return json.load(f)


def trained_toward(schedule: List[Dict[str, int]], step: int) -> Optional[int]:
    """The step count the checkpoint at ``step`` was trained toward: that of the last entry that began before
    ``step``; None when the schedule does not cover it."""
    counts = [entry["num_train_steps"] for entry in schedule if entry["from_step"] < step]
    return counts[-1] if counts else None


def run_folder(checkpoint_root: str, identity: Dict[str, Any],
               num_train_steps: int) -> Tuple[str, Dict[str, Any], Optional[Tuple[str, int, Optional[int]]]]:
    """The run's checkpoint folder and identity, and, when the count makes it a run of its own, what it left:
    (the folder of the run it did not continue, that folder's newest step, the count that step was trained toward).

    The identity leaves ``num_train_steps`` out, so raising the count continues the run in its folder. But the
    learning rate decays to 0 at the count, so a count below the newest checkpoint's step (or equal to it when that
    checkpoint was trained toward a larger count) cannot be that run: continuing would return a model trained on
    another schedule. Such a count is a run of its own: its identity holds the count, so its folder is another.
    A run that does not lower the count keeps the identity and folder it always had.
    """
    shared = checkpoint_dir_for(checkpoint_root, identity)
    step = checkpoint_step(shared)
    toward = trained_toward(read_schedule(shared), step)
    if step < num_train_steps or (step == num_train_steps and toward in (None, num_train_steps)):
        return shared, identity, None
    own = {**identity, "train": {**identity["train"], "num_train_steps": num_train_steps}}
    return checkpoint_dir_for(checkpoint_root, own), own, (shared, step, toward)


def continued_checkpoint(checkpoint_dir: str, init_state: str, num_train_steps: int) -> Tuple[str, int]:
    """The folder whose newest checkpoint this execution continues, and that checkpoint's step (0: none).

    The folder's own, or, in a new folder with ``train.init_restore=all``, the base's (``init_state``), whose step
    must not exceed the count: a :class:`ConfigError` otherwise, naming the step and the two ways out. (The
    folder's own checkpoints are never ahead of the count: :func:`run_folder` saw to that.)
    """
    step = checkpoint_step(checkpoint_dir)
    if step or not init_state:
        return checkpoint_dir, step
    step = checkpoint_step(init_state)
    if step > num_train_steps:
        raise ConfigError(f"train.init_restore=all continues the base's run from its checkpoint at step {step} "
                          f"({init_state}), past train.num_train_steps={num_train_steps}: --set "
                          f"train.num_train_steps=N with N >= {step} to continue it, or --set "
                          "train.init_restore=weights for a new run from its weights")
    return init_state, step


def continue_schedule(checkpoint_dir: str, source: str, step: int, num_train_steps: int) -> None:
    """Say when this execution continues checkpoints trained toward another step count (``source``'s at ``step``,
    from :func:`continued_checkpoint`), and record its count in ``checkpoint_dir``'s ``schedule.json``.

    Continuing toward another count keeps the warm-up and ends the linear decay at the new count, so the learning
    rate changes at the resume point: a warning names both counts and that step.
    """
    recorded = read_schedule(source)
    toward = trained_toward(recorded, step)
    if 0 < step < num_train_steps and toward != num_train_steps:
        before = (f"trained toward train.num_train_steps={toward}" if toward is not None else
                  "trained toward a step count its folder does not record (written before schedule.json)")
        log.warning("continuing pretraining run %s from its checkpoint at step %d, %s, to train.num_train_steps=%d: "
                    "the learning-rate schedule changes at step %d (same warm-up, the linear decay now ends at step "
                    "%d)", posixpath.basename(source.rstrip("/")), step, before, num_train_steps, step,
                    num_train_steps)
    # What followed ``step`` was lost with the checkpoints after it (a killed attempt's), as a resume loses it.
    schedule = [entry for entry in recorded if entry["from_step"] < step]
    if not schedule or schedule[-1]["num_train_steps"] != num_train_steps:
        schedule.append({"from_step": step, "num_train_steps": num_train_steps})
    if schedule != read_schedule(checkpoint_dir):
        path = posixpath.join(checkpoint_dir, SCHEDULE_FILE)
        with tf.io.gfile.GFile(path + ".tmp", "w") as f:
            f.write(json.dumps(schedule))
        tf.io.gfile.rename(path + ".tmp", path, overwrite=True)


def long_phase_facts(facts: Dict[str, Any], train: TrainConfig, albert_config, examples_root: str) -> Dict[str, Any]:
    """BERT's two-phase sequence length: the ``PretrainJob`` fields of the long phase ({} when
    ``train.long_seq_from_step`` is 0). The long examples are the ``train_long`` split of the same examples folder;
    a folder without them, or a length the encoder's position embeddings do not cover, is a :class:`ConfigError`."""
    switch = train.long_seq_from_step
    if not switch:
        return {}
    info_path = posixpath.join(examples_root, examples_info.INFO_FILE)
    missing = [k for k in ("long_max_seq_length", "long_max_predictions_per_seq") if not facts.get(k)]
    if missing:
        raise ConfigError(f"config train.long_seq_from_step={switch} is invalid: the examples have no long split "
                          f"({info_path} records no {', '.join(missing)}); make them with "
                          "datagen.long_max_seq_length set")
    length = int(facts["long_max_seq_length"])
    if length > albert_config.max_position_embeddings:
        raise ConfigError(f"config train.long_seq_from_step={switch} is invalid: the long examples' max_seq_length "
                          f"{length} ({info_path}) exceeds the model's max_position_embeddings "
                          f"{albert_config.max_position_embeddings}")
    return {"long_train_files": [posixpath.join(examples_root, f"Split-{TRAIN_LONG_SPLIT}", "*")],
            "long_max_seq_length": length,
            "long_max_predictions_per_seq": int(facts["long_max_predictions_per_seq"])}


def run_pretraining(settings_json: str, train_files, eval_files, examples_root: str, serving_dir: str,
                    albert_dir: str, log_dir: str, checkpoint_root: str,
                    num_train_steps: Optional[int] = None) -> dict:
    """Train (or resume) and export; shared by ``run_fn`` and ``albert-pipeline pretrain``."""
    model, train, seed = parse_settings(settings_json, num_train_steps)
    facts = examples_info.read_info(examples_root)
    missing = [k for k in ("max_seq_length", "max_predictions_per_seq") if k not in facts]
    if missing:
        raise InputError(f"{posixpath.join(examples_root, examples_info.INFO_FILE)}: missing {', '.join(missing)}")
    vocab_dir = posixpath.join(examples_root, "vocab")
    vocab_path = vocabulary.vocabulary_file(vocab_dir)
    albert_config = AlbertConfig(**model.encoder_fields(vocabulary.vocabulary_size(vocab_path)))
    base = None
    if train.init_from != INIT_FROM_SCRATCH:  # continued pretraining: the base's encoder and vocabulary, checked
        base = base_model.describe(train.init_from)
        base_model.check(base, albert_config.to_dict(), base_model.sha256_of(vocab_path))
    long_phase = long_phase_facts(facts, train, albert_config, examples_root)
    identity = run_identity(facts["fingerprint"], albert_config, train, seed)
    init_state = base_model.training_state(base, identity) if base and train.init_restore == "all" else ""
    checkpoint_dir, identity, passed = run_folder(checkpoint_root, identity, train.num_train_steps)
    # In a cluster (train.strategy=multi_worker) every task trains; the chief alone writes what outlives the run.
    chief = distribute.is_chief(distribute.cluster_for(train.strategy))
    if chief and passed:
        other, reached, toward = passed
        log.warning("pretraining run %s is at step %d%s, so train.num_train_steps=%d cannot continue it (its learning "
                    "rate decays to 0 at step %d): a run of its own, in checkpoint folder %s; the other run's "
                    "checkpoints are left as they are", posixpath.basename(other), reached,
                    f" (trained toward {toward})" if toward not in (None, reached) else "", train.num_train_steps,
                    train.num_train_steps, posixpath.basename(checkpoint_dir))
    source, step = continued_checkpoint(checkpoint_dir, init_state, train.num_train_steps)
    if chief:
        resumed = claim_checkpoint_dir(checkpoint_dir, identity)
        log.info("pretraining run %s: %s", posixpath.basename(checkpoint_dir),
                 "resuming from its checkpoints" if resumed else "new run (no checkpoints for this identity)")
        continue_schedule(checkpoint_dir, source, step, train.num_train_steps)
    job = PretrainJob(
        albert_config=albert_config, train=train, seed=seed,
        train_files=list(train_files), eval_files=list(eval_files or []),
        max_seq_length=int(facts["max_seq_length"]), max_predictions_per_seq=int(facts["max_predictions_per_seq"]),
        checkpoint_dir=checkpoint_dir, log_dir=log_dir, init_checkpoint=base["albert_dir"] if base else "",
        init_state=init_state, **long_phase,
    )
    if chief:
        tf.io.gfile.makedirs(log_dir)
        with tf.io.gfile.GFile(posixpath.join(log_dir, RUN_CONFIG_FILE), "w") as f:
            f.write(json.dumps({"model": model.to_dict(), "train": train.to_dict(), "seed": seed, "examples": facts,
                                "checkpoint_dir": checkpoint_dir, "run_key": posixpath.basename(checkpoint_dir)},
                               indent=2, sort_keys=True))
    started = time.monotonic()
    result = pretrain(job)
    info = {
        "hardware": hardware(result["strategy"]),
        "wall_seconds": round(time.monotonic() - started, 1),  # this execution's training (not a resumed run's earlier ones)
        "eval_metrics": result["eval_metrics"],
        "start_step": result["start_step"],
        "final_step": result["final_step"],
        "precision": result["precision"],
        "precision_decision": result["precision_decision"],  # how it was chosen (trainer/precision.py)
        "num_replicas": result["num_replicas"],
        "parameters": count_parameters(albert_config),
        "checkpoint_dir": checkpoint_dir,
        "albert_config": albert_config.to_dict(),
        "do_lower_case": bool(facts.get("do_lower_case", True)),
        "examples_fingerprint": facts["fingerprint"],
    }
    if base is not None:  # lineage: what this model continued from, and the steps behind it in all
        info["init_from"] = {**{k: base[k] for k in ("location", "version", "steps")}, "restored": train.init_restore}
        # Restoring the whole state continues the base's step count; restoring weights starts a new one.
        info["total_steps"] = result["final_step"] if init_state else (base["steps"] or 0) + result["final_step"]
    if long_phase:  # BERT's two-phase sequence length: which length trained which steps
        info["sequence_phases"] = [
            {"from_step": p.first_step, "max_seq_length": p.max_seq_length,
             "max_predictions_per_seq": p.max_predictions_per_seq} for p in sequence_phases(job)]
    if chief:
        export(result["model"], serving_dir, albert_dir, vocabulary.vocabulary_files(vocab_dir), info)
        with tf.io.gfile.GFile(posixpath.join(log_dir, "eval_metrics.json"), "w") as f:
            f.write(json.dumps(info, indent=2, sort_keys=True, default=str))
    else:  # TensorFlow's contract: every task saves (saves may be collective); the others' copies are thrown away
        scratch = tempfile.mkdtemp(prefix="albert-export-")
        try:
            export(result["model"], posixpath.join(scratch, "serving"), posixpath.join(scratch, "albert"), (), info)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    # Workers leave only once the chief's export is written (TFX's executor then finds the model on every task),
    # and no task leaves while another still needs it.
    distribute.leave_together(result["strategy"], distribute.cluster_for(train.strategy), train.peer_timeout_s)
    log.info("pretraining done: %s", json.dumps(info["eval_metrics"]))
    return info


def hardware(strategy: tf.distribute.Strategy) -> str:
    """What trained the model, for the model card: the strategy, its replicas and the device kinds."""
    kinds = sorted({d.device_type for d in tf.config.list_logical_devices()} - {"CPU"})
    devices = ", ".join(f"{len(tf.config.list_logical_devices(k))} {k}" for k in kinds) or f"CPU ({cpu_model()})"
    return f"{type(strategy).__name__.lstrip('_')}, {strategy.num_replicas_in_sync} replica(s), {devices}"


def run_fn(fn_args) -> None:
    """TFX Trainer entry point (GenericExecutor)."""
    examples_root = _examples_root(fn_args.train_files)
    checkpoint_root = (fn_args.custom_config.get("checkpoint_root")
                       or posixpath.join(fn_args.model_run_dir, "checkpoints"))
    run_pretraining(
        fn_args.custom_config["albert"], fn_args.train_files, fn_args.eval_files, examples_root,
        serving_dir=fn_args.serving_model_dir,
        albert_dir=posixpath.join(posixpath.dirname(fn_args.serving_model_dir.rstrip("/")), "albert"),
        log_dir=fn_args.model_run_dir,
        checkpoint_root=checkpoint_root,
        num_train_steps=int(fn_args.train_steps) if fn_args.train_steps else None,
    )


def pretrain_from_examples(examples_dir: str, output_dir: str, config) -> dict:
    """``albert-pipeline pretrain``: the Trainer's work on a folder laid out like the Examples artifact.

    ``config``: anything with ``model``, ``train`` and ``seed`` (the pipeline config). Checkpoints live in
    ``output_dir/checkpoints/<run key>``; rerunning the same command after a crash resumes.
    """
    return run_pretraining(
        trainer_settings(config.model, config.train, config.seed),
        [posixpath.join(examples_dir, "Split-train", "*")], [posixpath.join(examples_dir, "Split-eval", "*")],
        examples_dir,
        serving_dir=posixpath.join(output_dir, "model", "Format-Serving"),
        albert_dir=posixpath.join(output_dir, "model", "albert"),
        log_dir=posixpath.join(output_dir, "model_run"),
        checkpoint_root=posixpath.join(output_dir, "checkpoints"),
        num_train_steps=config.train.num_train_steps,
    )
