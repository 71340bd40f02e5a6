"""``train.init_from=latest_blessed``: each run continues the pipeline's last blessed model, resolved when a run
starts (as the data spans are, ``pipeline/settings/spans.py``), into the folder the Trainer starts from.

The rule keeps a schedule's ticks honest about what they pay for:

* no blessed model yet (a first run): the run pretrains from scratch, and says so;
* the corpus is what the last blessed model was trained on (same spans, same fingerprints): the run takes the base
  that model's own Trainer took, so the Trainer's parameters are the same and it is a cache hit. A tick with no new
  data pretrains nothing, although the latest blessed model changed since its data came (TFX's warm-start example,
  which feeds the resolver's model to the Trainer, reruns the Trainer on every run);
* the corpus changed: the run continues the last blessed model, by its pushed version's folder (the card then says
  "continued from version N") or, where none was pushed, its ``albert`` folder.

The rule is :func:`pick_base`, on the facts of a :class:`Blessed` model and of the corpus now. A local run gathers
them when it starts (:func:`resolve_latest_blessed`: MLMD's latest blessed model and its lineage up to the corpus
Importers); a compiled spec in its ``InitFrom`` task (:mod:`pipeline.tasks.init_from_task`: the ``LatestBlessedModel``
resolver's model, its pushed version's card and its own ``export_info.json``, and the DataSnapshot task's corpus).
Continuing a model also means its vocabulary: :func:`base_vocab`, for both.
"""
from __future__ import annotations

import dataclasses
import json
import logging
import os
import posixpath
from dataclasses import dataclass
from typing import Any, Dict, Optional, Tuple

from config.schema import ConfigError
from trainer.trainer_config import INIT_FROM_SCRATCH
from pipeline.local import mlmd
from pipeline.settings.configs import CORPUS_KEYS, IMPORTERS, LATEST_BLESSED

__all__ = ["resolve_latest_blessed", "local_choice", "pick_base", "Blessed", "base_vocab", "model_folder",
           "corpus_from_properties", "corpus_from_summaries", "latest_blessed_model", "upstream_data"]

CORPUS_IMPORTERS = tuple(IMPORTERS[key][0] for key in CORPUS_KEYS)
_LOG = logging.getLogger(__name__)


def latest_blessed_model(store, pipeline_name: str) -> Optional[Tuple[Any, Any]]:
    """(model, blessing): what TFX's ``LatestBlessedModelStrategy`` resolves now, the newest LIVE model of the
    pipeline that a LIVE blessing with ``blessed`` = 1 names as ``current_model_id``; None before the first."""
    from ml_metadata.proto import metadata_store_pb2  # lazy: ml_metadata (0.09 s)

    contexts = [c for c in store.get_contexts_by_type("pipeline") if c.name == pipeline_name]
    in_pipeline = {a.id: a for c in contexts for a in store.get_artifacts_by_context(c.id)
                   if a.state == metadata_store_pb2.Artifact.LIVE}
    types = {t.id: t.name for t in store.get_artifact_types()}
    blessings = [a for a in in_pipeline.values() if types.get(a.type_id) == "ModelBlessing"
                 and a.custom_properties["blessed"].int_value == 1]
    blessed = {b.custom_properties["current_model_id"].int_value: b for b in sorted(blessings, key=lambda a: a.id)}
    models = sorted((a for a in in_pipeline.values() if types.get(a.type_id) == "Model" and a.id in blessed),
                    key=lambda a: a.id)
    if not models:
        return None
    return models[-1], blessed[models[-1].id]


def _node_of(store, execution_id: int) -> str:
    types = {t.id: t.name for t in store.get_context_types()}
    names = [c.name.split(".", 1)[1] for c in store.get_contexts_by_execution(execution_id)
             if types.get(c.type_id) == "node"]
    return names[0] if names else ""


