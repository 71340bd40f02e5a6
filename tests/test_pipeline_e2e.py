"""The whole sample DAG, end to end: the shared sample run (tests/conftest.py: `albert-pipeline run --preset sample`,
once per session), then the Kubeflow v2 compile.

It is the test of issue 2's promise — raw text to report on bundled data — and it asserts on what ML Metadata
recorded, not only on files. The rerun served from the cache is tests/test_cli_run.py's (`make sample` on the same
folder) and tests/test_change_impact.py's (on a smaller DAG).
"""
import glob
import json
import os

import pytest

NODES = {"WikipediaImporter", "BooksImporter", "CorpusGen", "VocabGen", "PretrainingDataGen", "Trainer",
         "GlueDataImporter", "SquadDataImporter", "RaceDataImporter", "GlueBenchmark", "SquadBenchmark",
         "RaceBenchmark", "BenchmarkReport", "Blesser", "Pusher"}


pytestmark = [pytest.mark.slow, pytest.mark.reads_sample_run]


@pytest.fixture(scope="module")
def store(sample_run):
    from tests.reliability.mlmd import open_store

    return open_store(sample_run.metadata_path)


def _node_of(store, execution_id):
    from ml_metadata.proto import metadata_store_pb2  # noqa: F401

    ctxs = store.get_contexts_by_execution(execution_id)
    names = [c.name.split(".")[-1] for c in ctxs if store.get_context_types_by_id([c.type_id])[0].name == "node"]
    return names[0] if names else None


def test_every_node_executed_and_completed(store):
    from ml_metadata.proto import metadata_store_pb2

    done = {}
    for execution in store.get_executions():
        done.setdefault(_node_of(store, execution.id), set()).add(execution.last_known_state)
    assert NODES <= set(done), f"missing nodes: {NODES - set(done)}"
    for node in NODES:
        assert done[node] & {metadata_store_pb2.Execution.COMPLETE, metadata_store_pb2.Execution.CACHED}, node


def _producer(store, artifact_id):
    events = [e for e in store.get_events_by_artifact_ids([artifact_id]) if e.type == e.OUTPUT]
    return events[0].execution_id if events else None


def _inputs(store, execution_id):
    return [e.artifact_id for e in store.get_events_by_execution_ids([execution_id]) if e.type == e.INPUT]


def test_report_traces_back_to_raw_files(store, sample_dir):
    """MLMD lineage: report ← benchmarks ← model ← examples ← vocab/documents ← imported raw folders."""
    reports = store.get_artifacts_by_type("albert_tfx.BenchmarkReport")
    assert len(reports) == 1
    seen_uris, frontier = set(), [reports[0].id]
    while frontier:
        artifact_id = frontier.pop()
        artifact = store.get_artifacts_by_id([artifact_id])[0]
        seen_uris.add(artifact.uri)
        execution = _producer(store, artifact_id)
        if execution is not None:
            frontier.extend(_inputs(store, execution))
    for raw in ("wikipedia", "books", "glue", "squad", "race"):
        assert os.path.join(sample_dir, raw) in seen_uris, raw


def test_documents_artifact_counts_recorded(store):
    docs = store.get_artifacts_by_type("albert_tfx.Documents")[0]
    assert docs.custom_properties["num_documents"].int_value >= 15
    assert docs.custom_properties["num_sentences"].int_value > 1000
    assert docs.custom_properties["wikipedia_documents"].int_value >= 10
    assert docs.custom_properties["books_documents"].int_value == 2
    text = open(sorted(glob.glob(os.path.join(docs.uri, "documents-*.txt")))[0], encoding="utf-8").read()
    assert "{{" not in text and "[[" not in text and "\n\n" in text
    # The Beam counters Dataflow shows live are kept on the artifacts too, and agree with the written counts.
    assert docs.custom_properties["beam_books_files"].int_value == 2
    assert docs.custom_properties["beam_books_documents_read"].int_value == 2
    examples = store.get_artifacts_by_type("Examples")[0]
    for split in ("train", "eval"):
        assert examples.custom_properties[f"beam_instances_{split}"].int_value == \
            examples.custom_properties[f"{split}_instances"].int_value > 0
    assert len(examples.custom_properties["fingerprint"].string_value) == 64


def test_vocab_has_albert_special_ids(store):
    import sentencepiece as spm

    vocab = store.get_artifacts_by_type("albert_tfx.SentencePieceModel")[0]
    sp = spm.SentencePieceProcessor(model_file=os.path.join(vocab.uri, "spm.model"))
    assert [sp.id_to_piece(i) for i in range(5)] == ["<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]"]
    assert sp.get_piece_size() == vocab.custom_properties["vocab_size"].int_value == 3000


