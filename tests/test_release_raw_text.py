"""Raw text in, for the pushed pretrained model (issue 64): the version the session's sample run pushed carries TF Hub's
pair and ``text_model/``, and a fresh process that imports only ``tensorflow`` and ``tensorflow_text`` (as TF Serving)
serves raw strings with it: the in-graph ids are the project tokenizer's, preprocess → encoder gives the ids path's
``pooled_output`` (1e-5), and ``fill_mask`` gives K tokens for each mask (tests/raw_text_probe.py). The Chinese
sample's version and a converted official-format model's: tests/test_sample_zh.py."""
import json
import os

import pytest

from tests.raw_text_probe import TOP_K, check_version
from tests.test_graph_tokenizer import HARD

pytestmark = [pytest.mark.slow, pytest.mark.reads_sample_run]


def test_the_sample_version_serves_raw_text_as_its_ids_path(sample_run, tmp_path):
    version = os.path.join(sample_run.pipeline_root, "releases", "1")
    assert {"preprocess", "encoder", "text_model", "saved_model.pb"} <= set(os.listdir(version))
    with open(os.path.join(version, "release.json")) as f:
        files = json.load(f)["files"]
    assert {"preprocess/saved_model.pb", "encoder/saved_model.pb", "text_model/saved_model.pb"} <= set(files)
    masked = ["The capital of France is [MASK].", "no mask here", "[MASK] and [MASK] again"]
    answer = check_version(version, HARD, masked, tmp_path)
    filled = answer["fill_mask"]
    assert filled["mask_count"] == [1, 0, 2]
    assert [len(row) for row in filled["tokens"]] == [2, 2, 2]  # padded to the most masks in the batch
    assert all(len(m) == TOP_K and all(m) for m in filled["tokens"][0][:1] + filled["tokens"][2])
    assert filled["tokens"][1] == [[""] * TOP_K] * 2 and filled["token_ids"][1] == [[-1] * TOP_K] * 2
    scores = filled["scores"][0][0]
    assert scores == sorted(scores, reverse=True) and 0 < sum(scores) <= 1.0 + 1e-6
    # The pair signature: [CLS] a [SEP] b [SEP], segment 1 from b on.
    assert answer["pair_type_ids"][3][:2] == [0, 0] and 1 in answer["pair_type_ids"][3]


def test_predict_fill_mask_and_embed_on_the_sample_version(sample_run, cli):
    """`albert-pipeline predict` on the pushed version (its text_model/ graph): top-k tokens for a masked English
    sentence; a text longer than the model's sequence exits 2 naming it, and --truncate cuts it as training does."""
    version = os.path.join(sample_run.pipeline_root, "releases", "1")
    done = cli("predict", "fill-mask", "--model", version, "The capital of France is [MASK].")
    assert done.returncode == 0, done.stderr
    (row,) = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(row["tokens"]) == 1 and len(row["tokens"][0]) == TOP_K and all(row["tokens"][0])
    assert row["scores"][0] == sorted(row["scores"][0], reverse=True) and "path" not in row
    long_text = "the cat sat on the mat " * 200
    done = cli("predict", "embed", "--model", version, long_text)
    assert done.returncode == 2 and "do not fit the model's sequence" in done.stderr, done.stderr
    done = cli("predict", "embed", "--truncate", "--model", version, long_text)
    assert done.returncode == 0 and len(json.loads(done.stdout)["pooled_output"]) > 0, done.stderr
