"""What the report says: one function per section, from the inputs and the scores to a :class:`.document.Document`.

A section function returns None when its section has nothing to show; :func:`build_document` keeps the others,
in the report's order: Table 2, the tasks by family (GLUE, CLUE, tasks by spec, cross-lingual, question answering,
multiple choice: :data:`.scores.FAMILIES`), gain over no pretraining, step-0 check, protocol, pretrained model,
data gate, pretraining data, data read, MLMD artifacts.
"""
from __future__ import annotations

import json
from typing import Any, List, Mapping, Optional

from components.report import data_gate as gate_text
from components.report.curves import CURVES_PNG, DATA_GATE_PNG
from components.report.document import Block, Document, Image, Section, Table
from components.report.inputs import ParameterCount, ReportInputs
from components.report.language_table import languages_section
from components.report.scores import FAMILIES, all_tasks, families, gains, init_checks, suite_row
from config.references import REFERENCE_ROWS
from components.evaluation.benchmark_config import SQUAD_TASKS
from trainer.files import ALBERT_DIR, CONFIG_FILE, EXPORT_INFO_FILE, STATS_FILE
from trainer.formatting import NONE_TEXT, beyond_spread_text, number, number_text, spread_text

__all__ = ["table2_section", "suite_section", "glue_section", "classification_section", "cross_lingual_section",
           "qa_section", "multiple_choice_section", "family_sections", "gain_section", "init_check_section",
           "protocol_section", "model_section", "data_gate_section", "data_section", "data_read_section",
           "artifacts_section",
           "build_document"]

GLUE_ORDER = ("CoLA", "SST-2", "MRPC", "STS-B", "QQP", "MNLI-m", "MNLI-mm", "QNLI", "RTE", "WNLI")
GLUE_METRIC_COLUMNS = ("mcc", "accuracy", "f1", "pearson", "spearman", "score")
_REFERENCE_LABELS = frozenset(row["label"] for row in REFERENCE_ROWS.values())  # rows shown in italics


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


def table2_section(row: Mapping[str, Any], reference: str) -> Section:
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
    blocks: List[Block] = [Table(header, [this, published])]
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
    return Section("Results in the shape of the paper's Table 2", blocks)


def suite_section(suite: Mapping[str, Any]) -> Optional[Section]:
    """Table 2's shape for the tasks beyond English the run scored (:func:`.scores.suite_row`); None without any."""
    if not suite["columns"]:
        return None

    def cell(col):
        v = suite["cells"][col]
        return f"{number_text(v['f1'])}/{number_text(v['exact_match'])}" if isinstance(v, dict) else number_text(v)

    header = ["Model"] + [f"{c} F1/EM" if isinstance(suite["cells"][c], dict) else c for c in suite["columns"]]
    table = Table(header + ["Avg"], [["This run"] + [cell(c) for c in suite["columns"]]
                                     + [number_text(suite["avg"])]])
    return Section("Results in the shape of the paper's Table 2: tasks beyond English", [
        table, "Avg = mean of the columns' headline scores: a classification task's score (accuracy for CLUE's), "
               "C3's accuracy over all questions, CMRC2018's mean of F1 and EM (its official AVERAGE, the "
               "character-level scores). Percentages on the dev sets this run used; no published row is shown "
               "beside them."])


def _runs_cells(m: Mapping[str, Any]) -> List[str]:
    runs = m.get("run_scores")
    return [str(len(runs)) if isinstance(runs, list) else "1", str(m.get("selected_step", NONE_TEXT)),
            f"{_int_text(m.get('num_train'))} / {_int_text(m.get('num_dev'))}"]


def _metric_columns(names, tasks) -> List[str]:
    return [m for m in GLUE_METRIC_COLUMNS if any(m in tasks[t] for t in names)]


def _classification_table(names, tasks) -> Table:
    metric_cols = _metric_columns(names, tasks)
    rows = [[t] + [number_text(tasks[t].get(c)) if c in tasks[t] else "" for c in metric_cols] + _runs_cells(tasks[t])
            for t in names]
    return Table(["Task"] + metric_cols + ["runs (median of)", "selected step", "train / dev examples"], rows)


