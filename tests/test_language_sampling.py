"""Languages sampled by an exponent or UniMax (components/datagen/language_sampling.py): exact shares on small counts,
the pass plan, the seeded keep decision; and the settings' bad values (exit 2, one line naming the setting)."""
import math

import numpy as np
import pytest

from components.datagen.datagen_config import DataGenConfig
from components.datagen.generate import generate_for_document
from components.datagen.instances import InstanceParams, VocabInfo
from components.datagen.language_sampling import (SamplingRule, estimated_size, keep_instance, pass_plan,
                                                  unimax_budgets)
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
    passes = rule.passes(sizes, dupe_factor=4)
    q = rule.target_shares(sizes)
    written = {k: passes[k] * sizes[k] for k in sizes}
    assert sum(written.values()) == pytest.approx(4 * 1000)
    for k in sizes:
        assert written[k] / 4000 == pytest.approx(q[k])
    assert SamplingRule("none").passes(sizes, 4) == {"en": 4.0, "zh": 4.0, "ja": 4.0}
    assert pass_plan(2.25) == (2, 0.25) and pass_plan(3.0) == (3, 0.0)


def test_unimax_is_uniform_up_to_its_cap_and_redistributes():
    # budget 1000 over 3: 333.3 each; ja (10) capped at 2 × 10 = 20, the rest (980) over zh and en: 490 each,
    # zh (90) capped at 180, en takes 800.
    assert unimax_budgets({"en": 900, "zh": 90, "ja": 10}, 1000, 2) == pytest.approx({"ja": 20, "zh": 180, "en": 800})
    q = SamplingRule("unimax", max_epochs=2).target_shares({"en": 900, "zh": 90, "ja": 10})
    assert q == pytest.approx({"en": 0.8, "zh": 0.18, "ja": 0.02})
    assert unimax_budgets({"a": 5, "b": 5}, 10, 1) == {"a": 5, "b": 5}
    # no language more than max_epochs times its unsampled amount
    passes = SamplingRule("unimax", max_epochs=3).passes({"en": 10_000, "zh": 7, "ja": 3}, dupe_factor=5)
    assert passes["zh"] == pytest.approx(15) and passes["ja"] == pytest.approx(15)


def test_keep_decision_is_seeded_and_takes_its_fraction():
    kept = [keep_instance(7, "doc:3", 2, i, 0.3) for i in range(20_000)]
    assert kept == [keep_instance(7, "doc:3", 2, i, 0.3) for i in range(20_000)]
    assert abs(sum(kept) / 20_000 - 0.3) < 0.01
    assert not any(keep_instance(7, "d", 0, i, 0.0) for i in range(100))
    assert all(keep_instance(7, "d", 0, i, 1.0) for i in range(100))
    assert estimated_size(1000, 1000, 17) == 17.0 and estimated_size(1000, 250, 10) == 40.0


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
    kept = [b for i, b in enumerate(fourth) if keep_instance(1, "d:0", 3, i, 0.5)]
    assert 0 < len(kept) < len(fourth)
    assert [b for b, _ in generate_for_document("d:0", doc, 1, 2, params, vocab, passes=3.5)] == three + kept
    assert [b for b, _ in generate_for_document("d:0", doc, 1, 2, params, vocab, passes=0.5)] == \
        [b for i, b in enumerate(one) if keep_instance(1, "d:0", 0, i, 0.5)]


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


def test_size_sample_is_bounded_by_the_run():
    from components.datagen.language_sampling import SIZE_MAX_PASSES, size_sample

    plan = size_sample({"en": 40_000_000, "zh": 100_000}, dupe_factor=4)
    # budget 0.25 × 4 × 40.1 M / 2 = 20.05 M characters-passes each: en sampled at half, one pass; zh whole, 32 passes
    assert plan["en"] == (pytest.approx(20_050_000 / 40_000_000), 1)
    assert plan["zh"] == (1.0, SIZE_MAX_PASSES)
    assert size_sample({"en": 300_000, "zh": 100_000}, dupe_factor=1) == {"en": (pytest.approx(2 / 3), 1),
                                                                         "zh": (1.0, 2)}  # at least 200,000
