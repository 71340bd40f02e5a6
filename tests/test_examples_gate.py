"""The data gate's second stage (issue 63): the pretraining examples' statistics per language, checked before the
Trainer (``ExamplesGate``, components/datagate/examples_stats.py). The core on the bundled text with the official
English ``30k-clean.model``: English passes, Chinese, Japanese and Korean cannot be written by it; then through
``run``: the multilingual sample with that model imported stops before the Trainer, one line per language it
cannot write naming the language and its rate.
"""
from __future__ import annotations

import os

import pytest

from components.datagate.examples_stats import (LanguageExamples, check_examples, instance_shares,
                                                measure_language, sample_rate, sampled, summary_line)
from tests.conftest import REPO, SAMPLE

MODEL = os.path.join(SAMPLE, "vocab", "30k-clean.model")
MULTILINGUAL = os.path.join(REPO, "tests", "fixtures", "multilingual")


@pytest.fixture(scope="module")
def tokenizer():
    from components.text.tokenization import AlbertTokenizer

    return AlbertTokenizer(MODEL)


def _lines(path):
    with open(path, encoding="utf-8") as f:
        return [line.strip() for line in f if line.strip()]


def test_an_english_vocabulary_writes_english_and_not_chinese_japanese_or_korean(tokenizer):
    from components.corpus.books import book_documents

    english = measure_language("en", [s for d in book_documents(os.path.join(SAMPLE, "books")) for s in d.sentences],
                               tokenizer)
    assert (english.sentences, english.characters, english.pieces, english.unk_pieces) == (2577, 296265, 69314, 12)
    assert english.pieces_per_character == pytest.approx(0.234, abs=0.001)
    others = {lang: measure_language(lang, _lines(os.path.join(MULTILINGUAL, name)), tokenizer)
              for lang, name in (("zh", "zh-debian-faq.txt"), ("ja", "ja-debian-faq.txt"),
                                 ("ko", "ko-constitution.txt"))}
    assert check_examples({"en": english}, 0.05) == []  # a single-language English run with 30k-clean passes
    lines = check_examples({"en": english, **others}, 0.05)
    assert [line.split(":")[0] for line in lines] == ["language ja", "language ko", "language zh"]
    assert lines[2] == ("language zh: [UNK] rate 0.2786 (375 of 1,346 pieces in a sample of 4,645 characters), "
                        "limit <= 0.05 (gate.max_unk_rate): the vocabulary cannot write zh")
    assert english.vocabulary_coverage > 50 * others["zh"].vocabulary_coverage


def test_the_sample_is_seeded_and_about_its_budget():
    lines = [f"sentence number {i} of a long corpus" for i in range(20_000)]
    rate = sample_rate(sum(len(s) for s in lines), budget=70_000)
    chosen = list(sampled(lines, rate, seed=1))
    assert chosen == list(sampled(lines, rate, seed=1)) != list(sampled(lines, rate, seed=2))
    assert 0.8 * 70_000 < sum(len(s) for s in chosen) < 1.2 * 70_000
    assert list(sampled(lines[:10], 1.0, seed=1)) == lines[:10]


def test_padding_and_masked_shares_come_from_datagen_statistics():
    stats = {"params": {"max_seq_length": 64}, "splits": {"train": {"instances": 10, "tokens": 480,
                                                                    "masked_tokens": 72}},
             "per_language": {"split": "train", "languages": {
                 "zh": {"instances": 4, "tokens": 128, "masked_tokens": 16, "padding_tokens": 128}}}}
    assert instance_shares(stats) == {"padding_share": 0.25, "masked_share": 0.15}
    assert instance_shares(stats, "zh") == {"padding_share": 0.5, "masked_share": 0.125}
    assert instance_shares(stats, "ko") == {"padding_share": 0.25, "masked_share": 0.15}  # no block: the split's
    assert instance_shares({"splits": {}}) == {}


