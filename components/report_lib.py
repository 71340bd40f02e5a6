"""The run report: paper-Table-2-shaped results, GLUE details, protocol, pretraining and data facts.

``write_report`` writes into ``out_dir``:

* ``report.md``   – Markdown;
* ``report.html`` – the same content, self-contained (inline CSS, the curves PNG embedded as a
  data URI), every value HTML-escaped;
* ``results.json`` – the numbers behind both (Table-2 row, GLUE rows, per-benchmark metrics);
* ``pretraining_curves.png`` – MLM loss/accuracy and SOP loss/accuracy vs step, from
  ``<model_run_dir>/train_history.jsonl`` (skipped, and said so, when the file is absent).

With baseline arms (``benchmarks.baselines``, e.g. ``random_init``) a "Gain over no pretraining" table shows,
per task, the median and min–max over seeds of both arms, the gain of the medians, the per-seed paired gain and
whether the worst pretrained seed beats the best baseline seed; ``results.json`` carries the same under
``summary.baselines``, and each arm's step-0 weight check under ``summary.init_check``.

Table 2 "Avg" (paper): mean over SQuAD1.1, SQuAD2.0, MNLI, SST-2 and RACE where each SQuAD column
is first the mean of its F1 and EM. Columns this run did not produce are named, never filled in;
the average is then over the columns present and is not comparable with the paper's Avg.

No TFX import; TensorFlow only lazily (parameter count, ``gs://`` paths).
"""
from __future__ import annotations

import base64
import html
import io
import json
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from components.file_io import exists, join, json_safe, makedirs, read_bytes, read_json, read_text, write
from config.references import PAPER_ALBERT_BASE, REFERENCE_ROWS
from config.sections import SQUAD_TASKS
from trainer.files import (ALBERT_DIR, CONFIG_FILE, EXPORT_INFO_FILE, HISTORY_FILE, METRICS_FILE, RUN_CONFIG_FILE,
                           STATS_FILE)
from trainer.formatting import NONE_TEXT, beyond_spread_text, number, number_text, spread_text

__all__ = [
    "load_result",
    "write_report",
    "table2_row",
    "PAPER_ALBERT_BASE",
    "TABLE2_COLUMNS",
    "REPORT_MD",
    "REPORT_HTML",
    "RESULTS_JSON",
    "CURVES_PNG",
]

REPORT_MD = "report.md"
REPORT_HTML = "report.html"
RESULTS_JSON = "results.json"
CURVES_PNG = "pretraining_curves.png"

# (column, task names in the results (first found wins), metric key(s))
TABLE2_COLUMNS: Tuple[Tuple[str, Tuple[str, ...], Tuple[str, ...]], ...] = (
    (SQUAD_TASKS["1.1"], (SQUAD_TASKS["1.1"],), ("f1", "exact_match")),
    (SQUAD_TASKS["2.0"], (SQUAD_TASKS["2.0"],), ("f1", "exact_match")),
    ("MNLI", ("MNLI-m", "MNLI"), ("accuracy",)),
    ("SST-2", ("SST-2",), ("accuracy",)),
    ("RACE", ("RACE",), ("all",)),
)
GLUE_ORDER = ("CoLA", "SST-2", "MRPC", "STS-B", "QQP", "MNLI-m", "MNLI-mm", "QNLI", "RTE", "WNLI")
GLUE_METRIC_COLUMNS = ("mcc", "accuracy", "f1", "pearson", "spearman", "score")
NON_GLUE_TASKS = (*SQUAD_TASKS.values(), "RACE")  # every other task name in the results is a GLUE task


def load_result(uri: str) -> Dict[str, Any]:
    """The ``metrics.json`` a benchmark evaluator wrote into its artifact ``uri``."""
    path = join(uri, METRICS_FILE)
    if not exists(path):
        raise FileNotFoundError(f"no {METRICS_FILE} in {uri}")
    return json.loads(read_text(path))


# ---------------------------------------------------------------------------------------------
# Table 2 arithmetic


