"""Whole-word masking by a segmenter (components/text/segmenters.py, ``datagen.segmenters``): on the bundled Chinese
text with jieba, no masked span starts or ends inside a jieba word, the ids are those without a segmenter, and a
segmenter that is unknown, for another language or not installed is refused naming the setting."""
import os

import numpy as np
import pytest

from components.datagen.datagen_config import DataGenConfig
from components.datagen.generate import tokenize_document
from components.datagen.instances import InstanceParams, VocabInfo, mask_tokens
from components.text import segmenters
from components.text.documents import parse_text_blocks
from components.text.tokenizers import TokenizerSpec, load_tokenizer
from tests.conftest import REPO

ZH = os.path.join(REPO, "data", "sample-zh", "books", "zh-debian-faq.txt")
VOCAB = os.path.join(REPO, "tests", "fixtures", "wordpiece", "vocab.txt")


def _sentences():
    from components.text.sentences import SPLITTERS

    with open(ZH, encoding="utf-8") as f:
        text = " ".join(line.strip() for line in f if line.strip())
    return [s for s in SPLITTERS["multilingual"](text) if s.strip()][:80]


def _char_vocab(sentences):
    """A WordPiece vocabulary of the text's characters, each alone and as a ``##`` piece (as VocabGen's holds its
    alphabet), a few words: every sentence tokenizes without ``[UNK]``."""
    chars = sorted({c for s in sentences for c in s.lower() if not c.isspace()})
    pieces = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "debian", "stable"] + chars + ["##" + c for c in chars]
    return "\n".join(pieces).encode("utf-8")


def test_masked_spans_never_cut_a_jieba_word():
    tok = load_tokenizer(_char_vocab(_sentences()), TokenizerSpec(kind="wordpiece"), "vocab.txt")
    vocab = VocabInfo.from_tokenizer(tok, "boundary")
    seg = segmenters.PieceSegmenter("jieba", tok.pieces, tok.kind)
    cut = seg._cut
    params = InstanceParams(max_seq_length=128, max_predictions_per_seq=20, masked_lm_prob=0.3)
    aligned = spans = inside = 0
    for k, sentence in enumerate(_sentences()):
        plain = tokenize_document(tok, [sentence], vocab)
        doc = tokenize_document(tok, [sentence], vocab, seg)
        assert np.array_equal(doc.flat, plain.flat)  # the ids do not change
        ids = doc.flat
        starts = seg.starts(sentence, ids)
        if starts is None:  # a [UNK] piece: the vocabulary's rule for this sentence
            assert np.array_equal(doc.starts, vocab.is_word_start[ids])
            continue
        aligned += 1
        assert np.array_equal(doc.starts, starts)
        bounds = set(segmenters.word_boundaries(cut(sentence)).tolist())
        pos = np.concatenate([[0], np.cumsum(segmenters.piece_lengths(tok.pieces, tok.kind)[ids])])
        for seed in range(3):
            m = mask_tokens(ids, np.random.default_rng(seed * 1000 + k), params, vocab, doc.starts)
            covered = np.zeros(ids.shape[0] + 2, bool)
            covered[m.positions + 1] = True
            run_starts = np.flatnonzero(covered[1:-1] & ~covered[:-2])
            run_ends = np.flatnonzero(covered[1:-1] & ~covered[2:]) + 1
            spans += run_starts.shape[0]
            inside += sum(int(pos[s]) not in bounds for s in run_starts)
            inside += sum(int(pos[e]) not in bounds for e in run_ends)
    assert aligned >= 70 and spans >= 500, (aligned, spans)
    assert inside == 0  # no masked span starts or ends inside a segmenter word


def test_word_starts_align_pieces_to_words():
    # "清华大学" one word over four one-character pieces, "在" and "stable" (two pieces: "st", "##able")
    lengths = np.array([1, 1, 1, 1, 1, 2, 4])
    cont = np.array([False] * 6 + [True])
    bounds = segmenters.word_boundaries(["清华大学", "在", " ", "stable"])
    assert bounds.tolist() == [0, 4, 5, 11]
    assert segmenters.word_starts(lengths, cont, bounds, 11).tolist() == [1, 0, 0, 0, 1, 1, 0]
    assert segmenters.word_starts(lengths, cont, bounds, 12) is None  # the pieces do not cover the text
    assert segmenters.word_starts(np.array([1, -1]), cont[:2], np.array([0]), 2) is None  # an unknown piece


