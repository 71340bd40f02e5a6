"""Instance creation (components/datagen/instances.py, generate.py) on real text.

The fixture tests/fixtures/datagen_text.txt holds, one sentence per line with a blank line between
documents, opening paragraphs of public-domain books from Project Gutenberg (Austen, *Emma*; Melville,
*Moby-Dick*; Chesterton, *The Wisdom of Father Brown*), tokenized with the bundled ALBERT 30k-clean model.
"""
from __future__ import annotations

from typing import List

import numpy as np
import pytest

from components.datagen.generate import generate_for_document, tokenize_document
from components.datagen.instances import (Instance, InstanceParams, VocabInfo, create_instances_from_document,
                                          document_seed, truncate_pair, truncation_counts)


@pytest.fixture(scope="module")
def texts(datagen_texts) -> List[List[str]]:
    return datagen_texts


@pytest.fixture(scope="module")
def docs(datagen_docs) -> List[List[np.ndarray]]:
    return datagen_docs


def sampler(docs, exclude: int):
    others = [d for i, d in enumerate(docs) if i != exclude]
    return lambda rng: others[int(rng.integers(len(others)))]


def run(docs, params, vocab, seeds, with_random=True):
    """(doc index, instance) over every document and seed."""
    out = []
    for seed in seeds:
        for i, d in enumerate(docs):
            rng = np.random.default_rng(document_seed(seed, f"doc-{i}", 0))
            rd = sampler(docs, i) if with_random else None
            out += [(i, inst) for inst in create_instances_from_document(d, i, rng, params, vocab, rd)]
    return out


def unmasked(inst: Instance) -> np.ndarray:
    ids = inst.input_ids.copy()
    ids[inst.masked_lm_positions] = inst.masked_lm_ids
    return ids


def segments(inst: Instance, vocab: VocabInfo):
    ids = unmasked(inst)
    seps = np.flatnonzero(ids == vocab.sep_id)
    return ids[1:seps[0]], ids[seps[0] + 1:-1]


def find(hay: np.ndarray, needle: np.ndarray) -> int:
    """Token offset of needle in hay, or -1."""
    hb, nb = hay.astype(np.int32).tobytes(), needle.astype(np.int32).tobytes()
    i = hb.find(nb)
    while i != -1 and i % 4:
        i = hb.find(nb, i + 1)
    return -1 if i == -1 else i // 4


# ---------------------------------------------------------------------------------------------- tokenize

def test_normalize_sentences_equals_per_sentence_normalize(tok, texts, spm_model_path):
    """The document-at-once ASCII fast path gives exactly ``tokenizer.normalize`` per sentence, on real text
    and on every kind of ASCII whitespace, quote pair and non-ASCII mix."""
    from components.datagen.generate import normalize_sentences
    from components.text.tokenization import AlbertTokenizer

    edge = ["  Hello\tWorld  ", "a``b''c ``x''", "ÉCOLE  x\t", "", "   ", "x\x1fy\x0bz\x0c\r", "A  \t  B",
            "naïve ``q''", "Straße  \u00a0 x", "''``''", "trailing  "]
    cased = AlbertTokenizer(spm_model_path, do_lower_case=False)
    for t in (tok, cased):
        for sentences in texts + [edge, [], ["only"], ["é"], ["a\nb", "c"], [s for d in texts for s in d]]:
            assert normalize_sentences(t, sentences) == [t.normalize(s) for s in sentences]


def test_tokenized_document_views_and_equality(docs):
    from components.datagen.instances import TokenizedDocument
    from components.datagen.pool import DocumentPool

    doc = TokenizedDocument.from_sentences([docs[0][0], np.zeros(0, np.int32), docs[0][1]])
    assert len(doc) == 2 and doc == [docs[0][0], docs[0][1]] and doc != [docs[0][0]]
    assert doc.num_tokens == docs[0][0].shape[0] + docs[0][1].shape[0]
    assert doc[-1].tolist() == docs[0][1].tolist() and [a.tolist() for a in doc[0:1]] == [docs[0][0].tolist()]
    assert TokenizedDocument.from_sentences([]) == [] and TokenizedDocument.from_sentences(doc) is doc
    with pytest.raises(IndexError):
        doc[2]
    pool = DocumentPool(["a", "b"], [docs[0], docs[1]])
    view = pool.document(1)  # offsets into the pool's buffer, not from 0
    assert view.offsets[0] > 0 and view.flat is pool.flat and view == docs[1]
    assert view.num_tokens == sum(s.shape[0] for s in docs[1])