def test_tfrecords_parse_with_documented_feature_spec(store, sample_run):
    import tensorflow as tf

    from trainer.input_pipeline import feature_spec

    config = sample_run.config
    L, P = config.datagen.max_seq_length, config.datagen.max_predictions_per_seq
    examples = store.get_artifacts_by_type("Examples")[0]
    files = sorted(glob.glob(os.path.join(examples.uri, "Split-train", "*")))
    assert len(files) == config.datagen.num_shards
    n = 0
    for record in tf.data.TFRecordDataset(files, compression_type="GZIP").take(200):
        ex = tf.io.parse_single_example(record, feature_spec(L, P))
        ids, mask, seg = ex["input_ids"].numpy(), ex["input_mask"].numpy(), ex["segment_ids"].numpy()
        length = int(mask.sum())
        assert ids[0] == 2 and ids[length - 1] == 3  # [CLS] ... [SEP]
        assert (ids[length:] == 0).all() and (seg[length:] == 0).all()
        assert int(ex["next_sentence_labels"][0]) in (0, 1)
        n += 1
    assert n == 200
    assert examples.custom_properties["train_instances"].int_value > 1000


def test_trained_model_savedmodel_loads_and_learned(store):
    import numpy as np
    import tensorflow as tf

    model = store.get_artifacts_by_type("Model")[0]
    loaded = tf.saved_model.load(os.path.join(model.uri, "Format-Serving"))
    ids = np.array([[2, 10, 11, 12, 3, 13, 14, 3]], dtype=np.int32)
    out = loaded.signatures["serving_default"](input_ids=tf.constant(ids), input_mask=tf.ones_like(ids),
                                               segment_ids=tf.constant([[0, 0, 0, 0, 0, 1, 1, 1]]))
    assert out["sequence_output"].shape[:2] == (1, 8) and out["mlm_logits"].shape[-1] == 3000
    info = json.load(open(os.path.join(model.uri, "albert", "export_info.json")))
    assert info["final_step"] == 300
    run = store.get_artifacts_by_type("ModelRun")[0]
    history = [json.loads(line) for line in open(os.path.join(run.uri, "train_history.jsonl"))]
    train = [h for h in history if h["split"] == "train"]
    assert train[-1]["mlm_loss"] < train[0]["mlm_loss"] - 1.0  # pretraining really learned something


def _benchmark_outputs(store):
    """benchmark name → (its output artifact, its metrics.json), from the nodes that produced them."""
    out = {}
    for execution in store.get_executions():
        node = _node_of(store, execution.id)
        if node in ("GlueBenchmark", "SquadBenchmark", "RaceBenchmark"):
            (artifact_id,) = [e.artifact_id for e in store.get_events_by_execution_ids([execution.id])
                              if e.type == e.OUTPUT]
            artifact = store.get_artifacts_by_id([artifact_id])[0]
            with open(os.path.join(artifact.uri, "metrics.json"), encoding="utf-8") as f:
                out[node[:-len("Benchmark")].lower()] = (artifact, json.load(f))
    return out


def test_every_task_model_serves_raw_text_as_the_benchmark_predicts(store, sample_dir):
    """Issue 64: every task model of the run (GLUE, SQuAD, RACE) has a raw-text serving model and its
    serving_info.json; on its dev set the served predictions are the benchmark's, example for example (checked by the
    node on every row), and a fresh load of the SQuAD model answers the first dev questions with the prediction file's
    texts at character offsets of the context."""
    import tensorflow as tf
    import tensorflow_text  # noqa: F401 (registers TF Text's ops, as TF Serving links them)

    from components.evaluation.squad.reading import read_squad

    benchmarks = _benchmark_outputs(store)
    kinds = {"glue": "classify", "squad": "answer", "race": "choose"}
    for benchmark, (artifact, metrics) in benchmarks.items():
        for task, m in metrics["tasks"].items():
            assert "serving_model_skipped" not in m, task
            assert m["serving_check"]["same_predictions"] == m["serving_check"]["rows"] == m["num_dev"], task
            with open(os.path.join(artifact.uri, m["serving_info"]), encoding="utf-8") as f:
                info = json.load(f)
            assert info["kind"] == kinds[benchmark] and info["max_seq_length"] in (64, 128), task
            assert os.path.isfile(os.path.join(artifact.uri, m["serving_model"], "saved_model.pb")), task
    artifact, metrics = benchmarks["squad"]
    squad = metrics["tasks"]["SQuAD1.1"]
    with open(os.path.join(artifact.uri, squad["predictions"]), encoding="utf-8") as f:
        predicted = json.load(f)
    dev = read_squad(os.path.join(sample_dir, "squad", "dev-v1.1-sample.json"), on_bad_answer="skip")[:16]
    serve = tf.saved_model.load(os.path.join(artifact.uri, squad["serving_model"])).signatures["serving_default"]
    out = serve(question=tf.constant([e.question for e in dev]), context=tf.constant([e.context for e in dev]))
    texts = [t.decode("utf-8") for t in out["answer_text"].numpy()]
    assert texts == [predicted[e.qid] for e in dev]
    for e, text, start, end in zip(dev, texts, out["answer_start"].numpy(), out["answer_end"].numpy()):
        assert e.context[start:end] == text