_CLASSIFICATION_NOTES = {
    "glue": "score = the task's headline (CoLA MCC; MRPC/QQP mean of F1 and accuracy; STS-B mean of Pearson and "
            "Spearman; others accuracy); MCC and correlations ×100.",
    "clue": "CLUE's classification tasks, run by the GLUE node; score = accuracy, CLUE's metric.",
    "spec": "Tasks described by benchmarks.tasks, run by the GLUE node: score = the mean of the task's metrics "
            "(macro_f1: the unweighted mean of every class's F1; MCC and correlations ×100).",
}


def classification_section(family: str, tasks: Mapping[str, Mapping[str, Any]]) -> Optional[Section]:
    """The tasks of one classification family (``glue``, ``clue`` or ``spec``): their metrics, runs, selected step
    and sizes."""
    names = families(tasks).get(family, [])
    if family == "glue":
        names = [t for t in GLUE_ORDER if t in names] + [t for t in names if t not in GLUE_ORDER]
    if not names:
        return None
    return Section(f"{FAMILIES[family]} (dev)", [_classification_table(names, tasks), _CLASSIFICATION_NOTES[family]])


def skipped_text(results: Mapping[str, Any]) -> Optional[str]:
    """The tasks a benchmark node skipped and why, in one line (None: none)."""
    skipped = {}
    for r in results.values():
        skipped.update((r or {}).get("skipped", {}) or {})
    if not skipped:
        return None
    return "Skipped: " + "; ".join(f"{k} ({v})" for k, v in sorted(skipped.items())) + "."


def glue_section(tasks: Mapping[str, Mapping[str, Any]], results: Mapping[str, Any]) -> Optional[Section]:
    """GLUE's tasks (:func:`classification_section`), and the tasks skipped and why."""
    section = classification_section("glue", tasks)
    skipped = skipped_text(results)
    if section is not None and skipped:
        section.blocks.append(skipped)
    return section


def cross_lingual_section(tasks: Mapping[str, Mapping[str, Any]]) -> Optional[Section]:
    """Each cross-lingual task: one row per language's dev set (the training language first, marked), then their
    mean."""
    means = [t for t in families(tasks).get("cross_lingual", []) if "languages" in tasks[t]]
    if not means:
        return None
    blocks: List[Block] = []
    for task in means:
        mean = tasks[task]
        rows_of = [n for n in mean.get("language_results") or [] if n in tasks]
        metric_cols = _metric_columns(rows_of + [task], tasks)
        rows = []
        for name in rows_of:
            m = tasks[name]
            code = (m.get("cross_lingual") or {}).get("language", name)
            label = f"{code} (fine-tuned in)" if code == mean.get("train_language") else code
            rows.append([task, label] + [number_text(m.get(c)) if c in m else "" for c in metric_cols]
                        + _runs_cells(m))
        rows.append([task, f"mean of {len(rows_of)}"] + [number_text(mean.get(c)) if c in mean else ""
                                                          for c in metric_cols] + _runs_cells(mean))
        blocks.append(Table(["Task", "language"] + metric_cols + ["runs (median of)", "selected step",
                                                                  "train / dev examples"], rows))
    blocks.append("Fine-tuned once, in the training language, and scored on every language's dev set (zero-shot "
                  "transfer to the others); checkpoints and the median run are chosen on the training language's "
                  "dev set. The mean is over the languages, each language's score weighted equally; its result "
                  "(and a baseline's gain) is under the task's own name, each language's under <task>-<code>.")
    return Section(f"{FAMILIES['cross_lingual']} (dev)", blocks)


def qa_section(tasks: Mapping[str, Mapping[str, Any]]) -> Optional[Section]:
    """Extractive question answering (SQuAD, CMRC2018): F1 and EM, SQuAD 2.0's answerable / unanswerable split
    and threshold."""
    rows = []
    for t in families(tasks).get("qa", []):
        m = tasks[t]
        detail = f"F1 {number_text(m.get('f1'))}, EM {number_text(m.get('exact_match'))}"
        if t == SQUAD_TASKS["2.0"]:
            detail += (f", HasAns F1 {number_text(m.get('HasAns_f1'))}, NoAns F1 {number_text(m.get('NoAns_f1'))}, "
                       f"null threshold {number_text(m.get('null_threshold'), 3)}")
        rows.append([t, detail, number_text(m.get("score")), str(m.get("selected_step", NONE_TEXT)),
                     f"{_int_text(m.get('num_train'))} / {_int_text(m.get('num_dev'))}"])
    if not rows:
        return None
    return Section(f"{FAMILIES['qa']} (dev)", [
        Table(["Task", "metrics", "headline", "selected step", "train / dev examples"], rows),
        "headline = the mean of F1 and EM: SQuAD's official word-level scores; CMRC2018's character-level ones "
        "(its official AVERAGE)."])


