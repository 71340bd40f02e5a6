"""The report's inputs: the artifacts a run left, read into one typed :class:`ReportInputs`.

Read here: the title and the settings shown (the node's presentation config; the run's settings from the
Trainer's ``run_config.json``), the published reference row chosen, the parameter count (``albert_config.json``
of the model artifact), the pretraining facts (``export_info.json``), the pretraining history
(``train_history.jsonl``, through the Trainer's own reader, which leaves out a torn last line) and the datagen
statistics (``stats.json``) and the data gate's result (``gate.json``, when the run had a gate). The benchmark results
come in already loaded (``report_lib.load_result``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Tuple

from components.file_io import join, read_json
from trainer.files import (ALBERT_DIR, CONFIG_FILE, EXPORT_INFO_FILE, HISTORY_FILE, MODEL_SOURCE_FILE, RUN_CONFIG_FILE,
                           STATS_FILE)

__all__ = ["ParameterCount", "ReportInputs", "read_inputs", "title_and_settings", "parameter_count",
           "datagen_highlights"]

DEFAULT_REFERENCE = "albert-base-v1"


@dataclass(frozen=True)
class ParameterCount:
    counts: Dict[str, int]       # embedding, encoder, pooler, total (trainer.modeling_albert.count_parameters)
    config_path: str
    config: Dict[str, Any]       # the architecture fields of albert_config.json


@dataclass(frozen=True)
class ReportInputs:
    title: str
    settings: Dict[str, Any]                  # the run's settings shown in the report (results.json "config")
    reference: str                            # key of config.references.REFERENCE_ROWS
    results: Dict[str, Dict[str, Any]]        # {benchmark: metrics.json}
    parameters: Optional[ParameterCount]
    export_info: Optional[Dict[str, Any]]     # the Trainer's export_info.json
    datagen: Dict[str, Dict[str, Any]]        # per split: datagen_highlights
    history: List[Dict[str, Any]]             # train_history.jsonl records
    history_path: Optional[str]
    artifact_ids: Dict[str, Any]              # {name: id or {"id", "type", "uri"}}
    source: Optional[Dict[str, Any]] = None   # a benchmark-only run's model_source.json (ModelImport); None else
    # What the run read of each data location, as resolved when it started (pipeline/settings/spans.py Snapshot.summary):
    # {data key: {location, uri, folders, spans, version, fingerprint, files, bytes}}.
    data_read: Dict[str, Dict[str, Any]] = field(default_factory=dict)
    # The DataGate's result for the span pretrained on (components.datagate.datagate_result.summarize); None: no gate.
    data_gate: Optional[Dict[str, Any]] = None
    # A run of several languages: stats.json's per_language block (components/datagen/datagen_beam_languages.py).
    languages: Optional[Dict[str, Any]] = None

    @property
    def sentence_task(self) -> str:
        """The sentence task's name for the curves' titles (SOP, NSP...)."""
        return str((self.settings.get("train") or {}).get("sentence_task") or "sop").upper()


def title_and_settings(cfg, model_run_dir: Optional[str]) -> Tuple[str, Dict[str, Any]]:
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


def _reference(cfg) -> str:
    """``report.reference`` of a pipeline config, ``reference`` of a ReportConfig or dict; the paper's row else."""
    return (getattr(getattr(cfg, "report", cfg), "reference", None) if not isinstance(cfg, dict)
            else cfg.get("reference")) or DEFAULT_REFERENCE


def parameter_count(model_dir: Optional[str]) -> Optional[ParameterCount]:
    if not model_dir:
        return None
    path = join(model_dir, ALBERT_DIR, CONFIG_FILE)
    raw = read_json(path)
    if raw is None:
        return None
    from trainer.modeling_albert import AlbertConfig, count_parameters  # lazy: tensorflow (2.8 s)

    config = AlbertConfig.from_dict(raw)
    counts = count_parameters(config)
    return ParameterCount(counts=counts, config_path=path,
                          config={k: raw.get(k) for k in ("vocab_size", "embedding_size", "hidden_size",
                                                          "num_hidden_layers", "num_attention_heads",
                                                          "intermediate_size", "num_hidden_groups",
                                                          "inner_group_num", "sharing") if k in raw})


def datagen_highlights(stats: Optional[Mapping[str, Any]]) -> Dict[str, Dict[str, Any]]:
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


def _history(model_run_dir: Optional[str]) -> List[Dict[str, Any]]:
    if not model_run_dir:
        return []
    from trainer.run_state import read_history  # lazy: tensorflow (2.8 s); the Trainer's one reader

    return read_history(model_run_dir)


def read_inputs(cfg, results: Mapping[str, Mapping[str, Any]], model_dir: Optional[str],
                model_run_dir: Optional[str], stats_dir: Optional[str],
                artifact_ids: Optional[Mapping[str, Any]] = None,
                data_read: Optional[Mapping[str, Any]] = None, gate_dir: Optional[str] = None) -> ReportInputs:
    """Everything the report shows, read from the artifacts (arguments as ``report_lib.write_report``'s)."""
    from components.datagate.datagate_result import SUMMARY_FILE  # lazy: hashlib, components.datagate.datagate_result (0.003 s)

    data_gate = None
    if gate_dir:
        data_gate = read_json(join(gate_dir, SUMMARY_FILE))
        if data_gate is None:
            raise FileNotFoundError(f"no {SUMMARY_FILE} in the data gate's result {gate_dir}")
    title, settings = title_and_settings(cfg, model_run_dir)
    stats = read_json(join(stats_dir, STATS_FILE)) if stats_dir else None
    return ReportInputs(
        title=title, settings=settings, reference=_reference(cfg), results=dict(results or {}),
        parameters=parameter_count(model_dir),
        export_info=read_json(join(model_dir, ALBERT_DIR, EXPORT_INFO_FILE)) if model_dir else None,
        datagen=datagen_highlights(stats), languages=(stats or {}).get("per_language"),
        history=_history(model_run_dir),
        history_path=join(model_run_dir, HISTORY_FILE) if model_run_dir else None,
        artifact_ids=dict(artifact_ids or {}),
        source=read_json(join(model_dir, MODEL_SOURCE_FILE)) if model_dir else None,
        data_read={key: dict(value) for key, value in sorted((data_read or {}).items())}, data_gate=data_gate)
