"""``create_pipeline``: the ALBERT DAG from raw text to the benchmark report.

    Importer(wikipedia) ─┐
    Importer(books) ─────┴─ CorpusGen ─ VocabGen ─ PretrainingDataGen ─ Trainer ─┬─ BenchmarkEval(glue) ─┐
                                           └──────────────┘  (stats) ────────────┼─ BenchmarkEval(squad) ├─ BenchmarkReport
                                  Importer(glue/squad/race data) ────────────────┴─ BenchmarkEval(race) ─┘

Raw inputs enter through Importers, so MLMD lineage runs from every score back to the raw files.
Benchmark nodes exist only for the data sets the config names.
"""
from __future__ import annotations

import posixpath
from typing import List, Optional

from tfx import v1 as tfx

from components import artifacts
from components.tfx_components import BenchmarkEval, BenchmarkReport, CorpusGen, PretrainingDataGen, VocabGen
from pipeline.configs import PipelineConfig
from pipeline.vertex_training import TRAINER_RUN_FN, create_trainer  # noqa: F401  (TRAINER_RUN_FN re-exported)


def _importer(name: str, uri: str) -> tfx.dsl.Importer:
    return tfx.dsl.Importer(source_uri=uri, artifact_type=artifacts.RawCorpus).with_id(name)


def create_pipeline(config: PipelineConfig, *, metadata_connection_config=None,
                    beam_pipeline_args: Optional[List[str]] = None, trainer: Optional[object] = None,
                    pipeline_root: Optional[str] = None, trainer_image: Optional[str] = None) -> tfx.dsl.Pipeline:
    """Build the DAG. ``trainer`` may replace the Trainer node; ``trainer_image`` is the container image the
    Vertex AI Training job runs when ``vertex_training.enabled`` and ``vertex_training.image`` is unset."""
    config.validate()
    cfg_json = config.to_json()
    root = pipeline_root or config.pipeline_root
    nodes = []

    corpus_inputs = {}
    if config.corpus.wikipedia_dir:
        corpus_inputs["wikipedia"] = _importer("WikipediaImporter", config.corpus.wikipedia_dir)
    if config.corpus.books_dir:
        corpus_inputs["books"] = _importer("BooksImporter", config.corpus.books_dir)
    nodes += list(corpus_inputs.values())
    corpus = CorpusGen(config_json=cfg_json, **{k: v.outputs["result"] for k, v in corpus_inputs.items()})
    vocab = VocabGen(documents=corpus.outputs["documents"], config_json=cfg_json)
    datagen = PretrainingDataGen(documents=corpus.outputs["documents"], vocab=vocab.outputs["vocab"],
                                 config_json=cfg_json)
    nodes += [corpus, vocab, datagen]

    if trainer is None:
        # Local Trainer, or Vertex AI Training when config.vertex_training.enabled (pipeline/vertex_training.py);
        # both publish the final eval metrics as properties of the model_run/model artifacts in MLMD.
        trainer = create_trainer(config, datagen.outputs["examples"], posixpath.join(root, "_checkpoints"),
                                 image=trainer_image).with_id("Trainer")
    nodes.append(trainer)

    b = config.benchmarks
    results = {}
    for name, uri in (("glue", b.glue_dir), ("squad", b.squad_dir), ("race", b.race_dir)):
        if not uri:
            continue
        data = _importer(f"{name.capitalize()}DataImporter", uri)
        evaluator = BenchmarkEval(model=trainer.outputs["model"], dataset=data.outputs["result"],
                                  config_json=cfg_json, benchmark=name).with_id(f"{name.capitalize()}Benchmark")
        nodes += [data, evaluator]
        results[name] = evaluator.outputs["result"]
    report = BenchmarkReport(model=trainer.outputs["model"], model_run=trainer.outputs["model_run"],
                             statistics=datagen.outputs["statistics"], config_json=cfg_json, **results)
    nodes.append(report)

    return tfx.dsl.Pipeline(
        pipeline_name=config.pipeline_name,
        pipeline_root=root,
        components=nodes,
        enable_cache=config.enable_cache,
        metadata_connection_config=metadata_connection_config,
        beam_pipeline_args=beam_pipeline_args if beam_pipeline_args is not None else list(config.beam_args),
    )
