"""``train.init_from=latest_blessed``: each run continues the pipeline's last blessed model, resolved when a local
run starts (as the data spans are, ``pipeline/spans.py``), into the folder the Trainer starts from.

The rule keeps a schedule's ticks honest about what they pay for:

* no blessed model yet (a first run): the run pretrains from scratch, and says so;
* the corpus is what the last blessed model was trained on (same spans, same fingerprints): the run takes the base
  that model's own Trainer took, so the Trainer's parameters are the same and it is a cache hit. A tick with no new
  data pretrains nothing, although the latest blessed model changed since its data came (TFX's warm-start example,
  which feeds the resolver's model to the Trainer, reruns the Trainer on every run);
* the corpus changed: the run continues the last blessed model, by its pushed version's folder (the card then says
  "continued from version N") or, where none was pushed, its ``albert`` folder.
"""
from __future__ import annotations

import json
import logging
import os
import posixpath
from typing import Any, Dict, List, Optional, Tuple

from config.sections import INIT_FROM_SCRATCH
from pipeline import mlmd
from pipeline.configs import IMPORTERS, LATEST_BLESSED

__all__ = ["resolve_latest_blessed", "latest_blessed_model", "upstream_data"]

CORPUS_IMPORTERS = ("WikipediaImporter", "BooksImporter")
_LOG = logging.getLogger(__name__)


def latest_blessed_model(store, pipeline_name: str) -> Optional[Tuple[Any, Any]]:
    """(model, blessing): what TFX's ``LatestBlessedModelStrategy`` resolves now, the newest LIVE model of the
    pipeline that a LIVE blessing with ``blessed`` = 1 names as ``current_model_id``; None before the first."""
    from ml_metadata.proto import metadata_store_pb2

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
    from ml_metadata.proto import metadata_store_pb2

    events = [e for e in store.get_events_by_artifact_ids([artifact_id])
              if e.type == metadata_store_pb2.Event.OUTPUT]
    executions = store.get_executions_by_id([e.execution_id for e in events])
    ran = [e for e in executions if e.last_known_state == metadata_store_pb2.Execution.COMPLETE] or executions
    return min(ran, key=lambda e: e.id) if ran else None


def upstream_data(store, artifact_id: int) -> Dict[str, Dict[str, Any]]:
    """Corpus Importer node id → the custom properties of the artifact it registered, for the data an artifact was
    made from (walking its lineage up through the executions that ran)."""
    from ml_metadata.proto import metadata_store_pb2

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


def _corpus_now(config) -> Dict[str, Dict[str, Any]]:
    return {IMPORTERS[key][0]: snapshot["properties"] for key, snapshot in config.data_snapshots.items()
            if IMPORTERS[key][0] in CORPUS_IMPORTERS}


def _same_data(before: Dict[str, Dict[str, Any]], now: Dict[str, Dict[str, Any]]) -> bool:
    keys = ("data_fingerprint", "span", "spans")
    return set(before) == set(now) and all(
        {k: before[n].get(k) for k in keys} == {k: now[n].get(k) for k in keys} for n in now)


def resolve_latest_blessed(config):
    """``config`` with ``train.init_from`` resolved (see the module docstring); other values pass through. Needs
    the data snapshots of a local ``resolve_config`` (:mod:`pipeline.resolve`)."""
    import dataclasses

    if config.train.init_from != LATEST_BLESSED:
        return config
    location, why = INIT_FROM_SCRATCH, "no blessed model in this pipeline yet: pretraining from scratch"
    if os.path.exists(config.metadata_path):
        store = mlmd.open_readonly(config.metadata_path)
        found = latest_blessed_model(store, config.pipeline_name)
        if found is not None:
            model, _ = found
            if _same_data(upstream_data(store, model.id), _corpus_now(config)):
                location = _trainer_init_from(store, model.id) or INIT_FROM_SCRATCH
                why = (f"the corpus is the one the latest blessed model ({model.uri}) was trained on: its own start, "
                       f"{location}")
            else:
                location = _model_folder(config, model)
                why = f"the corpus changed since the latest blessed model: continuing it ({location})"
    _LOG.info("train.init_from=%s: %s", LATEST_BLESSED, why)
    return dataclasses.replace(config, train=dataclasses.replace(config.train, init_from=location))


def _model_folder(config, model) -> str:
    """The pushed version holding the model (so the card can say "continued from version N"), else its albert
    folder."""
    from components.release.versions import find_version
    from trainer.files import ALBERT_DIR

    pushed = find_version(config.push_destination, model.uri)
    return pushed["path"] if pushed else posixpath.join(model.uri, ALBERT_DIR)