def _all_tasks(results: Mapping[str, Mapping[str, Any]]) -> Dict[str, Dict[str, Any]]:
    tasks: Dict[str, Dict[str, Any]] = {}
    for result in results.values():
        for name, metrics in (result or {}).get("tasks", {}).items():
            tasks[name] = metrics
    return tasks


def table2_row(tasks: Mapping[str, Mapping[str, Any]]) -> Dict[str, Any]:
    """Table-2 cells from task metrics: ``columns`` {column: value or {"f1","exact_match"}},
    ``headline`` {column: number used in Avg}, ``present``/``missing`` column names, ``avg``
    (mean of the present headlines, each SQuAD pair averaged first; None if none present) and
    ``complete`` (all five columns present)."""
    columns: Dict[str, Any] = {}
    headline: Dict[str, float] = {}
    missing: List[str] = []
    for column, names, keys in TABLE2_COLUMNS:
        metrics = next((tasks[n] for n in names if n in tasks), None)
        values = [number(metrics.get(k)) for k in keys] if metrics else [None]
        if any(v is None for v in values):
            missing.append(column)
            continue
        if len(keys) == 2:
            columns[column] = {keys[0]: values[0], keys[1]: values[1]}
        else:
            columns[column] = values[0]
        headline[column] = sum(values) / len(values)
    avg = sum(headline.values()) / len(headline) if headline else None
    return {"columns": columns, "headline": headline, "present": list(headline), "missing": missing,
            "avg": avg, "complete": not missing}


def _paper_avg_check() -> float:
    p = PAPER_ALBERT_BASE
    cols = [(p["SQuAD1.1"]["f1"] + p["SQuAD1.1"]["exact_match"]) / 2,
            (p["SQuAD2.0"]["f1"] + p["SQuAD2.0"]["exact_match"]) / 2, p["MNLI"], p["SST-2"], p["RACE"]]
    return sum(cols) / len(cols)  # 80.05 → the paper's 80.1


# ---------------------------------------------------------------------------------------------
# Inputs: model, pretraining history, data statistics


def _parameter_count(model_dir: Optional[str]) -> Optional[Dict[str, Any]]:
    if not model_dir:
        return None
    path = join(model_dir, ALBERT_DIR, CONFIG_FILE)
    raw = read_json(path)
    if raw is None:
        return None
    from trainer.modeling_albert import AlbertConfig, count_parameters

    config = AlbertConfig.from_dict(raw)
    counts = count_parameters(config)
    return {"counts": counts, "config_path": path,
            "config": {k: raw.get(k) for k in ("vocab_size", "embedding_size", "hidden_size", "num_hidden_layers",
                                               "num_attention_heads", "intermediate_size", "num_hidden_groups",
                                               "inner_group_num", "sharing") if k in raw}}


def _read_history(model_run_dir: Optional[str]) -> List[Dict[str, Any]]:
    if not model_run_dir:
        return []
    path = join(model_run_dir, HISTORY_FILE)
    if not exists(path):
        return []
    rows = []
    for line in read_text(path).splitlines():
        line = line.strip()
        if not line:
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            continue  # a torn last line of a preempted run
    return rows


def _plot_curves(history: Sequence[Mapping[str, Any]], path: str, sentence: str = "SOP") -> bool:
    """2×2 panels (MLM loss / accuracy, SOP loss / accuracy), train and eval; False if nothing to draw.

    A step logged twice (a resumed run re-logs from its checkpoint) keeps its last value."""
    panels = (("mlm_loss", "MLM loss"), ("mlm_accuracy", "MLM accuracy"),
              ("sentence_loss", f"{sentence} loss"), ("sentence_accuracy", f"{sentence} accuracy"))
    points: Dict[Tuple[str, str], Dict[float, float]] = {}
    for row in history:
        step = number(row.get("step"))
        if step is None:
            continue
        split = str(row.get("split", "train"))
        for key, _ in panels:
            v = number(row.get(key))
            if v is not None:
                points.setdefault((key, split), {})[step] = v
    if not points:
        return False
    series = {k: ([x for x in sorted(d)], [d[x] for x in sorted(d)]) for k, d in points.items()}
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(10, 7))
    for ax, (key, title) in zip(axes.ravel(), panels):
        drawn = False
        for split, style in (("train", "-"), ("eval", "o--")):
            if (key, split) in series:
                xs, ys = series[(key, split)]
                ax.plot(xs, ys, style, label=split, markersize=4)
                drawn = True
        ax.set_title(title)
        ax.set_xlabel("step")
        ax.grid(alpha=0.3)
        if drawn:
            ax.legend()
        else:
            ax.text(0.5, 0.5, "no data", ha="center", va="center", transform=ax.transAxes)
    fig.suptitle("Pretraining curves")
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90)
    plt.close(fig)
    write(path, buf.getvalue(), binary=True)
    return True


