"""The ``sample-multi`` preset (issue 63) through the product's own stages, without TFX: CorpusGen's Beam code
(``ingest``) tags the five bundled books by the language identifier and writes one documents file per language,
VocabGen's code learns one SentencePiece vocabulary for the mix, and PretrainingDataGen's code
(``make-pretraining-data``) writes the examples, masking each file by its language's word starts. The preset's
config is the one ``run --preset sample-multi`` builds."""
import json
import os

import numpy as np
import sentencepiece as spm

from components.corpus.ingest_tool import ingest
from components.datagen.datagen_tool import make_pretraining_data
from components.vocab.vocab_lib import build_vocab
from pipeline.settings.configs import build_config

LANGUAGES = ["en", "zh", "ja", "ko", "de"]


def test_sample_multi_tags_splits_learns_one_vocabulary_and_writes_examples(tmp_path):
    config = build_config("sample-multi")
    assert config.language == LANGUAGES and config.corpus.languages == LANGUAGES
    docs = tmp_path / "documents"
    counts = ingest(None, config.corpus.books_dir, str(docs), config.corpus)
    assert {c: v["documents"] for c, v in counts["per_language"].items()} == dict.fromkeys(LANGUAGES, 1)
    assert counts["unlisted_languages"] == {} and counts["documents"] == 5
    assert sorted(os.listdir(docs)) == ["counts.json"] + [f"documents-{c}-00000-of-00001.txt"
                                                          for c in sorted(LANGUAGES)]
    vocab = tmp_path / "vocab"
    vocab.mkdir()
    size, origin = build_vocab(config.vocab, config.seed, str(docs), str(vocab))
    assert (size, origin) == (1500, "trained")
    with open(vocab / "tokenizer.json") as f:
        assert json.load(f)["normalization"] == "nfkc"
    sp = spm.SentencePieceProcessor(model_file=str(vocab / "spm.model"))
    pieces = [sp.id_to_piece(i) for i in range(sp.get_piece_size())]

    def has(lo, hi):
        return any(any(lo <= ord(c) <= hi for c in p) for p in pieces)

    # Every script of the mix has pieces: Hangul syllables, kana, Han, German umlauts beside English.
    assert has(0xAC00, 0xD7A3) and has(0x3040, 0x30FF) and has(0x4E00, 0x9FFF) and any("ü" in p for p in pieces)
    out = tmp_path / "examples"
    stats = make_pretraining_data([str(docs)], str(vocab / "spm.model"), str(out), config)
    train = stats["splits"]["train"]
    assert train["instances"] > 0 and sorted(os.listdir(out / "vocab")) == ["spm.model", "tokenizer.json"]
    # One vocabulary writes every language: the share of [UNK] pieces per language's documents file.
    from components.text.tokenizers import TokenizerSpec, load_tokenizer

    tokenizer = load_tokenizer((vocab / "spm.model").read_bytes(), TokenizerSpec.from_json(
        (vocab / "tokenizer.json").read_text()), "spm.model")
    unk_share = {}
    for code in LANGUAGES:
        lines = (docs / f"documents-{code}-00000-of-00001.txt").read_text(encoding="utf-8").split("\n")
        ids = np.concatenate([np.asarray(tokenizer.encode(line), dtype=np.int64) for line in lines if line])
        unk_share[code] = round(float(np.mean(ids == sp.unk_id())), 4)
    # Korean's few: Hangul syllables seen once fall outside the 0.9995 coverage of the mix.
    assert unk_share == {"en": 0.0, "zh": 0.0, "ja": 0.0, "ko": 0.0032, "de": 0.0}
