"""Languages sampled by an exponent or UniMax (components/datagen/language_sampling.py): exact shares on small counts,
the pass plan, the seeded keep decision; and the settings' bad values (exit 2, one line naming the setting)."""
import math

import numpy as np
import pytest

from components.datagen.datagen_config import DataGenConfig
from components.datagen.generate import generate_for_document
from components.datagen.instances import InstanceParams, VocabInfo
from components.datagen.language_sampling import (SamplingRule, keep_instance, kept_indices, pass_plan, place,
                                                  plan_languages, passes_to_count, scaled_counts, unimax_budgets)
from config.schema import ConfigError


def test_exponent_shares_are_the_formula():
    sizes = {"en": 900, "zh": 90, "ja": 10}
    # p = 0.9, 0.09, 0.01; q ∝ p^0.5 = 0.948683, 0.3, 0.1
    q = SamplingRule(alpha=0.5).target_shares(sizes)
    total = math.sqrt(0.9) + 0.3 + 0.1
    assert q == pytest.approx({"en": math.sqrt(0.9) / total, "zh": 0.3 / total, "ja": 0.1 / total}, abs=1e-12)
    assert SamplingRule(alpha=1.0).target_shares(sizes) == pytest.approx({"en": 0.9, "zh": 0.09, "ja": 0.01})
    assert SamplingRule("none").target_shares(sizes) == pytest.approx({"en": 0.9, "zh": 0.09, "ja": 0.01})
    # mBERT's example: English 1000× Icelandic, at 0.7 about 126× (1000^0.7)
    q = SamplingRule().target_shares({"en": 1000, "is": 1})
    assert q["en"] / q["is"] == pytest.approx(1000 ** 0.7)


def test_passes_keep_the_total_and_give_each_language_its_share():
    sizes = {"en": 900, "zh": 90, "ja": 10}
    rule = SamplingRule(alpha=0.3)
    plan = plan_languages(rule, {k: [n] * 4 for k, n in sizes.items()}, dupe_factor=4)  # every pass alike
    q = rule.target_shares(sizes)
    written = {k: plan[k]["passes"] * sizes[k] for k in sizes}
    assert sum(written.values()) == pytest.approx(4 * 1000)
    for k in sizes:
        assert written[k] / 4000 == pytest.approx(q[k])
        assert plan[k]["target_instances"] == pytest.approx(q[k] * 4000) and plan[k]["size_instances"] == sizes[k]
    assert {k: r["passes"] for k, r in plan_languages(SamplingRule("none"), {k: [n] * 4 for k, n in sizes.items()},
                                                      4).items()} == {"en": 4.0, "zh": 4.0, "ja": 4.0}
    assert pass_plan(2.25) == (2, 0.25) and pass_plan(3.0) == (3, 0.0)


def test_the_target_is_placed_on_the_counted_passes():
    # pass 0 gives 100, pass 1 300, pass 2 100: 250 instances are pass 0 whole and half of pass 1
    assert place(250, [100, 300, 100]) == 1.5
    assert place(0, [100, 300]) == 0.0 and place(100, [100, 300]) == 1.0 and place(450, [100, 300, 100]) == 2.5
    # beyond the counted passes, each the mean (200): 700 = 100 + 300 + 200 + half of the next
    assert place(700, [100, 300]) == 3.5
    assert place(50, [0, 100]) == 1.5  # an empty pass is passed over
    # two passes counted (dupe_factor 2): n = (100 + 300) / 2 = 200 and 100 (per pass 100, 100), T = 600
    plan = plan_languages(SamplingRule(alpha=1.0), {"a": [100, 300, 100, 100], "b": [100, 100]}, dupe_factor=2)
    assert plan["a"] == {"size_instances": 200.0, "target_share": pytest.approx(2 / 3),
                         "target_instances": pytest.approx(400), "passes": pytest.approx(2.0)}
    assert plan["b"]["passes"] == pytest.approx(2.0) and plan["b"]["target_instances"] == pytest.approx(200)
    # α = 0.5: q ∝ √(2/3), √(1/3) → b gets 600 · 0.4142 = 248.5: passes 0, 1 whole and 0.485 of pass 2 (the mean, 100)
    plan = plan_languages(SamplingRule(alpha=0.5), {"a": [100, 300], "b": [100, 100]}, dupe_factor=2)
    qb = math.sqrt(1 / 3) / (math.sqrt(2 / 3) + math.sqrt(1 / 3))
    assert plan["b"]["passes"] == pytest.approx(2 + (600 * qb - 200) / 100)
    assert plan["a"]["passes"] == pytest.approx(1 + (600 * (1 - qb) - 100) / 300)
    # more passes are counted when the partial pass is past the counted ones: 1.25 × 2.49 + 1 → 5
    assert passes_to_count(plan["b"]["passes"], 2) == 5 and passes_to_count(plan["a"]["passes"], 2) == 2
    assert passes_to_count(1000.0, 2) == 64  # SIZE_MAX_PASSES
    assert scaled_counts(1000, 1000, [17, 3]) == [17.0, 3.0] and scaled_counts(1000, 250, [10, 5]) == [40.0, 20.0]


