"""The model card of a pushed version: Hugging Face's form (a YAML header, then Markdown). Pure: facts in, text out.

The facts are gathered by :func:`components.release.package.card_facts` from MLMD properties and the run's own files
(the report's ``results.json``, the export's ``export_info.json``, the Trainer's ``run_config.json``, the blessing);
nothing here is typed by hand. The header's ``model-index`` carries every task score at full precision, the table
the same numbers rounded to two decimals, so a reader and a test can both check them against ``results.json``.
"""
from __future__ import annotations

from typing import Any, Dict, List, Mapping

import yaml

from components.evaluation.benchmark_config import CLUE_TASKS, GLUE_TASKS
from components.report import data_gate as gate_text
from components.report.document import Block, Document, Section, Table, to_markdown
from trainer.formatting import NONE_TEXT, number_text

__all__ = ["MODEL_CARD", "FACTS_FILE", "render", "header", "front_matter"]

MODEL_CARD = "model_card.md"
FACTS_FILE = "model_card.json"  # the facts the card renders

# How the model-index names each task's dataset and task type, by family: reading comprehension and multiple choice
# by their own datasets (CMRC2018 and C3 are CLUE's, run by the SQuAD and RACE nodes), GLUE's and CLUE's
# classification tasks as configs of their benchmark; any other task (a spec's, benchmarks.tasks) by its own name.
_DATASETS = {"SQuAD1.1": ("squad", "SQuAD v1.1", "question-answering"),
             "SQuAD2.0": ("squad_v2", "SQuAD v2.0", "question-answering"),
             "CMRC2018": ("cmrc2018", "CMRC2018", "question-answering"),
             "RACE": ("race", "RACE", "multiple-choice"),
             "C3": ("c3", "C3", "multiple-choice")}


def _dataset(task: str):
    """(task type, the model-index's ``dataset``) of a task."""
    if task in _DATASETS:
        ident, name, kind = _DATASETS[task]
        return kind, {"type": ident, "name": name}
    for family, tasks in (("glue", GLUE_TASKS), ("clue", CLUE_TASKS)):
        if task in tasks:
            return "text-classification", {"type": family, "name": f"{family.upper()} {task}",
                                           "config": task.lower().replace("-", "")}
    return "text-classification", {"type": task.lower(), "name": task}


def _result(task: str, value: float, metric: str) -> Dict[str, Any]:
    kind, dataset = _dataset(task)
    return {"task": {"type": kind}, "dataset": {**dataset, "split": "validation"},
            "metrics": [{"type": "score", "value": value, "name": f"{task} dev score ({metric})"}]}


def header(facts: Mapping[str, Any]) -> Dict[str, Any]:
    """The YAML metadata Hugging Face reads: license, language, datasets and the model-index (every task's dev
    score at full precision; ``name`` says which metrics make the score)."""
    b = facts["benchmarks"]
    language = facts.get("language", "en")  # the run's code, or its list of codes (a run of several languages)
    return {
        "license": facts["license"],
        "language": list(language) if isinstance(language, (list, tuple)) else [language],
        "library_name": "transformers",
        "tags": ["albert", "tfx", "pretraining"],
        "datasets": sorted(facts["corpus"]["sources"]),
        "model-index": [{"name": facts["name"],
                         "results": [_result(t, v, b["metrics"].get(t, "score")) for t, v in sorted(b["scores"].items())]}],
    }


def _rows(mapping: Mapping[str, Any]) -> List[List[str]]:
    return [[str(k), NONE_TEXT if v is None else str(v)] for k, v in mapping.items()]


def _continued(training: Mapping[str, Any]) -> Dict[str, Any]:
    """The rows a continued pretraining adds: what it continued from and the steps behind it in all."""
    base = training.get("continued_from")
    if not base:
        return {}
    version = f"version {base['version']} at " if base.get("version") is not None else ""
    return {"continued from": f"{version}{base['location']} ({base.get('steps')} steps)",
            "total steps (with the base's)": training.get("total_steps")}


def _data_read(data_read: Mapping[str, Mapping[str, Any]]) -> Dict[str, Any]:
    """One row per raw-data location the run read: span(s), folder, files and the fingerprint's first 12 digits."""
    rows = {}
    for key, d in sorted(data_read.items()):
        spans = d.get("spans") or []
        where = (f"span{'s' if len(spans) > 1 else ''} {', '.join(map(str, spans))} of " if spans else "") + str(
            d.get("location", ""))
        rows[f"read: {key}"] = (f"{where} ({d.get('files')} files, {d.get('bytes')} bytes, fingerprint "
                                f"{str(d.get('fingerprint', ''))[:12]})")
    return rows


def _data_gate_section(facts: Mapping[str, Any]) -> List[Section]:
    """The card's "Data gate" section (the report's, in brief): the span, whether it passed or was accepted knowingly
    (``gate.accept``) and which checks it failed, and the benchmarks' contamination. None for a benchmark-only run's
    model or a report that did not keep the gate's result."""
    if facts.get("source") or "data_gate" not in facts:
        return []
    gate = facts["data_gate"]
    if gate is None:
        return [Section("Data gate", [gate_text.no_gate_text(False)])]
    blocks: List[Block] = [gate_text.verdict(gate)]
    failed = gate_text.accepted_failures_table(gate)
    if failed is not None:
        blocks.append(failed)
    table = gate_text.contamination_table(gate)
    if table is not None:
        blocks.append(table)
    blocks.append(gate_text.contamination_text(gate))
    return [Section("Data gate", blocks)]


