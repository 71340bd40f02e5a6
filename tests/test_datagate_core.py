"""components/datagate: the pure core of the data gate (issue 55): exact measures on hand-made documents, each
bad-span class caught by its check, a good span (disjoint halves of data/sample) passing, contamination counted
exactly, and the protos round-tripping."""
import dataclasses
import os
from collections import Counter

import numpy as np
import pytest

from components.datagate.checks import CHECKS, GateLimits, check_span, failed
from components.datagate.contamination import ContaminationCombiner, DevNgrams
from components.datagate.document_stats import (DocumentRules, SketchSettings, SpanStatsCombiner, flags,
                                                measure_document, word_bucket)
from components.datagate.drift import jensen_shannon_divergence, total_variation, unigram_tables, volume_ratio
from components.datagate.near_duplicates import (MinHasher, MinHashSettings, previous_span_duplicates, shingle_hashes,
                                                 sort_key)
from components.datagate.protos import (failures_from_anomalies, limits_from_schema, limits_to_schema,
                                        results_to_anomalies, statistics_from_proto, statistics_to_proto)
from components.datagate.sketches import TopCounter
from components.datagate.text_units import (NGRAM_HASH_BASE, content_tokens, count_letters, count_no_letter_words,
                                            language, ngram_hashes, normalized_text, script_counts, token_hashes,
                                            words)
from components.corpus.books import book_documents
from components.text.documents import Document, doc_fingerprint, make_document
from components.corpus.wiki import wiki_documents

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SAMPLE = os.path.join(ROOT, "data", "sample")


def doc(sentences, doc_id="d", source="books"):
    return Document(doc_id=doc_id, source=source, title=doc_id, sentences=list(sentences))


def failing(results):
    return sorted(r.name for r in failed(results))


@pytest.fixture(scope="module")
def sample_halves():
    """The bundled sample as two disjoint spans: each one book and every other Wikipedia article."""
    books = list(book_documents(os.path.join(SAMPLE, "books")))
    wiki = list(wiki_documents(os.path.join(SAMPLE, "wikipedia", "enwiki-sample-pages-articles.xml.bz2")))
    return [books[0]] + wiki[0::2], [books[1]] + wiki[1::2]


@pytest.fixture(scope="module")
def baseline(sample_halves):
    return SpanStatsCombiner(1).compute(sample_halves[0])


# --- text units -----------------------------------------------------------------------------------------------

def test_words_split_on_whitespace_and_count_each_unspaced_character():
    assert words("The cat, sat.") == ["The", "cat,", "sat."]
    assert words("中文abc中 ok。") == ["中", "文", "abc", "中", "ok。"]
    assert words("日本語です") == ["日", "本", "語", "で", "す"]
    assert words("대한민국 헌법") == ["대한민국", "헌법"]  # Korean is spaced
    assert words("สวัสดี") == list("สวัสดี")  # Thai: one per code point (an upper bound)


def test_content_tokens_are_normalised_word_runs():
    assert content_tokens(normalized_text(["Café, CAFE!", "中文 x_1"])) == ["cafe", "cafe", "中", "文", "x_1"]


def test_letters_no_letter_words_and_scripts():
    assert count_letters("ab1 é中") == 4
    assert count_no_letter_words("a 12 -- b3 ### 中文12，好 ..") == 5  # 12, --, ###, 12， and ..
    assert script_counts("Hello 中文 です") == {"latin": 5, "han": 2, "kana": 2}
    assert script_counts("1 2 3") == {}


def test_language_labels():
    assert language({"latin": 50}, english_stop_words=2) == "en"
    assert language({"latin": 50}, english_stop_words=1) == "latin"
    assert language({"han": 20}, 0) == "zh"
    assert language({"han": 20, "kana": 3}, 0) == "ja"  # kana 3/23 >= 0.1
    assert language({"han": 20, "kana": 2}, 0) == "zh"  # kana 2/22 < 0.1
    assert language({"hangul": 9, "han": 1}, 0) == "ko"
    assert language({"cyrillic": 9}, 0) == "cyrillic"
    assert language({}, 5) == "none"