def test_report_scores_are_the_benchmarks_rescored_from_their_prediction_files(store, cli, sample_dir):
    """Every score in the report is its benchmark node's, and the official scorer (`albert-pipeline score`) on the
    node's prediction file gives it back; the Table-2 row and its Avg are those numbers."""
    report = store.get_artifacts_by_type("albert_tfx.BenchmarkReport")[0]
    results = json.load(open(os.path.join(report.uri, "results.json")))
    benchmarks = _benchmark_outputs(store)
    assert set(benchmarks) == set(results["results"]) == {"glue", "squad", "race"}
    for name, (_, metrics) in benchmarks.items():
        assert results["results"][name] == metrics, name
    assert set(results["results"]["glue"]["tasks"]) == {"CoLA", "SST-2", "MRPC", "RTE"}
    # One Beam-built Transform graph per (length, single/pair) in the node: SST-2 reuses CoLA's, RTE MRPC's; every
    # task's graph gives the Python featurisation's ids and its serving model the in-memory model's predictions.
    serving = {t: m for t, m in results["results"]["glue"]["tasks"].items()}
    assert {t: m["transform_check"]["graph"] for t, m in serving.items()} == {
        "CoLA": "built", "SST-2": "reused from CoLA", "MRPC": "built", "RTE": "reused from MRPC"}
    for task, m in serving.items():
        assert m["transform_check"]["rows_equal_python_featurisation"] == m["transform_check"]["rows"] == m["num_dev"]
        assert m["serving_check"]["same_predictions"] == m["num_dev"], task
        assert os.path.isdir(os.path.join(benchmarks["glue"][0].uri, task, "transform", "transform_fn")), task

    def rescored(benchmark, dataset, name, metrics, *flags):
        artifact = benchmarks[benchmark][0]
        done = cli("score", benchmark, dataset, os.path.join(artifact.uri, metrics["predictions"]), *flags)
        assert done.returncode == 0, (name, done.stderr[-2000:])
        return json.loads(done.stdout)

    glue = results["results"]["glue"]["tasks"]
    for task, metrics in glue.items():
        scored = rescored("glue", os.path.join(sample_dir, "glue", task, "dev.tsv"), task, metrics, "--task", task)
        keys = [k for k in ("accuracy", "mcc", "f1") if k in metrics]  # the scorer's fractions, the report's %
        assert keys and {k: 100 * scored[k] for k in keys} == pytest.approx({k: metrics[k] for k in keys}), task
    squad = results["results"]["squad"]["tasks"]["SQuAD1.1"]
    scored = rescored("squad", os.path.join(sample_dir, "squad", "dev-v1.1-sample.json"), "SQuAD1.1", squad)
    assert (scored["f1"], scored["exact_match"]) == pytest.approx((squad["f1"], squad["exact_match"]))
    assert 0 <= squad["exact_match"] <= squad["f1"] <= 100
    race = results["results"]["race"]["tasks"]["RACE"]
    scored = rescored("race", os.path.join(sample_dir, "race", "dev"), "RACE", race)
    assert 100 * scored["all"] == pytest.approx(race["all"])
    assert race["all"] == pytest.approx((race["middle"] * race["n_middle"] + race["high"] * race["n_high"])
                                        / race["n_all"])

    # Table 2: SQuAD1.1 F1/EM, SST-2, RACE present; SQuAD2.0 and MNLI not run; Avg over the three (SQuAD first
    # averaged over F1 and EM).
    f1, em, sst2, race_all = squad["f1"], squad["exact_match"], glue["SST-2"]["accuracy"], race["all"]
    avg = ((f1 + em) / 2 + sst2 + race_all) / 3
    assert results["summary"]["avg"] == pytest.approx(avg)
    assert results["summary"]["missing_columns"] == ["SQuAD2.0", "MNLI"]
    text = open(os.path.join(report.uri, "report.md"), encoding="utf-8").read()
    assert f"| This run | {f1:.1f}/{em:.1f} | — | — | {sst2:.1f} | {race_all:.1f} | {avg:.1f} (3 of 5) |" in text
    for task, m in glue.items():  # GLUE table: task | mcc | accuracy | f1 | score | runs | selected step | train / dev
        cells = " | ".join("" if m.get(k) is None else f"{m[k]:.1f}" for k in ("mcc", "accuracy", "f1", "score"))
        runs, step = len(m["run_scores"]), m["selected_step"]
        row = f"| {task} | {cells} | {runs} | {step} | {m['num_train']} / {m['num_dev']} |"
        assert row in text, (row, text[:3000])
    assert os.path.isfile(os.path.join(report.uri, "report.html"))


