"""The run report: paper-Table-2-shaped results, GLUE details, protocol, pretraining and data facts.

The two entry points the ``BenchmarkReport`` node calls: :func:`load_result` (one benchmark's ``metrics.json``)
and :func:`write_report`, which writes into ``out_dir``:

* ``report.md``   – Markdown;
* ``report.html`` – the same content, self-contained (inline CSS, the curves PNG embedded as a
  data URI), every value HTML-escaped;
* ``results.json`` – the numbers behind both (Table-2 row, GLUE rows, per-benchmark metrics);
* ``pretraining_curves.png`` – MLM loss/accuracy and SOP loss/accuracy vs step, from
  ``<model_run_dir>/train_history.jsonl`` (skipped, and said so, when the file is absent);
* ``data_gate.png`` – the data gate's document-length and token-frequency distributions, the span over its
  baseline (with a gate only: ``gate_dir``).

The "Data gate" section shows the DataGate's result (``gate.json``): whether the span passed or was accepted
knowingly (``gate.accept``), its statistics beside the baseline's, every check with value, limit and margin, and
the contamination of each reading benchmark's dev set, this span's and over every span pretrained on so far;
``results.json`` keeps it (less the statistics) under ``summary.data_gate``, which the model card reads.

With baseline arms (``benchmarks.baselines``, e.g. ``random_init``) a "Gain over no pretraining" table shows,
per task, the median and min–max over seeds of both arms, the gain of the medians, the per-seed paired gain and
whether the worst pretrained seed beats the best baseline seed; ``results.json`` carries the same under
``summary.baselines``, and each arm's step-0 weight check under ``summary.init_check``.

The parts live in :mod:`components.report`: the artifacts read into a typed result (``inputs``), the Table-2
arithmetic (``scores``, where the Avg rule is stated), the sections (``sections``), the document model and its
Markdown and HTML renderers (``document``) and the curves (``curves``).
"""
from __future__ import annotations

import json
from typing import Any, Dict, Mapping, Optional

from components.file_io import exists, join, json_safe, makedirs, read_bytes, read_text, write
from components.report import data_gate as gate_text
from components.report.curves import CURVES_PNG, DATA_GATE_PNG, plot_curves, plot_data_gate
from components.report.document import to_html, to_markdown
from components.report.inputs import read_inputs
from components.report.scores import NON_GLUE_TASKS, all_tasks, gains, init_checks, suite_row, table2_row
from components.report.sections import build_document
from config.references import PAPER_ALBERT_BASE, REFERENCE_ROWS
from trainer.files import METRICS_FILE

__all__ = ["load_result", "write_report", "REPORT_MD", "REPORT_HTML", "RESULTS_JSON"]

REPORT_MD = "report.md"
REPORT_HTML = "report.html"
RESULTS_JSON = "results.json"


def load_result(uri: str) -> Dict[str, Any]:
    """The ``metrics.json`` a benchmark evaluator wrote into its artifact ``uri``."""
    path = join(uri, METRICS_FILE)
    if not exists(path):
        raise FileNotFoundError(f"no {METRICS_FILE} in {uri}")
    return json.loads(read_text(path))


def write_report(out_dir: str, cfg, results: Mapping[str, Mapping[str, Any]], model_dir: Optional[str],
                 model_run_dir: Optional[str], stats_dir: Optional[str],
                 artifact_ids: Optional[Mapping[str, Any]] = None,
                 data_read: Optional[Mapping[str, Any]] = None, gate_dir: Optional[str] = None) -> Dict[str, Any]:
    """Write report.md / report.html / results.json (+ pretraining_curves.png) into ``out_dir``.

    ``results``: {name: metrics dict as written by ``run_benchmark.run_benchmark``} (e.g. glue/squad/race);
    ``model_dir``: the Trainer's model artifact (``albert/albert_config.json``,
    ``albert/export_info.json``); ``model_run_dir``: holds ``train_history.jsonl``;
    ``stats_dir``: holds the datagen ``stats.json``; ``artifact_ids``: {name: id or {"id","type","uri"}};
    ``data_read``: {data key: what the run read of it} (the ``data_snapshot`` its nodes were given);
    ``gate_dir``: the DataGate's result (None: the run had no gate, and the report says so).
    Returns the summary (also in results.json): ``avg`` (None if no Table-2 column), ``table2``,
    ``missing_columns``, ``num_parameters``, ``files``.
    """
    makedirs(out_dir)
    inputs = read_inputs(cfg, results, model_dir, model_run_dir, stats_dir, artifact_ids, data_read, gate_dir)
    tasks = all_tasks(inputs.results)
    row = table2_row(tasks)
    curves_path = join(out_dir, CURVES_PNG)
    curves_ok = plot_curves(inputs.history, curves_path, inputs.sentence_task) if inputs.history else False
    images = {CURVES_PNG: read_bytes(curves_path)} if curves_ok else {}
    gate = inputs.data_gate or {}
    gate_plot_ok = plot_data_gate(gate.get("statistics"), (gate.get("baseline") or {}).get("statistics"),
                                  join(out_dir, DATA_GATE_PNG))
    if gate_plot_ok:
        images[DATA_GATE_PNG] = read_bytes(join(out_dir, DATA_GATE_PNG))

    document = build_document(inputs, row, curves_ok, gate_plot_ok)
    write(join(out_dir, REPORT_MD), to_markdown(document))
    write(join(out_dir, REPORT_HTML), to_html(document, images))

    params = inputs.parameters
    reference = inputs.reference
    files = {"report_md": REPORT_MD, "report_html": REPORT_HTML, "results_json": RESULTS_JSON,
             "pretraining_curves": CURVES_PNG if curves_ok else None,
             "data_gate_plot": DATA_GATE_PNG if gate_plot_ok else None}
    summary = {
        "avg": row["avg"],
        "avg_complete": row["complete"],
        "table2": {"columns": row["columns"], "headline": row["headline"], "present": row["present"],
                   "missing": row["missing"], "avg": row["avg"]},
        "missing_columns": row["missing"],
        "paper_albert_base": PAPER_ALBERT_BASE,
        "reference": {"row": reference, "source": REFERENCE_ROWS[reference]["source"],
                      "values": REFERENCE_ROWS[reference]["values"]},
        "glue": {t: m for t, m in tasks.items() if t not in NON_GLUE_TASKS},
        "num_parameters": params.counts["total"] if params else None,
        "parameters": params.counts if params else None,
        "pretraining_eval": (inputs.export_info or {}).get("eval_metrics"),
        "continued_from": (inputs.export_info or {}).get("init_from"),  # train.init_from's base, or None
        "datagen": inputs.datagen,
        "baselines": gains(inputs.results),
        "init_check": {f"{bench}/{arm}": c for (bench, arm), c in sorted(init_checks(inputs.results).items())},
        "artifact_ids": inputs.artifact_ids,
        "model_source": inputs.source,
        "data_read": inputs.data_read,
        "data_gate": gate_text.brief(inputs.data_gate),  # None: the run had no gate
        "files": files,
    }
    suite = suite_row(tasks)
    if suite["columns"]:  # tasks beyond English: their row in Table 2's shape (absent from an English report)
        summary["suite"] = suite
    if inputs.languages:  # a run of several languages: the Languages table's rows (absent from a one-language run)
        summary["languages"] = inputs.languages
    payload = {"summary": summary, "results": inputs.results, "config": inputs.settings}
    write(join(out_dir, RESULTS_JSON), json.dumps(json_safe(payload), indent=2, sort_keys=True, allow_nan=False))
    return json_safe(summary)