def test_ngram_hashes_are_the_polynomial_of_token_hashes():
    values = np.array([3, 5, 7], dtype=np.uint64)
    base = int(NGRAM_HASH_BASE)
    expected = [(3 * base + 5) % 2**64, (5 * base + 7) % 2**64]
    assert ngram_hashes(values, 2).tolist() == expected
    assert ngram_hashes(values, 4).tolist() == []
    assert token_hashes(["a", "b", "a"])[0] == token_hashes(["a"])[0] != token_hashes(["b"])[0]


# --- per-document measures ------------------------------------------------------------------------------------

HAND_MADE = doc(["The cat sat on the mat.", "The cat sat on the mat.", "中文abc中 ok", "### ... …"])


def test_measure_document_exact_values():
    m = measure_document(HAND_MADE)
    assert (m.characters, m.words, m.whitespace_words, m.word_characters, m.letters) == (64, 20, 17, 51, 42)
    assert (m.hash_symbols, m.ellipses, m.no_letter_words, m.english_stop_words) == (3, 2, 3, 4)
    assert (m.lines, m.duplicate_lines, m.duplicate_line_characters) == (4, 1, 23)
    # "The cat" (6 characters) twice; "The cat sat" (9) twice; "The cat sat on" (11) twice.
    assert m.top_ngram_characters == {2: 12, 3: 18, 4: 22}
    # The second sentence's 6 words (18 characters) are covered by repeated 5- and 6-grams, by no 7-gram.
    assert m.duplicate_ngram_characters == {5: 18, 6: 18, 7: 0, 8: 0, 9: 0, 10: 0}
    assert m.language == "en"
    # 20 words < 50; mean length 51/20 < 3; '#' 3/20 > 0.1; duplicate-line characters 23/64 > 0.2;
    # top 2-gram 12/51 > 0.2; duplicated 5-grams 18/51 > 0.15. Not: no-letter words 3/20, letters 42/51.
    assert flags(m, DocumentRules()) == ["short", "word_length", "symbols", "duplicate_lines", "top_ngrams",
                                        "duplicate_ngrams"]


def test_unspaced_languages_skip_word_length_and_ngram_rules():
    m = measure_document(doc(["天地玄黄宇宙洪荒日月盈昃辰宿列张寒来暑往秋收冬藏。"] * 3))
    assert m.language == "zh" and m.words == 3 * 25 and m.duplicate_lines == 2
    assert flags(m, DocumentRules()) == ["duplicate_lines"]


def test_word_histogram_buckets():
    assert [word_bucket(n) for n in (0, 1, 2, 3, 4, 50, 2**24, 2**30)] == [0, 1, 2, 2, 3, 6, 25, 25]


# --- sketches -------------------------------------------------------------------------------------------------

def test_top_counter_is_exact_under_twice_capacity_then_misra_gries():
    counter = TopCounter(2).add_counts({"a": 5, "b": 3, "c": 1, "d": 1})
    assert counter.counts == {"a": 5, "b": 3, "c": 1, "d": 1} and counter.total == 10
    counter.add_counts({"e": 2})  # 5 keys > 4: lower all by the 3rd largest (2), drop those at 0 or below
    assert counter.counts == {"a": 3, "b": 1} and counter.total == 12
    assert counter.most_common() == [("a", 3), ("b", 1)]
    merged = TopCounter(2).add_counts({"a": 1}).merge(TopCounter(2).add_counts({"a": 2, "z": 1}))
    assert merged.counts == {"a": 3, "z": 1} and merged.total == 4


