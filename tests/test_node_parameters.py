"""Each node's parameters are exactly the settings that determine its output (issue 13), they come from one
function (``PipelineConfig.node_parameters``) that the compiled DAG really uses, and ``plan`` computes the cache
key the way TFX's launcher does."""
import json

import pytest

from config.schema import ConfigError, canonical_json
from trainer.trainer_config import ModelConfig, TrainConfig
from pipeline.settings.configs import apply_overrides, build_config

IMAGE = "europe-docker.pkg.dev/p/r/albert-tfx:1"


def _changed_nodes(override):
    base = build_config("sample").node_parameters()
    new = build_config("sample", overrides=[override]).node_parameters()
    return {node for node in set(base) | set(new) if base.get(node) != new.get(node)}


@pytest.mark.parametrize("override,nodes", [
    ("benchmarks.hparams.RTE.learning_rate=0.001", {"GlueBenchmark"}),
    ("benchmarks.hparams.RACE.train_steps=7", {"RaceBenchmark"}),
    ("benchmarks.hparams.SQuAD1.1.batch_size=4", {"SquadBenchmark"}),
    ("benchmarks.doc_stride=32", {"SquadBenchmark"}),
    ("benchmarks.tfma=false", {"GlueBenchmark"}),
    # On by default, and then not in the SQuAD / RACE nodes' parameters (their cache keys stay); off, in every node's
    ("benchmarks.export_serving_model=false", {"GlueBenchmark", "SquadBenchmark", "RaceBenchmark"}),
    ("release.raw_text_serving=false", {"Pusher"}),
    ("release.raw_text_serving=true", set()),
    ("benchmarks.seeds=3", {"GlueBenchmark", "SquadBenchmark", "RaceBenchmark"}),
    ("benchmarks.seed=99", {"GlueBenchmark", "SquadBenchmark", "RaceBenchmark"}),
    ("report.title=x", {"BenchmarkReport"}),
    ("train.num_train_steps=400", {"Trainer"}),
    ("train.eval_steps=3", {"Trainer"}),
    ("model.size=albert-base", {"Trainer"}),
    ("model.layer_norm_position=pre", {"Trainer"}),
    ("model.position_embedding_init=sinusoidal", {"Trainer"}),
    ("train.beta_1=0.95", {"Trainer"}),
    # The official values of the named deviations are their defaults: setting them moves no cache key.
    ("model.layer_norm_position=post", set()),
    ("model.position_embedding_init=normal", set()),
    ("datagen.dupe_factor=3", {"PretrainingDataGen"}),
    ("vocab.vocab_size=2000", {"VocabGen"}),
    ("corpus.min_doc_chars=10", {"CorpusGen"}),
    ("corpus.wikipedia_format=wikiextractor", {"CorpusGen"}),
    ("corpus.books_glob=**/*.txt", {"CorpusGen"}),
    ("seed=1", {"VocabGen", "PretrainingDataGen", "ExamplesGate", "Trainer", "GlueBenchmark", "SquadBenchmark",
                "RaceBenchmark"}),
    # The Trainer keeps its checkpoints under the pipeline root (custom_config.checkpoint_root).
    ("pipeline_root=/elsewhere", {"Trainer", "Blesser", "Pusher"}),  # checkpoints; the default push destination
    ("beam_args=--direct_num_workers=2", set()),
    ("task_resources={VocabGen: {memory_limit: 8G}}", set()),  # deployment only: the compiled task's machine
    # Input folders are only their Importer's URI: the processing nodes see them as input artifacts.
    ("corpus.books_dir=/other/books", {"BooksImporter"}),
    ("benchmarks.glue_dir=/other/glue", {"GlueDataImporter"}),
    # The data gate's limits and accept reach the gate alone; off, its nodes are gone and nothing else moves.
    ("gate.max_unigram_jsd=0.4", {"DataGate"}),
    ("gate.accept=3", {"DataGate"}),
    ("gate.enabled=false", {"DataGate", "DataGateCheck", "ExamplesGate"}),
    ("gate.max_unk_rate=0.1", {"ExamplesGate"}),
])
def test_a_setting_reaches_only_the_nodes_it_determines(override, nodes):
    assert _changed_nodes(override) == nodes


