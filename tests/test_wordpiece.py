"""components/text/wordpiece.py and components/text/vocab_files.py: WordPiece tokenization exactly as the official
ALBERT ``FullTokenizer`` with a ``vocab.txt``, and the vocabulary files' checks.

tests/fixtures/wordpiece/official_tokens.json holds the official tokenizer's pieces and ids for every text of
``benchmarks.wordpiece_official.CASES`` under both ``do_lower_case`` values, with tests/fixtures/wordpiece/vocab.txt
(BERT-Chinese layout: [PAD] 0, [unused1..99], [UNK] 100, [CLS] 101, [SEP] 102, [MASK] 103); that script
regenerates it from a checkout of google-research/albert.
"""
import json
import os
import re

import pytest

from benchmarks.wordpiece_official import CASES
from components.text.vocab_files import VocabularyError, read_wordpiece_vocab, vocabulary_kind
from components.text.wordpiece import (SPLITTING_CONTROLS, WordPieceTokenizer, is_control, is_punctuation)
from config.errors import MissingInputError, UserError

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(ROOT, "tests", "fixtures", "wordpiece")
VOCAB = os.path.join(FIXTURES, "vocab.txt")
SPM_MODEL = os.path.join(ROOT, "data", "sample", "vocab", "30k-clean.model")
with open(os.path.join(FIXTURES, "official_tokens.json"), encoding="utf-8") as _f:
    OFFICIAL = json.load(_f)
SPECIALS = "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n"


@pytest.fixture(scope="module")
def tokenizers():
    return {lower: WordPieceTokenizer(VOCAB, do_lower_case=lower) for lower in (True, False)}


def test_the_fixture_covers_every_case_under_both_casings():
    assert len(CASES) >= 45
    assert [(r["name"], r["text"]) for r in OFFICIAL if r["do_lower_case"]] == CASES
    assert [(r["name"], r["text"]) for r in OFFICIAL if not r["do_lower_case"]] == CASES


@pytest.mark.parametrize("record", OFFICIAL, ids=[f"{r['name']}-{'lower' if r['do_lower_case'] else 'cased'}"
                                                  for r in OFFICIAL])
def test_pieces_and_ids_equal_the_official_tokenizer(tokenizers, record):
    tok = tokenizers[record["do_lower_case"]]
    assert tok.tokenize(record["text"]) == record["pieces"]
    assert tok.encode(record["text"]) == record["ids"]


def test_some_official_results_spelled_out(tokenizers):
    """A few of the fixture's cases, readable: casing, accents, CJK, the 200-character limit, [UNK]."""
    lower, cased = tokenizers[True], tokenizers[False]
    assert lower.tokenize("Café naïve") == ["cafe", "n", "##a", "##i", "##v", "##e"]
    assert cased.tokenize("Café") == ["C", "##a", "##f", "##é"]
    assert lower.tokenize("我在2024年用Python") == ["我", "在", "2024", "年", "用", "python"]
    assert lower.tokenize("ＡＢＣ１２３，") == ["ａ", "##ｂ", "##ｃ", "##１２３", "，"]
    assert lower.tokenize("a" * 200) == ["aaaaaaaaaa"] + ["##aaaaaaaaaa"] * 19
    assert lower.tokenize("a" * 201) == ["[UNK]"]
    assert lower.tokenize("unaffable unaffableж") == ["un", "##aff", "##able", "[UNK]"]
    assert lower.tokenize("a\x0bb a\x00b a\u200bb") == ["a", "##b"] * 3  # controls are dropped, not split on
    assert lower.tokenize("[CLS] x") == ["[", "cls", "]", "x"]


