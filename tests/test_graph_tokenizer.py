"""The training/serving skew test (issue 64): the in-graph tokenizer (components/text/graph_tokenizer.py, TF Text ops)
gives the project tokenizer's ids on hard strings, for a SentencePiece vocabulary under every normalisation and for
WordPiece vocabularies read as BERT's FullTokenizer; its offsets point at the original bytes, and
``bert_pack_inputs`` truncates as the GLUE featurisation does."""
import itertools
import os

import pytest
import tensorflow as tf

from components.evaluation.glue.glue_data import truncate_pair
from components.text.graph_tokenizer import GraphTokenizer, truncated_lengths
from components.text.tokenizers import load_tokenizer
from config.tokenizer_spec import TokenizerSpec
from tests.conftest import REPO, SAMPLE

SPM = os.path.join(SAMPLE, "vocab", "30k-clean.model")
FIXTURE_WORDPIECE = os.path.join(REPO, "tests", "fixtures", "wordpiece", "vocab.txt")

HARD = [
    "", " ", "   \t\n  ", "Hello, World!", "café naïve résumé", "ÀÉÎÕÜ Ångström", "中文分词测试，我们的模型。",
    "ＡＢＣ１２３ ｱｲｳ", "😀👍🏽 emoji 🇫🇷", "a\x00b\x01c\x7f", "tab\tnew\nline\r\n", "\u200bzero\u200dwidth\ufeff",
    "Supercalifragilisticexpialidocious" * 8, "한국어 텍스트 처리", "हिन्दी क्षत्रिय", "MiXeD CaSe WoRdS", "ΑΣ ΣΑΣ ΟΔΟΣ",
    "İstanbul ß ǅ", "1990, 2000, 3,000,000 and ٣,", "x1990,", "a1,b2,", "$100 + ^^ `tick`", "“quotes” ‘single’ ``latex''",
    "  lead and trail  ", "\u3000全角\u3000空格\u00a0nbsp", "¨ ´ ¸ standalone marks", "e\u0301 a\u0308 decomposed",
    "ﬁ ligature ﬀ", "①②③ ½ ² ³", "\ufffd replacement", "Ελληνικά κείμενα", "Русский ТЕКСТ", "العربية آمنة",
    "فارسی\u200cها", "日本語のテキスト、カタカナ", "がぎぐ ｶﾞ", "Tiếng Việt có dấu", "x" * 250, "é" * 150,
    "ab\x1ccd\x85ef\x0bgh", "word\u2028line\u2029para", "U.S.A. e.g. i.e.", "don't won't", "a--b...c!!!",
    "𠀀𠀁 ext-b", "\u0301leading combining", "nbsp\u00a0em\u2003space", "Ǆ ǈ ǋ titlecase", "ŉ ǰ special",
    "\U0001F600" * 5 + "x", "The [MASK] token [SEP]",
]


def _wordpiece_from_spm(tmp_path) -> str:
    """A 30k-token WordPiece vocab.txt made from the SentencePiece model's pieces ("▁x" → "x", "x" → "##x"), so the
    greedy longest-match split has real choices to make (the bundled fixture vocabulary has 581 tokens)."""
    import sentencepiece as spm

    sp = spm.SentencePieceProcessor(model_file=SPM)
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    seen = set(tokens)
    for i in range(5, sp.get_piece_size()):
        piece = sp.id_to_piece(i)
        token = piece[1:] if piece.startswith("\u2581") else "##" + piece
        if token and token != "##" and token not in seen and not any(c.isspace() for c in token):
            seen.add(token)
            tokens.append(token)
    path = tmp_path / "vocab.txt"
    path.write_text("".join(t + "\n" for t in tokens), encoding="utf-8")
    return str(path)


SPECS = [
    TokenizerSpec(),  # English: ALBERT's preprocess_text, lower-cased
    TokenizerSpec(normalization="albert", do_lower_case=False),
    TokenizerSpec(normalization="nfkc", do_lower_case=True, strip_accents=True),
    TokenizerSpec(normalization="nfkc", do_lower_case=False),
    TokenizerSpec(normalization="nfc", do_lower_case=True),
    TokenizerSpec(normalization="nfc", do_lower_case=False, strip_accents=True),
    TokenizerSpec(normalization="none", do_lower_case=True, strip_accents=True),
    TokenizerSpec(normalization="none", do_lower_case=False),
]