def test_report_compares_pretrained_with_random_init(store, sample_run):
    """The sample preset's ``random_init`` arm: both arms in results.json, the gain table in the report, and the
    step-0 proof that the pretrained arm started from the exported encoder and the baseline did not."""
    config = sample_run.config
    report = store.get_artifacts_by_type("albert_tfx.BenchmarkReport")[0]
    results = json.load(open(os.path.join(report.uri, "results.json")))
    text = open(os.path.join(report.uri, "report.md"), encoding="utf-8").read()
    gains = results["summary"]["baselines"]["random_init"]
    assert set(gains) == {"CoLA", "SST-2", "MRPC", "RTE", "SQuAD1.1", "RACE"}
    seeds = config.benchmarks.seeds
    for task, g in gains.items():
        p, b = g["pretrained"], g["baseline"]
        assert p["n"] == b["n"] == seeds, task
        assert g["gain_median"] == pytest.approx(p["median"] - b["median"]), task
        assert f"| {task} | random_init | {p['median']:.1f} [{p['min']:.1f} – {p['max']:.1f}] | " in text, task
    glue = results["results"]["glue"]
    assert glue["protocol"]["arms"] == ["pretrained", "random_init"]
    assert len(glue["baselines"]["random_init"]["tasks"]["RTE"]["run_scores"]) == seeds
    assert "## Gain over no pretraining" in text
    checks = results["summary"]["init_check"]
    for bench in ("glue", "squad", "race"):
        assert checks[f"{bench}/pretrained"]["passed"] and checks[f"{bench}/pretrained"]["max_abs_diff"] == 0.0
        assert checks[f"{bench}/random_init"]["passed"]
        assert checks[f"{bench}/random_init"]["equal_informative_variables_max"] == 0