def _datagen_highlights(stats: Optional[Mapping[str, Any]]) -> Dict[str, Dict[str, Any]]:
    """Per split: instances, tokens, mean length, SOP balance, masked share, replacement shares..."""
    if not stats:
        return {}
    splits = stats.get("splits") if isinstance(stats.get("splits"), dict) else {"all": stats}
    out: Dict[str, Dict[str, Any]] = {}
    for split, s in splits.items():
        if not isinstance(s, dict):
            continue
        out[split] = {
            "instances": s.get("instances"),
            "tokens": s.get("tokens"),
            "length_mean": s.get("length_mean"),
            "length_p50": s.get("length_p50"),
            "length_max": s.get("length_max"),
            "short_target_share": s.get("short_target_share_instances"),
            "sop_label_1_share": s.get("sop_label_1_share"),
            "masked_token_share": s.get("masked_token_share"),
            "masked_per_instance": s.get("masked_per_instance"),
            "replacement_shares": s.get("replacement_shares"),
            "ngram_span_shares": s.get("ngram_span_shares"),
        }
    return out


# ---------------------------------------------------------------------------------------------
# Rendering: one neutral structure (sections of paragraphs / tables), two writers


def _title_and_settings(cfg, model_run_dir: Optional[str]) -> Tuple[str, Dict[str, Any]]:
    """The report's title and the run's settings shown in it.

    ``cfg`` is the node's ``ReportConfig`` (presentation only); the settings that produced the numbers
    are read from the Trainer's ``run_config.json`` in ``model_run``, i.e. from the artifacts. A whole
    pipeline config (scripts, tests) supplies both.
    """
    if cfg is not None and hasattr(cfg, "report_title"):
        return cfg.report_title(), cfg.to_dict()
    run = (read_json(join(model_run_dir, RUN_CONFIG_FILE)) if model_run_dir else None) or {}
    title = cfg.get("title") if isinstance(cfg, dict) else getattr(cfg, "title", None)
    return title or "ALBERT-TFX report", dict(run)


def _share(v) -> str:
    n = number(v)
    return NONE_TEXT if n is None else f"{100 * n:.1f}%"


def _shares_text(d) -> str:
    if not isinstance(d, dict) or not d:
        return NONE_TEXT
    return ", ".join(f"{k}: {_share(v)}" for k, v in d.items())


def _int_text(v) -> str:
    n = number(v)
    return NONE_TEXT if n is None else f"{int(n):,}"


# A section is (heading, [block, ...]); a block is a str paragraph, ("table", header, rows) or ("image", path, alt).
# One function per section; a function returns None when its section has nothing to show.
_Section = Tuple[str, List[Any]]