def test_upstream_facts_are_not_copied_into_downstream_parameters():
    params = build_config("sample").node_parameters()
    assert "do_lower_case" not in json.dumps(params["PretrainingDataGen"])  # from the vocab artifact
    trainer = json.dumps(params["Trainer"])
    assert "max_seq_length" not in trainer and "vocab_size" not in trainer  # from the examples artifact
    assert set(params["GlueBenchmark"]["config"]["hparams"]) == {"CoLA", "SST-2", "MRPC", "RTE"}
    assert set(params["RaceBenchmark"]["config"]["hparams"]) == {"RACE"}


def test_the_trainer_receives_its_sections_with_the_step_count_apart():
    cfg = build_config("sample", overrides=["train.num_train_steps=77", "seed=5"])
    trainer = cfg.node_parameters()["Trainer"]
    albert = json.loads(trainer["custom_config"]["albert"])
    assert trainer["num_train_steps"] == 77 and "num_train_steps" not in albert["train"]
    assert albert == {"model": cfg.model.to_dict(), "seed": 5,
                      "train": {k: v for k, v in cfg.train.to_dict().items() if k != "num_train_steps"}}
    assert trainer["custom_config"]["checkpoint_root"] == cfg.pipeline_root + "/_checkpoints"
    assert (trainer["eval_args"], trainer["train_args"], trainer["run_fn"]) == (
        {"num_steps": cfg.train.eval_steps}, {}, "trainer.task.run_fn")
    settings = cfg.parameter_settings()["Trainer"]
    assert settings == {"custom_config.albert.model": "model", "custom_config.albert.train": "train",
                        "custom_config.albert.seed": "seed", "custom_config.checkpoint_root": "pipeline_root",
                        "num_train_steps": "train.num_train_steps", "eval_args.num_steps": "train.eval_steps"}


BEYOND_ENGLISH_YAML = """
benchmarks:
  glue_tasks: [RTE, AFQMC, TOPICS]
  race_format: c3
  squad_metric: cmrc2018
  squad_train_file: train.json
  squad_dev_file: dev.json
  tasks:
    TOPICS: {format: tsv, files: {train: train.tsv, dev: dev.tsv}, text_a: title, label: topic, labels: [a, b]}
    UNUSED: {format: jsonl, files: {train: t.json, dev: d.json}, text_a: s, label: l, labels: [x, y]}
  hparams:
    AFQMC: {learning_rate: 2.0e-5, batch_size: 32, albert_dropout: 0.0, classifier_dropout: 0.1, train_steps: 9, warmup_steps: 1}
    TOPICS: {learning_rate: 2.0e-5, batch_size: 32, albert_dropout: 0.0, classifier_dropout: 0.1, train_steps: 9, warmup_steps: 1}
    C3: {learning_rate: 2.0e-5, batch_size: 16, albert_dropout: 0.0, classifier_dropout: 0.1, train_steps: 9, warmup_steps: 1}
    CMRC2018: {learning_rate: 3.0e-5, batch_size: 32, albert_dropout: 0.0, classifier_dropout: 0.1, train_steps: 9, warmup_steps: 1}
"""


