"""``create_pipeline``: the ALBERT DAG from raw text to a released model.

    Importer(wikipedia) ─┐
    Importer(books) ─────┴─ CorpusGen ─ VocabGen ─ PretrainingDataGen ─ Trainer ─┬─ GlueBenchmark ───┐
                                           └──────────────┘  (stats) ────────────┼─ SquadBenchmark ──┤
                                  Importer(glue/squad/race data) ────────────────┼─ Squad2Benchmark ─├─ BenchmarkReport
                                                                                 └─ RaceBenchmark ───┘        │
                    LatestBlessedModel (resolver: the pipeline's last blessed model) ─ Blesser ─ Pusher ──────┘

Between CorpusGen and VocabGen sits the data gate (``gate.enabled``, docs/data.md "Data gate"): ``DataGateBaseline``
(a resolver: the result of the last span that went through; in a compiled spec a task after a ``LatestArtifact``
resolver, pipeline/tasks/gate_baseline_task.py) → ``DataGate`` (measures and checks the span, always publishes its result)
→ ``DataGateCheck`` (fails the run on a span that failed and was not accepted).
VocabGen depends on the check without taking an artifact from it (``add_upstream_node``): no cache key moves, and
nothing after the gate runs on a broken span. The gate's second stage, ``ExamplesGate`` (the examples' statistics per
language), sits between PretrainingDataGen and the Trainer, which depends on it the same way.

Raw inputs enter through Importers, so MLMD lineage runs from every score back to the raw files. The release
is TFX's pattern: a ``LatestBlessedModelStrategy`` resolver finds the last blessed model, ``Blesser`` decides
against it from the report (``release.*``) and always writes a ``ModelBlessing``, and ``Pusher`` pushes a blessed
model as a new version (:mod:`components.release`).
Benchmark nodes exist only for the data sets the config names. With ``mode=benchmark`` the DAG has no corpus,
vocabulary, data or pretraining nodes: ``ModelImport`` brings the model at ``train.init_from`` in, laid out as the
Trainer's model, and the benchmarks, report, blessing and push run on it as above. Every node's parameters are
``PipelineConfig.node_parameters()`` and nothing else: only the settings that determine its output, so
a change reruns exactly the nodes downstream of it.

``runtime_parameters=True`` (compiled specs for Vertex AI / KFP) declares the values users change
per run as pipeline parameters — ``num_train_steps``, ``finetune_seeds`` and the raw data locations
(``RUNTIME_PARAMETERS``) — with the config's values as defaults, so ``submit --parameters`` sets them.

TFX classes come from their own modules rather than ``tfx.v1``, whose import (every standard component and
extension, ``google.cloud.aiplatform`` included) would add ~10 s to ``run``, ``plan`` and ``compile``.
"""
from __future__ import annotations

from typing import Any, Dict, Optional

from tfx.dsl.components.common.importer import Importer
from tfx.dsl.components.common.resolver import Resolver, ResolverStrategy
from tfx.dsl.input_resolution.strategies.latest_artifact_strategy import LatestArtifactStrategy
from tfx.dsl.input_resolution.strategies.latest_blessed_model_strategy import LatestBlessedModelStrategy
from tfx.orchestration.data_types import RuntimeParameter
from tfx.orchestration.pipeline import Pipeline
from tfx.types import Channel, standard_artifacts

from components import artifacts
from components.datagate import datagate_result
from components.corpus.corpus_component import CorpusGen
from components.datagate.datagate_component import DataGate, DataGateCheck, ExamplesGate
from components.datagen.datagen_component import PretrainingDataGen
from components.evaluation.benchmark_component import BenchmarkEval
from components.model_import.model_import_component import ModelImport
from components.release.release_component import Blesser, Pusher
from components.report.report_component import BenchmarkReport
from components.vocab.vocab_component import VocabGen
from config import canonical_json
from pipeline.tasks import gate_baseline_task
from pipeline.settings.configs import (BENCHMARK_NODE_IDS, DATA_GATE_NODE, EXAMPLES_GATE_NODE, GATE_BASELINE_NODE,
                                       GATE_CHECK_NODE, IMPORTER_OUTPUT_KEY, IMPORTERS, MODEL_IMPORT_NODE,
                                       PipelineConfig)
