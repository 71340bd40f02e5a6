"""The gate's checks: every limit a named setting (:class:`GateLimits`), one :class:`CheckResult` per limit.

Absolute checks run on every span; drift checks run when there is a baseline (the statistics of the last span
that passed); the first span has none, and its results say so. Contamination is checked when its result is given.
A share checked absolutely is a share of the span's *characters* (in documents a ``DocumentRules`` rule flags):
what the Trainer would read, so one bad short document weighs little and one bad book a lot.

Defaults were chosen from measurements with this code (``document_stats`` / ``near_duplicates`` defaults), on:
data/sample (2 books, 19 Wikipedia articles: 0.53 M characters), ../shared/data/large (282 Gutenberg books and
7,731 Wikipedia articles: 245 M characters) and ../shared/data/multilingual (zh, ja, ko: 0.24 M characters).
The measured value each default leaves room above is in its comment, beside the setting (components/datagate/gate_config.py
``GateConfig``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, fields, make_dataclass
from typing import Dict, List, Optional, Tuple

from components.datagate.contamination import ContaminationResult
from components.datagate.document_stats import RULES, UNKNOWN_SOURCE, SpanStats
from components.datagate.drift import jensen_shannon_divergence, total_variation, unigram_tables, volume_ratio
from components.datagate.near_duplicates import DuplicateShares, previous_span_duplicates
from components.datagate.gate_config import GateConfig


# The limits are the ``gate.*`` settings (components/datagate/gate_config.py ``GateConfig``, where each default's reason stands),
# less the two that are no limit: one definition for the configuration and for this core.
GateLimits = make_dataclass(
    "GateLimits", [(f.name, f.type, field(default=f.default)) for f in fields(GateConfig)
                   if f.name not in GateConfig.NOT_LIMITS + GateConfig.EXAMPLES_LIMITS], frozen=True)
GateLimits.__module__ = __name__
GateLimits.__doc__ = """Limits of the checks (module docstring). ``max_<rule>_share``: at most this share of the span's
characters is in documents flagged by that ``DocumentRules`` rule."""


@dataclass(frozen=True)
class Check:
    """One check: the limit (a GateLimits field) and the quantity it bounds."""

    limit: str
    quantity: str
    bound: str  # "min": value >= limit passes; "max": value <= limit passes
    kind: str  # "absolute" | "drift" | "contamination"


CHECKS: Tuple[Check, ...] = (
    (Check("min_documents", "documents", "min", "absolute"),)
    + tuple(Check(f"max_{rule}_share", f"flagged_character_share_{rule}", "max", "absolute") for rule in RULES)
    + (
        Check("max_duplicate_document_share", "duplicate_document_share", "max", "absolute"),
        Check("min_volume_ratio", "volume_ratio", "min", "drift"),
        Check("max_volume_ratio", "volume_ratio", "max", "drift"),
        Check("max_unigram_jsd", "unigram_jsd", "max", "drift"),
        Check("max_language_mix_distance", "language_mix_distance", "max", "drift"),
        Check("max_duplicate_share_increase", "duplicate_share_increase", "max", "drift"),
        Check("max_previous_exact_duplicate_share", "previous_exact_duplicate_share", "max", "drift"),
        Check("max_previous_near_duplicate_share", "previous_near_duplicate_share", "max", "drift"),
        Check("max_contaminated_share", "contaminated_share", "max", "contamination"),
    )
)
# GateLimits fields that parameterise a check rather than bound a quantity.
PARAMETERS = ("near_duplicate_jaccard", "unigram_top_tokens")
assert {c.limit for c in CHECKS} | set(PARAMETERS) == {f.name for f in fields(GateLimits)}


@dataclass(frozen=True)
class CheckResult:
    name: str  # the GateLimits field
    quantity: str
    value: float
    limit: float
    bound: str
    kind: str
    passed: bool
    margin: float  # room left before the limit: limit - value ("max"), value - limit ("min"); < 0 when failed
    message: str


def previous_duplicates(stats: SpanStats, baseline: SpanStats, jaccard: float,
                        patterned: Optional[Dict[str, bool]] = None) -> Dict[str, DuplicateShares]:
    """The previous-span duplicate shares per source location, each location's documents against the same
    location's in the baseline: ``{location: shares}``. A location read without a span pattern (``patterned``:
    location → whether it has one) is read whole on every tick, so it is no repeat of the last span and is not
    compared; nor is a location the baseline did not read. Statistics whose documents do not name their location
    (``SpanStats.source_samples`` empty, on either side) are compared as a whole: ``{"": shares}``."""
    if not (stats.source_samples and baseline.source_samples):
        return {"": previous_span_duplicates(stats.sample, baseline.sample, jaccard)}
    out = {}
    for source, sample in sorted(stats.source_samples.items()):
        if (patterned is not None and not patterned.get(source, True)) or source not in baseline.source_samples:
            continue
        out[source] = previous_span_duplicates(sample, baseline.source_samples[source], jaccard)
    return out


def moved_language(mix: Dict[str, int], before: Dict[str, int]) -> str:
    """What a language mix's change names: the language whose share of the characters moved most, with its shares
    before and now (``zh 0 -> 1 of the characters``); "" when nothing moved."""
    total, total_before = sum(mix.values()), sum(before.values())
    share = {k: mix.get(k, 0) / total if total else 0.0 for k in set(mix) | set(before)}
    share_before = {k: before.get(k, 0) / total_before if total_before else 0.0 for k in share}
    if not share or all(share[k] == share_before[k] for k in share):
        return ""
    language = max(sorted(share), key=lambda k: abs(share[k] - share_before[k]))
    return f"{language} {_number(share_before[language])} -> {_number(share[language])} of the characters"


def _worst(values: Dict[str, float]) -> Tuple[float, str]:
    """The largest value and its location ("" for the span as a whole; 0 and "" when there is none)."""
    if not values:
        return 0.0, ""
    location = max(sorted(values), key=lambda k: values[k])
    return values[location], location


def span_quantities(stats: SpanStats, baseline: Optional[SpanStats], limits: GateLimits,
                    contamination: Optional[ContaminationResult] = None,
                    patterned: Optional[Dict[str, bool]] = None) -> Dict[str, float]:
    """Every quantity a check bounds that can be computed: absolute ones always, drift ones with a baseline,
    ``contaminated_share`` with a contamination result (:func:`located_quantities`, without the locations)."""
    return {name: value for name, (value, _) in
            located_quantities(stats, baseline, limits, contamination, patterned).items()}


def located_quantities(stats: SpanStats, baseline: Optional[SpanStats], limits: GateLimits,
                       contamination: Optional[ContaminationResult] = None,
                       patterned: Optional[Dict[str, bool]] = None) -> Dict[str, Tuple[float, str]]:
    """Every quantity a check bounds, with the group its value is of ("books location", "zh language"; "": the span
    as a whole). When the documents name their source location (``SpanStats.by_source``; more than one), or carry
    language tags (``SpanStats.tagged``: a run of several languages; more than one), each flagged-character share is
    the largest of those groups' (a location or language of bad files is not diluted by a larger good one), and the
    previous-span duplicate shares are the largest of :func:`previous_duplicates`'s."""
    total = stats.total()
    read = stats.read_counts()  # every document, measured or not (document_stats: "The measured sample")
    out: Dict[str, Tuple[float, str]] = {"documents": (float(read["documents"]), "")}
    ratios = total.ratios()
    locations = {f"{source} location": group.ratios() for source, group in stats.by_source().items()
                 if source != UNKNOWN_SOURCE}
    languages = {f"{language} language": group.ratios() for language, group in stats.by_tagged_language().items()}
    groups = {**(locations if len(locations) > 1 else {}), **(languages if len(languages) > 1 else {})}
    for rule in RULES:
        name = f"flagged_character_share_{rule}"
        out[name] = _worst({g: r[name] for g, r in groups.items()}) if groups else (ratios[name], "")
    out["duplicate_document_share"] = (stats.sample.duplicate_share(), "")
    if baseline is not None:
        out["volume_ratio"] = (volume_ratio(read["characters"], baseline.read_counts()["characters"]), "")
        out["unigram_jsd"] = (jensen_shannon_divergence(*unigram_tables(stats.unigrams, baseline.unigrams,
                                                                        limits.unigram_top_tokens)), "")
        mix, before = stats.characters_by_language(), baseline.characters_by_language()
        out["language_mix_distance"] = (total_variation(mix, before), moved_language(mix, before))
        out["duplicate_share_increase"] = (stats.sample.duplicate_share() - baseline.sample.duplicate_share(), "")
        previous = previous_duplicates(stats, baseline, limits.near_duplicate_jaccard, patterned)
        one = len(stats.source_samples) <= 1  # a span of one location: its value is the span's, said as before
        for name, share in (("previous_exact_duplicate_share", "exact"), ("previous_near_duplicate_share", "near")):
            value, location = _worst({k: getattr(p, share) for k, p in previous.items()})
            out[name] = (value, "" if one or not location else f"{location} location")
    if contamination is not None:
        out["contaminated_share"] = (contamination.share, "")
    return out


