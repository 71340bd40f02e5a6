"""Language sampling through the Beam graph (make-pretraining-data): a run of two languages writes the
``per_language`` statistics with the realised shares beside the formula's, and the same bytes with two workers."""
import glob
import json
import os

import pytest

from components.datagen.datagen_tool import make_pretraining_data
from pipeline.settings.configs import build_config

FIXTURE = os.path.join(os.path.dirname(__file__), "fixtures", "datagen_text.txt")
KEYS = {"characters", "documents", "size_instances", "size_exact", "target_share", "target_instances", "counted_passes",
        "passes", "instances", "tokens",
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
        # counted whole, pass by pass: the target up to the partial pass's rounding, under one instance a document
        assert abs(r["instances"] - r["target_instances"]) < r["documents"]
        assert int(r["passes"]) < r["counted_passes"]  # the partial pass was counted, not extrapolated


@pytest.mark.slow
def test_two_workers_write_the_same_bytes(one_worker, inputs, spm_model_path, tmp_path):
    out = str(tmp_path / "two")
    stats = make_pretraining_data(inputs, spm_model_path, out, _config(language_alpha=0.3), workers=2)
    assert _bytes(out) == _bytes(one_worker[0])
    assert stats["per_language"] == one_worker[1]["per_language"]


@pytest.mark.slow
def test_a_segmenter_decides_the_token_boundaries_of_a_chinese_run(tmp_path):
    """language=zh with rjieba through make-pretraining-data: the same instances' pieces, fewer word starts (a
    WordPiece vocabulary starts a word at every Chinese character; rjieba's words hold several)."""
    import tensorflow as tf

    from trainer.input_pipeline import feature_spec

    repo = os.path.dirname(os.path.dirname(__file__))
    text = os.path.join(repo, "data", "sample-zh", "books", "zh-debian-faq.txt")
    with open(text, encoding="utf-8") as f:
        lines = [line.strip() for line in f if line.strip()]
    sentences = "\n".join(s for line in lines for s in line.split("。") if s) + "\n"
    chars = sorted({c for c in sentences.lower() if not c.isspace()})
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + chars + ["##" + c for c in chars]),
                     encoding="utf-8")
    docs = tmp_path / "documents-00000-of-00001.txt"
    docs.write_text(sentences, encoding="utf-8")
    shares = {}
    for name, extra in (("plain", []), ("rjieba", ["datagen.segmenters={zh: rjieba}"])):
        config = build_config("sample", overrides=["language=zh", "datagen.max_seq_length=64",
                                                   "datagen.max_predictions_per_seq=8", "datagen.dupe_factor=1",
                                                   "datagen.sop_mode=pure", "datagen.eval_fraction=0.1"] + extra)
        out = str(tmp_path / name)
        make_pretraining_data([str(docs)], str(vocab), out, config, workers=1)
        starts = tokens = 0
        for rec in tf.data.TFRecordDataset(sorted(glob.glob(os.path.join(out, "Split-train", "*.gz"))),
                                           compression_type="GZIP"):
            ex = tf.io.parse_single_example(rec, feature_spec(64, 8))
            n = int(ex["input_mask"].numpy().sum())
            starts += int(ex["token_boundary"].numpy()[:n].sum())
            tokens += n
        shares[name] = (starts / tokens, tokens)
    assert shares["plain"][1] == shares["rjieba"][1]  # the same pieces
    assert shares["rjieba"][0] < 0.8 * shares["plain"][0], shares