from trainer.trainer_component import create_trainer

# Pipeline runtime parameter → (config key it overrides, type).
RUNTIME_PARAMETERS = {
    "num_train_steps": ("train.num_train_steps", int),
    "finetune_seeds": ("benchmarks.seeds", int),
    "wikipedia_dir": ("corpus.wikipedia_dir", str),
    "books_dir": ("corpus.books_dir", str),
    "glue_dir": ("benchmarks.glue_dir", str),
    "squad_dir": ("benchmarks.squad_dir", str),
    "squad_v2_dir": ("benchmarks.squad_v2_dir", str),
    "race_dir": ("benchmarks.race_dir", str),
}
_RUNTIME_BY_SETTING = {setting: name for name, (setting, _) in RUNTIME_PARAMETERS.items()}


def _runtime_parameters(config: PipelineConfig, image: Optional[str] = None) -> Dict[str, Dict[str, str]]:
    """Node id → {parameter → the runtime parameter it becomes}, from where each parameter comes from."""
    settings = config.parameter_settings(image)
    return {node: {param: _RUNTIME_BY_SETTING[setting] for param, setting in params.items()
                   if setting in _RUNTIME_BY_SETTING}
            for node, params in settings.items()}


def runtime_parameter_values(config: PipelineConfig, image: Optional[str] = None) -> Dict[str, Any]:
    """The runtime parameters a compiled spec of ``config`` declares, with the config's values (defaults)."""
    params = config.node_parameters(image)
    return {name: params[node][param] for node, names in _runtime_parameters(config, image).items()
            for param, name in names.items()}


