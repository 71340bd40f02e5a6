"""Edge cases of the rule-based sentence splitter."""
import pytest

from components.text.sentences import split_sentences


@pytest.mark.parametrize(
    "text, expected",
    [
        ("Mr. Smith met Dr. Jones. They talked.", ["Mr. Smith met Dr. Jones.", "They talked."]),
        ("Fruits, e.g. apples, i.e. pomes, are good. Eat them.", ["Fruits, e.g. apples, i.e. pomes, are good.", "Eat them."]),
        ("He moved to the U.S. The country was big.", ["He moved to the U.S.", "The country was big."]),
        ("The U.S. Army was there. It left.", ["The U.S. Army was there.", "It left."]),
        ("St. Louis is in Missouri. Jan. 5 was cold.", ["St. Louis is in Missouri.", "Jan. 5 was cold."]),
        ("J. R. R. Tolkien wrote it. George W. Bush read it.", ["J. R. R. Tolkien wrote it.", "George W. Bush read it."]),
        ("It fought in World War I. The war ended.", ["It fought in World War I.", "The war ended."]),
        ("Pi is 3.14 or so. It cost $2.5 million.", ["Pi is 3.14 or so.", "It cost $2.5 million."]),
        ('He said "Stop." Then he left.', ['He said "Stop."', "Then he left."]),
        ('"Why?" he asked. "Because!" she said.', ['"Why?" he asked.', '"Because!" she said.']),
        ("Is it? Yes! Go (now.) Next.", ["Is it?", "Yes!", "Go (now.)", "Next."]),
        ("Wait... what is that? I don't know... Maybe a bird.", ["Wait... what is that?", "I don't know...", "Maybe a bird."]),
        ("It happened in 1990. 1991 was calm.", ["It happened in 1990.", "1991 was calm."]),
        ("Apples, pears, etc. The list goes on.", ["Apples, pears, etc.", "The list goes on."]),
        ("See No. 5 and pp. 3-4 for details.", ["See No. 5 and pp. 3-4 for details."]),
        ("Esq. of South Park was there.", ["Esq. of South Park was there."]),
        ("No terminator at the end", ["No terminator at the end"]),
    ],
)
def test_split(text, expected):
    assert split_sentences(text) == expected


def test_empty_and_whitespace():
    assert split_sentences("") == []
    assert split_sentences("   \n ") == []


def test_text_is_preserved_apart_from_boundary_whitespace():
    text = "One sentence here.  Another one follows!\nAnd a third?"
    parts = split_sentences(text)
    assert parts == ["One sentence here.", "Another one follows!", "And a third?"]
    assert "".join(parts).replace(" ", "") == text.replace(" ", "").replace("\n", "")


def test_deterministic_and_linear_on_long_input():
    text = "This is a sentence. " * 20_000
    first = split_sentences(text)
    assert len(first) == 20_000
    assert first == split_sentences(text)
