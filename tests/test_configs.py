"""The typed configuration: presets, overrides from the CLI, YAML, validation errors, JSON round trip."""
import pytest

from components.evaluation.benchmark_config import PAPER_FINETUNE
from config.schema import FrozenConfigError, deep_merge
from pipeline.settings.configs import ConfigError, PipelineConfig, apply_overrides, build_config
from pipeline.settings.resolve import resolve_config


def test_paper_preset_is_the_albert_base_recipe():
    c = build_config("paper", overrides=["corpus.wikipedia_dir=gs://bucket/enwiki"])
    d, t = c.datagen, c.train
    assert (d.max_seq_length, d.max_predictions_per_seq, d.masked_lm_prob, d.dupe_factor) == (512, 20, 0.15, 40)
    assert (t.train_batch_size, t.optimizer, t.learning_rate, t.num_warmup_steps, t.num_train_steps) == (
        4096, "lamb", 0.00176, 3125, 125_000)
    assert t.strategy == "tpu" and c.model.size == "albert-base-v1"  # Table 2 is the v1 model
    assert c.benchmarks.hparams["RTE"].learning_rate == 3e-5 and c.benchmarks.hparams["SQuAD1.1"].max_seq_length == 384


def test_paper_preset_needs_a_corpus():
    with pytest.raises(ConfigError) as info:
        build_config("paper")
    assert str(info.value) == "config corpus=None is invalid: expected at least one of corpus.wikipedia_dir / corpus.books_dir"


def test_sample_preset_is_small_and_uses_bundled_data(sample_dir):
    c = build_config("sample")
    assert c.corpus.wikipedia_dir.startswith(sample_dir) and c.train.num_train_steps <= 500
    assert c.model.size == "albert-tiny" and c.vocab.vocab_size < 30000


def test_overrides_are_typed_and_reach_nested_tables():
    c = build_config("sample", overrides=["train.num_train_steps=42", "datagen.sop_mode=pure",
                                          "benchmarks.hparams.RTE.train_steps=7", "corpus.dedupe=false",
                                          "benchmarks.glue_tasks=CoLA,RTE", "benchmarks.race_dir=none"])
    assert c.train.num_train_steps == 42 and isinstance(c.train.num_train_steps, int)
    assert c.datagen.sop_mode == "pure" and c.corpus.dedupe is False
    assert c.benchmarks.hparams["RTE"].train_steps == 7
    assert c.benchmarks.glue_tasks == ["CoLA", "RTE"] and c.benchmarks.race_dir is None


@pytest.mark.parametrize("override,message", [
    ("train.nonsense=1", "unknown config key: train.nonsense"),
    ("train.num_train_steps=abc", "config train.num_train_steps='abc' is not a valid int"),
    ("datagen.sop_mode=nsp2", "config datagen.sop_mode='nsp2' is invalid: expected official|pure|nsp"),
    ("train.grad_accum_steps=3",
     "config train.grad_accum_steps=3 is invalid: expected >= 1 and dividing train.train_batch_size=32"),
    ("datagen.compression_level=10", "config datagen.compression_level=10 is invalid: expected in [0, 9]"),
    ("datagen.random_pool_documents=1", "config datagen.random_pool_documents=1 is invalid: expected >= 2"),
    ("datagen.random_pool_max_chars=0", "config datagen.random_pool_max_chars=0 is invalid: expected >= 1"),
    ("benchmarks.glue_tasks=COLA", "config benchmarks.glue_tasks='COLA' is invalid: expected GLUE task names: "
                                   "CoLA, SST-2, MRPC, STS-B, MNLI, QQP, QNLI, RTE, WNLI; CLUE's: AFQMC, TNEWS, "
                                   "IFLYTEK, CMNLI, OCNLI, CSL, CLUEWSC2020; or a task of benchmarks.tasks"),
    ("no_equals_sign", "--set 'no_equals_sign': an override must look like section.key=value"),
])
def test_bad_overrides_fail_clearly(override, message):
    with pytest.raises(ConfigError) as info:
        build_config("sample", overrides=[override])
    assert str(info.value) == message


def test_json_round_trip_is_exact():
    c = build_config("sample", overrides=["seed=7"])
    again = PipelineConfig.from_json(c.to_json())
    assert again == c and again.benchmarks.hparams["CoLA"] == c.benchmarks.hparams["CoLA"]


