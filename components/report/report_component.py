"""The report node's TFX component, ``BenchmarkReport``: a shell over :mod:`components.report.report_lib`.

What every node's shell shares (staged outputs, Beam counters, the local Beam runner): :mod:`components.node_shell`.
"""
import json
import logging

from tfx.dsl.component.experimental.annotations import InputArtifact, OutputArtifact, Parameter
from tfx.dsl.component.experimental.decorators import component
from tfx.types import standard_artifacts

from components import artifacts, backend_names
from components.report import report_lib
from components.report.report_config import ReportConfig

_LOG = logging.getLogger(__name__)


@component
def BenchmarkReport(
    model: InputArtifact[standard_artifacts.Model],
    report: OutputArtifact[artifacts.BenchmarkReport],
    config: Parameter[str],
    model_run: InputArtifact[standard_artifacts.ModelRun] = None,
    statistics: InputArtifact[artifacts.DataGenStatistics] = None,
    glue: InputArtifact[artifacts.BenchmarkResult] = None,
    squad: InputArtifact[artifacts.BenchmarkResult] = None,
    squad2: InputArtifact[artifacts.BenchmarkResult] = None,
    race: InputArtifact[artifacts.BenchmarkResult] = None,
    documents: InputArtifact[artifacts.Documents] = None,
    data_gate: InputArtifact[artifacts.DataGateResult] = None,
) -> None:
    """Markdown + HTML report in the shape of the paper's Table 2, with curves and MLMD artifact ids.

    ``config``: presentation settings only; the run's settings shown in the report are read from the
    artifacts (the Trainer's ``run_config.json``, each benchmark result's ``settings``). A benchmark-only DAG
    (``mode=benchmark``) has no ``model_run`` or ``statistics``: the report names the model's source
    (``model_source.json``) and says that the pretraining facts are not this run's. The "Data read" section is
    what ``documents`` and the results recorded of the raw data they read (their ``data_snapshot``). ``data_gate``:
    the DataGate's result for the span pretrained on (its ``gate.json``: the "Data gate" section, with the baseline's
    statistics and the benchmarks' contamination); none without a gate (``mode=benchmark``, ``gate.enabled=false``),
    and the section says so.
    """
    cfg = ReportConfig.from_json(config, "report.")
    # On Kubeflow / Vertex AI an artifact is known by the backend's resource name, not by TFX's hashed id.
    names = backend_names.artifact_names()
    results = {name: art for name, art in (("glue", glue), ("squad", squad), ("squad2", squad2), ("race", race))
               if art is not None}
    summary = report_lib.write_report(
        report.uri, cfg,
        results={name: report_lib.load_result(art.uri) for name, art in results.items()},
        model_dir=model.uri, model_run_dir=model_run.uri if model_run else None,
        stats_dir=statistics.uri if statistics else None,
        artifact_ids={name: {"id": names.get(art.id, art.id), "type": art.type_name, "uri": art.uri}
                      for name, art in (("model", model), ("model_run", model_run), ("statistics", statistics),
                                        ("data_gate", data_gate), *results.items()) if art is not None},
        data_read=_data_read(documents, results), gate_dir=data_gate.uri if data_gate else None)
    if summary.get("avg") is not None:
        report.set_float_custom_property("avg", float(summary["avg"]))


def _data_read(documents, results) -> dict:
    """{data key: what was read of it}, from the ``data_snapshot`` properties CorpusGen (its corpus locations) and
    each benchmark (its dataset) recorded."""
    out = {}
    if documents is not None and documents.has_custom_property("data_snapshot"):
        out.update(json.loads(documents.get_string_custom_property("data_snapshot")))
    for name, result in results.items():
        if result.has_custom_property("data_snapshot"):
            out[name] = json.loads(result.get_string_custom_property("data_snapshot"))["dataset"]
    return out