def multiple_choice_section(tasks: Mapping[str, Mapping[str, Any]]) -> Optional[Section]:
    """Multiple choice (RACE, C3): accuracy over all questions, and by level or subset."""
    rows = []
    for t in families(tasks).get("multiple_choice", []):
        m = tasks[t]
        if t == "RACE":
            detail = (f"middle {number_text(m.get('middle'))}, high {number_text(m.get('high'))}, "
                      f"all {number_text(m.get('all'))}")
        else:
            detail = (f"dialogue {number_text(m.get('d'))}, mixed-genre {number_text(m.get('m'))}, "
                      f"all {number_text(m.get('all'))}")
        rows.append([t, detail, number_text(m.get("score")), str(m.get("selected_step", NONE_TEXT)),
                     f"{_int_text(m.get('num_train'))} / {_int_text(m.get('num_dev'))}"])
    if not rows:
        return None
    return Section(f"{FAMILIES['multiple_choice']} (dev)", [
        Table(["Task", "accuracy", "headline", "selected step", "train / dev examples"], rows),
        "headline = accuracy over all questions."])


def family_sections(tasks: Mapping[str, Mapping[str, Any]], results: Mapping[str, Any]) -> List[Section]:
    """The tasks' sections, one per family present (:data:`.scores.FAMILIES`' order); the skipped tasks are named
    in the first classification section (GLUE's where it has one)."""
    out = [s for s in (classification_section("glue", tasks), classification_section("clue", tasks),
                       classification_section("spec", tasks), cross_lingual_section(tasks)) if s is not None]
    skipped = skipped_text(results)
    if skipped and out:
        out[0].blocks.append(skipped)
    return out + [s for s in (qa_section(tasks), multiple_choice_section(tasks)) if s is not None]


def gain_section(results: Mapping[str, Any]) -> Optional[Section]:
    """Pretrained arm against each baseline arm, per task, over the seeds (``benchmarks.baselines``)."""
    per_baseline = gains(results)
    if not per_baseline:
        return None
    rows = []
    for name, per_task in per_baseline.items():
        for task, g in per_task.items():
            pre, base, paired = g["pretrained"], g["baseline"], g["gain_paired"]
            rows.append([task, name, spread_text(pre), spread_text(base), number_text(g.get("gain_median"), signed=True),
                         spread_text(paired, signed=True), beyond_spread_text(g), str(pre.get("n") or NONE_TEXT),
                         number_text(g.get("majority_baseline")), _single_class_text(g.get("single_class_runs"))])
    return Section("Gain over no pretraining", [
        Table(["Task", "baseline", "pretrained: median [min–max]", "baseline: median [min–max]",
               "gain (median − median)", "paired gain per seed: median [min–max]", "beyond seed spread",
               "seeds", "majority-class floor", "one-class runs (pretrained / baseline)"], rows),
        "Both arms fine-tune the same architecture with the same hyper-parameters, seeds and protocol; "
        "random_init starts from random weights instead of the pretrained encoder. Values are the task's "
        "headline score over the N seeds (not the selected run); \"beyond seed spread\" = the worst "
        "pretrained seed beats the best baseline seed, which one seed per arm cannot show (\"cannot tell\"). "
        "\"Majority-class floor\" is the dev score of always "
        "predicting the training set's most frequent label (RACE: letter); a run counted under \"one-class "
        "runs\" predicted a single class for all of dev, so it scores that floor whichever encoder it started "
        "from, and a task where every run of both arms does compares nothing."])