def test_attributes_and_id_helpers(tokenizers):
    tok = tokenizers[True]
    assert (tok.kind, tok.vocab_path, tok.do_lower_case, tok.vocab_size) == ("wordpiece", VOCAB, True, 581)
    assert (tok.pad_id, tok.unk_id, tok.cls_id, tok.sep_id, tok.mask_id) == (0, 100, 101, 102, 103)
    assert tok.pieces[:2] == ["[PAD]", "[unused1]"] and tok.pieces[99:104] == [
        "[unused99]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    ids = tok.encode("unaffable 中文")
    assert ids == [222, 223, 224, 357, 350]
    assert tok.convert_ids_to_pieces(ids) == ["un", "##aff", "##able", "中", "文"]
    assert [tok.is_word_start(i) for i in ids] == [True, False, False, True, True]
    assert tok.encode_batch(["unaffable", "", "中文"]) == [[222, 223, 224], [], [357, 350]]


def test_from_serialized_equals_the_file(tokenizers):
    with open(VOCAB, "rb") as f:
        tok = WordPieceTokenizer.from_serialized(f.read(), do_lower_case=False, path="gs://b/vocab.txt")
    assert (tok.vocab_path, tok.do_lower_case, tok.pieces) == ("gs://b/vocab.txt", False, tokenizers[False].pieces)
    assert tok.tokenize("Hello 世界") == ["Hello", "世", "界"]


def test_vocab_lines_are_read_as_the_official_load_vocab_reads_them():
    data = ("[PAD]\r\n  [UNK]  \n\n[CLS] 7\n[SEP]\n[MASK]").encode("utf-8")  # CRLF, padding, blank, two fields
    assert read_wordpiece_vocab(data) == ["[PAD]", "[UNK]", " ", "[CLS]", "[SEP]", "[MASK]"]
    tok = WordPieceTokenizer.from_serialized(data + b"\nx\n##y\n")
    assert (tok.vocab_size, tok.cls_id, tok.tokenize("xy x")) == (8, 3, ["x", "##y", "x"])


def test_a_vocab_without_the_special_tokens_is_refused(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_text("[PAD]\n[UNK]\n[CLS]\nhello\n", encoding="utf-8")
    with pytest.raises(VocabularyError) as err:
        WordPieceTokenizer(str(path))
    assert str(err.value) == (f"{path} lacks [SEP], [MASK]: a WordPiece vocab.txt needs "
                              "[PAD], [UNK], [CLS], [SEP], [MASK]")
    assert isinstance(err.value, UserError) and isinstance(err.value, ValueError)


def test_a_repeated_token_is_refused_with_both_lines():
    with pytest.raises(VocabularyError) as err:
        WordPieceTokenizer.from_serialized((SPECIALS + "a\nb\na\n").encode(), path="v.txt")
    assert str(err.value) == "v.txt line 8: token 'a' repeats line 6"
    with pytest.raises(VocabularyError, match=re.escape("v.txt line 7: token ' ' repeats line 6")):
        read_wordpiece_vocab((SPECIALS + "\n\n").encode(), "v.txt")


def test_a_vocab_that_is_not_utf8_is_refused_with_its_line():
    with pytest.raises(VocabularyError) as err:
        WordPieceTokenizer.from_serialized(SPECIALS.encode() + b"ok\ncaf\xe9\n", path="v.txt")
    assert str(err.value) == "v.txt line 7: not UTF-8 (invalid continuation byte at byte 37)"


def test_a_missing_vocab_file_is_a_user_error(tmp_path):
    with pytest.raises(MissingInputError, match=re.escape(f"WordPiece vocabulary {tmp_path}/no.txt does not exist")):
        WordPieceTokenizer(str(tmp_path / "no.txt"))


def test_vocabulary_kind():
    with open(SPM_MODEL, "rb") as f:
        assert vocabulary_kind(f.read()) == "sentencepiece"
    with open(VOCAB, "rb") as f:
        assert vocabulary_kind(f.read()) == "wordpiece"
    with pytest.raises(VocabularyError) as err:
        vocabulary_kind(b"\x00\xff\xfe garbage", "x.bin")
    assert str(err.value) == "x.bin is neither a SentencePiece model nor a WordPiece vocab.txt (not UTF-8 text)"
    with pytest.raises(VocabularyError) as err:
        vocabulary_kind(b"[PAD]\nhello\n", "x.txt")
    assert str(err.value) == ("x.txt is neither a SentencePiece model nor a WordPiece vocab.txt "
                              "(UTF-8 text without a [CLS] line)")


def test_character_classes_are_the_official_ones():
    assert [is_control(c) for c in "\t\n\r\x00\x7f\x85\u200b\ufeff a\u3000"] == [False] * 3 + [True] * 5 + [False] * 3
    assert [is_punctuation(c) for c in "$+^`~、。«—§"] == [True] * 10
    assert [is_punctuation(c) for c in "a0 ×©€\u3000"] == [False] * 7


def test_whitespace_splitting_matches_the_official_clean_then_split():
    """The shortcut of the module docstring, over every code point: BERT's whitespace (space, tab, newline, carriage
    return, Zs) is all str.isspace; the other str.isspace characters are SPLITTING_CONTROLS (which BERT drops) or
    U+2028/U+2029 (which BERT's str.split splits on too); and the regular expression's \\s is str.isspace."""
    import unicodedata

    chars = [chr(cp) for cp in range(0x110000)]
    bert_space = {c for c in chars if c in " \t\n\r" or unicodedata.category(c) == "Zs"}
    isspace = {c for c in chars if c.isspace()}
    assert bert_space <= isspace
    assert "".join(sorted(c for c in isspace - bert_space if is_control(c))) == SPLITTING_CONTROLS
    assert sorted(c for c in isspace - bert_space if not is_control(c)) == ["\u2028", "\u2029"]
    assert {c for c in chars if re.match(r"\s", c)} == isspace