def test_unimax_is_uniform_up_to_its_cap_and_redistributes():
    # budget 1000 over 3: 333.3 each; ja (10) capped at 2 × 10 = 20, the rest (980) over zh and en: 490 each,
    # zh (90) capped at 180, en takes 800.
    assert unimax_budgets({"en": 900, "zh": 90, "ja": 10}, 1000, 2) == pytest.approx({"ja": 20, "zh": 180, "en": 800})
    q = SamplingRule("unimax", max_epochs=2).target_shares({"en": 900, "zh": 90, "ja": 10})
    assert q == pytest.approx({"en": 0.8, "zh": 0.18, "ja": 0.02})
    assert unimax_budgets({"a": 5, "b": 5}, 10, 1) == {"a": 5, "b": 5}
    # no language more than max_epochs times its unsampled amount
    plan = plan_languages(SamplingRule("unimax", max_epochs=3), {"en": [10_000] * 5, "zh": [7] * 5, "ja": [3] * 5}, 5)
    assert plan["zh"]["passes"] == pytest.approx(15) and plan["ja"]["passes"] == pytest.approx(15)


def test_keep_decision_is_seeded_and_takes_its_fraction():
    kept = [keep_instance(7, "doc:3", 2, i, 0.3) for i in range(20_000)]
    assert kept == [keep_instance(7, "doc:3", 2, i, 0.3) for i in range(20_000)]
    assert abs(sum(kept) / 20_000 - 0.3) < 0.01
    assert not any(keep_instance(7, "d", 0, i, 0.0) for i in range(100))
    assert all(keep_instance(7, "d", 0, i, 1.0) for i in range(100))
    # a partial pass: ⌊f·m + u⌋ of a document's m instances, those of the smallest hashes
    kept = kept_indices(7, "doc:3", 2, 10, 0.35)
    assert kept == [1, 7, 9] == kept_indices(7, "doc:3", 2, 10, 0.35)  # ⌊3.5 + u⌋ = 3 of 10 for this document
    total = sum(len(kept_indices(7, f"doc:{d}", 2, 10, 0.35)) for d in range(2000))
    assert total == 6992  # 0.35 × 20,000 = 7,000 expected: unbiased over documents, each off by under one
    assert kept_indices(7, "d", 0, 5, 1.0) == [0, 1, 2, 3, 4] and kept_indices(7, "d", 0, 5, 0.0) == []


def _doc(rng, n_sent=40):
    return [rng.integers(5, 100, size=int(rng.integers(3, 20))).astype(np.int32) for _ in range(n_sent)]


def test_passes_in_generation_whole_and_partial():
    vocab = VocabInfo.from_pieces([f"\u2581p{i}" for i in range(100)])
    params = InstanceParams(max_seq_length=32, max_predictions_per_seq=4, sop_mode="pure")
    doc = _doc(np.random.default_rng(0))
    plain = [b for b, _ in generate_for_document("d:0", doc, 1, 2, params, vocab)]
    same = [b for b, _ in generate_for_document("d:0", doc, 1, 2, params, vocab, passes=2.0)]
    assert plain == same  # two whole passes are the run without sampling
    one = [b for b, _ in generate_for_document("d:0", doc, 1, 1, params, vocab)]
    four = [b for b, _ in generate_for_document("d:0", doc, 1, 4, params, vocab)]
    three = [b for b, _ in generate_for_document("d:0", doc, 1, 3, params, vocab)]
    fourth = four[len(three):]  # pass 3: a fresh seed; half its instances kept, by their own hash
    kept = [fourth[i] for i in kept_indices(1, "d:0", 3, len(fourth), 0.5)]
    assert 0 < len(kept) < len(fourth) and abs(len(kept) - len(fourth) / 2) < 1
    assert [b for b, _ in generate_for_document("d:0", doc, 1, 2, params, vocab, passes=3.5)] == three + kept
    assert [b for b, _ in generate_for_document("d:0", doc, 1, 2, params, vocab, passes=0.5)] == \
        [one[i] for i in kept_indices(1, "d:0", 0, len(one), 0.5)]


