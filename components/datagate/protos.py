"""The gate's results as ``tensorflow_metadata`` protos, which TFX users' tools (TFDV, Facets) read, and back.

* :func:`statistics_to_proto` / :func:`statistics_from_proto`: a :class:`SpanStats` as a
  ``DatasetFeatureStatisticsList``. Dataset 0 (``span-N``) is the whole span; then one dataset per (source, language)
  group (``span-N/source/language``). Every dataset has ``num_examples`` = documents, the feature ``words`` (mean
  words per document and the fixed-bucket histogram; its last bucket is open, written with ``high_value`` = 2**25),
  one FLOAT feature per ratio of ``GroupStats.ratios`` (its ``num_stats.mean`` is the ratio), and the feature
  ``document`` whose ``custom_stats`` hold the exact counts (``COUNT_NAMES``) that make the round trip. Dataset 0's
  ``num_examples`` is every document of the span, and its ``document`` also holds ``read_documents``,
  ``read_characters`` and ``sample_rate`` (``document_stats``: "The measured sample"; the counts of the groups and
  the features are of the measured documents). Dataset 0
  also has the feature ``tokens`` (``string_stats.rank_histogram``: the kept unigram counts, largest first; custom
  stats ``total_tokens`` and ``capacity``) and, on ``document``, the span number, the settings (JSON) and the
  document sample (``minhash_sample``: JSON with base64 signatures; ``minhash_sample:<source>`` each source
  location's, when the documents name theirs), so the statistics of the last span that
  passed are the complete baseline of the next.
* :func:`limits_to_schema` / :func:`limits_from_schema`: ``GateLimits`` as a ``Schema``: ``min_documents`` is
  ``dataset_constraints.min_examples_count`` (TFDV's own), every other limit the ``float_domain`` min or max of a
  feature named after the quantity it bounds (float32: limits keep up to 7 significant digits through the schema),
  and the parameters are schema annotation tags ``name=value``.
* :func:`results_to_anomalies` / :func:`failures_from_anomalies`: the failed checks as ``Anomalies`` (empty = the
  span passed, TFDV's convention): ``min_documents`` as a dataset anomaly of type ``DATASET_LOW_NUM_EXAMPLES`` (and
  ``data_missing`` when there are no documents), every other failure as an ``ERROR`` on the quantity's feature with
  a ``CUSTOM_VALIDATION`` reason whose short description is the check's name and description its message.

Serialising (``SerializeToString``) and file IO belong to the shell that writes the artifacts.
"""
from __future__ import annotations

import base64
import dataclasses
import json
from typing import Dict, List, Tuple

import numpy as np
from tensorflow_metadata.proto.v0 import anomalies_pb2, schema_pb2, statistics_pb2

from components.datagate.checks import CHECKS, PARAMETERS, CheckResult, GateLimits
from components.datagate.document_stats import (COUNT_NAMES, WORD_BUCKET_EDGES, DocumentRules, GroupStats,
                                                SketchSettings, SpanStats)
from components.datagate.near_duplicates import MinHashSettings, sample_entries, sample_from_entries
from components.datagate.sketches import TopCounter

_FEATURE = statistics_pb2.FeatureNameStatistics
_OPEN_BUCKET_HIGH = float(2**25)


def _feature(dataset: statistics_pb2.DatasetFeatureStatistics, name: str, kind: int) -> _FEATURE:
    feature = dataset.features.add(type=kind)
    feature.path.step.append(name)
    return feature


def _custom(feature: _FEATURE) -> Dict[str, statistics_pb2.CustomStatistic]:
    return {c.name: c for c in feature.custom_stats}


def _features(dataset: statistics_pb2.DatasetFeatureStatistics) -> Dict[str, _FEATURE]:
    return {".".join(f.path.step): f for f in dataset.features}


def _write_group(dataset: statistics_pb2.DatasetFeatureStatistics, group: GroupStats) -> _FEATURE:
    documents = group.counts["documents"]
    dataset.num_examples = documents
    words = _feature(dataset, "words", _FEATURE.INT)
    words.num_stats.common_stats.num_non_missing = documents
    words.num_stats.mean = group.share("words", "documents")
    histogram = words.num_stats.histograms.add(type=statistics_pb2.Histogram.STANDARD)
    highs = WORD_BUCKET_EDGES[1:] + (_OPEN_BUCKET_HIGH,)
    for low, high, count in zip(WORD_BUCKET_EDGES, highs, group.words_histogram):
        histogram.buckets.add(low_value=low, high_value=high, sample_count=count)
    for name, value in group.ratios().items():
        feature = _feature(dataset, name, _FEATURE.FLOAT)
        feature.num_stats.common_stats.num_non_missing = documents
        feature.num_stats.mean = value
    document = _feature(dataset, "document", _FEATURE.STRUCT)
    for name in COUNT_NAMES:
        document.custom_stats.add(name=name, num=group.counts[name])
    return document