def _table2_section(row: Mapping[str, Any], reference: str) -> _Section:
    """This run's Table-2 row beside the chosen published row, and how Avg was computed."""
    header = ["Model", "SQuAD1.1 F1/EM", "SQuAD2.0 F1/EM", "MNLI", "SST-2", "RACE", "Avg"]

    def pair(col):
        v = row["columns"].get(col)
        return NONE_TEXT if v is None else f"{number_text(v['f1'])}/{number_text(v['exact_match'])}"

    avg_text = number_text(row["avg"])
    if row["avg"] is not None and not row["complete"]:
        avg_text += f" ({len(row['present'])} of 5)"
    this = ["This run", pair(SQUAD_TASKS["1.1"]), pair(SQUAD_TASKS["2.0"]), number_text(row["columns"].get("MNLI")),
            number_text(row["columns"].get("SST-2")), number_text(row["columns"].get("RACE")), avg_text]
    ref = REFERENCE_ROWS[reference]
    p = ref["values"]
    published = [ref["label"], *(f"{p[c]['f1']}/{p[c]['exact_match']}" for c in SQUAD_TASKS.values()),
                 f"{p['MNLI']}", f"{p['SST-2']}", f"{p['RACE']}", f"{p['Avg']}"]
    blocks: List[Any] = [("table", header, [this, published])]
    if row["missing"]:
        blocks.append("Missing columns (not run or no result; no number is shown for them): "
                      + ", ".join(row["missing"]) + ".")
    if row["avg"] is None:
        blocks.append("Avg: not computed — none of the five Table-2 columns has a result.")
    elif row["complete"]:
        blocks.append("Avg = mean of the five columns, each SQuAD column first averaged over F1 and EM "
                      "(the paper's definition).")
    else:
        blocks.append(f"Avg here is over the {len(row['present'])} present column(s) only "
                      f"({', '.join(row['present'])}; each SQuAD column first averaged over F1 and EM), so it "
                      "is not comparable with the paper's Avg over all five.")
    blocks.append("MNLI = matched dev accuracy; SST-2 = dev accuracy; RACE = accuracy over middle+high; "
                  "SQuAD = dev F1/EM. All numbers are percentages on the dev sets this run used "
                  "(see Protocol) — sample-preset numbers are smoke-test values, not comparable with the paper.")
    return "Results in the shape of the paper's Table 2", blocks


def _glue_section(tasks: Mapping[str, Mapping[str, Any]], results: Mapping[str, Any]) -> Optional[_Section]:
    """Every GLUE task's metrics, runs, selected step and sizes; the tasks skipped and why."""
    glue_names = [t for t in GLUE_ORDER if t in tasks] + sorted(
        t for t in tasks if t not in GLUE_ORDER and t not in NON_GLUE_TASKS)
    if not glue_names:
        return None
    metric_cols = [m for m in GLUE_METRIC_COLUMNS if any(m in tasks[t] for t in glue_names)]
    header = ["Task"] + metric_cols + ["runs (median of)", "selected step", "train / dev examples"]
    rows = []
    for t in glue_names:
        m = tasks[t]
        runs = m.get("run_scores")
        rows.append([t] + [number_text(m.get(c)) if c in m else "" for c in metric_cols]
                    + [str(len(runs)) if isinstance(runs, list) else "1", str(m.get("selected_step", NONE_TEXT)),
                       f"{_int_text(m.get('num_train'))} / {_int_text(m.get('num_dev'))}"])
    blocks: List[Any] = [("table", header, rows),
                         "score = the task's headline (CoLA MCC; MRPC/QQP mean of F1 and accuracy; STS-B mean "
                         "of Pearson and Spearman; others accuracy); MCC and correlations ×100."]
    skipped = {}
    for r in results.values():
        skipped.update((r or {}).get("skipped", {}) or {})
    if skipped:
        blocks.append("Skipped: " + "; ".join(f"{k} ({v})" for k, v in sorted(skipped.items())) + ".")
    return "GLUE (dev)", blocks


def _squad_race_section(tasks: Mapping[str, Mapping[str, Any]]) -> Optional[_Section]:
    """SQuAD and RACE in detail (levels, F1/EM, SQuAD 2.0's answerable / unanswerable split and threshold)."""
    rows = []
    for t in NON_GLUE_TASKS:
        if t not in tasks:
            continue
        m = tasks[t]
        if t == "RACE":
            detail = (f"middle {number_text(m.get('middle'))}, high {number_text(m.get('high'))}, "
                      f"all {number_text(m.get('all'))}")
        else:
            detail = f"F1 {number_text(m.get('f1'))}, EM {number_text(m.get('exact_match'))}"
            if t == SQUAD_TASKS["2.0"]:
                detail += (f", HasAns F1 {number_text(m.get('HasAns_f1'))}, NoAns F1 {number_text(m.get('NoAns_f1'))}, "
                           f"null threshold {number_text(m.get('null_threshold'), 3)}")
        rows.append([t, detail, number_text(m.get("score")), str(m.get("selected_step", NONE_TEXT)),
                     f"{_int_text(m.get('num_train'))} / {_int_text(m.get('num_dev'))}"])
    if not rows:
        return None
    return "SQuAD and RACE (dev)", [("table", ["Task", "metrics", "headline", "selected step", "train / dev examples"],
                                     rows)]