def test_yaml_file_is_merged_with_safe_loader(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("train:\n  num_train_steps: 11\n  num_warmup_steps: 1\nmodel:\n  size: albert-base\n")
    c = build_config("sample", config_file=str(path))
    assert c.train.num_train_steps == 11 and c.model.size == "albert-base"
    bad = tmp_path / "bad.yaml"
    bad.write_text("!!python/object/apply:os.system ['touch pwned']\n")
    with pytest.raises(ConfigError) as info:
        build_config("sample", config_file=str(bad))
    assert str(info.value) == (f"{bad}: not valid YAML (could not determine a constructor for the tag "
                               "'tag:yaml.org,2002:python/object/apply:os.system')")
    assert not (tmp_path / "pwned").exists()
    listed = tmp_path / "list.yaml"
    listed.write_text("- train\n")
    with pytest.raises(ConfigError) as info:
        build_config("sample", config_file=str(listed))
    assert str(info.value) == f"{listed}: top level must be a mapping"


def test_the_resolved_config_is_frozen():
    c = build_config("sample")
    hint = ("the configuration is frozen once resolved and validated (pipeline.settings.configs.build_config); "
            "pass the change to build_config as an override instead")
    with pytest.raises(FrozenConfigError) as info:
        c.pipeline_root = "/elsewhere"
    assert str(info.value) == f"cannot set PipelineConfig.pipeline_root: {hint}"
    with pytest.raises(FrozenConfigError) as info:
        c.train.learning_rate = 1.0
    assert str(info.value) == f"cannot set TrainConfig.learning_rate: {hint}"
    with pytest.raises(FrozenConfigError):
        c.benchmarks.hparams["RTE"].train_steps = 1  # the rows of a table too
    with pytest.raises(FrozenConfigError) as info:
        c.benchmarks.glue_tasks.append("QQP")
    assert str(info.value) == f"cannot change the list ['CoLA', 'SST-2', 'MRPC', 'RTE']: {hint}"
    with pytest.raises(FrozenConfigError):
        c.benchmarks.hparams["QQP"] = c.benchmarks.hparams["RTE"]
    with pytest.raises(FrozenConfigError):
        del c.seed
    assert isinstance(FrozenConfigError("x"), AttributeError)
    assert (c.pipeline_root, c.train.learning_rate, c.benchmarks.glue_tasks) == (
        "outputs/pipeline_root", 0.005, ["CoLA", "SST-2", "MRPC", "RTE"])  # nothing was changed


def test_copies_of_a_frozen_config_are_new_configs():
    import copy
    import pickle

    c = build_config("sample")
    section = copy.copy(c.benchmarks)  # what a benchmark run narrows and adjusts for itself
    section.seed = 7
    deep = copy.deepcopy(c)
    deep.benchmarks.glue_tasks.append("QQP")
    assert (c.benchmarks.seed, c.benchmarks.glue_tasks) == (None, ["CoLA", "SST-2", "MRPC", "RTE"])
    assert not section.frozen and not deep.frozen and c.frozen
    again = pickle.loads(pickle.dumps(c))  # Beam ships sections to its workers
    assert again == c and again.frozen and again.benchmarks.frozen
    assert apply_overrides(c, ["seed=1"]).seed == 1 and c.seed == 12345
    paper = build_config("paper", overrides=["corpus.books_dir=gs://b/books"])
    assert paper.benchmarks.hparams["RTE"].frozen and not PAPER_FINETUNE["RTE"].frozen  # shared rows stay free


def test_where_it_runs_is_resolved_once(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "books").mkdir()
    run = resolve_config(build_config("sample", overrides=["corpus.books_dir=./books/../books"], output_dir="out"),
                         local=True)
    assert (run.pipeline_root, run.metadata_path) == (str(tmp_path / "out" / "pipeline_root"),
                                                      str(tmp_path / "out" / "metadata.sqlite"))
    assert run.corpus.books_dir == str(tmp_path / "books") and run.is_local() and run.frozen
    compiled = build_config("sample", pipeline_root="gs://b/root", beam_args=["--runner=DataflowRunner"])
    assert (compiled.pipeline_root, compiled.beam_args, compiled.metadata_path) == (
        "gs://b/root", ["--runner=DataflowRunner"], "outputs/metadata.sqlite")
    assert not compiled.is_local()  # relative MLMD path: not resolved for a local run
    missing = build_config("sample", overrides=["benchmarks.race_dir=missing"])  # building reads no folder
    with pytest.raises(ConfigError) as info:
        resolve_config(missing, local=True)
    assert str(info.value) == (f"config benchmarks.race_dir='missing' is invalid: folder {tmp_path / 'missing'} "
                               "does not exist")
    with pytest.raises(ConfigError) as info:  # a foreign scheme is the validation's error, not a missing folder
        build_config("sample", overrides=["benchmarks.race_dir=s3://b/race"])
    assert str(info.value) == ("config benchmarks.race_dir='s3://b/race' is invalid: expected a local path or a "
                               "gs:// URI")


def test_deep_merge_merges_mappings_and_copies():
    base = {"train": {"a": 1, "b": [1]}, "x": 1}
    merged = deep_merge(base, {"train": {"b": [2]}, "y": {"z": 1}})
    assert merged == {"train": {"a": 1, "b": [2]}, "x": 1, "y": {"z": 1}}
    merged["train"]["a"] = 5
    assert base == {"train": {"a": 1, "b": [1]}, "x": 1}
