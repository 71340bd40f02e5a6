"""A run of several languages (issue 63): ``language`` as a list, the run-wide profile of a mix, and the documents
files that say their language by name."""
import json

import pytest

from components.text.documents import file_language, shard_file_name
from config.languages import language_value, profile, run_languages, run_profile
from config.schema import ConfigError
from pipeline.settings.configs import build_config


def test_language_is_one_code_or_a_list_in_the_order_given():
    assert run_languages("en") == ("en",)
    assert run_languages(["en", "zh", "ja", "ko"]) == ("en", "zh", "ja", "ko")
    assert run_languages("[zh, en]") == ("zh", "en")  # what --set 'language=[zh,en]' gives
    assert run_languages("en,ko") == ("en", "ko")
    assert language_value(["zh"]) == "zh" and language_value("[zh]") == "zh"
    assert language_value("[en, zh]") == ["en", "zh"]


@pytest.mark.parametrize("value,message", [
    ("xx", "config language='xx' is invalid: expected an ISO 639-1 code in lower case"),
    ("[en, xx]", "config language=['en', 'xx'] is invalid: 'xx' is not an ISO 639-1 code"),
    ("[en, EN]", "'EN' is not an ISO 639-1 code"),
    ("[]", "config language=[] is invalid: expected an ISO 639-1 code or a non-empty list"),
    ("[en, zh, en]", "config language=['en', 'zh', 'en'] is invalid: en listed twice"),
    ("[en, [zh]]", "['zh'] is not an ISO 639-1 code"),
])
def test_a_bad_language_list_names_the_setting(value, message):
    with pytest.raises(ConfigError) as raised:
        run_languages(value)
    assert message in str(raised.value) and str(raised.value).startswith("config language=")


def test_a_one_element_list_is_the_code_itself_same_json_and_node_parameters():
    zh, listed = build_config("sample-zh"), build_config("sample-zh", overrides=["language=[zh]"])
    assert listed.language == "zh" and listed.to_json() == zh.to_json()
    assert listed.node_parameters() == zh.node_parameters()
    en = build_config("sample", overrides=["language=[en]"])
    assert en.to_json() == build_config("sample").to_json()
    assert "language" not in en.node_parameters()["Pusher"]["config"]
    assert zh.node_parameters()["Pusher"]["config"]["language"] == "zh"


def test_the_pusher_gets_the_list_for_the_card():
    config = build_config("sample", overrides=["language=[en, zh]"])
    assert config.node_parameters()["Pusher"]["config"]["language"] == ["en", "zh"]


def test_several_languages_one_vocabulary_for_the_mix():
    config = build_config("sample", overrides=["language=[en, zh, ja, ko]"])
    assert config.language == ["en", "zh", "ja", "ko"]
    assert json.loads(config.to_json())["language"] == ["en", "zh", "ja", "ko"]
    # The lowest coverage among the profiles (Chinese's 0.9995, not English's 0.99995 or an alphabet's 1.0), one
    # SentencePiece model, NFKC (albert's NFKD-without-marks breaks Hangul and kana), boundary word starts.
    assert (config.vocab.kind, config.vocab.normalization, config.vocab.strip_accents,
            config.vocab.character_coverage, config.datagen.word_starts, config.corpus.sentence_splitter) == (
        "sentencepiece", "nfkc", False, 0.9995, None, None)
    assert run_profile(("de", "fr")).character_coverage == 1.0
    assert run_profile(("zh",)) is profile("zh")
    explicit = build_config("sample", overrides=["language=[en,zh]", "vocab.character_coverage=0.9999"])
    assert explicit.vocab.character_coverage == 0.9999


def test_documents_files_say_their_language_only_in_a_run_of_several():
    assert shard_file_name(3, 16) == "documents-00003-of-00016.txt"
    assert shard_file_name(0, 4, "zh") == "documents-zh-00000-of-00004.txt"
    assert file_language("/a/b/documents-zh-00000-of-00004.txt") == "zh"
    assert file_language("gs://b/documents-ko-00003-of-00004.txt") == "ko"
    assert file_language("documents-00003-of-00016.txt") is None
    assert file_language("/x/documents-zh-00000-of-00004.txt.gz") is None
    assert file_language("notes.txt") is None
    with pytest.raises(ValueError):
        shard_file_name(4, 4)
    with pytest.raises(ValueError):
        shard_file_name(0, 4, "zho")


def test_the_card_lists_the_run_languages():
    from components.release.model_card import header

    facts = {"license": "apache-2.0", "name": "m", "corpus": {"sources": {}}, "benchmarks": {"scores": {}, "metrics": {}}}
    assert header({**facts, "language": "zh"})["language"] == ["zh"]
    assert header({**facts, "language": ["en", "zh", "ja"]})["language"] == ["en", "zh", "ja"]
    assert header(facts)["language"] == ["en"]


def test_datagen_takes_each_files_language_word_starts_unless_set():
    from components.datagen.datagen_beam_input import word_starts_of

    assert run_profile(("zh", "ja")).word_starts == "boundary"  # the same in both profiles: that value
    assert word_starts_of("/d/documents-en-00000-of-00001.txt", None) == "official"
    assert word_starts_of("/d/documents-ko-00000-of-00001.txt", None) == "boundary"
    assert word_starts_of("/d/documents-00000-of-00001.txt", None) == "official"
    assert word_starts_of("/d/documents-ko-00000-of-00001.txt", "official") == "official"


def test_the_report_languages_table_from_the_documents_properties():
    from components.report.document import Document, to_markdown
    from components.report.language_table import languages_from_properties, languages_section

    props = {"num_documents": 3, "language_en_documents": 2, "language_en_sentences": 10, "language_en_characters": 300,
             "language_zh_documents": 1, "language_zh_sentences": 5, "language_zh_characters": 100,
             "unlisted_language_ru_documents": 1, "unlisted_language_und_documents": 2, "books_documents": 3}
    languages = languages_from_properties(props)
    assert languages == {"per_language": {"en": {"documents": 2, "sentences": 10, "characters": 300},
                                          "zh": {"documents": 1, "sentences": 5, "characters": 100}},
                         "unlisted": {"ru": 1, "und": 2}}
    text = to_markdown(Document("t", [languages_section(languages, instances={"en": 30, "zh": 10})]))
    assert "| en | 2 | 10 | 300 | 75.0% | 30 | 75.0% |" in text and "| zh | 1 | 5 | 100 | 25.0% | 10 | 25.0% |" in text
    assert "Dropped in no listed language: 1 ru, 2 und document(s)" in text
    assert languages_section(languages_from_properties({"num_documents": 3})) is None
