"""InstanceStats (components/datagen/stats.py): counts, percentiles, merge laws, pickling, JSON.

Real instances from tests/fixtures/datagen_text.txt (Project Gutenberg paragraphs), bundled 30k-clean model.
"""
from __future__ import annotations

import json
import pickle

import numpy as np
import pytest

from components.datagen.generate import generate_for_document
from components.datagen.instances import InstanceParams
from components.datagen.stats import InstanceStats


@pytest.fixture(scope="module")
def instances(vocab, datagen_docs):
    docs = datagen_docs
    params = InstanceParams(max_seq_length=96, max_predictions_per_seq=12)
    out = []
    for seed in range(40):
        for i, d in enumerate(docs):
            others = [x for j, x in enumerate(docs) if j != i]
            out += [inst for _, inst in generate_for_document(f"d{i}", d, seed, 1, params, vocab,
                                                              lambda r: others[int(r.integers(len(others)))])]
    return out


def stats_of(insts) -> InstanceStats:
    s = InstanceStats()
    for inst in insts:
        s.add(inst)
    return s


def test_counts_match_direct_computation(instances):
    d = stats_of(instances).to_dict()
    lengths = np.array([i.num_tokens for i in instances])
    assert d["instances"] == len(instances) and d["tokens"] == lengths.sum()
    assert d["length_mean"] == pytest.approx(lengths.mean())
    for q in (50, 90, 99):
        assert d[f"length_p{q}"] == int(np.percentile(lengths, q, method="inverted_cdf"))
    assert d["length_max"] == lengths.max()
    labels = np.array([i.sop_label for i in instances])
    assert d["sop_label_counts"] == {"0": int((labels == 0).sum()), "1": int((labels == 1).sum())}
    masked = sum(i.masked_lm_positions.shape[0] for i in instances)
    assert d["masked_tokens"] == masked and d["masked_token_share"] == pytest.approx(masked / lengths.sum())
    kinds = np.bincount(np.concatenate([i.mask_kinds for i in instances]), minlength=3)
    assert d["replacement_counts"] == {"mask": kinds[0], "random": kinds[1], "keep": kinds[2]}
    spans = np.bincount(np.concatenate([i.ngram_lengths for i in instances]))
    assert d["ngram_span_counts"] == {str(n): int(c) for n, c in enumerate(spans) if c}
    firsts = [i for i in instances if i.chunk_index == 0]
    assert d["doc_passes"] == len(firsts) == 160
    assert d["short_target_share_doc_passes"] == pytest.approx(np.mean([i.is_short_target for i in firsts]))
    assert d["short_target_share_instances"] == pytest.approx(np.mean([i.is_short_target for i in instances]))
    assert sum(d["length_histogram"].values()) == len(instances)


def test_merge_is_associative_commutative_and_matches_single_pass(instances):
    parts = [instances[:37], instances[37:38], [], instances[38:200], instances[200:]]
    whole = stats_of(instances)
    a, b, c, e, f = (stats_of(p) for p in parts)
    left = stats_of(parts[0]).merge(stats_of(parts[1])).merge(stats_of(parts[2])).merge(e).merge(f)
    right = stats_of(parts[4]).merge(stats_of(parts[3]).merge(stats_of(parts[2]).merge(b.merge(a))))
    assert left.to_dict() == whole.to_dict() == right.to_dict()
    assert InstanceStats.merged([stats_of(p) for p in parts]) == whole


def test_pickle_json_and_empty(instances):
    s = stats_of(instances[:50])
    t = pickle.loads(pickle.dumps(s))
    assert t == s
    t.add(instances[51])
    assert t != s
    json.dumps(s.to_dict())
    empty = InstanceStats().to_dict()
    json.dumps(empty)
    assert empty["instances"] == 0 and empty["length_p50"] == 0 and empty["sop_label_1_share"] == 0.0
    assert InstanceStats().merge(InstanceStats()) == InstanceStats()