def _pretraining_sections(facts: Mapping[str, Any]) -> List[Section]:
    """The card's "Pretraining data" and "Training" sections: this pipeline's pretraining, or (a benchmark-only
    run's model, ``facts["source"]``) one line saying where the model came from, with no number invented."""
    c, t = facts["corpus"], facts["training"]
    if facts.get("source"):
        line = "None by this pipeline: a benchmark-only run of the model named under Model."
        return [Section("Pretraining data", [line]), Section("Training", [line])]
    return [
        Section("Pretraining data", [
            Table(["fact", "value"], _rows({
                "sources": ", ".join(f"{name}: {n:,} documents" for name, n in sorted(c["sources"].items())),
                "documents": c["documents"], "sentences": c["sentences"], "characters": c["characters"],
                "tokens (train split)": c["tokens"].get("train"), "tokens (eval split)": c["tokens"].get("eval"),
                "instances (train / eval)": f"{c['instances'].get('train')} / {c['instances'].get('eval')}",
                "content fingerprint (sha256 of the pretraining TFRecords)": c["fingerprint"],
                **{f"datagen {k}": v for k, v in sorted(c["datagen"].items())},
                **_data_read(facts.get("data_read") or {})}))]),
        Section("Training", [
            Table(["fact", "value"], _rows({
                "steps": t["steps"], **_continued(t), "batch size": t["batch_size"], "optimizer": t["optimizer"],
                "learning rate": t["learning_rate"], "precision": t["precision"], "hardware": t["hardware"],
                "wall time of the final training execution (s)": t["wall_seconds"],
                **{f"held-out {k}": number_text(v, 4) for k, v in sorted(t["eval"].items())}}))]),
    ]


def render(facts: Mapping[str, Any]) -> str:
    """The card (``model_card.md``) of one pushed version."""
    b, blessing = facts["benchmarks"], facts["blessing"]
    if facts.get("source"):
        from trainer.base_model import source_text  # lazy: on one branch; trainer.base_model, json (0.004 s)

        made = (f"benchmarked by the `{facts['pipeline']}` pipeline (version {facts['version']}; source: "
                f"{source_text(facts['source'])})")
    else:
        made = f"pretrained by the `{facts['pipeline']}` pipeline (version {facts['version']})"
    sections = [
        Section("Model", [
            f"ALBERT encoder {made}, "
            f"{facts['parameters']:,} parameters. Files: "
            + ("" if (facts.get("source") or {}).get("serving_model") is False else
               "the TF SavedModel at the top of this folder (`serving_default`: token ids in; sequence and pooled "
               "output, MLM and sentence-order logits out), ")
            + "`checkpoint/` (the TF2 checkpoints and official-key `albert_config.json`), `huggingface/` "
            "(`AlbertModel.from_pretrained`) and `vocab/` (the vocabulary it was trained with).",
            Table(["setting", "value"], _rows(facts["albert_config"]))]),
        *_pretraining_sections(facts),
        *_data_gate_section(facts),
        Section("Benchmarks", [
            f"Dev-set scores (0-100) of fine-tuning this encoder; protocol: {b['protocol']}.",
            Table(["task", "score (metrics)", "score", f"gain over {b['arm']} (medians)"],
                  [[task, b["metrics"].get(task, "score"), number_text(score, 2),
                    number_text(b["gains"].get(task), 2, signed=True)] for task, score in sorted(b["scores"].items())])]),
        Section("Blessing", [
            f"{'BLESSED' if blessing['blessed'] else 'NOT BLESSED'}"
            f"{' (forced by release.force_bless)' if blessing['forced'] else ''}: {blessing['reason']}. Baseline: "
            + (f"model {blessing['baseline']['model']['id']} ({blessing['baseline']['model']['uri']})"
               if blessing.get("baseline") else "none (no blessed model "
                                                                                         "in this pipeline before)")
            + ".",
            Table(["criterion", "measured", "threshold", "passed"],
                  [[ch["criterion"], number_text(ch["measured"], 2), number_text(ch["threshold"], 2),
                    "yes" if ch["passed"] else "no"] for ch in blessing["checks"]])
            if blessing["checks"] else "No criterion was configured (release.*)."]),
        Section("Lineage (ML Metadata)", [
            Table(["artifact", "id", "type", "uri"],
                  [[name, str(a.get("id")), str(a.get("type")), str(a.get("uri"))]
                   for name, a in sorted(facts["artifacts"].items())])]),
        Section("Known limitations", ["\n".join(f"- {line}" for line in facts["limitations"])]),
    ]
    body = to_markdown(Document(title=facts["name"], sections=sections))
    return front_matter(facts) + "\n" + body


def front_matter(facts: Mapping[str, Any]) -> str:
    """The card's YAML metadata block, between its ``---`` lines, as Hugging Face reads it."""
    return "---\n" + yaml.safe_dump(header(facts), sort_keys=False) + "---\n"