@pytest.mark.parametrize("over, setting", [({"language_alpha": 1.5}, "datagen.language_alpha"),
                                           ({"language_alpha": 0.0}, "datagen.language_alpha"),
                                           ({"language_sampling": "temperature"}, "datagen.language_sampling"),
                                           ({"language_sampling": "unimax", "language_max_epochs": 0.5},
                                            "datagen.language_max_epochs")])
def test_bad_settings_name_the_setting(over, setting):
    with pytest.raises(ConfigError, match=setting.replace(".", r"\.")):
        DataGenConfig(**over).validate()


def test_defaults_stay_out_of_the_json():
    assert DataGenConfig().to_dict() == DataGenConfig(language_sampling="exponent", language_alpha=0.7).to_dict()
    assert "language_alpha" not in DataGenConfig().to_json()
    assert DataGenConfig(language_alpha=0.3).to_dict()["language_alpha"] == 0.3


def test_vocab_sentence_sample_follows_the_rule(tmp_path):
    from components.vocab.vocab_lib import sample_by_language

    paths = []
    for lang, n in (("en", 90), ("zh", 9), ("ja", 1)):
        path = tmp_path / f"documents-{lang}-00000-of-00001.txt"
        path.write_text("".join(f"{lang} sentence {i}.\n\n" for i in range(n)), encoding="utf-8")
        paths.append(str(path))
    rule = SamplingRule(alpha=0.5)
    q = rule.target_shares({"en": 90, "zh": 9, "ja": 1})
    sample = sample_by_language(paths, 50, 3, rule)
    counts = {lang: sum(s.startswith(lang) for s in sample) for lang in ("en", "zh", "ja")}
    assert counts == {lang: round(q[lang] * 50) for lang in counts} == {"en": 35, "zh": 11, "ja": 4}
    assert sum(s == "ja sentence 0." for s in sample) == 4  # its one sentence, repeated
    assert sample == sample_by_language(paths, 50, 3, rule)
    assert len(sample_by_language(paths, 1000, 3, SamplingRule("none"))) == 100


def test_size_sample_counts_a_small_language_or_one_of_few_documents_whole():
    from components.datagen.language_sampling import (SIZE_MIN_SAMPLE_CHARS, SIZE_WHOLE_CHARS, SIZE_WHOLE_DOCUMENTS,
                                                      size_sample)

    assert (SIZE_MIN_SAMPLE_CHARS, SIZE_WHOLE_DOCUMENTS, SIZE_WHOLE_CHARS) == (1_000_000, 256, 30_000_000)
    # ../shared/data's run: English is 99 documents (13 books), counted whole; so is every language of 1 M or less
    assert size_sample({"en": 7_000_000, "zh": 100_000}, {"en": 99, "zh": 3}) == {"en": 1.0, "zh": 1.0}
    # many documents: a sample of the budget, max(1 M, 0.25 × 7.1 M / 2 = 0.8875 M) characters
    assert size_sample({"en": 7_000_000, "zh": 100_000}, {"en": 960, "zh": 3}) == {"en": 1 / 7, "zh": 1.0}
    # few documents but over 30 M characters: sampled too (budget 0.25 × 60.1 M / 2)
    assert size_sample({"en": 60_000_000, "zh": 100_000}, {"en": 99, "zh": 3}) == {
        "en": pytest.approx(7_512_500 / 60_000_000), "zh": 1.0}
    big = size_sample({"en": 1_000_000_000, "zh": 200_000_000}, {"en": 10**6, "zh": 10**5})  # budget 150 M
    assert big == {"en": pytest.approx(0.15), "zh": pytest.approx(0.75)}


def test_a_tagged_files_first_document_trains_in_a_run_of_several_languages():
    from components.datagen.datagen_beam_input import SplitRule, split_of

    name = "documents-ja-00000-of-00001.txt"
    seed = next(s for s in range(100) if split_of(f"{name}:0", s, 0.3) == "eval")
    assert SplitRule(seed, 0.3)(f"/c/{name}", f"{name}:0") == "eval"  # a single-language run: the hash alone
    assert SplitRule(seed, 0.3, first_trains=True)(f"/c/{name}", f"{name}:0") == "train"
    untagged = "documents-00000-of-00001.txt"
    seed = next(s for s in range(100) if split_of(f"{untagged}:0", s, 0.3) == "eval")
    assert SplitRule(seed, 0.3, first_trains=True)(f"/c/{untagged}", f"{untagged}:0") == "eval"
    # the other documents keep the hash
    assert [SplitRule(3, 0.3, first_trains=True)(name, f"{name}:{i}") for i in range(1, 40)] == \
        [split_of(f"{name}:{i}", 3, 0.3) for i in range(1, 40)]