def init_check_section(results: Mapping[str, Any]) -> Optional[Section]:
    """Each arm's step-0 proof that fine-tuning started from the weights it claims."""
    checks = init_checks(results)
    if not checks:
        return None
    rows = [[bench, arm, str(c.get("runs_checked", NONE_TEXT)), str(c.get("variables_compared", NONE_TEXT)),
             _int_text(c.get("values_compared")), number_text(c.get("max_abs_diff"), 3),
             str(c.get("equal_informative_variables_max", NONE_TEXT)),
             "passed" if c.get("passed") else "FAILED"] for (bench, arm), c in sorted(checks.items())]
    return Section("Fine-tuning starts from the pretrained encoder (step-0 check)", [
        Table(["Benchmark", "arm", "runs", "variables compared", "values", "max abs diff vs checkpoint",
               "informative variables equal to checkpoint", "check"], rows),
        "Before the first fine-tuning step every encoder variable is compared with the exported "
        "<albert_dir>/encoder/ckpt: the pretrained arm must equal it exactly (max abs diff 0); the "
        "random_init arm must differ in every non-constant variable. A failure stops the run."])


def protocol_section(results: Mapping[str, Any], cfg_d: Mapping[str, Any]) -> Section:
    """How each benchmark was run (seeds, aggregation, checkpoint selection, hyper-parameters) and pretrained."""
    blocks: List[Block] = []
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
        blocks.append(Table(["Benchmark", "seeds", "aggregation", "checkpoint selection", "dev cap",
                                 "hyper-parameters", "pretrained encoder"], rows))
        blocks.append("Optimizer: AdamW (weight decay 0.01, no decay on LayerNorm/bias), global-norm clip 1.0, "
                      "linear warmup then linear decay to 0.")
    else:
        blocks.append("No benchmark results were given.")
    if cfg_d:
        blocks.append(f"Pretraining: seed {cfg_d.get('seed', NONE_TEXT)}, model "
                      f"{((cfg_d.get('model') or {}).get('size')) or NONE_TEXT}, "
                      f"{((cfg_d.get('train') or {}).get('num_train_steps')) or NONE_TEXT} steps.")
    return Section("Protocol", blocks)


def model_section(params: Optional[ParameterCount], export_info: Optional[Mapping[str, Any]], curves_ok: bool,
                  history_path: Optional[str], source: Optional[Mapping[str, Any]] = None) -> Section:
    """Where the model came from (a benchmark-only run's ``source``), parameter count by part, the pretraining eval
    metrics and facts, and the curves."""
    blocks: List[Block] = []
    if source:
        from trainer.base_model import source_text  # lazy: on one branch (adds nothing)

        blocks.append(f"Model source: {source_text(source)}. This run did not pretrain it (a benchmark-only run, "
                      "mode=benchmark): the pretraining facts below are the model's own, where it recorded them.")
    if params:
        c = params.counts
        blocks.append(Table(["part", "parameters"],
                       [[k, _int_text(c.get(k))] for k in ("embedding", "encoder", "pooler", "total")]))
        blocks.append(f"Total {c['total'] / 1e6:.2f}M parameters (embeddings + encoder + pooler, heads excluded; "
                      f"the paper's Table 1 counts the same parts), config {json.dumps(params.config)}.")
    else:
        blocks.append(f"Parameter count unavailable (no {ALBERT_DIR}/{CONFIG_FILE} in the model artifact).")
    if export_info:
        ev = export_info.get("eval_metrics") or {}
        if ev:
            blocks.append(Table(["pretraining eval metric (final)", "value (accuracies as fractions)"],
                           [[k, number_text(v, 4)] for k, v in sorted(ev.items())]))
        facts = [f"{k} {export_info[k]}" for k in ("final_step", "precision", "num_replicas") if k in export_info]
        if facts:
            blocks.append("Pretraining: " + ", ".join(facts) + ".")
        base = export_info.get("init_from")
        if base:  # continued pretraining (train.init_from)
            version = f"version {base['version']} at " if base.get("version") is not None else ""
            blocks.append(f"Continued from {version}{base['location']} ({base.get('steps')} steps, "
                          f"{base.get('restored')} restored); {export_info.get('total_steps')} steps in all.")
    else:
        blocks.append(f"Pretraining {EXPORT_INFO_FILE} not found.")
    if curves_ok:
        blocks.append(Image(CURVES_PNG, "Pretraining curves: MLM and SOP loss and accuracy vs step"))
    elif source:
        blocks.append("Pretraining curves: none (no pretraining in this run).")
    else:
        blocks.append(f"Pretraining curves: no history found ({history_path or 'no model_run dir given'}).")
    return Section("Pretrained model", blocks)