def _gain_section(results: Mapping[str, Any]) -> Optional[_Section]:
    """Pretrained arm against each baseline arm, per task, over the seeds (``benchmarks.baselines``)."""
    gains = _gains(results)
    if not gains:
        return None
    rows = []
    for name, per_task in gains.items():
        for task, g in per_task.items():
            pre, base, paired = g["pretrained"], g["baseline"], g["gain_paired"]
            rows.append([task, name, spread_text(pre), spread_text(base), number_text(g.get("gain_median"), signed=True),
                         spread_text(paired, signed=True), beyond_spread_text(g), str(pre.get("n") or NONE_TEXT),
                         number_text(g.get("majority_baseline")), _single_class_text(g.get("single_class_runs"))])
    return "Gain over no pretraining", [
        ("table", ["Task", "baseline", "pretrained: median [min–max]", "baseline: median [min–max]",
                   "gain (median − median)", "paired gain per seed: median [min–max]", "beyond seed spread",
                   "seeds", "majority-class floor", "one-class runs (pretrained / baseline)"], rows),
        "Both arms fine-tune the same architecture with the same hyper-parameters, seeds and protocol; "
        "random_init starts from random weights instead of the pretrained encoder. Values are the task's "
        "headline score over the N seeds (not the selected run); \"beyond seed spread\" = the worst "
        "pretrained seed beats the best baseline seed, which one seed per arm cannot show (\"cannot tell\"). "
        "\"Majority-class floor\" is the dev score of always "
        "predicting the training set's most frequent label (RACE: letter); a run counted under \"one-class "
        "runs\" predicted a single class for all of dev, so it scores that floor whichever encoder it started "
        "from, and a task where every run of both arms does compares nothing."]


def _init_check_section(results: Mapping[str, Any]) -> Optional[_Section]:
    """Each arm's step-0 proof that fine-tuning started from the weights it claims."""
    checks = _init_checks(results)
    if not checks:
        return None
    rows = [[bench, arm, str(c.get("runs_checked", NONE_TEXT)), str(c.get("variables_compared", NONE_TEXT)),
             _int_text(c.get("values_compared")), number_text(c.get("max_abs_diff"), 3),
             str(c.get("equal_informative_variables_max", NONE_TEXT)),
             "passed" if c.get("passed") else "FAILED"] for (bench, arm), c in sorted(checks.items())]
    return "Fine-tuning starts from the pretrained encoder (step-0 check)", [
        ("table", ["Benchmark", "arm", "runs", "variables compared", "values", "max abs diff vs checkpoint",
                   "informative variables equal to checkpoint", "check"], rows),
        "Before the first fine-tuning step every encoder variable is compared with the exported "
        "<albert_dir>/encoder/ckpt: the pretrained arm must equal it exactly (max abs diff 0); the "
        "random_init arm must differ in every non-constant variable. A failure stops the run."]