def test_minhash_sample_keeps_the_smallest_keys_counts_exact_duplicates_and_merges_in_any_order():
    settings = MinHashSettings(num_perm=16, sample_size=3)
    hasher = MinHasher(settings)
    docs = [doc([f"document number {i} says something about topic {i}"], str(i)) for i in range(6)]
    docs += [docs[0], docs[0], docs[1]]  # three exact duplicates

    def key(d):
        shingles = shingle_hashes(token_hashes(content_tokens(normalized_text(d.sentences))), 5)
        return sort_key(hasher.sample_key(shingles), doc_fingerprint(d))

    copies = Counter(key(d) for d in docs)
    combiner = SpanStatsCombiner(1, sketch=SketchSettings(minhash=settings))
    whole = combiner.compute(docs)
    assert whole.sample.counts == {k: copies[k] for k in sorted(copies)[:3]}
    for order in (slice(None), slice(None, None, -1)):  # merging mutates the first accumulator: fresh parts each time
        parts = [combiner.compute(docs[i::3]) for i in range(3)][order]
        assert combiner.merge_accumulators(parts).sample == whole.sample
    signature = whole.sample.signatures[sorted(copies)[0]]
    assert signature.dtype == np.uint32 and signature.shape == (16,)


def test_within_span_duplicate_share_is_exact_when_the_span_fits_the_sample():
    docs = [doc([f"document number {i} says something about topic {i}"], str(i)) for i in range(4)]
    stats = SpanStatsCombiner(1).compute(docs + docs[:2])
    assert stats.sample.documents() == 6 and stats.sample.duplicate_share() == pytest.approx(2 / 6)


def test_previous_span_exact_and_near_duplicates():
    settings = MinHashSettings(num_perm=64)
    text = [" ".join(f"w{i}" for i in range(start, start + 200)) for start in (0, 1000, 2000, 3000)]
    previous = SpanStatsCombiner(1, sketch=SketchSettings(minhash=settings)).compute(
        [doc([t], f"p{i}") for i, t in enumerate(text)])
    # An exact copy (in capitals: the same fingerprint and tokens), a near copy (one word of 200 changed: Jaccard
    # 191/201 = 0.95 of the 5-shingles), two new documents.
    current_docs = [doc([text[0].upper()], "c0"), doc([text[1].replace("w1100", "x")], "c1"),
                    doc([" ".join(f"v{i}" for i in range(200))], "c2"),
                    doc([" ".join(f"u{i}" for i in range(200))], "c3")]
    current = SpanStatsCombiner(2, sketch=SketchSettings(minhash=settings)).compute(current_docs)
    shares = previous_span_duplicates(current.sample, previous.sample, jaccard=0.8)
    assert (shares.documents, shares.exact, shares.near) == (4, 0.25, 0.5)


# --- drift ----------------------------------------------------------------------------------------------------

def test_jensen_shannon_total_variation_volume():
    assert jensen_shannon_divergence({"a": 1}, {"b": 7}) == 1.0
    assert jensen_shannon_divergence({"a": 2, "b": 2}, {"a": 1, "b": 1}) == 0.0
    # P = (1/2, 1/2), Q = (1, 0), M = (3/4, 1/4): (KL(P||M) + KL(Q||M)) / 2 = (0.2075 + 0.4150) / 2
    expected = (0.5 * np.log2(0.5 / 0.75) + 0.5 * np.log2(0.5 / 0.25) + np.log2(1 / 0.75)) / 2
    assert jensen_shannon_divergence({"a": 1, "b": 1}, {"a": 5}) == pytest.approx(expected)
    assert jensen_shannon_divergence({}, {}) == 0.0 and jensen_shannon_divergence({}, {"a": 1}) == 1.0
    assert total_variation({"en": 3, "zh": 1}, {"en": 1}) == pytest.approx(0.25)
    assert volume_ratio(50, 100) == 0.5 and volume_ratio(0, 0) == 1.0 and volume_ratio(1, 0) == float("inf")
    current = TopCounter(1).add_counts({"a": 5, "b": 1, "c": 1})  # 3 keys > 2: only "a" kept, at 4
    baseline = TopCounter(5).add_counts({"a": 1, "b": 3, "c": 2, "d": 1})
    assert unigram_tables(current, baseline, top=1) == ({"a": 4}, {"a": 1, "b": 3})


# --- contamination --------------------------------------------------------------------------------------------

