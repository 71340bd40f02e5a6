"""The data gate's result, and the verdict on it: pure and light (no Beam, TFX or TensorFlow), so the DataGate and
DataGateCheck nodes, the baseline resolver and ``plan`` all read one definition (issue 55; docs/data.md, "Data gate").

* :func:`gate_span`: the span a Documents artifact holds, from the ``data_snapshot`` CorpusGen records on it;
* :func:`summarize`: ``gate.json``, the result's summary (every check's value and limit, passed, accepted, baseline);
* :func:`select_inputs`: which earlier results are a span's baseline and its earlier acceptance;
* :func:`verdict`: the DataGateCheck node's decision, :class:`DataGateError` (one line per failed check) when the
  span failed and was not accepted.
"""
from __future__ import annotations

import hashlib
import json
import math
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

from config.errors import UserError

STATISTICS_FILE = "statistics.pb"  # tensorflow_metadata DatasetFeatureStatisticsList (components.datagate.protos)
SCHEMA_FILE = "schema.pb"  # the limits as a Schema
ANOMALIES_FILE = "anomalies.pb"  # the failed checks as Anomalies (empty: passed)
SUMMARY_FILE = "gate.json"  # summarize()
RESULT_FILES = (STATISTICS_FILE, SCHEMA_FILE, ANOMALIES_FILE, SUMMARY_FILE)
NO_SPAN = 0  # the span of a corpus none of whose locations has a span pattern


class DataGateError(UserError):
    """A span failed the data gate and was not accepted. The message is a first line saying so, then one line per
    failed check ("span N: check X = value, limit <= L: FAILED (...)"); the CLI prints every line."""

    all_lines = True


def gate_span(data_snapshot: Optional[str]) -> int:
    """The span of a corpus from its ``data_snapshot`` (data key → summary, ``pipeline/settings/spans.py``): the newest span any
    corpus location read; :data:`NO_SPAN` when none has a span pattern (or nothing was recorded)."""
    spans = [s for summary in (json.loads(data_snapshot) if data_snapshot else {}).values()
             for s in (summary or {}).get("spans", [])]
    return max(spans) if spans else NO_SPAN


def baseline_note(span: int, baseline_span: Optional[int]) -> str:
    """What the result says about its baseline."""
    if baseline_span is not None:
        return f"drift checked against span {baseline_span}, the last span that went through the gate"
    if span == NO_SPAN:
        return "no baseline: the corpus has no span pattern, so only the absolute limits apply"
    return "no baseline: first span through the gate, so only the absolute limits apply"


def _number(x: float) -> Any:
    return x if math.isfinite(x) else str(x)


def summarize(span: int, results: Sequence[Any], *, documents: int, characters: int, accept: Optional[int],
              baseline_span: Optional[int] = None, contamination: Optional[Any] = None,
              accepted_before: Optional[str] = None, statistics: Optional[Dict[str, Any]] = None,
              baseline_statistics: Optional[Dict[str, Any]] = None,
              earlier_spans: Sequence[int] = ()) -> Dict[str, Any]:
    """``gate.json``: the span, every check (``components.datagate.checks.CheckResult``) with its value, limit and
    message, ``passed`` (every check), ``accepted`` (failed, and ``gate.accept`` names this span, or an earlier
    result accepted the same data: ``accepted_before``, its folder), the baseline, the span's and the baseline's
    statistics in brief (``SpanStats.summary``), and the contamination found
    (``components.datagate.contamination.ContaminationResult``: passage ids, shares, per benchmark; ``total`` over
    this span and ``earlier_spans``, the spans the baseline's total covered: :func:`carried_contamination`)."""
    failed = [r.name for r in results if not r.passed]
    accepted_by = None
    if failed and accept is not None and accept == span:
        accepted_by = f"gate.accept={span}"
    elif failed and accepted_before:
        accepted_by = f"gate.accept={span} in an earlier run (its result: {accepted_before})"
    baseline = None
    if baseline_span is not None:
        baseline = {"span": baseline_span}
        if baseline_statistics is not None:
            baseline["statistics"] = baseline_statistics
    out: Dict[str, Any] = {
        "span": span, "documents": documents, "characters": characters,
        "baseline": baseline,
        "baseline_note": baseline_note(span, baseline_span),
        "checks": [{"name": r.name, "quantity": r.quantity, "kind": r.kind, "bound": r.bound,
                    "value": _number(r.value), "limit": _number(r.limit), "margin": _number(r.margin),
                    "passed": r.passed, "message": r.message} for r in results],
        "failed": failed, "passed": not failed, "accept": accept,
        "accepted": accepted_by is not None, "accepted_by": accepted_by,
        "statistics": statistics,
        "contamination": None,
    }
    if contamination is not None:
        out["contamination"] = {**_contamination(contamination),
                                "total_spans": sorted(set(earlier_spans) | {span}),
                                "benchmarks": {name: _contamination(r) for name, r in contamination.benchmarks}}
    return out


