"""The vocabulary files a folder carries (``<examples>/vocab``, a model's ``albert/``): which one it is and how many
pieces it has, for the Trainer, the export and a base model's checks. Tokenizing is the components' business
(components/text/tokenizers.py); this layer only moves the files and counts.
"""
from __future__ import annotations

import posixpath
from typing import List

import tensorflow as tf

from config.errors import MissingInputError
from trainer.files import SPM_FILE, TOKENIZER_SPEC_FILE, VOCAB_FILES


def vocabulary_file(folder: str) -> str:
    """The path of the folder's ``spm.model`` or ``vocab.txt``; a MissingInputError naming the folder otherwise."""
    for name in VOCAB_FILES:
        path = posixpath.join(folder, name)
        if tf.io.gfile.exists(path):
            return path
    raise MissingInputError(f"{folder} holds no vocabulary ({' or '.join(VOCAB_FILES)})")


def vocabulary_files(folder: str) -> List[str]:
    """The vocabulary file and, where the folder has one, its ``tokenizer.json``: what travels with a model."""
    spec = posixpath.join(folder, TOKENIZER_SPEC_FILE)
    return [vocabulary_file(folder)] + ([spec] if tf.io.gfile.exists(spec) else [])


def vocabulary_size(path: str) -> int:
    """Pieces of a ``spm.model`` (SentencePiece's count) or lines of a ``vocab.txt`` (one token a line)."""
    with tf.io.gfile.GFile(path, "rb") as f:
        data = f.read()
    if posixpath.basename(path) == SPM_FILE:
        import sentencepiece as spm  # lazy: on one branch; sentencepiece (0.003 s)

        sp = spm.SentencePieceProcessor()
        sp.load_from_serialized_proto(data)
        return sp.get_piece_size()
    return data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)
