"""The vocabulary folder and the tokenizer it makes: a SentencePiece model or a WordPiece ``vocab.txt``.

A vocabulary folder (the VocabGen artifact, ``<examples>/vocab``, a model's ``albert/`` folder) holds the
vocabulary file, ``spm.model`` or ``vocab.txt``, and, when its text settings are not English's defaults,
``tokenizer.json``: the :class:`TokenizerSpec` that every stage tokenizes with, so a piece means the same thing
when the vocabulary is trained, when pretraining data is built and when a model is fine-tuned. A folder without
that file is English's SentencePiece vocabulary, as every folder written before it existed, with
``do_lower_case`` from where it was recorded (the artifact's property, ``dataset_info.json``).
"""
from __future__ import annotations

from components.text.tokenization import AlbertTokenizer
from components.text.vocab_files import VocabularyError, vocabulary_kind
from config.tokenizer_spec import TokenizerSpec
from trainer.files import SPM_FILE, TOKENIZER_SPEC_FILE, WORDPIECE_FILE

SPEC_FILE = TOKENIZER_SPEC_FILE
VOCAB_FILE_NAMES = {"sentencepiece": SPM_FILE, "wordpiece": WORDPIECE_FILE}

__all__ = ["SPEC_FILE", "TokenizerSpec", "load_tokenizer", "vocab_file_name"]


def vocab_file_name(spec: TokenizerSpec) -> str:
    """The vocabulary's file name in a vocabulary folder: ``spm.model`` or ``vocab.txt``."""
    return VOCAB_FILE_NAMES[spec.kind]


def load_tokenizer(data: bytes, spec: TokenizerSpec, path: str = "<serialized>"):
    """The tokenizer of a vocabulary file's bytes: an :class:`AlbertTokenizer` or a :class:`WordPieceTokenizer`
    (the same interface); the file's kind must be ``spec.kind`` (a VocabularyError naming ``path`` otherwise)."""
    from components.text.wordpiece import WordPieceTokenizer  # lazy: components.text.wordpiece (0.003 s)

    kind = vocabulary_kind(data, path)
    if kind != spec.kind:
        raise VocabularyError(f"{path} is a {kind} vocabulary, but its folder says {spec.kind}")
    if kind == "wordpiece":
        return WordPieceTokenizer.from_serialized(data, do_lower_case=spec.do_lower_case, path=path)
    return AlbertTokenizer.from_serialized(data, do_lower_case=spec.do_lower_case, normalization=spec.normalization,
                                           strip_accents=spec.strip_accents, path=path)
