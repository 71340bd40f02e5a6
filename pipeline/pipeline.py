"""``create_pipeline``: the ALBERT DAG from raw text to the benchmark report.

    Importer(wikipedia) ─┐
    Importer(books) ─────┴─ CorpusGen ─ VocabGen ─ PretrainingDataGen ─ Trainer ─┬─ GlueBenchmark ───┐
                                           └──────────────┘  (stats) ────────────┼─ SquadBenchmark ──┤
                                  Importer(glue/squad/race data) ────────────────┼─ Squad2Benchmark ─├─ BenchmarkReport
                                                                                 └─ RaceBenchmark ───┘

Raw inputs enter through Importers, so MLMD lineage runs from every score back to the raw files.
Benchmark nodes exist only for the data sets the config names. Each node's parameters are only the
settings that determine its output (``PipelineConfig.node_parameters``): a change reruns exactly the
nodes downstream of it.

``runtime_parameters=True`` (compiled specs for Vertex AI / KFP) declares the values users change
per run as pipeline parameters — ``num_train_steps``, ``finetune_seeds`` and the raw data locations
(``RUNTIME_PARAMETERS``) — with the config's values as defaults, so ``submit --parameters`` sets them.
"""
from __future__ import annotations

import posixpath
from typing import Any, Dict, List, Optional

from tfx import v1 as tfx

from components import artifacts
from config import canonical_json
from components.tfx_components import BenchmarkEval, BenchmarkReport, CorpusGen, PretrainingDataGen, VocabGen
from pipeline.configs import BENCHMARK_NODE_IDS, PipelineConfig
from pipeline.vertex_training import TRAINER_RUN_FN, create_trainer  # noqa: F401  (TRAINER_RUN_FN re-exported)

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
_IMPORTER_IDS = {"wikipedia": "WikipediaImporter", "books": "BooksImporter", "glue": "GlueDataImporter",
                 "squad": "SquadDataImporter", "squad2": "Squad2DataImporter", "race": "RaceDataImporter"}
_DATA_PARAMETER = {"wikipedia": "wikipedia_dir", "books": "books_dir", "glue": "glue_dir", "squad": "squad_dir",
                   "squad2": "squad_v2_dir", "race": "race_dir"}


def runtime_parameter_values(config: PipelineConfig) -> Dict[str, Any]:
    """The runtime parameters a compiled spec of ``config`` declares, with the config's values (defaults)."""
    values: Dict[str, Any] = {"num_train_steps": config.train.num_train_steps}
    if config.benchmarks.nodes():
        values["finetune_seeds"] = config.benchmarks.seeds
    if config.corpus.wikipedia_dir:
        values["wikipedia_dir"] = config.corpus.wikipedia_dir
    if config.corpus.books_dir:
        values["books_dir"] = config.corpus.books_dir
    for key, uri in config.benchmarks.nodes().items():
        values[_DATA_PARAMETER[key]] = uri
    return values


def _runtime(name: str, default: Any, enabled: bool):
    if not enabled:
        return default
    return tfx.dsl.experimental.RuntimeParameter(name=name, ptype=RUNTIME_PARAMETERS[name][1], default=default)


def _importer(key: str, uri: str, runtime_parameters: bool) -> tfx.dsl.Importer:
    source = _runtime(_DATA_PARAMETER[key], uri, runtime_parameters)
    return tfx.dsl.Importer(source_uri=source, artifact_type=artifacts.RawCorpus).with_id(_IMPORTER_IDS[key])


def create_pipeline(config: PipelineConfig, *, metadata_connection_config=None,
                    beam_pipeline_args: Optional[List[str]] = None, trainer: Optional[object] = None,
                    pipeline_root: Optional[str] = None, trainer_image: Optional[str] = None,
                    runtime_parameters: bool = False) -> tfx.dsl.Pipeline:
    """Build the DAG. ``trainer`` may replace the Trainer node; ``trainer_image`` is the container image the
    Vertex AI Training job runs when ``vertex_training.enabled`` and ``vertex_training.image`` is unset."""
    config.validate()
    params = config.node_parameters()

    def param(node_id: str, key: str) -> str:
        return canonical_json(params[node_id][key])

    root = pipeline_root or config.pipeline_root
    nodes = []

    corpus_inputs = {}
    if config.corpus.wikipedia_dir:
        corpus_inputs["wikipedia"] = _importer("wikipedia", config.corpus.wikipedia_dir, runtime_parameters)
    if config.corpus.books_dir:
        corpus_inputs["books"] = _importer("books", config.corpus.books_dir, runtime_parameters)
    nodes += list(corpus_inputs.values())
    corpus = CorpusGen(config=param("CorpusGen", "corpus"),
                       **{k: v.outputs["result"] for k, v in corpus_inputs.items()})
    vocab = VocabGen(documents=corpus.outputs["documents"], config=param("VocabGen", "vocab"),
                     seed=config.seed)
    data = {key: _importer(key, uri, runtime_parameters) for key, uri in config.benchmarks.nodes().items()}
    dev_inputs = {}
    if config.datagen.eval_source == "benchmark_dev":  # the paper's pretraining dev set
        dev_inputs = {f"{key}_dev": data[key].outputs["result"] for key in ("squad", "race") if key in data}
    datagen = PretrainingDataGen(documents=corpus.outputs["documents"], vocab=vocab.outputs["vocab"],
                                 config=param("PretrainingDataGen", "datagen"), seed=config.seed,
                                 **dev_inputs)
    nodes += [corpus, vocab, datagen]

    if trainer is None:
        # Local Trainer, or Vertex AI Training when config.vertex_training.enabled (pipeline/vertex_training.py);
        # both publish the final eval metrics as properties of the model_run/model artifacts in MLMD.
        trainer = create_trainer(config, datagen.outputs["examples"], posixpath.join(root, "_checkpoints"),
                                 image=trainer_image,
                                 num_train_steps=_runtime("num_train_steps", config.train.num_train_steps,
                                                          runtime_parameters)).with_id("Trainer")
    nodes.append(trainer)

    seeds = _runtime("finetune_seeds", config.benchmarks.seeds, runtime_parameters)
    results: Dict[str, Any] = {}
    for key, importer in data.items():
        node_id = BENCHMARK_NODE_IDS[key]
        evaluator = BenchmarkEval(model=trainer.outputs["model"], dataset=importer.outputs["result"],
                                  config=param(node_id, "settings"), seeds=seeds,
                                  benchmark="squad" if key == "squad2" else key).with_id(node_id)
        nodes += [importer, evaluator]
        results[key] = evaluator.outputs["result"]
    report = BenchmarkReport(model=trainer.outputs["model"], model_run=trainer.outputs["model_run"],
                             statistics=datagen.outputs["statistics"],
                             config=param("BenchmarkReport", "report"), **results)
    nodes.append(report)

    return tfx.dsl.Pipeline(
        pipeline_name=config.pipeline_name,
        pipeline_root=root,
        components=nodes,
        enable_cache=config.enable_cache,
        metadata_connection_config=metadata_connection_config,
        beam_pipeline_args=beam_pipeline_args if beam_pipeline_args is not None else list(config.beam_args),
    )