@pytest.mark.parametrize("mode", ["official", "pure", "nsp"])
def test_flat_documents_give_the_same_instances_as_sentence_lists(docs, vocab, mode):
    """Instance building on a TokenizedDocument (the generator's form) equals building on a list of arrays
    with a plain-list random document (the reference loop of the official code)."""
    from components.datagen.instances import TokenizedDocument

    params = InstanceParams(max_seq_length=64, max_predictions_per_seq=8, sop_mode=mode, short_seq_prob=0.3)
    for i, d in enumerate(docs):
        other = docs[(i + 1) % len(docs)]
        for seed in range(3):
            runs = []
            for form in (list, TokenizedDocument.from_sentences):
                rng = np.random.default_rng(seed)
                runs.append(create_instances_from_document(form(d), i, rng, params, vocab,
                                                           lambda r, o=other, f=form: f(list(o))))
            assert len(runs[0]) == len(runs[1]) > 0
            for a, b in zip(*runs):
                assert a.input_ids.tolist() == b.input_ids.tolist() and a.sop_label == b.sop_label
                assert a.masked_lm_positions.tolist() == b.masked_lm_positions.tolist()



def test_tokenize_document_matches_tokenizer(tok, vocab, texts):
    extra = ["In 1990, the firm paid 1,000,000 dollars.", "Café Müller «naïve» — 12,5", "", "   ", "Born 1990,in"]
    everything = [s for d in texts for s in d] + extra  # > 16 sentences: the batched path
    for sentences in texts + [extra, everything]:
        fast = tokenize_document(tok, sentences, vocab)
        ref = [np.asarray(tok.encode(s), np.int32) for s in sentences if tok.encode(s)]
        assert len(fast) == len(ref)
        for a, b in zip(fast, ref):
            assert a.dtype == np.int32 and a.tolist() == b.tolist()
    assert tokenize_document(tok, [], vocab) == []
    assert [a.tolist() for a in tokenize_document(tok, extra)] == [tok.encode(s) for s in extra if tok.encode(s)]


# ---------------------------------------------------------------------------------------------- format

@pytest.mark.parametrize("mode", ["official", "pure", "nsp"])
def test_format_lengths_segments(docs, vocab, mode):
    params = InstanceParams(max_seq_length=64, max_predictions_per_seq=10, sop_mode=mode)
    results = run(docs, params, vocab, range(20))
    assert len(results) > 300
    for _, inst in results:
        ids = unmasked(inst)
        n = ids.shape[0]
        assert 5 <= n <= params.max_seq_length
        assert ids[0] == vocab.cls_id and ids[-1] == vocab.sep_id
        seps = np.flatnonzero(ids == vocab.sep_id)
        assert seps.shape[0] == 2 and (ids == vocab.cls_id).sum() == 1
        a_len = seps[0] - 1
        assert a_len >= 1 and n - a_len - 3 >= 1
        assert inst.segment_ids.tolist() == [0] * (a_len + 2) + [1] * (n - a_len - 2)
        assert inst.token_boundary[0] == 1 and inst.token_boundary[seps].all()
        assert inst.token_boundary.tolist() == (vocab.is_word_start[ids] | (ids == vocab.cls_id)
                                                | (ids == vocab.sep_id)).astype(int).tolist()
        assert inst.sop_label in (0, 1)


def test_sop_labels_follow_order(docs, vocab):
    """official: label 0 = A really precedes B; 1 = swapped (B precedes A) or B from another document."""
    params = InstanceParams(max_seq_length=96, sop_mode="official")
    flat = [np.concatenate(d) for d in docs]
    kinds = {"in_order": 0, "swapped": 0, "random": 0}
    for i, inst in run(docs, params, vocab, range(30)):
        a, b = segments(inst, vocab)
        pa, pb = find(flat[i], a), find(flat[i], b)
        assert pa >= 0, "segment A must come from the document"
        if inst.sop_label == 0:
            assert pb >= pa + a.shape[0]
            kinds["in_order"] += 1
        elif pb >= 0 and pb + b.shape[0] <= pa:
            kinds["swapped"] += 1
        else:
            assert any(find(flat[j], b) >= 0 for j in range(len(flat)) if j != i)
            kinds["random"] += 1
    assert min(kinds.values()) > 20, kinds


def test_nsp_random_next_comes_from_another_document(docs, vocab):
    params = InstanceParams(max_seq_length=96, sop_mode="nsp")
    flat = [np.concatenate(d) for d in docs]
    labels = []
    for i, inst in run(docs, params, vocab, range(20)):
        a, b = segments(inst, vocab)
        pa, pb = find(flat[i], a), find(flat[i], b)
        assert pa >= 0
        if inst.sop_label == 0:
            assert pb >= pa + a.shape[0]
        else:
            assert any(find(flat[j], b) >= 0 for j in range(len(flat)) if j != i)
        labels.append(inst.sop_label)
    assert 0.4 < np.mean(labels) < 0.7