def _check(vocab_path, spec, traced=True):
    """The graph tokenizer's ids equal the project's on HARD; ``traced=False`` runs the same ops eagerly (tracing
    costs about 1 s of CPU a vocabulary; the subprocess tests of pushed versions run the saved graphs)."""
    with open(vocab_path, "rb") as f:
        python = load_tokenizer(f.read(), spec, vocab_path)
    graph = GraphTokenizer(vocab_path, spec)
    strings = tf.constant(HARD)
    got = (graph.tokenize(strings) if traced else graph.ids_and_offsets(strings)[0]).to_list()
    want = [python.encode(text) for text in HARD]
    for text, g, w in zip(HARD, got, want):
        assert g == w, (spec, text, python.convert_ids_to_pieces(w), python.convert_ids_to_pieces(g))
    assert (graph.cls_id, graph.sep_id, graph.pad_id, graph.mask_id, graph.vocab_size) == (
        python.cls_id, python.sep_id, python.pad_id, python.mask_id, python.vocab_size)
    return graph, python


def test_hard_strings_are_enough():
    assert len(HARD) >= 40 and len(set(HARD)) == len(HARD)


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: f"{s.normalization}-lower{int(s.do_lower_case)}-"
                                                      f"accents{int(s.strip_accents)}")
def test_sentencepiece_graph_ids_equal_the_project_tokenizers(spec):
    _check(SPM, spec, traced=spec == TokenizerSpec())


@pytest.mark.parametrize("lower", [True, False])
def test_wordpiece_graph_ids_equal_bert_full_tokenizers(tmp_path, lower):
    spec = TokenizerSpec(kind="wordpiece", normalization="none", do_lower_case=lower)
    graph, python = _check(_wordpiece_from_spm(tmp_path), spec, traced=lower)
    ids = graph.ids_and_offsets(tf.constant(["unaffable debian packages"]))[0].to_list()[0]
    assert len(ids) > 3 and python.unk_id not in ids  # real multi-piece splits, not [UNK]s
    _check(FIXTURE_WORDPIECE, spec, traced=False)


def test_offsets_are_bytes_of_the_original_string():
    graph = GraphTokenizer(SPM, TokenizerSpec())
    texts = ["Hello  World, it's 1990, OK?", "Café au lait", "a\x00b"]
    ids, start, end = graph.ids_and_offsets(tf.constant(texts))
    spans = [[t.encode()[s:e].decode() for s, e in zip(ss, es)] for t, ss, es in zip(texts, start.to_list(),
                                                                                       end.to_list())]
    assert spans[0] == ["Hello", "World", ",", "it", "'", "s", "1990", ",", "OK", "?"]
    # "café" normalises to "cafe" (one byte shorter): its pieces get the whole word's span.
    assert spans[1][0] == "Café" and spans[1][1:] == ["au", "la", "it"]
    assert spans[2] == ["a", "\x00", "b"]
    pieces = tf.gather(graph.pieces, ids.flat_values).numpy().tolist()
    assert pieces[:3] == [b"\xe2\x96\x81hello", b"\xe2\x96\x81world", b","]


def test_pair_truncation_is_the_glue_featurisations():
    cases = list(itertools.product(range(12), range(12), range(10)))

    def loop(la, lb, budget):
        a, b = list(range(la)), list(range(lb))
        truncate_pair(a, b, budget)
        return len(a), len(b)

    ka, kb = truncated_lengths(*(tf.constant([c[k] for c in cases], tf.int64) for k in range(3)))
    assert list(zip(ka.numpy().tolist(), kb.numpy().tolist())) == [loop(*c) for c in cases]
    graph = GraphTokenizer(SPM, TokenizerSpec())
    a = tf.ragged.constant([[10, 11, 12, 13, 14, 15], [20]], tf.int32)
    b = tf.ragged.constant([[30, 31, 32], [40, 41, 42, 43, 44, 45, 46]], tf.int32)
    packed = graph.bert_pack_inputs([a, b], 8)
    assert packed["input_word_ids"].numpy().tolist() == [[2, 10, 11, 12, 3, 30, 31, 3], [2, 20, 3, 40, 41, 42, 43, 3]]
    assert packed["input_type_ids"].numpy().tolist() == [[0, 0, 0, 0, 0, 1, 1, 1], [0, 0, 0, 1, 1, 1, 1, 1]]
    single = graph.bert_pack_inputs([a], 5)
    assert single["input_word_ids"].numpy().tolist() == [[2, 10, 11, 12, 3], [2, 20, 3, 0, 0]]
    assert single["input_mask"].numpy().tolist() == [[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]]


def test_the_stored_unicode_ranges_are_this_pythons_computation():
    """components/text/unicode_ranges.json (read instead of walking every code point in each process that normalises
    text, measures documents or builds a text graph) equals what this Python's unicodedata gives; stale:
    `python -m components.text.unicode_ranges`."""
    from components.text import unicode_ranges

    assert unicode_ranges.stored() == unicode_ranges.compute()