def test_contamination_counts_an_inserted_dev_passage_exactly():
    inserted = "The Normans were the people who in the 10th and 11th centuries gave their name to Normandy."
    other = "Warsaw is the capital and largest city of Poland, with a population of almost two million people."
    chinese = "鸣骹直上一千尺天静无风声更干碧眼胡儿三百骑"
    dev = DevNgrams([("normans", inserted), ("warsaw", other), ("short", "Too short to count."),
                     ("poem", chinese)])
    corpus = [doc(["Some history.", "THE NORMANS were the people, who in the 10th and 11th centuries gave their",
                   "name to Normandy!"], "a"),
              # At most 9 tokens in a row in common with the Warsaw passage: no 13-gram.
              doc(["Warsaw is the capital and largest city of Poland; its population is almost two million."], "b"),
              doc(["诗云：碧眼胡儿三百骑尽提金勒向云看"], "c")]  # 7 of the poem's characters in a row
    result = ContaminationCombiner(dev).compute(corpus)
    assert (result.passages, result.short, result.contaminated) == (3, 1, ("normans",))
    assert result.share == pytest.approx(1 / 3)
    poem_in_corpus = ContaminationCombiner(dev).compute([doc(["前言" + chinese[3:17] + "后记"], "d")])
    assert poem_in_corpus.contaminated == ("poem",)


# --- checks on spans ------------------------------------------------------------------------------------------

def test_a_good_span_passes_and_the_first_span_is_checked_absolutely(sample_halves, baseline):
    first = check_span(baseline)
    assert failing(first) == [] and {r.kind for r in first} == {"absolute"}
    assert first[0].message == ("span 1: check min_documents = 11, limit >= 1: passed "
                                "(absolute; first span: no baseline, drift not checked)")
    second = SpanStatsCombiner(2).compute(sample_halves[1])
    results = check_span(second, baseline)
    assert failing(results) == []
    assert [r.name for r in results] == [c.limit for c in CHECKS if c.kind != "contamination"]
    jsd = next(r for r in results if r.name == "max_unigram_jsd")
    assert jsd.message.startswith("span 2: check max_unigram_jsd = ") and "(drift against span 1)" in jsd.message
    assert jsd.margin == pytest.approx(jsd.limit - jsd.value) and jsd.margin > 0


def test_empty_span_fails(baseline):
    empty = SpanStatsCombiner(2).compute([])
    assert failing(check_span(empty)) == ["min_documents"]
    assert failing(check_span(empty, baseline)) == ["max_language_mix_distance", "max_unigram_jsd",
                                                    "min_documents", "min_volume_ratio"]


def chinese_documents(count, chars_per_doc, seed=0):
    """Random common Han characters, sentences of 29 and a full stop."""
    text = "".join(map(chr, np.random.default_rng(seed).integers(0x4E00, 0x4E00 + 2000, count * chars_per_doc)))
    sentences = [text[i:i + 29] + "。" for i in range(0, len(text), 30)]
    per_doc = len(sentences) // count
    return [doc(sentences[i * per_doc:(i + 1) * per_doc], f"zh{i}", "wikipedia") for i in range(count)]


