"""The typed configuration: presets, overrides from the CLI, YAML, validation errors, JSON round trip."""
import pytest

from pipeline.configs import ConfigError, PipelineConfig, build_config


def test_paper_preset_is_the_albert_base_recipe():
    c = build_config("paper", overrides=["corpus.wikipedia_dir=gs://bucket/enwiki"])
    d, t = c.datagen, c.train
    assert (d.max_seq_length, d.max_predictions_per_seq, d.masked_lm_prob, d.dupe_factor) == (512, 20, 0.15, 40)
    assert (t.train_batch_size, t.optimizer, t.learning_rate, t.num_warmup_steps, t.num_train_steps) == (
        4096, "lamb", 0.00176, 3125, 125_000)
    assert t.strategy == "tpu" and c.model.size == "albert-base-v1"  # Table 2 is the v1 model
    assert c.benchmarks.hparams["RTE"].learning_rate == 3e-5 and c.benchmarks.hparams["SQuAD1.1"].max_seq_length == 384


def test_paper_preset_needs_a_corpus():
    with pytest.raises(ConfigError, match="wikipedia_dir / books_dir"):
        build_config("paper")


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
    ("train.num_train_steps=abc", "not a valid int"),
    ("datagen.sop_mode=nsp2", "datagen.sop_mode"),
    ("train.grad_accum_steps=3", "grad_accum_steps"),
    ("datagen.compression_level=10", "datagen.compression_level"),
    ("datagen.random_pool_documents=1", "datagen.random_pool_documents"),
    ("datagen.random_pool_max_chars=0", "datagen.random_pool_max_chars"),
    ("benchmarks.glue_tasks=COLA", "GLUE task names"),
    ("no_equals_sign", "section.key=value"),
])
def test_bad_overrides_fail_clearly(override, message):
    with pytest.raises(ConfigError, match=message):
        build_config("sample", overrides=[override])


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
    bad.write_text("!!python/object/apply:os.system ['echo pwned']\n")
    with pytest.raises(Exception) as info:
        build_config("sample", config_file=str(bad))
    assert "pwned" not in str(info.value) or "constructor" in str(info.value)