@pytest.mark.parametrize("mode", ["official", "pure", "nsp"])
def test_every_sentence_used_once_in_order(docs, vocab, mode):
    """Without truncation the document's own material (A, plus B unless it is random) is the whole document
    in order: chunks tile the document and random-next chunks put their unused sentences back."""
    params = InstanceParams(max_seq_length=2048, short_seq_prob=1.0, sop_mode=mode)
    for seed in range(40):
        for i, d in enumerate(docs):
            rng = np.random.default_rng(seed)
            insts = create_instances_from_document(d, i, rng, params, vocab, sampler(docs, i))
            own = []
            for inst in insts:
                a, b = segments(inst, vocab)
                random_b = inst.sop_label == 1 and mode != "pure" and find(np.concatenate(d), b) < 0
                swapped = inst.sop_label == 1 and not random_b and mode != "nsp"
                own += [a] if random_b else ([b, a] if swapped else [a, b])
            assert np.concatenate(own).tolist() == np.concatenate(d).tolist(), (mode, seed, i)


def test_truncation_matches_official_loop():
    rng = np.random.default_rng(0)
    for _ in range(500):
        la, lb, m = (int(x) for x in rng.integers(1, 60, 3))
        m = max(m, 2)
        a, b = list(range(la)), list(range(lb))
        while len(a) + len(b) > m:  # the official removal order, ignoring front/back
            (a if len(a) > len(b) else b).pop()
        assert truncation_counts(la, lb, m) == (la - len(a), lb - len(b))
        ta, tb = truncate_pair(np.arange(la), np.arange(100, 100 + lb), m, rng)
        assert (ta.shape[0], tb.shape[0]) == (len(a), len(b))
        assert np.all(np.diff(ta) == 1) and np.all(np.diff(tb) == 1)  # contiguous: cut at the ends only


def test_truncation_front_back_balanced():
    rng = np.random.default_rng(1)
    fronts = [truncate_pair(np.arange(300), np.arange(10), 109, rng)[0][0] for _ in range(2000)]
    assert abs(np.mean(fronts) / 201 - 0.5) < 0.02  # 201 removed from A, about half of them at the front


# ---------------------------------------------------------------------------------------------- edge cases

def test_empty_documents(vocab):
    params = InstanceParams()
    rng = np.random.default_rng(0)
    assert create_instances_from_document([], 0, rng, params, vocab, None) == []
    assert create_instances_from_document([np.zeros(0, np.int32)] * 3, 0, rng, params, vocab, None) == []


def test_one_sentence_documents(docs, vocab):
    one = [docs[0][0]]
    rd = sampler(docs, 0)
    for seed in range(20):
        rng = np.random.default_rng(seed)
        off = create_instances_from_document(one, 0, rng, InstanceParams(max_seq_length=128), vocab, rd)
        assert len(off) == 1 and off[0].sop_label == 1
        a, _ = segments(off[0], vocab)
        assert a.tolist() == one[0].tolist()
        nsp = create_instances_from_document(one, 0, rng, InstanceParams(max_seq_length=128, sop_mode="nsp"),
                                             vocab, rd)
        assert len(nsp) == 1 and nsp[0].sop_label == 1
    # official without a source of random documents: one-sentence chunks are skipped
    assert create_instances_from_document(one, 0, np.random.default_rng(0), InstanceParams(), vocab, None) == []
    # pure: the sentence is split at a word start, then swapped with p 0.5
    labels = []
    for seed in range(200):
        pure = create_instances_from_document(one, 0, np.random.default_rng(seed),
                                              InstanceParams(max_seq_length=128, sop_mode="pure"), vocab, None)
        assert len(pure) == 1
        a, b = segments(pure[0], vocab)
        first, second = (b, a) if pure[0].sop_label else (a, b)
        assert np.concatenate([first, second]).tolist() == one[0].tolist()
        assert vocab.is_word_start[second[0]]
        labels.append(pure[0].sop_label)
    assert 0.4 < np.mean(labels) < 0.6
    one_piece = [np.asarray([one[0][0]], np.int32)]
    assert create_instances_from_document(one_piece, 0, np.random.default_rng(0),
                                          InstanceParams(sop_mode="pure"), vocab, None) == []


