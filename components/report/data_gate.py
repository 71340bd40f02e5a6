"""The data gate's result in words and tables, for the report's "Data gate" section and the model card.

Everything here reads the gate's own ``gate.json`` (:func:`components.datagate.datagate_result.summarize`), under the gate's
names: the checks by their ``gate.*`` setting, the statistics by the names ``SpanStats.summary`` gives them, the
benchmarks by their data keys. Pure: a summary in, text and :class:`.document.Table` out. The plot is
:func:`.curves.plot_data_gate`.

:func:`brief` is what ``results.json`` keeps of it (``summary.data_gate``: ``gate.json`` less the statistics), which
the model card renders with the same functions.
"""
from __future__ import annotations

import math
from typing import Any, Dict, List, Mapping, Optional

from components.datagate.contamination import NGRAM_SIZE
from components.report.document import Block, Table
from trainer.formatting import NONE_TEXT

__all__ = ["NO_GATE", "brief", "verdict", "no_gate_text", "statistics_table", "checks_table", "contamination_table",
           "contamination_text", "accepted_failures_table"]

NO_GATE = {"benchmark_only": "a benchmark-only run (mode=benchmark) has no corpus",
           "off": "the gate is off (gate.enabled=false)"}


def no_gate_text(benchmark_only: bool) -> str:
    """What the report says when the run had no data gate."""
    return (f"No data gate in this run: {NO_GATE['benchmark_only' if benchmark_only else 'off']}, so the pretraining "
            "data was neither measured nor checked, and the benchmarks' contamination was not measured.")


def brief(gate: Optional[Mapping[str, Any]]) -> Optional[Dict[str, Any]]:
    """``results.json``'s ``summary.data_gate``: ``gate.json`` without the statistics (the span's and the baseline's,
    which the report shows and plots); None without a gate."""
    if gate is None:
        return None
    out = {k: v for k, v in gate.items() if k != "statistics"}
    if out.get("baseline"):
        out["baseline"] = {k: v for k, v in out["baseline"].items() if k != "statistics"}
    return out


def _g(x: Any) -> str:
    """A measured value: 4 significant digits (an integer, or a value of 10,000 or more, in full), or the text of
    a non-finite one."""
    if isinstance(x, str) or x is None:
        return NONE_TEXT if x is None else x
    if isinstance(x, int) and not isinstance(x, bool):
        return f"{x:,}"
    if not math.isfinite(x):
        return str(x)
    return f"{x:,.0f}" if abs(x) >= 10_000 else f"{x:.4g}"


def _pct(x: float) -> str:
    return f"{100 * x:.2f}%"


def verdict(gate: Mapping[str, Any]) -> str:
    """One sentence: the span passed, or failed and was accepted knowingly (``gate.accept``), or failed."""
    span, checks, failed = gate["span"], len(gate["checks"]), list(gate["failed"])
    if gate["passed"]:
        return f"Span {span} passed all {checks} checks of the data gate ({gate['baseline_note']})."
    names = ", ".join(failed)
    if gate["accepted"]:
        return (f"Span {span} FAILED {len(failed)} of {checks} checks of the data gate ({names}) and was accepted "
                f"knowingly with {gate['accepted_by']}: the model was pretrained on a span the gate did not pass "
                f"({gate['baseline_note']}).")
    return (f"Span {span} FAILED {len(failed)} of {checks} checks of the data gate ({names}) and was not accepted "
            f"(gate.accept={gate.get('accept')}).")


def statistics_table(statistics: Mapping[str, Any], baseline: Optional[Mapping[str, Any]]) -> Table:
    """The span's statistics (``SpanStats.summary``) beside the baseline's, one row per statistic under its name;
    language mix as shares of the characters."""
    span = statistics["span"]
    columns = [statistics] + ([baseline] if baseline else [])
    header = ["statistic", f"span {span}"] + ([f"span {baseline['span']} (baseline)"] if baseline else [])
    rows: List[List[str]] = []
    for name in ("documents", "characters", "words", "tokens", "distinct_tokens", "tokens_per_document"):
        rows.append([name] + [_g(s.get(name)) for s in columns])
    for name in statistics["ratios"]:
        rows.append([name] + [_g((s.get("ratios") or {}).get(name)) for s in columns])
    rows.append(["duplicate_document_share"] + [_g(s.get("duplicate_document_share")) for s in columns])
    languages = sorted({lang for s in columns for lang in s.get("characters_by_language") or {}})
    for lang in languages:
        cells = []
        for s in columns:
            by = s.get("characters_by_language") or {}
            total = sum(by.values())
            cells.append(_pct(by.get(lang, 0) / total) if total else NONE_TEXT)
        rows.append([f"characters_by_language.{lang}"] + cells)
    return Table(header, rows)