def _producer(store, artifact_id: int):
    """The execution that made the artifact (the one that ran, not one served its output from the cache)."""
    from ml_metadata.proto import metadata_store_pb2  # lazy: ml_metadata (0.09 s)

    events = [e for e in store.get_events_by_artifact_ids([artifact_id])
              if e.type == metadata_store_pb2.Event.OUTPUT]
    executions = store.get_executions_by_id([e.execution_id for e in events])
    ran = [e for e in executions if e.last_known_state == metadata_store_pb2.Execution.COMPLETE] or executions
    return min(ran, key=lambda e: e.id) if ran else None


def upstream_data(store, artifact_id: int) -> Dict[str, Dict[str, Any]]:
    """Corpus Importer node id → the custom properties of the artifact it registered, for the data an artifact was
    made from (walking its lineage up through the executions that ran)."""
    from ml_metadata.proto import metadata_store_pb2  # lazy: ml_metadata (0.09 s)

    found: Dict[str, Dict[str, Any]] = {}
    seen, todo = set(), [artifact_id]
    while todo:
        current = todo.pop()
        if current in seen:
            continue
        seen.add(current)
        execution = _producer(store, current)
        if execution is None:
            continue
        node = _node_of(store, execution.id)
        if node in CORPUS_IMPORTERS:
            (artifact,) = store.get_artifacts_by_id([current])
            found[node] = {k: mlmd.value(v) for k, v in artifact.custom_properties.items()}
            continue
        todo += [e.artifact_id for e in store.get_events_by_execution_ids([execution.id])
                 if e.type == metadata_store_pb2.Event.INPUT]
    return found


def _trainer_init_from(store, model_id: int) -> Optional[str]:
    """The ``train.init_from`` the Trainer that made the model ran with (scratch when its settings name none)."""
    execution = _producer(store, model_id)
    if execution is None or "custom_config" not in execution.custom_properties:
        return None
    albert = json.loads(json.loads(mlmd.value(execution.custom_properties["custom_config"]))["albert"])
    return albert["train"].get("init_from", INIT_FROM_SCRATCH)


def corpus_from_properties(found: Dict[str, Dict[str, Any]]) -> Dict[str, Dict[str, Any]]:
    """What a corpus was, by data key (``wikipedia``, ``books``): {``fingerprint``, ``spans``}, from the custom
    properties of its Importers' artifacts (Importer node id → properties: :func:`upstream_data`, or a local run's
    snapshots' :meth:`pipeline.settings.spans.Snapshot.properties`)."""
    keys = {node: key for key, (node, _) in IMPORTERS.items()}
    out = {}
    for node, props in found.items():
        spans = json.loads(props["spans"]) if "spans" in props else ([props["span"]] if "span" in props else [])
        out[keys.get(node, node)] = {"fingerprint": props.get("data_fingerprint"), "spans": [int(s) for s in spans]}
    return out


def corpus_from_summaries(summaries: Dict[str, Dict[str, Any]]) -> Dict[str, Dict[str, Any]]:
    """The same facts from what nodes are given of the data (data key → :meth:`pipeline.settings.spans.Snapshot.summary`:
    CorpusGen's ``data_snapshot``, a report's ``data_read``), its corpus keys only."""
    return {key: {"fingerprint": s.get("fingerprint"), "spans": [int(x) for x in s.get("spans") or []]}
            for key, s in summaries.items() if key in CORPUS_KEYS}


@dataclass(frozen=True)
class Blessed:
    """The pipeline's latest blessed model, as far as the rule needs it."""

    uri: str  # the model artifact's URI
    corpus: Optional[Dict[str, Dict[str, Any]]]  # what it was trained on (corpus_from_*); None: not known
    started_from: str  # the train.init_from its own Trainer ran with (scratch, or a model folder)
    folder: str  # what a run continues: its pushed version's folder, else its albert folder