def _protocol_section(results: Mapping[str, Any], cfg_d: Mapping[str, Any]) -> _Section:
    """How each benchmark was run (seeds, aggregation, checkpoint selection, hyper-parameters) and pretrained."""
    blocks: List[Any] = []
    rows = []
    for name, r in sorted(results.items()):
        proto = (r or {}).get("protocol", {}) or {}
        if not proto:
            continue
        hp = proto.get("hparams", {}) or {}
        hp_text = "; ".join(
            f"{t}: lr {h.get('learning_rate')}, batch {h.get('batch_size')}, steps {h.get('train_steps')}, "
            f"warmup {h.get('warmup_steps')}, seq {h.get('max_seq_length')}, dropout {h.get('albert_dropout')}"
            f"/{h.get('classifier_dropout')}" for t, h in sorted(hp.items()))
        rows.append([name, ", ".join(str(s) for s in proto.get("seeds", [])) or NONE_TEXT,
                     str(proto.get("aggregation", NONE_TEXT)),
                     f"{proto.get('checkpoint_selection', NONE_TEXT)} (effective: "
                     f"{proto.get('checkpoint_selection_effective', NONE_TEXT)}, "
                     f"eval_every {proto.get('eval_every', NONE_TEXT)})",
                     str(proto.get("max_eval_examples") or "all"), hp_text or NONE_TEXT,
                     str((proto.get("pretrained") or {}).get("encoder_checkpoint", NONE_TEXT))])
    if rows:
        blocks.append(("table", ["Benchmark", "seeds", "aggregation", "checkpoint selection", "dev cap",
                                 "hyper-parameters", "pretrained encoder"], rows))
        blocks.append("Optimizer: AdamW (weight decay 0.01, no decay on LayerNorm/bias), global-norm clip 1.0, "
                      "linear warmup then linear decay to 0.")
    else:
        blocks.append("No benchmark results were given.")
    if cfg_d:
        blocks.append(f"Pretraining: seed {cfg_d.get('seed', NONE_TEXT)}, model "
                      f"{((cfg_d.get('model') or {}).get('size')) or NONE_TEXT}, "
                      f"{((cfg_d.get('train') or {}).get('num_train_steps')) or NONE_TEXT} steps.")
    return "Protocol", blocks


def _model_section(params, export_info, curves_ok: bool, history_path: Optional[str]) -> _Section:
    """Parameter count by part, the pretraining eval metrics and facts, and the curves."""
    blocks: List[Any] = []
    if params:
        c = params["counts"]
        blocks.append(("table", ["part", "parameters"],
                       [[k, _int_text(c.get(k))] for k in ("embedding", "encoder", "pooler", "total")]))
        blocks.append(f"Total {c['total'] / 1e6:.2f}M parameters (embeddings + encoder + pooler, heads excluded; "
                      f"the paper's Table 1 counts the same parts), config {json.dumps(params['config'])}.")
    else:
        blocks.append(f"Parameter count unavailable (no {ALBERT_DIR}/{CONFIG_FILE} in the model artifact).")
    if export_info:
        ev = export_info.get("eval_metrics") or {}
        if ev:
            blocks.append(("table", ["pretraining eval metric (final)", "value (accuracies as fractions)"],
                           [[k, number_text(v, 4)] for k, v in sorted(ev.items())]))
        facts = [f"{k} {export_info[k]}" for k in ("final_step", "precision", "num_replicas") if k in export_info]
        if facts:
            blocks.append("Pretraining: " + ", ".join(facts) + ".")
    else:
        blocks.append(f"Pretraining {EXPORT_INFO_FILE} not found.")
    if curves_ok:
        blocks.append(("image", CURVES_PNG, "Pretraining curves: MLM and SOP loss and accuracy vs step"))
    else:
        blocks.append(f"Pretraining curves: no history found ({history_path or 'no model_run dir given'}).")
    return "Pretrained model", blocks


def _data_section(highlights: Mapping[str, Mapping[str, Any]]) -> _Section:
    """The pretraining data per split: sizes, lengths, SOP balance and masking shares."""
    heading = "Pretraining data (datagen statistics)"
    if not highlights:
        return heading, [f"{STATS_FILE} not found."]
    rows = [[split, _int_text(h.get("instances")), _int_text(h.get("tokens")), number_text(h.get("length_mean")),
             _share(h.get("short_target_share")), _share(h.get("sop_label_1_share")),
             _share(h.get("masked_token_share")), number_text(h.get("masked_per_instance"), 2),
             _shares_text(h.get("replacement_shares")), _shares_text(h.get("ngram_span_shares"))]
            for split, h in highlights.items()]
    return heading, [("table", ["split", "instances", "tokens", "mean length", "short-target share",
                                "SOP label 1 (swapped)", "masked share", "masked / instance",
                                "replacement (mask/random/keep)", "n-gram spans"], rows)]


