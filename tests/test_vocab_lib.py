"""Vocabulary: ALBERT's SentencePiece recipe on real text, import + validation of existing models."""
import os

import pytest
import sentencepiece as spm

from components.vocab import vocab_lib
from components.text.documents import parse_text_blocks
from components.text.tokenization import AlbertTokenizer, SpecialIdError


@pytest.fixture(scope="module")
def sentences():
    path = os.path.join(os.path.dirname(__file__), "fixtures", "datagen_text.txt")
    with open(path, encoding="utf-8") as f:
        docs = list(parse_text_blocks(f))
    return [s for d in docs for s in d] * 3


def test_trained_model_has_albert_special_ids_and_symbols(tmp_path, sentences):
    path = vocab_lib.train_sentencepiece(sentences, str(tmp_path), vocab_size=300, seed=1)
    sp = spm.SentencePieceProcessor(model_file=path)
    assert [sp.id_to_piece(i) for i in range(5)] == ["<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]"]
    assert sp.get_piece_size() == 300
    for symbol in vocab_lib.USER_DEFINED_SYMBOLS:
        assert sp.piece_to_id(symbol) != sp.unk_id(), symbol
    tok = AlbertTokenizer(path)
    ids = tok.encode(sentences[0])
    assert ids and tok.unk_id not in ids[:5]
    assert all(p == p.lower() for p in tok.tokenize("Emma Woodhouse, HANDSOME"))  # lowercased like ALBERT


def test_same_seed_same_model_bytes(tmp_path, sentences):
    a = vocab_lib.train_sentencepiece(sentences, str(tmp_path / "a"), vocab_size=300, seed=3, input_sentence_size=60)
    b = vocab_lib.train_sentencepiece(sentences, str(tmp_path / "b"), vocab_size=300, seed=3, input_sentence_size=60)
    assert open(a, "rb").read() == open(b, "rb").read()


def test_sampling_is_seeded_and_keeps_order():
    items = [f"s{i}" for i in range(1000)]
    a, b = vocab_lib.sample_sentences(items, 50, 9), vocab_lib.sample_sentences(items, 50, 9)
    assert a == b and len(a) == 50 and a == sorted(a, key=lambda s: int(s[1:]))
    assert vocab_lib.sample_sentences(items, 50, 10) != a


def test_import_official_model(tmp_path, spm_model_path):
    path = vocab_lib.import_sentencepiece(spm_model_path, str(tmp_path), expected_vocab_size=30000)
    assert open(path, "rb").read() == open(spm_model_path, "rb").read()
    assert vocab_lib.validate_model(path) == 30000


def test_import_rejects_wrong_special_ids(tmp_path, sentences):
    corpus = tmp_path / "c.txt"
    corpus.write_text("\n".join(sentences))
    spm.SentencePieceTrainer.train(input=str(corpus), model_prefix=str(tmp_path / "plain"), vocab_size=200,
                                   minloglevel=2)  # default ids: unk 0, bos 1, eos 2
    with pytest.raises(SpecialIdError, match="plain.model.*'<pad>' expected at id 0"):
        vocab_lib.import_sentencepiece(str(tmp_path / "plain.model"), str(tmp_path / "out"))
    assert not (tmp_path / "out").exists()


def test_import_rejects_size_mismatch_and_garbage(tmp_path, spm_model_path):
    with pytest.raises(ValueError, match=r"30000 pieces but the config says vocab.vocab_size=32000; pass --set vocab.vocab_size=30000 \(or 0 "
                                            r"to take the model's size\)"):
        vocab_lib.import_sentencepiece(spm_model_path, str(tmp_path / "o"), expected_vocab_size=32000)
    junk = tmp_path / "junk.model"
    junk.write_bytes(b"not a model")
    with pytest.raises(ValueError, match="junk.model is not a SentencePiece model"):
        vocab_lib.import_sentencepiece(str(junk), str(tmp_path / "o2"))


def test_a_vocabulary_smaller_than_its_characters_is_a_config_error_naming_the_setting(tmp_path):
    """SentencePiece refuses a vocab_size below the characters the coverage keeps (a run of several scripts meets
    it first): one line naming vocab.vocab_size and vocab.character_coverage, not SentencePiece's internal error."""
    from components.vocab.vocab_lib import train_sentencepiece
    from config.schema import ConfigError

    sentences = ["".join(chr(0x4E00 + i + j) for j in range(20)) for i in range(0, 400, 20)]
    with pytest.raises(ConfigError) as info:
        train_sentencepiece(sentences, str(tmp_path), vocab_size=50, character_coverage=1.0)
    assert str(info.value) == ("config vocab.vocab_size=50 is too small: its special pieces and the characters "
                               "vocab.character_coverage=1.0 keeps need 414 (raise vocab.vocab_size or lower "
                               "vocab.character_coverage)")
    assert not os.listdir(tmp_path)