def test_compile_kubeflow_v2_spec_and_load_as_vertex_job(tmp_path):
    from google.auth.credentials import AnonymousCredentials

    from pipeline.cloud import submit as cloud
    from pipeline.settings.configs import build_config
    from pipeline.cloud.kubeflow_v2_runner import compile_pipeline, spec_summary

    config = build_config("sample", pipeline_root="gs://example-bucket/albert")
    spec_path = compile_pipeline(config, str(tmp_path / "spec.json"), image="europe-docker.pkg.dev/p/r/albert-tfx:1")
    summary = spec_summary(spec_path)
    # TFX compiles the latest-blessed-model resolver into two query tasks (blessing, then its model); the data is
    # resolved when a run starts by the DataSnapshot task (pipeline/tasks/snapshot_task.py).
    resolver = {"LatestBlessedModel-model-blessing-resolver", "LatestBlessedModel-model-resolver"}
    # The data gate's baseline: a LatestArtifact resolver of its newest result and the DataGateBaseline task that
    # chooses from it when a run starts (pipeline/tasks/gate_baseline_task.py; Vertex AI compiles TFX's two built-in
    # resolvers alone).
    tasks = NODES | resolver | {"DataSnapshot", "DataGateLatest", "DataGateBaseline", "DataGate", "DataGateCheck",
                                "ExamplesGate"}
    assert set(summary["tasks"]) == tasks
    assert summary["tasks"]["DataSnapshot"] == [] and "DataSnapshot" in summary["tasks"]["CorpusGen"]
    deps = summary["tasks"]
    assert deps["Blesser"] == ["BenchmarkReport", "LatestBlessedModel-model-resolver", "Trainer"]
    assert {"Blesser", "BenchmarkReport", "CorpusGen", "Trainer"} == set(deps["Pusher"])
    assert deps["VocabGen"] == ["CorpusGen", "DataGateCheck"]  # nothing expensive runs on a span the gate stopped
    assert deps["DataGateCheck"] == ["DataGate"]
    # Contamination: the dev passages; the baseline: the task's parameter.
    assert deps["DataGate"] == ["CorpusGen", "DataGateBaseline", "GlueDataImporter", "RaceDataImporter",
                                "SquadDataImporter"]
    assert deps["DataGateBaseline"] == ["DataGateLatest", "DataSnapshot"]
    assert {"CorpusGen", "VocabGen"} <= set(deps["PretrainingDataGen"])
    assert deps["Trainer"] == ["ExamplesGate", "PretrainingDataGen"]  # the examples gate's verdict first
    assert deps["ExamplesGate"] == ["CorpusGen", "PretrainingDataGen", "VocabGen"]
    assert {"Trainer", "GlueDataImporter"} <= set(deps["GlueBenchmark"])
    assert {"GlueBenchmark", "SquadBenchmark", "RaceBenchmark", "Trainer", "PretrainingDataGen"} <= set(
        deps["BenchmarkReport"])
    assert summary["images"] == ["europe-docker.pkg.dev/p/r/albert-tfx:1"]
    spec = json.load(open(spec_path))["pipelineSpec"]
    trainer_params = json.dumps(spec["root"]["dag"]["tasks"]["Trainer"]["inputs"]["parameters"])
    assert "trainer.task.run_fn" in trainer_params and "checkpoint_root" in trainer_params

    job = cloud.build_pipeline_job(
        spec_path, cloud.VertexTarget(project="my-project", region="europe-west4",
                                      pipeline_root="gs://example-bucket/albert", labels={"team": "nlp"}),
        display_name="albert-sample", credentials=AnonymousCredentials(),
        # The bundled data folders are this machine's: the job reads copies in the bucket.
        parameter_values={k: f"gs://example-bucket/data/{k}" for k in
                          ("wikipedia_dir", "books_dir", "glue_dir", "squad_dir", "race_dir")})
    resource = job._gca_resource  # the request body submit() would send (public getter needs a created job)
    assert resource.runtime_config.gcs_output_directory == "gs://example-bucket/albert"
    assert resource.labels["team"] == "nlp"
    assert set(resource.pipeline_spec["root"]["dag"]["tasks"]) == tasks
    # Vertex's client loads the schema-2.1 spec offline: typed parameterValues, no deprecated `parameters`.
    assert resource.pipeline_spec["schemaVersion"] == "2.1.0"
    assert dict(resource.runtime_config.parameter_values)["num_train_steps"] == 300
    assert len(resource.runtime_config.parameters) == 0


def test_no_beam_step_tries_prism(sample_run):
    """Beam 2.77's DirectRunner first tries PrismRunner, which downloads a binary at run time. The presets' Beam args
    name no runner (unchanged, so are the nodes' cache keys); the executors' module makes FnApiRunner Beam's default
    (components/beam_options.py), so the run's log never mentions Prism."""
    import glob

    from apache_beam.options.pipeline_options import StandardOptions

    from components import node_shell  # noqa: F401  (sets the default, as in every executor's process)
    from pipeline.pipeline import create_pipeline

    assert create_pipeline(sample_run.config).beam_pipeline_args == [
        "--direct_running_mode=in_memory", "--direct_num_workers=1"]
    assert StandardOptions.DEFAULT_RUNNER == "FnApiRunner"
    logs = sorted(glob.glob(os.path.join(sample_run.out, "logs", "run-*.log")))  # the run, then its cached rerun
    assert logs
    text = "".join(open(log, errors="replace").read() for log in logs)
    assert "CorpusGen" in text and "prism" not in text.lower()