def test_benchmarks_beyond_english_keep_english_parameters_and_reach_only_their_nodes(tmp_path):
    """The settings of CLUE / spec tasks (benchmarks.tasks, race_format, squad_metric) at their defaults are in no
    node's parameters nor the section's JSON, so English keeps every cache key; set, each reaches its node alone,
    and a spec reaches the GLUE node only when glue_tasks names it (and the data gate, whose contamination reads its
    dev set)."""
    base = build_config("sample")
    assert not {"tasks", "race_format", "squad_metric"} & set(base.benchmarks.to_dict())
    defaults = build_config("sample", overrides=["benchmarks.race_format=race", "benchmarks.squad_metric=official"])
    assert defaults.node_parameters() == base.node_parameters()
    path = tmp_path / "clue.yaml"
    path.write_text(BEYOND_ENGLISH_YAML)
    clue = build_config("sample", config_file=str(path))
    before, after = base.node_parameters(), clue.node_parameters()
    assert {n for n in set(before) | set(after) if before.get(n) != after.get(n)} == {
        "GlueBenchmark", "SquadBenchmark", "RaceBenchmark", "DataGate"}
    # The gate measures the spec's dev set's contamination too: it is given the specs the GLUE node runs.
    assert json.loads(after["DataGate"]["glue_tasks"]) == {"TOPICS": after["GlueBenchmark"]["config"]["tasks"]["TOPICS"]}
    assert after["DataGate"]["config"] == before["DataGate"]["config"]
    glue, squad, race = (after[n]["config"] for n in ("GlueBenchmark", "SquadBenchmark", "RaceBenchmark"))
    assert list(glue["tasks"]) == ["TOPICS"] and list(glue["hparams"]) == ["RTE", "AFQMC", "TOPICS"]
    assert (squad["squad_metric"], list(squad["hparams"])) == ("cmrc2018", ["CMRC2018"])
    assert (race["race_format"], list(race["hparams"])) == ("c3", ["C3"])
    assert clue.benchmarks.to_dict()["race_format"] == "c3"


@pytest.mark.parametrize("override,message", [
    ("benchmarks.race_format=dream", "config benchmarks.race_format='dream' is invalid: expected race|c3"),
    ("benchmarks.squad_metric=cmrc", "config benchmarks.squad_metric='cmrc' is invalid: expected official|cmrc2018"),
    ("benchmarks.race_format=c3", "config benchmarks.hparams.C3=None is invalid: expected a hyper-parameter row for "
                                  "this task"),
    ("benchmarks.tasks={MNLI: {format: jsonl, files: {dev: d.json}, text_a: s, label: l, labels: [a, b]}}",
     "config benchmarks.tasks.MNLI='MNLI' is invalid: expected a name that no built-in task has (CoLA, SST-2, MRPC, "
     "STS-B, MNLI, QQP, QNLI, RTE, WNLI, SQuAD1.1, SQuAD2.0, RACE, C3, CMRC2018, MNLI-m, MNLI-mm)"),
    ("benchmarks.tasks={X: {format: jsonl, files: {dev: d.json}, text_a: s, labels: [a, b]}}",
     "config benchmarks.tasks.X.label is missing: every task needs format, files, text_a and label"),
])
def test_benchmarks_beyond_english_are_checked(override, message):
    with pytest.raises(ConfigError) as caught:
        build_config("sample", overrides=[override])
    assert str(caught.value) == message


def test_squad_both_versions_are_two_nodes_with_their_own_files():
    cfg = build_config("sample", overrides=["benchmarks.squad_v2_dir=/x/squad2"])
    nodes = cfg.benchmarks.nodes()
    assert nodes["squad"].endswith("data/sample/squad") and nodes["squad2"] == "/x/squad2"
    params = cfg.node_parameters()
    v1, v2 = params["SquadBenchmark"]["config"], params["Squad2Benchmark"]["config"]
    assert (v1["squad_version"], list(v1["hparams"])) == ("1.1", ["SQuAD1.1"])
    assert (v2["squad_version"], list(v2["hparams"]), v2["squad_dev_file"]) == ("2.0", ["SQuAD2.0"], "dev-v2.0.json")
    assert params["Squad2Benchmark"]["benchmark"] == "squad"
    assert params["Squad2DataImporter"]["artifact_uri"] == "/x/squad2"