def _read_group(dataset: statistics_pb2.DatasetFeatureStatistics) -> GroupStats:
    features = _features(dataset)
    custom = _custom(features["document"])
    group = GroupStats()
    group.counts = {name: int(custom[name].num) for name in COUNT_NAMES}
    group.words_histogram = [int(b.sample_count) for b in features["words"].num_stats.histograms[0].buckets]
    return group


def _settings_json(stats: SpanStats) -> str:
    return json.dumps({"rules": dataclasses.asdict(stats.rules), "sketch": dataclasses.asdict(stats.sketch)},
                      sort_keys=True)


def _settings_from_json(text: str) -> Tuple[DocumentRules, SketchSettings]:
    data = json.loads(text)
    rules = DocumentRules(**{k: tuple(v) if isinstance(v, list) else v for k, v in data["rules"].items()})
    sketch = dict(data["sketch"])
    sketch["minhash"] = MinHashSettings(**sketch["minhash"])
    return rules, SketchSettings(**sketch)


SOURCE_SAMPLE_PREFIX = "minhash_sample:"  # + a source location: its own sample (SpanStats.source_samples)


def _sample_json(sample) -> str:
    entries = sample_entries(sample)
    signatures = np.stack([s for _, _, s in entries]).astype("<u4") if entries else np.zeros((0, 0), "<u4")
    return json.dumps({"keys": [str(k) for k, _, _ in entries], "counts": [c for _, c, _ in entries],
                       "signatures": base64.b64encode(signatures.tobytes()).decode("ascii")})


def _sample_from_json(text: str, settings: MinHashSettings):
    data = json.loads(text)
    flat = np.frombuffer(base64.b64decode(data["signatures"]), dtype="<u4")
    signatures = flat.reshape(len(data["keys"]), settings.num_perm) if data["keys"] else flat
    entries = [(int(k), int(c), signatures[i].astype(np.uint32)) for i, (k, c) in
               enumerate(zip(data["keys"], data["counts"]))]
    return sample_from_entries(settings.sample_size, entries)


def statistics_to_proto(stats: SpanStats) -> statistics_pb2.DatasetFeatureStatisticsList:
    """The span's statistics (module docstring)."""
    out = statistics_pb2.DatasetFeatureStatisticsList()
    whole = out.datasets.add(name=f"span-{stats.span}")
    document = _write_group(whole, stats.total())
    read = stats.read_counts()
    whole.num_examples = read["documents"]  # the span's documents (a group's: the measured ones)
    document.custom_stats.add(name="read_documents", num=read["documents"])
    document.custom_stats.add(name="read_characters", num=read["characters"])
    document.custom_stats.add(name="sample_rate", num=stats.sample_rate)
    document.custom_stats.add(name="span", num=stats.span)
    document.custom_stats.add(name="settings", str=_settings_json(stats))
    document.custom_stats.add(name="minhash_sample", str=_sample_json(stats.sample))
    for source, sample in sorted(stats.source_samples.items()):
        document.custom_stats.add(name=SOURCE_SAMPLE_PREFIX + source, str=_sample_json(sample))
    tokens = _feature(whole, "tokens", _FEATURE.STRING)
    tokens.string_stats.common_stats.num_non_missing = whole.num_examples
    tokens.string_stats.unique = len(stats.unigrams.counts)
    for rank, (token, count) in enumerate(stats.unigrams.most_common()):
        tokens.string_stats.rank_histogram.buckets.add(low_rank=rank, high_rank=rank, label=token, sample_count=count)
    tokens.custom_stats.add(name="total_tokens", num=stats.unigrams.total)
    tokens.custom_stats.add(name="capacity", num=stats.unigrams.capacity)
    for (source, language), group in sorted(stats.groups.items()):
        dataset = out.datasets.add(name=f"span-{stats.span}/{source}/{language}")
        document = _write_group(dataset, group)
        document.custom_stats.add(name="source", str=source)
        document.custom_stats.add(name="language", str=language)
    return out


