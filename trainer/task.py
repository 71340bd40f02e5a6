"""``run_fn`` for TFX's Trainer (GenericExecutor): ALBERT pretraining from the masked TFRecords.

Referenced by name (``run_fn="trainer.task.run_fn"``) so the same code runs in the local
orchestrators and, installed in the container image, on Vertex AI Training.

``fn_args.custom_config``:
  ``albert``: the pipeline config as JSON (only ``seed``, ``model``, ``train``, ``datagen`` are read);
  ``checkpoint_root``: a folder that outlives one execution; checkpoints go to a sub-folder keyed
  by the config and the input files, so a rerun after a crash or preemption resumes there.
The SentencePiece model travels inside the examples artifact (``<examples>/vocab/spm.model``).
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import posixpath

import tensorflow as tf

from trainer import train_lib
from trainer.modeling_albert import AlbertConfig, count_parameters

log = logging.getLogger(__name__)


def _examples_root(train_files):
    # train_files look like <examples uri>/Split-train/*
    return posixpath.dirname(posixpath.dirname(train_files[0].rstrip("*").rstrip("/") + "/x"))


def albert_config_from(pipeline_cfg: dict, vocab_size: int) -> AlbertConfig:
    model = pipeline_cfg["model"]
    overrides = {k: v for k, v in model.items() if k not in ("size", "dropout") and v is not None}
    if model.get("dropout") is not None:
        overrides["hidden_dropout_prob"] = model["dropout"]
        overrides["attention_probs_dropout_prob"] = model["dropout"]
    return AlbertConfig.named(model["size"], vocab_size=vocab_size, **overrides)


def checkpoint_dir_for(checkpoint_root: str, pipeline_cfg: dict, train_files) -> str:
    """Stable per (model, train, datagen config, seed, input files): a rerun finds its own checkpoints."""
    key = json.dumps({"model": pipeline_cfg["model"], "train": pipeline_cfg["train"],
                      "datagen": pipeline_cfg["datagen"], "seed": pipeline_cfg["seed"],
                      "files": sorted(train_files)}, sort_keys=True)
    return posixpath.join(checkpoint_root, hashlib.sha1(key.encode()).hexdigest()[:16])


def run_pretraining(config_json: str, train_files, eval_files, spm_path: str, serving_dir: str, albert_dir: str,
                    log_dir: str, checkpoint_root: str) -> dict:
    """Train (or resume) and export; shared by ``run_fn`` and ``albert-pipeline pretrain``."""
    from pipeline.configs import PipelineConfig  # light: dataclasses only

    cfg = PipelineConfig.from_json(config_json)
    raw = json.loads(config_json)
    import sentencepiece as spm

    sp = spm.SentencePieceProcessor()
    with tf.io.gfile.GFile(spm_path, "rb") as f:
        sp.load_from_serialized_proto(f.read())
    albert_config = albert_config_from(raw, sp.get_piece_size())
    job = train_lib.PretrainJob(
        albert_config=albert_config,
        train=cfg.train,
        seed=cfg.seed,
        train_files=list(train_files),
        eval_files=list(eval_files or []),
        max_seq_length=cfg.datagen.max_seq_length,
        max_predictions_per_seq=cfg.datagen.max_predictions_per_seq,
        checkpoint_dir=checkpoint_dir_for(checkpoint_root, raw, train_files),
        log_dir=log_dir,
    )
    result = train_lib.pretrain(job)
    info = {
        "eval_metrics": result["eval_metrics"],
        "start_step": result["start_step"],
        "final_step": result["final_step"],
        "precision": result["precision"],
        "num_replicas": result["num_replicas"],
        "parameters": count_parameters(albert_config),
        "checkpoint_dir": job.checkpoint_dir,
        "albert_config": albert_config.to_dict(),
    }
    train_lib.export(result["model"], serving_dir, albert_dir, spm_path, info)
    with tf.io.gfile.GFile(posixpath.join(log_dir, "eval_metrics.json"), "w") as f:
        f.write(json.dumps(info, indent=2, sort_keys=True, default=str))
    log.info("pretraining done: %s", json.dumps(info["eval_metrics"]))
    return info


def run_fn(fn_args) -> None:
    """TFX Trainer entry point (GenericExecutor)."""
    examples_root = _examples_root(fn_args.train_files)
    checkpoint_root = (fn_args.custom_config.get("checkpoint_root")
                       or posixpath.join(fn_args.model_run_dir, "checkpoints"))
    run_pretraining(
        fn_args.custom_config["albert"], fn_args.train_files, fn_args.eval_files,
        spm_path=posixpath.join(examples_root, "vocab", "spm.model"),
        serving_dir=fn_args.serving_model_dir,
        albert_dir=posixpath.join(posixpath.dirname(fn_args.serving_model_dir.rstrip("/")), "albert"),
        log_dir=fn_args.model_run_dir,
        checkpoint_root=checkpoint_root,
    )


def pretrain_from_examples(examples_dir: str, output_dir: str, config) -> dict:
    """``albert-pipeline pretrain``: the Trainer's work on a folder laid out like the Examples artifact.

    Checkpoints live in ``output_dir/checkpoints``; rerunning the same command after a crash resumes.
    """
    suffix = "*"
    return run_pretraining(
        config.to_json(), [posixpath.join(examples_dir, "Split-train", suffix)],
        [posixpath.join(examples_dir, "Split-eval", suffix)],
        spm_path=posixpath.join(examples_dir, "vocab", "spm.model"),
        serving_dir=posixpath.join(output_dir, "model", "Format-Serving"),
        albert_dir=posixpath.join(output_dir, "model", "albert"),
        log_dir=posixpath.join(output_dir, "model_run"),
        checkpoint_root=posixpath.join(output_dir, "checkpoints"),
    )
