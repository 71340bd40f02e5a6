"""The release's TFX components, ``Blesser`` and ``Pusher``: shells over :mod:`components.release`.

What every node's shell shares (staged outputs, Beam counters, the local Beam runner): :mod:`components.node_shell`.
"""
import datetime
import json
import logging
import posixpath
import tempfile

import tensorflow as tf
from tfx.dsl.component.experimental.annotations import InputArtifact, OutputArtifact, Parameter
from tfx.dsl.component.experimental.decorators import component
from tfx.types import standard_artifacts

from components import artifacts, backend_names
from components.file_io import publish
from components.node_shell import int_facts, staged
from components.release import blessing as blessing_lib
from components.release import model_card, package, registry, versions
from components.release.package import read_json
from components.report import report_lib

_LOG = logging.getLogger(__name__)


@component
def Blesser(
    model: InputArtifact[standard_artifacts.Model],
    report: InputArtifact[artifacts.BenchmarkReport],
    blessing: OutputArtifact[standard_artifacts.ModelBlessing],
    config: Parameter[str],
    baseline_model: InputArtifact[standard_artifacts.Model] = None,
) -> None:
    """BLESSED or NOT_BLESSED, always written: TFX's ``ModelBlessing`` (marker file, ``blessed`` and
    ``current_model_id`` properties, which ``LatestBlessedModelStrategy`` reads) plus ``blessing.json`` with every
    criterion's measured value, threshold and verdict (:mod:`components.release.blessing`).

    ``baseline_model``: the latest blessed model of this pipeline (the ``LatestBlessedModel`` resolver; none on the
    first run). Its scores are those its pushed version recorded in the push destination. The node takes the
    resolver's model and not its blessing, as TFX's Evaluator does: a rerun of an unchanged pipeline then resolves
    the same inputs and is served from the cache, where a new blessing of the same model would make every rerun
    decide (and push) again.
    """
    settings = json.loads(config)
    destination = settings.pop("push_destination")
    results = read_json(posixpath.join(report.uri, report_lib.RESULTS_JSON))
    names = backend_names.artifact_names()
    baseline = None
    if baseline_model is not None:
        pushed = versions.find_version(destination, baseline_model.uri)
        baseline = {"model": {"id": names.get(baseline_model.id, baseline_model.id), "uri": baseline_model.uri},
                    "scores": None if pushed is None else pushed.get("scores"),
                    "version": None if pushed is None else pushed["version"], "same_model": baseline_model.uri == model.uri}
    decision = blessing_lib.decide(settings, blessing_lib.task_scores(results),
                                   blessing_lib.arm_comparisons(results, settings["baseline_arm"]), baseline)
    decision["model"] = {"id": names.get(model.id, model.id), "uri": model.uri}
    marker = "BLESSED" if decision["blessed"] else "NOT_BLESSED"
    with staged(blessing.uri) as staging:
        with tf.io.gfile.GFile(posixpath.join(staging, blessing_lib.BLESSING_FILE), "w") as f:
            f.write(json.dumps(decision, indent=2, sort_keys=True))
        with tf.io.gfile.GFile(posixpath.join(staging, marker), "w") as f:
            f.write("")
        publish(staging, blessing.uri)
    # TFX's ModelBlessing convention (tfx/components/evaluator/constants.py), so TFX's resolvers work on it.
    blessing.set_int_custom_property("blessed", int(decision["blessed"]))
    blessing.set_int_custom_property("forced", int(decision["forced"]))
    blessing.set_string_custom_property("current_model", model.uri)
    _set_model_id(blessing, "current_model_id", model, names)
    blessing.set_string_custom_property("reason", decision["reason"][:1000])
    if baseline_model is not None:
        blessing.set_string_custom_property("baseline_model", baseline_model.uri)
        _set_model_id(blessing, "baseline_model_id", baseline_model, names)
    _LOG.info("release decision: %s%s: %s", marker, " (forced)" if decision["forced"] else "", decision["reason"])


def _set_model_id(blessing, key: str, model, names) -> None:
    """``current_model_id`` / ``baseline_model_id`` as the pipeline's resolver matches them: locally the model's MLMD
    id (``LatestBlessedModelStrategy`` compares ids); on Kubeflow / Vertex AI its resource name, which the compiled
    model resolver's query compares with the artifact's ``name`` (TFX rewrites the id so for its own Evaluator
    only: ``kubeflow_v2_entrypoint_utils.refactor_model_blessing``)."""
    if model.id in names:
        blessing.set_string_custom_property(key, names[model.id])
    else:
        blessing.set_int_custom_property(key, model.id)