def _number(x: float) -> str:
    return f"{x:.4g}" if math.isfinite(x) else str(x)


def _note(quantity: str, where: str) -> str:
    """What a check's message adds to its context: the group its value is of, or the language that moved."""
    return f"; {where}" if where else ""


def check_span(stats: SpanStats, baseline: Optional[SpanStats] = None, limits: GateLimits = GateLimits(),
               contamination: Optional[ContaminationResult] = None,
               patterned: Optional[Dict[str, bool]] = None) -> List[CheckResult]:
    """One result per check that applies (module docstring), in :data:`CHECKS` order. ``patterned``: each source
    location → whether it is read with a span pattern (:func:`previous_duplicates`); a value of one location says
    so in its message ("books location")."""
    values = located_quantities(stats, baseline, limits, contamination, patterned)
    if baseline is None:
        context = {"absolute": "absolute; first span: no baseline, drift not checked"}
    else:
        context = {"absolute": "absolute", "drift": f"drift against span {baseline.span}"}
    context["contamination"] = "contamination"
    out = []
    for check in CHECKS:
        if check.quantity not in values:
            continue
        (value, location), limit = values[check.quantity], float(getattr(limits, check.limit))
        margin = limit - value if check.bound == "max" else value - limit
        passed = margin >= 0
        sign = "<=" if check.bound == "max" else ">="
        message = (f"span {stats.span}: check {check.limit} = {_number(value)}, limit {sign} {_number(limit)}: "
                   f"{'passed' if passed else 'FAILED'} ({context[check.kind]}{_note(check.quantity, location)})")
        out.append(CheckResult(check.limit, check.quantity, value, limit, check.bound, check.kind, passed, margin,
                               message))
    return out


def failed(results: List[CheckResult]) -> List[CheckResult]:
    return [r for r in results if not r.passed]
