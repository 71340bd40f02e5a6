"""Checkpoints are keyed by what defines a pretraining run, not by artifact URIs (issue 13)."""
import pytest

from config.schema import ConfigError
from trainer.trainer_config import ModelConfig, TrainConfig
from trainer import examples_info, task


def _identity(fingerprint="f" * 64, **train):
    model = ModelConfig(size="albert-tiny")
    return task.run_identity(fingerprint, task.AlbertConfig(**model.encoder_fields(500)), TrainConfig(**train), seed=1)


def test_key_ignores_step_count_and_cadence_but_not_the_trajectory(tmp_path):
    root = str(tmp_path)
    base = task.checkpoint_dir_for(root, _identity())
    assert task.checkpoint_dir_for(root, _identity(num_train_steps=999, log_every=7, checkpoint_every=3)) == base
    for changed in (_identity(learning_rate=1e-3), _identity(optimizer="adamw"), _identity(train_batch_size=8),
                    _identity(fingerprint="0" * 64)):
        assert task.checkpoint_dir_for(root, changed) != base


def test_a_folder_of_another_run_is_refused_not_loaded(tmp_path):
    ident = _identity()
    folder = task.checkpoint_dir_for(str(tmp_path), ident)
    assert task.claim_checkpoint_dir(folder, ident) is False  # new run
    assert task.claim_checkpoint_dir(folder, ident) is True  # the same run resumes
    with pytest.raises(ConfigError, match="train"):
        task.claim_checkpoint_dir(folder, _identity(learning_rate=0.5))


def test_fingerprint_is_content_not_location(tmp_path):
    for name in ("a", "b"):
        (tmp_path / name / "Split-train").mkdir(parents=True)
        (tmp_path / name / "Split-train" / "part-0.gz").write_bytes(b"same bytes")
    fa = examples_info.fingerprint(str(tmp_path / "a"), ["Split-train"])
    assert fa == examples_info.fingerprint(str(tmp_path / "b"), ["Split-train"])
    (tmp_path / "b" / "Split-train" / "part-0.gz").write_bytes(b"other bytes")
    assert fa != examples_info.fingerprint(str(tmp_path / "b"), ["Split-train"])
    # A folder from before dataset_info.json existed still gets its fingerprint.
    assert examples_info.read_info(str(tmp_path / "a")) == {"fingerprint": fa}
    with pytest.raises(FileNotFoundError, match="not a pretraining-examples folder"):
        examples_info.read_info(str(tmp_path))


def test_dev_documents_from_benchmark_artifacts(tmp_path):
    """datagen.eval_source=benchmark_dev: the SQuAD dev*.json and RACE dev/ articles become the eval documents."""
    from tfx.types import standard_artifacts

    from components.datagen.datagen_component import _dev_documents_file
    from components.text.documents import parse_text_blocks
    from pipeline.settings.configs import SAMPLE_DATA

    squad, race = standard_artifacts.Examples(), standard_artifacts.Examples()
    squad.uri, race.uri = f"{SAMPLE_DATA}/squad", f"{SAMPLE_DATA}/race"
    path = _dev_documents_file(squad, race, str(tmp_path / "dev"))
    with open(path, encoding="utf-8") as f:
        docs = list(parse_text_blocks(f))
    import glob
    import json as _json
    with open(f"{SAMPLE_DATA}/squad/dev-v1.1-sample.json") as f:
        n_articles = len(_json.load(f)["data"])
    n_race = len(glob.glob(f"{SAMPLE_DATA}/race/dev/*/*.txt"))
    assert len(docs) == n_articles + n_race and all(len(d) >= 1 for d in docs)
    only_squad = _dev_documents_file(squad, None, str(tmp_path / "dev2"))
    with open(only_squad, encoding="utf-8") as f:
        assert len(list(parse_text_blocks(f))) == n_articles