def data_gate_section(gate: Optional[Mapping[str, Any]], benchmark_only: bool = False,
                      plot_ok: bool = False) -> Section:
    """The data gate's result for the span pretrained on (:mod:`.data_gate`): accepted or not, the statistics beside
    the baseline's, their distributions plotted, every check, and the benchmarks' contamination; or that the run had
    no gate."""
    heading = "Data gate"
    if gate is None:
        return Section(heading, [gate_text.no_gate_text(benchmark_only)])
    plot = Image(DATA_GATE_PNG, "Data gate: document lengths and token frequencies, this span over its baseline")
    return Section(heading, gate_text.section_blocks(gate, plot if plot_ok else None))


def data_section(highlights: Mapping[str, Mapping[str, Any]], benchmark_only: bool = False) -> Section:
    """The pretraining data per split: sizes, lengths, SOP balance and masking shares."""
    heading = "Pretraining data (datagen statistics)"
    if benchmark_only:
        return Section(heading, ["None in this run: a benchmark-only run has no corpus, vocabulary or data nodes."])
    if not highlights:
        return Section(heading, [f"{STATS_FILE} not found."])
    rows = [[split, _int_text(h.get("instances")), _int_text(h.get("tokens")), number_text(h.get("length_mean")),
             _share(h.get("short_target_share")), _share(h.get("sop_label_1_share")),
             _share(h.get("masked_token_share")), number_text(h.get("masked_per_instance"), 2),
             _shares_text(h.get("replacement_shares")), _shares_text(h.get("ngram_span_shares"))]
            for split, h in highlights.items()]
    return Section(heading, [Table(["split", "instances", "tokens", "mean length", "short-target share",
                                    "SOP label 1 (swapped)", "masked share", "masked / instance",
                                    "replacement (mask/random/keep)", "n-gram spans"], rows)])


def data_read_section(data_read: Mapping[str, Mapping[str, Any]]) -> Optional[Section]:
    """What the run read of each raw-data location, resolved when it started: the span(s), the folder, and the
    fingerprint of its files (names, sizes, modification times), which a folder changed in place changes."""
    if not data_read:
        return None
    rows = [[key, str(d.get("location", "")), ", ".join(map(str, d.get("spans") or [])) or NONE_TEXT,
             str(d.get("uri", "")) + ("" if d.get("folders") in (None, [""]) else f" ({', '.join(d['folders'])})"),
             _int_text(d.get("files")), _int_text(d.get("bytes")), str(d.get("fingerprint", ""))[:12]]
            for key, d in data_read.items()]
    return Section("Data read", [Table(["data", "location", "span(s)", "folder", "files", "bytes", "fingerprint"],
                                       rows)])


def artifacts_section(artifact_ids: Mapping[str, Any]) -> Optional[Section]:
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
    return Section("MLMD artifacts", [Table(["artifact", "id", "type", "uri"], rows)])


def _single_class_text(counts: Optional[Mapping[str, Any]]) -> str:
    counts = counts or {}
    if counts.get("pretrained") is None and counts.get("baseline") is None:
        return "—"
    return " / ".join("—" if counts.get(k) is None else str(counts[k]) for k in ("pretrained", "baseline"))


def build_document(inputs: ReportInputs, row: Mapping[str, Any], curves_ok: bool,
                   gate_plot_ok: bool = False) -> Document:
    """The report: its title and its non-empty sections in order (``row``: :func:`.scores.table2_row`;
    ``gate_plot_ok``: the data gate's plot was drawn)."""
    tasks = all_tasks(inputs.results)
    suite = suite_row(tasks)
    # Table 2 for the English suite; a run of tasks beyond English alone shows their row in its shape instead.
    english = table2_section(row, inputs.reference) if row["present"] or not suite["columns"] else None
    sections = [english, suite_section(suite), *family_sections(tasks, inputs.results),
                gain_section(inputs.results), init_check_section(inputs.results),
                protocol_section(inputs.results, inputs.settings),
                model_section(inputs.parameters, inputs.export_info, curves_ok, inputs.history_path, inputs.source),
                data_gate_section(inputs.data_gate, inputs.source is not None, gate_plot_ok),
                data_section(inputs.datagen, inputs.source is not None), languages_section(inputs.languages),
                data_read_section(inputs.data_read),
                artifacts_section(inputs.artifact_ids)]
    return Document(inputs.title, [s for s in sections if s is not None], _REFERENCE_LABELS)