def statistics_from_proto(proto: statistics_pb2.DatasetFeatureStatisticsList) -> SpanStats:
    """The :class:`SpanStats` that :func:`statistics_to_proto` wrote."""
    whole = _features(proto.datasets[0])
    custom = _custom(whole["document"])
    rules, sketch = _settings_from_json(custom["settings"].str)
    unigrams = TopCounter(int(_custom(whole["tokens"])["capacity"].num))
    unigrams.counts = {b.label: int(b.sample_count) for b in whole["tokens"].string_stats.rank_histogram.buckets}
    unigrams.total = int(_custom(whole["tokens"])["total_tokens"].num)
    groups = {}
    for dataset in proto.datasets[1:]:
        group_custom = _custom(_features(dataset)["document"])
        groups[(group_custom["source"].str, group_custom["language"].str)] = _read_group(dataset)
    read = ({"documents": int(custom["read_documents"].num), "characters": int(custom["read_characters"].num)}
            if "read_documents" in custom else None)  # None: statistics written before the measured sample
    return SpanStats(span=int(custom["span"].num), rules=rules, sketch=sketch, groups=groups, unigrams=unigrams,
                     sample=_sample_from_json(custom["minhash_sample"].str, sketch.minhash), read=read,
                     sample_rate=float(custom["sample_rate"].num) if "sample_rate" in custom else 1.0,
                     source_samples={name[len(SOURCE_SAMPLE_PREFIX):]: _sample_from_json(c.str, sketch.minhash)
                                     for name, c in custom.items() if name.startswith(SOURCE_SAMPLE_PREFIX)})


def limits_to_schema(limits: GateLimits) -> schema_pb2.Schema:
    """The limits as a schema (module docstring)."""
    schema = schema_pb2.Schema()
    schema.dataset_constraints.min_examples_count = int(limits.min_documents)
    features: Dict[str, schema_pb2.Feature] = {}
    for check in CHECKS:
        if check.limit == "min_documents":
            continue
        if check.quantity not in features:
            features[check.quantity] = schema.feature.add(name=check.quantity, type=schema_pb2.FLOAT)
            features[check.quantity].annotation.comment.append(f"data gate ({check.kind})")
        domain = features[check.quantity].float_domain
        setattr(domain, check.bound, float(getattr(limits, check.limit)))
    for name in PARAMETERS:
        schema.annotation.tag.append(f"{name}={getattr(limits, name)}")
    return schema


def _from_float32(value: float) -> float:
    """``FloatDomain`` bounds are float32: the shortest decimal that reads back as the same float32 (the value
    written, whenever it had at most 7 significant digits)."""
    return float(str(np.float32(value)))


def limits_from_schema(schema: schema_pb2.Schema) -> GateLimits:
    """The :class:`GateLimits` that :func:`limits_to_schema` wrote."""
    domains = {f.name: f.float_domain for f in schema.feature}
    values = {"min_documents": int(schema.dataset_constraints.min_examples_count)}
    for check in CHECKS:
        if check.limit != "min_documents":
            values[check.limit] = _from_float32(getattr(domains[check.quantity], check.bound))
    for tag in schema.annotation.tag:
        name, _, value = tag.partition("=")
        if name in PARAMETERS:
            values[name] = type(getattr(GateLimits, name))(value)
    return GateLimits(**values)


def results_to_anomalies(results: List[CheckResult], schema: schema_pb2.Schema = None) -> anomalies_pb2.Anomalies:
    """The failed checks as anomalies (module docstring); ``schema``, when given, is recorded as the baseline."""
    out = anomalies_pb2.Anomalies()
    if schema is not None:
        out.baseline.CopyFrom(schema)
    for result in results:
        if result.passed:
            continue
        if result.name == "min_documents":
            info = out.dataset_anomaly_info
            reason_type = anomalies_pb2.AnomalyInfo.DATASET_LOW_NUM_EXAMPLES
            out.data_missing = result.value == 0
        else:
            info = out.anomaly_info[result.quantity]
            info.path.step.append(result.quantity)
            reason_type = anomalies_pb2.AnomalyInfo.CUSTOM_VALIDATION
        info.severity = anomalies_pb2.AnomalyInfo.ERROR
        info.short_description = info.short_description + ("; " if info.short_description else "") + result.name
        info.description = info.description + ("\n" if info.description else "") + result.message
        info.reason.add(type=reason_type, short_description=result.name, description=result.message)
    return out


def failures_from_anomalies(anomalies: anomalies_pb2.Anomalies) -> List[Tuple[str, str]]:
    """(check name, message) of each failed check recorded in ``anomalies``, in ``CHECKS`` order."""
    found = {r.short_description: r.description for r in anomalies.dataset_anomaly_info.reason}
    for info in anomalies.anomaly_info.values():
        found.update({r.short_description: r.description for r in info.reason})
    return [(c.limit, found[c.limit]) for c in CHECKS if c.limit in found]