@component
def Pusher(
    model: InputArtifact[standard_artifacts.Model],
    report: InputArtifact[artifacts.BenchmarkReport],
    blessing: InputArtifact[standard_artifacts.ModelBlessing],
    pushed_model: OutputArtifact[standard_artifacts.PushedModel],
    config: Parameter[str],
    model_run: InputArtifact[standard_artifacts.ModelRun] = None,
    documents: InputArtifact[artifacts.Documents] = None,
) -> None:
    """Push a blessed model as the destination's next version, whole or not at all, with its model card
    (:mod:`components.release`); with ``vertex_model`` set, also upload it as a new Model Registry version.

    A model that is not blessed is not pushed (``pushed`` 0, as TFX's Pusher records it). A model the destination
    already holds is not pushed again: the same artifact, or the same model from another run (the same pretraining
    run at the same step, :func:`components.release.package.model_key`: two overlapping runs of the same data push
    one version; on ``gs://`` the model is claimed create-only first). The record names the version that holds it.
    With ``vertex_model`` set, a version whose registry upload has not succeeded yet (no ``registry.json`` in its folder: the upload failed
    after the push) is uploaded by this rerun; one that has is not uploaded again. A benchmark-only DAG
    (``mode=benchmark``) has no ``model_run`` or ``documents``: the card names the model's source instead of this
    pipeline's pretraining.
    """
    settings = json.loads(config)
    destination = settings["push_destination"]
    decision = package.read_json(posixpath.join(blessing.uri, blessing_lib.BLESSING_FILE))
    pushed_model.set_string_custom_property("pushed_destination", destination)
    if not decision["blessed"]:
        pushed_model.set_int_custom_property("pushed", 0)
        _LOG.info("release: not pushed (NOT_BLESSED: %s)", decision["reason"])
        return
    export_info = package.export_info(model.uri)
    model_key = package.model_key(export_info)
    version = versions.find_version(destination, model.uri, model_key)
    if version is not None:  # e.g. the decision was taken again after the baseline moved
        _LOG.info("release: already pushed as version %s: %s", version["version"], version["path"])
    else:
        names = backend_names.artifact_names()
        ids = {name: {"id": names.get(a.id, a.id), "type": a.type_name, "uri": a.uri}
               for name, a in (("model", model), ("model_run", model_run), ("report", report),
                               ("documents", documents), ("blessing", blessing)) if a is not None}
        results = package.read_json(posixpath.join(report.uri, report_lib.RESULTS_JSON))
        documents_facts = int_facts(documents) if documents is not None else {}
        with tempfile.TemporaryDirectory() as built:
            run_settings = package.run_config(model_run.uri) if model_run else {}
            raw_text_serving = bool(settings.get("raw_text_serving", True))
            hf_note = package.build(model.uri, export_info, built,
                                    package.serving_seq_length(export_info, run_settings), raw_text_serving)

            def finish(number: int) -> dict:
                facts = package.card_facts(
                    name=settings["model_name"], license=settings["license"], version=number, results=results,
                    export_info=export_info, run_config=run_settings,
                    decision=decision, documents=documents_facts, artifacts=ids,
                    arm=decision["settings"]["baseline_arm"], hf_note=hf_note, source=package.model_source(model.uri),
                    language=settings.get("language", "en"))
                # each task's family and metrics, which the card's model-index files it by (model_card.task_records)
                facts["benchmarks"]["tasks"] = model_card.task_records(results)
                if not raw_text_serving:  # the card says the raw-text folders are not there
                    facts["raw_text_serving"] = False
                package.write_card(built, facts)
                return {"version": number, "model": ids["model"], "model_key": model_key, "blessed": True,
                        "forced": decision["forced"],
                        "reason": decision["reason"], "baseline": decision["baseline"], "scores": decision["scores"],
                        "artifacts": ids, "pushed_at": datetime.datetime.now(datetime.timezone.utc).isoformat(),
                        "files": package.file_digests(built)}

            try:
                number, path = versions.publish(built, destination, finish, model_key=model_key)
            except versions.ModelClaimed as claimed:  # an overlapping run trained the same run: one version of it
                _LOG.info("release: %s; waiting for its version", claimed)
                version = versions.wait_for_model(destination, model_key, versions.CLAIM_WAIT_S)
                _LOG.info("release: already pushed as version %s by another run: %s", version["version"],
                          version["path"])
                number = None
        if number is not None:
            version = {"version": number, "path": path, "forced": decision["forced"], "registry": None}
            _LOG.info("release: pushed version %d: %s", number, path)
    pushed_model.set_int_custom_property("pushed", 1)
    pushed_model.set_int_custom_property("pushed_version", int(version["version"]))
    pushed_model.set_string_custom_property("pushed_path", version["path"])
    if settings.get("vertex_model"):
        uploaded = registry.register(settings, version)
        pushed_model.set_string_custom_property("vertex_model", uploaded["model"])
        pushed_model.set_string_custom_property("vertex_model_version", str(uploaded["version_id"]))