def _artifacts_section(artifact_ids: Mapping[str, Any]) -> Optional[_Section]:
    """The MLMD ids (and types and URIs) of the artifacts the report was built from: the local store's integer ids,
    or the backend's resource names on Kubeflow / Vertex AI (:mod:`components.backend_names`)."""
    if not artifact_ids:
        return None
    rows = []
    for name, value in sorted(artifact_ids.items()):
        if isinstance(value, Mapping):
            rows.append([name, str(value.get("id", NONE_TEXT)), str(value.get("type", "")), str(value.get("uri", ""))])
        else:
            rows.append([name, str(value), "", ""])
    return "MLMD artifacts", [("table", ["artifact", "id", "type", "uri"], rows)]


def _build_sections(cfg_d, row, tasks, results, params, export_info, highlights, artifact_ids, curves_ok,
                    history_path, reference: str = "albert-base-v1") -> List[_Section]:
    """The report's sections in order, each built by its own function; empty ones are left out."""
    sections = [_table2_section(row, reference), _glue_section(tasks, results), _squad_race_section(tasks),
                _gain_section(results), _init_check_section(results), _protocol_section(results, cfg_d),
                _model_section(params, export_info, curves_ok, history_path), _data_section(highlights),
                _artifacts_section(artifact_ids)]
    return [s for s in sections if s is not None]


def _gains(results: Mapping[str, Mapping[str, Any]]) -> Dict[str, Dict[str, Dict[str, Any]]]:
    """{baseline name: {task: comparison}} over every benchmark result (``gain_over_baseline`` of metrics.json)."""
    out: Dict[str, Dict[str, Dict[str, Any]]] = {}
    for _, r in sorted(results.items()):
        for name, per_task in ((r or {}).get("gain_over_baseline") or {}).items():
            out.setdefault(name, {}).update(per_task or {})
    return out


def _init_checks(results: Mapping[str, Mapping[str, Any]]) -> Dict[Tuple[str, str], Dict[str, Any]]:
    out: Dict[Tuple[str, str], Dict[str, Any]] = {}
    for bench, r in (results or {}).items():
        r = r or {}
        if r.get("init_check", {}).get("runs_checked"):
            out[(bench, "pretrained")] = r["init_check"]
        for name, arm in (r.get("baselines") or {}).items():
            if (arm.get("init_check") or {}).get("runs_checked"):
                out[(bench, name)] = arm["init_check"]
    return out


def _single_class_text(counts: Optional[Mapping[str, Any]]) -> str:
    counts = counts or {}
    if counts.get("pretrained") is None and counts.get("baseline") is None:
        return "—"
    return " / ".join("—" if counts.get(k) is None else str(counts[k]) for k in ("pretrained", "baseline"))


def _md_cell(text: str) -> str:
    return str(text).replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def _render_md(title: str, sections) -> str:
    lines = [f"# {title}", ""]
    for heading, blocks in sections:
        lines += [f"## {heading}", ""]
        for block in blocks:
            if isinstance(block, str):
                lines += [block, ""]
            elif block[0] == "table":
                _, header, rows = block
                lines.append("| " + " | ".join(_md_cell(h) for h in header) + " |")
                lines.append("|" + "|".join("---" for _ in header) + "|")
                for r in rows:
                    lines.append("| " + " | ".join(_md_cell(c) for c in r) + " |")
                lines.append("")
            elif block[0] == "image":
                lines += [f"![{block[2]}]({block[1]})", ""]
    return "\n".join(lines)


_CSS = ("body{font-family:system-ui,sans-serif;max-width:1200px;margin:2em auto;padding:0 1em;color:#222}"
        "table{border-collapse:collapse;margin:0.5em 0 1em}th,td{border:1px solid #ccc;padding:4px 8px;"
        "text-align:left;vertical-align:top}th{background:#f3f3f3}tr.paper td{font-style:italic;color:#555}"
        "img{max-width:100%}")


_REFERENCE_LABELS = {row["label"] for row in REFERENCE_ROWS.values()}  # rows shown in italics