def test_rjieba_cuts_chinese_as_jieba_does():
    text = "我来到北京清华大学，Debian 的软件包管理系统。"
    assert segmenters.load_segmenter("rjieba")(text) == ["我", "来到", "北京", "清华大学", "，", "Debian", " ", "的",
                                                         "软件包", "管理系统", "。"]  # jieba.cut's words too


@pytest.mark.parametrize("value, message", [({"zh": "ltp"}, "expected one of jieba, mecab, rjieba"),
                                            ({"ko": "mecab"}, "mecab segments ja only")])
def test_unknown_segmenter_is_refused(value, message):
    with pytest.raises(segmenters.SegmenterError, match=r"datagen\.segmenters\.") as err:
        DataGenConfig(segmenters=value).validate()
    assert message in str(err.value) and "\n" not in str(err.value)


def test_segmenter_not_installed_is_refused_by_the_cli(cli, tmp_path, monkeypatch):
    real = segmenters._version
    monkeypatch.setattr(segmenters, "_version", lambda dist: None if dist == "rjieba" else real(dist))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "docs.txt").write_text("一句。\n", encoding="utf-8")
    done = cli("make-pretraining-data", "--input", "docs.txt", "--vocab", VOCAB, "--output", "out",
               "--set", "language=zh", "--set", "datagen.segmenters={zh: rjieba}")
    assert done.returncode == 2
    lines = [ln for ln in done.stderr.splitlines() if ": error: " in ln]
    assert len(lines) == 1 and "datagen.segmenters.zh" in lines[0] and "rjieba is not installed" in lines[0]
    assert not (tmp_path / "out").exists()


def test_bad_alpha_through_the_cli(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "docs.txt").write_text("a b.\n", encoding="utf-8")
    done = cli("make-pretraining-data", "--input", "docs.txt", "--vocab", VOCAB, "--output", "out",
               "--set", "datagen.language_alpha=1.5")
    assert done.returncode == 2
    lines = [ln for ln in done.stderr.splitlines() if ": error: " in ln]
    assert len(lines) == 1 and "datagen.language_alpha=1.5" in lines[0], done.stderr
    assert not (tmp_path / "out").exists()


def test_unknown_pieces_are_placed_by_sentencepiece_offsets(spm_model_path):
    with open(spm_model_path, "rb") as f:  # English's 30k-clean: every Chinese run is one <unk>
        tok = load_tokenizer(f.read(), TokenizerSpec(), spm_model_path)
    text = "debian 是 我来到北京清华大学 的 system"
    ids = np.asarray(tok.sp.encode(text, out_type=int), dtype=np.int32)
    assert [tok.pieces[i] for i in ids] == ["▁de", "bian", "▁", "<unk>", "▁", "<unk>", "▁", "<unk>", "▁system"]
    seg = segmenters.PieceSegmenter("rjieba", tok.pieces, tok.kind, tok.sp)
    # "▁" and its <unk> one unit (the same position); "bian" inside "debian"
    assert seg.starts(text, ids).tolist() == [1, 0, 1, 0, 1, 0, 1, 0, 1]
    assert segmenters.PieceSegmenter("rjieba", tok.pieces, tok.kind).starts(text, ids) is None  # no offsets


def test_mecab_cuts_japanese():
    assert segmenters.load_segmenter("mecab")("Debianのパッケージ管理システムです。") == [
        "Debian", "の", "パッケージ", "管理", "システム", "です", "。"]
    assert segmenters.identity("mecab") == {"name": "mecab", "package": "fugashi 1.5.2",
                                            "dictionary": "unidic-lite 1.0.8"}


def test_segmenter_identity_is_a_parameter_and_checked():
    from pipeline.settings.configs import build_config

    config = build_config("sample", overrides=["language=zh", "datagen.segmenters={zh: rjieba}"])
    data = config.datagen.to_dict()
    assert data["segmenter_identity"] == {"zh": {"name": "rjieba", "package": "rjieba 0.2.2",
                                                 "dictionary": "jieba-rs built in (rjieba 0.2.2)"}}
    assert "segmenter_identity" not in build_config("sample", overrides=["language=zh"]).datagen.to_dict()
    moved = DataGenConfig.from_dict({**data, "segmenter_identity": {"zh": {**data["segmenter_identity"]["zh"],
                                                                           "package": "rjieba 0.1.0"}}})
    with pytest.raises(Exception, match=r"datagen\.segmenter_identity"):
        moved.validate()  # a worker whose packages differ refuses the run
    with pytest.raises(Exception, match=r"datagen\.segmenters\.zh.*run's languages \(en\)"):
        build_config("sample", overrides=["datagen.segmenters={zh: rjieba}"])
