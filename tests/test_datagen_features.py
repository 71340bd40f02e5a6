"""The hand-written tf.train.Example encoder (components/datagen/features.py) against TensorFlow itself.

Real instances from tests/fixtures/datagen_text.txt (Project Gutenberg paragraphs), bundled 30k-clean model.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from components.datagen.features import (FEATURE_NAMES, feature_spec, padded_features, serialize_features,
                                         serialize_instance, varints)
from components.datagen.generate import generate_for_document
from components.datagen.instances import Instance, InstanceParams

tf = pytest.importorskip("tensorflow")

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def vocab_docs(vocab, datagen_docs):
    return vocab, datagen_docs


def tf_example(features) -> bytes:
    feats = {}
    for name, arr in features.items():
        arr = np.asarray(arr).reshape(-1)
        if arr.dtype.kind == "f":
            feats[name] = tf.train.Feature(float_list=tf.train.FloatList(value=arr.tolist()))
        else:
            feats[name] = tf.train.Feature(int64_list=tf.train.Int64List(value=[int(x) for x in arr]))
    return tf.train.Example(features=tf.train.Features(feature=feats)).SerializeToString(deterministic=True)


def test_feature_spec():
    assert feature_spec(512, 20) == {
        "input_ids": {"dtype": "int64", "shape": [512]},
        "input_mask": {"dtype": "int64", "shape": [512]},
        "masked_lm_ids": {"dtype": "int64", "shape": [20]},
        "masked_lm_positions": {"dtype": "int64", "shape": [20]},
        "masked_lm_weights": {"dtype": "float32", "shape": [20]},
        "next_sentence_labels": {"dtype": "int64", "shape": [1]},
        "segment_ids": {"dtype": "int64", "shape": [512]},
        "token_boundary": {"dtype": "int64", "shape": [512]},
    }
    assert list(FEATURE_NAMES) == sorted(feature_spec(8, 2))


@pytest.mark.parametrize("L, P, mode", [(512, 20, "official"), (128, 20, "pure"), (64, 77, "nsp"), (32, 0, "pure")])
def test_serialize_instance_equals_tensorflow(vocab_docs, L, P, mode):
    vocab, docs = vocab_docs
    params = InstanceParams(max_seq_length=L, max_predictions_per_seq=P, sop_mode=mode)
    spec = {k: (tf.io.FixedLenFeature(v["shape"], tf.int64 if v["dtype"] == "int64" else tf.float32))
            for k, v in feature_spec(L, P).items()}
    n = 0
    for i, d in enumerate(docs):
        others = [x for j, x in enumerate(docs) if j != i]
        for payload, inst in generate_for_document(f"d{i}", d, 3, 2, params, vocab,
                                                   lambda r: others[int(r.integers(len(others)))]):
            feats = padded_features(inst, L, P)
            assert payload == tf_example(feats)
            parsed = tf.io.parse_single_example(payload, spec)
            for k, v in feats.items():
                np.testing.assert_array_equal(parsed[k].numpy(), v)
            assert feats["input_mask"].sum() == inst.num_tokens
            assert (feats["input_ids"][inst.num_tokens:] == 0).all()
            assert feats["masked_lm_weights"].sum() == inst.masked_lm_positions.shape[0]
            n += 1
    assert n > 10


def test_serialize_features_generic_values():
    rng = np.random.default_rng(0)
    feats = {
        "big": np.array([0, 1, 127, 128, 16383, 16384, 65535, 65536, 2**31, 2**62, 2**63 - 1], np.int64),
        "neg": np.array([-1, -128, -(2**63), 5], np.int64),
        "small": np.array([1, 0, 1], np.int8),
        "rand": rng.integers(-(2**40), 2**40, 300),
        "f": np.array([0.0, -0.0, 1.5, -3.25e-8, np.inf, 3.4e38], np.float32),
        "empty": np.zeros(0, np.int64),
        "ü-key": np.array([7]),
    }
    assert serialize_features(feats) == tf_example(feats)
    for name, arr in feats.items():
        if arr.dtype.kind != "f":
            ref = tf.train.Int64List(value=[int(x) for x in arr]).SerializeToString()
            packed = varints(arr)
            assert ref == (b"\x0a" + varints(np.array([len(packed)])) + packed if arr.size else b"")


def test_serialize_instance_rejects_oversize():
    inst = Instance(np.arange(10, dtype=np.int32), np.zeros(10, np.int8), np.ones(10, np.int8),
                    np.arange(3, dtype=np.int32), np.arange(3, dtype=np.int32), 0)
    with pytest.raises(ValueError, match="max_seq_length"):
        serialize_instance(inst, 8, 5)
    with pytest.raises(ValueError, match="max_predictions_per_seq"):
        serialize_instance(inst, 16, 2)


def test_core_imports_no_tensorflow_beam_tfx():
    code = ("import sys; import components.datagen.generate, components.datagen.stats; "
            "bad = [m for m in ('tensorflow', 'apache_beam', 'tfx') if m in sys.modules]; "
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)