def test_sharing_none_is_a_value_not_null():
    cfg = apply_overrides(build_config("sample"), ["model.sharing=none"])
    assert cfg.model.sharing == "none"
    assert cfg.validate().model.encoder_fields(100)["sharing"] == "none"
    assert apply_overrides(cfg, ["model.sharing=null"]).model.sharing is None
    assert apply_overrides(cfg, ["vocab.import_model=none"]).vocab.import_model is None


@pytest.mark.parametrize("override,message", [
    ("model.size=albert-huge", "config model.size='albert-huge' is invalid: model.size (or model-info --size) 'albert-huge' is unknown"),
    ("model.size=albert-tiny-v2", "config model.size='albert-tiny-v2' is invalid: model.size (or model-info --size) 'albert-tiny-v2': only "),
    ("model.sharing=some", "config model.sharing='some' is invalid: expected all|attention|ffn|none|groups"),
    ("model.hidden_size=101", "is invalid: the model.* settings conflict: hidden_size (101) must be divisible by "
                              "num_attention_heads (2)"),
    ("model.num_hidden_groups=2", "num_hidden_groups=2 is only meaningful with sharing='groups'"),
    ("model.dropout=1.5", "config model.dropout=1.5 is invalid: expected in [0, 1)"),
    ("model.layer_norm_position=middle", "config model.layer_norm_position='middle' is invalid: expected post|pre"),
    ("model.position_embedding_init=zeros", "config model.position_embedding_init='zeros' is invalid: expected "
                                             "normal|sinusoidal"),
    ("train.learning_rate=0", "config train.learning_rate=0.0 is invalid: expected > 0"),
    ("benchmarks.hparams.RTE.max_seq_length=4096", "config benchmarks.hparams.RTE.max_seq_length=4096 is invalid"),
    ("datagen.max_predictions_per_seq=0", "config datagen.max_predictions_per_seq=0 is invalid"),
    ("corpus.book_encoding_fallback=klingon", "config corpus.book_encoding_fallback='klingon' is invalid"),
])
def test_every_section_is_validated_before_anything_runs(override, message):
    with pytest.raises(ConfigError) as info:
        build_config("sample", overrides=[override])
    assert message in str(info.value)


