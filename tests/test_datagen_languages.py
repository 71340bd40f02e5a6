"""Language sampling through the Beam graph (make-pretraining-data): a run of two languages writes the
``per_language`` statistics with the realised shares beside the formula's, and the same bytes with two workers."""
import glob
import json
import os

import pytest

from components.datagen.datagen_tool import make_pretraining_data
from pipeline.settings.configs import build_config

FIXTURE = os.path.join(os.path.dirname(__file__), "fixtures", "datagen_text.txt")
KEYS = {"characters", "documents", "size_instances", "size_exact", "target_share", "passes", "instances", "tokens",
        "masked_tokens", "padding_tokens", "realised_share"}


def _config(**over):
    items = [f"datagen.{k}={v}" for k, v in {"max_seq_length": 64, "max_predictions_per_seq": 8, "dupe_factor": 2,
                                              "num_shards": 2, "eval_fraction": 0.1, **over}.items()]
    return build_config("sample", overrides=items + ["language=[en,de]"])


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("ml")
    with open(FIXTURE, encoding="utf-8") as f:
        text = f.read()
    docs = text.split("\n\n")
    (folder / "documents-en-00000-of-00001.txt").write_text(text, encoding="utf-8")
    # a smaller "language": the fixture's documents with their sentences reversed, a third of them
    small = ["\n".join(reversed(d.strip().split("\n"))) for d in docs[: max(2, len(docs) // 3)] if d.strip()]
    (folder / "documents-de-00000-of-00001.txt").write_text("\n\n".join(small) + "\n", encoding="utf-8")
    return sorted(str(p) for p in folder.iterdir())


@pytest.fixture(scope="module")
def one_worker(tmp_path_factory, inputs, spm_model_path):
    out = str(tmp_path_factory.mktemp("dgml") / "one")
    return out, make_pretraining_data(inputs, spm_model_path, out, _config(language_alpha=0.3), workers=1)


def _bytes(out):
    return {os.path.relpath(p, out): open(p, "rb").read() for p in sorted(glob.glob(os.path.join(out, "Split-*", "*")))}


def test_per_language_statistics(one_worker):
    block = one_worker[1]["per_language"]
    assert block["sampling"] == {"method": "exponent", "alpha": 0.3} and block["split"] == "train"
    rows = block["languages"]
    assert set(rows) == {"en", "de"} and all(set(r) == KEYS for r in rows.values())
    assert all(r["size_exact"] for r in rows.values())
    assert sum(r["instances"] for r in rows.values()) == one_worker[1]["splits"]["train"]["instances"]
    assert sum(r["target_share"] for r in rows.values()) == pytest.approx(1.0)
    assert rows["de"]["passes"] > 2 > rows["en"]["passes"]  # the small language up-sampled, the large one down
    for r in rows.values():
        assert r["padding_tokens"] == r["instances"] * 64 - r["tokens"]
        assert abs(r["realised_share"] - r["target_share"]) < 0.05


@pytest.mark.slow
def test_two_workers_write_the_same_bytes(one_worker, inputs, spm_model_path, tmp_path):
    out = str(tmp_path / "two")
    stats = make_pretraining_data(inputs, spm_model_path, out, _config(language_alpha=0.3), workers=2)
    assert _bytes(out) == _bytes(one_worker[0])
    assert stats["per_language"] == one_worker[1]["per_language"]
