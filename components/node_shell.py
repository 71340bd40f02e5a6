"""What the TFX components of the DAG share: every node's component (``components/<node>/<node>_component.py``) is a
thin shell that wires its pure core into Beam and MLMD.

Each node's ``config`` parameter is the canonical JSON of only the settings that determine its
output (its ``<node>_config`` section; ``seed`` travels as its own parameter where it matters), so TFX's cache
key changes exactly when that node's output would. Facts from upstream (vocabulary size,
``do_lower_case``, sequence length) are read from the input artifacts' properties and files, which
each node records on its outputs.

Atomic outputs. TFX publishes an output artifact (state LIVE in MLMD) only when the executor returns,
so a failed execution never feeds a downstream step. On top of that, the data components build their
files in ``<artifact uri>/.staging-<random>/`` and move them into the URI only after the whole Beam
job succeeded (:func:`staged` / :func:`components.file_io.publish`, which ``ingest`` uses too; both work on
``gs://``): an exception removes the staging folder, and a failure while moving removes what was moved, so the
URI is left empty. A killed process (SIGKILL, preemption) leaves a ``.staging-*`` folder, or during the moves part
of the files, inside an *unpublished* URI. A rerun writes to new URIs (new execution id), so leftovers are never
read back.
"""
import contextlib
import posixpath
import uuid

import tensorflow as tf

from components import beam_options
# Every executor below runs in a process that imported this module: Beam pipelines whose args name no runner run on
# the FnApiRunner, never a PrismRunner downloaded at run time, and a local runner's step does not package TFX for
# remote workers (components/beam_options.py).
beam_options.use_local_runner_by_default()
beam_options.package_tfx_for_remote_runners_only()


def int_facts(artifact) -> dict:
    """An artifact's integer custom properties, however they arrived: ``int_value`` from a local MLMD store, a
    whole number in ``struct_value`` from the Kubeflow / Vertex AI entrypoint (which passes metadata as JSON)."""
    facts = {}
    for key, value in artifact.mlmd_artifact.custom_properties.items():
        if value.HasField("int_value"):
            facts[key] = value.int_value
        elif value.HasField("struct_value"):
            number = artifact.get_json_value_custom_property(key)
            if isinstance(number, float) and number.is_integer():
                facts[key] = int(number)
    return facts


def record_counters(pipeline, namespace: str, outputs) -> None:
    """The Beam counters Dataflow showed live (documents, sentences, skips by reason, instances, tokens) become
    ``beam_<name>`` int properties of the output artifacts, so MLMD keeps them with the data."""
    from components.datagen.datagen_tool import beam_counters  # lazy: apache_beam (1.1 s)

    result = getattr(pipeline, "result", None)
    if result is None:
        return
    for name, value in sorted(beam_counters(result, namespace).items()):
        for artifact in outputs:
            artifact.set_int_custom_property(f"beam_{name}", int(value))


STAGING_PREFIX = ".staging-"


@contextlib.contextmanager
def staged(uri: str):
    """A fresh ``<uri>/.staging-<random>`` folder; removed when the block raises (or after publishing)."""
    staging = posixpath.join(uri, STAGING_PREFIX + uuid.uuid4().hex[:12])
    tf.io.gfile.makedirs(staging)
    try:
        yield staging
    finally:
        if tf.io.gfile.exists(staging):
            tf.io.gfile.rmtree(staging)