def test_the_terminal_line_names_each_measure():
    measure = LanguageExamples("zh", vocab_size=1000, sentences=1536, characters=2000, pieces=500, unk_pieces=1,
                               used=set(range(250)))
    assert summary_line(measure, {"padding_share": 0.5, "masked_share": 0.125}) == (
        "zh: 1,536 sentences sampled, [UNK] rate 0.0020, 0.250 pieces per character, 25.0% of the vocabulary used; "
        "training instances: 50.0% padding, 12.5% of their tokens masked")
    assert summary_line(measure, {}).endswith("25.0% of the vocabulary used")


@pytest.mark.slow
def test_an_english_vocabulary_imported_for_a_multilingual_run_stops_before_the_trainer(cli, tmp_path):
    """The multilingual sample (en, zh, ja, ko, de; one documents file per language) with the English-only
    30k-clean.model: the three languages it cannot write stop the run, a line each; English and German pass."""
    overrides = [f"vocab.import_model={MODEL}", "vocab.vocab_size=0", "benchmarks.glue_dir=null",
                 "benchmarks.squad_dir=null", "benchmarks.race_dir=null"]
    result = cli("run", "--preset", "sample-multi", "--output-dir", tmp_path / "out",
                 *[a for o in overrides for a in ("--set", o)])
    code, err = result.returncode, result.stderr
    assert code == 2, err[-2000:]
    lines = err.splitlines()
    assert any(line.startswith("albert-pipeline run: error: the examples gate stopped the run before the Trainer: "
                               "the vocabulary at ") and "cannot write 3 of the run's 5 languages" in line
               for line in lines), err[-2000:]
    assert [line for line in lines if line.startswith("language ")] == [
        "language ja: [UNK] rate 0.1828 (187 of 1,023 pieces in a sample of 4,892 characters), limit <= 0.05 "
        "(gate.max_unk_rate): the vocabulary cannot write ja",
        "language ko: [UNK] rate 0.4712 (1,105 of 2,345 pieces in a sample of 4,703 characters), limit <= 0.05 "
        "(gate.max_unk_rate): the vocabulary cannot write ko",
        "language zh: [UNK] rate 0.29 (388 of 1,338 pieces in a sample of 4,605 characters), limit <= 0.05 "
        "(gate.max_unk_rate): the vocabulary cannot write zh"]
    assert not (tmp_path / "out" / "pipeline_root" / "Trainer").exists()


def test_a_listed_language_without_training_instances_stops_the_run(tmp_path):
    """ExamplesGate itself (its function, before it reads documents or the vocabulary): datagen's statistics of a
    run of [en, zh, ja] where ja has no training instance and zh no row at all stop it: a first line naming the
    settings, then a line per language; a single-language run is left to datagen's own check."""
    import json

    from components import artifacts
    from components.datagate.datagate_component import ExamplesGate
    from components.datagate.examples_stats import ExamplesGateError, check_instances

    stats = {"per_language": {"languages": {"en": {"instances": 40, "documents": 3},
                                            "ja": {"instances": 0, "documents": 0}}}}
    assert check_instances(stats, ["en"]) == [] and check_instances(stats, ["en", "ja", "zh"])[1].startswith(
        "language zh: no training instance (0 training documents)")
    (tmp_path / "stats.json").write_text(json.dumps(stats), encoding="utf-8")
    args = {name: kind() for name, kind in (("documents", artifacts.Documents),
                                            ("vocab", artifacts.SentencePieceModel),
                                            ("statistics", artifacts.DataGenStatistics))}
    args["statistics"].uri = str(tmp_path)
    with pytest.raises(ExamplesGateError) as caught:
        ExamplesGate.EXECUTOR_SPEC.executor_class._FUNCTION(
            **args, config=json.dumps({"max_unk_rate": 0.05}), languages='["en", "zh", "ja"]', seed=1)
    assert str(caught.value).splitlines() == [
        "the examples gate stopped the run before the Trainer: 2 of the run's 3 languages have no training instance "
        "(lower datagen.eval_fraction, add their documents, or remove them from the language setting)",
        "language zh: no training instance (0 training documents): its documents are in the eval split "
        "(datagen.eval_fraction), too short for datagen.max_seq_length, or missing from the corpus",
        "language ja: no training instance (0 training documents): its documents are in the eval split "
        "(datagen.eval_fraction), too short for datagen.max_seq_length, or missing from the corpus"]