def test_the_model_is_validated_without_tensorflow():
    import subprocess
    import sys

    code = ("import sys\nfrom pipeline.settings.configs import build_config\n"
            "build_config('sample', overrides=['model.size=albert-large'])\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('tensorflow', 'tfx', 'trainer')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    # The Trainer's settings (its section, and the format it receives them in) are plain data in its folder;
    # nothing of the model's code is loaded.
    assert done.stdout.strip() == "['trainer', 'trainer.trainer_config', 'trainer.trainer_settings']"


def test_encoder_fields_are_the_named_size_with_the_overrides():
    from trainer.modeling_albert import AlbertConfig

    fields = ModelConfig(size="albert-base-v1", hidden_size=256, num_attention_heads=4).encoder_fields(8000)
    config = AlbertConfig(**fields)
    assert (config.hidden_size, config.num_attention_heads, config.vocab_size) == (256, 4, 8000)
    assert (config.hidden_dropout_prob, config.hidden_act, config.num_hidden_layers) == (0.1, "gelu", 12)
    assert AlbertConfig.named("albert-base-v1", vocab_size=8000, hidden_size=256, num_attention_heads=4) == config


def test_train_identity_leaves_out_only_schedule_and_cadence():
    t = TrainConfig()
    ident = t.identity()
    assert "num_train_steps" not in ident and "log_every" not in ident and "checkpoint_every" not in ident
    assert {"learning_rate", "optimizer", "train_batch_size", "grad_accum_steps", "num_warmup_steps",
            "mixed_precision", "shuffle_buffer"} <= set(ident)
    assert ModelConfig.from_json(ModelConfig(size="albert-tiny").to_json()) == ModelConfig(size="albert-tiny")


def test_paper_presets_match_the_rows_they_are_compared_with():
    from components.evaluation.benchmark_config import PAPER_FINETUNE, RELEASE_V2_RACE

    corpus = ["corpus.books_dir=/books"]
    v1, v2, paper = (build_config(p, overrides=corpus) for p in ("paper-v1", "paper-v2", "paper"))
    enc1, enc2 = v1.model.encoder_fields(), v2.model.encoder_fields()
    assert (enc1["hidden_dropout_prob"], enc1["attention_probs_dropout_prob"]) == (0.1, 0.1)  # Table 2: v1 model
    assert (enc2["hidden_dropout_prob"], enc2["attention_probs_dropout_prob"]) == (0.0, 0.0)
    assert paper.model == v1.model and paper.benchmarks == v1.benchmarks and paper.report == v1.report
    assert v1.benchmarks.hparams["RACE"] == PAPER_FINETUNE["RACE"]
    assert (PAPER_FINETUNE["RACE"].learning_rate, PAPER_FINETUNE["RACE"].albert_dropout) == (2e-5, 0.1)  # Table 14
    assert v2.benchmarks.hparams["RACE"] == RELEASE_V2_RACE
    assert (RELEASE_V2_RACE.learning_rate, RELEASE_V2_RACE.albert_dropout) == (1e-5, 0.0)  # release README
    assert (v1.report.reference, v2.report.reference) == ("albert-base-v1", "albert-base-v2")
    assert v1.benchmarks.eval_every == 1000 and v1.benchmarks.checkpoint_selection == "best"


def test_benchmark_dev_eval_source_needs_benchmark_data():
    with pytest.raises(ConfigError, match="datagen.eval_source"):
        build_config("sample", overrides=["datagen.eval_source=benchmark_dev", "benchmarks.squad_dir=null",
                                          "benchmarks.race_dir=null"])


# -- the compiled DAG holds exactly node_parameters() --------------------------------------------------------
PAPER_DATA = ["corpus.wikipedia_dir=gs://b/wiki", "corpus.books_dir=gs://b/books", "benchmarks.glue_dir=gs://b/glue",
              "benchmarks.squad_dir=gs://b/squad", "benchmarks.squad_v2_dir=gs://b/squad2",
              "benchmarks.race_dir=gs://b/race", "datagen.eval_source=benchmark_dev"]
SPECS = {
    "sample": ("sample", [], None),
    # Every benchmark node, and the Trainer as a Vertex AI Training job (its custom_config carries the job).
    "paper": ("paper", PAPER_DATA + ["vertex_training.enabled=true", "vertex_training.project=p-albert"],
              "gs://b/root"),
}


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    """Preset → (its config, the spec JSON that ``albert-pipeline compile`` writes for it, the spec's path)."""
    from pipeline.cloud.kubeflow_v2_runner import compile_pipeline

    out = {}
    for name, (preset, overrides, root) in SPECS.items():
        cfg = build_config(preset, overrides=overrides, pipeline_root=root)
        path = compile_pipeline(cfg, str(tmp_path_factory.mktemp(name) / "spec.json"), image=IMAGE)
        with open(path) as f:
            out[name] = (cfg, json.load(f), path)
    return out


def _spec_parameters(data):
    """Task → {parameter → value}, a pipeline parameter read as the default the spec declares for it. The
    resolver's tasks (TFX's latest-blessed-model queries) take no parameters and are left out."""
    from pipeline.cloud import spec

    defaults = spec.parameter_defaults(data)

    def value(v):
        if "taskOutputParameter" in v:  # an output of another task, known when the run starts: <task.key>
            return "<{producerTask}.{outputParameterKey}>".format(**v["taskOutputParameter"])
        return defaults[v["componentInputParameter"]] if "componentInputParameter" in v else spec.constant(v)

    tasks = data["pipelineSpec"]["root"]["dag"]["tasks"]
    return {task: {k: value(v) for k, v in t["inputs"].get("parameters", {}).items()} for task, t in tasks.items()
            if not task.startswith("LatestBlessedModel-")}


def _decoded(value):
    """JSON text (objects and lists, nested ones too) → plain data; other strings stay strings."""
    if isinstance(value, str) and value.startswith(("{", "[")):
        value = json.loads(value)
    if isinstance(value, dict):
        return {k: _decoded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_decoded(v) for v in value]
    return value


@pytest.mark.parametrize("name", sorted(SPECS))
def test_every_compiled_node_holds_exactly_its_node_parameters(compiled, name):
    from pipeline.settings.configs import IMPORTERS

    cfg, spec, _ = compiled[name]
    expected, found = cfg.node_parameters(IMAGE), _spec_parameters(spec)
    # The data locations reach their Importers, and what each node reads the nodes that read raw data, through the
    # DataSnapshot task (which resolves them when a run starts): its inputs are the locations node_parameters says.
    snapshot = found.pop("DataSnapshot")
    locations = json.loads(snapshot["settings"])["locations"]
    assert sorted(locations) == sorted(cfg.data_inputs())
    for key, location in locations.items():
        importer = found[IMPORTERS[key][0]]
        assert importer.pop("data_snapshot") == f"<DataSnapshot.{key}_snapshot>"
        assert importer["artifact_uri"] == f"<DataSnapshot.{key}_uri>"
        importer["artifact_uri"] = snapshot[location["parameter"]]
    for node in cfg.data_consumers():
        assert found[node]["data_snapshot"] == f"<DataSnapshot.{node}_data>" and expected[node]["data_snapshot"] == ""
        found[node]["data_snapshot"] = ""
    # The data gate's baseline: the newest result (a LatestArtifact resolver's) through the DataGateBaseline task,
    # which gives DataGate the results it chose when the run started (pipeline/tasks/gate_baseline_task.py).
    found.pop("DataGateLatest")
    assert found.pop("DataGateBaseline") == {"corpus": "<DataSnapshot.CorpusGen_data>"}
    assert found["DataGate"].pop("baseline_uris") == "<DataGateBaseline.baseline_uris>"
    assert sorted(found) == sorted(expected)  # the same nodes, Importers included
    for node, params in expected.items():
        assert _decoded(found[node]) == _decoded(params), node
        if "config" in params:  # the components parse canonical JSON: same settings, same text, same cache key
            assert found[node]["config"] == canonical_json(params["config"]), node
    trainer = json.loads(found["Trainer"]["custom_config"])
    assert trainer["albert"] == expected["Trainer"]["custom_config"]["albert"]  # the exact text run_fn parses
    assert spec["runtimeConfig"]["parameterValues"]["num_train_steps"] == cfg.train.num_train_steps


def test_paper_dag_scores_both_squad_versions_and_pretrains_on_their_dev_articles(compiled):
    """With SQuAD 1.1 and 2.0 data given, the compiled paper DAG scores both (all five Table 2 columns); with
    ``eval_source=benchmark_dev`` datagen reads the SQuAD and RACE dev articles (the paper's pretraining dev set)."""
    from pipeline.cloud.kubeflow_v2_runner import spec_summary

    cfg, _, path = compiled["paper"]
    summary = spec_summary(path)
    benchmarks = {"SquadBenchmark", "Squad2Benchmark", "RaceBenchmark", "GlueBenchmark"}
    assert benchmarks <= set(summary["tasks"]) and benchmarks <= set(summary["tasks"]["BenchmarkReport"])
    assert {"SquadDataImporter", "RaceDataImporter"} <= set(summary["tasks"]["PretrainingDataGen"])
    assert "squad_v2_dir" in summary["parameters"]
    params = cfg.node_parameters(IMAGE)
    assert params["Squad2Benchmark"]["config"]["hparams"]["SQuAD2.0"]["max_seq_length"] == 512
    assert params["SquadBenchmark"]["config"]["hparams"]["SQuAD1.1"]["max_seq_length"] == 384


def test_the_compiled_vertex_trainer_runs_the_configured_job(compiled):
    cfg, spec, _ = compiled["paper"]
    custom = json.loads(_spec_parameters(spec)["Trainer"]["custom_config"])
    pools = custom["ai_platform_training_args"]["job_spec"]["worker_pool_specs"]
    assert custom["ai_platform_enable_vertex"] is True and custom["ai_platform_training_args"]["project"] == "p-albert"
    assert pools[0]["machine_spec"] == {"machine_type": "cloud-tpu", "accelerator_type": "TPU_V3",
                                        "accelerator_count": 8}
    assert pools[0]["container_spec"] == {"image_uri": IMAGE}
    assert custom["checkpoint_root"] == "gs://b/root/_checkpoints"
    assert cfg.parameter_settings(IMAGE)["Trainer"]["custom_config.ai_platform_training_args"] == "vertex_training"


# -- plan -------------------------------------------------------------------------------------------------
def test_plan_names_changed_settings_by_their_config_keys():
    """plan's reasons translate node parameters back to the keys users pass to --set."""
    from pipeline.local.plan import _param_diff

    base = build_config("sample")
    changed = build_config("sample", overrides=["train.learning_rate=0.01", "model.sharing=none", "seed=3",
                                                "benchmarks.tfma=false", "benchmarks.seeds=3", "train.eval_steps=4"])

    def received(cfg, node):  # as MLMD records them: JSON text for the structured parameters
        return {k: v if isinstance(v, (int, str)) else json.dumps(v, sort_keys=True)
                for k, v in cfg.node_parameters()[node].items()}

    def diff(node):
        return _param_diff(base.parameter_settings()[node], received(base, node), received(changed, node))

    assert diff("Trainer") == ["setting model.sharing: None → 'none'", "setting seed: 12345 → 3",
                               "setting train.eval_steps: 10 → 4", "setting train.learning_rate: 0.005 → 0.01"]
    assert diff("GlueBenchmark") == ["setting benchmarks.seed: 12345 → 3", "setting benchmarks.tfma: True → False",
                                     "setting benchmarks.seeds: 1 → 3"]
    assert diff("VocabGen") == ["setting seed: 12345 → 3"]


def test_plan_cache_key_is_the_one_tfx_launcher_computes(tmp_path):
    """plan's key for a node equals the cache context TFX's launcher registers (``cache_utils.get_cache_context``
    with a real execution's id and node folder), on the compiled sample DAG; both move with an input artifact."""
    from tfx.dsl.compiler import compiler, constants
    from tfx.orchestration import data_types_utils, metadata
    from tfx.orchestration.local import runner_utils
    from tfx.orchestration.portable import cache_utils, inputs_utils, outputs_utils, runtime_parameter_utils
    from tfx.types import standard_artifacts

    from components import artifacts
    from pipeline.local import mlmd
    from pipeline.pipeline import create_pipeline
    from pipeline.local.plan import node_cache_key

    cfg = build_config("sample", overrides=[f"pipeline_root={tmp_path / 'root'}"])
    ir = compiler.Compiler().compile(create_pipeline(cfg))
    runtime_parameter_utils.substitute_runtime_parameter(ir, {constants.PIPELINE_RUN_ID_PARAMETER_NAME: "run-1"})
    deployment = runner_utils.extract_local_deployment_config(ir)
    nodes = {n.pipeline_node.node_info.id: n.pipeline_node for n in ir.nodes}

    def artifact(cls, artifact_id):
        a = cls()
        a.id, a.type_id, a.uri = artifact_id, 7, f"/store/{cls.__name__}/{artifact_id}"
        a.set_string_custom_property("origin", f"run {artifact_id}")
        return a

    with metadata.Metadata(mlmd.connection_config(str(tmp_path / "metadata.sqlite"))) as m:
        def launcher_key(pn, inputs):
            params = data_types_utils.build_parsed_value_dict(
                inputs_utils.resolve_parameters_with_schema(node_parameters=pn.parameters))
            outputs = outputs_utils.generate_output_artifacts(42, pn.outputs.outputs, str(tmp_path / "node"))
            spec = runner_utils.extract_executor_spec(deployment, pn.node_info.id)
            return cache_utils.get_cache_context(m, pn, ir.pipeline_info, spec, inputs, outputs, params).name

        keys = set()
        for node, key, cls in (("Trainer", "examples", standard_artifacts.Examples),
                               ("VocabGen", "documents", artifacts.Documents)):
            for artifact_id in (1, 2):
                a = artifact(cls, artifact_id)
                ours = node_cache_key(ir, deployment, nodes[node], {key: [a.mlmd_artifact]})
                assert ours == launcher_key(nodes[node], {key: [a]}), (node, artifact_id)
                keys.add(ours)
        assert len(keys) == 4  # two nodes x two input artifacts


def test_task_resources_reach_only_their_task_container(compiled):
    """The paper preset's VocabGen asks for 4 CPUs and 48 GB (its 10 M-sentence sample does not fit Vertex AI's
    default 16 GB task machine), written as the KFP compiler writes ``set_cpu_limit`` / ``set_memory_limit``; no other
    task has limits, and the sample spec, which sets none, has none."""
    from pipeline.cloud import spec

    pipeline_spec = compiled["paper"][1]["pipelineSpec"]
    executors = pipeline_spec["deploymentSpec"]["executors"]
    limited = {label: e["container"]["resources"] for label, e in executors.items()
               if "resources" in e.get("container", {})}
    vocab = pipeline_spec["components"][pipeline_spec["root"]["dag"]["tasks"]["VocabGen"]["componentRef"]["name"]]
    assert limited == {vocab["executorLabel"]: {"resourceCpuLimit": "4", "cpuLimit": 4.0,
                                                "resourceMemoryLimit": "48G", "memoryLimit": 48.0}}
    sample = compiled["sample"][1]["pipelineSpec"]["deploymentSpec"]["executors"]
    assert not any("resources" in e.get("container", {}) for e in sample.values())
    assert spec.container_resources("500m", "64Gi") == {"resourceCpuLimit": "500m", "cpuLimit": 0.5,
                                                       "resourceMemoryLimit": "64Gi", "memoryLimit": 68.719476736}
    with pytest.raises(ConfigError, match=r"task_resources.Vocab: spec.json has no container task 'Vocab' "
                                          r"\(its container tasks: .*VocabGen"):
        spec.set_task_resources(pipeline_spec, {"Vocab": ("1", None)}, "spec.json")


@pytest.mark.parametrize("override,message", [
    ("task_resources={VocabGen: {memory_limit: 48GB}}", "task_resources.VocabGen.memory_limit"),
    ("task_resources={VocabGen: {cpu_limit: eight}}", "task_resources.VocabGen.cpu_limit"),
])
def test_task_resources_are_checked(override, message):
    with pytest.raises(ConfigError, match=message):
        build_config("sample", overrides=[override])


def test_the_pusher_receives_the_runs_language_and_english_keeps_its_parameters():
    """The card's ``language:`` comes from the run: a Chinese run's Pusher receives ``zh``; an English run's Pusher
    parameters have no language key (the same cache key as before languages existed)."""
    zh, en = build_config("sample-zh").node_parameters(), build_config("sample").node_parameters()
    assert zh["Pusher"]["config"]["language"] == "zh"
    assert "language" not in en["Pusher"]["config"]
    assert build_config("sample-zh").parameter_settings()["Pusher"]["config.language"] == "language"