def create_pipeline(config: PipelineConfig, *, metadata_connection_config=None, image: Optional[str] = None,
                    runtime_parameters: bool = False) -> Pipeline:
    """Build the DAG of a config from ``build_config`` (resolved, validated, frozen). ``image`` is the container
    image the Vertex AI Training job runs when ``vertex_training.enabled`` and ``vertex_training.image`` is unset."""
    if not config.frozen:
        raise TypeError("create_pipeline needs the resolved, validated configuration of build_config()")
    params = config.node_parameters(image)
    runtime = _runtime_parameters(config, image) if runtime_parameters else {}

    def args(node_id: str) -> Dict[str, Any]:
        """The node's parameters as its component takes them: JSON ``config``, runtime parameters when compiled."""
        out = {}
        for name, value in params[node_id].items():
            if name in runtime.get(node_id, {}):
                rp = runtime[node_id][name]
                value = RuntimeParameter(name=rp, ptype=RUNTIME_PARAMETERS[rp][1], default=value)
            elif name == "config":
                value = canonical_json(value)
            out[name] = value
        return out

    def importer(key: str) -> Importer:
        node_id = IMPORTERS[key][0]
        p = args(node_id)
        return Importer(source_uri=p["artifact_uri"], artifact_type=artifacts.RawCorpus,
                        reimport=p["reimport"], output_key=p["output_key"],
                        custom_properties=p.get("custom_properties")).with_id(node_id)

    nodes = []
    consumers = config.data_consumers()  # node → {its input key → the data key whose Importer feeds it}
    data = {key: importer(key) for key in config.benchmarks.nodes()}
    pretraining: Dict[str, Any] = {}  # the Trainer's and datagen's outputs the report and the push read
    gate_result: Dict[str, Any] = {}  # the data gate's result the report reads (none without a gate)
    if config.mode == "benchmark":
        model_import = ModelImport(**args(MODEL_IMPORT_NODE)).with_id(MODEL_IMPORT_NODE)
        model = model_import.outputs["model"]
        nodes.append(model_import)
    else:
        corpus_inputs = {key: importer(key) for key in consumers["CorpusGen"].values()}
        nodes += list(corpus_inputs.values())
        corpus = CorpusGen(**args("CorpusGen"), **{name: corpus_inputs[key].outputs[IMPORTER_OUTPUT_KEY]
                                                   for name, key in consumers["CorpusGen"].items()})
        vocab = VocabGen(documents=corpus.outputs["documents"], **args("VocabGen"))
        if config.gate.enabled:
            gate_nodes = _data_gate(config, corpus, data, args, compiled=runtime_parameters)
            # VocabGen, the first expensive node (everything after it depends on it), starts only after the gate's
            # check succeeded: a dependency without artifacts, so no node's inputs and no cache key move.
            vocab.add_upstream_node(gate_nodes[-1])
            nodes += gate_nodes
            gate_result = {"data_gate": gate_nodes[-2].outputs["result"]}
        # With datagen.eval_source=benchmark_dev, the SQuAD and RACE dev articles (the paper's pretraining dev set).
        dev_inputs = {name: data[key].outputs[IMPORTER_OUTPUT_KEY]
                      for name, key in consumers.get("PretrainingDataGen", {}).items()}
        datagen = PretrainingDataGen(documents=corpus.outputs["documents"], vocab=vocab.outputs["vocab"],
                                     **args("PretrainingDataGen"), **dev_inputs)
        # Local Trainer, or Vertex AI Training when config.vertex_training.enabled (trainer/trainer_component.py);
        # both publish the final eval metrics as properties of the model_run/model artifacts in MLMD.
        trainer = create_trainer(args("Trainer"), datagen.outputs["examples"]).with_id("Trainer")
        nodes += [corpus, vocab, datagen, trainer]
        if config.gate.enabled:
            # The gate's second stage: the examples' statistics per language. The Trainer starts only after it
            # succeeded (a dependency without artifacts: no node's inputs and no cache key move).
            examples_gate = ExamplesGate(documents=corpus.outputs["documents"], vocab=vocab.outputs["vocab"],
                                         statistics=datagen.outputs["statistics"],
                                         **args(EXAMPLES_GATE_NODE)).with_id(EXAMPLES_GATE_NODE)
            trainer.add_upstream_node(examples_gate)
            nodes.append(examples_gate)
        model = trainer.outputs["model"]
        pretraining = {"model_run": trainer.outputs["model_run"], "statistics": datagen.outputs["statistics"],
                       "documents": corpus.outputs["documents"]}

    results: Dict[str, Any] = {}
    for key, data_importer in data.items():
        node_id = BENCHMARK_NODE_IDS[key]
        evaluator = BenchmarkEval(model=model, dataset=data_importer.outputs[IMPORTER_OUTPUT_KEY],
                                  **args(node_id)).with_id(node_id)
        nodes += [data_importer, evaluator]
        results[key] = evaluator.outputs["result"]
    report = BenchmarkReport(model=model, **pretraining, **gate_result, **args("BenchmarkReport"), **results)
    nodes.append(report)

    latest = Resolver(strategy_class=LatestBlessedModelStrategy, model=Channel(type=standard_artifacts.Model),
                      model_blessing=Channel(type=standard_artifacts.ModelBlessing)).with_id("LatestBlessedModel")
    blesser = Blesser(model=model, report=report.outputs["report"],
                      baseline_model=latest.outputs["model"],
                      **args("Blesser"))
    pusher = Pusher(model=model, report=report.outputs["report"], blessing=blesser.outputs["blessing"],
                    **{k: v for k, v in pretraining.items() if k != "statistics"}, **args("Pusher"))
    nodes += [latest, blesser, pusher]

    return Pipeline(
        pipeline_name=config.pipeline_name,
        pipeline_root=config.pipeline_root,
        components=nodes,
        enable_cache=config.enable_cache,
        metadata_connection_config=metadata_connection_config,
        beam_pipeline_args=list(config.beam_args),
    )


