"""The model card of a pushed version: Hugging Face's form (a YAML header, then Markdown). Pure: facts in, text out.

The facts are gathered by :func:`components.release.package.card_facts` from MLMD properties and the run's own files
(the report's ``results.json``, the export's ``export_info.json``, the Trainer's ``run_config.json``, the blessing);
nothing here is typed by hand. The header's ``model-index`` carries every task score at full precision, the table
the same numbers rounded to two decimals, so a reader and a test can both check them against ``results.json``.

Each task is filed under its own family (:func:`components.report.scores.task_family`) and dataset: GLUE's and
CLUE's tasks as configs of ``glue`` / ``clue`` (CMRC2018 and C3 too, CLUE's, as question answering and multiple
choice), SQuAD and RACE as theirs, a task by spec under its own name, a cross-lingual task's languages each as its
own result whose dataset config is the language. With the run's task records (``facts["benchmarks"]["tasks"]``,
:func:`task_records`), every metric of a task is its own entry, named by what it is (Matthews correlation, F1 of
label 1, macro-F1, CMRC2018's character-level F1 and EM, ...); without them, the task's headline score.
"""
from __future__ import annotations

from typing import Any, Dict, List, Mapping

import yaml

from components.evaluation.benchmark_config import CLUE_TASKS, GLUE_TASKS
from components.report import data_gate as gate_text
from components.report.document import Block, Document, Section, Table, to_markdown
from components.report.language_table import languages_section
from components.report.scores import task_family, task_metrics
from trainer.formatting import NONE_TEXT, number_text

__all__ = ["MODEL_CARD", "FACTS_FILE", "render", "header", "front_matter", "task_records", "model_index_results"]

MODEL_CARD = "model_card.md"
FACTS_FILE = "model_card.json"  # the facts the card renders

# How the model-index names each task's dataset and task type, by family: reading comprehension and multiple choice
# by their own datasets (CMRC2018 and C3 are CLUE's, run by the SQuAD and RACE nodes: configs of Hugging Face's
# ``clue``), GLUE's and CLUE's classification tasks as configs of their benchmark; any other task (a spec's,
# benchmarks.tasks) by its own name, a cross-lingual one's languages as its configs.
_DATASETS = {"SQuAD1.1": ("question-answering", {"type": "squad", "name": "SQuAD v1.1"}),
             "SQuAD2.0": ("question-answering", {"type": "squad_v2", "name": "SQuAD v2.0"}),
             "CMRC2018": ("question-answering", {"type": "clue", "name": "CLUE CMRC2018", "config": "cmrc2018"}),
             "RACE": ("multiple-choice", {"type": "race", "name": "RACE", "config": "all"}),
             "C3": ("multiple-choice", {"type": "clue", "name": "CLUE C3", "config": "c3"})}
_GLUE_CONFIGS = {"MNLI-m": "mnli_matched", "MNLI-mm": "mnli_mismatched"}  # Hugging Face's glue configs
# metric key → (Hugging Face's metric type, what it is); the values are percentages (×100), as the results hold
# them. The names are ASCII: the YAML header would write another character as an escape.
_METRICS = {"accuracy": ("accuracy", "accuracy"), "f1": ("f1", "F1 of label 1"), "macro_f1": ("f1", "macro-F1"),
            "mcc": ("matthews_correlation", "Matthews correlation * 100"),
            "pearson": ("pearsonr", "Pearson correlation * 100"),
            "spearman": ("spearmanr", "Spearman correlation * 100"),
            "exact_match": ("exact_match", "exact match")}
_QA_METRICS = {"f1": "F1", "exact_match": "exact match"}


def _dataset(task: str, record=None):
    """(task type, the model-index's ``dataset``) of a task (``record``: its entry of :func:`task_records`)."""
    if task in _DATASETS:
        kind, dataset = _DATASETS[task]
        return kind, dict(dataset)
    language = (record or {}).get("language")
    if language:  # one language of a cross-lingual task
        base = record["task"]
        return "text-classification", {"type": base.lower(), "name": f"{base} ({language})", "config": language}
    for family, tasks in (("glue", GLUE_TASKS + tuple(_GLUE_CONFIGS)), ("clue", CLUE_TASKS)):
        if task in tasks:
            return "text-classification", {"type": family, "name": f"{family.upper()} {task}",
                                           "config": _GLUE_CONFIGS.get(task, task.lower().replace("-", ""))}
    return "text-classification", {"type": task.lower(), "name": task}


