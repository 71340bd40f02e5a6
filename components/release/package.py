"""What one pushed version holds, built on this machine before :func:`components.release.versions.publish` moves
it: the files, the model card's facts (read from the run's own files and MLMD properties) and the version record.

Layout of a version folder (``<destination>/<N>/``)::

    saved_model.pb, variables/, assets/   the model's serving SavedModel, whole (TF Serving and Vertex AI load
                                          the version folder itself); none for an encoder-only model that a
                                          benchmark-only run imported
    checkpoint/                           the Trainer's albert folder: TF2 checkpoints, albert_config.json
                                          (official keys), the vocabulary, export_info.json
    huggingface/                          config.json, model.safetensors, spiece.model (or a WordPiece vocab.txt),
                                          tokenizer_config.json and the card as README.md (transformers'
                                          AlbertModel.from_pretrained)
    vocab/                                the vocabulary: spm.model, or a WordPiece vocab.txt and its
                                          tokenizer.json (trainer/vocabulary.py)
    preprocess/, encoder/                 TF Hub's pair: raw strings → input_word_ids/input_mask/input_type_ids
                                          (tokenized in the graph with TF Text), and the encoder under TF Hub's
                                          names (components.release.raw_text)
    text_model/                           raw text → embed (pooled_output) and fill_mask (top-k tokens per mask)
    model_card.md                         the card (components.release.model_card)
    model_card.json                       the card's facts, as the card shows them (for machines)
    release.json                          the record: version, model, blessing, scores, files with sha256 (last)
    registry.json                         with vertex_model only: the Model Registry's answer, after the upload
"""
from __future__ import annotations

import hashlib
import json
import posixpath
from typing import Any, Dict, Mapping, Optional

import tensorflow as tf

from components.evaluation.benchmark_config import CLUE_TASKS
from components.file_io import copy_tree, json_safe
from components.release import model_card, raw_text
from components.release.blessing import task_scores
from components.evaluation.metrics import GLUE_METRICS
from trainer.convert import albert_to_hf
from trainer.files import ALBERT_DIR, EXPORT_INFO_FILE, MODEL_SOURCE_FILE, RUN_CONFIG_FILE, VERSION_ALBERT_DIR
from trainer.vocabulary import vocabulary_files

__all__ = ["SERVING_DIR", "read_json", "card_facts", "build", "write_card", "file_digests", "run_config", "export_info",
           "serving_seq_length",
           "model_source"]

SERVING_DIR = "Format-Serving"  # where TFX's Trainer keeps the serving SavedModel inside the model artifact
CHECKPOINT_DIR = VERSION_ALBERT_DIR
HF_DIR = "huggingface"
VOCAB_DIR = "vocab"


def read_json(path: str) -> Dict[str, Any]:
    with tf.io.gfile.GFile(path) as f:
        return json.loads(f.read())


def _score_metric(task: str) -> str:
    """Which metrics make a task's score (the report's headline rule)."""
    if task in GLUE_METRICS:
        return " + ".join(GLUE_METRICS[task]["headline"]) + (" (mean)" if len(GLUE_METRICS[task]["headline"]) > 1
                                                              else "")
    if task in ("SQuAD1.1", "SQuAD2.0"):
        return "f1 + exact_match (mean)"
    if task == "CMRC2018":
        return "CMRC2018's character-level f1 + exact_match (mean)"
    if task in CLUE_TASKS or task in ("RACE", "C3"):
        return "accuracy"
    return f"the mean of benchmarks.tasks.{task}.metrics"  # a task by spec