def _render_html(title: str, sections, png: Optional[bytes]) -> str:
    e = html.escape
    out = ["<!DOCTYPE html>", "<html lang=\"en\"><head><meta charset=\"utf-8\">",
           f"<title>{e(title)}</title><style>{_CSS}</style></head><body>", f"<h1>{e(title)}</h1>"]
    for heading, blocks in sections:
        out.append(f"<h2>{e(heading)}</h2>")
        for block in blocks:
            if isinstance(block, str):
                out.append(f"<p>{e(block)}</p>")
            elif block[0] == "table":
                _, header, rows = block
                out.append("<table><thead><tr>" + "".join(f"<th>{e(str(h))}</th>" for h in header) + "</tr></thead><tbody>")
                for r in rows:
                    cls = " class=\"paper\"" if str(r[0]) in _REFERENCE_LABELS else ""
                    out.append(f"<tr{cls}>" + "".join(f"<td>{e(str(c))}</td>" for c in r) + "</tr>")
                out.append("</tbody></table>")
            elif block[0] == "image" and png:
                data = base64.b64encode(png).decode("ascii")
                out.append(f"<img alt=\"{e(block[2])}\" src=\"data:image/png;base64,{data}\">")
    out.append("</body></html>")
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------------------------------------
# Entry point


def write_report(out_dir: str, cfg, results: Mapping[str, Mapping[str, Any]], model_dir: Optional[str],
                 model_run_dir: Optional[str], stats_dir: Optional[str],
                 artifact_ids: Optional[Mapping[str, Any]] = None) -> Dict[str, Any]:
    """Write report.md / report.html / results.json (+ pretraining_curves.png) into ``out_dir``.

    ``results``: {name: metrics dict as written by ``run_benchmark.run_benchmark``} (e.g. glue/squad/race);
    ``model_dir``: the Trainer's model artifact (``albert/albert_config.json``,
    ``albert/export_info.json``); ``model_run_dir``: holds ``train_history.jsonl``;
    ``stats_dir``: holds the datagen ``stats.json``; ``artifact_ids``: {name: id or {"id","type","uri"}}.
    Returns the summary (also in results.json): ``avg`` (None if no Table-2 column), ``table2``,
    ``missing_columns``, ``num_parameters``, ``files``.
    """
    makedirs(out_dir)
    results = dict(results or {})
    title, cfg_d = _title_and_settings(cfg, model_run_dir)
    tasks = _all_tasks(results)
    row = table2_row(tasks)
    params = _parameter_count(model_dir)
    export_info = read_json(join(model_dir, ALBERT_DIR, EXPORT_INFO_FILE)) if model_dir else None
    stats = read_json(join(stats_dir, STATS_FILE)) if stats_dir else None
    highlights = _datagen_highlights(stats)
    history = _read_history(model_run_dir)
    history_path = join(model_run_dir, HISTORY_FILE) if model_run_dir else None
    curves_path = join(out_dir, CURVES_PNG)
    sentence = str((cfg_d.get("train") or {}).get("sentence_task") or "sop").upper()
    curves_ok = _plot_curves(history, curves_path, sentence) if history else False
    png = read_bytes(curves_path) if curves_ok else None

    reference = (getattr(getattr(cfg, "report", cfg), "reference", None) if not isinstance(cfg, dict)
                 else cfg.get("reference")) or "albert-base-v1"
    sections = _build_sections(cfg_d, row, tasks, results, params, export_info, highlights, artifact_ids or {},
                               curves_ok, history_path, reference)
    write(join(out_dir, REPORT_MD), _render_md(title, sections))
    write(join(out_dir, REPORT_HTML), _render_html(title, sections, png))

    files = {"report_md": REPORT_MD, "report_html": REPORT_HTML, "results_json": RESULTS_JSON,
             "pretraining_curves": CURVES_PNG if curves_ok else None}
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
        "num_parameters": params["counts"]["total"] if params else None,
        "parameters": params["counts"] if params else None,
        "pretraining_eval": (export_info or {}).get("eval_metrics"),
        "datagen": highlights,
        "baselines": _gains(results),
        "init_check": {f"{bench}/{arm}": c for (bench, arm), c in sorted(_init_checks(results).items())},
        "artifact_ids": dict(artifact_ids or {}),
        "files": files,
    }
    payload = {"summary": summary, "results": results, "config": cfg_d}
    write(join(out_dir, RESULTS_JSON), json.dumps(json_safe(payload), indent=2, sort_keys=True, allow_nan=False))
    return json_safe(summary)

