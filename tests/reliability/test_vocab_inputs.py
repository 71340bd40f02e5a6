"""SentencePiece models that do not fit ALBERT, and vocabulary-size disagreements (VocabGen's core).

Policy: all of these stop the run with an error naming the model file — a vocabulary with the wrong
special ids would silently train on [MASK]/[CLS] ids that mean something else, and a size mismatch
means the config does not describe the model that will be trained.

Size rule (``components.vocab.vocab_lib.build_vocab``): ``vocab.vocab_size`` must equal the model's piece
count; with ``vocab.import_model`` set, ``vocab.vocab_size=0`` means "take the model's size".
"""
import io

import pytest
import sentencepiece as spm

from components.vocab import vocab_lib
from components.text.tokenization import AlbertTokenizer, SpecialIdError
from pipeline.settings.configs import VocabConfig
from tests.reliability import fixtures


def _sentences(n=3000):
    from components.corpus.books import book_document_from_bytes

    doc = book_document_from_bytes(fixtures.book_text().encode(), "austen.txt")
    return doc.sentences[:n]


def _foreign_model(tmp_path, name, **kwargs) -> str:
    """A model trained on the sample book with SentencePiece's own defaults (unk 0, bos 1, eos 2) or ``kwargs``."""
    out = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(_sentences()), model_writer=out, vocab_size=300,
                                   minloglevel=2, **kwargs)
    return fixtures.write(tmp_path / name, out.getvalue())


def test_model_with_default_special_ids_is_rejected_naming_it(tmp_path):
    model = _foreign_model(tmp_path, "default-ids.model")
    with pytest.raises(SpecialIdError, match="default-ids.model is not an ALBERT vocabulary") as info:
        vocab_lib.import_sentencepiece(model, str(tmp_path / "out"))
    assert "'<pad>' expected at id 0" in str(info.value)
    assert not (tmp_path / "out" / "spm.model").exists()
    # The data generator's tokenizer refuses it too (a model handed over by other means).
    with pytest.raises(SpecialIdError):
        AlbertTokenizer(model)


def test_model_missing_mask_is_rejected(tmp_path):
    model = _foreign_model(tmp_path, "no-mask.model", pad_id=0, unk_id=1, bos_id=-1, eos_id=-1,
                           control_symbols=["[CLS]", "[SEP]"])
    with pytest.raises(SpecialIdError, match=r"'\[MASK\]' expected at id 4, model has it at 1"):
        vocab_lib.build_vocab(VocabConfig(import_model=model, vocab_size=0), 1, None, str(tmp_path / "out"))


def test_missing_model_file_is_an_error_naming_the_path(tmp_path):
    missing = str(tmp_path / "nowhere" / "30k-clean.model")
    with pytest.raises(FileNotFoundError, match="nowhere/30k-clean.model"):
        vocab_lib.build_vocab(VocabConfig(import_model=missing, vocab_size=0), 1, None, str(tmp_path / "out"))


def test_garbage_model_file_is_an_error_naming_the_path(tmp_path):
    junk = fixtures.write(tmp_path / "30k-clean.model", open(fixtures.BOOK, "rb").read()[:5000])
    with pytest.raises(ValueError, match="30k-clean.model is neither a SentencePiece model nor a WordPiece vocab.txt"):
        vocab_lib.build_vocab(VocabConfig(import_model=junk, vocab_size=0), 1, None, str(tmp_path / "out"))


def test_imported_model_size_must_match_config(tmp_path):
    cfg = VocabConfig(import_model=fixtures.SPM_MODEL, vocab_size=3000)  # the sample preset's size
    with pytest.raises(vocab_lib.VocabSizeMismatchError) as info:
        vocab_lib.build_vocab(cfg, 1, None, str(tmp_path / "a"))
    msg = str(info.value)
    assert "30k-clean.model has 30000 pieces" in msg and "vocab_size=3000" in msg
    assert "set vocab.vocab_size=30000" in msg  # says how to fix it
    assert not (tmp_path / "a" / "spm.model").exists()


@pytest.mark.parametrize("size", [30000, 0])
def test_imported_model_with_matching_or_unset_size_is_accepted(tmp_path, size):
    got, origin = vocab_lib.build_vocab(VocabConfig(import_model=fixtures.SPM_MODEL, vocab_size=size), 1, None,
                                        str(tmp_path / "o"))
    assert got == 30000 and origin == f"imported:{fixtures.SPM_MODEL}"
    assert (tmp_path / "o" / "spm.model").read_bytes() == open(fixtures.SPM_MODEL, "rb").read()


def test_trained_model_has_exactly_the_configured_size(tmp_path):
    docs = tmp_path / "docs"
    fixtures.write(docs / "documents-00000-of-00001.txt", "\n".join(_sentences()) + "\n\n")
    size, origin = vocab_lib.build_vocab(VocabConfig(vocab_size=400, input_sentence_size=5000), 7, str(docs),
                                         str(tmp_path / "o"))
    assert (size, origin) == (400, "trained")
    assert spm.SentencePieceProcessor(model_file=str(tmp_path / "o" / "spm.model")).get_piece_size() == 400
