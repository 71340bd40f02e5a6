"""The contamination pass's fast path (issue 55 item 7) against the per-token path it replaces: the same token hashes
for every document (``text_units.content_token_hashes`` against ``token_hashes(content_tokens(normalized_text()))``)
and the same contaminated passages (``ContaminationCombiner`` against the per-token lookup it used before), on the
bundled sample corpus, its SQuAD and RACE dev passages, and texts chosen to break a byte-level tokenizer."""
import os

import numpy as np
import pytest

from components.datagate import datagate_beam
from components.datagate.contamination import NGRAM_SIZE, ContaminationCombiner, DevNgrams
from components.datagate.contamination import passage_ngrams
from components.datagate.text_units import (content_token_hashes, content_tokens, ngram_hashes, normalized_text,
                                            token_hashes)
from components.datagate.text_units import (TokenVocabulary, _KeyIndex,  # the dev vocabulary's path (below)
                                            content_token_bytes)
from components.corpus.books import book_documents
from components.text.documents import Document
from components.corpus.wiki import wiki_documents

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SAMPLE = os.path.join(ROOT, "data", "sample")

THIRTEEN = "one two three four five six seven eight nine ten eleven twelve thirteen"
TRICKY = [
    [],
    [""],
    ["   ", "\t\n"],
    ["### ... … —— !!!", "¡¿«»"],  # punctuation only
    ["a"], ["x y"],  # short
    [THIRTEEN],  # exactly 13 tokens: one 13-gram
    [THIRTEEN.upper() + "."],
    ["Café, CAFE! naïve Ångström", "ﬁne ² ½ ＡＢＣ１２ ｱ"],  # accents, compatibility forms
    ["中文abc中 ok。", "日本語です"],  # unspaced: one token per character
    ["สวัสดี ครับ"],  # Thai (unspaced)
    ["대한민국 헌법"],  # Hangul: NFKD makes conjoining jamo, which are letters
    ["ΟΔΟΣ ΟΔΟΣ. Σ", "ΣΑΣ\tΣ", "ΑΣ\u0301Β"],  # Greek final sigma (lower() reads the context)
    ["İstanbul IŞIK"],  # dotted capital I: NFKD first, then lower
    ["a\u00a0b\u2003c\u3000d\x1ce\x85f\u2028g"],  # Unicode whitespace
    ["a\u200bb", "a\u00adb"],  # zero-width space, soft hyphen: not whitespace, not word characters
    ["a\x00b", "NUL\x00\x00end"],
    ["x_1 __init__ 3.14 1,000 1234567890123"],
    ["abcdefgh abcdefghi supercalifragilistic abcdefgh"],  # 8, 9 and 20 bytes
    ["Достоевский Толстой ДОСТОЕВСКИЙ", "Ñandú ñandú"],  # multi-byte word characters, long tokens
    ["مَرْحَبًا بالعالم", "नमस्ते दुनिया"],  # combining marks inside words
    ["\u0301abc", "e\u0301 \u0301"],  # a combining mark opening a sentence
    ["😀 a😀b 𝐀𝐁𝐂 ℌ"],  # outside the BMP; mathematical letters fold to ASCII
    ["a\ud800b"],  # a lone surrogate (the per-token path)
    ["Ǆemal ǅ ǆ", "ＦＵＬＬ　ＷＩＤＴＨ"],
]


def per_token(sentences):
    return token_hashes(content_tokens(normalized_text(sentences)))


def old_hits(dev: DevNgrams, docs):
    """The dev n-gram hashes found in ``docs`` by the per-token path and a plain binary search (the code before)."""
    found = set()
    for d in docs:
        hashes = ngram_hashes(per_token(d.sentences), dev.n)
        if len(hashes) and len(dev.all):
            at = np.minimum(np.searchsorted(dev.all, hashes), len(dev.all) - 1)
            found.update(int(h) for h in hashes[dev.all[at] == hashes])
    return found


@pytest.fixture(scope="module")
def sample_docs():
    books = list(book_documents(os.path.join(SAMPLE, "books")))
    wiki = list(wiki_documents(os.path.join(SAMPLE, "wikipedia", "enwiki-sample-pages-articles.xml.bz2")))
    return books + wiki