def card_facts(*, name: str, license: str, version: int, results: Mapping[str, Any], export_info: Mapping[str, Any],
               run_config: Mapping[str, Any], decision: Mapping[str, Any], documents: Mapping[str, int],
               artifacts: Mapping[str, Mapping[str, Any]], arm: str, hf_note: Optional[str],
               source: Optional[Mapping[str, Any]] = None, language: Any = "en") -> Dict[str, Any]:
    """The facts the card shows, every one read from the inputs (nothing typed by hand). ``source``: a
    benchmark-only run's ``model_source.json`` (:func:`model_source`), None for a model this pipeline pretrained.
    ``language``: the run's ``language`` (an ISO 639-1 code, or the list of a run of several languages), which the
    Pusher receives with its settings."""
    summary = results.get("summary") or {}
    datagen = summary.get("datagen") or {}
    examples = run_config.get("examples") or {}
    train = run_config.get("train") or {}
    scores = task_scores(results)
    gains = {task: c.get("gain_median") for task, c in ((summary.get("baselines") or {}).get(arm) or {}).items()}
    protocols = [(b, r.get("protocol") or {}) for b, r in sorted((results.get("results") or {}).items())]
    protocol = "; ".join(f"{b}: seeds {', '.join(str(s) for s in p.get('seeds', []))}, {p.get('aggregation')}, "
                         f"checkpoint {p.get('checkpoint_selection_effective')}" for b, p in protocols if p)
    sources = {key[:-len("_documents")]: int(v) for key, v in documents.items()
               if key.endswith("_documents") and not key.startswith("num_")
               and key[:-len("_documents")] in ("wikipedia", "books")}
    pretraining = (
        "Not pretrained by this pipeline, which only benchmarked it (its source is under Model): its pretraining "
        "data and training are not described here." if source else
        f"Pretrained for {export_info.get('final_step')} steps of batch {train.get('train_batch_size')} on "
        f"{datagen.get('train', {}).get('tokens')} training tokens; the paper's ALBERT-base: 125,000 steps of "
        "batch 4,096 at 512 tokens on 16 GB of text.")
    limitations = [
        pretraining,
        "Scores are dev-set scores of this pipeline's fine-tuning protocol (above), not test-set or leaderboard "
        "scores.",
    ]
    missing = summary.get("missing_columns") or []
    if missing:
        limitations.append(f"Table-2 columns this run did not produce: {', '.join(missing)}.")
    if examples.get("do_lower_case", True):
        limitations.append("The tokenizer lower-cases its input (do_lower_case).")
    if hf_note:
        limitations.append(hf_note)
    if source and not source.get("serving_model"):
        limitations.append("No serving SavedModel: the model holds only the encoder (no pretraining heads), so this "
                           "version has no saved_model.pb.")
    return {
        "name": name, "pipeline": name, "license": license, "version": version, "language": language,
        "source": dict(source) if source else None,
        "parameters": int((export_info.get("parameters") or {}).get("total", 0)),
        "albert_config": dict(sorted((export_info.get("albert_config") or {}).items())),
        "corpus": {
            "sources": sources, "documents": documents.get("num_documents"),
            "sentences": documents.get("num_sentences"), "characters": documents.get("num_chars"),
            "tokens": {split: s.get("tokens") for split, s in datagen.items()},
            "instances": {split: s.get("instances") for split, s in datagen.items()},
            "fingerprint": export_info.get("examples_fingerprint"),
            "datagen": {k: examples.get(k) for k in ("max_seq_length", "max_predictions_per_seq", "sop_mode",
                                                      "vocab_size", "do_lower_case") if k in examples},
        },
        "training": {
            "steps": export_info.get("final_step"), "batch_size": train.get("train_batch_size"),
            "optimizer": train.get("optimizer"), "learning_rate": train.get("learning_rate"),
            "precision": export_info.get("precision"), "hardware": export_info.get("hardware"),
            "wall_seconds": export_info.get("wall_seconds"), "eval": export_info.get("eval_metrics") or {},
            # Continued pretraining (train.init_from): the base and the steps behind this model in all.
            "continued_from": export_info.get("init_from"),
            "total_steps": export_info.get("total_steps", export_info.get("final_step")),
        },
        "benchmarks": {"scores": scores, "metrics": {t: _score_metric(t) for t in scores}, "gains": gains,
                       "arm": arm, "protocol": protocol or "none recorded"},
        "blessing": dict(decision),
        # What the run read of each raw-data location (spans, folder, fingerprint): the report's "Data read".
        "data_read": dict(((results or {}).get("summary") or {}).get("data_read") or {}),
        # A run of several languages: datagen's per_language block, the report's "Languages" table (absent: one
        # language, or a report written before the report kept it).
        **({"languages": summary["languages"]} if summary.get("languages") else {}),
        # The data gate's verdict on the span and the benchmarks' contamination: the report's "Data gate" (None: the
        # run had no gate; absent: a report written before the report kept it).
        **({"data_gate": summary["data_gate"]} if "data_gate" in summary else {}),
        "artifacts": {k: dict(v) for k, v in artifacts.items()},
        "limitations": limitations,
    }


def serving_seq_length(export_info: Mapping[str, Any], run_config: Mapping[str, Any]) -> Optional[int]:
    """The sequence length the model was pretrained at last (the long phase's, with two phases), or None for a
    model without a pretraining run here (an imported one)."""
    phases = export_info.get("sequence_phases") or []
    if phases:
        return int(phases[-1]["max_seq_length"])
    length = (run_config.get("examples") or {}).get("max_seq_length")
    return int(length) if length else None