def pick_base(blessed: Optional[Blessed], corpus_now: Dict[str, Dict[str, Any]]) -> Tuple[str, str]:
    """The rule of ``train.init_from=latest_blessed`` (the module docstring), for a local run and for a compiled
    spec's InitFrom task alike: (the model folder the Trainer starts from, or ``scratch``; why, in a line)."""
    if blessed is None:
        return INIT_FROM_SCRATCH, "no blessed model in this pipeline yet: pretraining from scratch"
    if blessed.corpus is not None and blessed.corpus == corpus_now:
        return blessed.started_from, (f"the corpus is the one the latest blessed model ({blessed.uri}) was trained "
                                      f"on: its own start, {blessed.started_from}")
    return blessed.folder, f"the corpus changed since the latest blessed model: continuing it ({blessed.folder})"


def model_folder(push_destination: str, model_uri: str) -> str:
    """The pushed version holding the model (so the card can say "continued from version N"), else its albert
    folder."""
    from components.release.versions import find_version  # lazy: tensorflow (2.8 s)
    from trainer.files import ALBERT_DIR  # lazy: trainer.files (0.002 s)

    pushed = find_version(push_destination, model_uri)
    return pushed["path"] if pushed else posixpath.join(model_uri, ALBERT_DIR)


def _local_blessed(config) -> Optional[Blessed]:
    """The latest blessed model of a local run's MLMD store, with what its lineage says it was trained on."""
    if not os.path.exists(config.metadata_path):
        return None
    store = mlmd.open_readonly(config.metadata_path)
    found = latest_blessed_model(store, config.pipeline_name)
    if found is None:
        return None
    model, _ = found
    return Blessed(uri=model.uri, corpus=corpus_from_properties(upstream_data(store, model.id)),
                   started_from=_trainer_init_from(store, model.id) or INIT_FROM_SCRATCH,
                   folder=model_folder(config.push_destination, model.uri))


def local_choice(config) -> Tuple[str, str]:
    """(base, why) for a local run of ``config`` (with its data snapshots: a local ``resolve_config``)."""
    now = corpus_from_properties({IMPORTERS[key][0]: snapshot["properties"]
                                  for key, snapshot in config.data_snapshots.items() if key in CORPUS_KEYS})
    return pick_base(_local_blessed(config), now)


def resolve_latest_blessed(config):
    """``config`` with ``train.init_from`` resolved (see the module docstring); other values pass through. Needs
    the data snapshots of a local ``resolve_config`` (:mod:`pipeline.settings.resolve`)."""
    if config.train.init_from != LATEST_BLESSED:
        return config
    location, why = local_choice(config)
    _LOG.info("train.init_from=%s: %s", LATEST_BLESSED, why)
    return dataclasses.replace(config, train=dataclasses.replace(config.train, init_from=location))


def base_vocab(model, vocab, location: str):
    """The vocabulary settings (``VocabConfig``) of a run that continues the model at ``location``, checked before
    any node runs: the base must be a model folder whose encoder configuration is ``model``'s and whose vocabulary
    the run uses. Unset ``vocab.import_model``: the base's vocabulary file, imported as it is (``vocab_size`` 0);
    set: it must be the base's vocabulary (by sha256). One error names each difference (:mod:`trainer.base_model`)."""
    from trainer import base_model  # lazy: trainer.base_model (0.002 s)
    from trainer.modeling_albert import AlbertConfig  # lazy: tensorflow (2.8 s)

    base = base_model.describe(location)
    ours = AlbertConfig(**model.validate().encoder_fields(int(base["config"]["vocab_size"]))).to_dict()
    imported = vocab.import_model
    if imported is not None and "://" not in imported and not os.path.isfile(imported):
        raise ConfigError(f"config vocab.import_model={imported!r} is invalid: file {os.path.abspath(imported)} does "
                          "not exist")
    base_model.check(base, ours, base["spm_sha256"] if imported is None else base_model.sha256_of(imported))
    if imported is None:
        vocab = dataclasses.replace(vocab, import_model=base["spm_model"], vocab_size=0)
    return vocab
