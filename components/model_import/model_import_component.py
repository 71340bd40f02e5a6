"""The given model's TFX component, ``ModelImport`` (``mode=benchmark``: in place of the corpus, vocabulary, data and
pretraining nodes).

What every node's shell shares (staged outputs, Beam counters, the local Beam runner): :mod:`components.node_shell`.
"""
import json
import logging
import posixpath

import tensorflow as tf
from tfx.dsl.component.experimental.annotations import OutputArtifact, Parameter
from tfx.dsl.component.experimental.decorators import component
from tfx.types import standard_artifacts

from components.file_io import publish
from components.node_shell import staged
from components.release.package import SERVING_DIR
from config.errors import InputError
from trainer import base_model
from trainer.files import ALBERT_DIR, MODEL_SOURCE_FILE

_LOG = logging.getLogger(__name__)


@component
def ModelImport(
    model: OutputArtifact[standard_artifacts.Model],
    location: Parameter[str],
    digest: Parameter[str],
) -> None:
    """The model at ``location`` (``train.init_from``: a pushed version, or a folder ``albert-pipeline convert``
    wrote; local or ``gs://``) as a Model artifact laid out as the Trainer's: ``albert/`` (its albert folder) and
    ``Format-Serving/`` (its serving SavedModel, where it has one), plus ``model_source.json``, which the report and
    the model card read. ``digest``: the sha256 of those files when the configuration was resolved
    (:func:`trainer.base_model.digest`); the copies must have it, else the node fails naming the location, so a
    changed folder is never scored under the old digest's cache key.
    """
    base = base_model.describe(location)
    sources = base_model.model_files(base)
    with staged(model.uri) as staging:
        copies: dict = {}
        for part, folder in (("albert", ALBERT_DIR), ("serving", SERVING_DIR)):
            copies[part] = {}
            for rel, src in sources[part].items():
                dst = posixpath.join(staging, folder, rel)
                tf.io.gfile.makedirs(posixpath.dirname(dst))
                tf.io.gfile.copy(src, dst, overwrite=True)
                copies[part][rel] = dst
        found = base_model.digest(copies)
        if found != digest:
            raise InputError(f"train.init_from={location} changed after the run's configuration was resolved "
                             f"(files sha256 {found[:12]}… now, {digest[:12]}… then); run or compile again")
        record = base_model.source_record(base, found, serving=bool(copies["serving"]))
        with tf.io.gfile.GFile(posixpath.join(staging, MODEL_SOURCE_FILE), "w") as f:
            f.write(json.dumps(record, indent=2, sort_keys=True))
        publish(staging, model.uri, last=[MODEL_SOURCE_FILE])
    model.set_string_custom_property("source_location", record["location"])
    model.set_string_custom_property("source_digest", found)
    for key in ("version", "steps"):
        if record.get(key) is not None:
            model.set_int_custom_property(f"source_{key}", int(record[key]))