@pytest.mark.parametrize("mode", ["official", "pure", "nsp"])
def test_sentences_longer_than_max_seq_length(docs, vocab, mode):
    huge = np.concatenate([np.concatenate(d) for d in docs])  # ~1800 pieces as one "sentence"
    doc = [huge, docs[1][0], huge[:700]]
    params = InstanceParams(max_seq_length=128, sop_mode=mode)
    for seed in range(10):
        insts = create_instances_from_document(doc, 0, np.random.default_rng(seed), params, vocab,
                                               sampler(docs, -1))
        assert insts
        for inst in insts:
            assert inst.num_tokens <= 128
        assert max(i.num_tokens for i in insts) == 128


def test_document_shorter_than_short_target(docs, vocab):
    doc = [docs[2][0], docs[2][2]]  # "Call me Ishmael." + one more short sentence
    total = sum(s.shape[0] for s in doc)
    params = InstanceParams(max_seq_length=512, short_seq_prob=1.0, sop_mode="pure")
    for seed in range(30):
        insts = create_instances_from_document(doc, 0, np.random.default_rng(seed), params, vocab, None)
        assert insts[0].is_short_target
        if insts[0].target_length > total:
            assert len(insts) == 1 and insts[0].num_tokens == total + 3


def test_contract_errors(docs, vocab):
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="nsp"):
        create_instances_from_document(docs[0], 0, rng, InstanceParams(sop_mode="nsp"), vocab, None)
    with pytest.raises(ValueError, match="empty document"):
        create_instances_from_document([docs[0][0]], 0, rng, InstanceParams(), vocab, lambda r: [])


@pytest.mark.parametrize("kwargs, word", [
    ({"max_seq_length": 4}, "max_seq_length"),
    ({"max_seq_length": 512.0}, "max_seq_length"),
    ({"max_predictions_per_seq": -1}, "max_predictions_per_seq"),
    ({"masked_lm_prob": 1.5}, "masked_lm_prob"),
    ({"short_seq_prob": -0.1}, "short_seq_prob"),
    ({"max_ngram": 0}, "max_ngram"),
    ({"sop_mode": "sop"}, "sop_mode"),
    ({"random_token_prob": 0.6, "keep_prob": 0.6}, "random_token_prob \\+ keep_prob"),
])
def test_params_validation(kwargs, word):
    with pytest.raises(ValueError, match=word):
        InstanceParams(**kwargs)


# ---------------------------------------------------------------------------------------------- statistics

def test_short_target_share_and_sop_balance(docs, vocab):
    """Seeded, so the counts are exact: 10.5 % short targets (short_seq_prob 0.1), SOP labels balanced at 0.495."""
    params = InstanceParams(max_seq_length=128, sop_mode="pure")
    results = run(docs, params, vocab, range(1200), with_random=False)
    firsts = [inst for _, inst in results if inst.chunk_index == 0]
    assert len(firsts) == 4800
    assert sum(i.is_short_target for i in firsts) == 506  # 10.5 % (short_seq_prob 0.1)
    labels = [inst.sop_label for _, inst in results]
    assert (len(labels), sum(labels)) == (18238, 9022)  # label-1 share 0.495


def test_official_sop_leans_to_label_1(docs, vocab):
    """One-sentence chunks (often a document's last sentence) always get label 1 in the official scheme,
    so its label-1 share is above 1/2 (about 0.56 on this text at L=128); pure SOP is the balanced one."""
    results = run(docs, InstanceParams(max_seq_length=128), vocab, range(100))
    labels = [inst.sop_label for _, inst in results]
    assert (len(labels), sum(labels)) == (1536, 876)  # label-1 share 0.570


# ---------------------------------------------------------------------------------------------- determinism

def test_document_seed_stable():
    assert document_seed(0, "doc-0", 0) == 12530265924512307029
    assert document_seed(12345, "wiki/Anarchism", 2) == 13601451695030170549
    seeds = {document_seed(s, d, p) for s in (0, 1) for d in ("a", "b", "ab") for p in (0, 1)}
    assert len(seeds) == 12


def test_same_seed_same_bytes_any_order(docs, vocab):
    params = InstanceParams(max_seq_length=128)

    def gen(order, seed):
        out = {}
        for i in order:
            out[i] = [b for b, _ in generate_for_document(f"doc-{i}", docs[i], seed, 3, params, vocab,
                                                          sampler(docs, i))]
        return out

    first = gen([0, 1, 2, 3], 7)
    assert gen([3, 1, 0, 2], 7) == first  # any worker order / sharding
    assert gen([0, 1, 2, 3], 8) != first
    assert all(len(v) >= 3 for v in first.values())
    passes = list(generate_for_document("doc-0", docs[0], 7, 3, params, vocab, sampler(docs, 0)))
    assert len({b for b, _ in passes}) == len(passes)  # passes differ
    with pytest.raises(ValueError, match="dupe_factor"):
        list(generate_for_document("doc-0", docs[0], 7, 0, params, vocab, None))