@pytest.fixture(scope="module")
def passages():
    return datagate_beam.dev_passages([os.path.join(SAMPLE, "squad", "dev-v1.1-sample.json")],
                                      os.path.join(SAMPLE, "race"))


@pytest.mark.parametrize("sentences", TRICKY, ids=range(len(TRICKY)))
def test_tricky_texts_hash_as_the_per_token_path(sentences):
    fast, slow = content_token_hashes(sentences), per_token(sentences)
    assert fast.dtype == slow.dtype == np.uint64
    assert fast.tolist() == slow.tolist()


def test_tricky_token_counts():
    assert [len(content_token_hashes(s)) for s in TRICKY] == [
        0, 0, 0, 0, 1, 2, 13, 13, 10, 10, 10, 2, 6, 2, 7, 4, 4, 7, 4, 5, 6, 2, 4, 2, 5]
    assert len(ngram_hashes(content_token_hashes([THIRTEEN]), NGRAM_SIZE)) == 1


def test_sample_corpus_and_dev_passages_hash_as_the_per_token_path(sample_docs, passages):
    tokens = 0
    for d in sample_docs:
        fast, slow = content_token_hashes(d.sentences), per_token(d.sentences)
        assert fast.tolist() == slow.tolist(), d.doc_id
        tokens += len(fast)
    for pid, text in passages:
        assert content_token_hashes([text]).tolist() == per_token([text]).tolist(), pid
    assert (len(sample_docs), tokens, len(passages)) == (21, 91997, 20)


def test_contaminated_passages_are_those_of_the_per_token_path(sample_docs, passages):
    # Three passages copied into corpus documents, changed as a corpus would change them (case, punctuation,
    # line breaks), and one with at most 12 of its tokens in a row: no 13-gram.
    (p0, t0), (p1, t1), (p2, t2), (p3, t3) = passages[0], passages[5], passages[-1], passages[3]
    tokens3 = content_tokens(normalized_text([t3]))
    planted = [
        Document("p0", "books", "p0", ["Before.", t0.upper().replace(",", " ;")]),
        Document("p1", "books", "p1", t1.replace(". ", ".\n").split("\n")),
        Document("p2", "books", "p2", ["«" + t2 + "»"]),
        Document("p3", "books", "p3", [" ".join(tokens3[:12]), "BREAK", " ".join(tokens3[12:24])]),
    ]
    docs = sample_docs + planted + [Document(str(i), "x", str(i), s) for i, s in enumerate(TRICKY)]
    dev = DevNgrams(passages + [("tricky:13", THIRTEEN)])
    combiner = ContaminationCombiner(dev)
    acc = combiner.create_accumulator()
    for d in docs:
        combiner.add_input(acc, d)
    assert acc == old_hits(dev, docs)
    result = combiner.extract_output(acc)
    assert result.contaminated == tuple(sorted([p0, p1, p2, "tricky:13"]))
    assert (result.passages, result.short, len(acc)) == (21, 0, 669)
    # Without the planted documents: what the sample corpus itself contains.
    alone = ContaminationCombiner(dev)
    acc = alone.create_accumulator()
    for d in sample_docs:
        alone.add_input(acc, d)
    assert acc == old_hits(dev, sample_docs) and alone.extract_output(acc).contaminated == ()


# The dev vocabulary's path (TokenVocabulary, DevNgrams.document_ngrams): a vocabulary of some of the tricky and
# sample texts, tokens of every length class (<= 8, 9-16 and over 16 bytes, multi-byte ones) in and out of it.
VOCABULARY_TEXTS = [s for sentences in TRICKY[4:] for s in sentences if "\ud800" not in s] + [
    "abcdefghijklmnop abcdefghijklmnopq ab abcdefghijklmn Достоевскийтолстой"]


def _vocabulary_cases():
    mixed = "abcdefghijklmnopqr abcdefghijklmnoq abcdefgh unknown1 ΔΟΣΤΟΕΒΣΚΙΥ"
    return TRICKY + [[VOCABULARY_TEXTS[-1], mixed]]


