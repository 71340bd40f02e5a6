"""The configuration against the world: the step after :func:`pipeline.settings.configs.build_config`.

``build_config`` reads the preset, the YAML file and ``--set`` alone. :func:`resolve_config` then looks at what
exists now, in this order: for a local run (``run``, ``plan``) the input folders (checked, made absolute with both
roots), the data spans and their fingerprints (:mod:`pipeline.settings.spans`) and ``train.init_from=latest_blessed``
(:mod:`pipeline.settings.continuation`; a compiled spec resolves both in tasks that run when each run starts); then, for
both, the base model at ``train.init_from`` (checked, or found and digested with ``mode=benchmark``). Every
command of ``pipeline/cli.py`` and :func:`pipeline.cloud.environments.pipeline_config` call
``resolve_config(build_config(...), local=...)``. This module imports :mod:`pipeline.settings.configs`, never the reverse.
"""
from __future__ import annotations

import dataclasses
import os
from typing import Any, Dict, Tuple

from config.schema import ConfigError
from trainer.trainer_config import INIT_FROM_SCRATCH
from pipeline.settings import spans
from pipeline.settings.configs import CORPUS_KEYS, IMPORTERS, LATEST_BLESSED, PipelineConfig, build_config
from pipeline.settings.continuation import base_vocab, resolve_latest_blessed


def resolve_config(config: PipelineConfig, *, local: bool) -> PipelineConfig:
    """``config`` (from ``build_config``) resolved against what exists now, validated again and frozen.

    ``local`` (``run``, ``plan``): the input paths must exist and are made absolute, as are the pipeline root and
    the MLMD store; every data location resolves to its span and fingerprint; ``latest_blessed`` to a model. Not
    local (``compile``): ``latest_blessed`` stays, for the spec's InitFrom task to resolve when each run starts
    (:mod:`pipeline.tasks.init_from_task`). Then the base model is checked before any node runs.
    """
    if local:
        config = resolve_latest_blessed(_resolve_data(_local_paths(config)))
    config = _benchmark_base(config) if config.mode == "benchmark" else _with_base(config)
    return config.validate().freeze()


def _local_paths(config: PipelineConfig) -> PipelineConfig:
    """A local run: input paths must exist, and are made absolute and normalised ('..' resolved) so MLMD lineage
    records where the data really is, whatever the working directory; the pipeline root and the MLMD store are made
    absolute too. URIs are left alone (``gs://``: no network here, the components report a missing object by name;
    any other scheme: :meth:`PipelineConfig.validate` rejects it)."""
    sections: Dict[str, Dict[str, str]] = {}
    for name, value in config.input_paths().items():
        if value is None or "://" in value:
            continue
        path = os.path.abspath(os.path.expanduser(value))
        want_file = name == "vocab.import_model"
        if spans.has_pattern(path):  # a span pattern: resolved (and checked) when the run starts
            pass
        elif not (os.path.isfile(path) if want_file else os.path.isdir(path)):
            raise ConfigError(f"config {name}={value!r} is invalid: {'file' if want_file else 'folder'} "
                              f"{path} does not exist")
        section, key = name.split(".")
        sections.setdefault(section, {})[key] = path
    changes: Dict[str, Any] = {s: dataclasses.replace(getattr(config, s), **keys) for s, keys in sections.items()}
    return dataclasses.replace(config, pipeline_root=os.path.abspath(config.pipeline_root),
                               metadata_path=os.path.abspath(config.metadata_path), **changes)


def _data_locations(config: PipelineConfig) -> Dict[str, Tuple[str, str]]:
    """data key → (its config key, its location) for every data location the DAG reads."""
    return {key: (IMPORTERS[key][1], uri) for key, uri in config.data_inputs().items()}


def _resolve_data(config: PipelineConfig) -> PipelineConfig:
    """A local run resolves every data location now, when it starts: the span pattern's latest (or ``data.span``'s)
    folder and every folder's fingerprint (``pipeline/settings/spans.py``)."""
    resolved = spans.resolve_all(_data_locations(config), span=config.data.span, window=config.data.span_window,
                                 corpus_keys=CORPUS_KEYS)
    snapshots = {key: {"uri": snap.uri, "properties": snap.properties(), "summary": snap.summary()}
                 for key, snap in resolved.items()}
    return dataclasses.replace(config, data_snapshots=snapshots)


def _with_base(config: PipelineConfig) -> PipelineConfig:
    """Continued pretraining (``train.init_from`` a model folder), checked before any node runs: the base must be a
    model folder whose encoder configuration is this run's and whose vocabulary this run uses. VocabGen takes the
    base's ``spm.model`` (``vocab.import_model`` unset), or the file named there when it is the same vocabulary
    (:func:`pipeline.settings.continuation.base_vocab`). ``latest_blessed`` left in a compiled spec is resolved when each run
    starts, by its InitFrom task (:mod:`pipeline.tasks.init_from_task`), which does the same."""
    if config.train.validate().init_from in (INIT_FROM_SCRATCH, LATEST_BLESSED):
        return config
    location = config.train.init_from
    if "://" not in location:  # a folder of this machine: absolute, as the run's other paths are
        location = os.path.normpath(os.path.abspath(os.path.expanduser(location)))
    return dataclasses.replace(config, train=dataclasses.replace(config.train, init_from=location),
                               vocab=base_vocab(config.model, config.vocab, location))


def _benchmark_base(config: PipelineConfig) -> PipelineConfig:
    """A benchmark-only run (``mode=benchmark``): the model at ``train.init_from`` found before any node runs (one
    error naming the location when it is not a model folder), a local location made absolute, and ``model_digest``
    resolved from the files ModelImport copies. The model's own configuration and vocabulary are used as they are:
    ``model.*`` and ``vocab.*`` play no part."""
    location = config.train.validate().init_from
    if location == INIT_FROM_SCRATCH:
        return config  # validate() refuses it, naming the setting
    from trainer import base_model  # lazy: trainer.base_model (0.002 s)

    if "://" not in location:
        location = os.path.normpath(os.path.abspath(os.path.expanduser(location)))
    base = base_model.describe(location)
    return dataclasses.replace(config, train=dataclasses.replace(config.train, init_from=location),
                               model_digest=base_model.digest(base_model.model_files(base)))


def built_from_args(args, **placement) -> PipelineConfig:
    """The configuration of a command's ``--preset/--config/--set`` with where it runs (``--output-dir D`` puts the
    pipeline root and MLMD store under D; without it the config's own ``pipeline_root`` / ``metadata_path`` hold),
    validated (every section, the model too): :func:`pipeline.settings.configs.build_config`, which looks at nothing
    that exists."""
    return build_config(args.preset, args.config, args.overrides, **placement)


def config_from_args(args, local: bool = False, **placement) -> PipelineConfig:
    """:func:`built_from_args`, then resolved against what exists (``local`` for ``run`` and ``plan``):
    :func:`resolve_config`."""
    return resolve_config(built_from_args(args, **placement), local=local)