def _expected_contamination(documents_dir, sample_dir):
    """Per benchmark: (dev passages with a 13-gram, ids of those with a 13-gram in the pretraining documents),
    computed here from the bundled dev files and CorpusGen's shards with the core's n-grams alone (not the gate's
    passage reader, combiner, Beam graph or summary)."""
    from components.datagate.contamination import passage_ngrams

    corpus = set()
    for path in sorted(glob.glob(os.path.join(documents_dir, "documents-*.txt"))):
        with open(path, encoding="utf-8") as f:
            for block in f.read().split("\n\n"):
                if block.strip():
                    corpus.update(int(h) for h in passage_ngrams(block.strip().split("\n")))
    passages = {"squad": {}, "race": {}, "glue": {}}
    for path in sorted(glob.glob(os.path.join(sample_dir, "squad", "dev*.json"))):
        with open(path, encoding="utf-8") as f:
            for i, article in enumerate(json.load(f)["data"]):
                for j, paragraph in enumerate(article["paragraphs"]):
                    passages["squad"][f"squad:{os.path.basename(path)}:{i}:{j}"] = paragraph["context"]
    for path in sorted(glob.glob(os.path.join(sample_dir, "race", "dev", "*", "*.txt"))):
        with open(path, encoding="utf-8") as f:
            passages["race"][os.path.relpath(path, sample_dir)] = json.load(f)["article"]
    for path in sorted(glob.glob(os.path.join(sample_dir, "glue", "*", "dev.tsv"))):  # one passage per example
        task = os.path.basename(os.path.dirname(path))
        with open(path, encoding="utf-8") as f:
            rows = [line.rstrip("\n").split("\t") for line in f]
        if task == "CoLA":  # no header; the sentence is the 4th column, the row number the guid
            texts = {f"dev-{i}": row[3] for i, row in enumerate(rows)}
        else:  # a header; the sentence columns before the label (SST-2: one; MRPC: its two strings; RTE: two)
            columns = {"SST-2": [0], "MRPC": [3, 4], "RTE": [1, 2]}[task]
            index = {"SST-2": None, "MRPC": None, "RTE": 0}[task]
            texts = {f"dev-{row[index] if index is not None else i}": " ".join(row[c] for c in columns)
                     for i, row in enumerate(rows[1:])}
        passages["glue"].update({f"glue:{task}:dev:{guid}": text for guid, text in texts.items()})
    out = {}
    for benchmark, texts in passages.items():
        grams = {pid: {int(h) for h in passage_ngrams(text)} for pid, text in texts.items()}
        long_enough = {pid: g for pid, g in grams.items() if g}
        out[benchmark] = (len(long_enough), len(grams) - len(long_enough),
                          sorted(pid for pid, g in long_enough.items() if g & corpus))
    return out


def _execution(store, node):
    """The execution of ``node`` in the sample run's first run (the cached rerun's come later: CACHED, or COMPLETE
    for the Blesser and the Pusher, which always run)."""
    return min((e for e in store.get_executions() if _node_of(store, e.id) == node), key=lambda e: e.id)


def _rerun_node(store, node, replaced, outputs, **parameters):
    """Run ``node``'s function (its TFX executor's own Python function) again in this process with the inputs and
    parameters its execution in the sample run recorded in MLMD, but ``replaced`` (input key → an artifact, or a
    folder: the recorded artifact, its properties kept, at that folder) and ``parameters``; ``outputs``: output key
    → the folder of its new artifact. Returns the new output artifacts. The sample run's folders are only read."""
    from tfx.types import artifact_utils

    from components.datagate.datagate_component import DataGate
    from components.release.release_component import Pusher
    from components.report.report_component import BenchmarkReport

    components = {"DataGate": DataGate, "BenchmarkReport": BenchmarkReport, "Pusher": Pusher}

    execution = _execution(store, node)
    events = store.get_events_by_execution_ids([execution.id])
    recorded = {a.id: a for a in store.get_artifacts_by_id([e.artifact_id for e in events])}
    types = {t.id: t for t in store.get_artifact_types()}
    args, made = {}, {}
    for event in events:
        key, artifact = event.path.steps[0].key, recorded[event.artifact_id]
        if event.type == event.INPUT:
            given = replaced.get(key)
            args[key] = given if given is not None and not isinstance(given, str) else \
                artifact_utils.deserialize_artifact(types[artifact.type_id], artifact)
            if isinstance(given, str):
                args[key].uri = given
        elif event.type == event.OUTPUT:
            made[key] = artifact_utils.deserialize_artifact(types[artifact.type_id])
            made[key].uri = str(outputs[key])
    args.update({k: v.string_value for k, v in execution.custom_properties.items()})
    args.update(parameters)
    components[node].EXECUTOR_SPEC.executor_class._FUNCTION(**args, **made)
    return made


# The dev passages planted whole or in part in a copy of the sample run's corpus (:func:`planted`), by the gate's ids.
PLANTED = {"glue": ["glue:RTE:dev:dev-0"], "race": ["race:high98.txt"],
           "squad": ["squad:dev-v1.1-sample.json:0:1", "squad:dev-v1.1-sample.json:2:3"]}