def _limit(check: Mapping[str, Any]) -> str:
    return f"{'<=' if check['bound'] == 'max' else '>='} {_g(check['limit'])}"


def checks_table(gate: Mapping[str, Any]) -> Table:
    """Every check the span had: its kind, value, limit, margin (room left before the limit; < 0: failed) and
    verdict."""
    def result(c):
        if c["passed"]:
            return "passed"
        return "FAILED, accepted" if gate["accepted"] else "FAILED"

    return Table(["check", "kind", "value", "limit", "margin", "result"],
                 [[c["name"], c["kind"], _g(c["value"]), _limit(c), _g(c["margin"]), result(c)]
                  for c in gate["checks"]])


def accepted_failures_table(gate: Mapping[str, Any]) -> Optional[Table]:
    """The failed checks of a span accepted knowingly (the card's), None when none failed."""
    failed = [c for c in gate["checks"] if not c["passed"]]
    if not failed:
        return None
    return Table(["failed check", "value", "limit", "margin"],
                 [[c["name"], _g(c["value"]), _limit(c), _g(c["margin"])] for c in failed])


def _spans(spans) -> str:
    return f"span{'s' if len(spans) > 1 else ''} {', '.join(map(str, spans))}"


def contamination_table(gate: Mapping[str, Any]) -> Optional[Table]:
    """Per benchmark (its data key) and over all: the dev passages long enough to have an n-gram, those contaminated
    by this span, and those contaminated by any span pretrained on so far (the total); None when not measured."""
    c = gate.get("contamination")
    if not c:
        return None
    span = gate["span"]

    def row(name, r):  # a result written before the total was kept (a cached one) reads as this span's alone
        return [name, f"{r['passages']:,}", f"{r['short']:,}", f"{len(r['contaminated']):,}", _pct(r["share"]),
                f"{len(r.get('total', r['contaminated'])):,}", _pct(r.get("total_share", r["share"]))]

    rows = [row(name, r) for name, r in sorted((c.get("benchmarks") or {}).items())]
    if len(rows) != 1:
        rows.append(row("all", c))
    return Table(["benchmark", f"dev passages (≥ {NGRAM_SIZE} tokens)", "too short", f"contaminated by span {span}",
                  "share", f"contaminated by {_spans(_total_spans(gate))} (total)", "share (total)"], rows)


def _total_spans(gate: Mapping[str, Any]) -> List[int]:
    return list((gate.get("contamination") or {}).get("total_spans") or [gate["span"]])


def contamination_text(gate: Mapping[str, Any]) -> str:
    """What the contamination table counts, and its check's limit; or that it was not measured."""
    c = gate.get("contamination")
    if not c:
        return ("Benchmark contamination: not measured (no reading benchmark's data, SQuAD or RACE, in this run).")
    check = next((ch for ch in gate["checks"] if ch["kind"] == "contamination"), None)
    limit = f" The check {check['name']} bounds the share over all at {_limit(check)}." if check else ""
    spans = _total_spans(gate)
    if spans == [gate["span"]]:
        total = (f"here span {gate['span']} alone: no earlier span's result was carried forward (no baseline, or it "
                 "measured no contamination)")
    else:
        total = (f"{_spans(spans)}: this span's passages together with those its baseline's result counted, carried "
                 "forward from span to span through the gate")
    return (f"Benchmark contamination (GPT-3's measure): a dev passage is contaminated when one of its "
            f"{NGRAM_SIZE}-grams of content tokens occurs in the pretraining text; a passage of fewer tokens is "
            f"left out. \"Total\" is over every span the pipeline pretrained on so far, {total}.{limit}")


def section_blocks(gate: Mapping[str, Any], plot: Optional[Block] = None) -> List[Block]:
    """The report's "Data gate" section: the verdict, the statistics beside the baseline's, the plot, the checks,
    and the contamination per benchmark."""
    blocks: List[Block] = [verdict(gate)]
    statistics = gate.get("statistics")
    if statistics:
        baseline = (gate.get("baseline") or {}).get("statistics")
        blocks.append(statistics_table(statistics, baseline))
        blocks.append("Statistics of the whole span as the gate measured them (components/datagate/document_stats.py "
                      "defines each); duplicate_document_share is of the gate's sample of documents"
                      + (f"; beside them the baseline's, span {baseline['span']}, the last span that went through "
                         "the gate." if baseline else "; no baseline to show beside them."))
    if plot is not None:
        blocks.append(plot)
    blocks.append(checks_table(gate))
    table = contamination_table(gate)
    if table is not None:
        blocks.append(table)
    blocks.append(contamination_text(gate))
    return blocks