def test_span_of_another_language_fails_drift_checks(baseline):
    chars = baseline.total().counts["characters"]
    span = SpanStatsCombiner(2).compute(chinese_documents(10, chars // 40))  # a quarter of the volume: passes
    assert failing(check_span(span)) == []  # as a first span, Chinese is fine
    results = check_span(span, baseline)
    assert failing(results) == ["max_language_mix_distance", "max_unigram_jsd"]
    values = {r.name: r.value for r in results}
    assert values["max_language_mix_distance"] == 1.0 and values["max_unigram_jsd"] == pytest.approx(1.0)


def test_span_repeating_the_previous_span_fails(sample_halves, baseline):
    again = SpanStatsCombiner(2).compute(sample_halves[0])
    results = check_span(again, baseline)
    assert failing(results) == ["max_previous_exact_duplicate_share", "max_previous_near_duplicate_share"]
    values = {r.name: r.value for r in results}
    assert values["max_previous_exact_duplicate_share"] == 1.0 and values["max_unigram_jsd"] == 0.0
    # Lightly edited copies (one sentence dropped from each): no exact duplicate, all near.
    edited = [dataclasses.replace(d, sentences=d.sentences[1:]) for d in sample_halves[0]]
    results = check_span(SpanStatsCombiner(2).compute(edited), baseline)
    assert failing(results) == ["max_previous_near_duplicate_share"]


def test_span_with_duplicated_documents_fails(sample_halves):
    docs = sample_halves[1]
    results = check_span(SpanStatsCombiner(2).compute(docs + docs))
    assert failing(results) == ["max_duplicate_document_share"]
    assert next(r for r in results if r.name == "max_duplicate_document_share").value == 0.5


def test_boilerplate_span_fails(baseline):
    page = ["Home | About us | Contact | Subscribe to our newsletter", "### Latest news ### Top stories ###",
            "Click here to read more about our great offers today.", "Copyright all rights reserved."]
    docs = [doc(page * 20 + [f"Article {i} text goes here with a few words of its own."], f"b{i}", "wikipedia")
            for i in range(10)]
    results = check_span(SpanStatsCombiner(2).compute(docs))
    # A page repeated is repeated lines and n-grams; its most frequent 2-gram is one of many (top share 0.06).
    assert failing(results) == ["max_duplicate_lines_share", "max_duplicate_ngrams_share", "max_symbols_share"]
    assert "(absolute; first span: no baseline, drift not checked)" in failed(results)[0].message
    # Keyword spam: one phrase over and over inside a line.
    spam = [doc([" ".join(["buy cheap watches online"] * 30), f"Page {i} has one ordinary sentence as well."],
                f"s{i}", "wikipedia") for i in range(10)]
    assert failing(check_span(SpanStatsCombiner(2).compute(spam))) == ["max_duplicate_ngrams_share",
                                                                       "max_top_ngrams_share"]


def test_binary_garbage_and_mojibake_spans_fail():
    rng = np.random.default_rng(0)
    garbage = [make_document(f"g{i}", "books", "g", [bytes(rng.integers(0, 256, 4000, dtype=np.uint8)).decode(
        "latin-1")]) for i in range(5)]
    results = check_span(SpanStatsCombiner(2).compute(garbage))
    assert {"max_few_letters_share", "max_word_length_share"} <= set(failing(results))
    text = "".join(d.sentences[0] for d in chinese_documents(1, 3000))
    mojibake = [make_document(f"m{i}", "books", "m", [text.encode("utf-8").decode("latin-1")]) for i in range(3)]
    assert "max_few_letters_share" in failing(check_span(SpanStatsCombiner(2).compute(mojibake)))


def test_contamination_check():
    dev = DevNgrams([("p", "one two three four five six seven eight nine ten eleven twelve thirteen")])
    corpus = [doc(["zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen"])]
    contamination = ContaminationCombiner(dev).compute(corpus)
    stats = SpanStatsCombiner(1).compute(corpus)
    result = check_span(stats, None, GateLimits(max_contaminated_share=0.5), contamination)[-1]
    assert (result.name, result.value, result.passed) == ("max_contaminated_share", 1.0, False)


# --- merging and protos ---------------------------------------------------------------------------------------

def test_merged_accumulators_equal_one_pass(sample_halves, baseline):
    docs = sample_halves[0]  # baseline: these documents in one accumulator
    combiner = SpanStatsCombiner(1)
    merged = combiner.merge_accumulators([combiner.compute(docs[0::2]), combiner.compute(docs[1::2])])
    assert merged.groups == baseline.groups and merged.sample == baseline.sample
    assert merged.unigrams == baseline.unigrams  # 7,232 distinct tokens: under 2 * capacity, so exact


def test_protos_round_trip(sample_halves, baseline):
    proto = statistics_to_proto(baseline)
    assert [d.name for d in proto.datasets] == ["span-1", "span-1/books/en", "span-1/wikipedia/en"]
    assert proto.datasets[0].num_examples == 11
    again = statistics_from_proto(type(proto).FromString(proto.SerializeToString()))
    assert again == baseline
    limits = GateLimits(max_unigram_jsd=0.2, near_duplicate_jaccard=0.7, unigram_top_tokens=500)
    assert limits_from_schema(limits_to_schema(limits)) == limits
    results = check_span(SpanStatsCombiner(2).compute(sample_halves[0]), again)
    anomalies = results_to_anomalies(results, limits_to_schema(GateLimits()))
    assert failures_from_anomalies(anomalies) == [(r.name, r.message) for r in failed(results)]
    assert results_to_anomalies(check_span(baseline)).ByteSize() == 0  # nothing failed: empty anomalies
    empty = results_to_anomalies(check_span(SpanStatsCombiner(4).compute([])))
    assert empty.data_missing and failures_from_anomalies(empty)[0][0] == "min_documents"


# --- the measured sample (a span larger than SketchSettings.measured_characters) ------------------------------

def test_a_span_over_the_budget_is_counted_whole_and_measured_on_a_seeded_sample(sample_halves):
    from components.datagate.document_stats import document_key, sample_rate

    docs = sample_halves[0] + sample_halves[1]  # the whole sample: 21 documents, 530,980 characters
    assert (len(docs), sum(d.num_chars for d in docs)) == (21, 530_980)
    assert sample_rate(530_980, 600_000) == 1.0 and sample_rate(530_980, 132_745) == 0.25
    combiner = SpanStatsCombiner(1, sample_rate=0.25)
    stats = combiner.compute(docs)
    measured = [d for d in docs if combiner.measures(d)]
    assert sorted(d.doc_id for d in measured) == [
        "book:austen-persuasion.txt", "book:chesterton-thursday.txt", "wiki:290", "wiki:330", "wiki:334", "wiki:340",
        "wiki:708", "wiki:766"]
    assert all((document_key(d.sentences) < 2**62) == (d in measured) for d in docs)
    # The checks' counts are the whole span's; everything else is the measured documents', as if they were the span.
    assert stats.read_counts() == {"documents": 21, "characters": 530_980}
    alone = SpanStatsCombiner(1).compute(measured)
    assert (stats.groups, stats.unigrams, stats.sample) == (alone.groups, alone.unigrams, alone.sample)
    assert (stats.sample_rate, stats.total().counts["documents"], stats.total().counts["characters"]) == \
        (0.25, 8, 315_834)
    assert check_span(stats)[0].value == 21.0  # min_documents
    summary = stats.summary()  # gate.json's statistics: the span's sizes, and what was measured
    assert (summary["documents"], summary["characters"], summary["sample_rate"], summary["measured_documents"],
            summary["measured_characters"]) == (21, 530_980, 0.25, 8, 315_834)
    assert sum(stats.characters_by_language().values()) == 530_980  # the measured languages, scaled to the span
    # Merging parts gives the one pass; the statistics proto keeps the counts and the rate (a later span's baseline).
    merged = combiner.merge_accumulators([combiner.compute(docs[0::2]), combiner.compute(docs[1::2])])
    assert (merged.read, merged.groups, merged.sample) == (stats.read, stats.groups, stats.sample)
    proto = statistics_to_proto(stats)
    assert proto.datasets[0].num_examples == 21
    assert statistics_from_proto(type(proto).FromString(proto.SerializeToString())) == stats
    with pytest.raises(ValueError, match="merging statistics of different spans or settings"):
        stats.merge(SpanStatsCombiner(1).compute(docs))


def test_the_sample_key_is_uniform_whatever_the_length_and_keeps_copies_and_near_copies_together():
    import random

    from components.datagate.document_stats import document_key

    rng = random.Random(0)
    for lines, measured in ((1, 1_040), (10, 1_004), (100, 1_030)):  # of 4,000 documents at a rate of 1/4
        keys = [document_key([f"line {rng.random()}" for _ in range(lines)]) for _ in range(4_000)]
        assert sum(k < 2**62 for k in keys) == measured
    text = [f"sentence {i}." for i in range(200)]
    assert document_key(text) == document_key(list(text))  # a copy: measured with its original
    # A near copy (one line of 200 edited) has the same key unless the edited line was the one with the least CRC.
    same = sum(document_key(text[:i] + ["edited."] + text[i + 1:]) == document_key(text) for i in range(200))
    assert same == 199


def test_previous_span_checks_compare_each_location_with_its_own_and_skip_an_unpatterned_one(sample_halves, baseline):
    """Issue 63: the same Wikipedia articles beside a new book (the sample's Wikipedia read whole every tick, its
    books by span). Compared as a whole the span repeats its Wikipedia half; by location the book is new."""
    from components.datagate.checks import previous_duplicates

    wiki = sample_halves[0][1:]
    span = SpanStatsCombiner(2).compute([sample_halves[1][0]] + wiki)
    patterned = {"wikipedia": False, "books": True}
    shares = previous_duplicates(span, baseline, 0.8, patterned)
    assert list(shares) == ["books"] and (shares["books"].exact, shares["books"].near) == (0.0, 0.0)
    assert failing(check_span(span, baseline, patterned=patterned)) == []
    everything = previous_duplicates(span, baseline, 0.8)  # every location compared: Wikipedia repeats itself
    assert everything["wikipedia"].exact == 1.0 and everything["books"].exact == 0.0
    again = SpanStatsCombiner(2).compute(sample_halves[0])  # the last span's book again
    results = check_span(again, baseline, patterned=patterned)
    assert failing(results) == ["max_previous_exact_duplicate_share", "max_previous_near_duplicate_share"]
    assert failed(results)[0].message == ("span 2: check max_previous_exact_duplicate_share = 1, limit <= 0.05: "
                                          "FAILED (drift against span 1; books location)")
    restored = statistics_from_proto(statistics_to_proto(again))  # the samples by location make the round trip
    assert sorted(restored.source_samples) == ["books", "wikipedia"]
    assert restored.source_samples["books"] == again.source_samples["books"]


def test_a_moved_language_mix_names_the_language_that_moved_most():
    from components.datagate.checks import moved_language

    assert moved_language({"en": 600, "zh": 400}, {"en": 1000}) == "en 1 -> 0.6 of the characters"
    assert moved_language({"en": 100, "zh": 900}, {"en": 500, "zh": 500}) == "en 0.5 -> 0.1 of the characters"
    assert moved_language({"en": 5}, {"en": 7}) == ""


def test_a_tagged_document_is_grouped_by_its_tag():
    """A run of several languages: each documents file holds one language's, and the gate groups by that tag."""
    tagged = dataclasses.replace(doc(["Ein kurzer deutscher Satz über die Sprache und den Text."] * 3, "d1"),
                                 language="de")
    untagged = doc(["The cat sat on the mat and then it went to the garden with the dog."] * 3, "d2")
    stats = SpanStatsCombiner(1).compute([tagged, untagged])
    assert sorted(stats.groups) == [("books", "de"), ("books", "en")]


def test_absolute_shares_are_checked_per_tagged_language(sample_halves):
    """A run of several languages: a small language of bad text is not diluted by a large clean one."""
    english = [dataclasses.replace(d, language="en") for d in sample_halves[0]]
    page = ["Home | About us | Contact | Subscribe to our newsletter", "### Latest news ### Top stories ###"]
    german = [dataclasses.replace(doc(page * 20 + [f"Seite {i} hat ein paar eigene Worte."], f"g{i}"),
                                  language="de") for i in range(3)]
    span = SpanStatsCombiner(1).compute(english + german)
    assert span.tagged == {"de", "en"}
    whole = span.total().ratios()["flagged_character_share_duplicate_lines"]
    results = {r.name: r for r in check_span(span)}
    duplicate_lines = results["max_duplicate_lines_share"]
    assert whole < 0.05 < duplicate_lines.value == 1.0 and not duplicate_lines.passed
    assert duplicate_lines.message.endswith(
        "FAILED (absolute; first span: no baseline, drift not checked; de language)")