GATE_RESOLVED = ("baseline", "acceptance")  # the data gate resolver's outputs that DataGate takes


class GateBaselineStrategy(ResolverStrategy):
    """The data gate's earlier results a run's DataGate takes (:func:`components.datagate.datagate_result.select_inputs`):
    ``baseline``, the result of the last span that went through the gate before this run's span (passed, or was
    accepted), and ``acceptance``, an earlier result that accepted this very data knowingly. Inputs: ``documents``
    (this run's CorpusGen output, whose ``data_snapshot`` names its span and data), and ``baseline`` and
    ``acceptance`` each every ``DataGateResult`` of the pipeline (a resolver's outputs are its inputs' keys); outputs
    the same keys, each of the two holding the result chosen, or nothing. A rerun of the same span resolves the same
    artifacts, so an unchanged tick is a cache hit; a failed span never becomes a baseline."""

    def resolve_artifacts(self, store, input_dict):
        documents = input_dict.get("documents", [])
        snapshot = [d.get_string_custom_property("data_snapshot") for d in documents
                    if d.has_custom_property("data_snapshot")]
        results = {r.id: r for key in GATE_RESOLVED for r in input_dict.get(key, [])}
        chosen = datagate_result.select_inputs(snapshot[0] if snapshot else None,
                                               [_gate_facts(r) for r in results.values()])
        return {"documents": documents,
                **{key: [results[chosen[key]]] if chosen[key] is not None else [] for key in GATE_RESOLVED}}


def _gate_facts(result):
    """A DataGateResult's facts (:data:`components.datagate.datagate_result.RESULT_FACTS`) as ``select_inputs`` takes them."""
    facts = {"id": result.id}
    for name in datagate_result.RESULT_FACTS:
        if result.has_custom_property(name):
            facts[name] = (result.get_string_custom_property(name) if name == "data_fingerprint"
                           else result.get_int_custom_property(name))
    return facts


def _data_gate(config: PipelineConfig, corpus, data, args, *, compiled: bool):
    """The gate's nodes, in order: the baseline resolver, ``DataGate`` and ``DataGateCheck``. A local run's resolver
    hands DataGate the results it chose. Kubeflow V2 / Vertex AI compile TFX's latest-artifact and
    latest-blessed-model resolvers alone, so a compiled spec's resolver is a ``LatestArtifact`` one, of the newest
    ``DataGateResult``, which no node takes: compiling adds the ``DataGateBaseline`` task, which applies the same
    rule to it and gives DataGate the URIs chosen (:mod:`pipeline.tasks.gate_baseline_task`)."""
    nodes = []
    inputs = {name: data[key].outputs[IMPORTER_OUTPUT_KEY]
              for name, key in config.gate_contamination_inputs().items()}
    if compiled:
        nodes.append(Resolver(strategy_class=LatestArtifactStrategy,
                              **{gate_baseline_task.RESULT_INPUT: Channel(type=artifacts.DataGateResult)}
                              ).with_id(gate_baseline_task.RESOLVER))
    else:
        resolver = Resolver(strategy_class=GateBaselineStrategy, documents=corpus.outputs["documents"],
                            **{key: Channel(type=artifacts.DataGateResult) for key in GATE_RESOLVED}
                            ).with_id(GATE_BASELINE_NODE)
        nodes.append(resolver)
        inputs.update({key: resolver.outputs[key] for key in GATE_RESOLVED})
    gate = DataGate(documents=corpus.outputs["documents"], **args(DATA_GATE_NODE), **inputs).with_id(DATA_GATE_NODE)
    check = DataGateCheck(result=gate.outputs["result"]).with_id(GATE_CHECK_NODE)
    return nodes + [gate, check]