def _contamination(result: Any) -> Dict[str, Any]:
    return {"passages": result.passages, "short": result.short, "contaminated": list(result.contaminated),
            "share": result.share, "total": list(result.total_contaminated), "total_share": result.total_share}


def carried_contamination(baseline_summary: Optional[Dict[str, Any]]) -> Tuple[List[str], List[int]]:
    """What a span's result carries forward from its baseline's ``gate.json`` (the last span that went through the
    gate, which carried its own baseline's): the passage ids its total counted and the spans that total covers.
    Nothing when there is no baseline, or it measured no contamination (then the total covers this span alone)."""
    c = (baseline_summary or {}).get("contamination") or {}
    if not c:
        return [], []
    return list(c.get("total", c.get("contaminated", []))), list(c.get("total_spans", [baseline_summary["span"]]))


def failure_lines(summary: Dict[str, Any]) -> List[str]:
    """One line per failed check: "span N: check X = value, limit <= L: FAILED (...)"."""
    return [c["message"] for c in summary["checks"] if not c["passed"]]


def verdict(summary: Dict[str, Any], where: str) -> str:
    """The DataGateCheck node's decision on a result (``where``: its folder): a line to log when the span goes through
    (it passed, or failed and was accepted), else :class:`DataGateError`."""
    span, checks = summary["span"], len(summary["checks"])
    if summary["passed"]:
        return f"data gate: span {span} passed all {checks} checks ({summary['baseline_note']})"
    lines = failure_lines(summary)
    if summary["accepted"]:
        return (f"data gate: span {span} failed {len(lines)} of {checks} checks and goes through, accepted with "
                f"{summary['accepted_by']}: " + "; ".join(lines))
    other = summary.get("accept")
    note = f" (gate.accept={other} names another span)" if other is not None else ""
    raise DataGateError("\n".join([
        f"the data gate stopped span {span} before the vocabulary, pretraining data and Trainer: {len(lines)} of "
        f"{checks} checks failed{note}; anomalies in {where}; --set gate.accept={span} lets it through knowingly"]
        + lines))


def data_fingerprint(data_snapshot: Optional[str]) -> str:
    """The identity of the raw data a corpus was made from: a hash of each corpus location's fingerprint (its files'
    names, sizes and times, ``pipeline/settings/spans.py``); "" when nothing was recorded."""
    prints = {key: (summary or {}).get("fingerprint", "")
              for key, summary in (json.loads(data_snapshot) if data_snapshot else {}).items()}
    if not any(prints.values()):
        return ""
    return hashlib.sha256(json.dumps(prints, sort_keys=True).encode("utf-8")).hexdigest()


# The custom properties of a DataGateResult that choosing a later run's inputs reads.
RESULT_FACTS = ("span", "passed", "accepted", "data_fingerprint")


def select_inputs(data_snapshot: Optional[str], results: Iterable[Dict[str, Any]]) -> Dict[str, Optional[int]]:
    """The ids of the earlier results (each ``{"id", "span", "passed", "accepted", "data_fingerprint"}``) a span's
    DataGate takes, for the corpus whose ``data_snapshot`` is given:

    * ``baseline``: the newest (highest id) result of a lower span that went through the gate (passed, or accepted
      knowingly: a span the model trained on is the one the next is compared with). Unpatterned reads
      (:data:`NO_SPAN`) have no order: they neither have a baseline nor are one. None when no lower span went
      through: the absolute limits alone apply.
    * ``acceptance``: the newest result accepted knowingly (``gate.accept``) for the same raw data (equal
      :func:`data_fingerprint`): an accepted span stays accepted when later runs read it again without the setting.
    """
    span, fingerprint = gate_span(data_snapshot), data_fingerprint(data_snapshot)
    results = list(results)
    through = [r["id"] for r in results if NO_SPAN < (r.get("span") or 0) < span
               and (r.get("passed") or r.get("accepted"))]
    accepted = [r["id"] for r in results if fingerprint and r.get("accepted")
                and r.get("data_fingerprint") == fingerprint]
    return {"span": span, "baseline": max(through) if through and span != NO_SPAN else None,
            "acceptance": max(accepted) if accepted else None}