def task_records(results: Mapping[str, Any]) -> Dict[str, Dict[str, Any]]:
    """{task: its family, its metrics (:func:`components.report.scores.task_metrics`, in order) and, for a
    cross-lingual task's language, the task and the language} from a report's ``results.json``; what the card's
    ``model-index`` files each task by (the Pusher puts it in the facts as ``benchmarks.tasks``)."""
    out: Dict[str, Dict[str, Any]] = {}
    for _, result in sorted((results.get("results") or {}).items()):
        for task, metrics in ((result or {}).get("tasks") or {}).items():
            metrics = metrics or {}
            record: Dict[str, Any] = {"family": task_family(task, metrics),
                                      "metrics": {k: v for k, v in task_metrics(task, metrics)}}
            if metrics.get("cross_lingual"):
                record.update({k: metrics["cross_lingual"].get(k) for k in ("task", "language", "train_language")})
            if metrics.get("languages"):
                record.update(languages=list(metrics["languages"]), train_language=metrics.get("train_language"))
            out[task] = record
    return out


def _metric(task: str, key: str, value: float, family: str) -> Dict[str, Any]:
    if family == "qa":
        what = _QA_METRICS[key] + (" (CMRC2018's character-level)" if task == "CMRC2018" else "")
        return {"type": key, "value": value, "name": f"{task} dev {what}"}
    kind, what = _METRICS[key]
    if family == "multiple_choice":
        what = "accuracy over all questions"
    return {"type": kind, "value": value, "name": f"{task} dev {what}"}


def model_index_results(facts: Mapping[str, Any]) -> List[Dict[str, Any]]:
    """The ``model-index`` results: one per task (a cross-lingual task's mean is left out: each of its languages is
    one), each with every metric of the task's record, or its headline score without records."""
    b = facts["benchmarks"]
    records = b.get("tasks") or {}
    out = []
    for task, score in sorted(b["scores"].items()):
        record = records.get(task)
        if record is not None and record.get("languages"):
            continue  # the mean over a cross-lingual task's languages: the card's table shows it
        kind, dataset = _dataset(task, record)
        metrics = ([_metric(task, k, v, record["family"]) for k, v in record["metrics"].items() if v is not None]
                   if record and record.get("metrics") else [])
        if not metrics:
            what = b["metrics"].get(task, "score")
            metrics = [{"type": "score", "value": score, "name": f"{task} dev score ({what})"}]
        out.append({"task": {"type": kind}, "dataset": {**dataset, "split": "validation"}, "metrics": metrics})
    return out


def _score_text(task: str, b: Mapping[str, Any]) -> str:
    """Which metrics make a task's score, for the card's table: a spec task's from its record (the mean of its
    metrics; a cross-lingual task's mean over its languages, or one language's dev set), else the facts' text."""
    record = (b.get("tasks") or {}).get(task)
    text = b["metrics"].get(task, "score")
    if not record or record.get("family") not in ("spec", "cross_lingual") or not record.get("metrics"):
        return text
    names = " + ".join(record["metrics"]) + (" (mean)" if len(record["metrics"]) > 1 else "")
    if record.get("languages"):
        return f"{names}, the mean over {len(record['languages'])} languages ({', '.join(record['languages'])})"
    if record.get("language"):
        return f"{names} on the {record['language']} dev set (fine-tuned in {record['train_language']})"
    return names


def header(facts: Mapping[str, Any]) -> Dict[str, Any]:
    """The YAML metadata Hugging Face reads: license, language, datasets and the model-index (every task's dev
    metrics at full precision, each ``name`` saying what it is: :func:`model_index_results`)."""
    language = facts.get("language", "en")  # the run's code, or its list of codes (a run of several languages)
    return {
        "license": facts["license"],
        "language": list(language) if isinstance(language, (list, tuple)) else [language],
        "library_name": "transformers",
        "tags": ["albert", "tfx", "pretraining"],
        "datasets": sorted(facts["corpus"]["sources"]),
        "model-index": [{"name": facts["name"],
                         "results": model_index_results(facts)}],
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


def _languages_section(facts: Mapping[str, Any]) -> List[Section]:
    """A run of several languages: the report's "Languages" table (each language's documents, characters, target and
    realised shares of the pretraining instances); none for one language."""
    section = languages_section(facts.get("languages"))
    return [section] if section is not None else []


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
            "(`AlbertModel.from_pretrained`), `vocab/` (the vocabulary it was trained with)"
            + (", and no raw-text folders (pushed with `release.raw_text_serving=false`): a client tokenizes with "
               "`vocab/`." if facts.get("raw_text_serving", True) is False else
               ", and for raw text in TF Hub's pair `preprocess/` (strings to `input_word_ids`, `input_mask`, "
               "`input_type_ids`, tokenized in the graph with TF Text) and `encoder/` (`pooled_output`, "
               "`sequence_output`), and `text_model/` (`embed`, and `fill_mask` when the model has its MLM head)."),
            Table(["setting", "value"], _rows(facts["albert_config"]))]),
        *_pretraining_sections(facts),
        *_languages_section(facts),
        *_data_gate_section(facts),
        Section("Benchmarks", [
            f"Dev-set scores (0-100) of fine-tuning this encoder; protocol: {b['protocol']}.",
            Table(["task", "score (metrics)", "score", f"gain over {b['arm']} (medians)"],
                  [[task, _score_text(task, b), number_text(score, 2),
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