def build(model_uri: str, export_info: Mapping[str, Any], out: str, seq_length: Optional[int] = None,
          raw_text_serving: bool = True) -> Optional[str]:
    """Fill the local folder ``out`` with the model's files (all but the card and the record); ``export_info`` is
    the model's ``export_info.json``; ``seq_length``: the raw-text models' length (:func:`serving_seq_length`;
    None: TF Hub's 128); ``raw_text_serving`` (``release.raw_text_serving``): write the raw-text folders
    (:mod:`components.release.raw_text`). Returns why the Hugging Face folder is missing (a sharing layout
    transformers cannot express), or None."""
    albert = posixpath.join(model_uri, ALBERT_DIR)
    if tf.io.gfile.isdir(posixpath.join(model_uri, SERVING_DIR)):  # an imported encoder-only model has none
        copy_tree(posixpath.join(model_uri, SERVING_DIR), out)
    else:
        tf.io.gfile.makedirs(out)
    copy_tree(albert, posixpath.join(out, CHECKPOINT_DIR))
    tf.io.gfile.makedirs(posixpath.join(out, VOCAB_DIR))
    for path in vocabulary_files(albert):
        tf.io.gfile.copy(path, posixpath.join(out, VOCAB_DIR, posixpath.basename(path)), overwrite=True)
    if raw_text_serving:
        raw_text.build(albert, out, seq_length, do_lower_case=bool(export_info.get("do_lower_case", True)))
    sharing = (export_info.get("albert_config") or {}).get("sharing")
    if sharing not in ("all", "groups", "none"):
        return (f"No Hugging Face folder: sharing={sharing!r} has no transformers layout (whole-layer groups "
                "only).")
    albert_to_hf(albert, posixpath.join(out, HF_DIR))
    return None


def write_card(out: str, facts: Mapping[str, Any]) -> str:
    """The card (``model_card.md``, and the Hugging Face folder's ``README.md``) and its facts
    (``model_card.json``) in ``out``; returns the card's text."""
    text = model_card.render(facts)
    with tf.io.gfile.GFile(posixpath.join(out, model_card.FACTS_FILE), "w") as f:
        f.write(json.dumps(json_safe(dict(facts)), indent=2, sort_keys=True))
    for path in (posixpath.join(out, model_card.MODEL_CARD),) + (
            (posixpath.join(out, HF_DIR, "README.md"),) if tf.io.gfile.isdir(posixpath.join(out, HF_DIR)) else ()):
        with tf.io.gfile.GFile(path, "w") as f:
            f.write(text)
    return text


def file_digests(folder: str) -> Dict[str, Dict[str, Any]]:
    """{relative path: {bytes, sha256}} of every file under ``folder``: what the record says was pushed."""
    out: Dict[str, Dict[str, Any]] = {}
    for dirpath, _, names in tf.io.gfile.walk(folder):
        for name in names:
            path = posixpath.join(dirpath, name)
            with tf.io.gfile.GFile(path, "rb") as f:
                data = f.read()
            out[posixpath.relpath(path, folder)] = {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    return dict(sorted(out.items()))


def export_info(model_uri: str) -> Dict[str, Any]:
    return read_json(posixpath.join(model_uri, ALBERT_DIR, EXPORT_INFO_FILE))


def model_key(export_info: Dict[str, Any]) -> Optional[str]:
    """What makes two model artifacts the same model: the pretraining run (its checkpoint folder's key, a hash of
    the run's identity: trainer/task.py) at its final step, ``"<run key>@<step>"``; a resumed run is the same run,
    so two executions of it export the same weights. None for a model without one (``ModelImport``'s)."""
    folder = export_info.get("checkpoint_dir")
    if not folder or export_info.get("final_step") is None:
        return None
    return f"{posixpath.basename(folder.rstrip('/'))}@{int(export_info['final_step'])}"


def model_source(model_uri: str) -> Optional[Dict[str, Any]]:
    """Where a benchmark-only run's model came from (``model_source.json``, written by ``ModelImport``); None for a
    model this pipeline's Trainer made."""
    path = posixpath.join(model_uri, MODEL_SOURCE_FILE)
    return read_json(path) if tf.io.gfile.exists(path) else None


def run_config(model_run_uri: str) -> Dict[str, Any]:
    return read_json(posixpath.join(model_run_uri, RUN_CONFIG_FILE))