@pytest.fixture(scope="module")
def planted(store, sample_dir, tmp_path_factory):
    """The sample run's DataGate, BenchmarkReport and Pusher run again on its own documents with dev passages
    planted in them (:data:`PLANTED`): SQuAD paragraph 0:1 and RACE article high/98 whole, SQuAD paragraph 2:3 as
    40 of its words quoted inside a text of its own, RTE dev example 0's first sentence after a line of its own;
    RACE article middle/9's first 8 words (fewer than 13 tokens, so no 13-gram) are planted too and count for
    nothing. Everything else is the sample run's: its model, results,
    blessing, the gate's and the report's settings. Returns the folders of the planted documents, the gate's result,
    the report and the release."""
    import shutil

    import apache_beam as beam
    from apache_beam.options.pipeline_options import PipelineOptions

    from components.datagate import datagate_beam
    from components.beam_options import local_args
    from components.text.documents import make_document, to_text_block

    root = tmp_path_factory.mktemp("planted")
    [documents] = store.get_artifacts_by_type("albert_tfx.Documents")
    shutil.copytree(documents.uri, root / "documents")
    with open(os.path.join(sample_dir, "squad", "dev-v1.1-sample.json"), encoding="utf-8") as f:
        articles = json.load(f)["data"]

    def race_article(level, name):
        with open(os.path.join(sample_dir, "race", "dev", level, name), encoding="utf-8") as f:
            return json.load(f)["article"]

    quoted = articles[2]["paragraphs"][3]["context"].split()[10:50]
    with open(os.path.join(sample_dir, "glue", "RTE", "dev.tsv"), encoding="utf-8") as f:
        rte = f.read().split("\n")[1].split("\t")[1]  # RTE dev example 0's first sentence (22 tokens)
    texts = [articles[0]["paragraphs"][1]["context"],
             "A reader wrote to us about a page she had kept. " + " ".join(quoted) + " That was all of it.",
             race_article("high", "98.txt"),
             "An unrelated letter begins: " + " ".join(race_article("middle", "9.txt").split()[:8]) + " and ends.",
             "The news in brief. " + rte]
    shard = sorted(glob.glob(str(root / "documents" / "documents-*-of-*.txt")))[-1]
    with open(shard, "a", encoding="utf-8") as f:
        f.write("".join(to_text_block(make_document(f"planted-{i}", "corpus", f"planted-{i}", [text]))
                        for i, text in enumerate(texts)))
    gate = _rerun_node(store, "DataGate", {"documents": str(root / "documents")}, {"result": root / "gate"},
                       beam_pipeline=beam.Pipeline(options=PipelineOptions(local_args(1))))["result"]
    report = _rerun_node(store, "BenchmarkReport", {"data_gate": gate}, {"report": root / "report"})["report"]
    settings = json.loads(_execution(store, "Pusher").custom_properties["config"].string_value)
    _rerun_node(store, "Pusher", {"report": report}, {"pushed_model": root / "pushed"},
                config=json.dumps({**settings, "push_destination": str(root / "releases")}))
    return {"documents": str(root / "documents"), "gate": gate, "summary": datagate_beam.read_summary(gate.uri),
            "report": str(root / "report"), "release": str(root / "releases" / "1"), "planted_documents": len(texts)}


def _gate_section(text):
    return text.split("\n## Data gate\n\n", 1)[1].split("\n## ", 1)[0]


def _contamination_table(expected, contaminated):
    """The contamination table as the report and the card must show it: per benchmark, (dev passages with a
    13-gram, too short, ids found) from ``expected`` (:func:`_expected_contamination`), ``contaminated`` of them."""
    rows, total = [], [0, 0, 0]
    for benchmark in ("glue", "race", "squad"):
        n, short, _ = expected[benchmark]
        found = len(contaminated[benchmark])
        share = f"{100 * found / n:.2f}%"
        rows.append(f"| {benchmark} | {n:,} | {short:,} | {found:,} | {share} | {found:,} | {share} |")
        total = [total[0] + n, total[1] + short, total[2] + found]
    share = f"{100 * total[2] / total[0]:.2f}%"
    rows.append(f"| all | {total[0]:,} | {total[1]:,} | {total[2]:,} | {share} | {total[2]:,} | {share} |")
    return ("| benchmark | dev passages (≥ 13 tokens) | too short | contaminated by span 0 | share | "
            "contaminated by span 0 (total) | share (total) |\n|---|---|---|---|---|---|---|\n"
            + "\n".join(rows) + "\n"), total[2] / total[0]


