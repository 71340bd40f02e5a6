"""The benchmark nodes' TFX component, ``BenchmarkEval`` (``GlueBenchmark``, ``SquadBenchmark``, ``Squad2Benchmark``,
``RaceBenchmark``: one component, a node per family): a shell over :mod:`components.evaluation.run_benchmark`.

What every node's shell shares (staged outputs, Beam counters, the local Beam runner): :mod:`components.node_shell`.
"""
import json
import logging
import posixpath

from tfx.dsl.component.experimental.annotations import InputArtifact, OutputArtifact, Parameter
from tfx.dsl.component.experimental.decorators import component
from tfx.types import standard_artifacts

from components import artifacts
from components.evaluation.benchmark_config import BenchmarkConfig
from trainer.files import ALBERT_DIR

_LOG = logging.getLogger(__name__)


@component
def BenchmarkEval(
    model: InputArtifact[standard_artifacts.Model],
    dataset: InputArtifact[artifacts.RawCorpus],
    result: OutputArtifact[artifacts.BenchmarkResult],
    config: Parameter[str],
    seeds: Parameter[int],
    benchmark: Parameter[str],
    data_snapshot: Parameter[str] = None,
) -> None:
    """Fine-tune the pretrained encoder on one benchmark family (glue | squad | race) and score dev.

    ``config``: this benchmark's own settings (``BenchmarkConfig.node_settings``); ``seeds``: how many
    fine-tuning seeds (a pipeline runtime parameter when compiled for Vertex / KFP); ``data_snapshot``: the
    dataset's folder and fingerprint as the run resolved them when it started, recorded on the result.
    """
    from components.evaluation.run_benchmark import run_benchmark  # lazy: components.evaluation.run_benchmark (0.04 s)

    settings = BenchmarkConfig.from_node_settings(json.loads(config), seeds)
    albert_dir = posixpath.join(model.uri, ALBERT_DIR)
    metrics = run_benchmark(benchmark, albert_dir, dataset.uri, settings, result.uri)
    result.set_string_custom_property("benchmark", benchmark)
    result.set_string_custom_property("settings", config)
    result.set_int_custom_property("seeds", int(seeds))
    if data_snapshot:
        result.set_string_custom_property("data_snapshot", data_snapshot)
    for task, values in metrics.get("tasks", {}).items():
        if values.get("score") is not None:  # NaN metrics are stored as null
            result.set_float_custom_property(f"{task}_score", float(values["score"]))
        if values.get("serving_model"):
            result.set_string_custom_property(f"{task}_serving_model", posixpath.join(result.uri, values["serving_model"]))
        acc = (values.get("tfma") or {}).get("metrics", {}).get("accuracy")
        if acc is not None:
            result.set_float_custom_property(f"{task}_tfma_accuracy", float(acc))
    # Baseline arms (benchmarks.baselines): the selected run's score and the gain of the medians, queryable in MLMD.
    for name, arm in (metrics.get("baselines") or {}).items():
        for task, values in arm.get("tasks", {}).items():
            if values.get("score") is not None:
                result.set_float_custom_property(f"{task}_{name}_score", float(values["score"]))
        for task, gain in (metrics.get("gain_over_baseline") or {}).get(name, {}).items():
            if gain.get("gain_median") is not None:
                result.set_float_custom_property(f"{task}_gain_over_{name}", float(gain["gain_median"]))
    check = metrics.get("init_check") or {}
    if check.get("runs_checked"):
        result.set_int_custom_property("init_check_variables", int(check["variables_compared"]))
        result.set_float_custom_property("init_check_max_abs_diff", float(check["max_abs_diff"]))