@pytest.mark.parametrize("sentences", _vocabulary_cases(), ids=range(len(_vocabulary_cases())))
def test_vocabulary_knows_exactly_its_tokens(sentences):
    vocabulary = TokenVocabulary(t for text in VOCABULARY_TEXTS for t in content_token_bytes([text]))
    words = set(t for text in VOCABULARY_TEXTS for t in content_tokens(normalized_text([text])))
    hashes, known = vocabulary.known_token_hashes(sentences)
    tokens = content_tokens(normalized_text(sentences))
    assert content_token_bytes(sentences) == [t.encode("utf-8") for t in tokens]
    expected = per_token(sentences)
    assert len(hashes) == len(known) == len(expected)
    assert hashes.dtype == np.uint64 and known.dtype == bool
    if "\ud800" in "".join(sentences):  # the per-token path: known by hash
        assert known.tolist() == [h in vocabulary.hashes for h in expected.tolist()]
    else:
        assert known.tolist() == [t in words for t in tokens]
    assert hashes[known].tolist() == expected[known].tolist()
    assert not hashes[~known].any()


def test_vocabulary_of_nothing_knows_nothing():
    empty = TokenVocabulary([])
    hashes, known = empty.known_token_hashes([THIRTEEN + " supercalifragilistic abcdefghij"])
    assert len(hashes) == 15 and not known.any()


def test_key_index_finds_exactly_its_keys():
    rng = np.random.default_rng(0)
    keys = np.unique(rng.integers(1, 2 ** 64, 5000, dtype=np.uint64, endpoint=False))
    keys = np.concatenate([keys, np.arange(1, 200, dtype=np.uint64)])  # small keys: the same slots, long probes
    index = _KeyIndex(keys)
    queries = np.concatenate([keys, rng.integers(0, 2 ** 64, 5000, dtype=np.uint64, endpoint=False),
                              np.arange(0, 400, dtype=np.uint64)])
    at, found = index.lookup(queries)
    position = {k: i for i, k in enumerate(keys.tolist())}
    assert found.tolist() == [q in position for q in queries.tolist()]
    assert at[found].tolist() == [position[q] for q in queries[found].tolist()]
    with pytest.raises(ValueError):
        _KeyIndex(np.array([0, 1], dtype=np.uint64))


def test_document_ngrams_are_the_dev_ngrams_among_all(sample_docs, passages):
    dev = DevNgrams(passages + [("tricky:13", THIRTEEN)])
    for pid, text in passages + [("tricky:13", THIRTEEN)]:  # the dev n-grams as passage_ngrams makes them
        assert dev.by_passage[pid].tolist() == passage_ngrams(text).tolist(), pid
    (_, t0), (_, t3) = passages[0], passages[3]
    docs = [d.sentences for d in sample_docs[:5]] + TRICKY + [
        ["Before. " + t0.upper() + " after"], [t3[: len(t3) // 2], "BREAK", t3[len(t3) // 2:]]]
    kept = 0
    for sentences in docs:
        every = ngram_hashes(per_token(sentences), NGRAM_SIZE)
        some = dev.document_ngrams(sentences)
        assert set(some.tolist()) <= set(every.tolist())
        assert dev.find(some).tolist() == dev.find(every).tolist()
        kept += len(some)
    assert 0 < kept < sum(max(0, len(per_token(s)) - NGRAM_SIZE + 1) for s in docs)


def test_characters_one_by_one_normalise_as_the_whole_text():
    # _separated_bytes normalises a text character by character (text_units._character_bytes): every character of
    # the Latin, Greek, Cyrillic, combining, punctuation, letterlike, ligature and full-width blocks, alone, inside
    # a word and after a capital, then random mixes of them with capital and final sigma, dotted I and marks.
    chars = [chr(c) for c in list(range(0x80, 0x590)) + list(range(0x1E00, 0x2200)) + list(range(0xFB00, 0xFB50))
             + list(range(0xFF00, 0xFF70))]
    for i in range(0, len(chars), 200):
        sentences = ["a" + c + "b " + c + "X" + c for c in chars[i:i + 200]]
        assert content_token_hashes(sentences).tolist() == per_token(sentences).tolist(), i
    rng = np.random.default_rng(1)
    pool = chars + list("abcXYZ  .,\n\u0301\u0345İıΣσς")
    for _ in range(300):
        sentences = ["".join(rng.choice(pool, rng.integers(1, 60))) for _ in range(rng.integers(1, 4))]
        assert content_token_hashes(sentences).tolist() == per_token(sentences).tolist(), sentences