def test_the_report_and_the_card_show_the_data_gate_and_the_benchmarks_contamination(store, sample_run, sample_dir,
                                                                                     planted):
    """Issue 55's done-when: the sample run's report has the "Data gate" section, with the contamination of its
    benchmarks' dev sets by the bundled Wikipedia and books, and the pushed version's card says the same. The bundled
    corpus holds none of the dev passages, so the same nodes run again on it with three passages planted
    (:func:`planted`): the gate, the report and the card must count exactly those."""
    [documents] = store.get_artifacts_by_type("albert_tfx.Documents")
    [gate_result] = store.get_artifacts_by_type("albert_tfx.DataGateResult")
    expected = _expected_contamination(documents.uri, sample_dir)
    # The bundled numbers (docs/data.md, "Data gate"): none of data/sample's dev passages is in its corpus.
    assert {b: (n, short, len(found)) for b, (n, short, found) in expected.items()} == {
        "glue": (283, 117, 0), "race": (8, 0, 0), "squad": (12, 0, 0)}
    report = json.loads(sample_run.first.stdout)["report"]
    with open(report, encoding="utf-8") as f:
        section = _gate_section(f.read())
    with open(os.path.join(os.path.dirname(report), "results.json"), encoding="utf-8") as f:
        gate = json.load(f)["summary"]["data_gate"]
    # The unpatterned sample corpus is span 0: checked absolutely, passed, no baseline.
    verdict = (f"Span 0 passed all {len(gate['checks'])} checks of the data gate (no baseline: the corpus has no "
               "span pattern, so only the absolute limits apply).")
    assert section.startswith(f"{verdict}\n\n| statistic | span 0 |\n|---|---|\n"
                              f"| documents | {documents.custom_properties['num_documents'].int_value:,} |\n")
    assert gate_result.custom_properties["passed"].int_value == 1 and gate["span"] == 0
    assert "![Data gate: document lengths and token frequencies, this span over its baseline](data_gate.png)" \
        in section and os.path.isfile(os.path.join(os.path.dirname(report), "data_gate.png"))
    for benchmark in ("glue", "race", "squad"):
        n, short, _ = expected[benchmark]
        c = gate["contamination"]["benchmarks"][benchmark]
        assert (c["passages"], c["short"], c["contaminated"], c["total"]) == (n, short, [], [])
    table, share = _contamination_table(expected, {"glue": [], "race": [], "squad": []})
    assert table in section
    assert gate_result.custom_properties["contaminated_share"].double_value == share == 0
    # The card of version 1 says the same: the verdict and the contamination table.
    with open(os.path.join(sample_run.pipeline_root, "releases", "1", "model_card.md"), encoding="utf-8") as f:
        assert _gate_section(f.read()).startswith(f"{verdict}\n\n{table}")

    # The planted copy: the passages are in the corpus (the core's n-grams alone, on the files themselves, find
    # them and nothing else), and the gate, the report and the card count exactly them.
    found = _expected_contamination(planted["documents"], sample_dir)
    assert {b: (n, short) for b, (n, short, _) in found.items()} == {"glue": (283, 117), "race": (8, 0),
                                                                      "squad": (12, 0)}
    assert found["squad"][2] == PLANTED["squad"] and found["glue"][2] == PLANTED["glue"]
    assert [f"race:{p.split(os.sep)[-2]}{p.split(os.sep)[-1]}" for p in found["race"][2]] == PLANTED["race"]
    summary = planted["summary"]
    assert summary["documents"] == documents.custom_properties["num_documents"].int_value + planted["planted_documents"]
    for benchmark in ("glue", "race", "squad"):
        c = summary["contamination"]["benchmarks"][benchmark]
        assert (c["passages"], c["contaminated"], c["total"]) == (expected[benchmark][0], PLANTED[benchmark],
                                                                   PLANTED[benchmark])
    assert summary["contamination"]["contaminated"] == sorted(PLANTED["glue"] + PLANTED["race"] + PLANTED["squad"])
    table, share = _contamination_table(expected, PLANTED)
    assert share == 4 / 303 and planted["gate"].get_float_custom_property("contaminated_share") == share
    with open(os.path.join(planted["report"], "report.md"), encoding="utf-8") as f:
        section = _gate_section(f.read())
    assert section.startswith(f"{verdict}\n\n| statistic | span 0 |\n|---|---|\n| documents | "
                              f"{summary['documents']:,} |\n") and table in section
    with open(os.path.join(planted["report"], "results.json"), encoding="utf-8") as f:
        assert json.load(f)["summary"]["data_gate"]["contamination"]["contaminated"] == \
            summary["contamination"]["contaminated"]
    with open(os.path.join(planted["release"], "model_card.md"), encoding="utf-8") as f:
        assert _gate_section(f.read()).startswith(f"{verdict}\n\n{table}")
